//! CUDA/HIP graph replays: how many launches in the window replay a captured graph, and what
//! the trace knows of their device work.
//!
//! A graph launch (`cudaGraphLaunch`, `hipGraphLaunch`, `cuGraphLaunch`) is one host call that
//! runs every kernel of a captured graph. Its device work reaches the trace in one of three
//! ways, and each replay is counted under one of them:
//!
//! | state | what the trace holds | what can be said |
//! |---|---|---|
//! | **kernels** | the graph's kernels, each linked to the launch call by its correlation id (Kineto; Nsight Systems with `--cuda-graph-trace=node`), usually with a `graph id` | busy time and per-kernel detail |
//! | **whole graph** | one `[CUDA graph N replay]` span per replay (Nsight Systems with `--cuda-graph-trace=graph`) | busy time; no per-kernel detail |
//! | **missing** | nothing linked to the launch call | neither: the replay's GPU time is not in the trace |
//!
//! Inside a replay the device runs the graph's kernels back to back without the host: gaps
//! between two activities of one replay are not launch overhead. [`GraphReplays::spans`] holds,
//! per device, the union of the replays' device spans (first activity start to last activity
//! end) so that the diagnosis can leave those gaps out of its host-side rules.

use serde::Serialize;

use crate::model::fast::NameMemo;
use crate::model::fasthash::HashMap;
use crate::model::{CpuKind, Interval, IntervalSet, Ns, Trace, NONE};

use super::host::launch::is_graph_launch;

/// Label prefix of the whole-graph spans written by the Nsight Systems reader.
const WHOLE_GRAPH_PREFIX: &str = "[CUDA graph";

/// The graph replays of a window.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GraphReplays {
    /// Graph launch calls in the window (their call or their device work counted in it).
    pub launches: u64,
    /// Replays whose kernels are in the trace (per-kernel detail known).
    pub with_kernels: u64,
    /// Replays traced as one whole-graph span (busy time known, per-kernel detail not).
    pub whole_graph: u64,
    /// Replays with no device activity in the trace (busy time and detail unknown).
    pub missing: u64,
    /// Device activities of the replays in the trace (kernels, copies, fills).
    pub kernels: u64,
    /// Those of them that carry a graph id.
    pub kernels_with_graph_id: u64,
    /// Activities with a graph id but no link to any launch call (not counted in a replay).
    pub unlinked_graph_kernels: u64,
    /// Device time covered by the replays' activities in the window (union over devices'
    /// streams, summed over devices), ns.
    pub busy: Ns,
    /// Device time from each replay's first activity start to its last activity end, in the
    /// window (union per device, summed over devices), ns.
    pub span: Ns,
    /// Host time in the graph launch calls, ns.
    pub launch_call_time: Ns,
    /// Activities per replay, largest replay (0 without kernels in the trace).
    pub max_kernels_per_replay: u64,
    /// Per device, the union of the replays' device spans in the window (for the diagnosis;
    /// not serialized).
    #[serde(skip)]
    pub spans: Vec<(i32, IntervalSet)>,
}

impl GraphReplays {
    /// Device time inside replay spans that no replay activity covers, ns.
    pub fn idle_inside(&self) -> Ns {
        (self.span - self.busy).max(0)
    }

    /// True when `iv` on `device` lies wholly inside one replay span.
    pub fn covers(&self, device: i32, iv: Interval) -> bool {
        self.spans
            .iter()
            .find(|(d, _)| *d == device)
            .is_some_and(|(_, s)| !iv.is_empty() && s.covered_within(iv) == iv.len())
    }
}

/// One replay while it is gathered.
#[derive(Clone, Copy)]
struct Replay {
    call: u32,
    device: i32,
    activities: u64,
    with_id: u64,
    whole: bool,
    first: Ns,
    last: Ns,
}

