//! Analyses: pure functions from a [`Trace`] to serializable facts.
//!
//! Stage 4 of the pipeline (ARCHITECTURE.md): it may use the window, the ingest (for the Nsight
//! Compute join), the model and the support modules; never the diagnosis or the report.
//!
//! Each module computes one view; [`analyze`] runs them all over one window. Nothing here
//! prints or formats: renderers in [`crate::report`] do that.

use crate::window::steps;

pub mod capture;
pub mod comms;
pub mod compiled;
pub mod devices_db;
pub mod efficiency;
pub mod gpu;
pub mod gpu_metrics;
pub mod graphs;
pub mod host;
pub mod iterations;
pub mod kernels;
pub mod memory;
pub mod ncu;
pub mod ops;
pub mod phases;
pub mod ranks;
pub mod roofline;
pub mod startup;
pub mod step_timeline;
pub mod timeline;
pub mod workload;

pub use host::HostFacts;
// compatibility paths (`crate::analysis::gaps::…`) for code written before the host family
// moved into `host/`; new code names `crate::analysis::host::…`
pub use host::{gaps, launch, patterns, sync_calls, syncs};

// The lower facts every analysis reads, under the names the analyses use for them: kernel
// names ([`crate::model::classify`]), the fast tables ([`crate::model::fast`]) and the steps
// ([`crate::window::steps`], below the window, which is made of steps).

use std::sync::Mutex;

use crate::model::{Interval, IntervalSet, Trace};
use crate::par::join;
use crate::window::{self as win, WindowError, WindowSpec};

/// Settings for [`analyze`].
#[derive(Clone, Debug, Default)]
pub struct AnalyzeOptions {
    /// Analyze every step (`--all`); overrides [`AnalyzeOptions::window`].
    pub all_steps: bool,
    /// The window to analyze (default: the automatic steady state, see [`crate::window`]).
    pub window: WindowSpec,
    /// Threads: 1 runs every analysis on the calling thread, one after another; 2 or more
    /// runs independent analyses side by side on two threads; 0 (the default) runs them side
    /// by side on a machine with several cores when the trace has at most
    /// [`PARALLEL_MAX_EVENTS`] events. Results are identical either way.
    pub threads: usize,
}

/// Largest trace (host + device events) that the default [`AnalyzeOptions::threads`] analyzes
/// on two threads. The second thread's temporaries (and its malloc arena) are alive beside the
/// first's; since the analyses keep fewer temporaries that costs under 1 MB at 4.1 M events
/// (1 GB of JSON: peak 199.1 → 199.5 MB) for 0.05–0.15 s less, so the bound only guards
/// against traces far beyond the corpus (≈ 15 GB of JSON).
pub const PARALLEL_MAX_EVENTS: usize = 64_000_000;

impl AnalyzeOptions {
    /// True when independent analyses run on two threads.
    fn parallel(&self, trace: &Trace) -> bool {
        match self.threads {
            0 => {
                trace.cpu.len() + trace.gpu.len() <= PARALLEL_MAX_EVENTS
                    && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
            }
            n => n > 1,
        }
    }
}

