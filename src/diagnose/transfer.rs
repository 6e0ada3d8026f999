//! Data movement and memory: exposed communication, pageable and heavy copies, memory
//! pressure.

use std::collections::HashMap;

use super::claims::{cap, CAP_BASIS};
use super::{
    count, fmt_ns, fmt_us_sentence, metric, pct, short, Evidence, Facts, Finding, Severity,
};
use crate::analysis::kernels::{copy_direction, host_memory};
use crate::model::classify::KernelCategory;
use crate::model::{GpuKind, Interval, IntervalSet, Ns};
use crate::text::fmt_bytes;

/// Exposed communication share of the step above which `exposed-communication` fires (the
/// TensorBoard plugin's communication threshold).
pub const COMM_SHARE: f64 = 0.10;
/// Exposed pageable host-to-device copy share of the step above which `pageable-memcpy` fires.
pub const PAGEABLE_SHARE: f64 = 0.01;
/// Exposed copy share of the step above which `memcpy-heavy` fires.
pub const MEMCPY_SHARE: f64 = 0.05;
/// Peak allocated share of device memory above which `gpu-memory-pressure` fires (the
/// TensorBoard plugin's threshold).
pub const MEMORY_SHARE: f64 = 0.90;

/// All data-movement findings.
pub fn rules(f: &Facts) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(exposed_communication(f).or_else(|| host_communication(f)));
    let pageable = pageable_memcpy(f);
    let pageable_claim = pageable.as_ref().map(|p| p.1.clone()).unwrap_or_default();
    out.extend(pageable.map(|p| p.0));
    out.extend(memcpy_heavy(f, &pageable_claim));
    out.extend(memory_pressure(f));
    out
}

fn exposed_communication(f: &Facts) -> Option<Finding> {
    let t = f.a.timeline.iter().max_by_key(|t| t.exposed_comm)?;
    let raw = f.per_step_us(t.exposed_comm);
    if f.share_of_step(raw) < COMM_SHARE {
        return None;
    }
    let mut e = Evidence::default();
    e.facts.push(format!(
        "GPU {}: communication {} in the window, {} of it not overlapped by computation \
         ({} per step = {} of the step)",
        t.device,
        fmt_ns(t.total_comm as f64),
        fmt_ns(t.exposed_comm as f64),
        fmt_us_sentence(raw),
        pct(f.share_of_step(raw))
    ));
    if t.total_comm > 0 {
        e.facts.push(format!(
            "overlap with computation: {}",
            pct(1.0 - t.exposed_comm as f64 / t.total_comm as f64)
        ));
    }
    for k in
        f.a.kernels
            .iter()
            .filter(|k| k.category == KernelCategory::Communication)
            .take(4)
    {
        e.facts.push(format!(
            "  {} ×{}: {}",
            short(&k.name, 80),
            count(k.calls),
            fmt_ns(k.total as f64)
        ));
    }
    if let Some(d) = &f.trace.distributed {
        e.facts.push(format!(
            "backend {}, rank {}, world size {}",
            d.backend.as_deref().unwrap_or("?"),
            d.rank.map(|r| r.to_string()).unwrap_or("?".into()),
            d.world_size.map(|r| r.to_string()).unwrap_or("?".into())
        ));
    }
    metric(&mut e, "exposed_comm_us_per_step", raw);
    metric(&mut e, "total_comm_us", t.total_comm as f64 / 1000.0);
    let rec = cap(f, raw, &mut e);
    let advice = vec![
        "Overlap gradients' all-reduce with the backward pass: DDP does it by buckets — tune \
         `DistributedDataParallel(..., bucket_cap_mb=...)`, set `static_graph=True` and avoid \
         `find_unused_parameters=True` when possible."
            .to_string(),
        "FSDP: prefetch the next all-gather (`forward_prefetch=True`, \
         `backward_prefetch=BackwardPrefetch.BACKWARD_PRE`); with tensor parallelism, overlap \
         collectives with compute (async TP / `torch.distributed._symmetric_memory`)."
            .into(),
        "Communicate less often or less: gradient accumulation with `model.no_sync()`, \
         compression hooks (`ddp_comm_hooks.default_hooks.bf16_compress_hook`), larger \
         per-GPU batch."
            .into(),
        "Check the interconnect: NCCL over PCIe/TCP instead of NVLink/InfiniBand shows as low \
         bus bandwidth (`NCCL_DEBUG=INFO`)."
            .into(),
    ];
    Some(Finding {
        id: "exposed-communication",
        severity: f.severity(rec),
        title: format!(
            "Exposed communication: {} of the step not overlapped with compute",
            pct(f.share_of_step(raw))
        ),
        recoverable_us: rec,
        recoverable_basis: format!(
            "communication time on the device not overlapped by computation (GPU timeline, \
             union over streams), per step, largest device; {CAP_BASIS}"
        ),
        evidence: e,
        advice,
    })
}

