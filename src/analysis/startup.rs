//! One-time start-up: what a process pays once, before (or while) it reaches its steady state.
//!
//! Four categories ([`StartupKind`]), each measured as the **wall-clock union across
//! threads** of its host spans (a module load on one thread and a compile on another at the
//! same time count once):
//!
//! | category | spans |
//! |---|---|
//! | context / module load | context creation (`cuInit`, `cuCtxCreate*`, `cuDevicePrimaryCtxRetain`, `cudaInitDevice`, `hipInit`, `hipCtxCreate`), module/library loading (`cuModuleLoad*`, `cuLibraryLoad*`, `cudaLibraryLoad*`, `hipModuleLoad*`), and lazy loading ([`lazy_loads`]: the first launch of a kernel, or of a fill (the driver's memset runs a kernel of its own module), that takes at least [`LAZY_LOAD_MIN`] while no device runs anything — with `CUDA_MODULE_LOADING=LAZY`, the default since CUDA 12.2, the driver loads the kernel's module inside that launch) |
//! | first-call allocation | the driver's allocation calls (`cudaMalloc*`, `cudaHostAlloc`, `cuMemAlloc*`, `cuMemCreate`, `hipMalloc*`, `hipHostMalloc`; versioned names such as `cudaMalloc_v3020` by their family, [`crate::model::classify::api_base`]) |
//! | JIT compile | TorchDynamo, AOTAutograd/Inductor, Triton's kernel compilation, nvFuser, TensorRT engine builds, XLA ([`crate::window::compile_kind`]) |
//! | other one-time | autotuning, cuDNN algorithm search, the slow first run of a compiled region |
//!
//! Each is located relative to the analyzed window: before its start, inside its counted
//! time, or after it. **Start-up in the judged time** ([`Startup::judged`]) is the part
//! inside the counted time that is one-time work there: context creation and module loading
//! always (a module loads once), and allocation, compile and the other one-time work only when
//! the window is cold — it holds the capture's first device activity, so nothing ran before
//! it. In a warm window (its warm-up left out) compile work is steady-state recompilation and
//! allocation is the caching allocator growing in the loop: the host's lead accounting keeps
//! its own causes for those.
//!
//! Computed from the window's compile work, whose single pass over the host events also
//! collects the context and allocation calls ([`crate::window::CompileWork::startup_calls`]).

use serde::{Deserialize, Serialize};

use crate::model::{GpuKind, Interval, IntervalSet, Ns, Trace, NONE};
use crate::window::{CompileKind, StartupCall, Window};

/// A first launch of a kernel at least this long (ns) while no device runs anything is lazy
/// module loading: an ordinary launch returns in microseconds, and a launch blocked on a full
/// queue has a busy device.
pub const LAZY_LOAD_MIN: Ns = 1_000_000;

/// The launch calls that lazily loaded a kernel's module: for each kernel (and fill) name, the
/// call that launched its first activity, when that call took at least [`LAZY_LOAD_MIN`] and
/// no device activity ran while it did (no earlier activity ends after the call began). Spans
/// in start order.
pub fn lazy_loads(trace: &Trace) -> Vec<Interval> {
    lazy_loads_hip(trace).0
}

/// [`lazy_loads`], and whether any of them is a HIP call (`hip…`: ROCm loads code objects at
/// first launch too, but `CUDA_MODULE_LOADING` does not apply there).
fn lazy_loads_hip(trace: &Trace) -> (Vec<Interval>, bool) {
    let mut hip = false;
    let mut seen = vec![false; trace.names.len()];
    let mut cand: Vec<Interval> = Vec::new();
    for g in &trace.gpu {
        if !matches!(g.kind, GpuKind::Kernel | GpuKind::Memset) || g.launch == NONE {
            continue;
        }
        let n = g.name.0 as usize;
        if n >= seen.len() || seen[n] {
            continue;
        }
        seen[n] = true;
        let c = &trace.cpu[g.launch as usize];
        if c.dur >= LAZY_LOAD_MIN {
            cand.push(c.interval());
            hip |= trace.name(c.name).starts_with("hip");
        }
    }
    if cand.is_empty() {
        return (cand, false);
    }
    // one sweep over the activities in start order: the latest end of those that started
    // before each call returned
    cand.sort_by_key(|c| c.end);
    cand.dedup();
    let mut out = Vec::new();
    let mut max_end: Ns = Ns::MIN;
    let mut acts = trace.gpu.iter().filter(|g| g.is_activity()).peekable();
    for c in cand {
        while let Some(g) = acts.next_if(|g| g.start < c.end) {
            max_end = max_end.max(g.end());
        }
        if max_end <= c.start {
            out.push(c);
        }
    }
    out.sort_by_key(|c| c.start);
    let hip = hip && !out.is_empty();
    (out, hip)
}

