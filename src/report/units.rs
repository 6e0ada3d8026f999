//! How every renderer prints a number: durations (ns, µs, ms, s), percentages and shares,
//! bytes and counts. Terminal, Markdown, HTML, CSV and the comparison renderers
//! (`diff::render`) call these and nothing else, so a unit prints the same everywhere.
//!
//! The duration, percentage, byte and count formatters are defined once, in [`crate::text`]
//! (below the diagnosis, which writes the same units into its sentences), and named here.
//! Two spellings differ between outputs today and are kept, byte for byte, as explicit
//! variants rather than silently unified:
//! - a zero duration prints `0` here ([`fmt_us`]) but `0 ns` in the diagnosis' sentences
//!   ([`crate::text::fmt_us_sentence`], which also scales by way of ns);
//! - a ratio prints with two decimals in the device columns ([`fmt_pct`]: `41.25%`) and
//!   with one everywhere else ([`ratio`], [`share`]: `41.3%`, [`crate::text::pct`]).

pub use crate::text::count as fmt_count;
pub use crate::text::{fmt_bytes, fmt_us};

/// [`fmt_us`] of a value that may be missing: `-` without one.
pub fn fmt_us_or_dash(v: Option<f64>) -> String {
    v.map(fmt_us).unwrap_or_else(|| "-".into())
}

/// A signed duration: `+2.70 ms`, `−58.08 ms` (a minus sign, U+2212), `0`.
pub fn signed_us(v: f64) -> String {
    if v > 0.0 {
        format!("+{}", fmt_us(v))
    } else if v < 0.0 {
        format!("−{}", fmt_us(-v))
    } else {
        "0".into()
    }
}

/// Bytes of a signed total, negatives as zero: `1.5 KiB`.
pub fn fmt_bytes_signed(b: i64) -> String {
    fmt_bytes(b.max(0) as u64)
}

/// A 0..1 ratio as a percentage with two decimals (`41.25%`), `-` when missing or not finite
/// (the device columns: utilization, SM efficiency, occupancy, tensor cores).
pub fn fmt_pct(v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{:.2}%", x * 100.0),
        _ => "-".into(),
    }
}

/// A 0..1 ratio as a percentage with one decimal: `0.125` → `12.5%` ([`crate::text::pct`]).
pub use crate::text::pct as ratio;

/// A 0..1 ratio as a whole percentage: `0.4125` → `41%`.
pub fn ratio_whole(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// `part` as a share of `total` with one decimal (`12.5%`), `-` when `total` is not positive.
pub fn share(part: f64, total: f64) -> String {
    if total > 0.0 {
        ratio(part / total)
    } else {
        "-".into()
    }
}

/// A value already in percent with one decimal (`87.5%`), `-` when missing.
pub fn percent(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.1}%")).unwrap_or_else(|| "-".into())
}

/// A value already in percent as a whole number (`62%`).
pub fn percent_whole(v: f64) -> String {
    format!("{v:.0}%")
}

/// A signed change in percent: `+12.5%`, `−3.0%` (U+2212), `0%`, `-` when missing.
pub fn signed_percent(v: Option<f64>) -> String {
    match v {
        Some(p) if p > 0.0 => format!("+{p:.1}%"),
        Some(p) if p < 0.0 => format!("−{:.1}%", -p),
        Some(_) => "0%".into(),
        None => "-".into(),
    }
}

/// The plural ending of a count: `""` for one, `"s"` otherwise.
pub fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(fmt_us(0.0), "0");
        assert_eq!(fmt_us(0.5), "500 ns");
        assert_eq!(fmt_us(41.25), "41.2 µs");
        assert_eq!(fmt_us(177592.0), "177.59 ms");
        assert_eq!(fmt_us(2_410_000.0), "2.41 s");
        assert_eq!(fmt_us(-41.25), "-41.2 µs");
        assert_eq!(fmt_us_or_dash(None), "-");
        assert_eq!(signed_us(2700.0), "+2.70 ms");
        assert_eq!(signed_us(-58080.0), "−58.08 ms");
        assert_eq!(signed_us(0.0), "0");
    }

    #[test]
    fn percentages() {
        assert_eq!(fmt_pct(Some(0.4125)), "41.25%");
        assert_eq!(fmt_pct(Some(f64::NAN)), "-");
        assert_eq!(fmt_pct(None), "-");
        assert_eq!(ratio(0.5), "50.0%");
        assert_eq!(ratio_whole(0.4125), "41%");
        assert_eq!(share(1.0, 8.0), "12.5%");
        assert_eq!(share(1.0, 0.0), "-");
        assert_eq!(percent(Some(87.46)), "87.5%");
        assert_eq!(percent(None), "-");
        assert_eq!(percent_whole(61.7), "62%");
        assert_eq!(signed_percent(Some(12.5)), "+12.5%");
        assert_eq!(signed_percent(Some(-3.0)), "−3.0%");
        assert_eq!(signed_percent(Some(0.0)), "0%");
        assert_eq!(signed_percent(None), "-");
    }

    #[test]
    fn bytes_and_counts() {
        assert_eq!(fmt_bytes(1536), "1.5 KiB");
        assert_eq!(fmt_bytes_signed(-5), "0 B");
        assert_eq!(fmt_count(1234567), "1,234,567");
    }
}
