//! The tools' inputs (JSON-schema'd) and their answers, shaped from a [`Report`].
//!
//! Every answer is cut from the report the command line prints with `--format json` (same
//! fields, same numbers, same units, documented in `docs/json-report.md`): this module
//! selects, sorts and trims rows, and never computes a figure of its own. The one addition is
//! `ts_us` on the locations of `explain_finding`: the `ts` value of the trace file
//! (`source.trace_start_us + start_us`), to find the event in Perfetto or in the JSON.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::report::Report;
use crate::window::{parse_steps, parse_time, WindowSpec};

/// Findings listed by `analyze` without `detail`.
pub const SUMMARY_FINDINGS: usize = 8;
/// Evidence facts and advice lines per finding in that list.
pub const SUMMARY_LINES: usize = 3;
/// Kernels listed by `analyze` without `detail`.
pub const SUMMARY_KERNELS: usize = 5;
/// Rows of a table tool when `top` is not given.
pub const DEFAULT_TOP: usize = 10;

/// Which part of the trace to analyze (default: the steady state, without compile warm-up
/// and outlier steps). `all`, `steps` and `time` exclude each other; `focus` combines.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct WindowInput {
    /// Every step instead of the steady state.
    #[serde(default)]
    pub all: bool,
    /// `ProfilerStep#N` numbers, inclusive: "3..6", "5", "3.." or "..6".
    #[serde(default)]
    pub steps: Option<String>,
    /// A time range in µs from the start of the trace (as `start_us` in answers): "1000..2500".
    #[serde(default)]
    pub time: Option<String>,
    /// Only the time inside annotations (record_function, nn.Module) with this name (exact,
    /// else containing it), e.g. "denoise".
    #[serde(default)]
    pub focus: Option<String>,
}

impl WindowInput {
    /// The window specification, or why the options do not go together.
    pub fn spec(&self) -> Result<WindowSpec, String> {
        let steps = self.steps.as_deref().map(parse_steps).transpose()?;
        let time = self.time.as_deref().map(parse_time).transpose()?;
        WindowSpec::compose(self.all, steps, time, self.focus.clone())
    }
}

/// Input of `analyze`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct AnalyzeInput {
    /// Trace file: Kineto .json / .json.gz (torch.profiler) or Nsight Systems .sqlite; or a
    /// folder of per-rank traces (the cross-rank `ranks` section and the slowest rank's
    /// report); or an Nsight Compute CSV (its `ncu` kernels and findings alone); relative to
    /// the first allowed root.
    pub path: String,
    #[serde(flatten)]
    #[allow(missing_docs)]
    pub window: WindowInput,
    /// The whole report (every finding with all its evidence, full kernel, operator, step and
    /// phase tables) instead of the summary. Large: prefer the table tools.
    #[serde(default)]
    pub detail: bool,
}

/// Input of `kernels`, `ops`, `phases` and `steps`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct TableInput {
    /// Trace file, as for `analyze`.
    pub path: String,
    #[serde(flatten)]
    #[allow(missing_docs)]
    pub window: WindowInput,
    /// Rows to return (default 10; 0 = all).
    #[serde(default)]
    pub top: Option<usize>,
    /// Column to sort by: numbers descending, text ascending; `a.b` for a nested number
    /// (e.g. `breakdown_us.kernel`). Default: the report's order (kernels and operators by
    /// device time, phases depth-first, steps in time order). An unknown column's error lists
    /// the columns.
    #[serde(default)]
    pub sort: Option<String>,
    /// Keep rows whose name (phases: path) contains this text, case-insensitive.
    #[serde(default)]
    pub filter: Option<String>,
}

/// Input of `explain_finding`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct ExplainInput {
    /// Trace file, as for `analyze`.
    pub path: String,
    #[serde(flatten)]
    #[allow(missing_docs)]
    pub window: WindowInput,
    /// The finding's id, as listed by `analyze` (e.g. "launch-bound").
    pub id: String,
}

