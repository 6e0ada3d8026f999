//! The shared words of the diagnosis: what a finding is ([`Finding`], its [`Severity`],
//! [`Evidence`] and [`Location`]s), what a diagnosis is ([`Diagnosis`]), and how findings are
//! rounded and ranked. Every rule family builds these; nothing here reads a trace or a rule.
//!
//! The verdict's class ([`VerdictClass`]) is defined in [`super::verdict`], beside the
//! sentences that choose it, and only named here.

use std::collections::BTreeMap;

use serde::Serialize;

use super::verdict::VerdictClass;

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
    /// The verdict's class: a stable id for what bounds the step ([`VerdictClass`]).
    #[serde(default)]
    pub verdict_class: VerdictClass,
    /// Findings by recoverable time, descending.
    pub findings: Vec<Finding>,
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
}
