//! The one-line verdict: what bounds the step, with the number that shows it.
//!
//! * No device activity in the window: a host-only verdict — communication-bound when host
//!   collectives (gloo, MPI, UCC spans) take ≥ 30 % of the step.
//! * **GPU-bound** when the busiest device is busy ≥ 85 % of the window or its launch queue
//!   was full: `GPU-bound: 91.0% busy, 62.0% of kernel time in tensor-core GEMMs` (the
//!   largest kernel category by time, with tensor-core use for GEMM/conv/attention; or
//!   `X% of it copies with no kernel running` when exposed copies outweigh computation on
//!   that device), plus
//!   `launch queue full` when it was — or **communication-bound** when, busy as it is, 30 %
//!   or more of the step is communication not overlapped by computation.
//! * Otherwise the largest pool of lost device time names the bound: DataLoader, host syncs,
//!   compile work, CPU launch overhead (gaps under 1 ms waiting for the host in the launch
//!   path), host compute that launches nothing on the device (`Host-bound (CPU work)`, named
//!   by the span that covers most of its longest gap), other host work or untraced host time
//!   (longer gaps), device-side waits (work queued but not started), or exposed
//!   communication. Idle with no work left to run ([`Cause::NoWork`]) is no pool: no host fix
//!   recovers it.

use super::host::{
    break_claim, compute_site, host_late_gap, is_idle_claim, is_launch_claim, max_claim,
};
use super::{count, fmt_us_sentence, pct, Facts, Finding};
use crate::analysis::gaps::Cause;
use crate::model::classify::KernelCategory;
use serde::{Deserialize, Serialize};

/// Busy share of the window from which a device counts as the bottleneck.
pub const GPU_BOUND_BUSY: f64 = 0.85;
/// Exposed communication share of the step from which a busy device is communication-bound.
pub const COMM_BOUND_SHARE: f64 = 0.30;
pub use super::STARTUP_DOMINATES;
/// A first kernel starting this long after its launch returned, on a device with nothing
/// queued before it, hints at a host/device clock offset (ns).
pub const CLOCK_OFFSET_HINT: i64 = 1_000_000;

/// Delay between the end of the launch call of the trace's first device activity and its
/// start (nothing ran on the device before it, so nothing should delay it).
pub fn first_start_delay(f: &Facts) -> Option<i64> {
    let g = f.trace.gpu.iter().find(|g| g.is_activity())?;
    if g.launch == crate::model::NONE {
        return None;
    }
    Some(g.start - f.trace.cpu[g.launch as usize].end())
}

fn category_phrase(f: &Facts) -> Option<String> {
    let total: i64 = f.a.kernels.iter().map(|k| k.total).sum();
    if total <= 0 {
        return None;
    }
    let mut by: std::collections::BTreeMap<KernelCategory, (i64, i64)> = Default::default();
    for k in &f.a.kernels {
        let x = by.entry(k.category).or_default();
        x.0 += k.total;
        if k.tensor_core {
            x.1 += k.total;
        }
    }
    let (cat, (t, tc)) = by
        .into_iter()
        .max_by_key(|(c, (t, _))| (*t, std::cmp::Reverse(*c)))?;
    let what = match cat {
        KernelCategory::Gemm => "GEMMs",
        KernelCategory::Conv => "convolutions",
        KernelCategory::Attention => "attention",
        KernelCategory::Elementwise => "elementwise kernels",
        KernelCategory::Reduction => "reductions",
        KernelCategory::Norm => "normalization kernels",
        KernelCategory::Memcpy => "copy kernels",
        KernelCategory::Memset => "fill kernels",
        KernelCategory::Communication => "communication kernels",
        KernelCategory::Triton => "Triton kernels",
        KernelCategory::Other => "other kernels",
    };
    if cat == KernelCategory::Other {
        return None;
    }
    let prefix = if matches!(
        cat,
        KernelCategory::Gemm | KernelCategory::Conv | KernelCategory::Attention
    ) {
        if tc * 2 >= t {
            "tensor-core "
        } else {
            ""
        }
    } else {
        ""
    };
    Some(format!(
        "{} of kernel time in {}{}",
        pct(t as f64 / total as f64),
        prefix,
        what
    ))
}