/// Input of `slice`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct SliceInput {
    /// Trace file: Kineto .json or .json.gz.
    pub path: String,
    #[serde(flatten)]
    #[allow(missing_docs)]
    pub window: WindowInput,
    /// Output file (.json or .json.gz, gzip for .gz) in an existing folder under the allowed
    /// roots. Default: a new file in the server's temporary folder.
    #[serde(default)]
    pub output: Option<String>,
}

/// Input of `diff`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct DiffInput {
    /// The baseline: a trace (as for `analyze`), a folder of per-rank traces, or a saved JSON
    /// report (`stallscope analyze TRACE --format json -o FILE`); under the allowed roots.
    pub before: String,
    /// The new profile (same kinds).
    pub after: String,
    /// Further captures of the baseline (repeated runs of the same program, after
    /// `before`): the change is judged against the spread between runs (Welch's t on the
    /// logarithms of the run means), as `stallscope diff --before A1 A2 A3 --after B1 B2 B3`.
    #[serde(default)]
    pub before_runs: Vec<String>,
    /// Further captures of the new profile (after `after`).
    #[serde(default)]
    pub after_runs: Vec<String>,
    /// Judge the comparison as `stallscope check --max-regression PCT` does: the step-time
    /// limit in percent (e.g. 5); the answer gets `check` with `outcome` (`pass`,
    /// `regression`, `inconclusive`), its one-line `summary` and every metric. The verdict is
    /// judged against it too (default 5).
    #[serde(default)]
    pub max_regression: Option<f64>,
    #[serde(flatten)]
    #[allow(missing_docs)]
    pub window: WindowInput,
    /// The whole comparison (`stallscope diff --format json`: every kernel, op, phase and
    /// finding row, the three contributor views, the GPU timeline) instead of the summary.
    #[serde(default)]
    pub detail: bool,
}

/// The tables of the table tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    /// `report.kernels`.
    Kernels,
    /// `report.ops`.
    Ops,
    /// `report.phases`.
    Phases,
    /// `report.steps`.
    Steps,
}

impl Table {
    /// Tool and report field name.
    pub fn name(self) -> &'static str {
        match self {
            Table::Kernels => "kernels",
            Table::Ops => "ops",
            Table::Phases => "phases",
            Table::Steps => "steps",
        }
    }
}

fn to_value<T: Serialize>(v: &T) -> Result<Value, String> {
    serde_json::to_value(v).map_err(|e| format!("internal error: serializing the report: {e}"))
}

fn first<T: Clone>(v: &[T], n: usize) -> Vec<T> {
    v.iter().take(n).cloned().collect()
}

