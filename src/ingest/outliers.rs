//! Timestamps far outside a trace's span: one corrupt event (a timestamp of 0, a clock read
//! wrongly, a duration of years) must not stretch the trace, its window and every share
//! computed over it to hours. A reader finds the bounds with [`Bounds::of`] and drops what lies
//! beyond them, with a warning that counts them.
//!
//! The span is taken robustly: from the 0.1st percentile of the starts to the 99.9th
//! percentile of the ends, so a handful of corrupt events cannot move it. An event is far when
//! it starts before, or ends after, that span by more than ten times its length or
//! [`MIN_MARGIN`], whichever is larger: real traces have no such event (a capture of two bursts
//! an hour apart keeps both, since each holds far more than 0.1 % of the events). A trace of
//! fewer than 1000 events is never trimmed (its percentiles are its extremes).

use crate::model::Ns;

/// The smallest distance from the bulk of the events at which an event is far: 10 minutes.
pub const MIN_MARGIN: Ns = 600_000_000_000;

/// Spans the percentiles are taken over, at most (1 MiB of timestamps).
pub const SAMPLE: usize = 65_536;

/// The time range outside which an event is far (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Events starting before this are far.
    pub lo: Ns,
    /// Events ending after this are far.
    pub hi: Ns,
}

impl Bounds {
    /// The bounds of `n` `(start, duration)` spans, `span(i)` the `i`th; `None` when nothing
    /// can be far (fewer than 1000 spans). The percentiles are taken over at most [`SAMPLE`]
    /// of them, evenly spaced (the `k × ⌈n / SAMPLE⌉`th), so the memory this takes stays small
    /// whatever the trace, and only those are looked at.
    pub fn of(n: usize, span: impl Fn(usize) -> (Ns, Ns)) -> Option<Bounds> {
        let (mut starts, mut ends): (Vec<Ns>, Vec<Ns>) = (0..n)
            .step_by(n.div_ceil(SAMPLE).max(1))
            .map(|i| {
                let (s, d) = span(i);
                (s, s.saturating_add(d.max(0)))
            })
            .unzip();
        let n = starts.len();
        let k = n / 1000;
        if k == 0 {
            return None;
        }
        let lo = *starts.select_nth_unstable(k).1;
        let hi = *ends.select_nth_unstable(n - 1 - k).1;
        let margin = hi.saturating_sub(lo).saturating_mul(10).max(MIN_MARGIN);
        Some(Bounds {
            lo: lo.saturating_sub(margin),
            hi: hi.saturating_add(margin),
        })
    }

    /// True when a span starting at `start` and lasting `dur` lies far outside.
    pub fn far(&self, start: Ns, dur: Ns) -> bool {
        start < self.lo || start.saturating_add(dur.max(0)) > self.hi
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_corrupt_event_is_far_two_bursts_are_not() {
        let mut spans: Vec<(Ns, Ns)> = (0..5000).map(|i| (1_000_000 * i, 500_000)).collect();
        let b = Bounds::of(spans.len(), |i| spans[i]).unwrap();
        assert!(!spans.iter().any(|&(s, d)| b.far(s, d)));
        // a timestamp of 0 in a trace whose clock reads hours, and a duration of a day
        let t0 = 3_600_000_000_000_000;
        let shifted: Vec<(Ns, Ns)> = spans.iter().map(|&(s, d)| (s + t0, d)).collect();
        let mut bad = shifted.clone();
        bad.push((0, 10));
        bad.push((t0 + 5, 86_400_000_000_000));
        let b = Bounds::of(bad.len(), |i| bad[i]).unwrap();
        assert_eq!(bad.iter().filter(|&&(s, d)| b.far(s, d)).count(), 2);
        // two bursts an hour apart: both kept
        spans.extend((0..5000).map(|i| (3_600_000_000_000 + 1_000_000 * i, 500_000)));
        let b = Bounds::of(spans.len(), |i| spans[i]).unwrap();
        assert!(!spans.iter().any(|&(s, d)| b.far(s, d)));
        // small traces are never trimmed
        let two = [(0, 1), (i64::MAX / 2, 1)];
        assert!(Bounds::of(2, |i| two[i]).is_none());
    }
}
