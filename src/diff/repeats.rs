//! Repeated runs and the comparison's typed verdict.
//!
//! One capture per side tells the step-to-step spread inside a run, not the spread between
//! runs: a second capture of the same program lands a few percent away (other processes, CPU
//! frequency, allocator and cache state, the GPU's clocks), and a gate that only knows the
//! steps of one capture flaps (an identical-source control failing a 5 % gate at +8.95 %). With
//! several captures per side (`diff --before A1 A2 A3 --after B1 B2 B3`), each run is reduced
//! to its mean step time, and the change is tested against the spread of the run means
//! (Welch's t-test on their logarithms: a run's noise is a factor — a loaded machine slows
//! every step of a run alike — and the budget is a ratio; the change judged is the ratio of
//! the geometric means of the run means). The variance of a run mean holds both the
//! run-to-run variance and the step-to-step variance of the run (divided by its steps), so the
//! change is judged against both.
//!
//! The [`Verdict`] is typed, with its reason in words:
//!
//! * `regression`: slower beyond noise, by more than the budget;
//! * `within_budget`: slower beyond noise, by no more than the budget;
//! * `improvement`: faster beyond noise;
//! * `no_change`: no change beyond noise, and (with repeats) the 95 % interval of the change
//!   stays under the budget, so a budget-sized regression is ruled out;
//! * `inconclusive`: the noise cannot tell (too few steps or runs; or the interval reaches over
//!   the budget, e.g. "run-to-run spread 9.0 % exceeds the 5.0 % budget").
//!
//! With one capture per side the verdict follows the Mann–Whitney test on the steps of the two
//! captures ([`super::stats`]) and says that the run-to-run spread was not measured.

use serde::Serialize;

use super::stats::{Judgement, NoiseTest};

/// Default budget of the verdict, percent of the before step time (`check`'s default too).
pub const DEFAULT_BUDGET_PCT: f64 = 5.0;

/// The verdict's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// Slower beyond noise, by more than the budget.
    Regression,
    /// Slower beyond noise, within the budget.
    WithinBudget,
    /// Faster beyond noise.
    Improvement,
    /// No change beyond noise.
    NoChange,
    /// The noise cannot tell; `reason` says why.
    Inconclusive,
}

impl VerdictKind {
    /// As written in the outputs: `regression`, `within budget`, `improvement`,
    /// `no change beyond noise`, `inconclusive`.
    pub fn words(self) -> &'static str {
        match self {
            VerdictKind::Regression => "regression",
            VerdictKind::WithinBudget => "slower, within budget",
            VerdictKind::Improvement => "improvement",
            VerdictKind::NoChange => "no change beyond noise",
            VerdictKind::Inconclusive => "inconclusive",
        }
    }
}

/// What the verdict was judged on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictBasis {
    /// The run means of several captures per side (Welch's t-test).
    Runs,
    /// The steps of one capture per side (Mann–Whitney U).
    Steps,
}

/// The comparison's verdict on the step time.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// Kind.
    pub kind: VerdictKind,
    /// Runs or steps.
    pub basis: VerdictBasis,
    /// `step` or `sample` (the sides' batches differ: time per sample is judged).
    pub unit: &'static str,
    /// The change judged, percent of before (absent when before is 0).
    pub change_pct: Option<f64>,
    /// The budget, percent.
    pub budget_pct: f64,
    /// Two-sided p-value of the test (absent when it could not run).
    pub p_value: Option<f64>,
    /// Why, in one line.
    pub reason: String,
}

impl Verdict {
    /// Whether a CI gate fails on it: a regression; or an inconclusive change whose estimate
    /// is over the budget when the noise could not be measured (too few steps, too few runs,
    /// steps that cannot be compared): a gate must not pass a large regression because the
    /// profile was too short. With the run-to-run spread measured and the change inside it,
    /// the gate passes and says `inconclusive` with the reason: failing there is what makes
    /// an identical-source control flap.
    pub fn fails_gate(&self) -> bool {
        let over = self.change_pct.is_some_and(|p| p > self.budget_pct);
        match self.kind {
            VerdictKind::Regression => true,
            VerdictKind::Inconclusive => {
                over && (self.basis == VerdictBasis::Steps || self.p_value.is_none())
            }
            _ => false,
        }
    }

