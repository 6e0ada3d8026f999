//! Helpers for rule unit tests: analyze a built trace over all its steps.

use super::{diagnose, Diagnosis, Finding};
use crate::analysis::{analyze, Analysis, AnalyzeOptions};
use crate::model::Trace;

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