/// The class of a verdict: a stable id for what bounds the step (JSON `verdict_class`), set
/// where each verdict sentence is built, so tools and tests need not parse the sentence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictClass {
    /// No verdict was built (an empty or pre-1.x report).
    #[default]
    Unknown,
    /// No device activity in the trace.
    HostOnly,
    /// Device activity in the trace, none in the analyzed window.
    NoDeviceWorkInWindow,
    /// The busiest device is busy ≥ 85 % of the window (or its launch queue was full).
    GpuBound,
    /// Busy, with ≥ 30 % of the step exposed communication; or exposed communication is the
    /// largest pool of lost device time; or, without device activity, host collectives (gloo,
    /// MPI, UCC) take ≥ 30 % of the step.
    CommunicationBound,
    /// The device clock looks offset from the host's: idle time is blamed on nothing.
    TimingUnreliable,
    /// The device is idle, and no pool of lost time was found.
    IdleUnexplained,
    /// Eager code between compiled graphs.
    GraphBreaks,
    /// The step waits for the DataLoader.
    DataloaderBound,
    /// The device idles after host syncs.
    SyncBound,
    /// Compile, autotune or graph-capture work in the window.
    Compile,
    /// Gaps under 1 ms waiting for the host to launch.
    LaunchBound,
    /// Gaps of 1 ms and more while the host ran other work, or nothing was traced on it.
    HostBound,
    /// Work already queued on the device did not start (waits on events, streams, devices).
    DeviceStalls,
    /// Device records are missing (dropped or unrecorded device work): idle time is blamed on
    /// nothing.
    DeviceRecordsIncomplete,
    /// Nothing repeats in the capture: no steady state to judge (reserved).
    NoSteadyState,
    /// One-time start-up (module loading, first-call allocation, JIT compile in a cold window)
    /// takes at least [`STARTUP_DOMINATES`] of the window.
    StartupDominates,
    /// An Nsight Compute CSV alone: per-kernel limits, no timeline.
    NcuOnly,
}

impl VerdictClass {
    /// The id as written in the JSON report.
    pub fn id(self) -> &'static str {
        match self {
            VerdictClass::Unknown => "unknown",
            VerdictClass::HostOnly => "host_only",
            VerdictClass::NoDeviceWorkInWindow => "no_device_work_in_window",
            VerdictClass::GpuBound => "gpu_bound",
            VerdictClass::CommunicationBound => "communication_bound",
            VerdictClass::TimingUnreliable => "timing_unreliable",
            VerdictClass::IdleUnexplained => "idle_unexplained",
            VerdictClass::GraphBreaks => "graph_breaks",
            VerdictClass::DataloaderBound => "dataloader_bound",
            VerdictClass::SyncBound => "sync_bound",
            VerdictClass::Compile => "compile",
            VerdictClass::LaunchBound => "launch_bound",
            VerdictClass::HostBound => "host_bound",
            VerdictClass::DeviceStalls => "device_stalls",
            VerdictClass::DeviceRecordsIncomplete => "device_records_incomplete",
            VerdictClass::NoSteadyState => "no_steady_state",
            VerdictClass::StartupDominates => "startup_dominates",
            VerdictClass::NcuOnly => "ncu_only",
        }
    }
}

/// The start of the verdict of a capture in which nothing repeats (stable id
/// `no_steady_state`).
pub const NO_STEADY_STATE: &str = "No steady state:";

/// The verdict of a capture in which nothing repeats ([`crate::window::one_pass`]) and that
/// has device work: what its one pass is and shows (kernel time, GPU idle, first-call
/// compile/module-load work, GPU idle with nothing traced on the host, when ≥ 1 % of the window) and how to capture a
/// steady state. A bound judged on one cold or extracted pass would name first-call costs or
/// the cut-off previous batch as the workload's bottleneck.
pub fn no_steady_state(
    f: &Facts,
    check: &crate::analysis::capture::CaptureCheck,
) -> Option<String> {
    let what = f.a.selection.one_pass.as_ref()?;
    let p = f.gaps.primary()?;
    let window = f.window_ns.max(1) as f64;
    let kernels: i64 = f.a.kernels.iter().map(|k| k.total).sum();
    let mut shows = vec![
        if kernels > 0 {
            format!("kernels {}", fmt_us_sentence(kernels as f64 / 1000.0))
        } else {
            "no kernels".to_string()
        },
        format!("GPU idle {}", pct(p.idle as f64 / window)),
    ];
    // start-up with compile or module-load work, or other start-up of 1 % of the window and
    // more (a 90 µs allocation in a 12 ms pass says nothing)
    let st = &f.a.startup;
    if f.a.selection.compile.total > 0 || 100 * st.total >= f.window_ns {
        if let Some(mut s) = startup_phrase(f) {
            // the share when it dominates the pass, as a start-up-dominated verdict says it
            let judged = st.judged as f64 / f.window_ns.max(1) as f64;
            if judged >= STARTUP_DOMINATES {
                s.push_str(&format!(", {} of the window", pct(judged)));
            }
            shows.push(s);
        }
    }
    let (un, _) = max_claim(f, |_, c| c == Cause::Untraced);
    // 1 % of the window and more: a few µs between two launches say nothing
    // (it compares host and device clocks: not with an offset between them)
    if un > 0 && 100 * un >= f.window_ns && !check.unreliable("host_device_timing") {
        shows.push(format!(
            "{} of GPU idle with nothing traced on the host",
            fmt_us_sentence(un as f64 / 1000.0)
        ));
    }
    Some(format!(
        "{NO_STEADY_STATE} {what}; the one pass shows {}. No bound is judged on it: {CAPTURE_STEADY}{}",
        shows.join(", "),
        module_loading_hint(f)
    ))
}