/// Host collective spans (`gloo:*`, `nccl:*`, `mpi:*`, `ucc:*`) by name: (name, calls, time in
/// the window, ns), longest first — from the window's phases (`user_annotation` spans), else
/// from its operator table (the spans recorded as operators).
pub fn host_collectives(f: &Facts) -> Vec<(String, u64, Ns)> {
    use crate::model::classify::is_host_collective;
    fn add(v: &mut Vec<(String, u64, Ns)>, name: &str, calls: u64, total: Ns) {
        match v.iter_mut().find(|x| x.0 == name) {
            Some(x) => {
                x.1 += calls;
                x.2 += total;
            }
            None => v.push((name.to_string(), calls, total)),
        }
    }
    let mut v: Vec<(String, u64, Ns)> = Vec::new();
    for p in
        f.a.phases
            .phases
            .iter()
            .filter(|p| is_host_collective(&p.name))
    {
        add(&mut v, &p.name, p.calls, p.cpu_total);
    }
    if v.is_empty() {
        for o in f.a.ops.iter().filter(|o| is_host_collective(&o.name)) {
            add(&mut v, &o.name, o.calls, o.host_total);
        }
    }
    v.sort_by(|x, y| y.2.cmp(&x.2).then(x.0.cmp(&y.0)));
    v
}

/// The host collectives the host runs itself ([`host_collectives`] by
/// [`crate::model::classify::is_host_run_collective`]: gloo, MPI; not `nccl:*`, whose spans
/// enqueue device work): the calls behind [`crate::analysis::host::gaps::Cause::HostComm`].
pub fn host_run_collectives(f: &Facts) -> Vec<(String, u64, Ns)> {
    let mut v = host_collectives(f);
    v.retain(|(n, _, _)| crate::model::classify::is_host_run_collective(n));
    v
}

/// Host time per step inside host collectives of a trace with no device timeline (gloo, MPI,
/// UCC on CPU: the step breakdown's communication), µs; `None` with a device timeline.
pub fn host_comm_us(f: &Facts) -> Option<f64> {
    if !f.a.timeline.is_empty() {
        return None;
    }
    Some(f.a.steps.average.communication / 1000.0)
}

/// `exposed-communication` of a rank without device work (gloo, MPI, UCC on CPU): the host
/// collectives' share of the step (nothing on a device overlaps them). In a synchronous job
/// most of that time is waiting for the other ranks to arrive.
fn host_communication(f: &Facts) -> Option<Finding> {
    let raw = host_comm_us(f)?;
    let share = f.share_of_step(raw);
    if share < COMM_SHARE {
        return None;
    }
    let mut e = Evidence::default();
    e.facts.push(format!(
        "no device activity: host collectives take {} per step = {} of the step (step \
         breakdown, communication), and no compute overlaps them",
        fmt_us_sentence(raw),
        pct(share)
    ));
    for (name, calls, total) in host_collectives(f).iter().take(4) {
        e.facts.push(format!(
            "  {} ×{}: {}",
            short(name, 80),
            count(*calls),
            fmt_ns(*total as f64)
        ));
    }
    e.facts.push(
        "a host collective opens when the rank calls it and closes when it completes on this \
         rank: it holds the transfer and the wait for the last rank to arrive; analyze the \
         folder of all ranks to see whom this rank waits for"
            .into(),
    );
    if let Some(d) = &f.trace.distributed {
        e.facts.push(format!(
            "backend {}, rank {}, world size {}",
            d.backend.as_deref().unwrap_or("?"),
            d.rank.map(|r| r.to_string()).unwrap_or("?".into()),
            d.world_size.map(|r| r.to_string()).unwrap_or("?".into())
        ));
    }
    metric(&mut e, "exposed_comm_us_per_step", raw);
    Some(Finding {
        id: "exposed-communication",
        severity: f.severity(raw),
        title: format!(
            "Exposed communication: {} of the step inside host collectives (no GPU activity)",
            pct(share)
        ),
        recoverable_us: raw,
        recoverable_basis: "host time per step inside host collectives (gloo/MPI/UCC spans, \
                            the step breakdown's communication): the transfer plus the wait \
                            for the other ranks, an upper bound"
            .into(),
        evidence: e,
        advice: vec![
            "Find the rank the others wait for: `stallscope analyze` on the folder of every \
             rank's trace measures who arrives last at each collective and why."
                .to_string(),
            "Overlap the gradients' all-reduce with the backward pass (DDP buckets: \
             `bucket_cap_mb`, `static_graph=True`) and communicate less often \
             (`model.no_sync()` with gradient accumulation)."
                .into(),
            "On CPU with gloo, check that the ranks do not share cores (`taskset`, \
             `OMP_NUM_THREADS`): a rank descheduled before the collective makes every other \
             rank wait."
                .into(),
        ],
    })
}

