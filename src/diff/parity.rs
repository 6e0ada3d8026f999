//! Are the two sides the same workload? Checked before anything is blamed on a kernel.
//!
//! A comparison of a batch-32 step with a batch-64 step, or of a `ProfilerStep` with a whole
//! trace, measures the workload change, not the code change. Before comparing, the sides are
//! checked for parity on:
//!
//! * **device model and count** (the reports' `devices`);
//! * **first-layer input** (`record_shapes=True`): the first layer operator of the window
//!   (`aten::linear`, `aten::conv2d`, `aten::addmm`, `aten::embedding`, …, the earliest to
//!   start) and the shape of its data input; the **batch** is that input's first dimension
//!   (for `aten::embedding`, the indices: batch × tokens);
//! * **dtype mix**: the data dtypes of the window's layer operators, by share of calls (a dtype
//!   under 10 % of the calls is left out of the mix);
//! * **step definition** (`steps_found.rule`) and **window kind** (`auto`, `--steps`, …).
//!
//! A mismatch is reported first, as a caveat (`not the same workload: batch 32 → 64`). When
//! only the batch (or, for token inputs, batch × tokens) differs, the time per step is
//! normalized per sample (per token) and the verdict judges that; when the first layer's input
//! differs otherwise, or the step definitions differ, the verdict says the step times cannot be
//! compared.
//!
//! The shapes come from the trace, kept in the report's `workload` (so a saved JSON report
//! carries them, and a folder of ranks has those of the rank whose report it is); a report
//! saved before `workload` was added, or a trace without recorded shapes, has them `unknown`,
//! and nothing is claimed about them.

use serde::Serialize;

use super::side::Side;
pub use super::workload::{workload, Workload};

/// The result of one parity check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ParityStatus {
    /// Equal on both sides.
    Same,
    /// Different.
    Differs,
    /// Not known on a side (a saved report, no recorded shapes).
    Unknown,
}

/// One checked property.
#[derive(Debug, Clone, Serialize)]
pub struct ParityCheck {
    /// `device model`, `device count`, `first layer`, `batch`, `first-layer input`,
    /// `dtype mix`, `step definition`, `window kind`.
    pub what: &'static str,
    /// Before, in words (`unknown` when not known).
    pub before: String,
    /// After.
    pub after: String,
    /// Same, differs or unknown.
    pub status: ParityStatus,
}

/// How per-step figures are made comparable when only the batch differs.
#[derive(Debug, Clone, Serialize)]
pub struct Normalization {
    /// `sample` or `token`.
    pub unit: &'static str,
    /// Units per step before.
    pub per_step_before: f64,
    /// After.
    pub per_step_after: f64,
    /// Mean step time per unit before, µs.
    pub before_us: f64,
    /// After.
    pub after_us: f64,
    /// Change of the time per unit, percent.
    pub change_pct: Option<f64>,
}

/// The parity of two sides.
#[derive(Debug, Clone, Serialize)]
pub struct Parity {
    /// Every property checked.
    pub checks: Vec<ParityCheck>,
    /// No property differs.
    pub same_workload: bool,
    /// Only the batch differs: the time per sample (token) is compared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub normalization: Option<Normalization>,
    /// Why the step times cannot be compared (a different step definition, a first-layer input
    /// that differs beyond its batch, a different model), when they cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_comparable: Option<String>,
}

fn shape(v: &[i64]) -> String {
    let s: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    format!("[{}]", s.join(", "))
}

fn check(what: &'static str, b: Option<String>, a: Option<String>) -> ParityCheck {
    let status = match (&b, &a) {
        (Some(x), Some(y)) if x == y => ParityStatus::Same,
        (Some(_), Some(_)) => ParityStatus::Differs,
        _ => ParityStatus::Unknown,
    };
    let u = |v: Option<String>| v.unwrap_or_else(|| "unknown".into());
    ParityCheck {
        what,
        before: u(b),
        after: u(a),
        status,
    }
}

/// The window kind of a spec (`auto`, `--steps`, `--time`, `--focus`, `--all`).
fn window_kind(spec: &str) -> String {
    spec.split_whitespace().next().unwrap_or("").to_string()
}

fn device_models(s: &Side) -> Option<String> {
    if s.devices.is_empty() {
        return None;
    }
    let mut v: Vec<&str> = s.devices.iter().map(|d| d.name.as_str()).collect();
    v.sort_unstable();
    v.dedup();
    Some(v.join(", "))
}