/// How to capture a steady state, as the verdicts of one-pass and start-up captures say it.
const CAPTURE_STEADY: &str = "capture several steps (torch.profiler schedule(wait=1, warmup=1, \
     active=3) with prof.step() each iteration, or repeat the call, or an Nsight Systems capture \
     range)";

/// The trace's one-time start-up in words ([`crate::analysis::startup`]): its wall-clock
/// union across threads and each category (`1.20 s of one-time start-up (JIT compile
/// 1.00 s, context/module load 150.0 ms)`), largest first; `None` without any.
pub fn startup_phrase(f: &Facts) -> Option<String> {
    let s = &f.a.startup;
    if s.total == 0 {
        return None;
    }
    let mut parts: Vec<&crate::analysis::startup::StartupPart> = s.parts.iter().collect();
    parts.sort_by_key(|p| std::cmp::Reverse(p.total));
    let each: Vec<String> = parts
        .iter()
        .map(|p| {
            format!(
                "{} {}",
                p.kind.as_str(),
                fmt_us_sentence(p.total as f64 / 1000.0)
            )
        })
        .collect();
    Some(format!(
        "{} of one-time start-up ({})",
        fmt_us_sentence(s.total as f64 / 1000.0),
        each.join(", ")
    ))
}

/// The module-loading advice when the trace loads modules: with lazy loading (the default
/// since CUDA 12.2) each module loads at its first kernel's launch, inside the first steps.
fn module_loading_hint(f: &Facts) -> &'static str {
    use crate::analysis::startup::StartupKind;
    match f.a.startup.part(StartupKind::ContextModule) {
        Some(p) if p.total > 0 && f.a.startup.hip_lazy => {
            "; ROCm loads each code object at its kernel's first launch: launch every kernel once \
             before the capture"
        }
        Some(p) if p.total > 0 => {
            "; CUDA_MODULE_LOADING=EAGER loads every module at start-up instead of at its \
             first launch (LAZY, the default since CUDA 12.2)"
        }
        _ => "",
    }
}

/// The verdict of a window whose counted time is at least [`STARTUP_DOMINATES`] one-time
/// start-up: the share, the breakdown, and how to capture the steady state.
fn startup_dominates(f: &Facts) -> Option<String> {
    let judged = f.a.startup.judged;
    if judged <= 0 || (judged as f64) < STARTUP_DOMINATES * f.window_ns.max(1) as f64 {
        return None;
    }
    Some(format!(
        "Start-up dominates: {} of the window is one-time start-up; the trace holds {}. No \
         bound is judged on it: {CAPTURE_STEADY}, starting after the first iterations{}",
        pct(judged as f64 / f.window_ns.max(1) as f64),
        startup_phrase(f)?,
        module_loading_hint(f)
    ))
}

/// The verdict for a diagnosis.
pub fn verdict(f: &Facts, findings: &[Finding]) -> String {
    classified(f, findings).1
}

/// The verdict for a diagnosis with its class. When the capture check finds events left out
/// for want of time (`zero-timestamps`) or a truncated capture (`tracer-event-cap`), the
/// verdict says so, when the issue limits the verdict (level `verdict`: not when the window
/// was cut where the records stop, `records-cut`, so that no figure covers them).
pub fn classified(f: &Facts, findings: &[Finding]) -> (VerdictClass, String) {
    let check = &f.check;
    let (class, mut v) = classified_of(f, findings, check);
    if class == VerdictClass::DeviceRecordsIncomplete {
        return (class, v);
    }
    let limiting = check
        .issues
        .iter()
        .filter(|i| i.level() == crate::analysis::capture::LEVEL_VERDICT);
    for i in limiting {
        match i.id {
            "zero-timestamps" => v.push_str(
                " (judged on the events with real times: some were written with ts 0 and dur \
                 0, see the capture check)",
            ),
            "tracer-event-cap" => v.push_str(
                " (the capture is truncated at the tracer's event cap, see the capture check)",
            ),
            _ => {}
        }
    }
    v.push_str(&limited_by(class, check));
    (class, v)
}

