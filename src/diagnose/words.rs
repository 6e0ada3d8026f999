//! How the rules write numbers and names into their sentences (titles, evidence facts,
//! advice): adaptive time units, percentages, counts and shortened kernel names.

/// Formats ns with an adaptive unit (`812 ns`, `41.3 µs`, `177.59 ms`, `2.41 s`).
pub fn fmt_ns(ns: f64) -> String {
    let a = ns.abs();
    if a < 1000.0 {
        format!("{ns:.0} ns")
    } else if a < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if a < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// Formats µs with an adaptive unit.
pub fn fmt_us(us: f64) -> String {
    fmt_ns(us * 1000.0)
}

/// Formats a 0..1 share as a percentage with one decimal.
pub fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

pub use crate::text::count;

/// Shortens a long (kernel) name to `max` characters, keeping both ends.
pub fn short(s: &str, max: usize) -> String {
    crate::text::shorten_middle(s, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting() {
        assert_eq!(fmt_ns(812.0), "812 ns");
        assert_eq!(fmt_ns(41_250.0), "41.2 µs");
        assert_eq!(fmt_us(177_592.0), "177.59 ms");
        assert_eq!(count(4210), "4,210");
        assert_eq!(short("abcdefghij", 5), "ab…ij");
    }
}
