//! Host-side rules: the device waits for the host. Each claims its own causes of device idle
//! time ([`Cause`]), so their recoverable times never overlap.

use std::collections::BTreeMap;

use super::{
    count, fmt_ns, fmt_us_sentence, metric, pct, short, Evidence, Facts, Finding, Severity,
};
use crate::analysis::gaps::{Band, Cause, DeviceGaps, Gap, BANDS, CAUSES};
use crate::analysis::launch::QUEUE_FULL_DEPTH;
use crate::model::{CpuKind, Interval, Ns, NONE};
use crate::window::steps::is_dataloader;

/// DataLoader share of the step above which `dataloader-stall` fires (the TensorBoard
/// plugin's recommendation threshold).
pub const DATALOADER_SHARE: f64 = 0.05;
/// Share of the step of sync-caused idle above which `host-sync` fires.
pub const SYNC_SHARE: f64 = 0.01;
/// Share of the window of compile work above which `compile-in-window` fires.
pub const COMPILE_SHARE: f64 = 0.01;
/// Share of the step of host-late idle in short gaps above which `launch-bound` fires.
pub const LAUNCH_SHARE: f64 = 0.05;
/// Share of the window of device idle above which `gpu-idle-gaps` fires.
pub const IDLE_SHARE: f64 = 0.05;
/// Share of the step of device idle with the next work already queued above which
/// `device-side-gaps` fires.
pub const QUEUED_SHARE: f64 = 0.05;
/// The gap (ns) a device leaves between two kernels queued back to back even at its best (a
/// graph replay's kernel-to-kernel latency is about a microsecond): `device-side-gaps`
/// recovers only what each queued gap lasts beyond it.
pub const DISPATCH_FLOOR: Ns = 1_000;
/// Share of the step of idle during host compute above which `host-compute` fires.
pub const HOST_COMPUTE_SHARE: f64 = 0.05;
/// CPU samples below which the sampled functions of a stretch of host time are not named
/// (five samples at nsys's default 1 kHz say little about 2 ms).
pub const MIN_SAMPLES: u64 = 10;
/// Share of the window of one-time start-up in the judged time
/// ([`crate::analysis::startup::Startup::judged`]) from which `startup` fires.
pub const STARTUP_SHARE: f64 = 0.01;

/// All host-side findings.
pub fn rules(f: &Facts) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(startup(f));
    out.extend(dataloader_stall(f));
    out.extend(host_sync(f));
    out.extend(compile_in_window(f));
    out.extend(launch_bound(f));
    out.extend(host_compute(f));
    out.extend(host_communication(f));
    out.extend(device_side_gaps(f));
    out.extend(gpu_idle_gaps(f));
    out.extend(queue_full(f));
    out
}

/// Idle of one device claimed by a predicate over (band, cause).
pub fn claim(d: &DeviceGaps, pred: impl Fn(Band, Cause) -> bool) -> Ns {
    let mut total = 0;
    for (bi, b) in BANDS.iter().enumerate() {
        for c in CAUSES {
            if pred(*b, c) {
                total += d.by_band_cause[bi][c as usize];
            }
        }
    }
    total
}

/// True when a gap of device `d` lies inside a CUDA/HIP graph replay: the device ran the
/// graph's own work there, so no host-side cause applies to it.
pub fn in_replay(f: &Facts, d: &DeviceGaps, g: &Gap) -> bool {
    i32::try_from(d.device).is_ok_and(|dev| f.a.graphs.covers(dev, Interval::new(g.start, g.end)))
}

/// Idle of device `d` claimed by `pred` that belongs to other rules: gaps inside graph replays
/// (no host cause applies there; the time the device had work queued, [`Cause::Queued`], stays
/// with the device) and the host work of gaps between the graphs of a compiled call with graph
/// breaks (launch overhead and CPU work there belong to `graph-breaks`, see [`break_claim`]).
fn claimed_elsewhere(f: &Facts, d: &DeviceGaps, pred: &impl Fn(Band, Cause) -> bool) -> Ns {
    if f.a.graphs.spans.is_empty() && f.a.compiled.break_spans.is_empty() {
        return 0;
    }
    let mut total = 0;
    for g in &d.gaps {
        let taken: fn(Cause) -> bool = if in_replay(f, d, g) {
            |c| c != Cause::Queued
        } else if between_graphs(f, d, g) {
            is_break_cause
        } else {
            continue;
        };
        for c in CAUSES {
            if taken(c) && pred(g.band(), c) {
                total += g.split.get(c);
            }
        }
    }
    total
}

/// True when a gap of device `d` lies between the device work of two graphs of a compiled
/// call with graph breaks (and not inside a replay).
pub fn between_graphs(f: &Facts, d: &DeviceGaps, g: &Gap) -> bool {
    i32::try_from(d.device).is_ok_and(|dev| {
        f.a.compiled
            .between_graphs(dev, Interval::new(g.start, g.end))
    }) && !in_replay(f, d, g)
}

/// True for a gap under 1 ms whose largest cause is launch overhead or other CPU work of the
/// host, outside graph replays and the gaps between graphs (`launch-bound`'s host-late gaps).
pub fn host_late_gap(f: &Facts, d: &DeviceGaps, g: &Gap) -> bool {
    g.band() != Band::Over1ms
        && matches!(g.cause, Cause::Launch | Cause::Cpu)
        && !in_replay(f, d, g)
        && !between_graphs(f, d, g)
}

/// The causes `graph-breaks` claims in gaps between graphs: the host's eager work.
pub fn is_break_cause(c: Cause) -> bool {
    matches!(c, Cause::Launch | Cause::Cpu | Cause::Alloc)
}

/// Idle between the graphs of broken compiled calls claimed by `graph-breaks`: its host-work
/// causes, whatever the gap's length; the largest over devices (ns, device index).
pub fn break_claim(f: &Facts) -> (Ns, Option<usize>) {
    let mut best = (0, None);
    if f.a.compiled.break_spans.is_empty() {
        return best; // no gap lies between graphs
    }
    for (i, d) in f.gaps.devices.iter().enumerate() {
        let c: Ns = d
            .gaps
            .iter()
            .filter(|g| between_graphs(f, d, g))
            .map(|g| {
                CAUSES
                    .iter()
                    .filter(|c| is_break_cause(**c))
                    .map(|c| g.split.get(*c))
                    .sum::<Ns>()
            })
            .sum();
        if c > best.0 {
            best = (c, Some(i));
        }
    }
    best
}

/// [`claim`] less the idle other rules own ([`claimed_elsewhere`]).
pub fn claim_outside_replays(f: &Facts, d: &DeviceGaps, pred: impl Fn(Band, Cause) -> bool) -> Ns {
    claim(d, &pred) - claimed_elsewhere(f, d, &pred)
}

/// Largest claim over devices: (ns, device index in `f.gaps.devices`), less the idle other
/// rules own ([`claimed_elsewhere`]: gaps inside graph replays, host work between graphs).
pub fn max_claim(f: &Facts, pred: impl Fn(Band, Cause) -> bool) -> (Ns, Option<usize>) {
    let mut best = (0, None);
    for (i, d) in f.gaps.devices.iter().enumerate() {
        let c = claim_outside_replays(f, d, &pred);
        if c > best.0 || best.1.is_none() {
            best = (c, Some(i));
        }
    }
    best
}

/// `launch-bound` claims launch overhead and other CPU work in gaps under 1 ms.
pub fn is_launch_claim(b: Band, c: Cause) -> bool {
    b != Band::Over1ms && matches!(c, Cause::Launch | Cause::Cpu | Cause::Alloc)
}

/// `gpu-idle-gaps` claims launch and CPU work in gaps of 1 ms and more, and untraced time.
pub fn is_idle_claim(b: Band, c: Cause) -> bool {
    (b == Band::Over1ms && matches!(c, Cause::Launch | Cause::Cpu | Cause::Alloc))
        || c == Cause::Untraced
}

/// The longest host spans of a kind inside the window, longest first.
fn longest_spans(f: &Facts, pred: impl Fn(&str, CpuKind) -> bool, n: usize) -> Vec<u32> {
    let mut v: Vec<(Ns, u32)> = Vec::new();
    for (i, e) in f.trace.cpu.iter().enumerate() {
        if pred(f.trace.name(e.name), e.kind) && f.mask.covered_within(e.interval()) > 0 {
            v.push((e.dur, i as u32));
        }
    }
    v.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    v.into_iter().take(n).map(|x| x.1).collect()
}

fn dataloader_stall(f: &Facts) -> Option<Finding> {
    let avg = &f.a.steps.average;
    if f.a.steps.steps.is_empty() || avg.total <= 0.0 {
        return None;
    }
    let share = avg.dataloader / avg.total;
    if share <= DATALOADER_SHARE {
        return None;
    }
    let (idle, _) = max_claim(f, |_, c| c == Cause::Dataloader);
    let has_device = !f.gaps.devices.is_empty();
    let rec = if has_device {
        f.per_step_us(idle)
    } else {
        avg.dataloader / 1000.0
    };
    let mut e = Evidence::default();
    e.facts.push(format!(
        "DataLoader {} per step = {} of the {} step (threshold {})",
        fmt_ns(avg.dataloader),
        pct(share),
        fmt_ns(avg.total),
        pct(DATALOADER_SHARE)
    ));
    if has_device {
        e.facts.push(format!(
            "the GPU sat idle {} per step while the DataLoader produced the next batch",
            fmt_us_sentence(f.per_step_us(idle))
        ));
    }
    let per_step: Vec<String> =
        f.a.steps
            .steps
            .iter()
            .map(|s| format!("{} {}", s.name, fmt_ns(s.breakdown.dataloader as f64)))
            .collect();
    e.facts.push(format!("per step: {}", per_step.join(", ")));
    let spans = longest_spans(f, |n, k| k != CpuKind::Python && is_dataloader(n), 3);
    let mut single = false;
    let mut multi = false;
    for &i in &spans {
        let c = &f.trace.cpu[i as usize];
        let name = f.trace.name(c.name);
        single |= name.contains("SingleProcess");
        multi |= name.contains("MultiProcessing");
        e.locations
            .push(f.location("dataloader", name, c.start, c.dur));
    }
    if single {
        e.facts.push(
            "the iterator is `_SingleProcessDataLoaderIter`: num_workers=0, batches are \
             loaded in the training loop's own process"
                .into(),
        );
    } else if multi {
        e.facts.push(
            "the iterator is `_MultiProcessingDataLoaderIter`: the workers do not keep up".into(),
        );
    }
    metric(&mut e, "dataloader_us_per_step", avg.dataloader / 1000.0);
    metric(&mut e, "dataloader_share", share);
    metric(&mut e, "gpu_idle_us_per_step", f.per_step_us(idle));
    let mut advice = Vec::new();
    if single || !multi {
        advice.push(
            "Load batches in worker processes: `DataLoader(..., num_workers=N)` (start near the \
             number of CPU cores per GPU, e.g. 4-8) so loading overlaps the GPU work."
                .to_string(),
        );
    } else {
        advice.push(
            "Add workers (`num_workers`) or make each sample cheaper (decode/augment less on \
             the CPU, cache preprocessed data): the workers do not keep up."
                .to_string(),
        );
    }
    advice.push(
        "`pin_memory=True` and `batch.to(device, non_blocking=True)` so the copy overlaps compute."
            .into(),
    );
    advice.push(
        "`persistent_workers=True` (no worker restart each epoch) and `prefetch_factor=2..4` \
         (batches queued ahead)."
            .into(),
    );
    advice.push(
        "If the workers are CPU-bound, move decoding/augmentation to the GPU (NVIDIA DALI, \
         torchvision.transforms.v2 on CUDA tensors)."
            .into(),
    );
    Some(Finding {
        id: "dataloader-stall",
        severity: f.severity(rec),
        title: format!(
            "DataLoader stalls the step: {} of each step waiting for the next batch",
            pct(share)
        ),
        recoverable_us: rec,
        recoverable_basis: if has_device {
            "device idle time attributed to DataLoader spans on the launching thread, per \
             step: with loading overlapped, the GPU would not wait for it"
                .into()
        } else {
            "mean DataLoader time per step (no device activity in the window)".into()
        },
        evidence: e,
        advice,
    })
}