/// The classes of numbers ([`crate::analysis::capture::TrustIssue::unreliable`]) a verdict
/// of this class rests on. An idle-cause verdict rests on the host's lead (which host call
/// an idle device waited for, through the launch links), on the device records and on host
/// and device times lining up; a device-side verdict on the device records and totals; the
/// one-pass and host-only verdicts on what was recorded at all. The verdicts that are about
/// the capture itself (records incomplete, timing unreliable, ncu only) rest on none.
fn rests_on(class: VerdictClass) -> &'static [&'static str] {
    use VerdictClass as V;
    match class {
        V::LaunchBound
        | V::HostBound
        | V::SyncBound
        | V::DataloaderBound
        | V::DeviceStalls
        | V::IdleUnexplained
        | V::GraphBreaks
        | V::Compile => &[
            "host_attribution",
            "device_records",
            "host_device_timing",
            "totals",
            "steady_state",
        ],
        V::GpuBound | V::CommunicationBound => &["device_records", "totals", "steady_state"],
        V::NoSteadyState | V::StartupDominates | V::NoDeviceWorkInWindow => {
            &["device_records", "totals"]
        }
        V::HostOnly => &["device_records", "totals", "steady_state"],
        _ => &[],
    }
}

/// The sentence a verdict adds for the verdict-level capture issues
/// ([`crate::analysis::capture::LEVEL_VERDICT`]) that limit what it rests on ([`rests_on`]),
/// besides the two it words itself (`zero-timestamps`, `tracer-event-cap`): empty when none.
fn limited_by(class: VerdictClass, check: &crate::analysis::capture::CaptureCheck) -> String {
    let rests = rests_on(class);
    let (mut ids, mut what): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    for i in check.issues.iter().filter(|i| {
        i.level() == crate::analysis::capture::LEVEL_VERDICT
            && !matches!(i.id, "zero-timestamps" | "tracer-event-cap")
    }) {
        let hits: Vec<&str> = i
            .unreliable
            .iter()
            .copied()
            .filter(|c| rests.contains(c))
            .collect();
        if hits.is_empty() {
            continue;
        }
        ids.push(i.id);
        for c in hits {
            let w = crate::analysis::capture::class_effect(c);
            if !what.contains(&w) {
                what.push(w);
            }
        }
    }
    if ids.is_empty() {
        return String::new();
    }
    format!(
        " (limited by the capture check: {} — {})",
        ids.join(", "),
        what.join("; ")
    )
}

fn classified_of(
    f: &Facts,
    findings: &[Finding],
    check: &crate::analysis::capture::CaptureCheck,
) -> (VerdictClass, String) {
    if let Some(v) = no_steady_state(f, check) {
        return (VerdictClass::NoSteadyState, v);
    }
    let Some(p) = f.gaps.primary() else {
        return host_only(f);
    };
    let comm =
        f.a.timeline
            .iter()
            .map(|t| t.exposed_comm)
            .max()
            .unwrap_or(0);
    if let Some(v) = device_busy(f, p, findings, comm) {
        return v;
    }
    // a busy device is judged busy whatever the host did; an idle one mostly in start-up has
    // no steady state to judge yet
    if let Some(v) = startup_dominates(f) {
        return (VerdictClass::StartupDominates, v);
    }
    let pools = Pools::of(f, comm);
    let (kind, amount) = pools.largest();
    let idle_s = pct(p.idle as f64 / f.window_ns.max(1) as f64);
    if let Some(v) = idle_not_blamed(check, kind, amount, &idle_s) {
        return v;
    }
    idle_by_pool(f, p, &pools, kind, amount, &idle_s)
}

/// The verdict of a window without device work: no GPU activity in it, or a host-only trace
/// (bound by host collectives, by the DataLoader, or by nothing named).
fn host_only(f: &Facts) -> (VerdictClass, String) {
    use VerdictClass as V;
    if f.trace.gpu.iter().any(|g| g.is_activity()) {
        return (
            V::NoDeviceWorkInWindow,
            "No GPU activity in the analyzed window: only host work was recorded there".into(),
        );
    }
    let avg = &f.a.steps.average;
    // host collectives (gloo, MPI, UCC on CPU): nothing overlaps them; in a synchronous
    // job that time is mostly the wait for the other ranks
    if avg.total > 0.0
        && avg.communication / avg.total >= COMM_BOUND_SHARE
        && avg.communication >= avg.dataloader
    {
        let names = super::transfer::host_collectives(f);
        let mut v = format!(
            "Communication-bound (host-only trace, no GPU activity): {} of the step inside \
             host collectives",
            pct(avg.communication / avg.total)
        );
        if let Some((name, _, _)) = names.first() {
            v.push_str(&format!(", mostly `{}`", super::short(name, 60)));
        }
        v.push_str(", waiting for the other ranks or the transfer");
        return (V::CommunicationBound, v);
    }
    if avg.total > 0.0 && avg.dataloader / avg.total > super::host::DATALOADER_SHARE {
        return (
            V::HostOnly,
            format!(
                "Host-only trace (no GPU activity): DataLoader {} of the step",
                pct(avg.dataloader / avg.total)
            ),
        );
    }
    (
        V::HostOnly,
        "Host-only trace: no GPU activity recorded (CPU-only run, or CUDA activities \
            not profiled)"
            .into(),
    )
}

