//! Host synchronizations: calls where the host waits for the device, where they are, how long
//! the host waited, and how much device idle time followed.
//!
//! # Definitions
//!
//! A **sync call** is a host call that blocks until device work finishes; which calls are
//! sync calls, and of which kind, is defined in [`super::sync_calls`].
//!
//! For each sync call inside the window: the host wait is its duration; *where* is read from
//! the spans enclosing it on its thread — the outermost and innermost operator
//! ([`CpuKind::Op`]: `aten::item` → `aten::_local_scalar_dense`) and the innermost user
//! annotation that is not a `ProfilerStep#`; the **idle after** is the device idle time that
//! [`super::gaps`] attributes to this call (the gap that opened while the host was blocked in
//! it, until the next device work started, minus DataLoader and compile time inside that gap;
//! for a call made while the device was already idle, the part of the gap it covers).
//! Calls are grouped into **sites** by (outer op, inner op, annotation, call name).

use crate::model::fast::HashMap;

use super::gaps::GapAnalysis;
use crate::model::intervals::seek;
use crate::model::{CpuKind, IntervalSet, Ns, Trace, NONE};
use crate::window::steps::Step;

use super::sync_calls::{sync_calls, SyncKind};

/// Where a host call sits: enclosing spans on its thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Site {
    /// Outermost enclosing operator (index in `trace.cpu`, [`NONE`] if none).
    pub outer_op: u32,
    /// Innermost enclosing operator.
    pub inner_op: u32,
    /// Innermost enclosing user annotation that is not a `ProfilerStep#`.
    pub annotation: u32,
}

/// Enclosing operators and annotations of each queried host event (indices in `trace.cpu`),
/// by time containment on the same thread. Returns one [`Site`] per query, in query order.
pub fn sites_of(trace: &Trace, queries: &[u32]) -> Vec<Site> {
    let mut out = vec![
        Site {
            outer_op: NONE,
            inner_op: NONE,
            annotation: NONE,
        };
        queries.len()
    ];
    if queries.is_empty() {
        return out;
    }
    // the queries by event index, met in one walk over the events
    let mut order: Vec<(u32, u32)> = (0..queries.len() as u32)
        .map(|qi| (queries[qi as usize], qi))
        .collect();
    order.sort_unstable();
    let mut watched = vec![false; trace.threads.len()];
    for &q in queries {
        let th = trace.cpu[q as usize].thread as usize;
        if th >= watched.len() {
            watched.resize(th + 1, false);
        }
        watched[th] = true;
    }
    let mut stacks: Vec<Vec<u32>> = vec![Vec::new(); watched.len()];
    // per enclosing span's name: 0 left out (a step), 1 an operator, 2 an annotation
    let mut role = crate::model::fast::NameMemo::new(trace, |n: &str| {
        if n.starts_with("ProfilerStep#") {
            0u8
        } else if n.contains("::") {
            1
        } else {
            2
        }
    });
    let mut next = 0;
    let last = order[order.len() - 1].0 as usize;
    for (i, e) in trace.cpu.iter().enumerate().take(last + 1) {
        let th = e.thread as usize;
        if !watched.get(th).copied().unwrap_or(false) {
            continue;
        }
        let stack = &mut stacks[th];
        while let Some(&top) = stack.last() {
            if trace.cpu[top as usize].end() <= e.start {
                stack.pop();
            } else {
                break;
            }
        }
        if order.get(next).is_some_and(|&(ci, _)| ci as usize == i) {
            let mut site = Site {
                outer_op: NONE,
                inner_op: NONE,
                annotation: NONE,
            };
            for &s in stack.iter() {
                let p = &trace.cpu[s as usize];
                if p.end() < e.end() {
                    continue; // overlaps without containing
                }
                let r = role.get(p.name);
                if r == 0 {
                    continue;
                }
                // record_function ranges are written as operators in old traces: an
                // operator name without `::` is taken as an annotation
                if p.kind == CpuKind::Op && r == 1 {
                    if site.outer_op == NONE {
                        site.outer_op = s;
                    }
                    site.inner_op = s;
                } else {
                    site.annotation = s;
                }
            }
            while let Some(&(ci, qi)) = order.get(next) {
                if ci as usize != i {
                    break;
                }
                out[qi as usize] = site;
                next += 1;
            }
        }
        if matches!(e.kind, CpuKind::Op | CpuKind::UserAnnotation) {
            stack.push(i as u32);
        }
    }
    out
}

