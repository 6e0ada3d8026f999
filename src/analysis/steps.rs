//! Steps (`ProfilerStep#N`) and the per-step time breakdown.
//!
//! SKELETON: to be implemented (see the brief).

use crate::model::{Interval, Ns, Trace};
use serde::Serialize;

/// Time of one step split by role; the parts sum to the step duration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Breakdown {
    /// Kernels (not communication).
    pub kernel: Ns,
    /// Memory copies.
    pub memcpy: Ns,
    /// Memory fills.
    pub memset: Ns,
    /// Communication kernels and host collectives.
    pub communication: Ns,
    /// Runtime API calls.
    pub runtime: Ns,
    /// DataLoader.
    pub dataloader: Ns,
    /// Other host work (operators, annotations, Python).
    pub cpu_exec: Ns,
    /// The remainder.
    pub other: Ns,
}

/// One step.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// `ProfilerStep#N` (or `"0"` for the whole trace when there are no steps).
    pub name: String,
    /// N, when the name carries it.
    pub number: Option<i64>,
    /// Span after extension to the end of the device work it launched.
    pub span: Interval,
    /// Where the time went.
    pub breakdown: Breakdown,
}

/// A step that was left out, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct DroppedStep {
    /// Step name.
    pub name: String,
    /// Why.
    pub reason: String,
}

/// Result of step analysis.
#[derive(Clone, Debug, Default)]
pub struct StepAnalysis {
    /// Steps in time order.
    pub steps: Vec<Step>,
    /// Per-role mean over the steps (ns, fractional).
    pub average: AverageBreakdown,
    /// First step start to last step end.
    pub span: Interval,
    /// True when the steps came from `ProfilerStep#N` annotations.
    pub from_profiler_steps: bool,
    /// Steps dropped by the tail rule.
    pub dropped: Vec<DroppedStep>,
}

/// Mean breakdown (fractional ns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct AverageBreakdown {
    /// Mean step duration.
    pub total: f64,
    /// Kernels.
    pub kernel: f64,
    /// Copies.
    pub memcpy: f64,
    /// Fills.
    pub memset: f64,
    /// Communication.
    pub communication: f64,
    /// Runtime.
    pub runtime: f64,
    /// DataLoader.
    pub dataloader: f64,
    /// Host work.
    pub cpu_exec: f64,
    /// Remainder.
    pub other: f64,
}

/// Finds the steps and splits each one's time by role.
pub fn analyze_steps(_trace: &Trace) -> StepAnalysis {
    todo!("steps")
}
