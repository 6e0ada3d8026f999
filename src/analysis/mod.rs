//! Analyses: pure functions from a [`Trace`] to serializable facts.
//!
//! Each module computes one view; [`analyze`] runs them all over one window. Nothing here
//! prints or formats: renderers in [`crate::report`] do that.

pub mod classify;
pub mod devices_db;
pub mod fast;
pub mod gaps;
pub mod gpu;
pub mod gpu_metrics;
pub mod kernels;
pub mod launch;
pub mod ncu;
pub mod ops;
pub mod phases;
pub mod roofline;
pub mod step_timeline;
pub mod steps;
pub mod syncs;
pub mod timeline;

use crate::model::{Interval, Trace};
use crate::window::{self as win, WindowError, WindowSpec};

/// Settings for [`analyze`].
#[derive(Clone, Debug, Default)]
pub struct AnalyzeOptions {
    /// Analyze every step (`--all`); overrides [`AnalyzeOptions::window`].
    pub all_steps: bool,
    /// The window to analyze (default: the automatic steady state, see [`crate::window`]).
    pub window: WindowSpec,
}

/// Everything the views need, computed once.
#[derive(Debug)]
pub struct Analysis {
    /// Steps and their time breakdown (the window's steps; average over them).
    pub steps: steps::StepAnalysis,
    /// The analyzed window's hull ([`win::Window::span`]).
    pub window: Interval,
    /// The analyzed window: steps included and excluded, counted time, compile work.
    pub selection: win::Window,
    /// Annotation phases over the window.
    pub phases: phases::PhaseAnalysis,
    /// Per-device summary.
    pub devices: Vec<gpu::GpuSummary>,
    /// Per-device busy/idle split.
    pub timeline: Vec<timeline::GpuTimeline>,
    /// Kernel table, by total time descending.
    pub kernels: Vec<kernels::KernelRow>,
    /// Operator table, by device self time descending.
    pub ops: Vec<ops::OpRow>,
    /// Device timeline of the representative (median) step, capped.
    pub step_timeline: Option<step_timeline::StepTimeline>,
    /// Sampled GPU metrics per device, NVTX range and gap (Nsight Systems inputs with GPU
    /// metrics only).
    pub gpu_metrics: Option<gpu_metrics::GpuMetricsAnalysis>,
    /// Nsight Compute launches and their weights (`--ncu`, or a CSV alone); set by the caller
    /// with [`ncu::joined`] or [`ncu::standalone`], `None` from [`analyze`].
    pub ncu: Option<ncu::NcuAnalysis>,
}

/// Runs every analysis over the window of `opts`. A window that cannot be selected (e.g.
/// `--steps` on a trace without steps) falls back to every step, with a note saying why;
/// [`try_analyze`] returns the error instead.
pub fn analyze(trace: &Trace, opts: &AnalyzeOptions) -> Analysis {
    let all_steps = steps::analyze_steps(trace);
    let annotations = phases::Annotations::build(trace);
    let selection = match win::select(trace, &all_steps, &annotations, &spec_of(opts)) {
        Ok(w) => w,
        Err(e) => {
            let mut w = win::select_all(trace, &all_steps);
            let note = format!("{e}; every step was analyzed instead");
            w.notes.push(note);
            w
        }
    };
    analyze_window(trace, &all_steps, &annotations, selection)
}

/// Runs every analysis over the window of `opts`, or says why the window is empty.
pub fn try_analyze(trace: &Trace, opts: &AnalyzeOptions) -> Result<Analysis, WindowError> {
    let all_steps = steps::analyze_steps(trace);
    let annotations = phases::Annotations::build(trace);
    let selection = win::select(trace, &all_steps, &annotations, &spec_of(opts))?;
    Ok(analyze_window(trace, &all_steps, &annotations, selection))
}

fn spec_of(opts: &AnalyzeOptions) -> WindowSpec {
    if opts.all_steps {
        WindowSpec::All
    } else {
        opts.window.clone()
    }
}

/// Runs every analysis over a selected window.
fn analyze_window(
    trace: &Trace,
    all_steps: &steps::StepAnalysis,
    annotations: &phases::Annotations,
    selection: win::Window,
) -> Analysis {
    let steps = selection.restrict_steps(all_steps);
    let phases = phases::phases(trace, annotations, &selection);
    let window = selection.span;
    let devices = gpu::gpu_summaries(trace, window);
    let timeline = timeline::gpu_timeline(trace, Some(window));
    let kernels = kernels::kernel_table(trace, window);
    let ops = ops::op_table(trace, window);
    let step_timeline =
        step_timeline::step_timeline(trace, &steps.steps, step_timeline::MAX_EVENTS);
    Analysis {
        steps,
        window,
        selection,
        phases,
        devices,
        timeline,
        kernels,
        ops,
        step_timeline,
        // gaps of 20 µs and more: the profiling guide's "warning" band
        gpu_metrics: gpu_metrics::analyze_gpu_metrics(trace, window, 20_000),
        ncu: None,
    }
}