/// Everything the views need, computed once.
#[derive(Debug)]
pub struct Analysis {
    /// Steps and their time breakdown (the window's steps; average over them).
    pub steps: steps::StepAnalysis,
    /// Server iterations: per kind over every iteration found, the judged kind marked
    /// ([`iterations::kinds`]); empty for other steps.
    pub iteration_kinds: Vec<iterations::PhaseStats>,
    /// The analyzed window's hull ([`win::Window::span`]).
    pub window: Interval,
    /// The analyzed window: steps included and excluded, counted time, compile work.
    pub selection: win::Window,
    /// One-time start-up work (context/module load, first-call allocation, JIT compile,
    /// other one-time work) relative to the window ([`startup::startup`]).
    pub startup: startup::Startup,
    /// Annotation phases over the window.
    pub phases: phases::PhaseAnalysis,
    /// Per-device summary.
    pub devices: Vec<gpu::GpuSummary>,
    /// Per-device busy/idle split.
    pub timeline: Vec<timeline::GpuTimeline>,
    /// Kernel table, by total time descending.
    pub kernels: Vec<kernels::KernelRow>,
    /// Copy and fill rows of the kernel table, by total time descending
    /// ([`kernels::copy_table`]).
    pub copies: Vec<kernels::KernelRow>,
    /// Operator table, by device self time descending.
    pub ops: Vec<ops::OpRow>,
    /// Device timeline of the representative (median) step, capped.
    pub step_timeline: Option<step_timeline::StepTimeline>,
    /// Sampled GPU metrics per device, NVTX range and gap (Nsight Systems inputs with GPU
    /// metrics only).
    pub gpu_metrics: Option<gpu_metrics::GpuMetricsAnalysis>,
    /// FLOPs, bytes and MFU per step, phase and operator (absent when no call in the window
    /// has recorded shapes or `flops`).
    pub efficiency: Option<efficiency::Efficiency>,
    /// The roofline points of the window's calls ([`roofline::roofline_checked`] over the
    /// kernels the selection counts, impossible calls left out): the ones `efficiency` was
    /// computed from, and the diagnosis weighs kernels by.
    pub roofline: Vec<roofline::OpPoint>,
    /// Device memory over the window (absent without memory events).
    pub memory: Option<memory::MemoryAnalysis>,
    /// CUDA/HIP graph replays in the window and what the trace holds of their device work.
    pub graphs: graphs::GraphReplays,
    /// `torch.compile`d code in the window: graph breaks, kernels no operator explains.
    pub compiled: compiled::CompiledFacts,
    /// Nsight Compute launches and their weights (`--ncu`, or a CSV alone); set by the caller
    /// with [`ncu::joined`] or [`ncu::standalone`], `None` from [`analyze`].
    pub ncu: Option<ncu::NcuAnalysis>,
    /// The diagnosis' host facts, computed with the views (see [`HostFacts`]).
    host_facts: Mutex<Option<HostFacts>>,
    /// Whether the analyses ran on two threads (the diagnosis does the same).
    pub parallel: bool,
    /// What the capture check reads of the events ([`capture::check_with`]).
    pub capture: capture::CaptureFacts,
    /// What the trace says about the workload of the window (first layer, its input shape,
    /// dtype mix), for `diff`'s same-workload check.
    pub workload: workload::Workload,
    /// Collective message sizes and algorithmic bandwidth per collective kernel name
    /// ([`comms::collective_sizes`]; empty without collective kernels).
    pub communication: Vec<comms::CollectiveSize>,
    /// Whether the window's steps repeat one set of kernels and shapes (what a CUDA graph
    /// needs; [`crate::window::repeats`]).
    pub repetition: crate::window::repeats::Repetition,
}

impl Analysis {
    /// Takes the host facts computed by [`analyze`] if they were computed over this mask,
    /// these steps and this compile work (a caller may have changed the selection since);
    /// `None` when they were taken already or do not match.
    pub fn take_host_facts(
        &self,
        mask: &IntervalSet,
        steps: &[steps::Step],
        compile: &IntervalSet,
    ) -> Option<HostFacts> {
        let mut slot = self.host_facts.lock().unwrap_or_else(|e| e.into_inner());
        slot.take()
            .filter(|h| h.computed_from(mask, steps, compile))
    }
}

/// Runs every analysis over the window of `opts`. A window that cannot be selected (e.g.
/// `--steps` on a trace without steps) falls back to every step, with a note saying why;
/// [`try_analyze`] returns the error instead.
pub fn analyze(trace: &Trace, opts: &AnalyzeOptions) -> Analysis {
    let (par, mut pre) = prepare(trace, opts);
    let mut tt = crate::timings::Timings::nested();
    let compile = std::mem::take(&mut pre.compile);
    let selection =
        match win::select_with(trace, &pre.steps, &pre.annotations, &spec_of(opts), compile) {
            Ok(w) => w,
            Err(e) => {
                // (the rare path finds the compile work again)
                let mut w = win::select_all(trace, &pre.steps);
                let note = format!("{e}; every step was analyzed instead");
                w.notes.push(note);
                w
            }
        };
    tt.lap("analyze window");
    analyze_window(trace, &pre, selection, par)
}

/// Runs every analysis over the window of `opts`, or says why the window is empty.
pub fn try_analyze(trace: &Trace, opts: &AnalyzeOptions) -> Result<Analysis, WindowError> {
    let (par, mut pre) = prepare(trace, opts);
    let mut tt = crate::timings::Timings::nested();
    let compile = std::mem::take(&mut pre.compile);
    let selection = win::select_with(trace, &pre.steps, &pre.annotations, &spec_of(opts), compile)?;
    tt.lap("analyze window");
    Ok(analyze_window(trace, &pre, selection, par))
}

/// What every window needs, found once over the whole trace.
struct Prepared {
    steps: steps::StepAnalysis,
    annotations: crate::window::annotations::Annotations,
    /// Compile work of the steps (moved into the selected window).
    compile: win::CompileWork,
    /// Host calls that wait for the device (for the step timeline and the host facts).
    sync_calls: Vec<(u32, sync_calls::SyncKind)>,
    /// The capture check's facts.
    capture: capture::CaptureFacts,
}

