//! Bottleneck diagnosis: a one-line verdict and findings ranked by the time each would recover.
//!
//! Stage 5 of the pipeline (ARCHITECTURE.md): rules over the analyses' facts; it may use the
//! analyses and everything below them, never the report or the CLI.
//!
//! Rules read facts only: the views of [`crate::analysis`] (steps, window, kernel table, GPU
//! timeline, devices) and the facts computed here once for all rules ([`Facts`]: device idle
//! gaps and their host attribution, launch statistics and queue depth, host syncs, the host's
//! wait for the device). One file per rule family:
//!
//! | file | rules |
//! |---|---|
//! | [`host`] | `dataloader-stall`, `host-sync`, `compile-in-window`, `launch-bound`, `gpu-idle-gaps`, `queue-full` |
//! | [`compiled`] | `graph-breaks` |
//! | [`device`] | `fallback-kernel`, `fp32-matmul`, `small-kernels`, `low-occupancy` |
//! | [`transfer`] | `exposed-communication`, `pageable-memcpy`, `memcpy-heavy`, `gpu-memory-pressure` |
//! | [`roofline`] | `memory-bound`, `compute-bound` |
//! | [`memory`] | `memory-fragmentation` (and the live-at-peak evidence of `gpu-memory-pressure`) |
//! | [`patterns`] | `extra-cuda-copy`, `grad-not-set-to-none`, `for-loop-indexing`, `conv-bias-before-batchnorm`, `matmul-dim-not-aligned`, `optimizer-single-tensor` (torch.profiler's patterns) |
//! | [`ranks`] | `rank-straggler`, `comm-imbalance` (across the ranks of a folder, over their facts) |
//! | [`ncu`] | `ncu-register-spills`, `ncu-bank-conflicts`, `ncu-l2-hit-rate`, `ncu-occupancy`, `ncu-warp-stalls`, `ncu-other-rules` (with `--ncu`, or an Nsight Compute CSV alone) |
//!
//! # Recoverable time and double counting
//!
//! Every finding states `recoverable_us`: an upper bound, per step, of the time its fix could
//! remove from the step, and the basis of that bound. Window totals are divided by the number
//! of steps in the window (1 when the window has no steps). Pools of time are never claimed
//! twice:
//!
//! * **Device idle** is split once, to the nanosecond, by host cause
//!   ([`crate::analysis::gaps::Cause`]); each host-side rule claims its causes only: sync →
//!   `host-sync`, compile → `compile-in-window`, dataloader → `dataloader-stall`, launch
//!   overhead and other CPU work in gaps under 1 ms → `launch-bound`, other CPU work in gaps of
//!   1 ms and more and untraced time → `gpu-idle-gaps`; the same host work between the graphs
//!   of a compiled call with graph breaks → `graph-breaks`. Gaps inside CUDA/HIP graph replays
//!   are no host rule's: the device ran the graph without the host there. On several devices a rule claims the
//!   largest per-device figure, never the sum.
//! * **Device busy time** is claimed kernel by kernel: each kernel belongs to the first
//!   device-side rule that claims it (fallback > fp32 GEMM > small kernels > roofline > low
//!   occupancy > the `ncu-*` rules, which weigh each profiled launch by the unclaimed time of
//!   its trace kernel and compose among themselves so that one kernel's ncu findings never
//!   exceed its time; see [`ncu`]). Exposed communication and exposed copies are disjoint by
//!   construction (GPU timeline). A faster device only helps while the host waits for it, so each
//!   device-side bound is capped by the host's wait per step
//!   ([`crate::analysis::gaps::StepWait`]); the uncapped figure is kept in the evidence.
//!
//! # Severity
//!
//! From the recoverable share of the step: **high** ≥ 20 %, **medium** ≥ 5 %, **low** ≥ 1 %,
//! else **info**. Each rule has its own firing threshold (documented in `docs/rules.md`);
//! below it the rule reports nothing, so a healthy trace gets no finding above `info`.

