//! The host-side facts of the diagnosis: what the host did while the device waited.
//!
//! One family, read from the bottom up:
//!
//! 1. [`sync_calls`]: which host calls wait for the device (a fact of each call's name).
//! 2. [`launch`]: launch overhead per kernel launch, and the depth of the launch queue.
//! 3. [`gaps`]: device idle gaps in the window, split to the nanosecond by host cause (over the
//!    launches and the sync calls), and the host's wait for the device per step.
//! 4. [`syncs`]: sync sites located, with the idle that [`gaps`] attributed to each.
//! 5. [`patterns`]: torch.profiler's anti-patterns among the host operators of the window.
//!
//! [`HostFacts`] holds them all; [`crate::analysis::analyze`] computes it beside the views and
//! the diagnosis takes it once ([`crate::analysis::Analysis::take_host_facts`]).

pub mod gaps;
pub mod launch;
pub mod patterns;
pub mod sync_calls;
pub mod syncs;

use crate::model::{IntervalSet, Trace};
use crate::window::steps;

/// The host-side facts of the diagnosis ([`crate::diagnose::Facts`]): launches and queues,
/// device idle gaps and their host attribution, host syncs. They depend only on the trace and
/// the window, so [`analyze`] computes them beside the views; the diagnosis takes them once
/// ([`Analysis::take_host_facts`]) and computes them itself when they are missing or were
/// computed for another window.
#[derive(Debug)]
pub struct HostFacts {
    /// Launches and queues.
    pub launch: launch::LaunchAnalysis,
    /// Device idle gaps.
    pub gaps: gaps::GapAnalysis,
    /// Host syncs.
    pub syncs: syncs::SyncAnalysis,
    /// torch.profiler's anti-patterns in the window (the pattern rules' facts: the diagnosis
    /// works on facts, never on events).
    pub patterns: patterns::TorchPatterns,
    // the inputs they were computed from
    mask: IntervalSet,
    steps: Vec<steps::Step>,
    compile: IntervalSet,
}

impl HostFacts {
    /// Computes the facts over the counted time `mask` of a window with these steps, this
    /// compile work ([`crate::window::CompileWork::spans`]) and this one-time start-up
    /// ([`crate::analysis::startup::Startup::judged_spans`], a function of the same window).
    pub fn compute(
        trace: &Trace,
        mask: &IntervalSet,
        steps: &[steps::Step],
        compile: &IntervalSet,
        startup: &IntervalSet,
    ) -> HostFacts {
        let syncs = sync_calls::sync_calls(trace);
        Self::compute_with(trace, mask, steps, compile, startup, &syncs)
    }

    /// [`HostFacts::compute`] with the trace's sync calls already found
    /// ([`sync_calls::sync_calls`]).
    pub fn compute_with(
        trace: &Trace,
        mask: &IntervalSet,
        steps: &[steps::Step],
        compile: &IntervalSet,
        startup: &IntervalSet,
        sync_calls: &[(u32, sync_calls::SyncKind)],
    ) -> HostFacts {
        let mut facts =
            Self::compute_but_patterns(trace, mask, steps, compile, startup, sync_calls);
        let mut tt = crate::timings::Timings::nested();
        facts.patterns = patterns::torch_patterns(trace, mask);
        tt.lap("host: torch patterns");
        facts
    }

    /// [`HostFacts::compute_with`] without the torch patterns (left empty): the caller finds
    /// them elsewhere (the analysis, beside the other facts on the other thread, which they
    /// balance) and sets [`HostFacts::patterns`].
    pub fn compute_but_patterns(
        trace: &Trace,
        mask: &IntervalSet,
        steps: &[steps::Step],
        compile: &IntervalSet,
        startup: &IntervalSet,
        sync_calls: &[(u32, sync_calls::SyncKind)],
    ) -> HostFacts {
        let mut tt = crate::timings::Timings::nested();
        let launch = launch::analyze_launches(trace, mask);
        tt.lap("host: launches");
        let gaps =
            gaps::analyze_gaps_with(trace, mask, steps, &launch, compile, startup, sync_calls);
        tt.lap("host: gaps");
        let syncs = syncs::analyze_syncs_with(trace, mask, steps, &gaps, sync_calls);
        tt.lap("host: syncs");
        HostFacts {
            launch,
            gaps,
            syncs,
            patterns: patterns::TorchPatterns::default(),
            mask: mask.clone(),
            steps: steps.to_vec(),
            compile: compile.clone(),
        }
    }

    pub(super) fn computed_from(
        &self,
        mask: &IntervalSet,
        steps: &[steps::Step],
        c: &IntervalSet,
    ) -> bool {
        self.mask == *mask && self.steps == steps && self.compile == *c
    }
}
