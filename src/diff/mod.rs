//! Comparing two profiles: `stallscope diff` and `stallscope check`.
//!
//! The comparison is a stage after the analysis: it reads two reports ([`side::Side`], the
//! data of `analyze --format json`, from a saved file or from a trace analyzed on the spot) and
//! computes a serializable [`Comparison`] with pure functions; the renderers in
//! [`render`] only format it, and [`check`] judges it against a budget.
//!
//! # What is compared
//!
//! All window totals are divided by the side's number of steps (1 without steps), so every
//! figure is **per step**, and every change is after − before.
//!
//! * **Step time**: mean, median, spread and steps of each side, and the noise test of
//!   [`stats`] (Mann–Whitney U on the per-step durations).
//! * **Breakdown**: the eight parts of the average step, which add up to the step time, so
//!   their changes add up to the step-time change.
//! * **GPU timeline**, per device present on both sides: computation, exposed communication,
//!   exposed copies and idle per step, whose changes add up to the change of the device's
//!   first-to-last span.
//! * **Kernels** by name, then the unmatched names by [`family::family_key`] (one row, with a
//!   note naming both variants); **ops** by name; **phases** by path. Each row is `added`,
//!   `removed`, `increased`, `decreased` or `unchanged` (calls per step equal and time within
//!   [`CHANGE_TOLERANCE`] of before, or within 0.05 µs per step).
//! * **Contributors**: what explains the step-time change, ranked by absolute contribution, in
//!   three views that each sum to the change exactly:
//!   - `contributors`: each kernel's change (device time per step), copies, fills, the host
//!     parts of the breakdown (runtime, DataLoader, CPU exec, other), and the residual
//!     `kernel overlap` = change of the breakdown's kernel + communication parts − Σ kernel
//!     changes (time where kernels overlap each other, or fall outside the steps);
//!   - `phase_contributors`: each top-level phase's device-time change, and the residual
//!     `host, idle and overlap` (step change − Σ);
//!   - `op_contributors`: each op's device self-time change, and the same residual.
//! * **Findings** by rule id: `resolved`, `new`, `changed` (severity, or recoverable time by
//!   more than 10 %), `unchanged`, with recoverable time before and after.
//! * **Ranks** (a folder on both sides): step time per rank, and the slowest rank of each side.
//! * **Caveats** at the top: a different workload first ([`parity`]: batch, first-layer input,
//!   dtype mix, step definition, window kind), a different GPU, a different window choice, a
//!   side without steps.
//! * **Verdict** ([`repeats::Verdict`]): regression, within budget, improvement, no change
//!   beyond noise or inconclusive, with the reason; judged on the steps of one capture per
//!   side, or with several captures per side ([`compare_repeats`]) on the run means against the
//!   run-to-run spread; per sample when only the batch differs.

pub mod check;
pub mod family;
pub mod parity;
pub mod render;
pub mod render_loop;
pub mod repeats;
pub mod side;
pub mod stats;
/// The workload facts of a side (found with the analysis).
pub use crate::analysis::workload;

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

pub use side::{Loaded, Side, SideError, Which};

/// Version of the comparison JSON (`stallscope diff --format json`; docs/json-report.md).
pub const DIFF_SCHEMA_VERSION: u32 = 1;

/// Relative change under which a row is `unchanged` (with equal calls per step).
pub const CHANGE_TOLERANCE: f64 = 0.01;

/// Relative change of host time under which a row's host time is unchanged: host durations
/// jitter more than device durations (timer resolution, scheduling, caches), so the host
/// measure needs a wider band than [`CHANGE_TOLERANCE`] before it calls a row changed.
pub const HOST_CHANGE_TOLERANCE: f64 = 0.05;

/// Absolute host-time change per step under which a row's host time is unchanged, µs.
pub const HOST_CHANGE_FLOOR_US: f64 = 1.0;

/// Device share of the step (kernels, communication, copies, fills in the breakdown, over
/// the step time, averaged over both sides) under which the step is host-bound.
pub const HOST_BOUND_DEVICE_SHARE: f64 = 0.5;

/// Which time decides the order of the operator and phase tables and their contributors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeBasis {
    /// Host-bound steps: host self time (operators) and host wall time (phases).
    Host,
    /// Device-bound steps: device self time (operators) and device time (phases).
    Device,
}

/// Why the tables are ranked by host or by device time.
#[derive(Debug, Clone, Serialize)]
pub struct RankedBy {
    /// The time that ranks operators and phases and that their contributors decompose.
    pub basis: TimeBasis,
    /// Device share of the average step before (kernels, communication, copies, fills), 0..1.
    pub device_share_before: f64,
    /// After.
    pub device_share_after: f64,
    /// In words.
    pub reason: String,
}

/// Comparison settings.
#[derive(Debug, Clone)]
pub struct DiffOptions {
    /// Two-sided significance level of the noise test.
    pub alpha: f64,
    /// The step-time regression the verdict tolerates, percent ([`repeats::Verdict`]; `check`
    /// sets it to its step-time limit).
    pub budget_pct: f64,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            alpha: 0.05,
            budget_pct: repeats::DEFAULT_BUDGET_PCT,
        }
    }
}