/// The verdict of a busy device (busy at least [`GPU_BOUND_BUSY`] of the window, or its launch
/// queue full): bound by exposed communication, or by the GPU (its copies, or the kernel
/// category that dominates); `None` when the device is not busy.
fn device_busy(
    f: &Facts,
    p: &crate::analysis::host::gaps::DeviceGaps,
    findings: &[Finding],
    comm: i64,
) -> Option<(VerdictClass, String)> {
    use VerdictClass as V;
    let busy = p.busy as f64 / f.window_ns.max(1) as f64;
    let queue_full = findings.iter().any(|x| x.id == "queue-full");
    if !(busy >= GPU_BOUND_BUSY || queue_full) {
        return None;
    }
    let comm_share = f.share_of_step(f.per_step_us(comm));
    if comm_share >= COMM_BOUND_SHARE {
        return Some((
            V::CommunicationBound,
            format!(
                "Communication-bound: exposed communication {} of the step (GPU busy {})",
                pct(comm_share),
                pct(busy)
            ),
        ));
    }
    let mut v = format!("GPU-bound: {} busy", pct(busy));
    // A device kept busy mostly by copies is bound by transfers, not by its kernels.
    let copies = f.a.timeline.iter().find(|t| t.device == p.device);
    match copies {
        Some(t) if t.exposed_memcpy > t.computation && p.busy > 0 => v.push_str(&format!(
            ", {} of it copies with no kernel running",
            pct(t.exposed_memcpy as f64 / p.busy as f64)
        )),
        _ => {
            if let Some(c) = category_phrase(f) {
                v.push_str(&format!(", {c}"));
            }
        }
    }
    if queue_full {
        v.push_str(&format!(
            "; launch queue full ({} pending launches)",
            count(f.launch.max_depth() as u64)
        ));
    }
    Some((V::GpuBound, v))
}

/// The pools of lost device time per cause (the largest claim of each), ns.
struct Pools {
    dataloader: i64,
    sync: i64,
    compile: i64,
    launch: i64,
    host: i64,
    compute: i64,
    untraced: i64,
    queued: i64,
    breaks: i64,
    /// Exposed communication as a pool: capped by the host's wait for the device
    /// ([`host_wait`]), as the `exposed-communication` finding is: while the host works, faster
    /// communication saves nothing.
    comm: i64,
    /// Exposed communication, uncapped (the verdict's printed share).
    comm_exposed: i64,
    host_comm: i64,
}

/// The host's wait for the device in the window, ns (the cap of every device-side bound,
/// [`super::claims::cap`]); `None` in a capture without launch calls, where it is unknown.
fn host_wait(f: &Facts) -> Option<i64> {
    (f.launch.launch_calls > 0 || f.launch.graph_launches > 0)
        .then(|| f.gaps.step_wait.iter().map(|w| w.wait).sum())
}

impl Pools {
    fn of(f: &Facts, comm: i64) -> Pools {
        Pools {
            dataloader: max_claim(f, |_, c| c == Cause::Dataloader).0,
            sync: max_claim(f, |_, c| c == Cause::Sync).0,
            compile: max_claim(f, |_, c| c == Cause::Compile).0,
            launch: max_claim(f, is_launch_claim).0,
            host: max_claim(f, |b, c| is_idle_claim(b, c) && c != Cause::Untraced).0,
            untraced: max_claim(f, |_, c| c == Cause::Untraced).0,
            compute: max_claim(f, |_, c| c == Cause::HostCompute).0,
            queued: max_claim(f, |_, c| c == Cause::Queued).0,
            breaks: break_claim(f).0,
            comm: host_wait(f).map_or(comm, |w| comm.min(w)),
            comm_exposed: comm,
            host_comm: max_claim(f, |_, c| c == Cause::HostComm).0,
        }
    }

    /// The largest pool and its size (the first of equals in this order; `host`, 0 without).
    fn largest(&self) -> (&'static str, i64) {
        [
            ("dataloader", self.dataloader),
            ("sync", self.sync),
            ("compile", self.compile),
            ("launch", self.launch),
            ("host", self.host),
            ("compute", self.compute),
            ("untraced", self.untraced),
            ("queued", self.queued),
            ("breaks", self.breaks),
            ("comm", self.comm),
            ("host_comm", self.host_comm),
        ]
        .iter()
        .copied()
        .max_by_key(|(_, v)| *v)
        .unwrap_or(("host", 0))
    }
}