pub mod claims;
pub mod compiled;
pub mod device;
pub mod host;
pub mod memory;
pub mod ncu;
pub mod patterns;
pub mod ranks;
pub mod roofline;
pub mod transfer;
pub mod verdict;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::analysis::gaps::GapAnalysis;
use crate::analysis::launch::LaunchAnalysis;
use crate::analysis::syncs::SyncAnalysis;
use crate::analysis::{Analysis, HostFacts};
use crate::model::{IntervalSet, Ns, Trace};
use crate::par::join;

/// How much a finding matters.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// ≥ 20 % of the step.
    High,
    /// ≥ 5 %.
    Medium,
    /// ≥ 1 %.
    Low,
    /// Below 1 %, or informational.
    Info,
}

impl Severity {
    /// Lower-case name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Severity::High => "high",
            Severity::Medium => "medium",
            Severity::Low => "low",
            Severity::Info => "info",
        }
    }
    /// Severity of a recoverable share of the step (0..1).
    pub fn of_share(share: f64) -> Severity {
        if share >= 0.20 {
            Severity::High
        } else if share >= 0.05 {
            Severity::Medium
        } else if share >= 0.01 {
            Severity::Low
        } else {
            Severity::Info
        }
    }
}

/// A place to look at in Perfetto.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Location {
    /// What it is (`gap`, `kernel`, `op`, `sync`, `annotation`, `launch`, …).
    pub what: String,
    /// Its name.
    pub name: String,
    /// Step it lies in (`ProfilerStep#N`), if any.
    pub step: Option<String>,
    /// Start, µs since `source.trace_start_us`.
    pub start_us: f64,
    /// Duration, µs.
    pub duration_us: f64,
}

/// The numbers behind a finding.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Evidence {
    /// Human-readable facts with their numbers.
    pub facts: Vec<String>,
    /// The same numbers for scripts (µs for times, 0..1 for shares, plain counts).
    pub metrics: BTreeMap<String, f64>,
    /// Where to look (first occurrences, largest instances).
    pub locations: Vec<Location>,
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Finding {
    /// Stable rule id (`launch-bound`, …).
    #[serde(deserialize_with = "crate::text::static_words::one")]
    pub id: crate::text::static_words::Word,
    /// Severity.
    pub severity: Severity,
    /// One-line title.
    pub title: String,
    /// Upper bound of the time the fix could save, µs per step.
    pub recoverable_us: f64,
    /// How `recoverable_us` was computed.
    pub recoverable_basis: String,
    /// Numbers, ops, kernels, steps and timestamps.
    pub evidence: Evidence,
    /// What to do: concrete APIs, flags and code patterns.
    pub advice: Vec<String>,
}

/// The diagnosis of one trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Diagnosis {
    /// One line.
    pub verdict: String,
    /// The verdict's class: a stable id for what bounds the step ([`verdict::VerdictClass`]).
    #[serde(default)]
    pub verdict_class: verdict::VerdictClass,
    /// Findings by recoverable time, descending.
    pub findings: Vec<Finding>,
}

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
    pub patterns: crate::analysis::patterns::TorchPatterns,
    /// Origin of reported times (the trace start), ns.
    pub origin: Ns,
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
        } = a
            .take_host_facts(mask, steps, compile)
            .unwrap_or_else(|| HostFacts::compute(trace, mask, steps, compile));
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

