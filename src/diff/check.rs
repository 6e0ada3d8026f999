//! `stallscope check`: a [`Comparison`] judged against a budget, for CI.
//!
//! A budget names metrics and the largest regression each may show (documented with an example
//! in `docs/diff.md`):
//!
//! ```toml
//! [budget]
//! step_time = "5%"            # mean step time may grow by at most 5 %
//! gpu_idle_share = 3.0        # GPU idle share of the span may grow by at most 3 points
//! no_new_high_severity = true # no finding of high severity that the baseline did not have
//!
//! [[budget.phase]]
//! path = "## forward ##"      # a phase (annotation path), its device time per step
//! max_regression = "10%"
//!
//! [[budget.kernel]]
//! name = "dgrad_engine"       # every kernel whose name contains this, device time per step
//! max_regression = "10%"
//! ```
//!
//! A metric **fails** when it is over its threshold and, for the step time, the regression is
//! also beyond noise (the Mann–Whitney test of [`super::stats`] says slower). The other metrics
//! have no per-step samples in a report; they fail on the threshold alone, and the step-time
//! test result is stated next to them. A step-time regression that the test cannot judge (too
//! few steps) fails on the threshold alone too, with that said: a CI gate must not pass a 30 %
//! regression because the profile had two steps.
//!
//! With several captures per side, or a per-sample comparison (the sides' batches differ), the
//! step-time metric is the comparison's [`super::repeats::Verdict`], judged against the same
//! limit: it fails on a regression, or on an inconclusive estimate over the limit when the
//! noise could not be measured.
//!
//! The [`Outcome`] tells scripts three cases apart (the command's exit code): `pass` (0),
//! `regression` (1: a budget failed), `inconclusive` (3: nothing failed, but the step-time
//! verdict could not tell: too few steps or runs, or a spread a regression could hide in).

use serde::{Deserialize, Serialize};

use super::repeats::VerdictBasis;
use super::stats::Judgement;
use super::Comparison;

/// A budget file (`--budget stallscope.toml`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetFile {
    /// The `[budget]` table.
    #[serde(default)]
    pub budget: Budget,
}

/// Thresholds.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// Largest step-time regression (`"5%"` or 5).
    #[serde(default)]
    pub step_time: Option<Percent>,
    /// Largest rise of the GPU idle share, percentage points.
    #[serde(default)]
    pub gpu_idle_share: Option<f64>,
    /// Fail on a new finding of high severity.
    #[serde(default)]
    pub no_new_high_severity: bool,
    /// Phases.
    #[serde(default)]
    pub phase: Vec<PhaseBudget>,
    /// Kernels.
    #[serde(default)]
    pub kernel: Vec<KernelBudget>,
}

/// A phase's budget.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseBudget {
    /// Exact phase path.
    pub path: String,
    /// Largest regression of its device time per step.
    pub max_regression: Percent,
}

/// A kernel budget.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelBudget {
    /// Kernels whose name contains this.
    pub name: String,
    /// Largest regression of their device time per step.
    pub max_regression: Percent,
}

/// A percentage, written `"5%"`, `"5"` or 5.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percent(pub f64);

impl<'de> Deserialize<'de> for Percent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(f64),
            I(i64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(v) => Ok(Percent(v)),
            Raw::I(v) => Ok(Percent(v as f64)),
            Raw::S(s) => parse_percent(&s)
                .map(Percent)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// Parses `5%`, `5` or `0.5 %` into percent.
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let t = t.strip_suffix('%').unwrap_or(t).trim();
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("`{s}` is not a percentage (e.g. 5%)")),
    }
}

/// Reads a budget file; errors are one line naming the file.
pub fn read_budget(path: &std::path::Path) -> Result<Budget, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let f: BudgetFile = toml::from_str(&text).map_err(|e| {
        let msg = e.message().to_string();
        match e.span() {
            Some(sp) => format!("{}: byte {}: {msg}", path.display(), sp.start),
            None => format!("{}: {msg}", path.display()),
        }
    })?;
    Ok(f.budget)
}

