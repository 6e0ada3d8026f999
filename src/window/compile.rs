//! Compile work: which host spans are TorchDynamo tracing, AOTAutograd/Inductor compilation,
//! autotuning, cuDNN algorithm search, other JIT compilers or CUDA module loading
//! ([`compile_kind`], by name), plus the slow first run of a compiled region; found once over
//! the whole trace and split by step ([`compile_work`] → [`CompileWork`]).
//!
//! The automatic steady state of [`super`] leaves out the warm-up steps that hold this work
//! (rule 1 of *The automatic steady state* there); the report shows it whatever the window.

use crate::model::fast::{HashMap, NameMemo};
use crate::model::{CpuEvent, CpuKind, Interval, IntervalSet, NameId, Ns, Trace};

use super::median;
use super::steps::Step;

/// Kinds of compile / warm-up work.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum CompileKind {
    /// TorchDynamo frame conversion and bytecode tracing.
    Dynamo,
    /// AOTAutograd and Inductor compilation (lowering, code generation, loading).
    Inductor,
    /// Triton / Inductor autotune benchmarking (timing candidate configurations).
    Autotune,
    /// cuDNN algorithm search (`torch.backends.cudnn.benchmark`).
    CudnnBenchmark,
    /// A slow first run of a compiled region.
    FirstRun,
    /// Other JIT compilers: nvFuser (`compileFusion*`, `FusionKernelRuntime::compile*`),
    /// TensorRT engine builds, XLA compilation.
    Jit,
    /// CUDA module and library loading (`cuModuleLoad*`, `cuLibraryLoad*`,
    /// `cudaLibraryLoad*`, `hipModuleLoad*`): the driver JIT-compiles PTX or loads cubins.
    ModuleLoad,
    /// Triton's JIT compilation of a kernel (`triton/compiler/compiler.py` `compile`,
    /// `triton/runtime/jit.py` `_do_compile`): one-time work, not autotuning.
    TritonCompile,
}

impl CompileKind {
    /// Short label.
    pub fn as_str(&self) -> &'static str {
        match self {
            CompileKind::Dynamo => "dynamo",
            CompileKind::Inductor => "inductor",
            CompileKind::Autotune => "autotune",
            CompileKind::CudnnBenchmark => "cudnn benchmark",
            CompileKind::FirstRun => "first run of a compiled region",
            CompileKind::Jit => "jit compile (nvFuser/TensorRT/XLA)",
            CompileKind::ModuleLoad => "module load",
            CompileKind::TritonCompile => "triton compile",
        }
    }
}

/// Names of record_function ranges (user annotations, ops) that are compile work.
const COMPILE_ANNOTATIONS: &[(&str, CompileKind)] = &[
    ("compile_inner", CompileKind::Dynamo),
    ("convert_frame", CompileKind::Dynamo),
    ("call_user_compiler", CompileKind::Dynamo),
    ("entire_frame_compile", CompileKind::Dynamo),
    ("bytecode_tracing", CompileKind::Dynamo),
    ("dynamo_compile", CompileKind::Dynamo),
    ("OutputGraph.", CompileKind::Dynamo),
    ("create_aot_dispatcher_function", CompileKind::Inductor),
    ("aot_collect_metadata", CompileKind::Inductor),
    ("aot_trace_joint_graph", CompileKind::Inductor),
    ("compile_fx_inner", CompileKind::Inductor),
    ("compile_fx.<locals>", CompileKind::Inductor),
    ("fx_codegen_and_compile", CompileKind::Inductor),
    ("codegen_and_compile", CompileKind::Inductor),
    ("GraphLowering.", CompileKind::Inductor),
    ("Scheduler.__init__", CompileKind::Inductor),
    ("Scheduler.codegen", CompileKind::Inductor),
    ("async_compile.", CompileKind::Inductor),
    ("AsyncCompile.", CompileKind::Inductor),
    ("PyCodeCache.", CompileKind::Inductor),
    ("FxGraphCache.", CompileKind::Inductor),
    ("AOTAutogradCache.", CompileKind::Inductor),
    // XLA's (JAX) `backend_compile_and_load`, before Inductor's `backend_compile` matches it
    ("backend_compile_and_load", CompileKind::Jit),
    ("backend_compile", CompileKind::Inductor),
    ("inductor_compile", CompileKind::Inductor),
    ("compile_file", CompileKind::Inductor),
    ("benchmark_all_configs", CompileKind::Autotune),
    ("autotune_to_one_config", CompileKind::Autotune),
    ("CachingAutotuner.", CompileKind::Autotune),
    ("select_algorithm", CompileKind::Autotune),
    ("AlgorithmSelectorCache", CompileKind::Autotune),
    ("benchmark_example_value", CompileKind::Autotune),
    ("TritonBenchmarkRequest", CompileKind::Autotune),
    ("pad_mm_benchmark", CompileKind::Autotune),
    ("do_bench", CompileKind::Autotune),
    ("cudnnFind", CompileKind::CudnnBenchmark),
    ("cudnn_benchmark", CompileKind::CudnnBenchmark),
    // nvFuser
    ("compileFusion", CompileKind::Jit),
    ("FusionKernelRuntime::compile", CompileKind::Jit),
    ("KernelExecutor::compile", CompileKind::Jit),
    ("FusionExecutorCache::compile", CompileKind::Jit),
    // TensorRT engine builds
    ("buildSerializedNetwork", CompileKind::Jit),
    ("buildEngineWithConfig", CompileKind::Jit),
    ("build_serialized_network", CompileKind::Jit),
    ("build_engine", CompileKind::Jit),
    // XLA
    ("XlaCompile", CompileKind::Jit),
    ("xla::Compile", CompileKind::Jit),
    ("PjRtCompile", CompileKind::Jit),
];