    /// `regression: slower by 31.2 % …` — the kind and the reason in one line.
    pub fn line(&self) -> String {
        format!("{}: {}", self.kind.words(), self.reason)
    }
}

/// One capture of a side.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    /// Path as given.
    pub path: String,
    /// Steps of its window.
    pub steps: usize,
    /// Mean step time, µs (per sample when the verdict's unit is `sample`).
    pub mean_us: f64,
    /// Sample standard deviation of its steps, µs (0 with fewer than two).
    pub stdev_us: f64,
}

/// The runs of one side.
#[derive(Debug, Clone, Serialize)]
pub struct SideRuns {
    /// Every capture, as given.
    pub runs: Vec<Run>,
    /// Mean of the run means, µs.
    pub mean_us: f64,
    /// Sample standard deviation of the run means, µs (0 with one run).
    pub stdev_us: f64,
    /// Run-to-run spread: (largest − smallest run mean) ÷ mean, percent.
    pub spread_pct: f64,
    /// Step-to-step spread inside the runs: mean of each run's stdev ÷ its mean, percent.
    pub within_pct: f64,
    /// The run compared in the tables (the median run mean; the lower of the two middle runs
    /// for an even count), index into `runs`.
    pub representative: usize,
}

/// The repeated-run comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Repeats {
    /// Before.
    pub before: SideRuns,
    /// After.
    pub after: SideRuns,
    /// Mean of the after run means − mean of the before run means, µs.
    pub change_us: f64,
    /// Relative to before, percent.
    pub change_pct: Option<f64>,
    /// The change the test judges: the ratio of the geometric means of the run means − 1,
    /// percent (absent when a run mean is 0).
    pub ratio_pct: Option<f64>,
    /// 95 % (1 − alpha) interval of that ratio − 1, percent.
    pub interval_pct: Option<(f64, f64)>,
    /// Welch's t statistic on the logarithms of the run means.
    pub t: Option<f64>,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: Option<f64>,
    /// Two-sided p-value.
    pub p_value: Option<f64>,
    /// How much larger the run means spread than the steps inside the runs predict
    /// (stdev of the run means ÷ (step stdev ÷ √steps)), pooled over the sides with two runs
    /// or more: ≫ 1 when the run-to-run variance dominates, so a test on the steps of one
    /// capture would call a control a change.
    pub between_over_within: Option<f64>,
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn sample_sd(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = mean(v);
    (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
}

/// One side's runs from each capture's per-step durations (µs, already per sample when
/// normalized) and path.
pub fn side_runs(runs: &[(String, Vec<f64>)]) -> SideRuns {
    let rs: Vec<Run> = runs
        .iter()
        .map(|(p, d)| Run {
            path: p.clone(),
            steps: d.len(),
            mean_us: mean(d),
            stdev_us: sample_sd(d),
        })
        .collect();
    let means: Vec<f64> = rs.iter().map(|r| r.mean_us).collect();
    let m = mean(&means);
    let (lo, hi) = means
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        });
    let mut order: Vec<usize> = (0..rs.len()).collect();
    order.sort_by(|&a, &b| means[a].total_cmp(&means[b]).then(a.cmp(&b)));
    let representative = order
        .get((order.len().max(1) - 1) / 2)
        .copied()
        .unwrap_or(0);
    let within: Vec<f64> = rs
        .iter()
        .filter(|r| r.mean_us > 0.0)
        .map(|r| r.stdev_us / r.mean_us * 100.0)
        .collect();
    SideRuns {
        stdev_us: sample_sd(&means),
        spread_pct: if m > 0.0 && rs.len() > 1 {
            (hi - lo) / m * 100.0
        } else {
            0.0
        },
        within_pct: mean(&within),
        mean_us: m,
        representative,
        runs: rs,
    }
}