/// One metric judged.
#[derive(Debug, Clone, Serialize)]
pub struct MetricResult {
    /// What (`step time`, `GPU idle share`, `phase X`, `kernels ~ X`, `new high-severity findings`).
    pub metric: String,
    /// Before (µs per step, percent for the idle share, count for findings).
    pub before: f64,
    /// After.
    pub after: f64,
    /// Change: percent of before (time metrics), points (idle share), count (findings).
    pub change: f64,
    /// The threshold, same unit as `change`.
    pub limit: f64,
    /// Unit of `change` and `limit`: `%`, `points` or `findings`.
    pub unit: &'static str,
    /// Over the threshold and (step time) beyond noise.
    pub failed: bool,
    /// Why, in words.
    pub note: String,
}

/// What `check` concludes, for scripts (the command's exit code: 0, 1, 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every budget within its limit, and the step time judged (exit 0).
    Pass,
    /// A budget failed (exit 1): a regression, or a step-time estimate over the limit that
    /// the noise could not judge.
    Regression,
    /// No budget failed, but the step-time verdict is `inconclusive` (exit 3): too few steps
    /// or runs, or a run-to-run spread that a budget-sized regression could hide in.
    Inconclusive,
}

impl Outcome {
    /// The command's exit code: 0 pass, 1 regression, 3 inconclusive (2 is unreadable input
    /// or bad arguments).
    pub fn exit_code(self) -> i32 {
        match self {
            Outcome::Pass => 0,
            Outcome::Regression => 1,
            Outcome::Inconclusive => 3,
        }
    }
}

/// The outcome of `check`.
#[derive(Debug, Clone, Serialize)]
pub struct CheckResult {
    /// `pass`, `regression` or `inconclusive`.
    pub outcome: Outcome,
    /// Every metric.
    pub metrics: Vec<MetricResult>,
    /// Any failed.
    pub failed: bool,
    /// One line for the CI log.
    pub summary: String,
}

fn rel(before: f64, after: f64) -> f64 {
    if before > 0.0 {
        (after - before) / before * 100.0
    } else if after > 0.0 {
        f64::INFINITY
    } else {
        0.0
    }
}

/// A time metric over some rows (summed per step), failing on its threshold alone.
fn time_metric(
    metric: String,
    rows: &[&super::ItemChange],
    limit: f64,
    note: String,
) -> MetricResult {
    let t = |p: Option<super::Per>| p.map(|v| v.time_us).unwrap_or(0.0);
    let x: f64 = rows.iter().map(|r| t(r.before)).sum();
    let y: f64 = rows.iter().map(|r| t(r.after)).sum();
    let change = rel(x, y);
    MetricResult {
        metric,
        before: x,
        after: y,
        change,
        limit,
        unit: "%",
        failed: change > limit,
        note,
    }
}

