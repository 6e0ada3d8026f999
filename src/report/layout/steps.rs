//! The steps table laid out once: a long run folded to its first six and last five steps
//! around a `… N more` line, each step's total and parts formatted, and the average.

use crate::report::units::fmt_us;
use crate::report::{BreakdownUs, Report, StepInfo};

/// Runs longer than this are folded.
const FOLD_OVER: usize = 12;
/// Steps shown before the fold.
const HEAD: usize = 6;
/// Steps shown after the fold.
const TAIL: usize = 5;

/// One line of the steps table.
#[derive(Debug, Clone)]
pub enum StepLine<'a> {
    /// A step and its cells.
    Step(StepRow<'a>),
    /// The fold: `… 89 more`.
    Fold(String),
}

/// A step's cells.
#[derive(Debug, Clone)]
pub struct StepRow<'a> {
    /// The step.
    pub step: &'a StepInfo,
    /// Its name with the iteration's kind (`Iteration#3 decode`), raw.
    pub label: String,
    /// Its name without the `ProfilerStep`/`Iteration` prefix (`#3 decode`), raw: for a
    /// narrow column.
    pub short_label: String,
    /// Its duration.
    pub total: String,
    /// Its parts in [`BreakdownUs::parts`] order.
    pub parts: Vec<String>,
}

/// The parts of a breakdown, formatted, in [`BreakdownUs::parts`] order.
pub fn part_cells(b: &BreakdownUs) -> Vec<String> {
    b.parts().iter().map(|(_, v)| fmt_us(*v)).collect()
}

/// The steps to show, folded when there are more than twelve.
pub fn steps(r: &Report) -> Vec<StepLine<'_>> {
    let n = r.steps.len();
    let fold = n > FOLD_OVER;
    let mut lines = Vec::new();
    for (i, s) in r.steps.iter().enumerate() {
        if fold && i == HEAD {
            lines.push(StepLine::Fold(format!("… {} more", n - HEAD - TAIL)));
        }
        if fold && (HEAD..n - TAIL).contains(&i) {
            continue;
        }
        let short = s
            .name
            .strip_prefix("ProfilerStep")
            .or_else(|| s.name.strip_prefix("Iteration"))
            .unwrap_or(&s.name);
        lines.push(StepLine::Step(StepRow {
            step: s,
            label: s.labelled(&s.name),
            short_label: s.labelled(short),
            total: fmt_us(s.duration_us),
            parts: part_cells(&s.breakdown_us),
        }));
    }
    lines
}

/// The average step: its time and its parts, formatted.
pub fn average(r: &Report) -> (String, Vec<String>) {
    (fmt_us(r.step_time_us), part_cells(&r.breakdown_us))
}

/// The table's rows: each step as its label (`label` picks and escapes it), total and parts;
/// the fold as one cell; last the average, labelled `average`.
pub fn rows(r: &Report, label: impl Fn(&StepRow) -> String, average: &str) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = steps(r)
        .into_iter()
        .map(|line| match line {
            StepLine::Fold(more) => vec![more],
            StepLine::Step(s) => {
                let mut row = vec![label(&s), s.total];
                row.extend(s.parts);
                row
            }
        })
        .collect();
    let (avg, parts) = self::average(r);
    let mut row = vec![average.to_string(), avg];
    row.extend(parts);
    rows.push(row);
    rows
}
