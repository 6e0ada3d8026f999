//! The noise test of a comparison: is the step-time change larger than the step-to-step spread?
//!
//! Steps of two profiles are two independent samples whose distribution is unknown (a slow
//! DataLoader step, a compile step and a steady step are not one bell curve), so the test is
//! nonparametric: the two-sided **Mann–Whitney U test** (Wilcoxon rank-sum) on the per-step
//! durations. Its p-value is exact (the distribution of U over every assignment of ranks,
//! counted by dynamic programming) when both sides have at most [`EXACT_MAX`] steps and no
//! durations are tied; otherwise it is the normal approximation with the tie correction and a
//! continuity correction of ½. Beside the p-value the test states the strongest plain fact:
//! every after-step is faster (or slower) than every before-step (U = 0 or U = n₁n₂).
//!
//! With fewer than [`MIN_STEPS`] steps on a side, or when even a complete separation of the two
//! samples could not reach the significance level (3 against 3 steps: p ≥ 0.1), the test says
//! it cannot judge instead of guessing.

use serde::Serialize;

/// Fewest steps per side the test judges.
pub const MIN_STEPS: usize = 3;

/// Largest side for the exact distribution (C(40, 20) orderings are counted in u128).
pub const EXACT_MAX: usize = 40;

/// Outcome of the noise test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Judgement {
    /// After is faster, beyond noise.
    Faster,
    /// After is slower, beyond noise.
    Slower,
    /// The change is within the step-to-step spread.
    WithinNoise,
    /// Too few steps on a side to tell.
    TooFewSteps,
}

/// The Mann–Whitney U test on two samples of step durations.
#[derive(Debug, Clone, Serialize)]
pub struct NoiseTest {
    /// The test's name as printed.
    pub test: String,
    /// Steps before.
    pub n_before: usize,
    /// Steps after.
    pub n_after: usize,
    /// U of the before sample: pairs (before, after) where the before-step is longer, ties ½.
    pub u: f64,
    /// Two-sided p-value (absent with too few steps).
    pub p_value: Option<f64>,
    /// `exact` or `normal approximation`.
    pub method: &'static str,
    /// Significance level.
    pub alpha: f64,
    /// Result.
    pub judgement: Judgement,
    /// Every after-step shorter than every before-step.
    pub all_after_faster: bool,
    /// Every after-step longer than every before-step.
    pub all_after_slower: bool,
    /// Why the test could not judge, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `change` as a percentage of `base` (`+12.5`), absent when `base` is not positive: a step
/// or mean duration of zero has no percentage. The one percentage change of the comparison.
pub fn change_pct(change: f64, base: f64) -> Option<f64> {
    (base > 0.0).then(|| change / base * 100.0)
}

/// Runs the test on the per-step durations (any unit). `alpha` is the two-sided level.
pub fn mann_whitney(before: &[f64], after: &[f64], alpha: f64) -> NoiseTest {
    let (n1, n2) = (before.len(), after.len());
    let mut u = 0.0;
    for &b in before {
        for &a in after {
            if b > a {
                u += 1.0;
            } else if b == a {
                u += 0.5;
            }
        }
    }
    let pairs = (n1 * n2) as f64;
    let all_after_faster = n1 > 0 && n2 > 0 && u == pairs;
    let all_after_slower = n1 > 0 && n2 > 0 && u == 0.0;
    let mut t = NoiseTest {
        test: "Mann-Whitney U (two-sided, on per-step durations)".into(),
        n_before: n1,
        n_after: n2,
        u,
        p_value: None,
        method: "exact",
        alpha,
        judgement: Judgement::TooFewSteps,
        all_after_faster,
        all_after_slower,
        reason: None,
    };
    if n1 < MIN_STEPS || n2 < MIN_STEPS {
        t.reason = Some(format!(
            "too few steps to judge noise: {n1} before, {n2} after (at least {MIN_STEPS} each)"
        ));
        return t;
    }
    let mut all: Vec<f64> = before.iter().chain(after).copied().collect();
    all.sort_by(|a, b| a.total_cmp(b));
    let ties = all.windows(2).any(|w| w[0] == w[1]);
    let exact = !ties && n1 <= EXACT_MAX && n2 <= EXACT_MAX;
    // the smallest p-value any ordering could give: both samples completely separated
    let p_of = |u: f64| {
        if exact {
            exact_p(u as usize, n1, n2)
        } else {
            normal_p(u, n1, n2, &all)
        }
    };
    let best = p_of(0.0);
    let p = p_of(u);
    t.method = if exact {
        "exact"
    } else {
        "normal approximation"
    };
    t.p_value = Some(p);
    if best >= alpha {
        t.reason = Some(format!(
            "too few steps to judge noise: {n1} before, {n2} after cannot reach p < {alpha} \
             even if every step moved"
        ));
        return t;
    }
    t.judgement = if p >= alpha {
        Judgement::WithinNoise
    } else if u > pairs / 2.0 {
        Judgement::Faster
    } else {
        Judgement::Slower
    };
    t
}

/// Exact two-sided p-value of U = `u` (no ties): 2 × P(U ≤ min(u, n₁n₂ − u)), capped at 1.
fn exact_p(u: usize, n1: usize, n2: usize) -> f64 {
    let max = n1 * n2;
    let u = u.min(max - u);
    // counts[k][s]: orderings of k before-items among the first positions with U = s, built
    // one after-item at a time: f(n1, n2, s) = f(n1, n2 − 1, s) + f(n1 − 1, n2, s − n2)
    // computed as the number of partitions of s into at most n1 parts each ≤ n2
    // the orderings with U = s are the partitions of s into at most n1 parts each ≤ n2;
    // f[i][s] counts partitions into at most i parts each ≤ j, for j = 0, 1, …, n2:
    // p(i, j, s) = p(i, j − 1, s) + p(i − 1, j, s − j)
    let mut f = vec![vec![0u128; max + 1]; n1 + 1];
    for row in f.iter_mut() {
        row[0] = 1;
    }
    for j in 1..=n2 {
        let prev = f.clone();
        for i in 1..=n1 {
            for s in j..=max {
                f[i][s] = prev[i][s] + f[i - 1][s - j];
            }
        }
    }
    let total: u128 = f[n1].iter().sum();
    let le: u128 = f[n1][..=u].iter().sum();
    (2.0 * le as f64 / total as f64).min(1.0)
}

/// Normal approximation with tie and continuity corrections.
fn normal_p(u: f64, n1: usize, n2: usize, sorted_all: &[f64]) -> f64 {
    let (a, b) = (n1 as f64, n2 as f64);
    let n = a + b;
    let mean = a * b / 2.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < sorted_all.len() {
        let mut j = i;
        while j < sorted_all.len() && sorted_all[j] == sorted_all[i] {
            j += 1;
        }
        let t = (j - i) as f64;
        tie_term += t * t * t - t;
        i = j;
    }
    let var = a * b / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
    (2.0 * normal_sf(z)).min(1.0)
}

/// Upper tail of the standard normal distribution, from erfc (W. J. Cody's rational
/// approximation via the complementary error function, |error| < 1.2e-7).
fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    // Numerical Recipes' erfcc (Chebyshev fit), fractional error < 1.2e-7
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_distribution_matches_tables() {
        // 3 vs 3: 20 orderings, U = 0 once → two-sided 0.1
        assert!((exact_p(0, 3, 3) - 0.1).abs() < 1e-12);
        // 4 vs 4: 70 orderings, U ≤ 1 twice → 4/70
        assert!((exact_p(1, 4, 4) - 4.0 / 70.0).abs() < 1e-12);
        // 6 vs 6: 924 orderings, U = 0 once → 2/924
        assert!((exact_p(0, 6, 6) - 2.0 / 924.0).abs() < 1e-12);
        // the middle of the distribution is p = 1
        assert_eq!(exact_p(18, 6, 6), 1.0);
        // symmetric in U
        assert!((exact_p(3, 5, 7) - exact_p(32, 5, 7)).abs() < 1e-12);
    }