/// What a sync site's outermost operator says about why it waits: `item` (`.item()`,
/// `float(t)`, `if t:`), `nonzero` (an output size known only from the data), `copy`
/// (`.cpu()`, `.tolist()`, `.numpy()`, a pageable upload), `explicit` (no operator around
/// it: `torch.cuda.synchronize()`, `stream.synchronize()`, an event wait) or `other`.
pub fn sync_site_kind(outer_op: &str) -> &'static str {
    match outer_op {
        "aten::item" | "aten::_local_scalar_dense" | "aten::is_nonzero" => "item",
        "aten::nonzero"
        | "aten::masked_select"
        | "aten::unique"
        | "aten::_unique2"
        | "aten::repeat_interleave" => "nonzero",
        "aten::to" | "aten::_to_copy" | "aten::copy_" => "copy",
        "" => "explicit",
        _ => "other",
    }
}

/// Sync calls in the window whose result the host needs from the data (`item`, `nonzero`,
/// `copy` sites of [`sync_site_kind`]): a CUDA graph cannot capture a region with them.
pub fn data_dependent_syncs(f: &Facts) -> u64 {
    f.syncs
        .sites
        .iter()
        .filter(|s| matches!(sync_site_kind(&s.outer_op), "item" | "nonzero" | "copy"))
        .map(|s| s.count)
        .sum()
}

/// `n` host syncs over `steps` steps, as words: an integer count per step when the steps
/// have that many each on average exactly ("2 host syncs per step"), else the average,
/// labelled as one ("2.5 host syncs per step on average").
pub fn syncs_per_step(n: u64, steps: usize) -> String {
    let steps = steps.max(1) as u64;
    if n.is_multiple_of(steps) {
        let k = n / steps;
        format!(
            "{} host sync{} per step",
            count(k),
            if k == 1 { "" } else { "s" }
        )
    } else {
        format!(
            "{:.1} host syncs per step on average",
            n as f64 / steps as f64
        )
    }
}

fn host_sync(f: &Facts) -> Option<Finding> {
    if f.syncs.calls == 0 {
        return None;
    }
    let (idle, _) = max_claim(f, |_, c| c == Cause::Sync);
    let rec = f.per_step_us(idle);
    if f.share_of_step(rec) < SYNC_SHARE {
        return None;
    }
    let s = &f.syncs;
    let mut e = Evidence::default();
    let n = s.calls;
    e.facts.push(format!(
        "{} host syncs in the window ({}); the host waited {} in them; the GPU sat idle {} \
         per step in the gaps they caused or spanned",
        count(n),
        syncs_per_step(n, f.n_steps),
        fmt_ns(s.wait as f64),
        fmt_us_sentence(rec)
    ));
    if s.per_step.len() > 1 {
        let per: Vec<String> =
            f.a.steps
                .steps
                .iter()
                .zip(&s.per_step)
                .map(|(st, c)| format!("{} {}", st.name, c))
                .collect();
        e.facts.push(format!("syncs per step: {}", per.join(", ")));
    }
    let mut kinds: Vec<&str> = Vec::new();
    for site in s.sites.iter().take(5) {
        let mut place = String::new();
        if !site.outer_op.is_empty() {
            place.push_str(&site.outer_op);
            if site.inner_op != site.outer_op && !site.inner_op.is_empty() {
                place.push_str(" → ");
                place.push_str(&site.inner_op);
            }
        } else {
            place.push_str("outside any operator");
        }
        if !site.annotation.is_empty() {
            place.push_str(&format!(" in \"{}\"", short(&site.annotation, 60)));
        }
        e.facts.push(format!(
            "{}× {} ({}) {}: host waited {}, GPU idle after {}",
            count(site.count),
            site.call,
            site.kind.as_str(),
            place,
            fmt_ns(site.wait as f64),
            fmt_ns(site.idle_after as f64)
        ));
        let c = &f.trace.cpu[site.first as usize];
        e.locations
            .push(f.location("sync", &site.call, c.start, c.dur));
        kinds.push(sync_site_kind(&site.outer_op));
    }
    metric(&mut e, "syncs", n as f64);
    metric(&mut e, "syncs_per_step", n as f64 / f.n_steps as f64);
    metric(&mut e, "host_wait_us", s.wait as f64 / 1000.0);
    metric(&mut e, "gpu_idle_after_us_per_step", rec);
    let mut advice = Vec::new();
    if kinds.contains(&"item") {
        advice.push(
            "`.item()` / `float(t)` / `if t:` copy a GPU scalar to the host and wait for the \
             whole queue: keep losses and metrics on the GPU (accumulate with `+=`) and read \
             them every N steps."
                .to_string(),
        );
    }
    if kinds.contains(&"nonzero") {
        advice.push(
            "`torch.nonzero`, boolean-mask indexing (`x[mask]`), `unique` and \
             `repeat_interleave` without `output_size` need the result size on the host: use \
             fixed-size forms (`torch.where`, `masked_fill`, multiplication by the mask)."
                .to_string(),
        );
    }
    if kinds.contains(&"copy") {
        advice.push(
            "Copies to or from pageable host memory block: `.cpu()`/`.tolist()`/`.numpy()` \
             wait for the GPU, and uploads from pageable memory sync; use pinned buffers and \
             `non_blocking=True`, and move results to the host only when needed."
                .to_string(),
        );
    }
    if kinds.contains(&"explicit") {
        advice.push(
            "Remove `torch.cuda.synchronize()` / `stream.synchronize()` from the loop (keep \
             them only for timing, outside the measured region); wait on a \
             `torch.cuda.Event` only where the host really needs the result."
                .to_string(),
        );
    }
    advice.push(
        "Find every sync point with `torch.cuda.set_sync_debug_mode(\"warn\")` (or \"error\")."
            .into(),
    );
    Some(Finding {
        id: "host-sync",
        severity: f.severity(rec),
        title: format!(
            "Host syncs drain the GPU: {}, {} of GPU idle after them per step",
            syncs_per_step(n, f.n_steps),
            fmt_us_sentence(rec)
        ),
        recoverable_us: rec,
        recoverable_basis: "device idle time of the gaps that opened while the host was \
                            blocked in a sync call, until new work started (DataLoader and \
                            compile time inside them excluded), per step"
            .into(),
        evidence: e,
        advice,
    })
}

/// `startup`: the device idle charged to one-time start-up ([`Cause::Startup`]: context and
/// module loading, lazy loads at first launch, and in a cold window first-call allocation and
/// JIT compiles), the finding that carries the `Start-up dominates` verdict with its time.
fn startup(f: &Facts) -> Option<Finding> {
    use crate::analysis::startup::StartupKind;
    let st = &f.a.startup;
    if f.window_ns == 0
        || f.gaps.devices.is_empty()
        || st.judged <= 0
        || (st.judged as f64) < STARTUP_SHARE * f.window_ns as f64
    {
        return None;
    }
    let (idle, dev) = max_claim(f, |_, c| c == Cause::Startup);
    let rec = f.per_step_us(idle);
    let mut e = Evidence::default();
    e.facts.push(format!(
        "one-time start-up in the analyzed window: {} ({} of the window; wall-clock union \
         across threads)",
        fmt_ns(st.judged as f64),
        pct(st.judged as f64 / f.window_ns as f64)
    ));
    let parts: Vec<String> = st
        .parts
        .iter()
        .filter(|p| p.judged > 0)
        .map(|p| {
            format!(
                "{} {} ({} {} in the trace)",
                p.kind.as_str(),
                fmt_ns(p.judged as f64),
                count(p.calls),
                if p.calls == 1 {
                    "call or span"
                } else {
                    "calls or spans"
                }
            )
        })
        .collect();
    e.facts.push(format!("by category: {}", parts.join(", ")));
    if let Some(d) = dev.and_then(|i| f.gaps.devices.get(i)) {
        e.facts.push(format!(
            "GPU {} sat idle {} during it{}: charged to start-up once, not to launch overhead, \
             host work or syncs",
            d.device,
            fmt_ns(idle as f64),
            if f.n_steps > 1 {
                format!(" ({} per step)", fmt_us_sentence(rec))
            } else {
                String::new()
            }
        ));
    }
    if st.before > 0 {
        e.facts.push(format!(
            "{} more before the window (left out of it)",
            fmt_ns(st.before as f64)
        ));
    }
    if let Some(iv) = st.judged_spans.spans().iter().max_by_key(|s| s.len()) {
        e.locations
            .push(f.location("startup", "one-time start-up", iv.start, iv.len()));
    }
    metric(&mut e, "startup_us", st.judged as f64 / 1000.0);
    metric(&mut e, "gpu_idle_us_per_step", rec);
    let mut advice = vec![format!(
        "Profile the steady state: {CAPTURE_STEADY_ADVICE}; one-time start-up is paid once \
         per process and is not what bounds the steady state."
    )];
    if st.part(StartupKind::ContextModule).is_some() {
        advice.push(if st.hip_lazy {
            "ROCm loads each code object at its kernel's first launch: launch every kernel \
             once (a warm-up step) before the capture."
                .to_string()
        } else {
            "Modules load lazily at each kernel's first launch (`CUDA_MODULE_LOADING=LAZY`, \
             the default since CUDA 12.2): run a warm-up step before the capture, or load them \
             at start-up with `CUDA_MODULE_LOADING=EAGER`."
                .to_string()
        });
    }
    if st
        .part(StartupKind::Allocation)
        .is_some_and(|p| p.judged > 0)
    {
        advice.push(
            "First-call allocations: the caching allocator reserves memory once; a warm-up \
             step with the largest shapes reserves it before the measured steps."
                .to_string(),
        );
    }
    if st
        .part(StartupKind::JitCompile)
        .is_some_and(|p| p.judged > 0)
    {
        advice.push(
            "If the process is short-lived, reuse compiled artifacts across runs: Inductor's \
             FX-graph and autotune caches (`TORCHINDUCTOR_FX_GRAPH_CACHE=1`, \
             `torch.compiler.save_cache_artifacts()`)."
                .to_string(),
        );
    }
    Some(Finding {
        id: "startup",
        severity: f.severity(rec),
        title: format!(
            "One-time start-up: {} ({} of the window), the GPU idle {} in it",
            fmt_ns(st.judged as f64),
            pct(st.judged as f64 / f.window_ns as f64),
            fmt_ns(idle as f64)
        ),
        recoverable_us: rec,
        recoverable_basis: "device idle time charged to one-time start-up (context/module and \
                            lazy loading, first-call allocation and JIT compile in a cold \
                            window), per step: a steady state does not pay it again"
            .into(),
        evidence: e,
        advice,
    })
}

