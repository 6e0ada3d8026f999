//! Analyses: pure functions from a [`Trace`] to serializable facts.
//!
//! Each module computes one view; [`analyze`] runs them all over one window. Nothing here
//! prints or formats: renderers in [`crate::report`] do that.

pub mod classify;
pub mod gpu;
pub mod gpu_metrics;
pub mod kernels;
pub mod ops;
pub mod step_timeline;
pub mod steps;
pub mod timeline;

use crate::model::{Interval, Trace};

/// Settings for [`analyze`].
#[derive(Clone, Debug, Default)]
pub struct AnalyzeOptions {
    /// Analyze every step (today the only mode; an automatic steady-state window comes later).
    pub all_steps: bool,
}

/// Everything the views need, computed once.
#[derive(Debug)]
pub struct Analysis {
    /// Steps and their time breakdown.
    pub steps: steps::StepAnalysis,
    /// The analyzed window (the all-steps span).
    pub window: Interval,
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
}

/// Runs every analysis over the trace.
pub fn analyze(trace: &Trace, _opts: &AnalyzeOptions) -> Analysis {
    let steps = steps::analyze_steps(trace);
    let window = steps.span;
    let devices = gpu::gpu_summaries(trace, window);
    let timeline = timeline::gpu_timeline(trace, Some(window));
    let kernels = kernels::kernel_table(trace, window);
    let ops = ops::op_table(trace, window);
    let step_timeline =
        step_timeline::step_timeline(trace, &steps.steps, step_timeline::MAX_EVENTS);
    Analysis {
        steps,
        window,
        devices,
        timeline,
        kernels,
        ops,
        step_timeline,
        // gaps of 20 µs and more: the profiling guide's "warning" band
        gpu_metrics: gpu_metrics::analyze_gpu_metrics(trace, window, 20_000),
    }
}
