//! One-time start-up: what a process pays once, before (or while) it reaches its steady state.
//!
//! Four categories ([`StartupKind`]), each measured as the **wall-clock union across
//! threads** of its host spans (a module load on one thread and a compile on another at the
//! same time count once):
//!
//! | category | spans |
//! |---|---|
//! | context / module load | context creation (`cuInit`, `cuCtxCreate*`, `cuDevicePrimaryCtxRetain`, `cudaInitDevice`, `hipInit`, `hipCtxCreate`) and module/library loading (`cuModuleLoad*`, `cuLibraryLoad*`, `cudaLibraryLoad*`, `hipModuleLoad*`) |
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

use crate::model::{Interval, IntervalSet, Ns, Trace};
use crate::window::{CompileKind, StartupCall, Window};

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
}