/// Judges the comparison against the budget.
pub fn check(c: &Comparison, b: &Budget) -> CheckResult {
    let mut m = Vec::new();
    let st = &c.step_time;
    if let Some(Percent(limit)) = b.step_time {
        let change = rel(st.before.mean_us, st.after.mean_us);
        let over = change > limit;
        let v = &c.verdict;
        let by_verdict = v.basis == VerdictBasis::Runs || v.unit != "step" || {
            // not the same workload: the verdict says the steps cannot be compared
            c.parity.not_comparable.is_some()
        };
        let (failed, note) = if by_verdict {
            // several runs per side, or time per sample: the verdict (judged against the
            // same limit: the command sets `DiffOptions::budget_pct` to it) decides
            let change = v.change_pct.unwrap_or(change);
            m.push(MetricResult {
                metric: if v.unit == "step" {
                    "step time".to_string()
                } else {
                    format!("step time per {}", v.unit)
                },
                before: c
                    .repeats
                    .as_ref()
                    .map(|r| r.before.mean_us)
                    .unwrap_or(st.before.mean_us),
                after: c
                    .repeats
                    .as_ref()
                    .map(|r| r.after.mean_us)
                    .unwrap_or(st.after.mean_us),
                change,
                limit,
                unit: "%",
                failed: v.fails_gate(),
                note: v.line(),
            });
            (None, String::new())
        } else {
            let (f, n) = match st.noise.judgement {
                Judgement::Slower => (over, "slower beyond noise".to_string()),
                Judgement::TooFewSteps => (
                    over,
                    format!(
                        "{}; judged on the threshold alone",
                        st.noise.reason.as_deref().unwrap_or("too few steps")
                    ),
                ),
                Judgement::WithinNoise => (false, "within noise".to_string()),
                Judgement::Faster => (false, "faster beyond noise".to_string()),
            };
            (Some(f), n)
        };
        if let Some(failed) = failed {
            m.push(MetricResult {
                metric: "step time".into(),
                before: st.before.mean_us,
                after: st.after.mean_us,
                change,
                limit,
                unit: "%",
                failed,
                note,
            });
        }
    }
    if let Some(limit) = b.gpu_idle_share {
        for d in &c.gpu_timeline {
            let change = (d.idle_share_after - d.idle_share_before) * 100.0;
            m.push(MetricResult {
                metric: format!("GPU idle share (device {})", d.device),
                before: d.idle_share_before * 100.0,
                after: d.idle_share_after * 100.0,
                change,
                limit,
                unit: "points",
                failed: change > limit,
                note: "threshold only (no per-step samples)".into(),
            });
        }
    }
    for p in &b.phase {
        let row = c.phases.iter().find(|r| r.name == p.path);
        let note = if row.is_none() {
            "no such phase on either side".to_string()
        } else {
            "threshold only (no per-step samples)".to_string()
        };
        let rows: Vec<&super::ItemChange> = row.into_iter().collect();
        m.push(time_metric(
            format!("phase {}", p.path),
            &rows,
            p.max_regression.0,
            note,
        ));
    }
    for k in &b.kernel {
        let rows: Vec<&super::ItemChange> = c
            .kernels
            .iter()
            .filter(|r| r.name.contains(&k.name))
            .collect();
        let note = if rows.is_empty() {
            "no kernel matches on either side".to_string()
        } else {
            format!(
                "{} kernel rows; threshold only (no per-step samples)",
                rows.len()
            )
        };
        m.push(time_metric(
            format!("kernels ~ {}", k.name),
            &rows,
            k.max_regression.0,
            note,
        ));
    }
    if b.no_new_high_severity {
        let new: Vec<&str> = c
            .findings
            .iter()
            .filter(|f| {
                f.severity_after.as_deref() == Some("high")
                    && f.severity_before.as_deref() != Some("high")
            })
            .map(|f| f.id.as_str())
            .collect();
        m.push(MetricResult {
            metric: "new high-severity findings".into(),
            before: 0.0,
            after: new.len() as f64,
            change: new.len() as f64,
            limit: 0.0,
            unit: "findings",
            failed: !new.is_empty(),
            note: if new.is_empty() {
                "none".into()
            } else {
                new.join(", ")
            },
        });
    }
    let failed = m.iter().any(|r| r.failed);
    // inconclusive: the step time is budgeted, and its verdict could not tell (with one
    // capture per side that is the noise test's `too few steps`)
    let inconclusive =
        b.step_time.is_some() && c.verdict.kind == super::repeats::VerdictKind::Inconclusive;
    let outcome = if failed {
        Outcome::Regression
    } else if inconclusive {
        Outcome::Inconclusive
    } else {
        Outcome::Pass
    };
    let summary = summary_line(c, &m, outcome);
    CheckResult {
        outcome,
        metrics: m,
        failed,
        summary,
    }
}

fn summary_line(c: &Comparison, m: &[MetricResult], outcome: Outcome) -> String {
    let bad: Vec<String> = m
        .iter()
        .filter(|r| r.failed)
        .map(|r| {
            let sign = if r.change >= 0.0 { "+" } else { "" };
            let unit = if r.unit == "%" { "%" } else { r.unit };
            format!(
                "{} {sign}{:.1}{unit} (limit {:.1}{unit})",
                r.metric, r.change, r.limit
            )
        })
        .collect();
    if outcome == Outcome::Regression {
        format!(
            "stallscope check: REGRESSION: {}; {} of {} budgets failed; {}",
            bad.join(", "),
            bad.len(),
            m.len(),
            c.summary
        )
    } else if outcome == Outcome::Inconclusive {
        format!(
            "stallscope check: INCONCLUSIVE: step time {}; {} budgets within limits",
            c.verdict.reason,
            m.len(),
        )
    } else {
        format!(
            "stallscope check: ok, {} budgets within limits; {}",
            m.len(),
            c.summary
        )
    }
}