fn is_pageable_htod(name: &str) -> bool {
    name.contains("Pageable") && (name.contains("HtoD") || name.contains("Pageable -> Device"))
}

/// Per device: union of kernel (computation and communication) intervals in the window.
fn kernel_union(f: &Facts) -> HashMap<i32, IntervalSet> {
    let mut v: HashMap<i32, Vec<Interval>> = HashMap::new();
    for g in &f.trace.gpu {
        if g.kind == GpuKind::Kernel {
            v.entry(g.device).or_default().push(g.interval());
        }
    }
    v.into_iter()
        .map(|(d, ivs)| (d, IntervalSet::from_intervals(ivs).intersect(f.mask)))
        .collect()
}

/// Returns the finding and the exposed pageable copy time per device (claimed).
fn pageable_memcpy(f: &Facts) -> Option<(Finding, HashMap<i32, Ns>)> {
    let trace = f.trace;
    let mut by_dev: HashMap<i32, Vec<Interval>> = HashMap::new();
    let mut n: u64 = 0;
    let mut bytes: u64 = 0;
    let mut time: Ns = 0;
    let mut host: Ns = 0;
    let mut first: Option<usize> = None;
    for (i, g) in trace.gpu.iter().enumerate() {
        if g.kind != GpuKind::Memcpy
            || !is_pageable_htod(trace.name(g.name))
            || !f.a.selection.counts_activity_at(trace, i)
        {
            continue;
        }
        n += 1;
        // a copy recorded with dur 0 (a producer defect) has no bandwidth: its bytes stay out
        if g.dur > 0 {
            bytes += g.bytes;
        }
        time += g.dur;
        if g.launch != crate::model::NONE {
            host += trace.cpu[g.launch as usize].dur;
        }
        first.get_or_insert(i);
        by_dev.entry(g.device).or_default().push(g.interval());
    }
    if n == 0 {
        return None;
    }
    let kernels = kernel_union(f);
    let empty = IntervalSet::new();
    let exposed: HashMap<i32, Ns> = by_dev
        .into_iter()
        .map(|(d, ivs)| {
            let set = IntervalSet::from_intervals(ivs).intersect(f.mask);
            (d, set.subtract(kernels.get(&d).unwrap_or(&empty)).total())
        })
        .collect();
    let worst = exposed.values().copied().max().unwrap_or(0);
    let rec = f.per_step_us(worst);
    if f.share_of_step(rec) < PAGEABLE_SHARE {
        return None;
    }
    let mut e = Evidence::default();
    e.facts.push(format!(
        "{} host-to-device copies from pageable memory ({:.1} per step on average), {} in {} \
         on the device; per link:",
        count(n),
        n as f64 / f.n_steps as f64,
        fmt_bytes(bytes),
        fmt_ns(time as f64),
    ));
    for l in copy_links(f, |name, _| is_pageable_htod(name))
        .iter()
        .take(8)
    {
        e.facts.push(l.fact());
    }
    e.facts.push(format!(
        "not overlapped by any kernel: {} per step; the host spent {} in the copy calls \
         (it stages pageable data through a pinned buffer)",
        fmt_us_sentence(rec),
        fmt_ns(host as f64)
    ));
    if let Some(i) = first {
        let g = &trace.gpu[i];
        e.locations
            .push(f.location("memcpy", trace.name(g.name), g.start, g.dur));
    }
    metric(&mut e, "copies", n as f64);
    metric(&mut e, "bytes", bytes as f64);
    metric(&mut e, "exposed_us_per_step", rec);
    metric(&mut e, "host_us", host as f64 / 1000.0);
    let advice = vec![
        "Copy from pinned memory: `DataLoader(..., pin_memory=True)` or `tensor.pin_memory()` \
         for long-lived host buffers."
            .to_string(),
        "Then copy asynchronously: `x.to(device, non_blocking=True)`, and prefetch the next \
         batch on a side stream (`with torch.cuda.stream(s): ...`) so the copy overlaps \
         compute."
            .into(),
    ];
    Some((
        Finding {
            id: "pageable-memcpy",
            severity: f.severity(rec),
            title: format!(
                "Host-to-device copies from pageable memory: {} per step exposed",
                fmt_us_sentence(rec)
            ),
            recoverable_us: rec,
            recoverable_basis: "device time of pageable host-to-device copies not overlapped \
                                by any kernel, per step (pinned, asynchronous copies can \
                                overlap compute); not capped: the host is blocked in these \
                                copies too"
                .into(),
            evidence: e,
            advice,
        },
        exposed,
    ))
}