/// Runtime and driver calls that are compile work: module and library loading (the driver
/// JIT-compiles PTX or loads cubins).
const COMPILE_CALLS: &[&str] = &[
    "cuModuleLoad",
    "cuLibraryLoad",
    "cudaLibraryLoad",
    "hipModuleLoad",
];

/// One-time host calls that are not compile work: context creation and first-call device
/// allocation ([`startup_call`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StartupCall {
    /// Driver/runtime initialisation and context creation (`cuInit`, `cuCtxCreate`,
    /// `cuDevicePrimaryCtxRetain`, `cudaInitDevice`, `hipInit`, `hipCtxCreate`, …).
    Context,
    /// Device or pinned-host allocation by the driver (`cudaMalloc*`, `cudaHostAlloc`,
    /// `cuMemAlloc*`, `cuMemCreate`, `hipMalloc*`, `hipHostMalloc`; not the stream-ordered
    /// `cudaMallocAsync`, which serves from a pool by design).
    Allocation,
}

/// Context-creation calls, by family ([`crate::model::classify::api_base`]).
const CONTEXT_CALLS: &[&str] = &[
    "cuInit",
    "cuCtxCreate",
    "cuDevicePrimaryCtxRetain",
    "cudaInitDevice",
    "hipInit",
    "hipCtxCreate",
    "hipDevicePrimaryCtxRetain",
];

/// Allocation calls, by family ([`crate::model::classify::api_base`]).
const ALLOCATION_CALLS: &[&str] = &[
    "cudaMalloc",
    "cudaMallocHost",
    "cudaMallocManaged",
    "cudaMallocPitch",
    "cudaMalloc3D",
    "cudaMallocArray",
    "cudaHostAlloc",
    "cuMemAlloc",
    "cuMemAllocHost",
    "cuMemAllocManaged",
    "cuMemAllocPitch",
    "cuMemHostAlloc",
    "cuMemCreate",
    "hipMalloc",
    "hipMallocManaged",
    "hipMallocPitch",
    "hipHostMalloc",
    "hipExtMallocWithFlags",
];

/// Whether a runtime/driver call is one-time start-up work other than compiling, by its
/// family name (versioned names such as `cudaMalloc_v3020`, `cuMemAlloc_v2` included).
pub fn startup_call(name: &str) -> Option<StartupCall> {
    let base = crate::model::classify::api_base(name);
    if CONTEXT_CALLS.contains(&base) {
        Some(StartupCall::Context)
    } else if ALLOCATION_CALLS.contains(&base) {
        Some(StartupCall::Allocation)
    } else {
        None
    }
}