/// The comparison of two reports (JSON schema [`DIFF_SCHEMA_VERSION`]).
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Always [`DIFF_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `stallscope x.y.z`.
    pub generator: String,
    /// The baseline.
    pub before: SideInfo,
    /// The new profile.
    pub after: SideInfo,
    /// Differences between the sides that qualify the comparison (different GPU, window, …).
    pub caveats: Vec<String>,
    /// The typed verdict on the step time (regression, improvement, no change, …) with its
    /// reason; judged on the runs with several captures per side, else on the steps.
    pub verdict: repeats::Verdict,
    /// Are the sides the same workload (devices, first-layer input, dtype mix, steps, window)?
    pub parity: parity::Parity,
    /// Several captures per side: each run, and the test of the change against the
    /// run-to-run spread (absent with one capture per side).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeats: Option<repeats::Repeats>,
    /// Step time and the noise test.
    pub step_time: StepTimeChange,
    /// Host or device time: which ranks the operator and phase tables and decomposes their
    /// contributors.
    pub ranked_by: RankedBy,
    /// One sentence: the step-time change and the noise test's result in words.
    pub summary: String,
    /// The average step's parts (sum = step-time change).
    pub breakdown: Vec<Change>,
    /// Per device on both sides: parts of the device's span per step (sum = span change).
    pub gpu_timeline: Vec<DeviceTimelineChange>,
    /// What explains the step-time change: kernels, copies, host parts, residual (sum = the
    /// change), largest first.
    pub contributors: Vec<Contributor>,
    /// The same change by top-level phase (device time, or host wall time when
    /// [`RankedBy::basis`] is host), with the residual.
    pub phase_contributors: Vec<Contributor>,
    /// The same change by operator (device self time, or host self time when
    /// [`RankedBy::basis`] is host), with the residual.
    pub op_contributors: Vec<Contributor>,
    /// Kernels matched by name, then by family.
    pub kernels: Vec<ItemChange>,
    /// Operators matched by name.
    pub ops: Vec<ItemChange>,
    /// Phases matched by path.
    pub phases: Vec<ItemChange>,
    /// Findings matched by rule.
    pub findings: Vec<FindingChange>,
    /// Folders of ranks on both sides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranks: Option<RanksChange>,
    /// Memory peak per device with a memory timeline on both sides (the CPU included).
    pub memory: Vec<MemoryChange>,
    /// `stallscope check`: the budget's verdict (absent for `diff`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<check::CheckResult>,
}

/// What a side is.
#[derive(Debug, Clone, Serialize)]
pub struct SideInfo {
    /// Path of the input (for a saved report: the file, and the trace it was made from).
    pub path: String,
    /// The trace the report was made from.
    pub source: String,
    /// `report` (saved JSON report) or the input format.
    pub kind: String,
    /// Verdict.
    pub verdict: String,
    /// Window spec.
    pub window: String,
    /// Steps in the window.
    pub steps: usize,
    /// First and last step names.
    pub step_range: String,
    /// Device names.
    pub devices: Vec<String>,
}

/// Statistics of one side's steps, µs.
#[derive(Debug, Clone, Serialize)]
pub struct StepStats {
    /// Steps used.
    pub steps: usize,
    /// Mean step (the report's `step_time_us`).
    pub mean_us: f64,
    /// Median step.
    pub median_us: f64,
    /// Sample standard deviation (0 with fewer than two steps).
    pub stdev_us: f64,
    /// Shortest step.
    pub min_us: f64,
    /// Longest step.
    pub max_us: f64,
}

/// The step-time change.
#[derive(Debug, Clone, Serialize)]
pub struct StepTimeChange {
    /// Before.
    pub before: StepStats,
    /// After.
    pub after: StepStats,
    /// Mean after − mean before, µs.
    pub change_us: f64,
    /// Relative to before, percent (absent when before is 0).
    pub change_pct: Option<f64>,
    /// Median after − median before, µs.
    pub median_change_us: f64,
    /// The noise test.
    pub noise: stats::NoiseTest,
}

/// A before → after value, µs per step.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// Label.
    pub name: String,
    /// µs per step.
    pub before_us: f64,
    /// µs per step.
    pub after_us: f64,
    /// after − before.
    pub change_us: f64,
}

impl Change {
    fn new(name: &str, before_us: f64, after_us: f64) -> Change {
        Change {
            name: name.to_string(),
            before_us,
            after_us,
            change_us: after_us - before_us,
        }
    }
}

/// A device's GPU timeline, per step.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceTimelineChange {
    /// Device id.
    pub device: i64,
    /// computation, exposed_comm, exposed_memcpy, idle.
    pub parts: Vec<Change>,
    /// First to last activity (sum of the parts).
    pub total: Change,
    /// Idle share of the span before, 0..1.
    pub idle_share_before: f64,
    /// After.
    pub idle_share_after: f64,
}

/// One term of a decomposition of the step-time change.
#[derive(Debug, Clone, Serialize)]
pub struct Contributor {
    /// `kernel`, `memcpy`, `memset`, `host`, `phase`, `op` or `residual`.
    pub kind: &'static str,
    /// Name.
    pub name: String,
    /// µs per step, before.
    pub before_us: f64,
    /// µs per step, after.
    pub after_us: f64,
    /// after − before.
    pub change_us: f64,
    /// Share of the step-time change (signed; absent when the step time did not change).
    pub share_of_change: Option<f64>,
}

/// Status of a matched row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Only after.
    Added,
    /// Only before.
    Removed,
    /// More time or calls after.
    Increased,
    /// Less time or calls after.
    Decreased,
    /// Same calls, time within the tolerance.
    Unchanged,
}

impl Status {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Added => "added",
            Status::Removed => "removed",
            Status::Increased => "increased",
            Status::Decreased => "decreased",
            Status::Unchanged => "unchanged",
        }
    }
}

/// Calls and time of a row on one side, per step.
#[derive(Debug, Clone, Copy, Serialize, Default)]
pub struct Per {
    /// Calls per step.
    pub calls: f64,
    /// µs per step (kernels: device time; ops: device self time; phases: device time).
    pub time_us: f64,
    /// Ops: host wall time per step; phases: host wall time of the calls per step, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_us: Option<f64>,
    /// Ops: host self time per step (wall time minus children and own launch calls), µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_self_us: Option<f64>,
}

impl Per {
    /// The row's host time: an operator's host self time, a phase's host wall time.
    pub fn host_time(&self) -> Option<f64> {
        self.host_self_us.or(self.host_us)
    }
}

/// A kernel, op or phase before → after.
#[derive(Debug, Clone, Serialize)]
pub struct ItemChange {
    /// Name (kernels matched by family: the after name).
    pub name: String,
    /// Status.
    pub status: Status,
    /// Before (absent when added).
    pub before: Option<Per>,
    /// After (absent when removed).
    pub after: Option<Per>,
    /// Time change, µs per step.
    pub change_us: f64,
    /// Ops and phases: host-time change ([`Per::host_time`]), µs per step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_change_us: Option<f64>,
    /// Kernels matched by family: which names were matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Kernel category.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
}

/// A finding before → after.
#[derive(Debug, Clone, Serialize)]
pub struct FindingChange {
    /// Rule id.
    pub id: String,
    /// `resolved`, `new`, `changed`, `unchanged`.
    pub status: &'static str,
    /// Title (after's when present).
    pub title: String,
    /// Severity before.
    pub severity_before: Option<String>,
    /// Severity after.
    pub severity_after: Option<String>,
    /// µs per step before.
    pub recoverable_before_us: Option<f64>,
    /// µs per step after.
    pub recoverable_after_us: Option<f64>,
}

/// A device's memory peak before → after, and what is live at it.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryChange {
    /// Device id ([`crate::model::memory::CPU_DEVICE`] for the CPU).
    pub device: i64,
    /// Peak allocated in the window, bytes, before.
    pub peak_before: i64,
    /// After.
    pub peak_after: i64,
    /// after − before, bytes.
    pub peak_change: i64,
    /// Step of the peak before.
    pub peak_step_before: Option<String>,
    /// After.
    pub peak_step_after: Option<String>,
    /// Live at the peak by allocating operator (phases merged), largest change first; sums to
    /// the peak change when both sides know their blocks.
    pub live_by_op: Vec<BytesChange>,
    /// Live at the peak by phase, largest change first.
    pub live_by_phase: Vec<BytesChange>,
    /// False when a side's events carry no `Addr` (no live-at-peak composition to compare).
    pub composition_known: bool,
}

/// Bytes of one group before → after.
#[derive(Debug, Clone, Serialize)]
pub struct BytesChange {
    /// Operator or phase.
    pub name: String,
    /// Bytes before.
    pub before: u64,
    /// Bytes after.
    pub after: u64,
    /// after − before.
    pub change: i64,
}

/// Ranks before → after.
#[derive(Debug, Clone, Serialize)]
pub struct RanksChange {
    /// Per rank (ranks of either side).
    pub ranks: Vec<RankChange>,
    /// Slowest rank before.
    pub slowest_before: i64,
    /// Slowest rank after.
    pub slowest_after: i64,
}

/// One rank's step time.
#[derive(Debug, Clone, Serialize)]
pub struct RankChange {
    /// Rank.
    pub rank: i64,
    /// µs.
    pub before_us: Option<f64>,
    /// µs.
    pub after_us: Option<f64>,
    /// after − before, µs (both present).
    pub change_us: Option<f64>,
}

fn stats_of(s: &Side) -> StepStats {
    let mut d = s.step_durations();
    d.sort_by(|a, b| a.total_cmp(b));
    let n = d.len();
    let median = match n {
        0 => s.step_time_us,
        _ if n % 2 == 1 => d[n / 2],
        _ => (d[n / 2 - 1] + d[n / 2]) / 2.0,
    };
    let mean = s.step_time_us;
    let stdev = if n > 1 {
        let m = d.iter().sum::<f64>() / n as f64;
        (d.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    StepStats {
        steps: n,
        mean_us: mean,
        median_us: median,
        stdev_us: stdev,
        min_us: d.first().copied().unwrap_or(mean),
        max_us: d.last().copied().unwrap_or(mean),
    }
}

fn side_info(s: &Side, path: &str, saved: bool) -> SideInfo {
    let steps = &s.window.steps;
    SideInfo {
        path: path.to_string(),
        source: s.source.path.clone(),
        kind: if saved {
            "report".into()
        } else {
            match &s.source.format {
                serde_json::Value::String(f) => f.clone(),
                v => v.to_string(),
            }
        },
        verdict: s.verdict.clone(),
        window: s.window.spec.clone(),
        steps: steps.len(),
        step_range: match (steps.first(), steps.last()) {
            (Some(f), Some(l)) if steps.len() > 1 => format!("{f} … {l}"),
            (Some(f), _) => f.clone(),
            _ => "no steps".into(),
        },
        devices: s.devices.iter().map(|d| d.name.clone()).collect(),
    }
}

/// Status of a row present on both sides: by device time and, when the row has one, by host
/// time; a measure counts when its change exceeds its tolerance, and the larger counted change
/// decides. Neither beyond its tolerance: unchanged with equal calls, else by calls.
fn status(b: &Per, a: &Per) -> Status {
    let dev = a.time_us - b.time_us;
    let dev_tol = (b.time_us.abs() * CHANGE_TOLERANCE).max(0.05);
    let host = match (b.host_time(), a.host_time()) {
        (Some(x), Some(y)) => {
            let tol = (x.abs() * HOST_CHANGE_TOLERANCE).max(HOST_CHANGE_FLOOR_US);
            Some((y - x, tol))
        }
        _ => None,
    };
    let counted = [Some((dev, dev_tol)), host]
        .into_iter()
        .flatten()
        .filter(|(d, tol)| d.abs() > *tol)
        .max_by(|x, y| x.0.abs().total_cmp(&y.0.abs()));
    match counted {
        Some((d, _)) if d > 0.0 => Status::Increased,
        Some(_) => Status::Decreased,
        None if (a.calls - b.calls).abs() < 1e-9 => Status::Unchanged,
        None if a.calls > b.calls => Status::Increased,
        None => Status::Decreased,
    }
}

fn item(name: String, b: Option<Per>, a: Option<Per>) -> ItemChange {
    let status = match (&b, &a) {
        (Some(b), Some(a)) => status(b, a),
        (None, _) => Status::Added,
        (_, None) => Status::Removed,
    };
    let t = |p: &Option<Per>| p.map(|p| p.time_us).unwrap_or(0.0);
    let h = |p: &Option<Per>| p.and_then(|p| p.host_time());
    let host_change_us = match (h(&b), h(&a)) {
        (None, None) => None,
        (x, y) => Some(y.unwrap_or(0.0) - x.unwrap_or(0.0)),
    };
    ItemChange {
        change_us: t(&a) - t(&b),
        host_change_us,
        name,
        status,
        before: b,
        after: a,
        note: None,
        category: None,
    }
}

/// Matches rows by key, keeping the first side's order then the second's new keys.
fn match_by_key(
    before: Vec<(String, Per)>,
    after: Vec<(String, Per)>,
) -> Vec<(String, Option<Per>, Option<Per>)> {
    let mut idx: HashMap<String, usize> = HashMap::new();
    let mut rows: Vec<(String, Option<Per>, Option<Per>)> = Vec::new();
    let mut add =
        |rows: &mut Vec<(String, Option<Per>, Option<Per>)>, k: String, p: Per, after: bool| {
            let i = *idx.entry(k.clone()).or_insert_with(|| {
                rows.push((k, None, None));
                rows.len() - 1
            });
            let slot = if after {
                &mut rows[i].2
            } else {
                &mut rows[i].1
            };
            let cur = slot.get_or_insert_with(Per::default);
            cur.calls += p.calls;
            cur.time_us += p.time_us;
            if let Some(h) = p.host_us {
                *cur.host_us.get_or_insert(0.0) += h;
            }
            if let Some(h) = p.host_self_us {
                *cur.host_self_us.get_or_insert(0.0) += h;
            }
        };
    for (k, p) in before {
        add(&mut rows, k, p, false);
    }
    for (k, p) in after {
        add(&mut rows, k, p, true);
    }
    rows
}

/// The change and the larger side's time of a row on one basis (host time 0 when absent).
fn on_basis(r: &ItemChange, basis: TimeBasis) -> (f64, f64) {
    let size = |f: &dyn Fn(&Per) -> f64| {
        let x = r.before.as_ref().map(f).unwrap_or(0.0);
        let y = r.after.as_ref().map(f).unwrap_or(0.0);
        x.abs().max(y.abs())
    };
    match basis {
        TimeBasis::Device => (r.change_us, size(&|p| p.time_us)),
        TimeBasis::Host => (
            r.host_change_us.unwrap_or(0.0),
            size(&|p| p.host_time().unwrap_or(0.0)),
        ),
    }
}

/// Largest change on `basis` first; ties by the change on the other basis, then by the
/// row's time (the larger side) on `basis`, then on the other, and only then by name.
fn sort_items(v: &mut [ItemChange], basis: TimeBasis) {
    let other = match basis {
        TimeBasis::Host => TimeBasis::Device,
        TimeBasis::Device => TimeBasis::Host,
    };
    v.sort_by(|x, y| {
        let (xc, xs) = on_basis(x, basis);
        let (yc, ys) = on_basis(y, basis);
        let (xo, xos) = on_basis(x, other);
        let (yo, yos) = on_basis(y, other);
        yc.abs()
            .total_cmp(&xc.abs())
            .then_with(|| yo.abs().total_cmp(&xo.abs()))
            .then_with(|| ys.total_cmp(&xs))
            .then_with(|| yos.total_cmp(&xos))
            .then_with(|| x.name.cmp(&y.name))
    });
}

/// Kernels: exact names, then the unmatched names by family.
fn kernels(b: &Side, a: &Side) -> Vec<ItemChange> {
    let (nb, na) = (b.n_table_steps(), a.n_table_steps());
    let per = |k: &side::SideKernel, n: f64| Per {
        calls: k.calls as f64 / n,
        time_us: k.total_us / n,
        host_us: None,
        host_self_us: None,
    };
    let cat: HashMap<&str, &str> = b
        .kernels
        .iter()
        .chain(&a.kernels)
        .map(|k| (k.name.as_str(), k.category.as_str()))
        .collect();
    let rows = match_by_key(
        b.kernels
            .iter()
            .map(|k| (k.name.clone(), per(k, nb)))
            .collect(),
        a.kernels
            .iter()
            .map(|k| (k.name.clone(), per(k, na)))
            .collect(),
    );
    let mut out = Vec::new();
    // unmatched names by family: family → (before names, after names, before, after)
    type Fam = (Vec<String>, Vec<String>, Option<Per>, Option<Per>);
    let mut fams: BTreeMap<String, Fam> = BTreeMap::new();
    for (name, pb, pa) in rows {
        match (&pb, &pa) {
            (Some(_), Some(_)) => {
                let mut it = item(name.clone(), pb, pa);
                it.category = cat.get(name.as_str()).map(|c| c.to_string());
                out.push(it);
            }
            _ => {
                let f = fams.entry(family::family_key(&name)).or_default();
                let add = |slot: &mut Option<Per>, p: Per| {
                    let cur = slot.get_or_insert_with(Per::default);
                    cur.calls += p.calls;
                    cur.time_us += p.time_us;
                };
                if let Some(p) = pb {
                    f.0.push(name.clone());
                    add(&mut f.2, p);
                }
                if let Some(p) = pa {
                    f.1.push(name.clone());
                    add(&mut f.3, p);
                }
            }
        }
    }
    for (_, (bn, an, pb, pa)) in fams {
        if !bn.is_empty() && !an.is_empty() {
            let name = an[0].clone();
            let mut it = item(name.clone(), pb, pa);
            it.note = Some(format!(
                "matched by family (template arguments / tile sizes differ): {} → {}",
                bn.join(", "),
                an.join(", ")
            ));
            it.category = cat.get(name.as_str()).map(|c| c.to_string());
            out.push(it);
        } else {
            for n in bn.iter().chain(&an) {
                let p = if bn.contains(n) {
                    b.kernels.iter().find(|k| &k.name == n).map(|k| per(k, nb))
                } else {
                    None
                };
                let q = if an.contains(n) {
                    a.kernels.iter().find(|k| &k.name == n).map(|k| per(k, na))
                } else {
                    None
                };
                let mut it = item(n.clone(), p, q);
                it.category = cat.get(n.as_str()).map(|c| c.to_string());
                out.push(it);
            }
        }
    }
    sort_items(&mut out, TimeBasis::Device);
    out
}

fn ops(b: &Side, a: &Side, basis: TimeBasis) -> Vec<ItemChange> {
    let per = |o: &side::SideOp, n: f64| Per {
        calls: o.calls as f64 / n,
        time_us: o.device_self_us / n,
        host_us: Some(o.host_total_us / n),
        host_self_us: Some(o.host_self_us / n),
    };
    let rows = match_by_key(
        b.ops
            .iter()
            .map(|o| (o.name.clone(), per(o, b.n_table_steps())))
            .collect(),
        a.ops
            .iter()
            .map(|o| (o.name.clone(), per(o, a.n_table_steps())))
            .collect(),
    );
    // status by calls and the larger of the device and host self-time changes
    let mut out: Vec<ItemChange> = rows
        .into_iter()
        .map(|(n, pb, pa)| item(n, pb, pa))
        .collect();
    sort_items(&mut out, basis);
    out
}

fn phases(b: &Side, a: &Side) -> Vec<ItemChange> {
    let per = |p: &side::SidePhase, n: f64| Per {
        calls: p.calls as f64 / n,
        time_us: p.gpu_us / n,
        host_us: Some(p.cpu_total_us / n),
        host_self_us: None,
    };
    let rows = match_by_key(
        b.phases
            .iter()
            .map(|p| (p.path.clone(), per(p, b.n_steps())))
            .collect(),
        a.phases
            .iter()
            .map(|p| (p.path.clone(), per(p, a.n_steps())))
            .collect(),
    );
    // tree order (the before side's, then new paths), not by change: a path reads in context
    rows.into_iter()
        .map(|(n, pb, pa)| item(n, pb, pa))
        .collect()
}

fn contributor(kind: &'static str, name: &str, b: f64, a: f64, total: f64) -> Contributor {
    let change = a - b;
    Contributor {
        kind,
        name: name.to_string(),
        before_us: b,
        after_us: a,
        change_us: change,
        share_of_change: (total != 0.0).then(|| change / total),
    }
}

/// Sorts by |change| and appends the residual that makes the list sum to `total`.
fn with_residual(
    mut v: Vec<Contributor>,
    total: f64,
    residual: &str,
    rb: f64,
    ra: f64,
) -> Vec<Contributor> {
    let sum: f64 = v.iter().map(|c| c.change_us).sum();
    let mut r = contributor("residual", residual, rb, ra, total);
    // the residual is defined as what makes the sum exact
    r.change_us = total - sum;
    r.share_of_change = (total != 0.0).then(|| r.change_us / total);
    v.push(r);
    v.sort_by(|x, y| y.change_us.abs().total_cmp(&x.change_us.abs()));
    v
}

fn contributors(b: &Side, a: &Side, total: f64) -> Vec<Contributor> {
    let mut v = Vec::new();
    let mut kb = 0.0;
    let mut ka = 0.0;
    for k in kernels(b, a) {
        let x = k.before.map(|p| p.time_us).unwrap_or(0.0);
        let y = k.after.map(|p| p.time_us).unwrap_or(0.0);
        kb += x;
        ka += y;
        if x != y {
            v.push(contributor("kernel", &k.name, x, y, total));
        }
    }
    let (bb, ab) = (&b.breakdown_us, &a.breakdown_us);
    for (kind, name, x, y) in [
        ("memcpy", "memcpy", bb.memcpy, ab.memcpy),
        ("memset", "memset", bb.memset, ab.memset),
        ("host", "runtime", bb.runtime, ab.runtime),
        ("host", "DataLoader", bb.dataloader, ab.dataloader),
        ("host", "CPU exec", bb.cpu_exec, ab.cpu_exec),
        ("host", "other", bb.other, ab.other),
    ] {
        if x != y {
            v.push(contributor(kind, name, x, y, total));
        }
    }
    let rb = bb.kernel + bb.communication - kb;
    let ra = ab.kernel + ab.communication - ka;
    // the residual is the kernel overlap; the breakdown parts sum to the step, so
    // Σ (kernels) + overlap + other parts = step change
    with_residual(
        v,
        total,
        "kernel overlap (and kernels outside steps)",
        rb,
        ra,
    )
}

fn phase_contributors(b: &Side, a: &Side, total: f64, basis: TimeBasis) -> Vec<Contributor> {
    let (nb, na) = (b.n_steps(), a.n_steps());
    let roots = |s: &Side, n: f64| -> Vec<(String, Per)> {
        s.phases
            .iter()
            .filter(|p| p.depth == 0)
            .map(|p| {
                let per = Per {
                    calls: p.calls as f64 / n,
                    time_us: p.gpu_us / n,
                    host_us: Some(p.cpu_total_us / n),
                    host_self_us: None,
                };
                (p.path.clone(), per)
            })
            .collect()
    };
    let rows = match_by_key(roots(b, nb), roots(a, na));
    let (mut sb, mut sa) = (0.0, 0.0);
    let mut v = Vec::new();
    let time = |p: Per| match basis {
        TimeBasis::Device => p.time_us,
        TimeBasis::Host => p.host_time().unwrap_or(0.0),
    };
    for (k, pb, pa) in rows {
        let x = pb.map(time).unwrap_or(0.0);
        let y = pa.map(time).unwrap_or(0.0);
        sb += x;
        sa += y;
        if x != y {
            v.push(contributor("phase", &k, x, y, total));
        }
    }
    let residual = match basis {
        TimeBasis::Device => "host, idle and overlap",
        TimeBasis::Host => "outside top-level phases (and phases overlapping on threads)",
    };
    with_residual(v, total, residual, b.step_time_us - sb, a.step_time_us - sa)
}

fn op_contributors(
    ops: &[ItemChange],
    b: &Side,
    a: &Side,
    total: f64,
    basis: TimeBasis,
) -> Vec<Contributor> {
    let (mut sb, mut sa) = (0.0, 0.0);
    let mut v = Vec::new();
    let time = |p: Per| match basis {
        TimeBasis::Device => p.time_us,
        TimeBasis::Host => p.host_time().unwrap_or(0.0),
    };
    for o in ops {
        let x = o.before.map(time).unwrap_or(0.0);
        let y = o.after.map(time).unwrap_or(0.0);
        sb += x;
        sa += y;
        if x != y {
            v.push(contributor("op", &o.name, x, y, total));
        }
    }
    let residual = match basis {
        TimeBasis::Device => "host, idle, overlap and device time outside ops",
        TimeBasis::Host => "host time in no operator (Python between ops, waits, idle)",
    };
    with_residual(v, total, residual, b.step_time_us - sb, a.step_time_us - sa)
}

/// Device share of a side's average step: kernels, communication, copies and fills of the
/// breakdown over the step time (0 without a step time).
fn device_share(s: &Side) -> f64 {
    let d = &s.breakdown_us;
    let dev = d.kernel + d.communication + d.memcpy + d.memset;
    if s.step_time_us > 0.0 {
        (dev / s.step_time_us).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// Host-bound steps (the device busy less than [`HOST_BOUND_DEVICE_SHARE`] of the step, on
/// average over both sides) rank operators and phases by host time.
fn ranked_by(b: &Side, a: &Side) -> RankedBy {
    let (x, y) = (device_share(b), device_share(a));
    let host = (x + y) / 2.0 < HOST_BOUND_DEVICE_SHARE;
    let pct = crate::report::units::ratio_whole;
    RankedBy {
        basis: if host {
            TimeBasis::Host
        } else {
            TimeBasis::Device
        },
        device_share_before: x,
        device_share_after: y,
        reason: format!(
            "{}: the device is busy {} → {} of the step (kernels, communication, copies, fills)",
            if host {
                "host-bound step, ranked by host time"
            } else {
                "device-bound step, ranked by device time"
            },
            pct(x),
            pct(y)
        ),
    }
}

fn findings(b: &Side, a: &Side) -> Vec<FindingChange> {
    let mut out = Vec::new();
    for f in &b.findings {
        match a.findings.iter().find(|g| g.id == f.id) {
            None => out.push(FindingChange {
                id: f.id.clone(),
                status: "resolved",
                title: f.title.clone(),
                severity_before: Some(f.severity.clone()),
                severity_after: None,
                recoverable_before_us: Some(f.recoverable_us),
                recoverable_after_us: None,
            }),
            Some(g) => {
                let rel =
                    (g.recoverable_us - f.recoverable_us).abs() / f.recoverable_us.abs().max(1e-9);
                let changed = g.severity != f.severity || rel > 0.10;
                out.push(FindingChange {
                    id: f.id.clone(),
                    status: if changed { "changed" } else { "unchanged" },
                    title: g.title.clone(),
                    severity_before: Some(f.severity.clone()),
                    severity_after: Some(g.severity.clone()),
                    recoverable_before_us: Some(f.recoverable_us),
                    recoverable_after_us: Some(g.recoverable_us),
                })
            }
        }
    }
    for g in &a.findings {
        if !b.findings.iter().any(|f| f.id == g.id) {
            out.push(FindingChange {
                id: g.id.clone(),
                status: "new",
                title: g.title.clone(),
                severity_before: None,
                severity_after: Some(g.severity.clone()),
                recoverable_before_us: None,
                recoverable_after_us: Some(g.recoverable_us),
            });
        }
    }
    out
}

fn timeline(b: &Side, a: &Side) -> Vec<DeviceTimelineChange> {
    let (nb, na) = (b.n_table_steps(), a.n_table_steps());
    let mut out = Vec::new();
    for tb in &b.gpu_timeline {
        let Some(ta) = a.gpu_timeline.iter().find(|t| t.device == tb.device) else {
            continue;
        };
        let parts = vec![
            Change::new(
                "computation",
                tb.computation_us / nb,
                ta.computation_us / na,
            ),
            Change::new(
                "exposed comm",
                tb.exposed_comm_us / nb,
                ta.exposed_comm_us / na,
            ),
            Change::new(
                "exposed memcpy",
                tb.exposed_memcpy_us / nb,
                ta.exposed_memcpy_us / na,
            ),
            Change::new("idle", tb.idle_us / nb, ta.idle_us / na),
        ];
        let share = |t: &side::SideTimeline| {
            if t.total_us > 0.0 {
                t.idle_us / t.total_us
            } else {
                0.0
            }
        };
        out.push(DeviceTimelineChange {
            device: tb.device,
            total: Change::new("total", tb.total_us / nb, ta.total_us / na),
            parts,
            idle_share_before: share(tb),
            idle_share_after: share(ta),
        });
    }
    out
}

fn ranks(b: &Side, a: &Side) -> Option<RanksChange> {
    let (rb, ra) = (b.ranks.as_ref()?, a.ranks.as_ref()?);
    let mut ids: Vec<i64> = rb.ranks.iter().chain(&ra.ranks).map(|r| r.rank).collect();
    ids.sort_unstable();
    ids.dedup();
    let ranks = ids
        .into_iter()
        .map(|id| {
            let x = rb
                .ranks
                .iter()
                .find(|r| r.rank == id)
                .map(|r| r.step_time_us);
            let y = ra
                .ranks
                .iter()
                .find(|r| r.rank == id)
                .map(|r| r.step_time_us);
            RankChange {
                rank: id,
                before_us: x,
                after_us: y,
                change_us: x.zip(y).map(|(x, y)| y - x),
            }
        })
        .collect();
    Some(RanksChange {
        ranks,
        slowest_before: rb.slowest_rank,
        slowest_after: ra.slowest_rank,
    })
}

/// Groups (name, bytes) of both sides matched by name, largest |change| first (then size,
/// then name).
fn bytes_changes(
    b: impl Iterator<Item = (String, u64)>,
    a: impl Iterator<Item = (String, u64)>,
) -> Vec<BytesChange> {
    let mut m: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (k, v) in b {
        m.entry(k).or_default().0 += v;
    }
    for (k, v) in a {
        m.entry(k).or_default().1 += v;
    }
    let mut out: Vec<BytesChange> = m
        .into_iter()
        .map(|(name, (x, y))| BytesChange {
            name,
            before: x,
            after: y,
            change: y as i64 - x as i64,
        })
        .collect();
    out.sort_by(|x, y| {
        y.change
            .unsigned_abs()
            .cmp(&x.change.unsigned_abs())
            .then_with(|| y.before.max(y.after).cmp(&x.before.max(x.after)))
            .then_with(|| x.name.cmp(&y.name))
    });
    out
}

fn memory(b: &Side, a: &Side) -> Vec<MemoryChange> {
    let (Some(mb), Some(ma)) = (&b.memory, &a.memory) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for db in &mb.devices {
        let Some(da) = ma.devices.iter().find(|d| d.device == db.device) else {
            continue;
        };
        let known = db.blocks_known && da.blocks_known;
        let by_op = |d: &side::SideDeviceMemory| {
            d.live_at_peak
                .iter()
                .map(|g| (g.op.clone(), g.bytes))
                .collect::<Vec<_>>()
        };
        let by_phase = |d: &side::SideDeviceMemory| d.live_by_phase.clone();
        out.push(MemoryChange {
            device: db.device,
            peak_before: db.peak_allocated,
            peak_after: da.peak_allocated,
            peak_change: da.peak_allocated - db.peak_allocated,
            peak_step_before: db.peak_step.clone(),
            peak_step_after: da.peak_step.clone(),
            live_by_op: if known {
                bytes_changes(by_op(db).into_iter(), by_op(da).into_iter())
            } else {
                Vec::new()
            },
            live_by_phase: if known {
                bytes_changes(by_phase(db).into_iter(), by_phase(da).into_iter())
            } else {
                Vec::new()
            },
            composition_known: known,
        });
    }
    out
}

fn caveats(b: &Side, a: &Side) -> Vec<String> {
    let mut c = Vec::new();
    let names = |s: &Side| {
        let mut v: Vec<&str> = s.devices.iter().map(|d| d.name.as_str()).collect();
        v.sort_unstable();
        v.dedup();
        v.join(", ")
    };
    let (db, da) = (names(b), names(a));
    // parity first: the step definition and the device count (the reports do not carry input
    // shapes, so a batch change cannot be detected yet)
    let rule = |s: &Side| s.steps_found.as_ref().map(|f| f.rule.clone());
    if let (Some(x), Some(y)) = (rule(b), rule(a)) {
        if x != y {
            c.push(format!(
                "not the same step definition: steps are {x} before, {y} after — per-step \
                 figures do not measure the same unit of work"
            ));
        }
    }
    if !b.devices.is_empty() && !a.devices.is_empty() && b.devices.len() != a.devices.len() {
        c.push(format!(
            "not the same machine: {} devices before, {} after",
            b.devices.len(),
            a.devices.len()
        ));
    }
    if db != da {
        c.push(format!(
            "different devices: before {}, after {} — kernel times are not comparable one to one",
            if db.is_empty() { "none listed" } else { &db },
            if da.is_empty() { "none listed" } else { &da },
        ));
    }
    if b.window.spec != a.window.spec {
        c.push(format!(
            "different windows: before {}, after {}",
            b.window.spec, a.window.spec
        ));
    }
    for (s, w) in [(b, "before"), (a, "after")] {
        if s.window.steps.is_empty() {
            c.push(format!(
                "the {w} side has no steps: its figures are for the whole window"
            ));
        }
    }
    if b.ranks.is_some() != a.ranks.is_some() {
        c.push(
            "one side is a folder of ranks and the other is not: the folder's slowest rank \
             is compared"
                .into(),
        );
    }
    c
}

/// The summary sentence.
fn summary(st: &StepTimeChange) -> String {
    let f = terminal_fmt;
    let ch = st.change_us;
    let pct = st
        .change_pct
        .map(|p| format!(", {:.1}%", p.abs()))
        .unwrap_or_default();
    let dir = if ch < 0.0 { "faster" } else { "slower" };
    let n = &st.noise;
    let judged = match n.judgement {
        stats::Judgement::TooFewSteps => n
            .reason
            .clone()
            .unwrap_or_else(|| "too few steps to judge noise".into()),
        stats::Judgement::WithinNoise => format!(
            "within noise ({}, p = {:.3})",
            "Mann-Whitney U",
            n.p_value.unwrap_or(1.0)
        ),
        _ => {
            let every = if n.all_after_faster {
                "; every after-step is faster than every before-step"
            } else if n.all_after_slower {
                "; every after-step is slower than every before-step"
            } else {
                ""
            };
            format!(
                "beyond noise (Mann-Whitney U, p = {:.3}){every}",
                n.p_value.unwrap_or(0.0)
            )
        }
    };
    if ch == 0.0 {
        return format!(
            "no change in step time ({}); {judged}",
            f(st.before.mean_us)
        );
    }
    format!("{dir} by {} per step{pct}; {judged}", f(ch.abs()))
}

fn terminal_fmt(v: f64) -> String {
    crate::report::terminal::fmt_us(v)
}

/// Compares two loaded sides (`crate::api::load_side`, `crate::api::load_pair`); `paths` (before, after) only
/// label them in the output.
pub fn compare(
    before: &Loaded,
    after: &Loaded,
    paths: (&str, &str),
    opts: &DiffOptions,
) -> Comparison {
    let (b, a) = (&before.side, &after.side);
    let sb = stats_of(b);
    let sa = stats_of(a);
    let change = a.step_time_us - b.step_time_us;
    let noise = stats::mann_whitney(&b.step_durations(), &a.step_durations(), opts.alpha);
    let step_time = StepTimeChange {
        change_us: change,
        change_pct: stats::change_pct(change, b.step_time_us),
        median_change_us: sa.median_us - sb.median_us,
        before: sb,
        after: sa,
        noise,
    };
    let breakdown = b
        .breakdown_us
        .parts()
        .iter()
        .zip(a.breakdown_us.parts().iter())
        .map(|((n, x), (_, y))| Change::new(n, *x, *y))
        .collect();
    let basis = ranked_by(b, a);
    let op_rows = ops(b, a, basis.basis);
    let par = parity::parity(b, a);
    let verdict = pair_verdict(b, a, &step_time, &par, opts);
    let mut caveat_list = caveats(b, a);
    if let Some(w) = parity::workload_caveat(&par) {
        caveat_list.insert(0, w);
    }
    Comparison {
        schema_version: DIFF_SCHEMA_VERSION,
        generator: format!("stallscope {}", env!("CARGO_PKG_VERSION")),
        before: side_info(b, paths.0, before.saved),
        after: side_info(a, paths.1, after.saved),
        caveats: caveat_list,
        verdict,
        parity: par,
        repeats: None,
        summary: summary(&step_time),
        breakdown,
        gpu_timeline: timeline(b, a),
        contributors: contributors(b, a, change),
        phase_contributors: phase_contributors(b, a, change, basis.basis),
        op_contributors: op_contributors(&op_rows, b, a, change, basis.basis),
        ranked_by: basis,
        kernels: kernels(b, a),
        ops: op_rows,
        phases: phases(b, a),
        findings: findings(b, a),
        ranks: ranks(b, a),
        memory: memory(b, a),
        check: None,
        step_time,
    }
}

/// The verdict of one capture per side: the noise test on the steps (per sample when only the
/// batch differs), or inconclusive when the steps cannot be compared.
fn pair_verdict(
    b: &Side,
    a: &Side,
    st: &StepTimeChange,
    par: &parity::Parity,
    opts: &DiffOptions,
) -> repeats::Verdict {
    if let Some(why) = &par.not_comparable {
        return not_comparable_verdict(why, st.change_pct, opts);
    }
    match &par.normalization {
        Some(n) => {
            let per = |s: &Side, k: f64| -> Vec<f64> {
                s.step_durations().iter().map(|d| d / k).collect()
            };
            let noise = stats::mann_whitney(
                &per(b, n.per_step_before),
                &per(a, n.per_step_after),
                opts.alpha,
            );
            repeats::verdict_of_steps(&noise, n.change_pct, opts.budget_pct, n.unit)
        }
        None => repeats::verdict_of_steps(&st.noise, st.change_pct, opts.budget_pct, "step"),
    }
}

fn not_comparable_verdict(
    why: &str,
    change_pct: Option<f64>,
    opts: &DiffOptions,
) -> repeats::Verdict {
    repeats::Verdict {
        kind: repeats::VerdictKind::Inconclusive,
        basis: repeats::VerdictBasis::Steps,
        unit: "step",
        change_pct,
        budget_pct: opts.budget_pct,
        p_value: None,
        reason: format!("not the same workload, the step times cannot be compared: {why}"),
    }
}

/// Compares several captures per side (`diff --before A1 A2 A3 --after B1 B2 B3`): the tables
/// compare the median run of each side ([`repeats::SideRuns::representative`]); the verdict
/// tests the change of the mean run time against the run-to-run spread
/// ([`repeats::compare_runs`]). With one capture per side it is [`compare`]. `paths` label the
/// captures; both slices must be non-empty.
pub fn compare_repeats(
    before: &[Loaded],
    after: &[Loaded],
    paths: (&[String], &[String]),
    opts: &DiffOptions,
) -> Comparison {
    if before.len() == 1 && after.len() == 1 {
        return compare(&before[0], &after[0], (&paths.0[0], &paths.1[0]), opts);
    }
    let durations = |l: &Loaded| -> Vec<f64> {
        let d = l.side.step_durations();
        if d.is_empty() {
            vec![l.side.step_time_us]
        } else {
            d
        }
    };
    let runs_of = |ls: &[Loaded], ps: &[String], k: f64| -> repeats::SideRuns {
        let v: Vec<(String, Vec<f64>)> = ls
            .iter()
            .zip(ps)
            .map(|(l, p)| (p.clone(), durations(l).iter().map(|d| d / k).collect()))
            .collect();
        repeats::side_runs(&v)
    };
    let (ib, ia) = (
        runs_of(before, paths.0, 1.0).representative,
        runs_of(after, paths.1, 1.0).representative,
    );
    let mut c = compare(&before[ib], &after[ia], (&paths.0[ib], &paths.1[ia]), opts);
    let (kb, ka, unit) = match &c.parity.normalization {
        Some(n) => (n.per_step_before, n.per_step_after, n.unit),
        None => (1.0, 1.0, "step"),
    };
    let r = repeats::compare_runs(
        runs_of(before, paths.0, kb),
        runs_of(after, paths.1, ka),
        opts.alpha,
    );
    c.verdict = match &c.parity.not_comparable {
        Some(why) => not_comparable_verdict(why, r.change_pct, opts),
        None => repeats::verdict_of_runs(&r, opts.budget_pct, opts.alpha, unit),
    };
    // the runs of one side should be one workload
    for (ls, which) in [(before, "before"), (after, "after")] {
        for l in &ls[1..] {
            let p = parity::parity(&ls[0].side, &l.side);
            if !p.same_workload {
                let what: Vec<&str> = p
                    .checks
                    .iter()
                    .filter(|x| x.status == parity::ParityStatus::Differs)
                    .map(|x| x.what)
                    .collect();
                c.caveats.insert(
                    0,
                    format!(
                        "the {which} runs are not all the same workload ({} differ): their \
                         spread is not run-to-run noise",
                        what.join(", ")
                    ),
                );
                break;
            }
        }
    }
    c.caveats.push(format!(
        "the tables compare the median runs (before {} of {}, after {} of {})",
        ib + 1,
        before.len(),
        ia + 1,
        after.len()
    ));
    c.summary = repeats_summary(&r, &c.verdict);
    c.repeats = Some(r);
    c
}

/// The summary sentence of a repeated-run comparison.
fn repeats_summary(r: &repeats::Repeats, v: &repeats::Verdict) -> String {
    let ch = r.change_us;
    let per = if v.unit == "sample" || v.unit == "token" {
        format!("per {}", v.unit)
    } else {
        "per step".into()
    };
    // the percentage the verdict judges: the ratio of the geometric means of the run means
    let pct = r
        .ratio_pct
        .map(|p| format!(", {:.1}%", p.abs()))
        .unwrap_or_default();
    let p = r
        .p_value
        .map(|p| format!(" (Welch t on log run means, p = {p:.3})"))
        .unwrap_or_default();
    let runs = format!(
        "mean of {} runs before, {} after",
        r.before.runs.len(),
        r.after.runs.len()
    );
    if ch == 0.0 {
        return format!("no change {per} ({runs}); {}{p}", v.kind.words());
    }
    let dir = if ch < 0.0 { "faster" } else { "slower" };
    format!(
        "{dir} by {} {per}{pct} ({runs}); {}{p}",
        terminal_fmt(ch.abs()),
        v.kind.words()
    )
}

/// Compares two in-memory reports (for library users and bindings): the sides are labelled
/// with their source paths. Fails only if a report cannot be converted (never for a report
/// built by this version).
pub fn compare_reports(
    before: &crate::report::Report,
    after: &crate::report::Report,
    opts: &DiffOptions,
) -> Result<Comparison, String> {
    let load = |r: &crate::report::Report| -> Result<Loaded, String> {
        Ok(Loaded {
            side: Side::from_report(r)?,
            saved: false,
            warnings: Vec::new(),
        })
    };
    let (b, a) = (load(before)?, load(after)?);
    Ok(compare(
        &b,
        &a,
        (&before.source.path, &after.source.path),
        opts,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::build::TraceBuilder;

    /// A CPU-only training loop: per step `aten::mm` for `mm_us` inside `forward`, then
    /// `losses` calls of `aten::cross_entropy_loss` (20 µs each, 5 µs of Python between them)
    /// inside `loss`; `aten::mm` allocates `mm_bytes` of host memory, freed at the step's end.
    fn cpu_steps(mm_us: f64, losses: usize, mm_bytes: i64) -> crate::report::Report {
        let mut b = TraceBuilder::new();
        let mut t = 0.0;
        let mut addr = 0x1000u64;
        for s in 1..=6 {
            let start = t;
            let jitter = s as f64 * 0.25; // distinct step durations
            let mut h = t + 2.0;
            b.annotation("forward", h, mm_us + jitter + 2.0);
            b.op("aten::mm", h + 1.0, mm_us + jitter);
            b.memory(-1, h + 1.5, addr, mm_bytes, mm_bytes, -1);
            h += mm_us + 4.0 + jitter;
            let loss_start = h;
            for _ in 0..losses {
                b.op("aten::cross_entropy_loss", h, 20.0);
                h += 25.0;
            }
            b.annotation("loss", loss_start, h - loss_start);
            b.memory(-1, h + 0.5, addr, -mm_bytes, 0, -1);
            addr += 0x100;
            b.annotation(&format!("ProfilerStep#{s}"), start, h + 1.0 - start);
            t = h + 2.0;
        }
        let trace = b.build();
        let a = crate::analysis::analyze(&trace, &Default::default());
        crate::report::Report::new(&trace, &a, crate::diagnose::diagnose(&trace, &a))
    }

    fn op<'a>(c: &'a Comparison, name: &str) -> &'a ItemChange {
        c.ops.iter().find(|o| o.name == name).unwrap()
    }

    #[test]
    fn host_bound_steps_compare_operators_on_host_time() {
        let before = cpu_steps(397.0, 32, 4 << 20);
        let after = cpu_steps(234.0, 1, 2 << 20);
        let c = compare_reports(&before, &after, &DiffOptions::default()).unwrap();
        assert_eq!(c.ranked_by.basis, TimeBasis::Host, "{}", c.ranked_by.reason);
        // aten::mm: no device time on either side, host self 397 → 234 µs per step
        let mm = op(&c, "aten::mm");
        assert_eq!(mm.change_us, 0.0);
        let h = mm.host_change_us.unwrap();
        assert!((h - (234.0 - 397.0)).abs() < 1e-6, "{h}");
        assert_eq!(mm.status, Status::Decreased);
        // the loss: 32 × 20 µs → 20 µs per step, the largest host change, ranked first
        assert_eq!(c.ops[0].name, "aten::cross_entropy_loss");
        assert!((c.ops[0].host_change_us.unwrap() + 620.0).abs() < 1e-6);
        assert_eq!(c.ops[1].name, "aten::mm");
        // the operator contributors carry the host change; the residual holds only the
        // Python between the loss calls (32 → 1 gaps of 5 µs) and the step's own edges
        let oc = &c.op_contributors;
        assert_eq!(oc[0].name, "aten::cross_entropy_loss");
        let residual = oc.iter().find(|r| r.kind == "residual").unwrap();
        let ops_sum: f64 = oc
            .iter()
            .filter(|r| r.kind == "op")
            .map(|r| r.change_us)
            .sum();
        assert!((ops_sum + 620.0 + 163.0).abs() < 1e-6, "{ops_sum}");
        assert!(
            (residual.change_us - (-31.0 * 5.0)).abs() < 0.5,
            "{}",
            residual.change_us
        );
        // phases by host wall time: `loss` 32 × 25 → 25 µs
        let pc = &c.phase_contributors;
        let loss = pc.iter().find(|r| r.name == "loss").unwrap();
        assert!(
            (loss.change_us + 31.0 * 25.0).abs() < 1e-6,
            "{}",
            loss.change_us
        );
        let p = c.phases.iter().find(|p| p.name == "loss").unwrap();
        assert_eq!(p.status, Status::Decreased);
        // every decomposition sums to the step change
        for v in [&c.contributors, &c.phase_contributors, &c.op_contributors] {
            let s: f64 = v.iter().map(|r| r.change_us).sum();
            assert!((s - c.step_time.change_us).abs() < 1e-6);
        }
    }

    #[test]
    fn a_different_step_definition_is_reported_first() {
        let before = cpu_steps(397.0, 2, 1 << 20);
        let mut b = TraceBuilder::new();
        b.op("aten::mm", 1.0, 397.0);
        let trace = b.build();
        let a = crate::analysis::analyze(&trace, &Default::default());
        let after = crate::report::Report::new(&trace, &a, crate::diagnose::diagnose(&trace, &a));
        let c = compare_reports(&before, &after, &DiffOptions::default()).unwrap();
        assert!(
            c.caveats[0].starts_with(
                "not the same step definition: steps are profiler_step before, whole_trace after"
            ),
            "{:?}",
            c.caveats
        );
        // and the verdict says the step times cannot be compared
        assert_eq!(c.verdict.kind, repeats::VerdictKind::Inconclusive);
        assert!(
            c.verdict.reason.contains("cannot be compared"),
            "{}",
            c.verdict.reason
        );
        assert!(c.parity.not_comparable.is_some());
    }

    fn loaded(r: &crate::report::Report) -> Loaded {
        Loaded {
            side: Side::from_report(r).unwrap(),
            saved: false,
            warnings: Vec::new(),
        }
    }

    fn names(n: usize, p: &str) -> Vec<String> {
        (1..=n).map(|i| format!("{p}{i}")).collect()
    }

    #[test]
    fn repeated_runs_judge_the_change_against_the_run_to_run_spread() {
        // three runs per side whose operator time moves by a few µs from run to run
        let side = |base: f64, offs: &[f64]| -> Vec<Loaded> {
            offs.iter()
                .map(|o| loaded(&cpu_steps(base + o, 2, 1 << 20)))
                .collect()
        };
        let before = side(397.0, &[0.0, 6.0, -5.0]);
        let control = side(397.0, &[3.0, -4.0, 1.0]);
        let opts = DiffOptions::default();
        let c = compare_repeats(&before, &control, (&names(3, "a"), &names(3, "b")), &opts);
        let r = c.repeats.as_ref().unwrap();
        assert_eq!(r.before.runs.len(), 3);
        assert_eq!(c.verdict.basis, repeats::VerdictBasis::Runs);
        assert_eq!(
            c.verdict.kind,
            repeats::VerdictKind::NoChange,
            "{}",
            c.verdict.reason
        );
        // the tables compare the median runs: before +0 (a1), after +1 (b3)
        assert_eq!((r.before.representative, r.after.representative), (0, 2));
        assert_eq!(c.before.path, "a1");
        assert_eq!(c.after.path, "b3");
        // +80 µs per step (~ +15 %): a regression beyond the spread
        let slower = side(477.0, &[3.0, -4.0, 1.0]);
        let c = compare_repeats(&before, &slower, (&names(3, "a"), &names(3, "b")), &opts);
        assert_eq!(
            c.verdict.kind,
            repeats::VerdictKind::Regression,
            "{}",
            c.verdict.reason
        );
        assert!(c.verdict.fails_gate());
        let budget = check::Budget {
            step_time: Some(check::Percent(5.0)),
            ..Default::default()
        };
        let res = check::check(&c, &budget);
        assert!(res.failed, "{}", res.summary);
        assert!(res.summary.contains("REGRESSION"), "{}", res.summary);
        // the same +80 µs against a 25 % budget: slower, within budget; the gate passes
        let wide = DiffOptions {
            budget_pct: 25.0,
            ..Default::default()
        };
        let c = compare_repeats(&before, &slower, (&names(3, "a"), &names(3, "b")), &wide);
        assert_eq!(c.verdict.kind, repeats::VerdictKind::WithinBudget);
        assert!(!c.verdict.fails_gate());
        // one capture per side is the plain comparison, judged on the steps
        let c = compare_repeats(
            &before[..1],
            &slower[..1],
            (&names(1, "a"), &names(1, "b")),
            &opts,
        );
        assert!(c.repeats.is_none());
        assert_eq!(c.verdict.basis, repeats::VerdictBasis::Steps);
    }

    #[test]
    fn ties_are_ordered_by_size_not_by_name() {
        let mk = |a_us: f64, z_us: f64| {
            let mut b = TraceBuilder::new();
            let mut t = 0.0;
            for s in 1..=4 {
                let start = t;
                b.op("aten::add", t + 1.0, a_us + s as f64 * 0.1);
                b.op("aten::zeros", t + 2.0 + a_us + 1.0, z_us);
                t += a_us + z_us + 6.0;
                b.annotation(&format!("ProfilerStep#{s}"), start, t - start - 1.0);
            }
            let trace = b.build();
            let a = crate::analysis::analyze(&trace, &Default::default());
            crate::report::Report::new(&trace, &a, crate::diagnose::diagnose(&trace, &a))
        };
        let c =
            compare_reports(&mk(20.0, 120.0), &mk(10.0, 110.0), &DiffOptions::default()).unwrap();
        let names: Vec<&str> = c.ops.iter().map(|o| o.name.as_str()).collect();
        // both −10 µs per step: the larger operator first
        assert_eq!(names, ["aten::zeros", "aten::add"]);
        assert!(c.ops.iter().all(|o| o.status == Status::Decreased));
    }

    #[test]
    fn cpu_memory_peak_and_live_composition_are_compared() {
        let before = cpu_steps(397.0, 2, 4 << 20);
        let after = cpu_steps(397.0, 2, 1 << 20);
        let c = compare_reports(&before, &after, &DiffOptions::default()).unwrap();
        assert_eq!(c.memory.len(), 1);
        let m = &c.memory[0];
        assert_eq!(m.device, crate::model::memory::CPU_DEVICE as i64);
        assert_eq!((m.peak_before, m.peak_after), (4 << 20, 1 << 20));
        assert_eq!(m.peak_change, -(3 << 20));
        assert!(m.composition_known);
        assert_eq!(m.live_by_op[0].name, "aten::mm");
        assert_eq!(m.live_by_op[0].change, -(3 << 20));
        assert_eq!(m.live_by_phase[0].name, "forward");
        let mut out = Vec::new();
        render::render(&c, render::DiffFormat::Table, 10, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("CPU memory peak 4.0 MiB → 1.0 MiB (-3.0 MiB)"),
            "{text}"
        );
    }
}