/// Formats ns with an adaptive unit (`812 ns`, `41.3 µs`, `177.59 ms`, `2.41 s`).
pub fn fmt_ns(ns: f64) -> String {
    let a = ns.abs();
    if a < 1000.0 {
        format!("{ns:.0} ns")
    } else if a < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if a < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// Formats µs with an adaptive unit.
pub fn fmt_us(us: f64) -> String {
    fmt_ns(us * 1000.0)
}

/// Formats a 0..1 share as a percentage with one decimal.
pub fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

pub use crate::text::count;

/// Shortens a long (kernel) name to `max` characters, keeping both ends.
pub fn short(s: &str, max: usize) -> String {
    crate::text::shorten_middle(s, max)
}

/// Runs every rule and ranks the findings.
pub fn diagnose(trace: &Trace, a: &Analysis) -> Diagnosis {
    if let Some(n) = a.ncu.as_ref().filter(|n| !n.joined) {
        return ncu::standalone(n);
    }
    let f = Facts::new(trace, a);
    diagnose_facts(&f)
}

/// Runs every rule over precomputed facts.
pub fn diagnose_facts(f: &Facts) -> Diagnosis {
    // the host rules beside the device rules (which share the kernel claims); findings keep
    // the order of a serial run (host first), so ranking ties break the same way
    let (mut findings, device) = join(
        f.a.parallel,
        || {
            let mut out = host::rules(f);
            out.extend(compiled::rules(f));
            out
        },
        || {
            let mut claims = claims::Claims::new(f);
            let mut out = device::rules(f, &mut claims);
            out.extend(roofline::rules(f, &mut claims));
            out.extend(device::late_rules(f, &mut claims));
            out.extend(ncu::rules(f, &mut claims));
            out
        },
    );
    findings.extend(device);
    findings.extend(transfer::rules(f));
    findings.extend(memory::rules(f));
    findings.extend(patterns::rules(f));
    for x in &mut findings {
        x.recoverable_us = round3(x.recoverable_us.max(0.0));
    }
    rank(&mut findings);
    let (verdict_class, verdict) = verdict::classified(f, &findings);
    Diagnosis {
        verdict,
        verdict_class,
        findings,
    }
}

/// Rounds to 3 decimals (ns precision of a µs value).
pub fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// Records a metric of a finding's evidence, rounded by [`round3`] (to the ns for µs values).
pub fn metric(e: &mut Evidence, k: &str, v: f64) {
    e.metrics.insert(k.to_string(), round3(v));
}

/// Ranks by recoverable time (descending), then severity, then id.
pub fn rank(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        b.recoverable_us
            .partial_cmp(&a.recoverable_us)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.severity.cmp(&b.severity))
            .then(a.id.cmp(b.id))
    });
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Helpers for rule unit tests: analyze a built trace over all its steps.
    use super::*;
    use crate::analysis::{analyze, AnalyzeOptions};

    /// The analysis of a built trace over every step.
    pub fn analysis(t: &Trace) -> Analysis {
        analyze(
            t,
            &AnalyzeOptions {
                all_steps: true,
                ..AnalyzeOptions::default()
            },
        )
    }

    /// The diagnosis of a built trace.
    pub fn run(t: &Trace) -> Diagnosis {
        let a = analysis(t);
        diagnose(t, &a)
    }

    /// The finding with an id, if reported.
    pub fn find<'a>(d: &'a Diagnosis, id: &str) -> Option<&'a Finding> {
        d.findings.iter().find(|f| f.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severity_thresholds() {
        assert_eq!(Severity::of_share(0.25), Severity::High);
        assert_eq!(Severity::of_share(0.2), Severity::High);
        assert_eq!(Severity::of_share(0.1), Severity::Medium);
        assert_eq!(Severity::of_share(0.02), Severity::Low);
        assert_eq!(Severity::of_share(0.001), Severity::Info);
    }

    #[test]
    fn ranking_by_recoverable_then_severity() {
        let mk = |id: &'static str, r: f64, s: Severity| Finding {
            id,
            severity: s,
            title: String::new(),
            recoverable_us: r,
            recoverable_basis: String::new(),
            evidence: Evidence::default(),
            advice: vec![],
        };
        let mut v = vec![
            mk("b", 10.0, Severity::Low),
            mk("a", 50.0, Severity::High),
            mk("c", 0.0, Severity::Info),
            mk("d", 0.0, Severity::Low),
        ];
        rank(&mut v);
        let ids: Vec<&str> = v.iter().map(|f| f.id).collect();
        assert_eq!(ids, vec!["a", "b", "d", "c"]);
    }

    #[test]
    fn formatting() {
        assert_eq!(fmt_ns(812.0), "812 ns");
        assert_eq!(fmt_ns(41_250.0), "41.2 µs");
        assert_eq!(fmt_us(177_592.0), "177.59 ms");
        assert_eq!(count(4210), "4,210");
        assert_eq!(short("abcdefghij", 5), "ab…ij");
    }
}