/// `python_function` frames (`path(line): function`) that are compile work: a path fragment
/// and the functions in it (empty = every function of that file or folder).
const COMPILE_FRAMES: &[(&str, &[&str], CompileKind)] = &[
    ("torch/_dynamo/convert_frame.py", &[], CompileKind::Dynamo),
    (
        "torch/_dynamo/symbolic_convert.py",
        &[],
        CompileKind::Dynamo,
    ),
    ("torch/_dynamo/output_graph.py", &[], CompileKind::Dynamo),
    (
        "torch/_dynamo/bytecode_transformation.py",
        &[],
        CompileKind::Dynamo,
    ),
    (
        "torch/_dynamo/bytecode_analysis.py",
        &[],
        CompileKind::Dynamo,
    ),
    (
        "torch/_inductor/compile_fx.py",
        &[
            "compile_fx",
            "compile_fx_inner",
            "_compile_fx_inner",
            "_compile_fx_main",
            "fx_codegen_and_compile",
            "codegen_and_compile",
            "fw_compiler_base",
            "bw_compiler",
            "inference_compiler",
            "compile_fx_aot",
            "partition_fn",
        ],
        CompileKind::Inductor,
    ),
    ("torch/_inductor/graph.py", &[], CompileKind::Inductor),
    ("torch/_inductor/scheduler.py", &[], CompileKind::Inductor),
    ("torch/_inductor/lowering.py", &[], CompileKind::Inductor),
    ("torch/_inductor/codegen/", &[], CompileKind::Inductor),
    ("torch/_inductor/fx_passes/", &[], CompileKind::Inductor),
    (
        "torch/_inductor/async_compile.py",
        &[],
        CompileKind::Inductor,
    ),
    // codecache.py and aot_autograd.py also hold the runtime wrappers (`CompiledFxGraph`
    // `__call__` in PyTorch ≤ 2.3, the `forward` closure of `aot_module_simplified`)
    (
        "torch/_inductor/codecache.py",
        &[
            "load",
            "load_by_key_path",
            "load_with_key",
            "compile",
            "_lookup_graph",
            "_save_graph",
            "post_compile",
            "load_pybinding",
            "_load_library",
            "write",
        ],
        CompileKind::Inductor,
    ),
    (
        "torch/_functorch/aot_autograd.py",
        &[
            "aot_function",
            "aot_module",
            "aot_module_simplified",
            "create_aot_dispatcher_function",
            "_create_aot_dispatcher_function",
            "aot_export_module",
            "aot_export_joint_simple",
            "prepare_aot_module_simplified",
            "aot_stage1_graph_capture",
            "aot_stage2_compile",
            "dispatch_and_compile",
            "process_inputs",
        ],
        CompileKind::Inductor,
    ),
    (
        "torch/_functorch/partitioners.py",
        &[],
        CompileKind::Inductor,
    ),
    (
        "_aot_autograd/jit_compile_runtime_wrappers.py",
        &[
            "aot_dispatch_base",
            "aot_dispatch_autograd",
            "aot_dispatch_export",
            "aot_stage2_inference",
            "aot_stage2_autograd",
        ],
        CompileKind::Inductor,
    ),
    (
        "_aot_autograd/collect_metadata_analysis.py",
        &[],
        CompileKind::Inductor,
    ),
    (
        "_aot_autograd/dispatch_and_compile_graph.py",
        &[],
        CompileKind::Inductor,
    ),
    (
        "_aot_autograd/traced_function_transforms.py",
        &[],
        CompileKind::Inductor,
    ),
    ("_aot_autograd/graph_capture.py", &[], CompileKind::Inductor),
    (
        "_aot_autograd/autograd_cache.py",
        &[],
        CompileKind::Inductor,
    ),
    (
        "torch/fx/experimental/proxy_tensor.py",
        &[],
        CompileKind::Inductor,
    ),
    (
        "torch/_inductor/select_algorithm.py",
        &[],
        CompileKind::Autotune,
    ),
    (
        "torch/_inductor/autotune_process.py",
        &[],
        CompileKind::Autotune,
    ),
    (
        "torch/_inductor/runtime/benchmarking.py",
        &[],
        CompileKind::Autotune,
    ),
    (
        "torch/_inductor/runtime/triton_heuristics.py",
        &[
            "benchmark_all_configs",
            "autotune_to_one_config",
            "bench",
            "precompile",
            "_precompile_config",
            "_make_launchers",
            "coordinate_descent_tuning",
        ],
        CompileKind::Autotune,
    ),
    (
        "triton/testing.py",
        &["do_bench", "do_bench_cudagraph"],
        CompileKind::Autotune,
    ),
    (
        "triton/runtime/autotuner.py",
        &["_bench", "prune_configs"],
        CompileKind::Autotune,
    ),
    (
        "triton/compiler/compiler.py",
        &["compile"],
        CompileKind::TritonCompile,
    ),
    (
        "triton/runtime/jit.py",
        &["_do_compile", "compile"],
        CompileKind::TritonCompile,
    ),
];