/// A copy link: direction, device and host memory kind, with what moved over it.
#[derive(Default)]
struct Link {
    direction: Option<&'static str>,
    device: i32,
    host_memory: Option<&'static str>,
    calls: u64,
    /// Calls that recorded bytes, and their bytes.
    sized: u64,
    bytes: u64,
    /// Bytes and time of the calls with bytes and a duration (bandwidth).
    timed_bytes: u64,
    timed: Ns,
    /// Device time of all calls.
    time: Ns,
}

/// Below this share of the fastest link of the same kind, a link is reported as slow.
pub const SLOW_LINK_RATIO: f64 = 0.5;
/// Links are compared only for copies of at least this many bytes per call (smaller copies
/// are bound by latency, not by the link).
pub const SLOW_LINK_MIN_BYTES: f64 = (1 << 20) as f64;

impl Link {
    /// `host → GPU 0`, `GPU 0 → host`, `GPU 0 → GPU 0` (on the device), `GPU 0 ↔ peer GPU`.
    fn label(&self) -> String {
        let d = self.device;
        match self.direction {
            Some("HtoD") => format!("host → GPU {d}"),
            Some("DtoH") => format!("GPU {d} → host"),
            Some("DtoD") => format!("GPU {d} → GPU {d}"),
            Some("PtoP") => format!("GPU {d} ↔ peer GPU"),
            Some("HtoH") => format!("host → host (GPU {d} stream)"),
            _ => format!("GPU {d}, direction not recorded"),
        }
    }

    /// What the link's kind is called: `HtoD pinned`, `DtoD`.
    fn kind(&self) -> String {
        match (self.direction, self.host_memory) {
            (Some(d), Some(m)) => format!("{d} {m}"),
            (Some(d), None) => d.into(),
            (None, _) => "copy".into(),
        }
    }

    fn bytes_per_call(&self) -> Option<f64> {
        (self.sized > 0).then(|| self.bytes as f64 / self.sized as f64)
    }

    /// GB/s (bytes per ns).
    fn gbps(&self) -> Option<f64> {
        (self.timed > 0 && self.timed_bytes > 0)
            .then(|| self.timed_bytes as f64 / self.timed as f64)
    }

    /// `host → GPU 1 (HtoD pinned): 100 copies, 64.0 MiB per call (6.2 GiB in all) in 2.10 s,
    /// 3.2 GB/s`.
    fn fact(&self) -> String {
        let mut s = format!(
            "  {} ({}): {} {}",
            self.label(),
            self.kind(),
            count(self.calls),
            if self.calls == 1 { "copy" } else { "copies" }
        );
        if let Some(b) = self.bytes_per_call() {
            s.push_str(&format!(
                ", {} per call ({} in all)",
                fmt_bytes(b.round() as u64),
                fmt_bytes(self.bytes)
            ));
        }
        s.push_str(&format!(" in {}", fmt_ns(self.time as f64)));
        if let Some(g) = self.gbps() {
            s.push_str(&format!(", {}", fmt_gbps(g)));
        }
        s
    }
}

/// A bandwidth: `27.7 GB/s`, `1514 GB/s`, `2.3 MB/s`.
fn fmt_gbps(g: f64) -> String {
    if g >= 100.0 {
        format!("{g:.0} GB/s")
    } else if g >= 0.1 {
        format!("{g:.1} GB/s")
    } else {
        format!("{:.1} MB/s", g * 1000.0)
    }
}

/// The window's copies that `keep` accepts, per link (direction, device, host memory), by
/// device time descending.
fn copy_links(f: &Facts, keep: impl Fn(&str, i32) -> bool) -> Vec<Link> {
    let trace = f.trace;
    let mut links: HashMap<(Option<&'static str>, i32, Option<&'static str>), Link> =
        HashMap::new();
    for (i, g) in trace.gpu.iter().enumerate() {
        if g.kind != GpuKind::Memcpy || !f.a.selection.counts_activity_at(trace, i) {
            continue;
        }
        let name = trace.name(g.name);
        if !keep(name, g.device) {
            continue;
        }
        let key = (copy_direction(name), g.device, host_memory(name));
        let l = links.entry(key).or_insert_with(|| Link {
            direction: key.0,
            device: key.1,
            host_memory: key.2,
            ..Link::default()
        });
        l.calls += 1;
        l.time += g.dur;
        if g.bytes > 0 {
            l.sized += 1;
            l.bytes += g.bytes;
            if g.dur > 0 {
                l.timed_bytes += g.bytes;
                l.timed += g.dur;
            }
        }
    }
    let mut v: Vec<Link> = links.into_values().collect();
    v.sort_by(|a, b| {
        b.time
            .cmp(&a.time)
            .then(a.device.cmp(&b.device))
            .then(a.kind().cmp(&b.kind()))
    });
    v
}