/// Whether to run on two threads, and the [`Prepared`] facts: the steps (cut where device
/// records stop) and their compile work on the calling thread; the launches, the annotations,
/// the sync calls and the capture facts (which read the launches) beside them. The launches
/// are found once, by whichever side asks first: the other side starts with them, and the
/// steps need them only once the host's steps are found (on one thread, the steps find
/// them).
fn prepare(trace: &Trace, opts: &AnalyzeOptions) -> (bool, Prepared) {
    let par = opts.parallel(trace);
    let launches = std::sync::OnceLock::new();
    let found = || crate::window::records::launches(trace);
    let ((steps, compile), (annotations, sync_calls, mut capture)) = join(
        par,
        || {
            let mut tt = crate::timings::Timings::nested();
            let steps = steps::analyze_steps_with(trace, || {
                crate::window::records::stop_of(launches.get_or_init(found))
            });
            tt.lap("analyze steps");
            let compile = win::compile_work(trace, &steps.steps);
            tt.lap("analyze compile");
            (steps, compile)
        },
        || {
            let mut tt = crate::timings::Timings::nested();
            launches.get_or_init(found);
            tt.lap("analyze launches (beside)");
            let a = crate::window::annotations::Annotations::build(trace);
            tt.lap("analyze annotations (beside)");
            let s = sync_calls::sync_calls(trace);
            tt.lap("analyze syncs (beside)");
            let capture = capture::CaptureFacts::of_with(trace, &launches.get_or_init(found).calls);
            tt.lap("analyze capture facts (beside)");
            (a, s, capture)
        },
    );
    capture.records_cut = steps.records_cut;
    let pre = Prepared {
        steps,
        annotations,
        compile,
        sync_calls,
        capture,
    };
    (par, pre)
}

fn spec_of(opts: &AnalyzeOptions) -> WindowSpec {
    if opts.all_steps {
        WindowSpec::All
    } else {
        opts.window.clone()
    }
}

/// A task of [`analyze_window`]: `f`'s result into `slot`, timed under `name`.
fn task<'a, T: Send + Sync + 'a>(
    name: &'static str,
    slot: &'a std::sync::OnceLock<T>,
    f: impl FnOnce() -> T + Send + 'a,
) -> crate::par::Task<'a> {
    Box::new(move || {
        let mut tt = crate::timings::Timings::nested();
        let _ = slot.set(f());
        tt.lap(name);
    })
}