/// Compiled regions whose slow first run counts as warm-up.
const COMPILED_REGION_PREFIXES: &[&str] = &["Torch-Compiled Region", "## Call CompiledFxGraph"];

/// Whether a host span is compile work by its name alone, and of which kind.
///
/// Runtime and driver calls are only when they load modules ([`COMPILE_CALLS`]). `python_function` frames (`path(line): function`) are
/// matched by file and function ([`COMPILE_FRAMES`]: e.g. anything in
/// `torch/_dynamo/convert_frame.py`, but only `benchmark_all_configs`/`bench`/… in
/// `triton_heuristics.py`, whose `run` is the steady-state launch path); every other span by
/// the record_function names of Dynamo's `dynamo_timed` phases, Inductor/AOTAutograd
/// compilation, autotuning and cuDNN search ([`COMPILE_ANNOTATIONS`]).
pub fn compile_kind(name: &str, kind: CpuKind) -> Option<CompileKind> {
    match kind {
        CpuKind::Runtime | CpuKind::Driver | CpuKind::OtherRuntime => COMPILE_CALLS
            .iter()
            .any(|c| name.starts_with(c))
            .then_some(CompileKind::ModuleLoad),
        CpuKind::PythonFunction => {
            let (path, func) = split_frame(name)?;
            COMPILE_FRAMES.iter().find_map(|(frag, funcs, k)| {
                (path.contains(frag) && (funcs.is_empty() || funcs.contains(&func))).then_some(*k)
            })
        }
        _ => COMPILE_ANNOTATIONS
            .iter()
            .find_map(|(pat, k)| name.contains(pat).then_some(*k)),
    }
}

/// `torch/_dynamo/convert_frame.py(1234): _compile` → (`torch/_dynamo/convert_frame.py`, `_compile`).
fn split_frame(name: &str) -> Option<(&str, &str)> {
    let close = name.find("): ")?;
    let open = name[..close].rfind('(')?;
    Some((&name[..open], name[close + 3..].trim()))
}

/// Compile work of one kind.
#[derive(Clone, Debug, PartialEq)]
pub struct CompileKindWork {
    /// The kind.
    pub kind: CompileKind,
    /// Union of its spans, ns.
    pub total: Ns,
    /// Its spans not nested in another span of the same kind on the same thread.
    pub count: u64,
    /// The union itself.
    pub spans: IntervalSet,
}

/// A step that contains compile work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileStep {
    /// Index in `StepAnalysis::steps`.
    pub index: usize,
    /// Step name.
    pub name: String,
    /// Compile time inside the step (host ∪ device-extended span), ns.
    pub time: Ns,
}

/// Compile and autotune work found in the trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompileWork {
    /// Union of all compile spans, ns.
    pub total: Ns,
    /// Spans not nested in another compile span on the same thread.
    pub count: u64,
    /// Per kind, in [`CompileKind`] order.
    pub by_kind: Vec<CompileKindWork>,
    /// Steps whose span overlaps compile work, in step order.
    pub steps: Vec<CompileStep>,
    /// Compile time outside every step, ns.
    pub outside_steps: Ns,
    /// The union itself.
    pub spans: IntervalSet,
    /// The trace's context-creation and allocation calls ([`startup_call`]), found in the
    /// same pass: (thread, span, kind), in start order.
    pub startup_calls: Vec<(u32, Interval, StartupCall)>,
}

impl CompileWork {
    /// Kinds of compile work overlapping `iv`.
    pub fn kinds_within(&self, iv: Interval) -> Vec<CompileKind> {
        self.by_kind
            .iter()
            .filter(|k| k.spans.covered_within(iv) > 0)
            .map(|k| k.kind)
            .collect()
    }
}

/// Counts the items not nested in an earlier item of the same thread.
fn count_maximal(items: &mut [(u32, Interval)]) -> u64 {
    items.sort_by(|a, b| {
        (a.0, a.1.start)
            .cmp(&(b.0, b.1.start))
            .then(b.1.end.cmp(&a.1.end))
    });
    let mut n = 0u64;
    let mut cur: Option<(u32, Interval)> = None;
    for &(t, iv) in items.iter() {
        let nested =
            matches!(cur, Some((ct, c)) if ct == t && iv.start >= c.start && iv.end <= c.end);
        if !nested {
            n += 1;
            cur = Some((t, iv));
        }
    }
    n
}