/// The verdict when the capture check forbids blaming the idle time: idle time blamed on the
/// host or the device compares host and device clocks, so with an offset between them
/// (the capture check) the verdict does not rest on it; with device records missing, the
/// idle time is no idle, sync or compile time.
fn idle_not_blamed(
    check: &crate::analysis::capture::CaptureCheck,
    kind: &str,
    amount: i64,
    idle_s: &str,
) -> Option<(VerdictClass, String)> {
    use VerdictClass as V;
    let timed = matches!(
        kind,
        "sync" | "launch" | "host" | "compute" | "untraced" | "queued" | "breaks" | "host_comm"
    );
    if timed && amount > 0 && check.unreliable("host_device_timing") {
        return Some((
            V::TimingUnreliable,
            format!(
                "Timing unreliable: the device clock looks offset by {} from the host's, so the \
                 GPU's idle {idle_s} cannot be blamed on the host or the device (see the capture \
                 check); kernel times and GPU busy time stand",
                fmt_us_sentence(check.clock_offset as f64 / 1000.0)
            ),
        ));
    }
    if (timed || kind == "compile") && amount > 0 && check.unreliable("device_records") {
        let ids: Vec<&str> = check
            .issues
            .iter()
            .filter(|i| i.unreliable.contains(&"device_records"))
            .map(|i| i.id)
            .collect();
        return Some((
            V::DeviceRecordsIncomplete,
            format!(
                "Device records incomplete: the GPU's idle {idle_s} cannot be blamed on the host \
                 or the device, since the trace lacks device work that ran ({}; see the capture \
                 check); kernel times stand",
                ids.join(", ")
            ),
        ));
    }
    None
}

/// True when the device with the most queued idle had nothing in the trace to wait on
/// ([`super::host::dispatch_only`]: the only active device, one stream) and no clock offset
/// is suspected (the first kernel started within [`CLOCK_OFFSET_HINT`] of its launch): its
/// queued gaps are per-kernel dispatch overhead.
fn queued_dispatch(f: &Facts) -> bool {
    let (_, i) = max_claim(f, |_, c| c == Cause::Queued);
    i.is_some_and(|i| super::host::dispatch_only(f, &f.gaps.devices[i]))
        && first_start_delay(f).is_none_or(|d| d <= CLOCK_OFFSET_HINT)
}