/// Why a finding's recoverable time is not judged from this capture (docs/rules.md, *Not
/// judged*). One mechanism for every rule that charges idle time to the host: the reason is
/// found once on the [`Facts`], and [`not_judged`] takes the time back the same way.
enum Unjudged {
    /// The gaps and launches come from one cold pass ([`Facts::cold_pass`]): their share of
    /// that pass is no estimate of what a change gains in a steady state.
    ColdPass(&'static str),
    /// The idle time cannot be charged to the host ([`Facts::idle_unattributable`]): device
    /// records are missing or the device clock is offset.
    IdleUnattributable(String),
}

impl Unjudged {
    /// The reasons that apply to a finding built on the device's idle time (`idle`: every
    /// gap, `gpu-idle-gaps`), or only on the launching thread's short gaps (`launch-bound`,
    /// whose own rule already asks for launch links).
    fn of(f: &Facts, idle: bool) -> Vec<Unjudged> {
        let mut out: Vec<Unjudged> = f.cold_pass().map(Unjudged::ColdPass).into_iter().collect();
        if idle {
            out.extend(f.idle_unattributable().map(Unjudged::IdleUnattributable));
        }
        out
    }
}

/// Takes back a finding's recoverable time for each reason it is not judged ([`Unjudged`]):
/// it recovers nothing (0, `info`, ranked below the findings with an estimate), its figures
/// stay in the evidence, and the facts and the recoverable basis say why.
fn not_judged(x: &mut Finding, reasons: &[Unjudged]) {
    for why in reasons {
        let basis = match why {
            Unjudged::ColdPass(why) => {
                metric(&mut x.evidence, "one_pass_us_per_step", x.recoverable_us);
                x.evidence.facts.push(format!(
                    "from one cold pass ({why}): {} of idle in this pass, with first-call \
                     dispatch, lazy loads and cold caches in it; what the change gains in a \
                     steady state cannot be judged from it, so the finding claims nothing \
                     (capped at info)",
                    fmt_us_sentence(x.recoverable_us)
                ));
                format!("the figures come from one cold pass ({why})")
            }
            Unjudged::IdleUnattributable(why) => {
                x.evidence.facts.push(format!(
                    "not counted as recoverable: the capture check found {why}; the gaps \
                     cannot be blamed on the host or the device"
                ));
                "the capture check says the idle time cannot be charged to the host".into()
            }
        };
        if !x.recoverable_basis.starts_with("not judged") {
            x.recoverable_basis = format!("not judged: {basis}; was {}", x.recoverable_basis);
        }
        x.recoverable_us = 0.0;
        x.severity = Severity::Info;
    }
}

/// How to capture a steady state, in advice.
const CAPTURE_STEADY_ADVICE: &str = "`torch.profiler.schedule(wait=1, warmup=1, active=3)` \
     with `prof.step()` each iteration, or an Nsight Systems capture range that starts after \
     the first iterations";

fn compile_in_window(f: &Facts) -> Option<Finding> {
    let ct = f.gaps.compile_time;
    if ct == 0 || f.window_ns == 0 || (ct as f64) < COMPILE_SHARE * f.window_ns as f64 {
        return None;
    }
    let (idle, _) = max_claim(f, |_, c| c == Cause::Compile);
    let rec = if f.gaps.devices.is_empty() {
        f.per_step_us(ct)
    } else {
        f.per_step_us(idle)
    };
    let mut e = Evidence::default();
    e.facts.push(format!(
        "compile, autotune or graph-capture work inside the window: {} ({} of the window)",
        fmt_ns(ct as f64),
        pct(ct as f64 / f.window_ns as f64)
    ));
    let cw = &f.a.selection.compile;
    let kinds: Vec<String> = cw
        .by_kind
        .iter()
        .filter_map(|k| {
            let t = k.spans.intersect(f.mask).total();
            (t > 0).then(|| format!("{} {}", k.kind.as_str(), fmt_ns(t as f64)))
        })
        .collect();
    if !kinds.is_empty() {
        e.facts.push(format!("by kind: {}", kinds.join(", ")));
    }
    if idle > 0 {
        e.facts.push(format!(
            "the GPU sat idle {} per step during it",
            fmt_us_sentence(f.per_step_us(idle))
        ));
    }
    let in_window: Vec<String> = cw
        .steps
        .iter()
        .filter(|s| f.a.steps.steps.iter().any(|w| w.name == s.name))
        .map(|s| format!("{} ({})", s.name, fmt_ns(s.time as f64)))
        .collect();
    if !in_window.is_empty() {
        e.facts
            .push(format!("steps with compile work: {}", in_window.join(", ")));
    }
    // longest compile stretch inside the window
    if let Some(iv) = cw
        .spans
        .intersect(f.mask)
        .spans()
        .iter()
        .max_by_key(|s| s.len())
    {
        e.locations
            .push(f.location("compile", "compile/autotune work", iv.start, iv.len()));
    }
    metric(&mut e, "compile_us", ct as f64 / 1000.0);
    metric(&mut e, "gpu_idle_us_per_step", f.per_step_us(idle));
    let advice = vec![
        "Profile the steady state: give the profiler warm-up steps \
         (`torch.profiler.schedule(wait=1, warmup=3, active=5)`) so compilation and \
         autotuning happen before the recorded steps; `stallscope analyze` excludes warm-up \
         steps by default when a trace has several."
            .to_string(),
        "If it recompiles in steady state, find why with `TORCH_LOGS=recompiles` and mark \
         varying sizes dynamic (`torch._dynamo.mark_dynamic(x, dim)` or \
         `torch.compile(dynamic=True)`)."
            .into(),
        "Reuse compiled artifacts across runs: Inductor's FX-graph and autotune caches \
         (`TORCHINDUCTOR_FX_GRAPH_CACHE=1`, `torch.compiler.save_cache_artifacts()` / \
         `load_cache_artifacts()`)."
            .into(),
        "With `torch.backends.cudnn.benchmark=True`, every new input shape re-runs the cuDNN \
         algorithm search: keep shapes fixed (pad or bucket them)."
            .into(),
    ];
    Some(Finding {
        id: "compile-in-window",
        severity: f.severity(rec),
        title: format!(
            "Compile/autotune work inside the analyzed window: {}",
            fmt_ns(ct as f64)
        ),
        recoverable_us: rec,
        recoverable_basis: if f.gaps.devices.is_empty() {
            "compile time in the window per step (no device activity)".into()
        } else {
            "device idle time while compile, autotune or graph-capture work ran, per step: \
             it disappears once compilation happens before the measured steps"
                .into()
        },
        evidence: e,
        advice,
    })
}

fn band_line(f: &Facts, d: &DeviceGaps, pred: impl Fn(Band, Cause) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    for b in BANDS {
        let t: Ns = claim_outside_replays(f, d, |band, c| band == b && pred(band, c));
        if t > 0 {
            out.push(format!("{} {}", b.label(), fmt_ns(t as f64)));
        }
    }
    out
}

fn launch_bound(f: &Facts) -> Option<Finding> {
    let (idle, dev) = max_claim(f, is_launch_claim);
    let rec = f.per_step_us(idle);
    if f.share_of_step(rec) < LAUNCH_SHARE {
        return None;
    }
    let d = &f.gaps.devices[dev?];
    let l = &f.launch;
    let mut e = Evidence::default();
    // gaps whose dominant cause is host launch/CPU work, under 1 ms: in one pass over the
    // gaps, their count, those of 10-50 µs, the count and time per step and the longest (the
    // last of equal length)
    let (mut host_late, mut mid) = (0usize, 0usize);
    let mut by_step: BTreeMap<usize, (u64, Ns)> = BTreeMap::new();
    let mut longest: Option<&crate::analysis::gaps::Gap> = None;
    for g in &d.gaps {
        if !host_late_gap(f, d, g) {
            continue;
        }
        let band = g.band();
        host_late += 1;
        if matches!(band, Band::From10To20us | Band::From20To50us) {
            mid += 1;
        }
        if let Some(s) = g.step() {
            let x = by_step.entry(s).or_default();
            x.0 += 1;
            x.1 += g.len();
        }
        if longest.is_none_or(|l| g.len() >= l.len()) {
            longest = Some(g);
        }
    }
    e.facts.push(format!(
        "GPU {} idle {} per step in {} gaps under 1 ms that waited for the host ({} of them \
         10-50 µs)",
        d.device,
        fmt_us_sentence(rec),
        count(host_late as u64),
        count(mid as u64)
    ));
    e.facts.push(format!(
        "by gap length: {}",
        band_line(f, d, is_launch_claim).join(", ")
    ));
    let launch_part = claim_outside_replays(f, d, |b, c| b != Band::Over1ms && c == Cause::Launch);
    let cpu_part = claim_outside_replays(f, d, |b, c| {
        b != Band::Over1ms && matches!(c, Cause::Cpu | Cause::Alloc)
    });
    e.facts.push(format!(
        "the launching thread was in runtime calls (launch overhead) for {} and in \
         operators/Python for {} of it",
        fmt_ns(launch_part as f64),
        fmt_ns(cpu_part as f64)
    ));
    if l.kernels > 0 {
        e.facts.push(format!(
            "{} kernels per step; {} ({}) shorter than their launch call (call ≤ 50 µs); \
             launch calls p50 {} / p90 {}",
            count(l.kernels / f.n_steps as u64),
            count(l.short_kernels),
            pct(l.short_kernels as f64 / l.kernels as f64),
            fmt_ns(l.launch_p50 as f64),
            fmt_ns(l.launch_p90 as f64)
        ));
    }
    if l.graph_launches > 0 {
        e.facts.push(format!(
            "{} graph replays already run {} activities without per-kernel launches",
            count(l.graph_launches),
            count(l.graph_kernels)
        ));
    }
    // the densest step as a place to look
    if let Some((&s, &(n, t))) = by_step.iter().max_by_key(|(_, v)| v.1) {
        let st = &f.a.steps.steps[s];
        e.locations.push(f.location(
            "step",
            &format!("{} ({} host-late gaps, {})", st.name, n, fmt_ns(t as f64)),
            st.span.start,
            st.span.len(),
        ));
    }
    if let Some(g) = longest {
        push_gap(f, &mut e, "gap", g);
    }
    metric(&mut e, "gpu_idle_us_per_step", rec);
    metric(&mut e, "host_late_gaps", host_late as f64);
    metric(&mut e, "kernels", l.kernels as f64);
    metric(&mut e, "short_kernels", l.short_kernels as f64);
    metric(&mut e, "launch_p50_us", l.launch_p50 as f64 / 1000.0);
    metric(&mut e, "launch_overhead_us", launch_part as f64 / 1000.0);
    metric(&mut e, "cpu_work_us", cpu_part as f64 / 1000.0);
    let dependent = data_dependent_syncs(f);
    let graph_advice = if dependent > 0 {
        e.facts.push(format!(
            "{} data-dependent syncs per step (`.item()`, `nonzero`, `.cpu()`-style copies) \
             read device results on the host: a CUDA graph cannot capture the step as it is",
            count(dependent / f.n_steps.max(1) as u64)
        ));
        "Before any CUDA graph, remove the data-dependent syncs from the step (keep losses, \
         masks and counts on the device; fixed-size ops instead of `nonzero`/boolean \
         indexing; read values every N steps): a graph cannot capture a region whose host \
         code needs device results. Then `torch.compile(mode=\"reduce-overhead\")` can \
         replay it with one launch."
            .to_string()
    } else if let Some(why) = not_static(&f.a.repetition) {
        e.facts.push(format!(
            "{why}: a CUDA graph replays one fixed sequence of kernels on \
                              fixed shapes, so none is advised"
        ));
        "Fuse instead of graphing: `torch.compile(model, dynamic=False)` with inputs padded \
         to a few bucket sizes (one compiled graph per bucket; the steps' shapes then repeat \
         and `mode=\"reduce-overhead\"` can replay each bucket as a CUDA graph), or \
         `dynamic=True` when the sizes vary too much to bucket."
            .to_string()
    } else {
        "Capture the step in a CUDA graph so one launch replays all its kernels: \
         `torch.compile(model, mode=\"reduce-overhead\")`, or `torch.cuda.CUDAGraph` / \
         `torch.cuda.make_graphed_callables` for static shapes."
            .to_string()
    };
    let advice = vec![
        graph_advice,
        "Fuse kernels so there are fewer to launch: `torch.compile` (Inductor fuses pointwise \
         and reduction chains), fused optimizers (`torch.optim.AdamW(..., fused=True)` or \
         `foreach=True`), `F.scaled_dot_product_attention`."
            .into(),
        "Give each kernel more work: a larger batch (or micro-batch) amortises the per-launch \
         host cost."
            .into(),
        "Cut Python per-op overhead in the loop: avoid per-parameter/per-element Python loops \
         and tiny tensor ops, hoist constant tensors out of the loop."
            .into(),
    ];
    let mut x = Finding {
        id: "launch-bound",
        severity: f.severity(rec),
        title: format!(
            "CPU launch-bound: the GPU waits {} per step for the host between kernels",
            fmt_us_sentence(rec)
        ),
        recoverable_us: rec,
        recoverable_basis: "device idle time in gaps under 1 ms while the launching thread \
                            was issuing work (runtime calls, launch latency) or running \
                            operators/Python, per step; with graphs/fusion the GPU would run \
                            these kernels back to back"
            .into(),
        evidence: e,
        advice,
    };
    not_judged(&mut x, &Unjudged::of(f, false));
    Some(x)
}

/// Adds a gap to the evidence's locations, named `label before <the kernel that ends it>`.
fn push_gap(f: &Facts, e: &mut Evidence, label: &str, g: &Gap) {
    let name = if g.next != NONE {
        format!(
            "{label} before {}",
            short(f.trace.name(f.trace.gpu[g.next as usize].name), 80)
        )
    } else {
        label.to_string()
    };
    e.locations.push(f.location("gap", &name, g.start, g.len()));
}

/// True when device `d`'s gaps with queued work have nothing in the trace to wait on: it is
/// the only device with activity in the window and all its activity there ran on one stream
/// (no other stream to wait for through an event, no peer device). What is left between two
/// kernels already queued back to back is the device's own per-kernel dispatch overhead (or
/// work the trace does not show, such as another process on the GPU).
pub fn dispatch_only(f: &Facts, d: &DeviceGaps) -> bool {
    f.gaps.devices.len() == 1 && d.streams.len() == 1
}

/// `device-side-gaps`: the device idle with its next work already queued ([`Cause::Queued`]),
/// which no host-side rule claims. On a lone device running one stream
/// ([`dispatch_only`]) these are dispatch gaps between kernels queued back to back: per-kernel
/// launch overhead on the device, which fewer, larger kernels or graphs cut. Otherwise the
/// device waited on something (an event on another stream, a peer device) the finding cannot
/// name, and the advice is where to look.
fn device_side_gaps(f: &Facts) -> Option<Finding> {
    let queued = |_: Band, c: Cause| c == Cause::Queued;
    let (idle, dev) = max_claim(f, queued);
    let rec = f.per_step_us(idle);
    if idle <= 0 || f.share_of_step(rec) < QUEUED_SHARE {
        return None;
    }
    let d = &f.gaps.devices[dev?];
    let gaps: Vec<&Gap> = d
        .gaps
        .iter()
        .filter(|g| g.split.get(Cause::Queued) > 0)
        .collect();
    // what each gap lasts beyond the kernel-to-kernel latency no change removes
    let beyond: Ns = gaps
        .iter()
        .map(|g| (g.split.get(Cause::Queued) - DISPATCH_FLOOR).max(0))
        .sum();
    let gain = f.per_step_us(beyond);
    let dispatch = dispatch_only(f, d);
    let mut e = Evidence::default();
    e.facts.push(format!(
        "GPU {} idle {} per step with its next work already queued, in {} gaps ({} on average)",
        d.device,
        fmt_us_sentence(rec),
        count(gaps.len() as u64),
        fmt_ns(idle as f64 / gaps.len().max(1) as f64)
    ));
    if dispatch {
        e.facts.push(format!(
            "all its work in the window ran on one stream (stream {}) of the only active \
             device: \
             no other stream, event or peer device to wait on, so the gaps are the device's \
             per-kernel dispatch overhead between kernels queued back to back (or work the \
             trace does not show, such as another process on the GPU)",
            d.streams[0].stream
        ));
    } else {
        e.facts.push(format!(
            "{} active device(s), {} stream(s) on GPU {}: the device may have waited on an \
             event recorded on another stream, a peer device or a host callback; the trace \
             does not say which",
            count(f.gaps.devices.len() as u64),
            count(d.streams.len() as u64),
            d.device
        ));
    }
    let l = &f.launch;
    if l.kernels > 0 {
        e.facts.push(format!(
            "{} kernels per step launched one by one",
            count(l.kernels / f.n_steps.max(1) as u64)
        ));
    }
    let mut longest = gaps.clone();
    longest.sort_by_key(|g| std::cmp::Reverse(g.split.get(Cause::Queued)));
    for g in longest.iter().take(3) {
        push_gap(f, &mut e, "queued gap", g);
    }
    e.facts.push(format!(
        "{} per step beyond {} a gap (the kernel-to-kernel latency a device keeps even in a \
         graph replay)",
        fmt_us_sentence(gain),
        fmt_ns(DISPATCH_FLOOR as f64)
    ));
    metric(&mut e, "queued_us_per_step", rec);
    metric(&mut e, "queued_gaps", gaps.len() as f64);
    let advice = if dispatch {
        let mut v = vec![
            "Fewer, larger kernels: fuse chains of small ops (`torch.compile`), batch work \
             that runs as many small launches (larger batch, `foreach`/fused optimizers, \
             `F.scaled_dot_product_attention`), so each dispatch gap buys more work."
                .to_string(),
        ];
        if data_dependent_syncs(f) == 0 && not_static(&f.a.repetition).is_none() {
            v.push(
                "A CUDA/HIP graph replays a fixed sequence of kernels with less per-kernel \
                 dispatch work on the device as well as the host: \
                 `torch.compile(mode=\"reduce-overhead\")` or `torch.cuda.CUDAGraph`."
                    .to_string(),
            );
        }
        v
    } else {
        vec![
            "Find what the device waited on: open the longest gaps above in Perfetto and look \
             for cross-stream event waits (`cudaStreamWaitEvent`), work on a peer device, or \
             host callbacks; reduce cross-stream dependencies or overlap them with \
             independent work."
                .to_string(),
            "If the capture check reports a host/device clock offset, queued time may be host \
             time: fix the capture before acting on it."
                .to_string(),
        ]
    };
    let mut x = Finding {
        id: "device-side-gaps",
        severity: f.severity(gain),
        title: if dispatch {
            format!(
                "Device-side dispatch gaps: the GPU idles {} per step between kernels already \
                 queued on one stream",
                fmt_us_sentence(rec)
            )
        } else {
            format!(
                "Device-side stalls: the GPU idles {} per step with its next work already \
                 queued",
                fmt_us_sentence(rec)
            )
        },
        recoverable_us: gain,
        recoverable_basis: if dispatch {
            "device idle time between work already queued on the device's one stream, beyond \
             1 µs a gap (the kernel-to-kernel latency that stays), per step: fusion or graphs \
             remove the rest of the per-kernel dispatch gaps (an upper bound)"
                .into()
        } else {
            "device idle time with the next work already queued, beyond 1 µs a gap (the \
             kernel-to-kernel latency that stays), per step: an upper bound, what the device \
             waited on is not in the trace"
                .into()
        },
        evidence: e,
        advice,
    };
    not_judged(&mut x, &Unjudged::of(f, true));
    Some(x)
}

/// Why the window's steps are not static (their kernels or recorded shapes change from
/// step to step, [`crate::window::repeats`]); `None` when they repeat or fewer than two steps
/// were compared.
fn not_static(r: &crate::window::repeats::Repetition) -> Option<String> {
    if let Some((step, n, first, m)) = &r.kernels_differ {
        return Some(format!(
            "the steps launch different kernels: {step} ({} kernels) does not repeat {first} \
             ({} kernels)",
            count(*n),
            count(*m)
        ));
    }
    r.shapes_differ.as_ref().map(|(step, first)| {
        format!(
            "the recorded input shapes change from step to step: {step}'s differ from {first}'s"
        )
    })
}

/// The host span on `thread` that covers most of `iv` (operators, runtime calls, Python
/// frames, not step annotations), the most specific one, for naming what the host did during
/// a gap; `None` when no span covers more than half of it.
pub fn host_span_in(f: &Facts, thread: u32, iv: Interval) -> Option<u32> {
    if thread == NONE {
        return None;
    }
    let cpu = &f.trace.cpu;
    let hi = cpu.partition_point(|e| e.start < iv.end);
    let mut best: Option<(Ns, u32)> = None;
    // spans starting before the gap can cover it: look back a bounded number of events
    let lo = hi.saturating_sub(20_000);
    for (i, e) in cpu[lo..hi].iter().enumerate() {
        if e.thread != thread || e.kind == CpuKind::UserAnnotation {
            continue;
        }
        let ov = e.interval().overlap(&iv);
        if ov <= 0 || f.trace.name(e.name).starts_with("ProfilerStep#") {
            continue;
        }
        // a span names the gap only when it covers most of it (a sub-millisecond call in a
        // second of untraced time does not); the most specific such span wins
        if 2 * ov <= iv.len() {
            continue;
        }
        let score = ov * 4 - (e.dur - ov).min(ov * 3);
        if best.is_none_or_lt(score) {
            best = Some((score, (lo + i) as u32));
        }
    }
    best.map(|b| b.1)
}

trait BestScore {
    fn is_none_or_lt(&self, score: Ns) -> bool;
}

impl BestScore for Option<(Ns, u32)> {
    fn is_none_or_lt(&self, score: Ns) -> bool {
        match self {
            None => true,
            Some((s, _)) => *s < score,
        }
    }
}

fn gpu_idle_gaps(f: &Facts) -> Option<Finding> {
    let primary = f.gaps.primary()?;
    if f.window_ns == 0 || (primary.idle as f64) < IDLE_SHARE * f.window_ns as f64 {
        return None;
    }
    let (claimed, _) = max_claim(f, is_idle_claim);
    let rec = f.per_step_us(claimed);
    let mut e = Evidence::default();
    for d in &f.gaps.devices {
        e.facts.push(format!(
            "GPU {}: idle {} of {} ({}) in {} gaps (union of all streams)",
            d.device,
            fmt_ns(d.idle as f64),
            fmt_ns(f.window_ns as f64),
            pct(d.idle as f64 / f.window_ns as f64),
            count(d.gaps.len() as u64)
        ));
        let bands: Vec<String> = BANDS
            .iter()
            .zip(d.bands.iter())
            .filter(|(_, s)| s.count > 0)
            .map(|(b, s)| {
                format!(
                    "{} {}× {}",
                    b.label(),
                    count(s.count),
                    fmt_ns(s.total as f64)
                )
            })
            .collect();
        e.facts
            .push(format!("  gaps by length: {}", bands.join(", ")));
        let owner = |c: Cause| match c {
            Cause::Queued => "→ device-side-gaps: device-side, not recoverable from the host",
            Cause::Sync => "→ host-sync",
            Cause::Compile => "→ compile-in-window",
            Cause::Dataloader => "→ dataloader-stall",
            Cause::Launch | Cause::Cpu | Cause::Alloc => {
                "→ launch-bound in gaps under 1 ms, this finding from 1 ms"
            }
            Cause::Untraced => "→ this finding",
            Cause::HostCompute => "→ host-compute",
            Cause::NoWork => "no work left to run: no host fix recovers it",
            Cause::Startup => "→ startup",
            Cause::HostComm => "→ host-communication",
        };
        let causes: Vec<String> = CAUSES
            .iter()
            .filter(|c| d.by_cause[**c as usize] > 0)
            .map(|c| {
                format!(
                    "{} {} ({})",
                    c.label(),
                    fmt_ns(d.by_cause[*c as usize] as f64),
                    owner(*c)
                )
            })
            .collect();
        e.facts
            .push(format!("  what the host was doing: {}", causes.join("; ")));
        if let Some(os) = untraced_os_fact(f, d) {
            e.facts.push(format!("  {os}"));
        }
        if let Some(os) = d.untraced_os.as_ref().filter(|o| o.scheduled > 0) {
            // for scripts: the untraced idle by what the launching thread did
            let (on, off) = (os.scheduled - os.off_cpu, os.off_cpu);
            metric(
                &mut e,
                &format!("gpu{}_untraced_on_cpu_us", d.device),
                on as f64 / 1000.0,
            );
            metric(
                &mut e,
                &format!("gpu{}_untraced_off_cpu_us", d.device),
                off as f64 / 1000.0,
            );
        }
        let streams: Vec<String> = d
            .streams
            .iter()
            .take(6)
            .map(|s| {
                let long: u64 = s.bands[2..].iter().map(|b| b.count).sum();
                format!("stream {}: {} gaps ≥ 20 µs", s.stream, count(long))
            })
            .collect();
        if d.streams.len() > 1 {
            e.facts.push(format!(
                "  per stream (detail; a stream's gap may be covered by another stream): {}",
                streams.join(", ")
            ));
        }
        for st in d.streams.iter().take(8) {
            for (b, bs) in BANDS.iter().zip(st.bands.iter()) {
                metric(
                    &mut e,
                    &format!("gpu{}_stream{}_gaps_{}", d.device, st.stream, band_key(*b)),
                    bs.count as f64,
                );
            }
        }
        metric(
            &mut e,
            &format!("gpu{}_idle_us", d.device),
            d.idle as f64 / 1000.0,
        );
        for (b, s) in BANDS.iter().zip(d.bands.iter()) {
            metric(
                &mut e,
                &format!("gpu{}_gaps_{}", d.device, band_key(*b)),
                s.count as f64,
            );
        }
    }
    // the longest gaps of the primary device, with what the host did
    // (a device's gaps are disjoint: starts break every tie, so the top five are unique)
    let longer = |a: &&crate::analysis::gaps::Gap, b: &&crate::analysis::gaps::Gap| {
        b.len().cmp(&a.len()).then(a.start.cmp(&b.start))
    };
    // the top five in one pass, no list of every gap
    let mut longest: Vec<&crate::analysis::gaps::Gap> = Vec::with_capacity(6);
    for g in &primary.gaps {
        if longest.len() == 5 && longer(&g, &longest[4]).is_ge() {
            continue;
        }
        let at = longest.partition_point(|x| longer(x, &g).is_lt());
        longest.insert(at, g);
        longest.truncate(5);
    }
    for g in &longest {
        let iv = Interval::new(g.start, g.end);
        let host = host_span_in(f, g.thread, iv)
            .map(|i| f.trace.name(f.trace.cpu[i as usize].name).to_string());
        let name = match (host, g.cause) {
            (Some(h), _) => format!("{}: host in {}", g.cause.label(), short(&h, 80)),
            (None, Cause::Untraced) => match os_in_gap(f, g.thread, iv) {
                Some(os) => format!("{}: {os}", g.cause.label()),
                None => g.cause.label().to_string(),
            },
            (None, _) => g.cause.label().to_string(),
        };
        e.locations.push(f.location("gap", &name, g.start, g.len()));
    }
    metric(&mut e, "claimed_us_per_step", rec);
    let q = primary.by_cause[Cause::Queued as usize];
    let mut advice = Vec::new();
    let cpu_long = claim(primary, |b, c| {
        b == Band::Over1ms && matches!(c, Cause::Cpu | Cause::Launch | Cause::Alloc)
    });
    let untraced = primary.by_cause[Cause::Untraced as usize];
    if primary.by_cause[Cause::Alloc as usize] > 0 {
        advice.push(
            "Gaps while the host allocates or frees device memory (`cudaMalloc`/`cudaFree`, \
             `hipMalloc`): the caching allocator is growing or releasing memory inside the \
             loop — avoid `torch.cuda.empty_cache()` there, reuse buffers, warm up with the \
             largest shapes first, or set `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`."
                .to_string(),
        );
    }
    if cpu_long > 0 {
        advice.push(
            "Long gaps with the host busy: move that work (logging, metric computation, \
             checkpointing, Python preprocessing, allocations) off the critical path — do it \
             while the GPU still has queued work, in a background thread, or every N steps."
                .to_string(),
        );
    }
    if untraced > 0 {
        advice.push(untraced_advice(f, primary));
    }
    if q > 0 {
        advice.push(
            "Gaps where the next work was already queued are device-side: waits on events or \
             other streams (`cudaStreamWaitEvent`), inter-kernel latency; reduce \
             cross-stream dependencies and the number of kernels."
                .to_string(),
        );
    }
    advice.push(
        "Open the largest gaps listed above in Perfetto (ui.perfetto.dev) at the given \
         timestamps to see the host activity around them."
            .into(),
    );
    let mut x = Finding {
        id: "gpu-idle-gaps",
        severity: f.severity(rec),
        title: format!(
            "GPU idle {} of the window in {} gaps",
            pct(primary.idle as f64 / f.window_ns as f64),
            count(primary.gaps.len() as u64)
        ),
        recoverable_us: rec,
        recoverable_basis: "device idle time not claimed by another finding: host work in gaps \
                            of 1 ms and more, and gaps with nothing traced on the host, per \
                            step (largest device)"
            .into(),
        evidence: e,
        advice,
    };
    not_judged(&mut x, &Unjudged::of(f, true));
    Some(x)
}

/// What the OS recorded of the launching thread while the device `d` idled with nothing
/// traced (Nsight Systems' context switches, OS runtime calls and CPU samples,
/// [`crate::analysis::gaps::UntracedOs`]), as one evidence line; `None` without such records.
fn untraced_os_fact(f: &Facts, d: &DeviceGaps) -> Option<String> {
    let os = d.untraced_os.as_ref()?;
    let untraced = d.by_cause[Cause::Untraced as usize];
    let mut parts = Vec::new();
    if os.scheduled > 0 {
        let on = os.scheduled - os.off_cpu;
        parts.push(format!(
            "on a CPU {} ({}), off a CPU (blocked or preempted) {} ({})",
            fmt_ns(on as f64),
            pct(on as f64 / os.scheduled as f64),
            fmt_ns(os.off_cpu as f64),
            pct(os.off_cpu as f64 / os.scheduled as f64)
        ));
        if os.scheduled < untraced {
            parts.push(format!(
                "{} of it without the thread's scheduling recorded",
                fmt_ns((untraced - os.scheduled) as f64)
            ));
        }
    }
    if !os.calls.is_empty() {
        let calls: Vec<String> = (os.calls.iter().take(4))
            .map(|(n, ns)| format!("`{}` {}", short(f.trace.name(*n), 40), fmt_ns(*ns as f64)))
            .collect();
        parts.push(format!("in OS calls: {}", calls.join(", ")));
    }
    let sampled: u64 = os.samples.iter().map(|s| s.1).sum();
    if sampled >= MIN_SAMPLES {
        let top: Vec<String> = (os.samples.iter().take(4))
            .map(|(n, k)| {
                format!(
                    "`{}` {}",
                    short(f.trace.name(*n), 40),
                    pct(*k as f64 / sampled as f64)
                )
            })
            .collect();
        parts.push(format!(
            "{} CPU samples, in {}",
            count(sampled),
            top.join(", ")
        ));
    }
    (!parts.is_empty()).then(|| {
        format!(
            "nothing traced, by the OS's record of the launching thread: {}",
            parts.join("; ")
        )
    })
}

/// What the launching thread did in the untraced idle of the device with the most of it, in
/// a few words for the verdict ("the launching thread ran on a CPU for 100.0% of it, sampled
/// mostly in `main`"); `None` without the OS's record or when it says little.
pub fn untraced_nature(f: &Facts) -> Option<String> {
    let (_, dev) = max_claim(f, |_, c| c == Cause::Untraced);
    let d = &f.gaps.devices[dev?];
    let os = d.untraced_os.as_ref()?;
    let untraced = d.by_cause[Cause::Untraced as usize];
    let call = os
        .calls
        .first()
        .filter(|c| 2 * c.1 > untraced)
        .map(|c| format!(", mostly in `{}`", short(f.trace.name(c.0), 40)));
    let sampled: u64 = os.samples.iter().map(|s| s.1).sum();
    let sample = os
        .samples
        .first()
        .filter(|s| sampled >= MIN_SAMPLES && 2 * s.1 > sampled)
        .map(|s| format!(", sampled mostly in `{}`", short(f.trace.name(s.0), 40)));
    // the scheduling must cover most of the untraced time to say either
    let Some(off) = off_cpu_share(d) else {
        return call
            .map(|c| format!("the launching thread was{}", c.trim_start_matches(',')))
            .or_else(|| {
                sample.map(|s| format!("the launching thread was{}", s.trim_start_matches(',')))
            });
    };
    Some(if off > 0.5 {
        format!(
            "the launching thread was off a CPU (blocked or preempted) for {} of it{}",
            pct(off),
            call.unwrap_or_default()
        )
    } else {
        format!(
            "the launching thread ran on a CPU for {} of it (untraced host work){}",
            pct(1.0 - off),
            sample.or(call).unwrap_or_default()
        )
    })
}

/// The share of the untraced idle of `d` its launching thread spent off a CPU, when the
/// thread's scheduling covers most of that idle (else too little is known to say either).
fn off_cpu_share(d: &DeviceGaps) -> Option<f64> {
    let os = d.untraced_os.as_ref()?;
    (2 * os.scheduled > d.by_cause[Cause::Untraced as usize])
        .then(|| os.off_cpu as f64 / os.scheduled as f64)
}

/// What to do about idle with nothing traced on the host, by what the trace can say of it.
fn untraced_advice(f: &Facts, d: &DeviceGaps) -> String {
    let nsys = f.trace.source.format == crate::model::SourceFormat::NsysSqlite;
    match off_cpu_share(d) {
        Some(off) if off > 0.5 => {
            "Gaps with nothing traced while the launching thread was off a CPU: it was blocked \
             (I/O, a lock or condition, another thread or process) or preempted; the OS calls \
             above say where it waited — make the wait asynchronous or move it off the \
             launching thread, and check the machine is not oversubscribed."
                .to_string()
        }
        Some(_) => "Gaps with nothing traced while the launching thread ran on a CPU: host work \
                    no range marks (the CPU samples above name its functions) — wrap it in NVTX \
                    ranges to see it on the timeline, then move it off the launching thread or \
                    overlap it with queued GPU work."
            .to_string(),
        None if nsys => "Gaps with nothing traced on the host: add NVTX ranges \
                         (`torch.cuda.nvtx.range`, `emit_nvtx`), or capture CPU samples, \
                         context switches and OS calls (`nsys profile --sample=process-tree \
                         --cpuctxsw=process-tree --trace=cuda,nvtx,osrt`) to see what the \
                         thread ran or waited on."
            .to_string(),
        None => "Gaps with nothing traced on the host: add `record_function` ranges or \
                 `with_stack=True` to see what runs; look for I/O, `time.sleep`, GIL \
                 contention with other threads, or work in other processes."
            .to_string(),
    }
}

/// What the OS recorded of `thread` in the gap `iv`, in a few words for its label ("thread
/// off CPU 82.8% in `write`", "thread on CPU 100.0%, samples mostly `main`"); `None` without
/// a record.
fn os_in_gap(f: &Facts, thread: u32, iv: Interval) -> Option<String> {
    let os = &f.trace.os;
    if os.is_empty() || thread == NONE {
        return None;
    }
    let mut out = String::new();
    if let Some(off) = os.off_cpu(thread) {
        let off = off.covered_within(iv) as f64 / iv.len().max(1) as f64;
        out = if off > 0.5 {
            format!("thread off CPU {}", pct(off))
        } else {
            format!("thread on CPU {}", pct(1.0 - off))
        };
    }
    // an OS call of the thread covering most of the gap
    if let Some(c) = os
        .calls_in(thread, iv)
        .iter()
        .find(|c| 2 * c.interval().overlap(&iv) > iv.len())
    {
        let sep = if out.is_empty() { "" } else { " " };
        out.push_str(&format!("{sep}in `{}`", short(f.trace.name(c.name), 30)));
    }
    let mut by: BTreeMap<crate::model::NameId, u64> = BTreeMap::new();
    let mut n = 0;
    for s in os.samples_in(thread, iv) {
        *by.entry(s.function).or_default() += 1;
        n += 1;
    }
    let top = by
        .iter()
        .max_by_key(|(name, k)| (**k, std::cmp::Reverse(**name)));
    if let (Some((name, k)), true) = (top, n >= MIN_SAMPLES) {
        if 2 * k > n {
            let sep = if out.is_empty() { "" } else { ", " };
            out.push_str(&format!(
                "{sep}samples mostly `{}`",
                short(f.trace.name(*name), 30)
            ));
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The host compute the device waited for longest, on the device with the most
/// [`Cause::HostCompute`] idle: the outermost host-compute span that ran longest in its gap
/// with the most host compute ([`DeviceGaps::compute_site`]); the name only when that span
/// covers most of the gap's host-compute time. ((name, start, duration) of the span, else
/// the gap's start and duration.)
pub fn compute_site(f: &Facts) -> Option<(Option<String>, Ns, Ns)> {
    let (_, dev) = max_claim(f, |_, c| c == Cause::HostCompute);
    let d = &f.gaps.devices[dev?];
    let g = d
        .gaps
        .iter()
        .max_by_key(|g| (g.split.get(Cause::HostCompute), -g.start))?;
    let compute = g.split.get(Cause::HostCompute);
    if compute == 0 {
        return None;
    }
    Some(match d.compute_site {
        Some((i, ov)) if 2 * ov > compute => {
            let e = &f.trace.cpu[i as usize];
            (Some(f.trace.name(e.name).to_string()), e.start, e.dur)
        }
        _ => (None, g.start, g.len()),
    })
}

/// The idle one cause holds, µs per step on the device where it holds the most, from
/// [`HOST_COMPUTE_SHARE`] of the step, with the evidence's first facts: the idle while the
/// launching thread `did` so, and its split by gap length. `None` below the share.
fn one_cause(f: &Facts, cause: Cause, did: &str) -> Option<(f64, Evidence)> {
    let (idle, dev) = max_claim(f, |_, c| c == cause);
    let rec = f.per_step_us(idle);
    if f.share_of_step(rec) < HOST_COMPUTE_SHARE {
        return None;
    }
    let d = &f.gaps.devices[dev?];
    let mut e = Evidence::default();
    e.facts.push(format!(
        "GPU {} idle {} per step while the launching thread {did}",
        d.device,
        fmt_us_sentence(rec)
    ));
    e.facts.push(format!(
        "by gap length: {}",
        band_line(f, d, |_, c| c == cause).join(", ")
    ));
    Some((rec, e))
}

/// `host-compute`: the device idle while the launching thread ran host work that launches no
/// device work (operators on CPU tensors, Python frames without launches: a Python loop,
/// NumPy, preprocessing, logging), whatever the gap length.
fn host_compute(f: &Facts) -> Option<Finding> {
    let (rec, mut e) = one_cause(
        f,
        Cause::HostCompute,
        "ran host work that launched nothing on the GPU (operators on CPU tensors, Python \
         without GPU work)",
    )?;
    let site = compute_site(f);
    if let Some((name, start, dur)) = &site {
        let what = name
            .as_deref()
            .unwrap_or("host compute (no single span covers it)");
        e.locations.push(f.location("host", what, *start, *dur));
    }
    metric(&mut e, "gpu_idle_us_per_step", rec);
    let advice = vec![
        "Move the computation to the GPU: keep the tensors on the device (`torch` ops instead \
         of NumPy or Python loops over elements) so the host only launches work."
            .to_string(),
        "Or take it off the critical path: launch the next GPU work first and do this host \
         work while it runs, in a background thread or DataLoader workers, or only every N \
         steps (logging, metrics, checkpoints)."
            .into(),
        "Vectorise Python loops over tensor elements (one tensor op instead of one op per \
         element)."
            .into(),
    ];
    let title = match site.as_ref().and_then(|s| s.0.as_deref()) {
        Some(n) => format!(
            "Host CPU work the GPU waits for: {} per step, mostly in {}",
            fmt_us_sentence(rec),
            short(n, 80)
        ),
        None => format!(
            "Host CPU work the GPU waits for: {} per step in work that launches nothing on it",
            fmt_us_sentence(rec)
        ),
    };
    Some(Finding {
        id: "host-compute",
        severity: f.severity(rec),
        title,
        recoverable_us: rec,
        recoverable_basis: "device idle time while the launching thread ran operators or \
                            Python frames that launch no device work (outside any operator \
                            that does), per step: on the device or off the critical path it \
                            no longer stalls the GPU"
            .into(),
        evidence: e,
        advice,
    })
}

/// `host-communication`: the device idles while the launching thread waits in a host-side
/// collective or MPI call ([`Cause::HostComm`]): communication on the host's critical path,
/// not overlapped with device work. Shown from [`HOST_COMPUTE_SHARE`] of the step.
fn host_communication(f: &Facts) -> Option<Finding> {
    let (rec, mut e) = one_cause(
        f,
        Cause::HostComm,
        "waited in host-side collectives or MPI calls (for the other ranks, or for the \
         transfer)",
    )?;
    let calls = super::transfer::host_run_collectives(f);
    if !calls.is_empty() {
        let list: Vec<String> = calls
            .iter()
            .take(4)
            .map(|(n, k, t)| {
                format!(
                    "`{}` {}× {} in the window",
                    short(n, 60),
                    count(*k),
                    fmt_ns(*t as f64)
                )
            })
            .collect();
        e.facts
            .push(format!("host communication calls: {}", list.join(", ")));
    }
    metric(&mut e, "gpu_idle_us_per_step", rec);
    let advice = vec![
        "Overlap the communication with device work: launch the next GPU work before waiting, \
         and use non-blocking calls (`MPI_Isend`/`MPI_Irecv` with a later wait, \
         `dist.all_reduce(..., async_op=True)` with `work.wait()` where the result is needed)."
            .to_string(),
        "Move it to the device: NCCL collectives run on a GPU stream and overlap compute; \
         GPU-aware MPI sends device buffers without staging them through the host."
            .into(),
        "If one rank is late, the others wait here: compare the ranks (`stallscope analyze DIR` \
         on a folder of their traces) before tuning the communication itself."
            .into(),
    ];
    let title = match calls.first() {
        Some((n, _, _)) => format!(
            "Host communication the GPU waits for: {} per step, mostly in `{}`",
            fmt_us_sentence(rec),
            short(n, 60)
        ),
        None => format!(
            "Host communication the GPU waits for: {} per step in host-side collectives",
            fmt_us_sentence(rec)
        ),
    };
    Some(Finding {
        id: "host-communication",
        severity: f.severity(rec),
        title,
        recoverable_us: rec,
        recoverable_basis: "device idle time while the launching thread waited in host-side \
            collectives or MPI calls, per step: overlapped with device work it no longer stalls \
            the GPU"
            .into(),
        evidence: e,
        advice,
    })
}

fn band_key(b: Band) -> &'static str {
    match b {
        Band::Under10us => "lt_10us",
        Band::From10To20us => "10_20us",
        Band::From20To50us => "20_50us",
        Band::From50usTo1ms => "50us_1ms",
        Band::Over1ms => "ge_1ms",
    }
}

fn queue_full(f: &Facts) -> Option<Finding> {
    let l = &f.launch;
    let depth = l.max_depth();
    if depth < QUEUE_FULL_DEPTH && l.command_buffer_full == 0 {
        return None;
    }
    let mut e = Evidence::default();
    for q in l.queues.iter().filter(|q| q.max_depth >= QUEUE_FULL_DEPTH) {
        e.facts.push(format!(
            "GPU {} stream {}: up to {} launches pending (CUDA blocks the host at about \
             1,024); full for {} of the window",
            q.device,
            q.stream,
            count(q.max_depth as u64),
            fmt_ns(q.full_time as f64)
        ));
        e.locations.push(f.location(
            "queue",
            &format!("stream {} at {} pending launches", q.stream, q.max_depth),
            q.max_depth_at,
            0,
        ));
    }
    if l.queue_full_launches > 0 {
        e.facts.push(format!(
            "{} launch calls made on a full queue; the host waited {} per step in them beyond \
             a normal launch ({})",
            count(l.queue_full_launches),
            fmt_us_sentence(f.per_step_us(l.blocked_launch_time)),
            fmt_ns(l.launch_p50 as f64)
        ));
    }
    if let Some((i, d)) = l.longest_launch {
        let c = &f.trace.cpu[i as usize];
        e.locations
            .push(f.location("launch", f.trace.name(c.name), c.start, d));
    }
    if l.command_buffer_full > 0 {
        e.facts.push(format!(
            "{} `Command Buffer Full` events: the host waited {} for room to enqueue work",
            count(l.command_buffer_full),
            fmt_ns(l.command_buffer_full_time as f64)
        ));
    }
    if let Some(p) = f.gaps.primary() {
        e.facts.push(format!(
            "GPU {} busy {} of the window",
            p.device,
            pct(p.busy as f64 / f.window_ns.max(1) as f64)
        ));
    }
    e.facts.push(
        "long `cudaLaunchKernel` calls and `Command Buffer Full` here are the host waiting for \
         the device, not CPU overhead: the GPU is the bottleneck"
            .into(),
    );
    metric(&mut e, "max_queue_depth", depth as f64);
    metric(&mut e, "queue_full_launches", l.queue_full_launches as f64);
    metric(
        &mut e,
        "blocked_us_per_step",
        f.per_step_us(l.blocked.total()),
    );
    metric(&mut e, "command_buffer_full", l.command_buffer_full as f64);
    let advice = vec![
        "Treat this trace as GPU-bound: speed up the device work (see the kernel findings: \
         fallback kernels, FP32 GEMMs, fusion, precision) — CUDA graphs or fewer Python ops \
         will not shorten a step whose host already waits for the GPU."
            .to_string(),
        "The host has slack: it can prepare the next batches (data loading, preprocessing) \
         while it would otherwise block in launches."
            .into(),
        "Read host-side operator times in this trace with care: they include the time spent \
         blocked on the full queue."
            .into(),
    ];
    Some(Finding {
        id: "queue-full",
        severity: Severity::Info,
        title: format!(
            "Launch queue full (up to {} pending): the host waits for the GPU — the GPU is the \
             bottleneck",
            count(depth as u64)
        ),
        recoverable_us: 0.0,
        recoverable_basis: "none: the host's blocked time is a symptom of a saturated device; \
                            the gain comes from the device-side findings"
            .into(),
        evidence: e,
        advice,
    })
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{find, run};
    use crate::model::build::TraceBuilder;
    use crate::model::{CpuKind, GpuKind};

    /// A step of `n` small kernels, each launched by an op of `op_us` µs whose launch call
    /// takes `launch_us`; kernels take `k_us`.
    fn chatty(b: &mut TraceBuilder, t0: f64, n: usize, op_us: f64, k_us: f64) -> f64 {
        let mut t = t0;
        for _ in 0..n {
            let ext = b.op("aten::add", t, op_us);
            let c = b.runtime("cudaLaunchKernel", ext, t + op_us - 6.0, 5.0);
            b.gpu(
                GpuKind::Kernel,
                "vectorized_elementwise_kernel<add>",
                0,
                7,
                t + op_us,
                k_us,
                c,
            );
            t += op_us + 1.0;
        }
        t
    }

    #[test]
    fn device_side_gaps_are_dispatch_overhead_only_with_nothing_to_wait_on() {
        // 3 steps: the host launches 10 kernels of 100 µs in 30 µs and waits in one sync;
        // the device runs them 50 µs apart, all already queued
        let build = |second_stream: bool| {
            let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
            for s in 0..3 {
                let t0 = 1500.0 * s as f64;
                b.annotation(&format!("ProfilerStep#{s}"), t0, 1500.0);
                for k in 0..10 {
                    let host = t0 + 3.0 * k as f64;
                    let ext = b.op("aten::mm", host, 2.5);
                    let c = b.runtime("cudaLaunchKernel", ext, host + 0.5, 1.5);
                    let stream = if second_stream && k % 2 == 1 { 8 } else { 7 };
                    let at = t0 + 40.0 + 150.0 * k as f64;
                    b.gpu(GpuKind::Kernel, "gemm_kernel", 0, stream, at, 100.0, c);
                }
                b.runtime("cudaDeviceSynchronize", 0, t0 + 32.0, 1460.0);
            }
            b.build()
        };
        let d = run(&build(false));
        let g = find(&d, "device-side-gaps").expect("device-side-gaps");
        assert!(
            g.title.starts_with("Device-side dispatch gaps"),
            "{}",
            g.title
        );
        // per step: 9 gaps of 50 µs between queued kernels, and 18 µs before the first (its
        // launch returned at 2 µs, it started at 40 µs: 20 µs of launch latency), each less
        // the 1 µs a device keeps between kernels
        assert_eq!(g.evidence.metrics["queued_us_per_step"], 468.0);
        assert!(
            (g.recoverable_us - 458.0).abs() < 0.01,
            "{}",
            g.recoverable_us
        );
        assert_eq!(g.severity, super::Severity::High);
        assert_eq!(d.findings[0].id, "device-side-gaps");
        assert!(
            d.verdict.starts_with("Launch-bound (device side)"),
            "{}",
            d.verdict
        );
        assert_eq!(d.verdict_class.id(), "launch_bound");
        // a second stream: the device may have waited on it, the trace does not say
        let d = run(&build(true));
        let g = find(&d, "device-side-gaps").expect("device-side-gaps");
        assert!(g.title.starts_with("Device-side stalls"), "{}", g.title);
        assert!(d.verdict.starts_with("Device-side stalls"), "{}", d.verdict);
        assert_eq!(d.verdict_class.id(), "device_stalls");
    }

    #[test]
    fn launch_bound_fires_on_chatty_host_and_not_on_busy_gpu() {
        // 10 steps of 200 kernels of 3 µs, each op 25 µs on the host: GPU idle ~88%
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        let mut t = 0.0;
        for s in 0..10 {
            let start = t;
            t = chatty(&mut b, t, 200, 25.0, 3.0);
            b.annotation(&format!("ProfilerStep#{s}"), start, t - start + 5.0);
            t += 5.0;
        }
        let d = run(&b.build());
        let lb = find(&d, "launch-bound").expect("launch-bound");
        assert!(lb.recoverable_us > 4000.0, "{}", lb.recoverable_us);
        assert_eq!(lb.severity, super::Severity::High);
        assert!(lb.evidence.metrics["short_kernels"] >= 1999.0);
        assert_eq!(d.findings[0].id, "launch-bound");
        assert!(d.verdict.starts_with("CPU launch-bound"), "{}", d.verdict);

        // same kernels, but 30 µs each and launched ahead: the GPU is busy
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        let mut host = 0.0;
        let mut gpu = 100.0;
        for s in 0..5 {
            let start = host;
            for _ in 0..100 {
                let ext = b.op("aten::mm", host, 4.0);
                let c = b.runtime("cudaLaunchKernel", ext, host + 1.0, 2.0);
                b.gpu(
                    GpuKind::Kernel,
                    "sm80_xmma_gemm_bf16bf16_bf16f32",
                    0,
                    7,
                    gpu,
                    30.0,
                    c,
                );
                host += 5.0;
                gpu += 30.5;
            }
            b.annotation(&format!("ProfilerStep#{s}"), start, host - start);
        }
        let d = run(&b.build());
        assert!(find(&d, "launch-bound").is_none(), "{:?}", d.findings);
        assert!(d.verdict.starts_with("GPU-bound"), "{}", d.verdict);
        assert!(
            d.findings
                .iter()
                .all(|f| f.severity == super::Severity::Info),
            "{:?}",
            d.findings
                .iter()
                .map(|f| (f.id, f.severity))
                .collect::<Vec<_>>()
        );
    }

    /// One cold pass (no step marks, every launch inside one top-level call: no steady
    /// state) gives its launch and idle figures as what the pass shows, not as a judged gain:
    /// `launch-bound` recovers nothing judged (info, ranked last) and keeps the pass's figure
    /// in its evidence; the same kernels over ten steps are judged (above).
    #[test]
    fn one_cold_pass_caps_launch_and_idle_figures() {
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        let end = chatty(&mut b, 10.0, 400, 25.0, 3.0);
        b.op("forward", 0.0, end + 10.0);
        let d = run(&b.build());
        assert!(d.verdict.starts_with("No steady state"), "{}", d.verdict);
        let lb = find(&d, "launch-bound").expect("launch-bound");
        assert_eq!(lb.severity, super::Severity::Info);
        assert_eq!(lb.recoverable_us, 0.0);
        assert!(lb.evidence.metrics["one_pass_us_per_step"] > 4000.0);
        assert!(
            lb.evidence
                .facts
                .iter()
                .any(|x| x.contains("from one cold pass")),
            "{:?}",
            lb.evidence.facts
        );
        assert!(lb.recoverable_basis.starts_with("not judged"));
        if let Some(g) = find(&d, "gpu-idle-gaps") {
            assert_eq!((g.severity, g.recoverable_us), (super::Severity::Info, 0.0));
        }
        assert!(d
            .findings
            .iter()
            .all(|x| x.severity == super::Severity::Info));
    }

    /// Steps whose device waits while the launching thread is in a host-side collective
    /// (gloo or MPI on the host): `host-communication` with its calls, and a
    /// communication-bound verdict on the host side; never host compute.
    #[test]
    fn host_collectives_the_gpu_waits_for() {
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        let mut t = 0.0;
        for i in 0..6 {
            b.annotation(&format!("ProfilerStep#{i}"), t, 6_000.0);
            b.op_with_kernel("aten::mm", "gemm", t + 10.0, 5.0, t + 20.0, 900.0);
            b.annotation("gloo:all_reduce", t + 30.0, 4_500.0);
            b.op_with_kernel(
                "aten::add",
                "add_kernel",
                t + 4_600.0,
                5.0,
                t + 4_610.0,
                1_300.0,
            );
            t += 6_000.0;
        }
        let d = run(&b.build());
        let h = find(&d, "host-communication").expect("host-communication");
        assert!(h.title.contains("`gloo:all_reduce`"), "{}", h.title);
        assert!(h.recoverable_us > 3_500.0, "{}", h.recoverable_us);
        assert!(
            d.verdict
                .starts_with("Communication-bound (host side): GPU idle"),
            "{}",
            d.verdict
        );
        assert!(
            d.verdict.contains("mostly `gloo:all_reduce`"),
            "{}",
            d.verdict
        );
        assert!(find(&d, "host-compute").is_none());
    }

    /// With the OS's record of the launching thread, GPU idle with nothing traced is told
    /// apart: a thread blocked in `poll` is no CPU work (verdict, advice, gap labels).
    #[test]
    fn untraced_idle_with_the_thread_blocked() {
        use crate::model::os::{OsActivity, OsCall};
        use crate::model::{Interval, IntervalSet, Ns};
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        let mut t = 0.0;
        for i in 0..6 {
            b.annotation(&format!("ProfilerStep#{i}"), t, 6_000.0);
            b.op_with_kernel("aten::mm", "gemm", t + 10.0, 5.0, t + 20.0, 900.0);
            b.op_with_kernel(
                "aten::add",
                "add_kernel",
                t + 4_600.0,
                5.0,
                t + 4_610.0,
                1_300.0,
            );
            t += 6_000.0;
        }
        let thread = b.thread(1);
        let mut tr = b.build();
        let before = run(&tr);
        assert!(
            before.verdict.contains("with nothing traced on the host")
                && !before.verdict.contains("launching thread"),
            "{}",
            before.verdict
        );
        let poll = tr.names.intern("poll");
        let ms = |v: f64| (v * 1000.0) as Ns;
        tr.os = OsActivity {
            off_cpu: vec![Some(IntervalSet::from_intervals((0..6).map(|i| {
                Interval::new(
                    ms(i as f64 * 6_000.0 + 1_000.0),
                    ms(i as f64 * 6_000.0 + 4_500.0),
                )
            })))],
            calls: (0..6)
                .map(|i| OsCall {
                    start: ms(i as f64 * 6_000.0 + 950.0),
                    dur: ms(3_600.0),
                    name: poll,
                    thread,
                })
                .collect(),
            samples: Vec::new(),
        };
        let d = run(&tr);
        assert!(
            d.verdict
                .contains("the launching thread was off a CPU (blocked or preempted) for")
                && d.verdict.contains("mostly in `poll`"),
            "{}",
            d.verdict
        );
        let idle = find(&d, "gpu-idle-gaps").expect("gpu-idle-gaps");
        assert!(
            idle.advice
                .iter()
                .any(|a| a.contains("launching thread was off a CPU")),
            "{:?}",
            idle.advice
        );
        assert!(
            idle.evidence
                .facts
                .iter()
                .any(|f| f.contains("in OS calls: `poll`")),
            "{:?}",
            idle.evidence.facts
        );
    }

    fn dataloader_trace(load_us: f64) -> crate::model::Trace {
        let mut b = TraceBuilder::new().device(0, "Tesla V100-SXM2-32GB", 80, 32 << 30);
        let mut t = 0.0;
        for s in 0..4 {
            let start = t;
            b.annotation(
                "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                t,
                load_us,
            );
            t += load_us + 1.0;
            for _ in 0..20 {
                let ext = b.op("aten::conv2d", t, 10.0);
                let c = b.runtime("cudaLaunchKernel", ext, t + 2.0, 5.0);
                b.gpu(
                    GpuKind::Kernel,
                    "volta_h884gemm_64x128_ldg8_nn",
                    0,
                    7,
                    t + 8.0,
                    100.0,
                    c,
                );
                t += 100.5;
            }
            b.annotation(&format!("ProfilerStep#{s}"), start, t - start + 10.0);
            t += 10.0;
        }
        b.build()
    }

    #[test]
    fn dataloader_stall_fires_above_five_percent_only() {
        let d = run(&dataloader_trace(2000.0));
        let f = find(&d, "dataloader-stall").expect("fires");
        assert_eq!(d.findings[0].id, "dataloader-stall");
        // ~2 ms of the GPU idle per step
        assert!(
            (1900.0..=2100.0).contains(&f.recoverable_us),
            "{}",
            f.recoverable_us
        );
        assert!(f.evidence.facts.iter().any(|x| x.contains("num_workers=0")));
        assert!(d.verdict.starts_with("DataLoader-bound"), "{}", d.verdict);
        // 40 µs of loading in a ~2 ms step: under 5 %
        let d = run(&dataloader_trace(40.0));
        assert!(find(&d, "dataloader-stall").is_none());
    }

    fn sync_trace(syncs: usize) -> crate::model::Trace {
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        let mut t = 0.0;
        for s in 0..3 {
            let start = t;
            for i in 0..20 {
                let ext = b.op("aten::mm", t, 5.0);
                let c = b.runtime("cudaLaunchKernel", ext, t + 1.0, 3.0);
                b.gpu(
                    GpuKind::Kernel,
                    "sm80_xmma_gemm_bf16",
                    0,
                    7,
                    t + 4.0,
                    200.0,
                    c,
                );
                t += 5.0;
                if i % (20 / syncs.max(1)) == 0 && syncs > 0 {
                    // .item(): wait for the queue, then Python for 100 µs
                    let item = b.op("aten::item", t, 0.0);
                    let _ = item;
                    let lsd = b.op("aten::_local_scalar_dense", t, 0.0);
                    let c = b.runtime("cudaMemcpyAsync", lsd, t, 1.0);
                    b.gpu(
                        GpuKind::Memcpy,
                        "Memcpy DtoH (Device -> Pageable)",
                        0,
                        7,
                        t + 196.0,
                        1.0,
                        c,
                    );
                    let wait = 200.0;
                    b.runtime("cudaStreamSynchronize", lsd, t + 1.0, wait);
                    t += wait + 100.0;
                }
            }
            b.annotation(&format!("ProfilerStep#{s}"), start, t - start + 300.0);
            t += 300.0;
        }
        let mut tr = b.build();
        // make aten::item and _local_scalar_dense enclose their calls
        for e in tr.cpu.iter_mut() {
            let n = tr.names.resolve(e.name).to_string();
            if n == "aten::item" || n == "aten::_local_scalar_dense" {
                e.dur = 201_500;
            }
        }
        tr.finalize();
        tr
    }

    #[test]
    fn host_sync_ranks_first_with_many_syncs() {
        let d = run(&sync_trace(10));
        let f = find(&d, "host-sync").expect("host-sync");
        assert_eq!(
            d.findings[0].id,
            "host-sync",
            "{:?}",
            d.findings
                .iter()
                .map(|f| (f.id, f.recoverable_us))
                .collect::<Vec<_>>()
        );
        assert!(
            f.evidence
                .facts
                .iter()
                .any(|x| x.contains("aten::item → aten::_local_scalar_dense")),
            "{:?}",
            f.evidence.facts
        );
        assert!(f.advice.iter().any(|a| a.contains(".item()")));
        assert!(f.evidence.metrics["syncs_per_step"] >= 10.0);
        // without syncs the rule is silent
        let d = run(&sync_trace(0));
        assert!(find(&d, "host-sync").is_none());
    }

    /// Two drains per step (`.item()`-style syncs that appear to return a few µs before the
    /// device goes idle), launches otherwise well ahead of the GPU: the idle after each drain
    /// is the syncs' cost, so `host-sync` ranks first and the verdict says Sync-bound.
    #[test]
    fn two_drains_per_step_rank_host_sync_first() {
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100 80GB HBM3", 132, 80 << 30);
        let mut host = 0.0;
        for s in 0..3 {
            let start = host;
            for _ in 0..2 {
                // 8 kernels of 100 µs launched 10 µs apart: the queue runs ahead
                let gpu0 = host + 20.0;
                for k in 0..8 {
                    let ext = b.op("aten::mm", host, 9.0);
                    let c = b.runtime("cudaLaunchKernel", ext, host + 1.0, 5.0);
                    b.gpu(
                        GpuKind::Kernel,
                        "sm90_gemm_bf16",
                        0,
                        7,
                        gpu0 + 100.0 * k as f64,
                        100.0,
                        c,
                    );
                    host += 10.0;
                }
                let end = gpu0 + 800.0;
                // the sync returns 3 µs before the last kernel's recorded end
                let ext = b.op("aten::item", host, end - 3.0 - host);
                b.runtime("cudaStreamSynchronize", ext, host + 1.0, end - 4.0 - host);
                // host work before the next launches
                b.op("aten::_local_scalar_dense_postprocess", end, 150.0);
                host = end + 150.0;
            }
            b.annotation(&format!("ProfilerStep#{s}"), start, host - start);
        }
        let d = run(&b.build());
        let ids: Vec<(&str, f64)> = d
            .findings
            .iter()
            .map(|f| (f.id, f.recoverable_us))
            .collect();
        assert_eq!(d.findings[0].id, "host-sync", "{ids:?}");
        assert!(d.verdict.starts_with("Sync-bound"), "{}", d.verdict);
        // counts print as integers
        assert!(
            d.verdict.ends_with("idle after 2 host syncs per step"),
            "{}",
            d.verdict
        );
        assert!(find(&d, "launch-bound").is_none(), "{ids:?}");
    }

    #[test]
    fn sync_counts_are_integers_and_averages_say_so() {
        use super::syncs_per_step;
        assert_eq!(syncs_per_step(4, 2), "2 host syncs per step");
        assert_eq!(syncs_per_step(3, 3), "1 host sync per step");
        assert_eq!(syncs_per_step(8192, 1), "8,192 host syncs per step");
        assert_eq!(syncs_per_step(5, 2), "2.5 host syncs per step on average");
    }

    /// A loop summing on the CPU after a short `.cpu()` copy: the sync cost is the copy's
    /// wait; the loop is host compute — "Host-bound (CPU work)" named by its frame, not
    /// Sync-bound, not launch-bound.
    #[test]
    fn cpu_loop_after_a_copy_is_host_compute() {
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        let mut t = 0.0;
        for s in 0..3 {
            let start = t;
            let ext = b.op("aten::mm", t, 10.0);
            let c = b.runtime("cudaLaunchKernel", ext, t + 2.0, 5.0);
            b.gpu(
                GpuKind::Kernel,
                "sm80_xmma_gemm_bf16",
                0,
                7,
                t + 10.0,
                200.0,
                c,
            );
            // x.cpu(): a pageable copy that waits for the GEMM
            let to = b.op("aten::to", t + 12.0, 200.0);
            let c = b.runtime("cudaMemcpyAsync", to, t + 13.0, 198.0);
            b.gpu(
                GpuKind::Memcpy,
                "Memcpy DtoH (Device -> Pageable)",
                0,
                7,
                t + 210.0,
                2.0,
                c,
            );
            // a Python loop over the CPU tensor: 3 ms, launching nothing
            b.cpu(
                CpuKind::PythonFunction,
                "train.py(42): cpu_metric",
                1,
                t + 215.0,
                3000.0,
            );
            for i in 0..100 {
                b.op("aten::add", t + 220.0 + 29.0 * i as f64, 20.0);
            }
            t += 3300.0;
            b.annotation(&format!("ProfilerStep#{s}"), start, t - start);
        }
        let d = run(&b.build());
        let ids: Vec<(&str, f64)> = d
            .findings
            .iter()
            .map(|f| (f.id, f.recoverable_us))
            .collect();
        assert!(
            d.verdict.starts_with("Host-bound (CPU work)"),
            "{}",
            d.verdict
        );
        assert!(
            d.verdict.contains("train.py(42): cpu_metric"),
            "{}",
            d.verdict
        );
        assert_eq!(d.findings[0].id, "host-compute", "{ids:?}");
        assert!(find(&d, "launch-bound").is_none(), "{ids:?}");
        let hs = find(&d, "host-sync").map_or(0.0, |f| f.recoverable_us);
        assert!(hs < 250.0, "{ids:?}");
    }

    /// A gap is named by a host call only when the call covers most of it: a sub-millisecond
    /// versioned allocation in over a second of untraced host time does not name it.
    #[test]
    fn a_short_call_does_not_name_a_long_gap() {
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 5.0);
        b.gpu(GpuKind::Kernel, "k1", 0, 7, 10.0, 10.0, c);
        b.cpu(CpuKind::Runtime, "cudaMalloc_v3020", 1, 500_000.0, 400.0);
        let c = b.runtime("cudaLaunchKernel", 0, 1_200_000.0, 5.0);
        b.gpu(GpuKind::Kernel, "k2", 0, 7, 1_200_010.0, 10.0, c);
        let d = run(&b.build());
        let g = find(&d, "gpu-idle-gaps").expect("gpu-idle-gaps");
        let gap = &g.evidence.locations[0];
        assert!(!gap.name.contains("cudaMalloc"), "{}", gap.name);
        assert!(gap.name.starts_with("nothing traced"), "{}", gap.name);
        assert!(d.verdict.contains("nothing traced"), "{}", d.verdict);
    }

    /// Launch-bound with `.item()` in the step: no plain CUDA-graph advice (a graph cannot
    /// capture a region with data-dependent syncs).
    #[test]
    fn no_plain_graph_advice_with_data_dependent_syncs() {
        let d = run(&chatty_with_items(true));
        let lb = find(&d, "launch-bound").expect("launch-bound");
        assert!(
            lb.advice[0].starts_with("Before any CUDA graph"),
            "{:?}",
            lb.advice
        );
        let d = run(&chatty_with_items(false));
        let lb = find(&d, "launch-bound").expect("launch-bound");
        assert!(
            lb.advice[0].starts_with("Capture the step"),
            "{:?}",
            lb.advice
        );
    }

    /// Launch-bound on steps whose kernels or recorded shapes change from step to step (a
    /// dynamic batch): no CUDA-graph advice, fusion with bucketing instead, and why.
    #[test]
    fn no_graph_advice_when_steps_are_not_static() {
        // `kernels`: step s launches 200 + 10·s kernels; else every step launches 200, and one
        // op per step records the batch size s + 1 as its first input dimension
        let steps = |kernels: bool| {
            let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
            let mut t = 0.0;
            for s in 0..3 {
                let start = t;
                let ext = b.op("aten::embedding", t, 4.0);
                let dims = if kernels { 1 } else { s + 1 };
                b.shapes(ext, &format!("[[{dims}, 128]]"), "[\"float\"]", "[\"\"]");
                t = chatty(
                    &mut b,
                    t + 5.0,
                    200 + if kernels { 10 * s } else { 0 },
                    25.0,
                    3.0,
                );
                b.annotation(&format!("ProfilerStep#{s}"), start, t - start + 5.0);
                t += 5.0;
            }
            run(&b.build())
        };
        for (kernels, why) in [
            (
                true,
                "the steps launch different kernels: ProfilerStep#1 (210 kernels) does not \
                    repeat ProfilerStep#0 (200 kernels)",
            ),
            (
                false,
                "the recorded input shapes change from step to step: ProfilerStep#1's \
                     differ from ProfilerStep#0's",
            ),
        ] {
            let d = steps(kernels);
            let lb = find(&d, "launch-bound").expect("launch-bound");
            assert!(
                lb.advice[0].starts_with("Fuse instead of graphing"),
                "{:?}",
                lb.advice
            );
            assert!(
                lb.evidence.facts.iter().any(|f| f.starts_with(why)),
                "{:?}",
                lb.evidence.facts
            );
        }
    }

    fn chatty_with_items(items: bool) -> crate::model::Trace {
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        let mut t = 0.0;
        for s in 0..3 {
            let start = t;
            t = chatty(&mut b, t, 200, 25.0, 3.0);
            if items {
                // loss.item() at the end of the step: waits for the last kernel
                let item = b.op("aten::item", t, 30.0);
                let lsd = b.op("aten::_local_scalar_dense", t + 1.0, 28.0);
                let _ = item;
                let c = b.runtime("cudaMemcpyAsync", lsd, t + 2.0, 5.0);
                b.gpu(
                    GpuKind::Memcpy,
                    "Memcpy DtoH (Device -> Pageable)",
                    0,
                    7,
                    t + 8.0,
                    1.0,
                    c,
                );
                b.runtime("cudaStreamSynchronize", lsd, t + 8.0, 2.0);
                t += 31.0;
            }
            b.annotation(&format!("ProfilerStep#{s}"), start, t - start + 5.0);
            t += 5.0;
        }
        b.build()
    }

    #[test]
    fn queue_full_says_the_gpu_is_the_bottleneck() {
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100 80GB HBM3", 132, 80 << 30);
        // 1,200 launches every 2.5 µs, kernels of 200 µs back to back from 0.1 ms: the
        // queue passes 1,000 pending launches and the later calls block
        let mut host = 0.0;
        for i in 0..1200 {
            let dur = if i >= 1050 { 150.0 } else { 1.0 };
            let ext = b.op("aten::mul", host, dur + 1.0);
            let c = b.runtime("cudaLaunchKernel", ext, host + 0.5, dur);
            b.gpu(
                GpuKind::Kernel,
                "sm90_gemm_bf16",
                0,
                7,
                100.0 + 200.0 * i as f64,
                200.0,
                c,
            );
            host += dur + 1.5;
        }
        b.annotation("ProfilerStep#1", 0.0, host);
        let d = run(&b.build());
        let q = find(&d, "queue-full").expect("queue-full");
        assert_eq!(q.severity, super::Severity::Info);
        assert_eq!(q.recoverable_us, 0.0);
        assert!(q.title.contains("GPU is the bottleneck"));
        assert!(find(&d, "launch-bound").is_none());
        assert!(d.verdict.contains("launch queue full"), "{}", d.verdict);
        // a shallow queue does not fire
        let mut b = TraceBuilder::new();
        b.op_with_kernel("aten::mul", "k", 0.0, 10.0, 20.0, 5.0);
        let d = run(&b.build());
        assert!(find(&d, "queue-full").is_none());
    }

    /// Compile work in a warm window (device work ran before it) is `compile-in-window`; in
    /// a cold one (the window holds the capture's first device work) it is one-time start-up,
    /// charged once to `startup`.
    #[test]
    fn compile_in_window_fires_on_compile_work() {
        let trace = |warm: bool| {
            let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
            if warm {
                b.op_with_kernel("aten::mm", "gemm_bf16", -1000.0, 10.0, -995.0, 100.0);
            }
            b.op_with_kernel("aten::mm", "gemm_bf16", 0.0, 10.0, 5.0, 100.0);
            b.cpu(
                CpuKind::PythonFunction,
                "torch/_dynamo/convert_frame.py(1004): _compile",
                1,
                200.0,
                5000.0,
            );
            b.op_with_kernel("aten::mm", "gemm_bf16", 5300.0, 10.0, 5305.0, 100.0);
            b.annotation("ProfilerStep#0", 0.0, 5500.0);
            b.build()
        };
        let d = run(&trace(true));
        let c = find(&d, "compile-in-window").expect("compile-in-window");
        assert!(c.recoverable_us >= 4900.0, "{}", c.recoverable_us);
        assert_eq!(d.findings[0].id, "compile-in-window");
        assert!(find(&d, "startup").is_none());
        let d = run(&trace(false));
        let s = find(&d, "startup").expect("startup");
        assert!(s.recoverable_us >= 4900.0, "{}", s.recoverable_us);
        assert_eq!(d.findings[0].id, "startup");
        assert!(find(&d, "compile-in-window").is_none_or(|c| c.recoverable_us == 0.0));
        // without the compile frame: no finding
        let mut b = TraceBuilder::new();
        b.op_with_kernel("aten::mm", "gemm_bf16", 0.0, 10.0, 5.0, 100.0);
        let d = run(&b.build());
        assert!(find(&d, "compile-in-window").is_none());
    }

    /// Kernels with 5 ms holes where the host does nothing traced; with `lost`, a stream sync
    /// in the last hole waits 4 ms while the device shows nothing (device work the trace does
    /// not hold: `unrecorded-device-work`).
    fn holes(lost: bool) -> crate::model::Trace {
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        let mut t = 0.0;
        for _ in 0..4 {
            let c = b.runtime("cudaLaunchKernel", 0, t, 3.0);
            b.gpu(GpuKind::Kernel, "gemm_bf16", 0, 7, t + 4.0, 1000.0, c);
            t += 6000.0;
        }
        if lost {
            b.runtime("cudaStreamSynchronize", 0, t - 4500.0, 4000.0);
        }
        b.annotation("ProfilerStep#0", 0.0, t);
        b.build()
    }

    /// Idle time is not judged when device records are missing ([`super::Unjudged`]).
    #[test]
    fn idle_gaps_not_claimed_when_device_records_are_missing() {
        use super::Severity;
        let d = run(&holes(false));
        let g = find(&d, "gpu-idle-gaps").expect("gpu-idle-gaps");
        assert!(g.severity < Severity::Info, "{:?}", g.severity);
        assert!(g.recoverable_us > 10_000.0, "{}", g.recoverable_us);
        let d = run(&holes(true));
        assert_eq!(
            d.verdict_class.id(),
            "device_records_incomplete",
            "{}",
            d.verdict
        );
        let g = find(&d, "gpu-idle-gaps").expect("gpu-idle-gaps");
        assert_eq!((g.severity, g.recoverable_us), (Severity::Info, 0.0));
        let why = g.evidence.facts.last().unwrap();
        assert!(
            why.starts_with(
                "not counted as recoverable: the capture check found unrecorded-device-work"
            ),
            "{why}"
        );
    }

    #[test]
    fn gpu_idle_gaps_histogram_and_untraced_claim() {
        let d = run(&holes(false));
        let g = find(&d, "gpu-idle-gaps").expect("gpu-idle-gaps");
        assert!(g.recoverable_us > 15_000.0, "{}", g.recoverable_us);
        assert_eq!(g.evidence.metrics["gpu0_gaps_ge_1ms"], 4.0);
        assert!(!g.evidence.locations.is_empty());
        // a busy device: nothing
        let mut b = TraceBuilder::new();
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 1.0);
        b.gpu(GpuKind::Kernel, "gemm_bf16", 0, 7, 1.0, 1000.0, c);
        b.annotation("ProfilerStep#0", 0.0, 1001.0);
        let d = run(&b.build());
        assert!(find(&d, "gpu-idle-gaps").is_none());
    }
}