/// Sync calls grouped by place.
#[derive(Clone, Debug, PartialEq)]
pub struct SyncSite {
    /// Outermost operator name (`""` when none).
    pub outer_op: String,
    /// Innermost operator name (`""` when none).
    pub inner_op: String,
    /// Innermost annotation (`""` when none).
    pub annotation: String,
    /// Runtime call name.
    pub call: String,
    /// Kind.
    pub kind: SyncKind,
    /// Calls.
    pub count: u64,
    /// Host wait, ns.
    pub wait: Ns,
    /// Device idle that followed, ns.
    pub idle_after: Ns,
    /// First occurrence (index in `trace.cpu`).
    pub first: u32,
}

/// Sync calls in a window.
#[derive(Clone, Debug, Default)]
pub struct SyncAnalysis {
    /// Sync calls in the window (each is counted in its site; a trace can hold millions, so
    /// no per-call record is kept).
    pub calls: u64,
    /// Sites by idle after + wait, descending.
    pub sites: Vec<SyncSite>,
    /// Calls per analyzed step (same order as the steps).
    pub per_step: Vec<u64>,
    /// Total host wait, ns.
    pub wait: Ns,
    /// Total device idle attributed to syncs, ns (the per-device maximum; see
    /// [`super::gaps`]).
    pub idle_after: Ns,
}

/// Sync calls starting inside the window's counted time `mask`, located, with the idle that [`super::gaps`] attributed to them.
pub fn analyze_syncs(
    trace: &Trace,
    mask: &IntervalSet,
    steps: &[Step],
    gaps: &GapAnalysis,
) -> SyncAnalysis {
    analyze_syncs_with(trace, mask, steps, gaps, &sync_calls(trace))
}

/// [`analyze_syncs`] with the trace's sync calls already found ([`sync_calls`]).
pub fn analyze_syncs_with(
    trace: &Trace,
    mask: &IntervalSet,
    steps: &[Step],
    gaps: &GapAnalysis,
    syncs: &[(u32, SyncKind)],
) -> SyncAnalysis {
    let sp = mask.spans();
    let calls: Vec<(u32, SyncKind)> = syncs
        .iter()
        .copied()
        .filter(|&(i, _)| {
            let s = trace.cpu[i as usize].start;
            let k = sp.partition_point(|m| m.start <= s);
            k > 0 && s < sp[k - 1].end
        })
        .collect();
    let idx: Vec<u32> = calls.iter().map(|&(i, _)| i).collect();
    let sites = sites_of(trace, &idx);
    let idle = idle_per_call(trace, &calls, &idx, gaps);
    let mut out = SyncAnalysis {
        per_step: vec![0; steps.len()],
        ..SyncAnalysis::default()
    };
    // sites keyed by the four names' ids (an empty name as none, as its text is "")
    let id = |n: crate::model::NameId| {
        if trace.name(n).is_empty() {
            u32::MAX
        } else {
            n.0
        }
    };
    let span_id = |i: u32| {
        if i == NONE {
            u32::MAX
        } else {
            id(trace.cpu[i as usize].name)
        }
    };
    let text = |k: u32| {
        if k == u32::MAX {
            String::new()
        } else {
            trace.name(crate::model::NameId(k)).to_string()
        }
    };
    let mut site_map: HashMap<[u32; 4], usize> = HashMap::default();
    for (pos, ((ci, kind), site)) in calls.into_iter().zip(sites).enumerate() {
        let e = &trace.cpu[ci as usize];
        let step = steps
            .partition_point(|s| s.span.end <= e.start)
            .min(steps.len());
        let step = (step < steps.len() && steps[step].span.start <= e.start).then_some(step);
        if let Some(s) = step {
            out.per_step[s] += 1;
        }
        let idle_after = idle[pos];
        out.wait += e.dur;
        out.idle_after += idle_after;
        let key = [
            span_id(site.outer_op),
            span_id(site.inner_op),
            span_id(site.annotation),
            id(e.name),
        ];
        let n = out.sites.len();
        let si = *site_map.entry(key).or_insert(n);
        if si == n {
            out.sites.push(SyncSite {
                outer_op: text(key[0]),
                inner_op: text(key[1]),
                annotation: text(key[2]),
                call: text(key[3]),
                kind,
                count: 0,
                wait: 0,
                idle_after: 0,
                first: ci,
            });
        }
        let s = &mut out.sites[si];
        s.count += 1;
        s.wait += e.dur;
        s.idle_after += idle_after;
        out.calls += 1;
    }
    out.sites.sort_by(|a, b| {
        (b.idle_after + b.wait)
            .cmp(&(a.idle_after + a.wait))
            .then(b.count.cmp(&a.count))
    });
    out
}

