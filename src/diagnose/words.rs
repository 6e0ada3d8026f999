//! How the rules write numbers and names into their sentences (titles, evidence facts,
//! advice): adaptive time units, percentages, counts and shortened kernel names.

pub use crate::text::{count, fmt_ns, fmt_us_sentence, pct};

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
        assert_eq!(fmt_us_sentence(177_592.0), "177.59 ms");
        assert_eq!(count(4210), "4,210");
        assert_eq!(short("abcdefghij", 5), "ab…ij");
    }
}
