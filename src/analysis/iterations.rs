//! Facts about the iterations of a serving capture (vLLM, SGLang, graph replays): how many of
//! each kind (prefill, decode, mixed), their mean duration and kernel time, and the gaps between
//! them (the scheduler's time on the host). The iterations themselves are found by
//! [`crate::window::iterations`] and become the window's steps; this summarizes those steps.

use serde::Serialize;

use crate::model::Ns;
use crate::window::iterations::{IterationPhase, StepRule};
use crate::window::steps::Step;

/// Iterations of one kind.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct PhaseStats {
    /// `prefill`, `decode`, `mixed` or `unknown`.
    #[serde(deserialize_with = "crate::text::static_words::one")]
    pub phase: crate::text::static_words::Word,
    /// Iterations of this kind found in the trace.
    pub count: u64,
    /// Of them, in the window.
    #[serde(default)]
    pub in_window: u64,
    /// True for the kind the window judges: the dominant kind when the iterations have
    /// several ([`crate::window`]'s *Serving captures*), else every kind in the window.
    #[serde(default)]
    pub judged: bool,
    /// For a kind not judged: its mean duration over the judged kind's (the comparison a
    /// kind seen once or twice gets instead of a verdict of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_judged: Option<f64>,
    /// Mean duration (device-extended span), ns.
    pub mean: f64,
    /// Mean kernel time (non-communication kernels), ns.
    pub mean_kernel: f64,
}

/// Facts about the iterations of a serving capture (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct IterationSummary {
    /// Rule that found them.
    pub rule: StepRule,
    /// Iterations counted (the window's steps).
    pub count: u64,
    /// Per kind, in the order prefill, mixed, decode, unknown (only kinds present).
    pub phases: Vec<PhaseStats>,
    /// Pairs of consecutive counted iterations.
    pub gaps: u64,
    /// Mean host time from one iteration's mark end to the next one's start (the
    /// scheduler's time), ns.
    pub mean_host_gap: f64,
    /// Mean time no iteration covers, from one iteration's end (device work included) to
    /// the next one's start: the GPU has no iteration's work then, ns.
    pub mean_idle_gap: f64,
    /// Sum of those idle gaps, ns.
    pub idle_gap_total: Ns,
}

/// Per kind of iteration over every iteration found (`all`), with the count of those in the
/// window (`in_window`: names of the window's steps) and, when the window judges one kind of
/// several (`judged`, from [`crate::window::Window::judged_kind`]), each other kind's mean
/// duration over the judged kind's. Kinds in the order prefill, mixed, decode, unknown.
pub fn kinds(
    all: &[Step],
    in_window: &[Step],
    judged: Option<Option<IterationPhase>>,
) -> Vec<PhaseStats> {
    let mut out = summarize_phases(all);
    let judged_mean = judged.and_then(|j| {
        out.iter()
            .find(|p| p.phase == j.map_or("unknown", |p| p.as_str()))
            .map(|p| p.mean)
    });
    for p in &mut out {
        p.in_window = in_window
            .iter()
            .filter(|s| s.phase.map_or("unknown", |x| x.as_str()) == p.phase)
            .count() as u64;
        p.judged = match judged {
            Some(j) => p.phase == j.map_or("unknown", |x| x.as_str()),
            None => p.in_window > 0,
        };
        if !p.judged {
            p.vs_judged = judged_mean.filter(|m| *m > 0.0).map(|m| p.mean / m);
        }
    }
    out
}

fn summarize_phases(steps: &[Step]) -> Vec<PhaseStats> {
    let order = [
        Some(IterationPhase::Prefill),
        Some(IterationPhase::Mixed),
        Some(IterationPhase::Decode),
        None,
    ];
    let mut phases = Vec::new();
    for p in order {
        let of: Vec<_> = steps.iter().filter(|s| s.phase == p).collect();
        if of.is_empty() {
            continue;
        }
        let n = of.len() as f64;
        phases.push(PhaseStats {
            phase: p.map_or("unknown", |p| p.as_str()),
            count: of.len() as u64,
            in_window: of.len() as u64,
            judged: true,
            vs_judged: None,
            mean: of.iter().map(|s| s.span.len() as f64).sum::<f64>() / n,
            mean_kernel: of.iter().map(|s| s.breakdown.kernel as f64).sum::<f64>() / n,
        });
    }
    phases
}

/// The summary of the iteration steps `steps` found by `rule`; `None` for other rules.
pub fn summarize(rule: StepRule, steps: &[Step]) -> Option<IterationSummary> {
    if !rule.is_iteration() {
        return None;
    }
    let phases = summarize_phases(steps);
    let (mut host, mut idle, mut gaps): (Ns, Ns, u64) = (0, 0, 0);
    for w in steps.windows(2) {
        // only consecutive iterations (a window may skip some)
        if w[0]
            .number
            .zip(w[1].number)
            .is_some_and(|(a, b)| b == a + 1)
        {
            gaps += 1;
            host += (w[1].host_span.start - w[0].host_span.end).max(0);
            idle += (w[1].span.start - w[0].span.end).max(0);
        }
    }
    let per = |v: Ns| {
        if gaps > 0 {
            v as f64 / gaps as f64
        } else {
            0.0
        }
    };
    Some(IterationSummary {
        rule,
        count: steps.len() as u64,
        phases,
        gaps,
        mean_host_gap: per(host),
        mean_idle_gap: per(idle),
        idle_gap_total: idle,
    })
}