/// Compares the runs of two sides with Welch's t-test on the run means, at two-sided level
/// `alpha`. With one run on a side, that side is taken to spread as the other does (the
/// pooled test with the other side's degrees of freedom); with one run on both, there is no
/// test (`p_value` absent).
pub fn compare_runs(before: SideRuns, after: SideRuns, alpha: f64) -> Repeats {
    let (nb, na) = (before.runs.len() as f64, after.runs.len() as f64);
    let change = after.mean_us - before.mean_us;
    // on the logarithms of the run means: a run's noise is a factor (a loaded machine slows
    // every step of it alike), and the budget is a ratio
    let logs = |s: &SideRuns| -> Option<Vec<f64>> {
        s.runs
            .iter()
            .map(|r| (r.mean_us > 0.0).then(|| r.mean_us.ln()))
            .collect()
    };
    let (lb, la) = match (logs(&before), logs(&after)) {
        (Some(b), Some(a)) => (b, a),
        _ => (Vec::new(), Vec::new()),
    };
    let usable = !lb.is_empty() && !la.is_empty();
    let (vb, va) = (sample_sd(&lb).powi(2), sample_sd(&la).powi(2));
    let dl = if usable { mean(&la) - mean(&lb) } else { 0.0 };
    let (se, df) = match (usable, before.runs.len() >= 2, after.runs.len() >= 2) {
        (false, _, _) => (None, None),
        (_, true, true) => {
            let (qb, qa) = (vb / nb, va / na);
            let se2 = qb + qa;
            let den = qb * qb / (nb - 1.0) + qa * qa / (na - 1.0);
            (
                Some(se2.sqrt()),
                Some(if den > 0.0 {
                    se2 * se2 / den
                } else {
                    nb + na - 2.0
                }),
            )
        }
        (_, true, false) => (Some((vb * (1.0 / nb + 1.0 / na)).sqrt()), Some(nb - 1.0)),
        (_, false, true) => (Some((va * (1.0 / nb + 1.0 / na)).sqrt()), Some(na - 1.0)),
        (_, false, false) => (None, None),
    };
    let ratio_pct = |l: f64| (l.exp() - 1.0) * 100.0;
    let (t, p, interval) = match (se, df) {
        (Some(se), Some(df)) if se > 0.0 => {
            let t = dl / se;
            let p = t_two_sided_p(t.abs(), df);
            let q = t_quantile_two_sided(alpha, df);
            (
                Some(t),
                Some(p),
                Some((ratio_pct(dl - q * se), ratio_pct(dl + q * se))),
            )
        }
        // identical run means within both sides (the same files): no spread to test against
        (Some(_), Some(_)) => {
            let p = if dl == 0.0 { 1.0 } else { 0.0 };
            (None, Some(p), Some((ratio_pct(dl), ratio_pct(dl))))
        }
        _ => (None, None, None),
    };
    // the run means spread against what the steps inside the runs predict
    let ratio = |s: &SideRuns| -> Option<(f64, f64)> {
        if s.runs.len() < 2 {
            return None;
        }
        let predicted: Vec<f64> = s
            .runs
            .iter()
            .map(|r| r.stdev_us.powi(2) / r.steps.max(1) as f64)
            .collect();
        Some((s.stdev_us.powi(2), mean(&predicted)))
    };
    let parts: Vec<(f64, f64)> = [ratio(&before), ratio(&after)]
        .into_iter()
        .flatten()
        .collect();
    let between_over_within = if parts.is_empty() {
        None
    } else {
        let (obs, pred) = (
            mean(&parts.iter().map(|p| p.0).collect::<Vec<_>>()),
            mean(&parts.iter().map(|p| p.1).collect::<Vec<_>>()),
        );
        (pred > 0.0).then(|| (obs / pred).sqrt())
    };
    Repeats {
        change_us: change,
        change_pct: super::stats::change_pct(change, before.mean_us),
        ratio_pct: usable.then(|| ratio_pct(dl)),
        interval_pct: interval,
        t,
        df,
        p_value: p,
        between_over_within,
        before,
        after,
    }
}

