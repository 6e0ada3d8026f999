//! Interval arithmetic on half-open `[start, end)` nanosecond intervals.
//!
//! Every "busy", "idle", "exposed" or "union" figure in stallscope is computed here, once:
//! per-stream sums are never used where the device-level union is meant.

use super::Ns;

/// A half-open interval `[start, end)` in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Interval {
    /// Inclusive start.
    pub start: Ns,
    /// Exclusive end.
    pub end: Ns,
}

impl Interval {
    /// Builds an interval; an `end` before `start` gives an empty interval at `start`.
    pub fn new(start: Ns, end: Ns) -> Self {
        Interval {
            start,
            end: end.max(start),
        }
    }

    /// Length in ns.
    pub fn len(&self) -> Ns {
        self.end - self.start
    }

    /// True for a zero-length interval.
    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }

    /// Overlap with another interval, in ns.
    pub fn overlap(&self, other: &Interval) -> Ns {
        (self.end.min(other.end) - self.start.max(other.start)).max(0)
    }
}

/// A sorted set of disjoint, non-adjacent intervals: the union of what was added.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IntervalSet {
    spans: Vec<Interval>,
}

impl IntervalSet {
    /// The empty set.
    pub fn new() -> Self {
        IntervalSet { spans: Vec::new() }
    }

    /// Union of arbitrary (unsorted, overlapping) intervals. Empty intervals are dropped.
    pub fn from_intervals<I: IntoIterator<Item = Interval>>(iter: I) -> Self {
        let mut v: Vec<Interval> = iter.into_iter().filter(|i| !i.is_empty()).collect();
        v.sort_unstable();
        Self::from_sorted(v)
    }

    /// Union of intervals already sorted by start.
    fn from_sorted(v: Vec<Interval>) -> Self {
        let mut out: Vec<Interval> = Vec::with_capacity(v.len());
        for iv in v {
            match out.last_mut() {
                Some(last) if iv.start <= last.end => {
                    if iv.end > last.end {
                        last.end = iv.end;
                    }
                }
                _ => out.push(iv),
            }
        }
        IntervalSet { spans: out }
    }

    /// The disjoint intervals, sorted.
    pub fn spans(&self) -> &[Interval] {
        &self.spans
    }

    /// True when the set covers nothing.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Total covered length in ns.
    pub fn total(&self) -> Ns {
        self.spans.iter().map(|i| i.len()).sum()
    }

    /// First start and last end, if any.
    pub fn hull(&self) -> Option<Interval> {
        Some(Interval::new(
            self.spans.first()?.start,
            self.spans.last()?.end,
        ))
    }

    /// Union with another set.
    pub fn union(&self, other: &IntervalSet) -> IntervalSet {
        let mut v = Vec::with_capacity(self.spans.len() + other.spans.len());
        let (mut i, mut j) = (0, 0);
        while i < self.spans.len() || j < other.spans.len() {
            let take_a = j >= other.spans.len()
                || (i < self.spans.len() && self.spans[i].start <= other.spans[j].start);
            if take_a {
                v.push(self.spans[i]);
                i += 1;
            } else {
                v.push(other.spans[j]);
                j += 1;
            }
        }
        Self::from_sorted(v)
    }

    /// Intersection with another set.
    pub fn intersect(&self, other: &IntervalSet) -> IntervalSet {
        let mut out = Vec::new();
        let (mut i, mut j) = (0, 0);
        while i < self.spans.len() && j < other.spans.len() {
            let a = self.spans[i];
            let b = other.spans[j];
            let s = a.start.max(b.start);
            let e = a.end.min(b.end);
            if s < e {
                out.push(Interval::new(s, e));
            }
            if a.end < b.end {
                i += 1;
            } else {
                j += 1;
            }
        }
        IntervalSet { spans: out }
    }

    /// This set minus another.
    pub fn subtract(&self, other: &IntervalSet) -> IntervalSet {
        let mut out = Vec::new();
        let mut j = 0;
        for &a in &self.spans {
            let mut cur = a.start;
            while j < other.spans.len() && other.spans[j].end <= cur {
                j += 1;
            }
            let mut k = j;
            while k < other.spans.len() && other.spans[k].start < a.end {
                let b = other.spans[k];
                if b.start > cur {
                    out.push(Interval::new(cur, b.start));
                }
                cur = cur.max(b.end);
                if cur >= a.end {
                    break;
                }
                k += 1;
            }
            if cur < a.end {
                out.push(Interval::new(cur, a.end));
            }
        }
        IntervalSet { spans: out }
    }

    /// Length of the part of this set inside `window`.
    pub fn covered_within(&self, window: Interval) -> Ns {
        // binary search the first span ending after window.start
        let first = self.spans.partition_point(|s| s.end <= window.start);
        let mut total = 0;
        for s in &self.spans[first..] {
            if s.start >= window.end {
                break;
            }
            total += s.overlap(&window);
        }
        total
    }

    /// The part of this set inside `window`.
    pub fn clip(&self, window: Interval) -> IntervalSet {
        let first = self.spans.partition_point(|s| s.end <= window.start);
        let mut out = Vec::new();
        for s in &self.spans[first..] {
            if s.start >= window.end {
                break;
            }
            let c = Interval::new(s.start.max(window.start), s.end.min(window.end));
            if !c.is_empty() {
                out.push(c);
            }
        }
        IntervalSet { spans: out }
    }

    /// The gaps between consecutive spans (not before the first or after the last).
    pub fn gaps(&self) -> impl Iterator<Item = Interval> + '_ {
        self.spans
            .windows(2)
            .map(|w| Interval::new(w[0].end, w[1].start))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(v: &[(i64, i64)]) -> IntervalSet {
        IntervalSet::from_intervals(v.iter().map(|&(a, b)| Interval::new(a, b)))
    }

    #[test]
    fn union_merges_overlaps_and_touching() {
        let s = set(&[(5, 10), (0, 3), (3, 4), (8, 12), (20, 20)]);
        assert_eq!(s.spans(), &[Interval::new(0, 4), Interval::new(5, 12)]);
        assert_eq!(s.total(), 11);
    }

    #[test]
    fn subtract_and_intersect() {
        let a = set(&[(0, 10), (20, 30)]);
        let b = set(&[(2, 4), (8, 22), (29, 40)]);
        assert_eq!(
            a.subtract(&b).spans(),
            &[
                Interval::new(0, 2),
                Interval::new(4, 8),
                Interval::new(22, 29)
            ]
        );
        assert_eq!(
            a.intersect(&b).spans(),
            &[
                Interval::new(2, 4),
                Interval::new(8, 10),
                Interval::new(20, 22),
                Interval::new(29, 30)
            ]
        );
        assert_eq!(a.subtract(&b).total() + a.intersect(&b).total(), a.total());
        assert_eq!(a.union(&b).total(), 40);
    }

    #[test]
    fn covered_within_window() {
        let a = set(&[(0, 10), (20, 30)]);
        assert_eq!(a.covered_within(Interval::new(5, 25)), 10);
        assert_eq!(a.clip(Interval::new(5, 25)).total(), 10);
        assert_eq!(a.covered_within(Interval::new(40, 50)), 0);
    }
}