/// Finds compile work over the whole trace and splits it by step.
pub fn compile_work(trace: &Trace, steps: &[Step]) -> CompileWork {
    // by name: Python frames by file and function, other spans by annotation name, runtime
    // and driver calls when they load modules
    let mut frame_kind = NameMemo::new(trace, |n: &str| compile_kind(n, CpuKind::PythonFunction));
    let mut span_kind = NameMemo::new(trace, |n: &str| compile_kind(n, CpuKind::Op));
    let mut call_kind = NameMemo::new(trace, |n: &str| {
        (compile_kind(n, CpuKind::Runtime), startup_call(n))
    });
    let mut marks: Vec<(u32, Interval, CompileKind)> = Vec::new();
    let mut startup_calls = Vec::new();
    // no name is compile work or a startup call, whatever its event's kind: the host events
    // are not read
    let any = crate::model::fast::may_name(trace, |n| {
        [CpuKind::Runtime, CpuKind::PythonFunction, CpuKind::Op]
            .iter()
            .any(|&k| compile_kind(n, k).is_some())
            || startup_call(n).is_some()
    });
    let events = if any { &trace.cpu[..] } else { &[] };
    for e in events {
        let k = match e.kind {
            CpuKind::Runtime | CpuKind::Driver | CpuKind::OtherRuntime => {
                let (k, s) = call_kind.get(e.name);
                if let Some(s) = s {
                    startup_calls.push((e.thread, e.interval(), s));
                }
                k
            }
            CpuKind::PythonFunction => frame_kind.get(e.name),
            _ => span_kind.get(e.name),
        };
        if let Some(k) = k {
            marks.push((e.thread, e.interval(), k));
        }
    }
    marks.extend(
        first_runs(trace)
            .into_iter()
            .map(|e| (e.thread, e.interval(), CompileKind::FirstRun)),
    );

    let mut all: Vec<(u32, Interval)> = marks.iter().map(|m| (m.0, m.1)).collect();
    let count = count_maximal(&mut all);
    let spans = IntervalSet::from_intervals(marks.iter().map(|m| m.1));
    let mut kinds: Vec<CompileKind> = marks.iter().map(|m| m.2).collect();
    kinds.sort();
    kinds.dedup();
    let by_kind = kinds
        .into_iter()
        .map(|k| {
            let mut items: Vec<(u32, Interval)> = marks
                .iter()
                .filter(|m| m.2 == k)
                .map(|m| (m.0, m.1))
                .collect();
            let count = count_maximal(&mut items);
            let spans = IntervalSet::from_intervals(items.iter().map(|i| i.1));
            CompileKindWork {
                kind: k,
                total: spans.total(),
                count,
                spans,
            }
        })
        .collect();

    let mut in_steps = Vec::new();
    let mut covered = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        let whole = step_extent(s);
        covered.push(whole);
        let t = spans.covered_within(whole);
        if t > 0 {
            in_steps.push(CompileStep {
                index: i,
                name: s.name.clone(),
                time: t,
            });
        }
    }
    let outside_steps = spans
        .subtract(&IntervalSet::from_intervals(covered))
        .total();
    CompileWork {
        total: spans.total(),
        count,
        by_kind,
        steps: in_steps,
        outside_steps,
        spans,
        startup_calls,
    }
}

/// Host span ∪ device-extended span of a step.
pub(super) fn step_extent(s: &Step) -> Interval {
    Interval::new(
        s.host_span.start.min(s.span.start),
        s.host_span.end.max(s.span.end),
    )
}