/// The answer of `analyze` without `detail`: verdict, findings cut to their top evidence
/// lines and advice, and the headline numbers.
pub fn summary(rep: &Report) -> Result<Value, String> {
    let findings: Vec<Value> = rep
        .findings
        .iter()
        .take(SUMMARY_FINDINGS)
        .map(|f| {
            json!({
                "id": f.id,
                "severity": f.severity,
                "title": f.title,
                "recoverable_us": f.recoverable_us,
                "evidence": first(&f.evidence.facts, SUMMARY_LINES),
                "advice": first(&f.advice, SUMMARY_LINES),
                "more": {
                    "facts": f.evidence.facts.len().saturating_sub(SUMMARY_LINES),
                    "advice": f.advice.len().saturating_sub(SUMMARY_LINES),
                    "locations": f.evidence.locations.len(),
                },
            })
        })
        .collect();
    let kernels: Vec<Value> = rep
        .kernels
        .iter()
        .take(SUMMARY_KERNELS)
        .map(|k| {
            json!({"name": k.name, "category": k.category, "calls": k.calls,
                   "total_us": k.total_us, "share": k.share})
        })
        .collect();
    let w = &rep.window;
    Ok(json!({
        "schema_version": rep.schema_version,
        "generator": rep.generator,
        "source": rep.source,
        "verdict": rep.verdict,
        "findings": findings,
        "findings_not_shown": rep.findings.len().saturating_sub(SUMMARY_FINDINGS),
        "headline": {
            "step_time_us": rep.step_time_us,
            "breakdown_us": rep.breakdown_us,
            "gpu_timeline": rep.gpu_timeline,
            "devices": rep.devices.iter().map(|d| &d.name).collect::<Vec<_>>(),
            "top_kernels": kernels,
        },
        "window": {
            "spec": w.spec,
            "start_us": w.start_us,
            "end_us": w.end_us,
            "duration_us": w.duration_us,
            "steps": w.steps.len(),
            "first_step": w.steps.first(),
            "last_step": w.steps.last(),
            "excluded": w.excluded.len(),
            "compile_us": w.compile_us,
            "focus": w.focus,
            "notes": w.notes,
        },
        "warnings": rep.warnings,
        "ranks": rep.ranks.as_ref().map(ranks_summary),
        "ncu": rep.ncu.as_ref().map(|n| json!({
            "path": n.path,
            "joined": n.joined,
            "launches": n.launches.len(),
            "top_launches": first(&n.launches, SUMMARY_KERNELS),
        })),
        "more": "explain_finding (id) for a finding's full evidence and timestamps; kernels, \
                 ops, phases, steps for the tables; detail=true for the whole report",
    }))
}

/// The `ranks` part of the summary of a folder of per-rank traces: the cross-rank verdict
/// and findings (cut like the rank's own), the slowest and fastest rank, and one short row
/// per rank; the rest of the summary is the full report of the slowest rank.
fn ranks_summary(r: &crate::report::ranks::RanksSection) -> Value {
    json!({
        "folder": r.folder,
        "count": r.count,
        "verdict": r.verdict,
        "findings": r.findings.iter().take(SUMMARY_FINDINGS).map(|f| json!({
            "id": f.id,
            "severity": f.severity,
            "title": f.title,
            "recoverable_us": f.recoverable_us,
            "evidence": first(&f.evidence.facts, SUMMARY_LINES),
        })).collect::<Vec<_>>(),
        "shown": r.shown,
        "slowest_rank": r.slowest_rank,
        "fastest_rank": r.fastest_rank,
        "median_step_time_us": r.median_step_time_us,
        "spread": r.spread,
        "ranks": r.ranks.iter().map(|k| json!({
            "rank": k.rank,
            "step_time_us": k.step_time_us,
            "exposed_comm_us": k.exposed_comm_us,
            "idle_us": k.idle_us,
            "top_finding": k.top_finding.as_ref().map(|f| &f.id),
        })).collect::<Vec<_>>(),
        "skipped": r.skipped,
    })
}

/// The answer of `analyze` with `detail`: the JSON report without its step timeline (the
/// representative step's every kernel, for the HTML chart).
pub fn detail(rep: &Report) -> Result<Value, String> {
    let mut v = to_value(rep)?;
    if let Some(o) = v.as_object_mut() {
        o.remove("step_timeline");
    }
    Ok(v)
}

/// Contributors listed by `diff` without `detail`.
pub const SUMMARY_CONTRIBUTORS: usize = 5;