/// The slowest link against the fastest of the same kind (direction and host memory) on
/// another device, when it reaches under [`SLOW_LINK_RATIO`] of it with copies of at least
/// [`SLOW_LINK_MIN_BYTES`] per call: (slow, fast).
fn slow_link(links: &[Link]) -> Option<(&Link, &Link)> {
    let rated: Vec<(&Link, f64)> = links
        .iter()
        .filter(|l| l.bytes_per_call().is_some_and(|b| b >= SLOW_LINK_MIN_BYTES))
        .filter_map(|l| Some((l, l.gbps()?)))
        .collect();
    let mut worst: Option<(&Link, &Link, f64)> = None;
    for &(slow, s) in &rated {
        for &(fast, q) in &rated {
            let same = slow.direction == fast.direction
                && slow.host_memory == fast.host_memory
                && slow.device != fast.device;
            let r = s / q;
            if same && r < SLOW_LINK_RATIO && worst.is_none_or(|w| r < w.2) {
                worst = Some((slow, fast, r));
            }
        }
    }
    worst.map(|(s, f, _)| (s, f))
}

fn memcpy_heavy(f: &Facts, pageable: &HashMap<i32, Ns>) -> Option<Finding> {
    let t = f.a.timeline.iter().max_by_key(|t| {
        t.exposed_memcpy - pageable.get(&(t.device as i32)).copied().unwrap_or(0)
    })?;
    let already = pageable.get(&(t.device as i32)).copied().unwrap_or(0);
    let exposed = (t.exposed_memcpy - already).max(0);
    let raw = f.per_step_us(exposed);
    if f.share_of_step(f.per_step_us(t.exposed_memcpy)) < MEMCPY_SHARE || raw <= 0.0 {
        return None;
    }
    let trace = f.trace;
    let mut by_op: HashMap<String, Ns> = HashMap::new();
    for (i, g) in trace.gpu.iter().enumerate() {
        if g.kind != GpuKind::Memcpy
            || g.device as i64 != t.device
            || !f.a.selection.counts_activity_at(trace, i)
        {
            continue;
        }
        let op = trace
            .owner_op_of(g)
            .map(|o| trace.name(trace.cpu[o as usize].name).to_string())
            .unwrap_or_else(|| "(no operator)".into());
        *by_op.entry(op).or_default() += g.dur;
    }
    let mut e = Evidence::default();
    e.facts.push(format!(
        "GPU {}: copies {} in the window, {} of it with nothing else running ({} of the step)",
        t.device,
        fmt_ns(t.total_memcpy as f64),
        fmt_ns(t.exposed_memcpy as f64),
        pct(f.share_of_step(f.per_step_us(t.exposed_memcpy)))
    ));
    // each link on its own (an average over devices hides a slow one)
    let links = copy_links(f, |_, _| true);
    e.facts
        .push("copies per link (bandwidth = bytes ÷ device time of the copies):".into());
    for l in links.iter().take(8) {
        e.facts.push(l.fact());
    }
    if links.len() > 8 {
        e.facts.push(format!("  … {} more links", links.len() - 8));
    }
    let slow = slow_link(&links);
    if let Some((s, q)) = slow {
        let (sg, qg) = (s.gbps().unwrap_or(0.0), q.gbps().unwrap_or(0.0));
        e.facts.push(format!(
            "slow link: {} moves {} per copy at {}, {:.1}× below {} ({}) for copies of the \
             same kind",
            s.label(),
            fmt_bytes(s.bytes_per_call().unwrap_or(0.0).round() as u64),
            fmt_gbps(sg),
            qg / sg.max(f64::MIN_POSITIVE),
            q.label(),
            fmt_gbps(qg)
        ));
        metric(&mut e, "slow_link_gbps", sg);
        metric(&mut e, "fast_link_gbps", qg);
    }
    let mut ov: Vec<(String, Ns)> = by_op.into_iter().collect();
    ov.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let ops: Vec<String> = ov
        .iter()
        .take(5)
        .map(|(n, d)| format!("{} {}", n, fmt_ns(*d as f64)))
        .collect();
    e.facts.push(format!("issued by: {}", ops.join(", ")));
    if already > 0 {
        e.facts.push(format!(
            "{} of the exposed time is pageable uploads (pageable-memcpy)",
            fmt_ns(already as f64)
        ));
    }
    metric(
        &mut e,
        "exposed_memcpy_us_per_step",
        f.per_step_us(t.exposed_memcpy),
    );
    let rec = cap(f, raw, &mut e);
    let mut advice = vec![
        "Keep tensors on the device between steps; avoid `.cpu()`/`.to(device)` round trips \
         and re-uploading constants every step (create them once on the GPU)."
            .to_string(),
        "Device-to-device copies come from `.contiguous()`, `.clone()`, `torch.cat`/`stack` and \
         dtype conversions: use views, in-place ops and preallocated outputs (`out=`)."
            .into(),
        "Overlap the remaining copies with compute: pinned memory, `non_blocking=True`, a side \
         stream; batch many small copies into one."
            .into(),
    ];
    if let Some((s, _)) = slow {
        advice.insert(
            0,
            format!(
                "{} is slower than the same copies elsewhere: check its link (`nvidia-smi \
                 topo -m`; `nvidia-smi -q` PCIe generation and width, a card in an x4 or \
                 Gen3 slot; the NUMA node of the copying process: `numactl`) and that its \
                 host buffers are pinned like the others'.",
                s.label()
            ),
        );
    }
    Some(Finding {
        id: "memcpy-heavy",
        severity: f.severity(rec),
        title: format!(
            "Copies dominate device time: {} of the step with only copies running",
            pct(f.share_of_step(f.per_step_us(t.exposed_memcpy)))
        ),
        recoverable_us: rec,
        recoverable_basis: format!(
            "copy time not overlapped by computation or communication (GPU timeline), minus \
             what pageable-memcpy claims, per step; {CAP_BASIS}"
        ),
        evidence: e,
        advice,
    })
}