/// First runs of compiled regions that took over 1.5× the median of the later runs and at
/// least 1 ms more.
fn first_runs(trace: &Trace) -> Vec<&CpuEvent> {
    let mut by_name: HashMap<NameId, Vec<&CpuEvent>> = HashMap::default();
    let region = |n: &str| COMPILED_REGION_PREFIXES.iter().any(|p| n.starts_with(p));
    // no compiled region among the names: the host events are not read
    if !crate::model::fast::may_name(trace, region) {
        return Vec::new();
    }
    let mut is_region = NameMemo::new(trace, region);
    for e in &trace.cpu {
        if !matches!(e.kind, CpuKind::Op | CpuKind::UserAnnotation) {
            continue;
        }
        if is_region.get(e.name) {
            by_name.entry(e.name).or_default().push(e);
        }
    }
    let mut out = Vec::new();
    for (_, runs) in by_name {
        // trace.cpu is sorted by start: runs[0] is the first run
        if runs.len() < 2 {
            continue;
        }
        let later: Vec<Ns> = runs[1..].iter().map(|e| e.dur).collect();
        let med = median(&later);
        let first = runs[0];
        if 2 * first.dur > 3 * med && first.dur - med >= 1_000_000 {
            out.push(first);
        }
    }
    out.sort_by_key(|e| e.start);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::build::TraceBuilder;

    /// JIT compilers beside Dynamo/Inductor and the driver's module loading are compile work.
    #[test]
    fn other_jits_and_module_loads_are_compile_work() {
        let jit = Some(CompileKind::Jit);
        for name in [
            "FusionKernelRuntime::compileFusionParallel",
            "FusionKernelRuntime::compileKernel",
            "nvfuser::FusionExecutor::compileFusion",
            "KernelExecutor::compile",
            "FusionExecutorCache::compileFusionAsync",
            "IBuilder::buildSerializedNetwork",
            "IBuilder::buildEngineWithConfig",
            "tensorrt.Builder.build_serialized_network",
            "torch_tensorrt build_engine",
            "XlaCompile",
            "xla::Compile",
            "PjRtCompile",
            "backend_compile_and_load",
        ] {
            assert_eq!(compile_kind(name, CpuKind::UserAnnotation), jit, "{name}");
        }
        for name in [
            "cuModuleLoadData",
            "cuModuleLoadDataEx",
            "cuLibraryLoadData",
            "cuLibraryLoadFromFile",
            "cudaLibraryLoadData",
            "hipModuleLoadData",
        ] {
            assert_eq!(
                compile_kind(name, CpuKind::Driver),
                Some(CompileKind::ModuleLoad),
                "{name}"
            );
        }
        assert_eq!(compile_kind("cudaLaunchKernel", CpuKind::Runtime), None);
        assert_eq!(compile_kind("cuModuleGetFunction", CpuKind::Driver), None);
        // counted in the window's compile report, on any thread
        let mut b = TraceBuilder::new();
        b.cpu(CpuKind::Driver, "cuModuleLoadData", 2, 100.0, 300.0);
        b.annotation("FusionKernelRuntime::compileFusionParallel", 600.0, 200.0);
        let t = b.build();
        let w = compile_work(&t, &[]);
        assert_eq!(w.total, 500 * 1000);
        let kinds: Vec<CompileKind> = w.by_kind.iter().map(|k| k.kind).collect();
        assert_eq!(kinds, vec![CompileKind::Jit, CompileKind::ModuleLoad]);
    }

    #[test]
    fn compile_names() {
        use CompileKind::*;
        let k = |n: &str, kind: CpuKind| compile_kind(n, kind);
        assert_eq!(
            k("_compile.compile_inner", CpuKind::UserAnnotation),
            Some(Dynamo)
        );
        assert_eq!(
            k(
                "compile_fx.<locals>.fw_compiler_base",
                CpuKind::UserAnnotation
            ),
            Some(Inductor)
        );
        assert_eq!(
            k("CachingAutotuner.benchmark_all_configs", CpuKind::Op),
            Some(Autotune)
        );
        assert_eq!(
            k("cudnnFindConvolutionForwardAlgorithmEx", CpuKind::Other),
            Some(CudnnBenchmark)
        );
        assert_eq!(k("cudnnFind", CpuKind::Runtime), None);
        let py = |n: &str| compile_kind(n, CpuKind::PythonFunction);
        assert_eq!(
            py("torch/_dynamo/symbolic_convert.py(912): step"),
            Some(Dynamo)
        );
        assert_eq!(
            py("/usr/lib/python3/site-packages/torch/_inductor/runtime/triton_heuristics.py(880): benchmark_all_configs"),
            Some(Autotune)
        );
        // steady-state frames of the same files
        assert_eq!(
            py("torch/_inductor/runtime/triton_heuristics.py(1283): run"),
            None
        );
        assert_eq!(py("torch/_functorch/aot_autograd.py(1126): forward"), None);
        assert_eq!(py("torch/_inductor/compile_fx.py(1767): run"), None);
        assert_eq!(
            py("torch/_dynamo/eval_frame.py(791): compile_wrapper"),
            None
        );
        assert_eq!(
            py("torch/_inductor/compile_worker/subproc_pool.py(228): _read_thread"),
            None
        );
        assert_eq!(py("flashinfer/autotuner.py(400): choose_one"), None);
        assert_eq!(py("not a frame"), None);
    }
}