/// A category of one-time start-up work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StartupKind {
    /// Context creation and module/library loading.
    ContextModule,
    /// Device and pinned-host allocation by the driver.
    Allocation,
    /// JIT compilation: Dynamo, Inductor, Triton compile, nvFuser, TensorRT, XLA.
    JitCompile,
    /// Autotuning, cuDNN algorithm search, the slow first run of a compiled region.
    OtherOneTime,
}

impl StartupKind {
    /// Label for reports.
    pub fn as_str(&self) -> &'static str {
        match self {
            StartupKind::ContextModule => "context/module load",
            StartupKind::Allocation => "first-call allocation",
            StartupKind::JitCompile => "JIT compile",
            StartupKind::OtherOneTime => "other one-time (autotune, cuDNN search, first run)",
        }
    }

    /// The category of a compile kind.
    pub fn of_compile(k: CompileKind) -> StartupKind {
        match k {
            CompileKind::ModuleLoad => StartupKind::ContextModule,
            CompileKind::Dynamo
            | CompileKind::Inductor
            | CompileKind::TritonCompile
            | CompileKind::Jit => StartupKind::JitCompile,
            CompileKind::Autotune | CompileKind::CudnnBenchmark | CompileKind::FirstRun => {
                StartupKind::OtherOneTime
            }
        }
    }
}

/// One category of start-up work.
#[derive(Clone, Debug, PartialEq)]
pub struct StartupPart {
    /// The category.
    pub kind: StartupKind,
    /// Wall-clock union of its spans across threads, ns.
    pub total: Ns,
    /// Its spans (compile spans not nested in another of the same kind on one thread; calls).
    pub calls: u64,
    /// The part before the window's start, ns.
    pub before: Ns,
    /// The part inside the window's counted time, ns.
    pub inside: Ns,
    /// The part of `inside` that is start-up in the judged time (see the module docs), ns.
    pub judged: Ns,
    /// The union itself.
    pub spans: IntervalSet,
}

/// One-time start-up work of a trace, relative to the analyzed window.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Startup {
    /// Wall-clock union of every category, ns.
    pub total: Ns,
    /// The part before the window's start, ns.
    pub before: Ns,
    /// The part inside the window's counted time, ns.
    pub inside: Ns,
    /// Start-up in the judged time: the union of the categories' judged parts, ns.
    pub judged: Ns,
    /// Whether the window is cold (holds the capture's first device activity).
    pub cold_window: bool,
    /// Per category, in [`StartupKind`] order; categories without work left out.
    pub parts: Vec<StartupPart>,
    /// The judged time's start-up spans (inside the counted time).
    pub judged_spans: IntervalSet,
    /// Whether modules load lazily through HIP launches (ROCm), where the CUDA module-loading
    /// switch does not apply.
    pub hip_lazy: bool,
}

impl Startup {
    /// The part of one category, if any.
    pub fn part(&self, kind: StartupKind) -> Option<&StartupPart> {
        self.parts.iter().find(|p| p.kind == kind)
    }
}