fn memory_pressure(f: &Facts) -> Option<Finding> {
    let mut worst: Option<(f64, i64, u64, u64)> = None;
    for d in &f.trace.devices {
        if let (Some(p), Some(m)) = (d.peak_allocated, d.memory_bytes) {
            if m > 0 {
                let r = p as f64 / m as f64;
                if worst.is_none_or_less(r) {
                    worst = Some((r, d.id, p, m));
                }
            }
        }
    }
    let (r, id, p, m) = worst?;
    if r <= MEMORY_SHARE {
        return None;
    }
    let mut e = Evidence::default();
    e.facts.push(format!(
        "GPU {}: peak allocated {} of {} ({}), from the profiler's memory events",
        id,
        fmt_bytes(p),
        fmt_bytes(m),
        pct(r)
    ));
    e.metrics.insert("peak_allocated_bytes".into(), p as f64);
    e.metrics.insert("memory_bytes".into(), m as f64);
    e.metrics.insert("peak_share".into(), super::round3(r));
    super::memory::live_at_peak_evidence(f, id, &mut e);
    let advice = vec![
        "Near the limit the caching allocator frees and retries (`cudaFree` synchronizes the \
         device) and fragmentation can cause OOM: set \
         `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`."
            .to_string(),
        "Reduce activation memory: activation checkpointing (`torch.utils.checkpoint`), mixed \
         precision, a smaller micro-batch with gradient accumulation; shard states with FSDP."
            .into(),
        "Inspect what holds memory: `torch.cuda.memory._record_memory_history()` and the \
         snapshot viewer (pytorch.org/memory_viz)."
            .into(),
    ];
    Some(Finding {
        id: "gpu-memory-pressure",
        severity: Severity::Low,
        title: format!(
            "GPU memory pressure: peak allocated {} of device memory",
            pct(r)
        ),
        recoverable_us: 0.0,
        recoverable_basis: "none measured: a risk (allocator retries, OOM), not time spent".into(),
        evidence: e,
        advice,
    })
}

trait Worst {
    fn is_none_or_less(&self, r: f64) -> bool;
}