/// Finds the graph replays whose launch call or device work falls in the counted time `mask`.
pub fn graph_replays(trace: &Trace, mask: &IntervalSet) -> GraphReplays {
    let mut out = GraphReplays::default();
    let mut graph = NameMemo::new(trace, is_graph_launch);
    let mut slot: HashMap<u32, usize> = HashMap::default();
    let mut replays: Vec<Replay> = Vec::new();
    // (no graph launch among the names: no replay, and the host events are not read)
    let any_launch = crate::model::fast::may_name(trace, is_graph_launch);
    let calls = if any_launch { &trace.cpu[..] } else { &[] };
    for (i, e) in calls.iter().enumerate() {
        if matches!(
            e.kind,
            CpuKind::Runtime | CpuKind::Driver | CpuKind::OtherRuntime
        ) && graph.get(e.name)
        {
            slot.insert(i as u32, replays.len());
            replays.push(Replay {
                call: i as u32,
                device: i32::MIN,
                activities: 0,
                with_id: 0,
                whole: false,
                first: Ns::MAX,
                last: Ns::MIN,
            });
        }
    }
    let mut whole = NameMemo::new(trace, |n: &str| n.starts_with(WHOLE_GRAPH_PREFIX));
    // activities of the replays, per device (unions taken below)
    let mut acts: Vec<(i32, Interval, usize)> = Vec::new();
    for g in trace.gpu.iter().filter(|g| g.is_activity()) {
        let r = if g.launch == NONE {
            None
        } else {
            slot.get(&g.launch).copied()
        };
        let Some(r) = r else {
            if g.in_graph && g.launch == NONE {
                out.unlinked_graph_kernels += 1;
            }
            continue;
        };
        let x = &mut replays[r];
        x.device = g.device;
        x.activities += 1;
        x.with_id += g.in_graph as u64;
        x.whole |= whole.get(g.name);
        x.first = x.first.min(g.start);
        x.last = x.last.max(g.end());
        acts.push((g.device, g.interval(), r));
    }
    let in_mask = |iv: Interval| {
        if iv.is_empty() {
            let sp = mask.spans();
            let i = sp.partition_point(|m| m.start <= iv.start);
            i > 0 && iv.start < sp[i - 1].end
        } else {
            mask.covered_within(iv) > 0
        }
    };
    let mut counted = vec![false; replays.len()];
    let mut span_sets: Vec<(i32, Vec<Interval>)> = Vec::new();
    for (k, r) in replays.iter().enumerate() {
        let call = &trace.cpu[r.call as usize];
        let device_span = (r.activities > 0).then(|| Interval::new(r.first, r.last));
        if !(in_mask(call.interval()) || device_span.is_some_and(in_mask)) {
            continue;
        }
        counted[k] = true;
        out.launches += 1;
        out.launch_call_time += call.dur;
        out.kernels += r.activities;
        out.kernels_with_graph_id += r.with_id;
        out.max_kernels_per_replay = out.max_kernels_per_replay.max(r.activities);
        match device_span {
            None => out.missing += 1,
            Some(_) if r.whole => out.whole_graph += 1,
            Some(s) => {
                out.with_kernels += 1;
                push_device(&mut span_sets, r.device, s);
            }
        }
        if r.whole {
            if let Some(s) = device_span {
                push_device(&mut span_sets, r.device, s);
            }
        }
    }
    let mut busy_sets: Vec<(i32, Vec<Interval>)> = Vec::new();
    for &(d, iv, r) in &acts {
        if counted[r] {
            push_device(&mut busy_sets, d, iv);
        }
    }
    for (d, v) in busy_sets {
        let _ = d;
        out.busy += IntervalSet::from_intervals(v).intersect(mask).total();
    }
    span_sets.sort_by_key(|(d, _)| *d);
    for (d, v) in span_sets {
        let s = IntervalSet::from_intervals(v).intersect(mask);
        out.span += s.total();
        out.spans.push((d, s));
    }
    out
}

fn push_device(sets: &mut Vec<(i32, Vec<Interval>)>, device: i32, iv: Interval) {
    match sets.iter_mut().find(|(d, _)| *d == device) {
        Some((_, v)) => v.push(iv),
        None => sets.push((device, vec![iv])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::build::TraceBuilder;
    use crate::model::GpuKind;

    fn everything() -> IntervalSet {
        IntervalSet::from_intervals([Interval::new(0, 1_000_000_000)])
    }

    #[test]
    fn three_states_counted_apart() {
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
        // replay 1: three kernels, 10 µs each, 5 µs apart, on two streams
        let c = b.runtime("cudaGraphLaunch", 0, 0.0, 5.0);
        b.gpu(GpuKind::Kernel, "a", 0, 7, 100.0, 10.0, c);
        b.gpu(GpuKind::Kernel, "b", 0, 7, 115.0, 10.0, c);
        b.gpu(GpuKind::Kernel, "c", 0, 8, 130.0, 10.0, c);
        // replay 2: traced as a whole graph
        let c = b.runtime("cudaGraphLaunch", 0, 200.0, 5.0);
        b.gpu(
            GpuKind::Kernel,
            "[CUDA graph 3 replay]",
            0,
            7,
            300.0,
            50.0,
            c,
        );
        // replay 3: nothing in the trace
        b.runtime("cudaGraphLaunch", 0, 400.0, 5.0);
        // an eager kernel: not a replay
        let c = b.runtime("cudaLaunchKernel", 0, 500.0, 5.0);
        b.gpu(GpuKind::Kernel, "d", 0, 7, 600.0, 10.0, c);
        let t = b.build();
        let g = graph_replays(&t, &everything());
        assert_eq!(
            (
                g.launches,
                g.with_kernels,
                g.whole_graph,
                g.missing,
                g.kernels
            ),
            (3, 1, 1, 1, 4)
        );
        assert_eq!(g.max_kernels_per_replay, 3);
        assert_eq!(g.launch_call_time, 15_000);
        // busy: 30 µs of kernels + 50 µs whole graph; span: 40 µs + 50 µs
        assert_eq!((g.busy, g.span, g.idle_inside()), (80_000, 90_000, 10_000));
        // the 5 µs between a and b lies inside the replay; the gap before d does not
        assert!(g.covers(0, Interval::new(110_000, 115_000)));
        assert!(!g.covers(0, Interval::new(350_000, 600_000)));
        assert!(!g.covers(1, Interval::new(110_000, 115_000)));
    }

    #[test]
    fn window_counts_replays_by_call_or_device_work() {
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
        let c = b.runtime("hipGraphLaunch", 0, 0.0, 5.0);
        b.gpu(GpuKind::Kernel, "a", 0, 7, 100.0, 10.0, c);
        let c = b.runtime("hipGraphLaunch", 0, 1000.0, 5.0);
        b.gpu(GpuKind::Kernel, "a", 0, 7, 1100.0, 10.0, c);
        let t = b.build();
        // the window holds the first replay's device work only
        let mask = IntervalSet::from_intervals([Interval::new(50_000, 500_000)]);
        let g = graph_replays(&t, &mask);
        assert_eq!((g.launches, g.kernels, g.busy), (1, 1, 10_000));
    }
}