    #[test]
    fn separated_samples_are_beyond_noise() {
        let b = [100.0, 101.0, 102.0, 103.0, 104.0, 105.0];
        let a = [90.0, 91.0, 92.0, 93.0, 94.0, 95.0];
        let t = mann_whitney(&b, &a, 0.05);
        assert_eq!(t.judgement, Judgement::Faster);
        assert!(t.all_after_faster);
        assert!((t.p_value.unwrap() - 2.0 / 924.0).abs() < 1e-12);
        let t = mann_whitney(&a, &b, 0.05);
        assert_eq!(t.judgement, Judgement::Slower);
        assert!(t.all_after_slower);
    }

    #[test]
    fn identical_samples_are_within_noise() {
        let b = [100.0, 103.0, 101.0, 99.0, 102.0];
        let t = mann_whitney(&b, &b, 0.05);
        assert_eq!(t.judgement, Judgement::WithinNoise);
        assert_eq!(t.p_value, Some(1.0));
        assert_eq!(t.method, "normal approximation"); // ties between the sides
    }

    #[test]
    fn too_few_steps_say_so() {
        let t = mann_whitney(&[1.0, 2.0], &[3.0, 4.0, 5.0], 0.05);
        assert_eq!(t.judgement, Judgement::TooFewSteps);
        let t = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], 0.05);
        assert_eq!(t.judgement, Judgement::TooFewSteps);
        assert!(t.all_after_slower);
    }

    #[test]
    fn normal_approximation_is_close_to_exact() {
        let b: Vec<f64> = (0..20).map(|i| i as f64 * 1.5).collect();
        let a: Vec<f64> = (0..20).map(|i| i as f64 * 1.5 + 7.25).collect();
        let t = mann_whitney(&b, &a, 0.05);
        let mut all: Vec<f64> = b.iter().chain(&a).copied().collect();
        all.sort_by(|x, y| x.total_cmp(y));
        let approx = normal_p(t.u, 20, 20, &all);
        let exact = t.p_value.unwrap();
        assert!((approx - exact).abs() < 0.01, "{approx} vs {exact}");
    }
}