fn fmt_pct(v: f64) -> String {
    if v >= 0.0 {
        format!("+{v:.1} %")
    } else {
        format!("−{:.1} %", -v)
    }
}

/// The verdict of a repeated-run comparison against `budget_pct`, at level `alpha`.
pub fn verdict_of_runs(r: &Repeats, budget_pct: f64, alpha: f64, unit: &'static str) -> Verdict {
    let runs = format!(
        "{} runs before, {} after",
        r.before.runs.len(),
        r.after.runs.len()
    );
    let mk = |kind, reason: String| Verdict {
        kind,
        basis: VerdictBasis::Runs,
        unit,
        change_pct: r.ratio_pct,
        budget_pct,
        p_value: r.p_value,
        reason,
    };
    let (Some(ch), Some(p)) = (r.ratio_pct, r.p_value) else {
        return mk(
            VerdictKind::Inconclusive,
            format!(
                "too few runs to measure the run-to-run spread ({runs}; at least 2 on one side)"
            ),
        );
    };
    let iv = r
        .interval_pct
        .map(|(lo, hi)| {
            format!(
                "{:.0} % interval {} … {}",
                (1.0 - alpha) * 100.0,
                fmt_pct(lo),
                fmt_pct(hi)
            )
        })
        .unwrap_or_default();
    let spread = r.before.spread_pct.max(r.after.spread_pct);
    let per = if unit == "sample" { " per sample" } else { "" };
    let stat = format!("Welch t on log run means, p = {p:.3}; {iv}; {runs}");
    if p < alpha && ch > 0.0 {
        if ch > budget_pct {
            mk(
                VerdictKind::Regression,
                format!(
                    "slower{per} by {} beyond the run-to-run noise, over the {budget_pct:.1} % budget ({stat})",
                    fmt_pct(ch)
                ),
            )
        } else {
            mk(
                VerdictKind::WithinBudget,
                format!(
                    "slower{per} by {} beyond the run-to-run noise, within the {budget_pct:.1} % budget ({stat})",
                    fmt_pct(ch)
                ),
            )
        }
    } else if p < alpha {
        mk(
            VerdictKind::Improvement,
            format!(
                "faster{per} by {} beyond the run-to-run noise ({stat})",
                fmt_pct(-ch).replace('+', "")
            ),
        )
    } else {
        let hi = r.interval_pct.map(|x| x.1).unwrap_or(ch);
        if hi <= budget_pct {
            mk(
                VerdictKind::NoChange,
                format!(
                    "{}{per} is inside the run-to-run noise and the interval stays under the \
                     {budget_pct:.1} % budget ({stat})",
                    fmt_pct(ch)
                ),
            )
        } else if spread > budget_pct {
            mk(
                VerdictKind::Inconclusive,
                format!(
                    "run-to-run spread {spread:.1} % exceeds the {budget_pct:.1} % budget: \
                     {} is not beyond noise, and a {budget_pct:.1} % regression could hide in it ({stat})",
                    fmt_pct(ch)
                ),
            )
        } else {
            mk(
                VerdictKind::Inconclusive,
                format!(
                    "{} is not beyond noise, but the interval reaches over the {budget_pct:.1} % \
                     budget: more runs would narrow it ({stat})",
                    fmt_pct(ch)
                ),
            )
        }
    }
}