/// Checks the parity of two sides (their workloads from [`workload`], when known).
pub fn parity(b: &Side, a: &Side) -> Parity {
    let (wb, wa) = (b.workload.as_ref(), a.workload.as_ref());
    let mut checks = vec![
        check("device model", device_models(b), device_models(a)),
        check(
            "device count",
            (!b.devices.is_empty()).then(|| b.devices.len().to_string()),
            (!a.devices.is_empty()).then(|| a.devices.len().to_string()),
        ),
        check(
            "first layer",
            wb.and_then(|w| w.first_layer.clone()),
            wa.and_then(|w| w.first_layer.clone()),
        ),
        check(
            "batch",
            wb.and_then(|w| w.batch()).map(|x| x.to_string()),
            wa.and_then(|w| w.batch()).map(|x| x.to_string()),
        ),
        check(
            "first-layer input",
            wb.and_then(|w| w.first_input.as_deref()).map(shape),
            wa.and_then(|w| w.first_input.as_deref()).map(shape),
        ),
        check(
            "dtype mix",
            wb.filter(|w| w.layer_calls > 0)
                .map(|w| w.main_dtypes().join(", ")),
            wa.filter(|w| w.layer_calls > 0)
                .map(|w| w.main_dtypes().join(", ")),
        ),
        check(
            "step definition",
            b.steps_found.as_ref().map(|f| f.rule.clone()),
            a.steps_found.as_ref().map(|f| f.rule.clone()),
        ),
        check(
            "window kind",
            Some(window_kind(&b.window.spec)),
            Some(window_kind(&a.window.spec)),
        ),
    ];
    // with no devices listed on either side (CPU captures) the device checks say nothing
    if b.devices.is_empty() && a.devices.is_empty() {
        checks.retain(|c| !c.what.starts_with("device"));
    }
    let differs = |w: &str| {
        checks
            .iter()
            .any(|c| c.what == w && c.status == ParityStatus::Differs)
    };
    let same_workload = !checks.iter().any(|c| c.status == ParityStatus::Differs);
    let mut not_comparable = None;
    let mut normalization = None;
    if differs("step definition") {
        not_comparable = Some("the steps are not the same unit of work".to_string());
    } else if differs("first layer") {
        not_comparable = Some("the first layer operators differ: not the same model".into());
    } else if differs("first-layer input") {
        let (ib, ia) = (
            wb.and_then(|w| w.first_input.clone()).unwrap_or_default(),
            wa.and_then(|w| w.first_input.clone()).unwrap_or_default(),
        );
        let token = wb.and_then(|w| w.first_layer.as_deref()) == Some("aten::embedding");
        let units = |v: &[i64]| -> f64 {
            if token {
                v.iter().take(2).product::<i64>() as f64
            } else {
                v.first().copied().unwrap_or(0) as f64
            }
        };
        let lead = if token { 2 } else { 1 };
        let rest_same = ib.len() == ia.len() && ib.get(lead..) == ia.get(lead..);
        if rest_same && units(&ib) > 0.0 && units(&ia) > 0.0 {
            let (ub, ua) = (units(&ib), units(&ia));
            let (xb, xa) = (b.step_time_us / ub, a.step_time_us / ua);
            normalization = Some(Normalization {
                unit: if token { "token" } else { "sample" },
                per_step_before: ub,
                per_step_after: ua,
                before_us: xb,
                after_us: xa,
                change_pct: (xb > 0.0).then(|| (xa - xb) / xb * 100.0),
            });
        } else {
            not_comparable = Some(format!(
                "the first layer's input is {} before and {} after: the steps do different \
                 work that no per-sample figure makes comparable",
                shape(&ib),
                shape(&ia)
            ));
        }
    }
    Parity {
        checks,
        same_workload,
        normalization,
        not_comparable,
    }
}

/// The caveat that leads the comparison when the workloads differ: `not the same workload:
/// batch 32 → 64, dtype mix float → c10::BFloat16; …`.
pub fn workload_caveat(p: &Parity) -> Option<String> {
    // step definition and device count keep their own caveats (super::caveats)
    let diffs: Vec<String> = p
        .checks
        .iter()
        .filter(|c| c.status == ParityStatus::Differs)
        .filter(|c| !matches!(c.what, "step definition" | "device count" | "device model"))
        .filter(|c| !(c.what == "first-layer input" && p.normalization.is_some()))
        .map(|c| format!("{} {} → {}", c.what, c.before, c.after))
        .collect();
    if diffs.is_empty() {
        return None;
    }
    let tail = match (&p.normalization, &p.not_comparable) {
        (Some(n), _) => format!(
            " — figures are per step; the verdict judges the time per {} ({} → {} per {}, {})",
            n.unit,
            crate::report::terminal::fmt_us(n.before_us),
            crate::report::terminal::fmt_us(n.after_us),
            n.unit,
            n.change_pct
                .map(|c| format!("{c:+.1}%"))
                .unwrap_or_else(|| "-".into())
        ),
        (None, Some(why)) => format!(" — the step times cannot be compared: {why}"),
        _ => String::new(),
    };
    Some(format!("not the same workload: {}{tail}", diffs.join(", ")))
}