/// The answer of `diff` without `detail`: the sides' verdicts, the comparison's typed verdict,
/// parity and repeated runs (null with one capture per side), the budget check (null without
/// `max_regression`), the step-time change with the noise test, the top contributors, and the findings resolved, new and changed, cut from the
/// comparison the command prints with `stallscope diff --format json`.
pub fn diff_summary(c: &crate::diff::Comparison) -> Result<Value, String> {
    let side = |s: &crate::diff::SideInfo| {
        json!({"path": s.path, "kind": s.kind, "verdict": s.verdict, "window": s.window,
               "steps": s.steps, "step_range": s.step_range, "devices": s.devices})
    };
    let ids = |status: &str| -> Vec<&str> {
        c.findings
            .iter()
            .filter(|f| f.status == status)
            .map(|f| f.id.as_str())
            .collect()
    };
    let changed: Vec<Value> = c
        .findings
        .iter()
        .filter(|f| f.status == "changed")
        .map(|f| {
            json!({"id": f.id, "severity_before": f.severity_before,
                   "severity_after": f.severity_after,
                   "recoverable_before_us": f.recoverable_before_us,
                   "recoverable_after_us": f.recoverable_after_us})
        })
        .collect();
    Ok(json!({
        "schema_version": c.schema_version,
        "generator": c.generator,
        "before": side(&c.before),
        "after": side(&c.after),
        "caveats": c.caveats,
        "summary": c.summary,
        "verdict": to_value(&c.verdict)?,
        "parity": to_value(&c.parity)?,
        "repeats": to_value(&c.repeats)?,
        "check": to_value(&c.check)?,
        "step_time": to_value(&c.step_time)?,
        "contributors": first(&c.contributors, SUMMARY_CONTRIBUTORS)
            .iter()
            .map(to_value)
            .collect::<Result<Vec<_>, _>>()?,
        "contributors_not_shown": c.contributors.len().saturating_sub(SUMMARY_CONTRIBUTORS),
        "findings": {
            "resolved": ids("resolved"),
            "new": ids("new"),
            "changed": changed,
            "unchanged": ids("unchanged"),
        },
        "more": "detail=true for the whole comparison (kernels, ops, phases, breakdown, GPU \
                 timeline, phase and op contributors); analyze on a side for its findings",
    }))
}

/// Scalar columns of a row, nested one level as `a.b`.
fn columns(row: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in row {
        match v {
            Value::Number(_) | Value::String(_) | Value::Bool(_) => out.push(k.clone()),
            Value::Object(inner) => out.extend(
                inner
                    .iter()
                    .filter(|(_, v)| v.is_number())
                    .map(|(k2, _)| format!("{k}.{k2}")),
            ),
            _ => {}
        }
    }
    out
}

fn column<'a>(row: &'a Value, key: &str) -> Option<&'a Value> {
    match key.split_once('.') {
        Some((a, b)) => row.get(a)?.get(b),
        None => row.get(key),
    }
}

/// One table of the report: rows whose name contains `filter`, sorted by `sort`, the first
/// `top` (0 = all).
pub fn table(
    rep: &Report,
    which: Table,
    top: Option<usize>,
    sort: Option<&str>,
    filter: Option<&str>,
) -> Result<Value, String> {
    let rows = match which {
        Table::Kernels => to_value(&rep.kernels)?,
        Table::Ops => to_value(&rep.ops)?,
        Table::Phases => to_value(&rep.phases)?,
        Table::Steps => to_value(&rep.steps)?,
    };
    let Value::Array(mut rows) = rows else {
        return Err("internal error: a table is not a list".into());
    };
    let total = rows.len();
    let name_key = if which == Table::Phases {
        "path"
    } else {
        "name"
    };
    if let Some(f) = filter.map(str::to_lowercase).filter(|f| !f.is_empty()) {
        rows.retain(|r| {
            r.get(name_key)
                .and_then(Value::as_str)
                .is_some_and(|n| n.to_lowercase().contains(&f))
        });
    }
    if let Some(key) = sort.filter(|s| !s.is_empty()) {
        let known = match rows.first().and_then(Value::as_object) {
            Some(r) => columns(r),
            None => vec![],
        };
        if !rows.is_empty() && !known.iter().any(|k| k == key) {
            return Err(format!(
                "unknown sort column `{key}` for {}; columns: {}",
                which.name(),
                known.join(", ")
            ));
        }
        // numbers descending (absent last), text ascending; stable, so ties keep the
        // report's order
        rows.sort_by(|a, b| {
            use std::cmp::Ordering;
            match (column(a, key), column(b, key)) {
                (Some(Value::String(x)), Some(Value::String(y))) => x.cmp(y),
                (Some(x), Some(y)) if x.is_number() && y.is_number() => {
                    let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
                    y.partial_cmp(&x).unwrap_or(Ordering::Equal)
                }
                (Some(Value::Bool(x)), Some(Value::Bool(y))) => y.cmp(x),
                (Some(v), _) if !v.is_null() => Ordering::Less,
                (_, Some(v)) if !v.is_null() => Ordering::Greater,
                _ => Ordering::Equal,
            }
        });
    }
    let matched = rows.len();
    let top = top.unwrap_or(DEFAULT_TOP);
    if top > 0 {
        rows.truncate(top);
    }
    Ok(json!({
        "table": which.name(),
        "source": rep.source.path,
        "window": rep.window.spec,
        "rows_total": total,
        "rows_matched": matched,
        "rows_shown": rows.len(),
        "sort": sort.unwrap_or("report order"),
        "rows": rows,
    }))
}