/// The device idle charged to each of `calls` (in the window, event index order; `idx` their
/// indices in `trace.cpu`), by position.
fn idle_per_call(
    trace: &Trace,
    calls: &[(u32, SyncKind)],
    idx: &[u32],
    gaps: &GapAnalysis,
) -> Vec<Ns> {
    // idle per sync call: max over devices of the idle each device attributes to it — the
    // whole sync share of a gap the call opened, or, for calls made while the device was
    // already idle, the part of the gap's sync share they cover on the launching thread
    // by start, with the latest end among the calls up to each one: the walk back from a gap
    // stops where no earlier call reaches into it
    let index = super::gaps::SyncIndex::new(trace, calls);
    // by position in `calls` (event index order, as `sync_calls` finds them)
    debug_assert!(idx.is_sorted());
    let mut idle: Vec<Ns> = vec![0; calls.len()];
    let mut per: Vec<Ns> = vec![0; calls.len()];
    for d in &gaps.devices {
        per.fill(0);
        // a device's gaps come in time order: cursors, not a search per gap
        let (mut at_sync, mut at_end) = (0, 0);
        for g in &d.gaps {
            let share = g.split.get(super::gaps::Cause::Sync);
            if share == 0 {
                continue;
            }
            if g.sync != NONE {
                // a call outside the window opened it: nothing of it is reported
                let k = seek(idx, &mut at_sync, |&i| i < g.sync);
                if idx.get(k) == Some(&g.sync) {
                    per[k] += share;
                }
                continue;
            }
            let mut left = share;
            let hi = seek(&index.calls, &mut at_end, |c| c.0 < g.end);
            for k in (0..hi).rev() {
                let c = &index.calls[k];
                if left == 0 || index.prefix_max_end[k] <= g.start {
                    break;
                }
                if c.1 <= g.start || trace.cpu[c.2 as usize].thread != g.thread {
                    continue;
                }
                let ov = (c.1.min(g.end) - c.0.max(g.start)).max(0).min(left);
                if ov > 0 {
                    per[k] += ov;
                    left -= ov;
                }
            }
        }
        for (i, p) in idle.iter_mut().zip(&per) {
            *i = (*i).max(*p);
        }
    }
    idle
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::host::sync_calls::sync_kind;
    use crate::model::build::TraceBuilder;
    use crate::model::GpuKind;

    #[test]
    fn kinds_from_names() {
        assert_eq!(sync_kind("cudaStreamSynchronize"), Some(SyncKind::Stream));
        assert_eq!(
            sync_kind("cudaStreamSynchronize_v3020"),
            Some(SyncKind::Stream)
        );
        assert_eq!(sync_kind("hipDeviceSynchronize"), Some(SyncKind::Device));
        assert_eq!(sync_kind("cudaEventSynchronize"), Some(SyncKind::Event));
        assert_eq!(
            sync_kind("hipMemcpyWithStream"),
            Some(SyncKind::BlockingCopy)
        );
        assert_eq!(sync_kind("cudaMemcpy"), Some(SyncKind::BlockingCopy));
        assert_eq!(sync_kind("cudaMemcpyAsync"), None);
        assert_eq!(sync_kind("cudaStreamWaitEvent"), None);
        assert_eq!(sync_kind("cudaEventQuery"), None);
    }

    #[test]
    fn pageable_async_copy_is_a_sync_and_sites_are_found() {
        let mut b = TraceBuilder::new();
        let step = b.annotation("ProfilerStep#3", 0.0, 500.0);
        let _ = step;
        b.annotation("loss_logging", 100.0, 100.0);
        let item = b.op("aten::item", 110.0, 80.0);
        let lsd = b.op("aten::_local_scalar_dense", 112.0, 75.0);
        let _ = item;
        let c = b.runtime("cudaMemcpyAsync", lsd, 115.0, 60.0);
        b.gpu(
            GpuKind::Memcpy,
            "Memcpy DtoH (Device -> Pageable)",
            0,
            7,
            170.0,
            2.0,
            c,
        );
        b.runtime("cudaStreamSynchronize", lsd, 176.0, 5.0);
        b.runtime("cudaLaunchKernel", 0, 300.0, 5.0);
        let t = b.build();
        let calls = sync_calls(&t);
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].1, SyncKind::BlockingCopy);
        assert_eq!(calls[1].1, SyncKind::Stream);
        let sites = sites_of(&t, &calls.iter().map(|c| c.0).collect::<Vec<_>>());
        for s in &sites {
            assert_eq!(t.name(t.cpu[s.outer_op as usize].name), "aten::item");
            assert_eq!(
                t.name(t.cpu[s.inner_op as usize].name),
                "aten::_local_scalar_dense"
            );
            assert_eq!(t.name(t.cpu[s.annotation as usize].name), "loss_logging");
        }
    }

    #[test]
    fn sync_outside_ops_has_no_site() {
        let mut b = TraceBuilder::new();
        b.op("aten::add", 0.0, 10.0);
        b.runtime("cudaDeviceSynchronize", 0, 20.0, 10.0);
        let t = b.build();
        let calls = sync_calls(&t);
        let sites = sites_of(&t, &[calls[0].0]);
        assert_eq!(sites[0].outer_op, NONE);
        assert_eq!(sites[0].annotation, NONE);
    }

    /// The sites and idle of the first version (a hash map per query index, per-event name
    /// tests, and a walk back from each gap over every earlier call), kept as the reference.
    mod reference {
        use super::super::*;

        pub fn sites_of(trace: &Trace, queries: &[u32]) -> Vec<Site> {
            let none = Site {
                outer_op: NONE,
                inner_op: NONE,
                annotation: NONE,
            };
            let mut out = vec![none; queries.len()];
            let mut by_index: HashMap<u32, Vec<usize>> = HashMap::default();
            for (qi, &ci) in queries.iter().enumerate() {
                by_index.entry(ci).or_default().push(qi);
            }
            let threads: Vec<u32> = queries
                .iter()
                .map(|&q| trace.cpu[q as usize].thread)
                .collect();
            let mut stacks: HashMap<u32, Vec<u32>> = HashMap::default();
            for (i, e) in trace.cpu.iter().enumerate() {
                if !threads.contains(&e.thread) {
                    continue;
                }
                let stack = stacks.entry(e.thread).or_default();
                while stack
                    .last()
                    .is_some_and(|&t| trace.cpu[t as usize].end() <= e.start)
                {
                    stack.pop();
                }
                if let Some(qs) = by_index.get(&(i as u32)) {
                    let mut site = none;
                    for &s in stack.iter() {
                        let p = &trace.cpu[s as usize];
                        let pname = trace.name(p.name);
                        if p.end() < e.end() || pname.starts_with("ProfilerStep#") {
                            continue;
                        }
                        if p.kind == CpuKind::Op && pname.contains("::") {
                            if site.outer_op == NONE {
                                site.outer_op = s;
                            }
                            site.inner_op = s;
                        } else {
                            site.annotation = s;
                        }
                    }
                    for &q in qs {
                        out[q] = site;
                    }
                }
                if matches!(e.kind, CpuKind::Op | CpuKind::UserAnnotation) {
                    stack.push(i as u32);
                }
            }
            out
        }

        /// Idle after each call (by event index).
        pub fn idle(trace: &Trace, calls: &[u32], gaps: &GapAnalysis) -> HashMap<u32, Ns> {
            let by_start: Vec<(Ns, Ns, u32, u32)> = calls
                .iter()
                .map(|&i| {
                    let e = &trace.cpu[i as usize];
                    (e.start, e.end(), e.thread, i)
                })
                .collect();
            let mut idle: HashMap<u32, Ns> = HashMap::default();
            for d in &gaps.devices {
                let mut per: HashMap<u32, Ns> = HashMap::default();
                for g in &d.gaps {
                    let share = g.split.get(super::super::super::gaps::Cause::Sync);
                    if share == 0 {
                        continue;
                    }
                    if g.sync != NONE {
                        *per.entry(g.sync).or_default() += share;
                        continue;
                    }
                    let mut left = share;
                    let hi = by_start.partition_point(|c| c.0 < g.end);
                    for c in by_start[..hi].iter().rev() {
                        if left == 0 {
                            break;
                        }
                        if c.2 != g.thread || c.1 <= g.start {
                            continue;
                        }
                        let ov = (c.1.min(g.end) - c.0.max(g.start)).max(0).min(left);
                        if ov > 0 {
                            *per.entry(c.3).or_default() += ov;
                            left -= ov;
                        }
                    }
                }
                for (k, v) in per {
                    let e = idle.entry(k).or_default();
                    *e = (*e).max(v);
                }
            }
            idle
        }
    }

    #[test]
    fn sites_and_idle_as_the_first_version_on_random_traces() {
        use super::super::gaps::{Cause, DeviceGaps, Gap, Split, N_CAUSES};
        let mut rnd = crate::model::testing::xorshift(0x9e37_79b9_7f4a_7c15);
        let names = ["aten::item", "aten::copy_", "loss", "ProfilerStep#1", "fwd"];
        let syncs = [
            "cudaStreamSynchronize",
            "cudaDeviceSynchronize",
            "cudaMemcpy",
        ];
        let (mut idle_seen, mut sites_seen) = (0, 0);
        for round in 0..300 {
            let mut b = TraceBuilder::new();
            let n = 5 + rnd(40);
            for _ in 0..n {
                let (start, tid) = (rnd(2000) as f64, 1 + rnd(2) as i64);
                let dur = if rnd(8) == 0 {
                    200.0 + rnd(900) as f64
                } else {
                    rnd(60) as f64
                };
                match rnd(3) {
                    0 => {
                        let name = names[rnd(names.len() as u64) as usize];
                        let kind = if rnd(2) == 0 {
                            CpuKind::Op
                        } else {
                            CpuKind::UserAnnotation
                        };
                        b.cpu(kind, name, tid, start, dur + 40.0);
                    }
                    _ => {
                        let name = syncs[rnd(syncs.len() as u64) as usize];
                        b.cpu(CpuKind::Runtime, name, tid, start, dur);
                    }
                }
            }
            let t = b.build();
            let calls = sync_calls(&t);
            let idx: Vec<u32> = calls.iter().map(|c| c.0).collect();
            // queries out of order and repeated
            let mut q = idx.clone();
            q.extend(idx.iter().rev().take(3));
            assert_eq!(
                sites_of(&t, &q),
                reference::sites_of(&t, &q),
                "round {round}"
            );
            let mut devices = Vec::new();
            for dev in 0..1 + rnd(2) as i64 {
                let mut gaps = Vec::new();
                for _ in 0..rnd(12) {
                    let start = rnd(2_200_000) as Ns;
                    let len = 1 + rnd(300_000) as Ns;
                    let mut full = [0; N_CAUSES];
                    full[Cause::Sync as usize] = if rnd(4) == 0 {
                        0
                    } else {
                        1 + rnd(len as u64) as Ns
                    };
                    full[Cause::Cpu as usize] = len - full[Cause::Sync as usize];
                    let sync = match rnd(4) {
                        0 if !idx.is_empty() => idx[rnd(idx.len() as u64) as usize],
                        1 => rnd(t.cpu.len() as u64) as u32,
                        _ => NONE,
                    };
                    gaps.push(Gap {
                        start,
                        end: start + len,
                        cause: Cause::Sync,
                        split: Split::new(&full),
                        step_index: NONE,
                        prev: NONE,
                        next: NONE,
                        thread: rnd(3) as u32,
                        sync,
                    });
                }
                gaps.sort_by_key(|g| g.start);
                devices.push(DeviceGaps {
                    device: dev,
                    busy: 0,
                    idle: 0,
                    gaps,
                    bands: Default::default(),
                    by_cause: [0; N_CAUSES],
                    by_band_cause: [[0; N_CAUSES]; 5],
                    streams: Vec::new(),
                    compute_site: None,
                    untraced_os: None,
                });
            }
            let gaps = GapAnalysis {
                devices,
                ..GapAnalysis::default()
            };
            let mask = IntervalSet::from_intervals(vec![crate::model::Interval {
                start: 0,
                end: 3_000_000,
            }]);
            let a = analyze_syncs_with(&t, &mask, &[], &gaps, &calls);
            let want = reference::idle(&t, &idx, &gaps);
            // every call is in the mask: the analysis' calls are `calls`
            assert_eq!(a.calls, calls.len() as u64, "round {round}");
            let idle = idle_per_call(&t, &calls, &idx, &gaps);
            let got: Vec<(u32, Ns)> = idx.iter().copied().zip(idle).collect();
            let want: Vec<(u32, Ns)> = idx
                .iter()
                .map(|i| (*i, want.get(i).copied().unwrap_or(0)))
                .collect();
            assert_eq!(got, want, "round {round}");
            idle_seen += got.iter().filter(|c| c.1 > 0).count();
            sites_seen += sites_of(&t, &idx)
                .iter()
                .filter(|s| s.outer_op != NONE)
                .count();
            let total: Ns = a.sites.iter().map(|s| s.idle_after).sum();
            assert_eq!(total, a.idle_after, "round {round}");
        }
        // the rounds exercise both: calls charged with idle, calls inside operators
        assert!(
            idle_seen > 100 && sites_seen > 100,
            "{idle_seen} {sites_seen}"
        );
    }
}