/// The verdict of one capture per side, from the Mann–Whitney test on their steps.
pub fn verdict_of_steps(
    noise: &NoiseTest,
    change_pct: Option<f64>,
    budget_pct: f64,
    unit: &'static str,
) -> Verdict {
    let ch = change_pct.unwrap_or(0.0);
    let per = if unit == "sample" { " per sample" } else { "" };
    let test = noise
        .p_value
        .map(|p| format!("Mann-Whitney U on the steps, p = {p:.3}"))
        .unwrap_or_else(|| "Mann-Whitney U on the steps".into());
    let unmeasured = "one capture per side: the run-to-run spread is not measured";
    let (kind, reason) = match noise.judgement {
        Judgement::Slower if ch > budget_pct => (
            VerdictKind::Regression,
            format!(
                "slower{per} by {} beyond the step-to-step noise, over the {budget_pct:.1} % budget ({test}; {unmeasured})",
                fmt_pct(ch)
            ),
        ),
        Judgement::Slower => (
            VerdictKind::WithinBudget,
            format!(
                "slower{per} by {} beyond the step-to-step noise, within the {budget_pct:.1} % budget ({test}; {unmeasured})",
                fmt_pct(ch)
            ),
        ),
        Judgement::Faster => (
            VerdictKind::Improvement,
            format!(
                "faster{per} by {} beyond the step-to-step noise ({test}; {unmeasured})",
                fmt_pct(-ch).replace('+', "")
            ),
        ),
        Judgement::WithinNoise => (
            VerdictKind::NoChange,
            format!(
                "{}{per} is inside the step-to-step noise ({test}; {unmeasured})",
                fmt_pct(ch)
            ),
        ),
        Judgement::TooFewSteps => (
            VerdictKind::Inconclusive,
            format!(
                "{}{per}; {}",
                fmt_pct(ch),
                noise.reason.as_deref().unwrap_or("too few steps to judge noise")
            ),
        ),
    };
    Verdict {
        kind,
        basis: VerdictBasis::Steps,
        unit,
        change_pct,
        budget_pct,
        p_value: noise.p_value,
        reason,
    }
}

// ---- Student's t distribution ----------------------------------------------------------------

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms; |error| < 1e-13 over the range used here).
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // reflection
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The continued fraction of the incomplete beta function (modified Lentz).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / off_zero(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..=300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = off_zero(1.0 + aa * d);
        c = off_zero(1.0 + aa / c);
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = off_zero(1.0 + aa * d);
        c = off_zero(1.0 + aa / c);
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// `x`, or a tiny number when it is closer to zero (Lentz's guard against a zero
/// denominator).
fn off_zero(x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    if x.abs() < TINY {
        TINY
    } else {
        x
    }
}

/// The regularized incomplete beta function I_x(a, b).
fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

/// P(|T| ≥ t) for Student's t with `df` degrees of freedom (t ≥ 0; df > 0, not necessarily an
/// integer).
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return 0.0;
    }
    inc_beta(df / 2.0, 0.5, df / (df + t * t)).clamp(0.0, 1.0)
}