/// Runs every analysis over a selected window: the diagnosis' host facts and the views, on two
/// threads when `par` (each thread takes the next analysis as it frees up, [`par::run_tasks`]).
///
/// [`par::run_tasks`]: crate::par::run_tasks
fn analyze_window(trace: &Trace, pre: &Prepared, selection: win::Window, par: bool) -> Analysis {
    let (all_steps, annotations, sync_calls) = (&pre.steps, &pre.annotations, &pre.sync_calls);
    let steps = selection.restrict_steps(all_steps);
    let iteration_kinds = if all_steps.rule.is_iteration() {
        iterations::kinds(&all_steps.steps, &steps.steps, selection.judged_kind)
    } else {
        Vec::new()
    };
    let window = selection.span;
    // one-time start-up first: the gap attribution charges the device idle in it to start-up
    let mut tt = crate::timings::Timings::nested();
    let startup = startup::startup(trace, &selection);
    tt.lap("analyze startup");
    // every analysis of the window a task; two threads take the next task as they free up
    // (the host facts first: the longest, ~45 % of a Kineto trace's analysis and ~65 % of an
    // Nsight Systems export's). The operator table runs beside the host facts as before: its
    // tree and the gap attribution's temporaries alive together cost +12 MB of peak RSS at
    // 1 GB (211 MB, 0.21x the trace) for 15-25 ms less on two threads
    use std::sync::OnceLock;
    let host = OnceLock::new();
    let ops = OnceLock::new();
    let patterns = OnceLock::new();
    let phases = OnceLock::new();
    let devices = OnceLock::new();
    let timeline = OnceLock::new();
    let memory = OnceLock::new();
    let repetition = OnceLock::new();
    let graphs = OnceLock::new();
    let step_views = OnceLock::new();
    let kernels = OnceLock::new();
    let efficiency = OnceLock::new();
    let mut tasks: Vec<crate::par::Task<'_>> = vec![
        task("analyze host facts", &host, || {
            HostFacts::compute_but_patterns(
                trace,
                &selection.mask,
                &steps.steps,
                &selection.compile.spans,
                &startup.judged_spans,
                sync_calls,
            )
        }),
        task("analyze ops", &ops, || ops::op_table(trace, window)),
        task("analyze torch patterns", &patterns, || {
            host::patterns::torch_patterns(trace, &selection.mask)
        }),
        task("analyze phases", &phases, || {
            phases::phases(trace, annotations, &selection)
        }),
        task("analyze devices", &devices, || {
            gpu::gpu_summaries(trace, window)
        }),
        task("analyze timeline", &timeline, || {
            timeline::gpu_timeline_auto(trace, Some(window))
        }),
        task("analyze memory", &memory, || {
            memory::memory_timeline(trace, window, &steps.steps)
        }),
        // whether the steps repeat
        task("analyze repetition", &repetition, || {
            crate::window::repeats::of(trace, &steps.steps)
        }),
        task("analyze graph replays, compiled code", &graphs, || {
            (
                graphs::graph_replays(trace, &selection.mask),
                compiled::compiled_facts(trace, &selection.mask, &selection.compile.spans),
            )
        }),
        task("analyze step timeline, gpu metrics", &step_views, || {
            (
                step_timeline::step_timeline_with(
                    trace,
                    &steps.steps,
                    step_timeline::MAX_EVENTS,
                    sync_calls,
                ),
                // gaps of 20 µs and more: the profiling guide's "warning" band
                gpu_metrics::analyze_gpu_metrics(trace, window, 20_000),
            )
        }),
        task("analyze kernels", &kernels, || {
            (
                kernels::kernel_table(trace, window),
                kernels::copy_table(trace, window),
            )
        }),
        task("analyze efficiency", &efficiency, || {
            let counts = |gi: u32| selection.counts_activity_at(trace, gi as usize);
            let (points, implausible) = roofline::roofline_checked(trace, &counts);
            let implausible_notes = efficiency::implausible_notes(trace, &implausible);
            let e = efficiency::efficiency(
                trace,
                &points,
                &implausible,
                &steps.steps,
                selection.mask.total(),
                annotations,
                &counts,
            );
            (e, implausible_notes, points)
        }),
    ];
    if !par {
        // on one thread the host facts last, as their result (the gap list) would be alive
        // through every view's temporaries (1 GB, one core: peak RSS 186 -> 210 MB first)
        tasks.rotate_left(1);
    }
    crate::par::run_tasks(par, tasks);
    // every task ran (a panic in one is passed on by run_tasks)
    let ran = "an analysis task did not run";
    let mut host = host.into_inner().expect(ran);
    let ops = ops.into_inner().expect(ran);
    let phases = phases.into_inner().expect(ran);
    let devices = devices.into_inner().expect(ran);
    let timeline = timeline.into_inner().expect(ran);
    let memory = memory.into_inner().expect(ran);
    let repetition = repetition.into_inner().expect(ran);
    let (graphs, compiled) = graphs.into_inner().expect(ran);
    let (step_timeline, gpu_metrics) = step_views.into_inner().expect(ran);
    let (kernels, copies) = kernels.into_inner().expect(ran);
    let (efficiency, implausible_notes, roofline) = efficiency.into_inner().expect(ran);
    host.patterns = patterns.into_inner().expect(ran);
    tt.lap("analyze (tasks)");
    let mut selection = selection;
    selection
        .notes
        .extend(devices_db::missing_peak_notes(&trace.devices));
    selection.notes.extend(implausible_notes);
    let workload = workload::workload(trace, window.start, window.end);
    let communication = comms::collective_sizes(trace, &selection);
    tt.lap("analyze workload, collectives");
    Analysis {
        repetition,
        startup,
        steps,
        iteration_kinds,
        window,
        selection,
        phases,
        devices,
        timeline,
        kernels,
        copies,
        ops,
        step_timeline,
        gpu_metrics,
        efficiency,
        roofline,
        memory,
        graphs,
        compiled,
        ncu: None,
        host_facts: Mutex::new(Some(host)),
        parallel: par,
        capture: {
            let mut c = pre.capture.clone();
            c.collectives = communication.iter().map(|c| c.calls).sum();
            c.unsized_collectives = communication.iter().map(|c| c.calls - c.sized_calls).sum();
            c
        },
        workload,
        communication,
    }
}

/// An Nsight Compute CSV read alone (`stallscope analyze KERNELS.csv`, the MCP `analyze`
/// tool): an empty timeline named after the file (format `ncu_csv`, its kernel count as
/// events, the reader's warnings) and its analysis, whose `ncu` is the CSV's own view
/// ([`ncu::standalone`]: findings weighted by ncu's durations, the kernel table). The report
/// of the pair is the versioned report with the ncu facts, findings and section alone.
pub fn ncu_alone(path: &str) -> Result<(Trace, Analysis), crate::ingest::LoadError> {
    let n = crate::ingest::ncu::read(path)?;
    let mut trace = crate::model::build::TraceBuilder::new().build();
    trace.threads.clear();
    trace.source.path = path.to_string();
    trace.source.format = crate::model::SourceFormat::NcuCsv;
    trace.source.bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    trace.source.events = n.kernels.len() as u64;
    trace.warnings.extend(n.warnings.iter().cloned());
    let mut a = analyze(&trace, &AnalyzeOptions::default());
    a.ncu = Some(ncu::standalone(&n));
    Ok((trace, a))
}