impl Worst for Option<(f64, i64, u64, u64)> {
    fn is_none_or_less(&self, r: f64) -> bool {
        match self {
            None => true,
            Some(w) => w.0 < r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{find, run};
    use crate::model::build::TraceBuilder;
    use crate::model::GpuKind;

    /// Three steps of a 600 µs GEMM followed by a 400 µs collective kernel `comm`.
    fn gemm_then_collective(comm: &str) -> crate::model::Trace {
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        let mut t = 0.0;
        for s in 0..3 {
            let start = t;
            let c = b.runtime("cudaLaunchKernel", 0, t, 2.0);
            b.gpu(
                GpuKind::Kernel,
                "sm80_xmma_gemm_bf16",
                0,
                7,
                t + 3.0,
                600.0,
                c,
            );
            let c = b.runtime("cudaLaunchKernel", 0, t + 1.0, 2.0);
            b.gpu(GpuKind::Kernel, comm, 0, 20, t + 603.0, 400.0, c);
            b.runtime("cudaDeviceSynchronize", 0, t + 4.0, 1000.0);
            t += 1010.0;
            b.annotation(&format!("ProfilerStep#{s}"), start, t - start);
        }
        b.build()
    }

    /// DeepEP, NVSHMEM, TensorRT-LLM and symmetric-memory collectives are communication too.
    #[test]
    fn exposed_communication_beyond_nccl() {
        for comm in [
            "void deep_ep::intranode::combine<__nv_bfloat16, 8, 768>(void*, float*, int*)",
            "void tensorrt_llm::kernels::oneShotAllReduceKernel<__nv_bfloat16, 8>(Params)",
            "void nvshmemi_proxy_progress_kernel(void*)",
            "void c10d::symmetric_memory::two_shot_all_reduce_kernel<float, 16>(float**)",
        ] {
            let d = run(&gemm_then_collective(comm));
            let c = find(&d, "exposed-communication").unwrap_or_else(|| panic!("{comm}"));
            assert!((c.recoverable_us - 400.0).abs() < 1.0, "{comm}");
            assert!(find(&d, "low-occupancy").is_none(), "{comm}");
        }
    }

    #[test]
    fn exposed_communication_above_ten_percent() {
        let b = gemm_then_collective("ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
        let d = run(&b);
        let c = find(&d, "exposed-communication").expect("fires");
        assert!(
            (c.recoverable_us - 400.0).abs() < 1.0,
            "{}",
            c.recoverable_us
        );
        assert_eq!(d.findings[0].id, "exposed-communication");
        assert!(
            d.verdict.starts_with("GPU-bound") || d.verdict.contains("ommunication"),
            "{}",
            d.verdict
        );

        // comm fully overlapped: silent
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 2.0);
        b.gpu(GpuKind::Kernel, "sm80_xmma_gemm_bf16", 0, 7, 3.0, 600.0, c);
        let c = b.runtime("cudaLaunchKernel", 0, 1.0, 2.0);
        b.gpu(
            GpuKind::Kernel,
            "ncclDevKernel_AllReduce",
            0,
            20,
            10.0,
            400.0,
            c,
        );
        b.annotation("ProfilerStep#0", 0.0, 605.0);
        assert!(find(&run(&b.build()), "exposed-communication").is_none());
    }

    #[test]
    fn pageable_copies_and_memcpy_heavy() {
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        let mut t = 0.0;
        for s in 0..3 {
            let start = t;
            let ext = b.op("aten::copy_", t, 600.0);
            let c = b.runtime("cudaMemcpyAsync", ext, t + 1.0, 590.0);
            b.gpu(
                GpuKind::Memcpy,
                "Memcpy HtoD (Pageable -> Device)",
                0,
                7,
                t + 5.0,
                500.0,
                c,
            )
            .bytes = 6 << 20;
            let c = b.runtime("cudaMemcpyAsync", 0, t + 592.0, 3.0);
            b.gpu(
                GpuKind::Memcpy,
                "Memcpy DtoD (Device -> Device)",
                0,
                7,
                t + 600.0,
                300.0,
                c,
            )
            .bytes = 1 << 30;
            let c = b.runtime("cudaLaunchKernel", 0, t + 596.0, 2.0);
            b.gpu(
                GpuKind::Kernel,
                "sm80_xmma_gemm_bf16",
                0,
                7,
                t + 901.0,
                100.0,
                c,
            );
            b.runtime("cudaDeviceSynchronize", 0, t + 599.0, 402.0);
            t += 1002.0;
            b.annotation(&format!("ProfilerStep#{s}"), start, t - start);
        }
        let d = run(&b.build());
        let p = find(&d, "pageable-memcpy").expect("pageable");
        assert!(
            (p.recoverable_us - 500.0).abs() < 1.0,
            "{}",
            p.recoverable_us
        );
        let m = find(&d, "memcpy-heavy").expect("memcpy-heavy");
        // 800 µs exposed copies per step, 500 of them claimed by pageable-memcpy
        assert!(
            (m.recoverable_us - 300.0).abs() < 1.0,
            "{}",
            m.recoverable_us
        );
        assert!(m.evidence.facts.iter().any(|x| x.contains("DtoD")));
        // no copies: neither
        let mut b = TraceBuilder::new();
        b.op_with_kernel("aten::mm", "gemm", 0.0, 10.0, 5.0, 100.0);
        let d = run(&b.build());
        assert!(find(&d, "pageable-memcpy").is_none() && find(&d, "memcpy-heavy").is_none());
    }

    /// Three steps of a 64 MiB pinned upload to each of four GPUs: GPUs 0-2 at 25 GB/s
    /// (2,684.35 µs), GPU 3 at 3 GB/s (22,369.62 µs), then a 100 µs kernel on each.
    fn uploads(bytes: u64, slow_gbps: f64) -> crate::model::Trace {
        let mut b = TraceBuilder::new();
        let mut t = 0.0;
        for s in 0..3 {
            let start = t;
            let mut end: f64 = t;
            for d in 0..4 {
                let gbps = if d == 3 { slow_gbps } else { 25.0 };
                let dur = bytes as f64 / gbps / 1e3; // µs
                let c = b.runtime("cudaMemcpyAsync", 0, t + d as f64, 1.0);
                b.gpu(
                    GpuKind::Memcpy,
                    "Memcpy HtoD (Pinned -> Device)",
                    d,
                    7,
                    t + 5.0,
                    dur,
                    c,
                )
                .bytes = bytes;
                let c = b.runtime("cudaLaunchKernel", 0, t + 5.0 + d as f64, 1.0);
                b.gpu(GpuKind::Kernel, "gemm", d, 7, t + 6.0 + dur, 100.0, c);
                end = end.max(t + 6.0 + dur + 100.0);
            }
            b.runtime("cudaDeviceSynchronize", 0, t + 10.0, end - t - 10.0);
            t = end + 1.0;
            b.annotation(&format!("ProfilerStep#{s}"), start, t - start);
        }
        b.build()
    }

    /// Each link on its own, with bytes per call; the one slow link among fast ones named.
    #[test]
    fn memcpy_heavy_reports_each_link_and_the_slow_one() {
        let d = run(&uploads(64 << 20, 3.0));
        let m = find(&d, "memcpy-heavy").expect("memcpy-heavy");
        let facts = m.evidence.facts.join("\n");
        // 3 × 64 MiB per link: 192 MiB in all; 64 MiB per call
        for g in 0..3 {
            let want = format!(
                "host → GPU {g} (HtoD pinned): 3 copies, 64.0 MiB per call (192.0 MiB in all) \
                 in 8.05 ms, 25.0 GB/s"
            );
            assert!(facts.contains(&want), "{facts}");
        }
        assert!(facts.contains("host → GPU 3 (HtoD pinned): 3 copies, 64.0 MiB per call"));
        assert!(
            facts.contains(
                "slow link: host → GPU 3 moves 64.0 MiB per copy at 3.0 GB/s, 8.3× below \
                 host → GPU"
            ),
            "{facts}"
        );
        assert!((m.evidence.metrics["slow_link_gbps"] - 3.0).abs() < 1e-6);
        assert!((m.evidence.metrics["fast_link_gbps"] - 25.0).abs() < 1e-6);
        assert!(
            m.advice[0].starts_with("host → GPU 3 is slower"),
            "{}",
            m.advice[0]
        );
        // all links alike: no slow link
        let d = run(&uploads(64 << 20, 25.0));
        let m = find(&d, "memcpy-heavy").expect("memcpy-heavy");
        assert!(!m.evidence.facts.iter().any(|x| x.starts_with("slow link")));
        assert!(!m.evidence.metrics.contains_key("slow_link_gbps"));
        // small copies are bound by latency, not by the link: not compared
        let d = run(&uploads(256 << 10, 0.3));
        let m = find(&d, "memcpy-heavy").expect("memcpy-heavy");
        assert!(!m.evidence.facts.iter().any(|x| x.starts_with("slow link")));
    }

    #[test]
    fn memory_pressure_over_ninety_percent() {
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        b.op_with_kernel("aten::mm", "gemm", 0.0, 10.0, 5.0, 100.0);
        let mut t = b.build();
        t.devices[0].peak_allocated = Some(78 << 30);
        let d = run(&t);
        let m = find(&d, "gpu-memory-pressure").expect("fires");
        assert!(m.title.contains("97.5%"), "{}", m.title);
        t.devices[0].peak_allocated = Some(40 << 30);
        assert!(find(&run(&t), "gpu-memory-pressure").is_none());
    }
}
