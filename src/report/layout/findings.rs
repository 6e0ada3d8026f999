//! The findings laid out once: each finding's number, time recoverable per step and share
//! of the step, its first place to look as a sentence, and the counts and sentences around
//! the list.

use crate::diagnose::Severity;
use crate::report::mirrors::FindingInfo as Finding;
use crate::report::units::{self, fmt_us};
use crate::report::Report;

/// One finding with its numbers formatted.
#[derive(Debug, Clone)]
pub struct FindingItem<'a> {
    /// Its place in the list, from 1.
    pub number: usize,
    /// The finding (title, facts and advice are stallscope-written sentences, raw).
    pub finding: &'a Finding,
    /// Time recoverable per step: `1.20 ms`.
    pub recoverable: String,
    /// The same with its unit for a column: `1.20 ms/step`, `-` when nothing is recoverable.
    pub per_step: String,
    /// Recoverable time as a share of the average step, not clamped (an upper bound may
    /// exceed the step); absent without steps.
    pub share_of_step: Option<f64>,
}

impl FindingItem<'_> {
    /// The share of the step clamped to 0..1 (for a bar and its label).
    pub fn share_clamped(&self) -> Option<f64> {
        self.share_of_step.map(|x| x.clamp(0.0, 1.0))
    }

    /// The first place to look as one line: `at 12.3 ms in ProfilerStep#4: kernel name
    /// (41.2 µs)` (names raw).
    pub fn first_location(&self) -> Option<String> {
        self.finding.evidence.locations.first().map(|l| {
            format!(
                "at {}{}: {} {} ({})",
                fmt_us(l.start_us),
                l.step
                    .as_ref()
                    .map(|s| format!(" in {s}"))
                    .unwrap_or_default(),
                l.what,
                l.name,
                fmt_us(l.duration_us)
            )
        })
    }
}

/// Every finding of `findings`, numbered; `r` gives the step for the shares (none for the
/// cross-rank findings).
pub fn items<'a>(r: Option<&Report>, findings: &'a [Finding]) -> Vec<FindingItem<'a>> {
    findings
        .iter()
        .enumerate()
        .map(|(i, f)| FindingItem {
            number: i + 1,
            finding: f,
            recoverable: fmt_us(f.recoverable_us),
            per_step: if f.recoverable_us > 0.0 {
                format!("{}/step", fmt_us(f.recoverable_us))
            } else {
                "-".to_string()
            },
            share_of_step: r.and_then(|r| super::share_of_step(r, f.recoverable_us)),
        })
        .collect()
}

/// The findings above `info`, at most `limit`, numbered in that order, and how many of all
/// the findings are left out.
pub fn above_info(r: &Report, limit: usize) -> (Vec<FindingItem<'_>>, usize) {
    let mut shown: Vec<FindingItem<'_>> = items(Some(r), &r.findings)
        .into_iter()
        .filter(|f| f.finding.severity != Severity::Info)
        .take(limit)
        .collect();
    for (i, f) in shown.iter_mut().enumerate() {
        f.number = i + 1;
    }
    let more = r.findings.len() - shown.len();
    (shown, more)
}

/// `3 more findings in the HTML or JSON report`, without a full stop.
pub fn more_sentence(more: usize) -> String {
    format!(
        "{more} more finding{} in the HTML or JSON report",
        units::plural(more)
    )
}

/// `4 findings` or `1 finding`.
pub fn count(n: usize) -> String {
    format!("{n} finding{}", units::plural(n))
}

/// ` · 12.5% of the step` (or with `sep` before), empty without a share.
pub fn share_phrase(sep: &str, share: Option<f64>) -> String {
    share
        .map(|x| format!("{sep}{} of the step", units::ratio(x)))
        .unwrap_or_default()
}