/// The start-up work of `trace` relative to `window` (see the module docs).
pub fn startup(trace: &Trace, window: &Window) -> Startup {
    let c = &window.compile;
    let mut sets: [(Vec<Interval>, u64); 4] = Default::default();
    let idx = |k: StartupKind| k as usize;
    for k in &c.by_kind {
        let s = &mut sets[idx(StartupKind::of_compile(k.kind))];
        s.0.extend(k.spans.spans().iter().copied());
        s.1 += k.count;
    }
    for &(_, iv, kind) in &c.startup_calls {
        let s = &mut sets[idx(match kind {
            StartupCall::Context => StartupKind::ContextModule,
            StartupCall::Allocation => StartupKind::Allocation,
        })];
        s.0.push(iv);
        s.1 += 1;
    }
    // trace.gpu is in start order: the first activity is the capture's first device work
    let (lazy, hip_lazy) = lazy_loads_hip(trace);
    for iv in lazy {
        let s = &mut sets[idx(StartupKind::ContextModule)];
        s.0.push(iv);
        s.1 += 1;
    }
    let first_device = trace.gpu.iter().find(|g| g.is_activity()).map(|g| g.start);
    let cold_window = first_device.is_some_and(|t| t >= window.span.start && t < window.span.end);
    let start = window.span.start;
    let kinds = [
        StartupKind::ContextModule,
        StartupKind::Allocation,
        StartupKind::JitCompile,
        StartupKind::OtherOneTime,
    ];
    let mut parts = Vec::new();
    for (k, (ivs, calls)) in kinds.into_iter().zip(sets) {
        if ivs.is_empty() {
            continue;
        }
        let spans = IntervalSet::from_intervals(ivs);
        let inside_set = spans.intersect(&window.mask);
        let inside = inside_set.total();
        let judged = if k == StartupKind::ContextModule || cold_window {
            inside
        } else {
            0
        };
        parts.push(StartupPart {
            kind: k,
            total: spans.total(),
            calls,
            before: before(&spans, start),
            inside,
            judged,
            spans,
        });
    }
    let all =
        IntervalSet::from_intervals(parts.iter().flat_map(|p| p.spans.spans().iter().copied()));
    let judged_spans = IntervalSet::from_intervals(
        parts
            .iter()
            .filter(|p| p.judged > 0)
            .flat_map(|p| p.spans.spans().iter().copied()),
    )
    .intersect(&window.mask);
    Startup {
        total: all.total(),
        before: before(&all, start),
        inside: all.intersect(&window.mask).total(),
        judged: judged_spans.total(),
        cold_window,
        parts,
        judged_spans,
        hip_lazy,
    }
}