/// The t with P(|T| ≥ t) = `alpha` for `df` degrees of freedom (by bisection).
pub fn t_quantile_two_sided(alpha: f64, df: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while t_two_sided_p(hi, df) > alpha && hi < 1e12 {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_two_sided_p(mid, df) > alpha {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_tables() {
        // two-sided 5 % critical values (any statistics table)
        for (df, q) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (3.0, 3.182),
            (4.0, 2.776),
            (10.0, 2.228),
            (30.0, 2.042),
        ] {
            let got = t_quantile_two_sided(0.05, df);
            assert!((got - q).abs() < 1e-3, "df {df}: {got} vs {q}");
        }
        // two-sided 1 %, df 5: 4.032
        assert!((t_quantile_two_sided(0.01, 5.0) - 4.032).abs() < 1e-3);
        // df = 1 is Cauchy: P(|T| ≥ 1) = 1/2
        assert!((t_two_sided_p(1.0, 1.0) - 0.5).abs() < 1e-12);
        assert_eq!(t_two_sided_p(0.0, 4.0), 1.0);
    }

    fn runs(means: &[f64], sd: f64) -> SideRuns {
        // each run: 10 steps around its mean with sample stdev `sd`
        let r: Vec<(String, Vec<f64>)> = means
            .iter()
            .enumerate()
            .map(|(i, &m)| {
                let d: Vec<f64> = (0..10)
                    .map(|k| m + (if k % 2 == 0 { sd } else { -sd }) * 0.9f64.sqrt())
                    .collect();
                (format!("run{i}"), d)
            })
            .collect();
        side_runs(&r)
    }

    #[test]
    fn welch_by_hand() {
        // run means 100, 102, 104 against 110, 113, 116, on their logarithms (computed in
        // Python: statistics.mean/variance of math.log): Δ = 0.1023082, t = 5.3678558,
        // df = 3.6813422; p = 0.00733749 by mpmath.betainc(df/2, 1/2, 0, df/(df+t²),
        // regularized=True); geometric-mean ratio +10.7725 %
        let b = runs(&[100.0, 102.0, 104.0], 1.0);
        let a = runs(&[110.0, 113.0, 116.0], 1.0);
        assert!((b.mean_us - 102.0).abs() < 1e-9 && (b.stdev_us - 2.0).abs() < 1e-9);
        assert_eq!(b.representative, 1);
        assert!((b.spread_pct - 4.0 / 102.0 * 100.0).abs() < 1e-9);
        let r = compare_runs(b, a, 0.05);
        assert!((r.change_us - 11.0).abs() < 1e-9);
        assert!((r.t.unwrap() - 5.367_855_776).abs() < 1e-8, "{:?}", r.t);
        assert!((r.df.unwrap() - 3.681_342_216).abs() < 1e-8, "{:?}", r.df);
        assert!((r.ratio_pct.unwrap() - 10.772_477_457).abs() < 1e-8);
        let p = r.p_value.unwrap();
        assert!((p - 0.007_337_488).abs() < 1e-8, "{p}");
        // the t distribution alone, on the untransformed means: t = 5.2842 on 3.4845 df,
        // p = 0.00896277 (mpmath)
        assert!(
            (t_two_sided_p(5.284_229_075_567_88, 3.484_536_082_474_226) - 0.008_962_770).abs()
                < 1e-8
        );
        let v = verdict_of_runs(&r, 5.0, 0.05, "step");
        assert_eq!(v.kind, VerdictKind::Regression, "{}", v.reason);
        assert!(v.fails_gate());
    }

    #[test]
    fn a_control_with_small_spread_is_no_change_and_a_wide_one_is_inconclusive() {
        let r = compare_runs(
            runs(&[100.0, 101.0, 99.5], 2.0),
            runs(&[100.5, 99.0, 101.0], 2.0),
            0.05,
        );
        let v = verdict_of_runs(&r, 5.0, 0.05, "step");
        assert_eq!(v.kind, VerdictKind::NoChange, "{}", v.reason);
        assert!(!v.fails_gate());
        // a spread of 8.6 % (9 of 104.3 µs): not beyond noise, and a 5 % regression could hide in it
        let r = compare_runs(
            runs(&[100.0, 109.0, 104.0], 2.0),
            runs(&[101.0, 110.0, 106.0], 2.0),
            0.05,
        );
        let v = verdict_of_runs(&r, 5.0, 0.05, "step");
        assert_eq!(v.kind, VerdictKind::Inconclusive, "{}", v.reason);
        assert!(
            v.reason
                .starts_with("run-to-run spread 8.6 % exceeds the 5.0 % budget"),
            "{}",
            v.reason
        );
        assert!(!v.fails_gate(), "the estimate +1.3 % is under the budget");
        // the run means spread far more than 10 steps of stdev 2 predict (0.63 µs)
        assert!(r.between_over_within.unwrap() > 5.0);
    }

    #[test]
    fn one_run_per_side_has_no_run_test() {
        let r = compare_runs(runs(&[100.0], 1.0), runs(&[120.0], 1.0), 0.05);
        assert!(r.p_value.is_none());
        let v = verdict_of_runs(&r, 5.0, 0.05, "step");
        assert_eq!(v.kind, VerdictKind::Inconclusive);
        assert!(v.fails_gate(), "+20 % with no way to judge fails the gate");
        // identical runs: no change
        let r = compare_runs(runs(&[100.0, 100.0], 1.0), runs(&[100.0, 100.0], 1.0), 0.05);
        assert_eq!(
            verdict_of_runs(&r, 5.0, 0.05, "step").kind,
            VerdictKind::NoChange
        );
    }
}