/// The answer of `explain_finding`: every finding of that id with all its evidence, each
/// location with its `ts_us` in the trace file.
pub fn explain(rep: &Report, id: &str) -> Result<Value, String> {
    let origin = rep.source.trace_start_us;
    let mut found = Vec::new();
    for f in rep.findings.iter().filter(|f| f.id == id) {
        let mut v = to_value(f)?;
        if let Some(locs) = v
            .pointer_mut("/evidence/locations")
            .and_then(Value::as_array_mut)
        {
            for loc in locs.iter_mut().filter_map(Value::as_object_mut) {
                let start = loc.get("start_us").and_then(Value::as_f64).unwrap_or(0.0);
                loc.insert("ts_us".into(), json!(origin + start));
            }
        }
        found.push(v);
    }
    if found.is_empty() {
        let ids: Vec<&str> = rep.findings.iter().map(|f| f.id).collect();
        return Err(format!(
            "no finding `{id}` in this window; findings: {}",
            if ids.is_empty() {
                "none".to_string()
            } else {
                ids.join(", ")
            }
        ));
    }
    Ok(json!({
        "source": rep.source.path,
        "window": rep.window.spec,
        "verdict": rep.verdict,
        "trace_start_us": origin,
        "findings": found,
        "perfetto": "open the trace in https://ui.perfetto.dev; `start_us` is from the trace's \
                     start (Perfetto's timeline origin), `ts_us` is the event's `ts` in the \
                     file (search it, or use it with `slice` time=`start..end`)",
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_options_compose_and_conflict() {
        let w = |all, steps: Option<&str>, time: Option<&str>, focus: Option<&str>| WindowInput {
            all,
            steps: steps.map(Into::into),
            time: time.map(Into::into),
            focus: focus.map(Into::into),
        };
        assert_eq!(w(false, None, None, None).spec().unwrap(), WindowSpec::Auto);
        assert_eq!(
            w(false, Some("3..6"), None, Some("fwd"))
                .spec()
                .unwrap()
                .to_string(),
            "--steps 3..6 --focus fwd"
        );
        assert_eq!(
            w(false, None, Some("0..200"), None)
                .spec()
                .unwrap()
                .to_string(),
            "--time 0..200"
        );
        assert!(w(true, Some("3"), None, None).spec().is_err());
        assert!(w(false, Some("3"), Some("0..1"), None).spec().is_err());
        assert!(w(false, Some("x..y"), None, None)
            .spec()
            .unwrap_err()
            .contains("step number"));
    }

    #[test]
    fn nested_columns_are_listed_and_read() {
        let row = json!({"name": "a", "dur": 2.0, "bd": {"k": 1.0, "s": "x"}, "l": [1]});
        let mut cols = columns(row.as_object().unwrap());
        cols.sort();
        assert_eq!(cols, vec!["bd.k", "dur", "name"]);
        assert_eq!(column(&row, "bd.k"), Some(&json!(1.0)));
    }
}