/// The part of `s` before `t`, ns.
fn before(s: &IntervalSet, t: Ns) -> Ns {
    match s.hull() {
        Some(h) if h.start < t => s.covered_within(Interval::new(h.start, t)),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{analyze, AnalyzeOptions};
    use crate::model::build::TraceBuilder;
    use crate::model::CpuKind;

    fn steps(b: &mut TraceBuilder, durs: &[f64]) -> Vec<f64> {
        let mut t = 0.0;
        let mut starts = Vec::new();
        for (i, &d) in durs.iter().enumerate() {
            b.annotation(&format!("ProfilerStep#{}", i + 1), t, d);
            b.op_with_kernel("aten::mm", "gemm", t + 1.0, 5.0, t + 3.0, 10.0);
            starts.push(t);
            t += d + 1.0;
        }
        starts
    }

    /// Each category is a wall-clock union across threads (overlaps on two threads count
    /// once), versioned call names count by their family, and a cold window (it holds the
    /// first device work) judges every category as start-up.
    #[test]
    fn union_across_threads_and_versioned_names() {
        let mut b = TraceBuilder::new();
        // a cold first pass, no step marks: context and module load on two threads overlapping
        b.cpu(CpuKind::Driver, "cuCtxCreate_v2", 3, 0.0, 40.0);
        b.cpu(CpuKind::Driver, "cuModuleLoadData", 2, 20.0, 230.0);
        b.cpu(CpuKind::Runtime, "cudaMalloc_v3020", 1, 300.0, 10.0);
        b.cpu(CpuKind::Driver, "cuMemAlloc_v2", 2, 305.0, 10.0);
        // not start-up: the stream-ordered allocator, a free, a launch
        b.cpu(CpuKind::Runtime, "cudaMallocAsync_v11020", 1, 330.0, 5.0);
        b.cpu(CpuKind::Runtime, "cudaFree", 1, 340.0, 5.0);
        b.annotation("compile_fx_inner", 400.0, 200.0);
        b.cpu(
            CpuKind::PythonFunction,
            "triton/compiler/compiler.py(300): compile",
            1,
            450.0,
            100.0,
        );
        b.op_with_kernel("aten::mm", "gemm", 700.0, 10.0, 720.0, 80.0);
        let t = b.build();
        let a = analyze(&t, &AnalyzeOptions::default());
        let s = &a.startup;
        let part = |k| s.part(k).unwrap();
        let cm = part(StartupKind::ContextModule);
        assert_eq!((cm.total, cm.calls), (250_000, 2));
        let al = part(StartupKind::Allocation);
        assert_eq!((al.total, al.calls), (15_000, 2));
        let jit = part(StartupKind::JitCompile);
        // Inductor 400..600 and the Triton compile nested in it: one union, two spans
        assert_eq!((jit.total, jit.calls), (200_000, 2));
        assert!(s.part(StartupKind::OtherOneTime).is_none());
        assert_eq!(s.total, 250_000 + 15_000 + 200_000);
        assert!(s.cold_window);
        // whatever the window left out before it, every part is before it or inside it
        assert_eq!(s.before + s.inside, s.total);
        assert_eq!(s.judged, s.inside);
        // the Triton compile is its own compile kind, not autotuning
        let kinds: Vec<CompileKind> = a.selection.compile.by_kind.iter().map(|k| k.kind).collect();
        assert!(kinds.contains(&CompileKind::TritonCompile), "{kinds:?}");
        assert!(!kinds.contains(&CompileKind::Autotune), "{kinds:?}");
    }

    /// In a warm window (the compile warm-up step left out) compile work and allocations are
    /// steady-state costs, not start-up in the judged time; the warm-up step's compile is
    /// start-up before the window, and a step holding a module load is warm-up too.
    #[test]
    fn warm_window_judges_no_steady_state_costs() {
        let mut b = TraceBuilder::new();
        let st = steps(&mut b, &[100.0, 100.0, 100.0, 100.0, 100.0]);
        b.annotation("_compile.compile_inner (dynamo_timed)", st[0] + 20.0, 50.0);
        b.cpu(CpuKind::Runtime, "cudaMalloc", 1, st[2] + 30.0, 10.0);
        b.cpu(CpuKind::Driver, "cuLibraryLoadData", 1, st[4] + 50.0, 20.0);
        let t = b.build();
        let a = analyze(&t, &AnalyzeOptions::default());
        let left: Vec<&str> = a
            .selection
            .excluded
            .iter()
            .map(|e| e.step.as_str())
            .collect();
        assert!(left.contains(&"ProfilerStep#1"), "{left:?}");
        assert!(left.contains(&"ProfilerStep#5"), "{left:?}");
        let s = &a.startup;
        assert!(!s.cold_window);
        let jit = s.part(StartupKind::JitCompile).unwrap();
        assert_eq!((jit.before, jit.inside, jit.judged), (50_000, 0, 0));
        let al = s.part(StartupKind::Allocation).unwrap();
        assert_eq!((al.before, al.inside, al.judged), (0, 10_000, 0));
        let cm = s.part(StartupKind::ContextModule).unwrap();
        assert_eq!((cm.total, cm.before, cm.inside), (20_000, 0, 0));
        assert_eq!(
            (s.total, s.before, s.inside, s.judged),
            (80_000, 50_000, 10_000, 0)
        );
        assert!(s.judged_spans.is_empty());
    }

    /// The device idle in start-up is charged to start-up, once, whatever else ran: a
    /// first-call allocation on another thread and a lazy module load inside the next
    /// kernel's launch call are start-up, not allocation or launch overhead, and the sync
    /// that drained the queue keeps only its own lead (5 µs).
    #[test]
    fn gaps_in_startup_are_charged_to_startup() {
        use crate::analysis::gaps::Cause;
        use crate::analysis::HostFacts;
        use crate::model::GpuKind;
        let mut b = TraceBuilder::new();
        let c1 = b.runtime("cudaLaunchKernel", 0, 0.0, 1.0);
        b.gpu(GpuKind::Kernel, "k1", 0, 7, 2.0, 8.0, c1); // [2, 10)
        b.runtime("cudaStreamSynchronize", 0, 5.0, 6.0); // entered 5 µs before the idle
        b.cpu(CpuKind::Runtime, "cudaMalloc", 2, 20.0, 500.0);
        // k2's first launch: 2 ms on an idle device, a lazy module load
        let c2 = b.runtime("cudaLaunchKernel", 0, 600.0, 2000.0);
        b.gpu(GpuKind::Kernel, "k2", 0, 7, 2610.0, 10.0, c2);
        let t = b.build();
        let a = analyze(&t, &AnalyzeOptions::default());
        assert!(a.startup.cold_window);
        let h = HostFacts::compute(
            &t,
            &a.selection.mask,
            &a.steps.steps,
            &a.selection.compile.spans,
            &a.startup.judged_spans,
        );
        let gap = h.gaps.devices[0]
            .gaps
            .iter()
            .find(|g| g.start == 10_000)
            .unwrap();
        assert_eq!(gap.end, 2_610_000);
        let sp = |c: Cause| gap.split.get(c);
        // [20, 520) allocation and [600, 2600) the lazy load
        assert_eq!(sp(Cause::Startup), 2_500_000);
        assert_eq!(sp(Cause::Sync), 5_000);
        assert_eq!(sp(Cause::Alloc), 0);
        // the 20 µs of launch latency after the load returned (less the 10 µs the kernel took
        // to start) is launch overhead
        assert_eq!(sp(Cause::Launch), 10_000);
        assert_eq!(sp(Cause::Untraced), 85_000);
        assert_eq!(gap.cause, Cause::Startup);
    }

    /// The first launch of a kernel that takes over 1 ms on an idle device is lazy module
    /// loading (context/module load); a later launch of the same kernel, a first launch while
    /// the device is busy (a full queue blocks it) and a short first launch are not.
    #[test]
    fn slow_first_launches_on_an_idle_device_are_lazy_loads() {
        use crate::model::GpuKind;
        let mut b = TraceBuilder::new();
        let c1 = b.runtime("cudaLaunchKernel_v7000", 0, 0.0, 2000.0);
        b.gpu(GpuKind::Kernel, "k_a", 0, 7, 2010.0, 5.0, c1);
        let c2 = b.runtime("cudaLaunchKernel_v7000", 0, 3000.0, 2000.0);
        b.gpu(GpuKind::Kernel, "k_a", 0, 7, 5010.0, 5.0, c2);
        // a long kernel keeps the device busy while k_b's first launch blocks
        let c3 = b.runtime("cudaLaunchKernel", 0, 6000.0, 10.0);
        b.gpu(GpuKind::Kernel, "k_long", 0, 7, 6020.0, 5000.0, c3);
        let c4 = b.runtime("cudaLaunchKernel", 0, 7000.0, 3000.0);
        b.gpu(GpuKind::Kernel, "k_b", 0, 7, 11030.0, 5.0, c4);
        let c5 = b.runtime("cudaLaunchKernel", 0, 12000.0, 500.0);
        b.gpu(GpuKind::Kernel, "k_c", 0, 7, 12510.0, 5.0, c5);
        let t = b.build();
        assert_eq!(lazy_loads(&t), vec![Interval::new(0, 2_000_000)]);
        let a = analyze(&t, &AnalyzeOptions::default());
        let cm = a.startup.part(StartupKind::ContextModule).unwrap();
        assert_eq!((cm.total, cm.calls), (2_000_000, 1));
    }
}
