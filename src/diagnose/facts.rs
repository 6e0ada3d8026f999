//! [`Facts`]: what every rule reads, computed once per diagnosis — the analysis views, the
//! window's counted time and steps, and the host-side facts (launches and queues, device idle
//! gaps and their host cause, host syncs, torch.profiler's patterns), with the per-step
//! conversions every rule uses to size a finding.

use crate::analysis::host::gaps::GapAnalysis;
use crate::analysis::host::launch::LaunchAnalysis;
use crate::analysis::host::syncs::SyncAnalysis;
use crate::analysis::{Analysis, HostFacts};
use crate::model::{IntervalSet, Ns, Trace};

use super::finding::{Location, Severity};

/// Share of the window's counted time from which one-time start-up (module loads, and in a
/// cold window first-call allocation and compile work: [`crate::analysis::startup`])
/// dominates the capture: the verdict then says "Start-up dominates" instead of judging a
/// bound on what is left, which is less than half the capture and not yet the steady state.
pub const STARTUP_DOMINATES: f64 = 0.5;

/// Facts computed once for every rule.
pub struct Facts<'a> {
    /// The trace.
    pub trace: &'a Trace,
    /// The views.
    pub a: &'a Analysis,
    /// Counted time of the window.
    pub mask: &'a IntervalSet,
    /// Its length, ns.
    pub window_ns: Ns,
    /// Steps in the window (at least 1 for divisions).
    pub n_steps: usize,
    /// Launches and queues.
    pub launch: LaunchAnalysis,
    /// Device idle gaps.
    pub gaps: GapAnalysis,
    /// Host syncs.
    pub syncs: SyncAnalysis,
    /// torch.profiler's anti-patterns in the window.
    pub patterns: crate::analysis::host::patterns::TorchPatterns,
    /// Origin of reported times (the trace start), ns.
    pub origin: Ns,
    /// The capture check of the window ([`crate::analysis::capture::check_window`]): the
    /// issues the verdict names and the rules take into account, the same the report prints.
    pub check: crate::analysis::capture::CaptureCheck,
}

impl<'a> Facts<'a> {
    /// Computes the facts of a trace over the analysis window.
    pub fn new(trace: &'a Trace, a: &'a Analysis) -> Facts<'a> {
        let mask = &a.selection.mask;
        let steps = &a.steps.steps;
        let compile = &a.selection.compile.spans;
        // computed by the analysis beside its views, unless the selection changed since
        let HostFacts {
            launch,
            gaps,
            syncs,
            patterns,
            ..
        } = a.take_host_facts(mask, steps, compile).unwrap_or_else(|| {
            HostFacts::compute(trace, mask, steps, compile, &a.startup.judged_spans)
        });
        Facts {
            trace,
            a,
            mask,
            window_ns: mask.total(),
            n_steps: steps.len().max(1),
            launch,
            gaps,
            syncs,
            patterns,
            origin: trace.start(),
            check: crate::analysis::capture::check_window(trace, &a.capture, &a.selection),
        }
    }

    /// Mean step time in the window, ns (window time ÷ steps).
    pub fn step_ns(&self) -> f64 {
        self.window_ns as f64 / self.n_steps as f64
    }

    /// A window total as µs per step.
    pub fn per_step_us(&self, total: Ns) -> f64 {
        total as f64 / self.n_steps as f64 / 1000.0
    }

    /// Share of the step of a per-step µs value (0 for an empty window).
    pub fn share_of_step(&self, us_per_step: f64) -> f64 {
        let s = self.step_ns();
        if s > 0.0 {
            us_per_step * 1000.0 / s
        } else {
            0.0
        }
    }

    /// Why the window's gap and launch figures come from one cold pass, when they do: the
    /// capture has no steady state ([`crate::window::Window::one_pass`]), or one-time start-up
    /// covers at least [`STARTUP_DOMINATES`] of the window. Then no share of a steady-state
    /// step can be judged from them ([`super::host`] caps the findings that rest on them,
    /// docs/rules.md).
    pub fn cold_pass(&self) -> Option<&'static str> {
        if self.a.selection.one_pass.is_some() {
            return Some("the capture has no steady state (nothing repeats)");
        }
        let judged = self.a.startup.judged;
        (judged > 0 && judged as f64 >= STARTUP_DOMINATES * self.window_ns.max(1) as f64)
            .then_some("one-time start-up dominates the window")
    }

    /// Why the device's idle time cannot be charged to the host, when it cannot: the capture
    /// check marks the device records or the host-device timing unreliable (the device ran
    /// work the trace does not hold, or its clock is offset from the host's). The issue ids
    /// and their effects ("unrecorded-device-work (device records are missing, …)"); `None`
    /// when the idle time can be charged.
    pub fn idle_unattributable(&self) -> Option<String> {
        let why: Vec<String> = ["device_records", "host_device_timing"]
            .into_iter()
            .filter_map(|class| {
                let ids: Vec<&str> = self
                    .check
                    .issues
                    .iter()
                    .filter(|i| i.unreliable.contains(&class))
                    .map(|i| i.id)
                    .collect();
                (!ids.is_empty()).then(|| {
                    format!(
                        "{} ({})",
                        ids.join(", "),
                        crate::analysis::capture::class_effect(class)
                    )
                })
            })
            .collect();
        (!why.is_empty()).then(|| why.join("; "))
    }

    /// Severity of a per-step µs value.
    pub fn severity(&self, us_per_step: f64) -> Severity {
        Severity::of_share(self.share_of_step(us_per_step))
    }

    /// The host's wait for the device, µs per step: the cap of device-side savings.
    pub fn device_slack_us(&self) -> f64 {
        let total: Ns = self.gaps.step_wait.iter().map(|w| w.wait).sum();
        self.per_step_us(total)
    }

    /// Step name at a time, if inside a window step.
    pub fn step_at(&self, t: Ns) -> Option<String> {
        let steps = &self.a.steps.steps;
        let i = steps.partition_point(|s| s.span.end <= t);
        (i < steps.len() && steps[i].span.start <= t).then(|| steps[i].name.clone())
    }

    /// A location.
    pub fn location(&self, what: &str, name: &str, start: Ns, dur: Ns) -> Location {
        Location {
            what: what.to_string(),
            name: name.to_string(),
            step: self.step_at(start),
            start_us: (start - self.origin) as f64 / 1000.0,
            duration_us: dur as f64 / 1000.0,
        }
    }
}