/// The verdict of an idle device by its largest pool of lost time (`kind`, `amount` ns).
fn idle_by_pool(
    f: &Facts,
    p: &crate::analysis::host::gaps::DeviceGaps,
    pools: &Pools,
    kind: &str,
    amount: i64,
    idle_s: &str,
) -> (VerdictClass, String) {
    use VerdictClass as V;
    let per_step = |ns: i64| f.per_step_us(ns);
    let dispatch = kind == "queued" && queued_dispatch(f);
    let class = match kind {
        _ if amount == 0 => V::IdleUnexplained,
        "breaks" => V::GraphBreaks,
        "dataloader" => V::DataloaderBound,
        "sync" => V::SyncBound,
        "compile" => V::Compile,
        "launch" => V::LaunchBound,
        "host" | "compute" | "untraced" => V::HostBound,
        "queued" if dispatch => V::LaunchBound,
        "queued" => V::DeviceStalls,
        "comm" | "host_comm" => V::CommunicationBound,
        _ => V::Unknown,
    };
    let text = match kind {
        _ if amount == 0 => format!("GPU idle {idle_s} with no dominant cause found"),
        "breaks" => format!(
            "Graph breaks: GPU idle {idle_s}, {} per step waiting for eager code between \
             compiled graphs ({} breaks per step)",
            fmt_us_sentence(per_step(pools.breaks)),
            count(f.a.compiled.breaks / f.n_steps as u64)
        ),
        "dataloader" => {
            let avg = &f.a.steps.average;
            let share = if avg.total > 0.0 {
                avg.dataloader / avg.total
            } else {
                0.0
            };
            format!(
                "DataLoader-bound: GPU idle {idle_s}, DataLoader {} of the step",
                pct(share)
            )
        }
        "sync" => format!(
            "Sync-bound: GPU idle {idle_s}, {} per step idle after {}",
            fmt_us_sentence(per_step(pools.sync)),
            super::host::syncs_per_step(f.syncs.calls, f.n_steps)
        ),
        "compile" => format!(
            "Compile in the window: GPU idle {idle_s}, {} of compile/autotune work",
            fmt_us_sentence(f.gaps.compile_time as f64 / 1000.0)
        ),
        "launch" => {
            let gaps = p.gaps.iter().filter(|g| host_late_gap(f, p, g)).count();
            let mut v = format!(
                "CPU launch-bound: GPU idle {idle_s}, {} gaps under 1 ms waiting for the host",
                count(gaps as u64)
            );
            if f.launch.kernels > 0 {
                v.push_str(&format!(
                    "; {} of kernels shorter than their launch",
                    pct(f.launch.short_kernels as f64 / f.launch.kernels as f64)
                ));
            }
            v
        }
        "host" => {
            let (al, _) = max_claim(f, |b, c| is_idle_claim(b, c) && c == Cause::Alloc);
            format!(
                "Host-bound: GPU idle {idle_s}, {} per step in gaps of 1 ms and more while the \
                 host {}",
                fmt_us_sentence(per_step(pools.host)),
                if 2 * al > pools.host {
                    "allocated memory (cudaMalloc/cudaFree)"
                } else {
                    "ran other work"
                }
            )
        }
        "compute" => {
            let mut v = format!(
                "Host-bound (CPU work): GPU idle {idle_s}, {} per step while the host ran work \
                 that launches nothing on the GPU",
                fmt_us_sentence(per_step(pools.compute))
            );
            if let Some((Some(name), _, _)) = compute_site(f) {
                v.push_str(&format!(", mostly in {}", super::short(&name, 80)));
            }
            v
        }
        "untraced" => {
            let mut v = format!(
                "Host-bound: GPU idle {idle_s}, {} per step with nothing traced on the host",
                fmt_us_sentence(per_step(pools.untraced))
            );
            if let Some(n) = super::host::untraced_nature(f) {
                v.push_str(&format!("; {n}"));
            }
            v
        }
        "queued" if dispatch => format!(
            "Launch-bound (device side): GPU idle {idle_s}, {} per step between kernels already \
             queued on one stream, with no other stream or device to wait on: per-kernel \
             dispatch overhead",
            fmt_us_sentence(per_step(pools.queued))
        ),
        "queued" => {
            let mut v = format!(
                "Device-side stalls: GPU idle {idle_s} with work already queued ({} per step \
                 waiting on events, other streams or devices)",
                fmt_us_sentence(per_step(pools.queued))
            );
            if let Some(d) = first_start_delay(f) {
                if d > CLOCK_OFFSET_HINT {
                    v.push_str(&format!(
                        "; the first kernel started {} after its launch returned, which \
                         suggests a host/device clock offset in the trace",
                        fmt_us_sentence(d as f64 / 1000.0)
                    ));
                }
            }
            v
        }
        "host_comm" => {
            let mut v = format!(
                "Communication-bound (host side): GPU idle {idle_s}, {} per step while the host \
                 waited in host-side collectives or MPI calls",
                fmt_us_sentence(per_step(pools.host_comm))
            );
            if let Some((name, _, _)) = super::transfer::host_run_collectives(f).first() {
                v.push_str(&format!(", mostly `{}`", super::short(name, 60)));
            }
            v
        }
        _ => format!(
            "Communication-bound: exposed communication {} of the step, GPU idle {idle_s}",
            pct(f.share_of_step(per_step(pools.comm_exposed)))
        ),
    };
    (class, text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::testutil::run;
    use crate::model::build::TraceBuilder;
    use crate::model::CpuKind;

    fn steps(b: &mut TraceBuilder, durs: &[f64]) -> Vec<f64> {
        let mut t = 0.0;
        let mut starts = Vec::new();
        for (i, &d) in durs.iter().enumerate() {
            b.annotation(&format!("ProfilerStep#{}", i + 1), t, d);
            b.op_with_kernel("aten::mm", "gemm", t + d - 30.0, 5.0, t + d - 25.0, 20.0);
            starts.push(t);
            t += d + 1.0;
        }
        starts
    }

    /// A cold window that is mostly one-time start-up (a Dynamo compile and a module load on
    /// another thread, overlapping: counted once) gets "Start-up dominates" with the breakdown
    /// and how to capture a steady state, not a host bound judged on the compile's idle time.
    /// Exposed communication weighs in the verdict capped by the host's wait, as its finding:
    /// a rank whose host launches kernels one by one for most of the step, never waiting for
    /// the device, is launch-bound even with 46 % of its step in an exposed all-reduce.
    #[test]
    fn exposed_communication_the_host_does_not_wait_for_is_not_the_bound() {
        use crate::model::GpuKind;
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        for s in 0..3 {
            let t0 = 1520.0 * s as f64;
            b.annotation(&format!("ProfilerStep#{s}"), t0, 1520.0);
            let c = b.runtime("cudaLaunchKernel", 0, t0 + 1.0, 2.0);
            let comm =
                "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)";
            b.gpu(GpuKind::Kernel, comm, 0, 7, t0 + 5.0, 700.0, c);
            for k in 0..100 {
                let at = t0 + 10.0 + 15.0 * k as f64;
                let ext = b.op("aten::add", at, 14.0);
                let c = b.runtime("cudaLaunchKernel", ext, at + 2.0, 3.0);
                let start = (at + 10.0).max(t0 + 705.0 + 3.0 * k as f64);
                b.gpu(
                    GpuKind::Kernel,
                    "vectorized_elementwise_kernel",
                    0,
                    7,
                    start,
                    3.0,
                    c,
                );
            }
        }
        let t = b.build();
        let d = run(&t);
        let comm = d
            .findings
            .iter()
            .find(|x| x.id == "exposed-communication")
            .expect("exposed-communication");
        assert!(comm.title.contains("46.1% of the step"), "{}", comm.title);
        assert_eq!(d.findings[0].id, "launch-bound", "{:?}", d.findings);
        assert_eq!(d.verdict_class, VerdictClass::LaunchBound, "{}", d.verdict);
        assert!(d.verdict.starts_with("CPU launch-bound"), "{}", d.verdict);
    }

    #[test]
    fn startup_dominates_a_cold_window() {
        let mut b = TraceBuilder::new();
        let st = steps(&mut b, &[5000.0, 100.0, 100.0]);
        b.annotation(
            "_compile.compile_inner (dynamo_timed)",
            st[0] + 10.0,
            4000.0,
        );
        b.cpu(
            CpuKind::Driver,
            "cuModuleLoadData",
            2,
            st[0] + 3000.0,
            1500.0,
        );
        b.cpu(
            CpuKind::Runtime,
            "cudaMalloc_v3020",
            1,
            st[0] + 4600.0,
            100.0,
        );
        let t = b.build();
        let d = run(&t);
        assert_eq!(
            d.verdict_class,
            VerdictClass::StartupDominates,
            "{}",
            d.verdict
        );
        let v = &d.verdict;
        // 10..4010 ∪ 3000..4500 ∪ 4600..4700 = 4.59 ms of the 5.20 ms window (three steps
        // of 5000, 100 and 100 µs, 1 µs apart): 88.2 %
        assert!(
            v.starts_with("Start-up dominates: 88.2% of the window"),
            "{v}"
        );
        assert!(v.contains("4.59 ms of one-time start-up (JIT compile 4.00 ms, context/module load 1.50 ms, first-call allocation 100.0 µs)"), "{v}");
        assert!(v.contains("schedule(wait=1, warmup=1, active=3)"), "{v}");
        assert!(v.contains("CUDA_MODULE_LOADING=EAGER"), "{v}");
        // a `startup` finding above info carries the verdict with its time: the device idle
        // in the start-up, charged once (not to compile-in-window as well)
        let first = &d.findings[0];
        assert_eq!(first.id, "startup", "{:?}", d.findings);
        assert_ne!(first.severity, crate::diagnose::Severity::Info);
        assert!(first
            .title
            .starts_with("One-time start-up: 4.59 ms (88.2% of the window)"));
        let claimed: f64 = d
            .findings
            .iter()
            .filter(|x| {
                [
                    "startup",
                    "compile-in-window",
                    "launch-bound",
                    "gpu-idle-gaps",
                ]
                .contains(&x.id)
            })
            .map(|x| x.recoverable_us)
            .sum();
        // the window is 5.20 ms over three steps: no more than its idle per step is claimed
        assert!(claimed <= 5202.0 / 3.0 + 0.01, "{claimed}");
    }

    /// Below the threshold, or in a warm window, the bound is judged as before.
    #[test]
    fn startup_below_the_threshold_is_judged() {
        let mut b = TraceBuilder::new();
        let st = steps(&mut b, &[2000.0, 2000.0, 2000.0]);
        b.annotation(
            "_compile.compile_inner (dynamo_timed)",
            st[0] + 10.0,
            1500.0,
        );
        let t = b.build();
        let d = run(&t);
        assert_ne!(
            d.verdict_class,
            VerdictClass::StartupDominates,
            "{}",
            d.verdict
        );
    }

    /// A one-pass capture names its start-up by category (allocation by its versioned name's
    /// family included) in the "No steady state" sentence.
    #[test]
    fn no_steady_state_names_the_startup() {
        let mut b = TraceBuilder::new();
        let st = steps(&mut b, &[3000.0]);
        b.annotation(
            "_compile.compile_inner (dynamo_timed)",
            st[0] + 10.0,
            2000.0,
        );
        b.cpu(
            CpuKind::Runtime,
            "cudaMalloc_v3020",
            1,
            st[0] + 2100.0,
            300.0,
        );
        let t = b.build();
        let d = run(&t);
        assert_eq!(
            d.verdict_class,
            VerdictClass::NoSteadyState,
            "{}",
            d.verdict
        );
        let v = &d.verdict;
        assert!(v.contains("2.30 ms of one-time start-up (JIT compile 2.00 ms, first-call allocation 300.0 µs)"), "{v}");
        assert!(!v.contains("CUDA_MODULE_LOADING"), "{v}");
    }
}
