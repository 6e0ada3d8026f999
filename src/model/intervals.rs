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
    /// All time: the window of an analysis that takes no window.
    pub const ALL: Interval = Interval {
        start: Ns::MIN,
        end: Ns::MAX,
    };

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
    ///
    /// Intervals that come in start order (the usual case: events are sorted by start) are
    /// merged as they arrive, so memory stays at the size of the union, not of the input.
    pub fn from_intervals<I: IntoIterator<Item = Interval>>(iter: I) -> Self {
        let mut b = UnionBuilder::new();
        for iv in iter {
            b.push(iv);
        }
        b.finish()
    }

    /// Union of intervals already sorted by start, merged in place.
    fn from_sorted(mut v: Vec<Interval>) -> Self {
        let mut w = 0;
        for r in 0..v.len() {
            let iv = v[r];
            if w > 0 && iv.start <= v[w - 1].end {
                if iv.end > v[w - 1].end {
                    v[w - 1].end = iv.end;
                }
            } else {
                v[w] = iv;
                w += 1;
            }
        }
        v.truncate(w);
        v.shrink_to_fit();
        IntervalSet { spans: v }
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

    /// Union with another set ([`IntervalSet::union_of`] the two).
    pub fn union(&self, other: &IntervalSet) -> IntervalSet {
        Self::union_of(&[self, other])
    }

    /// Union of several sets in one merge: no intermediate set per pair (folding `union` over
    /// k sets copies the growing result k times). The output holds the union only.
    pub fn union_of(sets: &[&IntervalSet]) -> IntervalSet {
        match sets {
            [] => return IntervalSet::new(),
            [one] => return (*one).clone(),
            // many sets (the threads of a busy process, each with its kinds): the halves'
            // unions merged, log k passes over the spans instead of a scan of the k heads per
            // span (the union is one set whatever the order of the merges)
            _ if sets.len() > 4 => {
                let (a, b) = sets.split_at(sets.len() / 2);
                return IntervalSet::union_of(&[
                    &IntervalSet::union_of(a),
                    &IntervalSet::union_of(b),
                ]);
            }
            _ => {}
        }
        let mut at = vec![0usize; sets.len()];
        let mut b = UnionBuilder::new();
        loop {
            // few sets (the threads of one process): a linear scan picks the earliest head
            let mut best: Option<(usize, Interval)> = None;
            for (k, s) in sets.iter().enumerate() {
                if let Some(&iv) = s.spans.get(at[k]) {
                    if best.is_none_or(|(_, b)| iv.start < b.start) {
                        best = Some((k, iv));
                    }
                }
            }
            let Some((k, iv)) = best else { break };
            at[k] += 1;
            b.push(iv);
        }
        b.finish()
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

    /// Length of the intersection with another set, without building it.
    pub fn overlap_total(&self, other: &IntervalSet) -> Ns {
        let (mut i, mut j, mut total) = (0, 0, 0);
        while i < self.spans.len() && j < other.spans.len() {
            let (a, b) = (self.spans[i], other.spans[j]);
            total += a.overlap(&b);
            if a.end < b.end {
                i += 1;
            } else {
                j += 1;
            }
        }
        total
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
        self.covered_within_from(window, &mut 0)
    }

    /// [`IntervalSet::covered_within`] for a caller that asks over and over at windows that
    /// only move forward: `cursor` is where the search starts and is left where the next one
    /// should start. Any value is correct (a cursor past the window's start is ignored); a
    /// fresh one is 0.
    pub fn covered_within_from(&self, window: Interval, cursor: &mut usize) -> Ns {
        // the first span ending after window.start, found from the cursor
        let first = seek(&self.spans, cursor, |s| s.end <= window.start);
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

/// What is left of one interval while sets take their parts of it in priority order: each
/// [`Remainder::take`] gets only the time no earlier take got, so the takes and the final
/// [`Remainder::total`] sum exactly to the interval's length.
///
/// The same as clipping each set to the interval, intersecting with what is left and
/// subtracting the result, without building those sets: [`Remainder::reset`] reuses the
/// buffers, so a loop over many intervals (one per gap, per step) allocates nothing.
#[derive(Clone, Debug, Default)]
pub struct Remainder {
    /// What is left, sorted and disjoint.
    free: Vec<Interval>,
    /// Scratch for the next `free`.
    next: Vec<Interval>,
}

impl Remainder {
    /// All of `iv` is left.
    pub fn new(iv: Interval) -> Self {
        let mut r = Remainder::default();
        r.reset(iv);
        r
    }

    /// Starts over: all of `iv` is left (nothing when it is empty).
    pub fn reset(&mut self, iv: Interval) {
        self.free.clear();
        if !iv.is_empty() {
            self.free.push(iv);
        }
    }

    /// True when nothing is left.
    pub fn is_empty(&self) -> bool {
        self.free.is_empty()
    }

    /// Length left, ns.
    pub fn total(&self) -> Ns {
        self.free.iter().map(|i| i.len()).sum()
    }

    /// What is left, sorted and disjoint.
    pub fn spans(&self) -> &[Interval] {
        &self.free
    }

    /// Removes the part of what is left that `set` covers; returns its length.
    pub fn take(&mut self, set: &IntervalSet) -> Ns {
        self.take_from(set, &mut 0)
    }

    /// [`Remainder::take`] for a caller that takes from the same set over and over, at
    /// times that only move forward (the gaps of a device, in time order): `cursor` is where
    /// the search of `set` starts and is left where the next one should start. Any value is
    /// correct (a cursor past the interval's start is ignored); a fresh one is 0.
    pub fn take_from(&mut self, set: &IntervalSet, cursor: &mut usize) -> Ns {
        let (Some(first), Some(last)) = (self.free.first(), self.free.last()) else {
            return 0;
        };
        let spans = set.spans();
        let mut j = seek(spans, cursor, |s| s.end <= first.start);
        if j == spans.len() || spans[j].start >= last.end {
            return 0;
        }
        self.next.clear();
        let mut taken = 0;
        let mut i = 0;
        while i < self.free.len() {
            if j == spans.len() {
                self.next.extend_from_slice(&self.free[i..]);
                break;
            }
            // pieces that end before the next span starts keep whole
            let next_start = spans[j].start;
            if self.free[i].end <= next_start {
                let k = gallop(&self.free, i + 1, |f| f.end <= next_start);
                self.next.extend_from_slice(&self.free[i..k]);
                i = k;
                continue;
            }
            let f = self.free[i];
            let mut cur = f.start;
            j = gallop(spans, j, |s| s.end <= cur);
            for b in &spans[j..] {
                if b.start >= f.end {
                    break;
                }
                if b.start > cur {
                    self.next.push(Interval::new(cur, b.start));
                }
                taken += b.end.min(f.end) - b.start.max(cur);
                cur = b.end;
                if cur >= f.end {
                    break;
                }
            }
            if cur < f.end {
                self.next.push(Interval::new(cur, f.end));
            }
            i += 1;
        }
        std::mem::swap(&mut self.free, &mut self.next);
        taken
    }
}

/// [`gallop`] from a kept cursor, for a caller that searches one sorted vector over and over
/// at points that mostly move forward (the gaps of a device, in time order; the launch ids of
/// device events in start order): the first index where `pred` fails, searched from `*cursor`,
/// forward when `pred` holds just before it, else galloping back from it; the cursor is left
/// at the answer. Any cursor gives the same answer; a fresh one is 0.
pub fn seek<T>(v: &[T], cursor: &mut usize, pred: impl Fn(&T) -> bool) -> usize {
    let c = (*cursor).min(v.len());
    *cursor = if c == 0 || pred(&v[c - 1]) {
        gallop(v, c, pred)
    } else {
        // the answer is at or before `hi` (`pred` fails there): steps back doubling until it
        // holds, then a bisection of the last step
        let mut hi = c - 1;
        let mut step = 1;
        loop {
            match hi.checked_sub(step) {
                Some(lo) if !pred(&v[lo]) => {
                    hi = lo;
                    step *= 2;
                }
                Some(lo) => break lo + 1 + v[lo + 1..hi].partition_point(&pred),
                None => break v[..hi].partition_point(&pred),
            }
        }
    };
    *cursor
}

/// First index at or after `from` where `pred` fails, for a `pred` that holds on a prefix of
/// `v` (e.g. "ends by t" over sorted spans): a galloping search, a few steps when the answer
/// is near `from`, logarithmic when it is far.
pub fn gallop<T>(v: &[T], from: usize, pred: impl Fn(&T) -> bool) -> usize {
    let mut lo = from;
    let mut step = 1;
    while lo < v.len() && pred(&v[lo]) {
        // the answer is past `lo`
        let probe = lo + step;
        if probe < v.len() && pred(&v[probe]) {
            lo = probe + 1;
            step *= 2;
        } else {
            let hi = probe.min(v.len());
            return lo + 1 + v[lo + 1..hi].partition_point(&pred);
        }
    }
    lo
}

/// Builds an [`IntervalSet`] one interval at a time ([`IntervalSet::from_intervals`] without
/// a collected input): while intervals arrive in start order they are merged with the last
/// span right away, so the buffer holds the union, not every interval; an interval out of
/// order switches to collecting the rest and sorting once at the end. The result is the same
/// union either way.
#[derive(Clone, Debug)]
pub struct UnionBuilder {
    spans: Vec<Interval>,
    /// False once an interval arrived out of start order.
    sorted: bool,
}

impl Default for UnionBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl UnionBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        UnionBuilder {
            spans: Vec::new(),
            sorted: true,
        }
    }

    /// Adds an interval (empty ones are dropped).
    #[inline]
    pub fn push(&mut self, iv: Interval) {
        if iv.is_empty() {
            return;
        }
        if self.sorted {
            if let Some(last) = self.spans.last_mut() {
                if iv.start >= last.start {
                    if iv.start <= last.end {
                        if iv.end > last.end {
                            last.end = iv.end;
                        }
                        return;
                    }
                } else {
                    self.sorted = false;
                }
            }
        }
        self.spans.push(iv);
    }

    /// The union of everything pushed.
    pub fn finish(self) -> IntervalSet {
        let mut v = self.spans;
        if self.sorted {
            // merged as they came: already disjoint, non-adjacent and sorted
            v.shrink_to_fit();
            return IntervalSet { spans: v };
        }
        v.sort_unstable();
        IntervalSet::from_sorted(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seek_answers_the_partition_point_from_any_cursor() {
        let v: Vec<i64> = vec![1, 3, 3, 4, 8, 9, 9, 9, 12, 20, 21, 40];
        for t in -1..45 {
            let want = v.partition_point(|&x| x < t);
            for c in 0..=v.len() + 2 {
                let mut cursor = c;
                assert_eq!(seek(&v, &mut cursor, |&x| x < t), want, "t {t} from {c}");
                assert_eq!(cursor, want);
            }
        }
        assert_eq!(seek(&[] as &[i64], &mut 3, |&x| x < 5), 0);
    }

    /// The crate's test generator ([`crate::model::testing::xorshift`]) from `seed`, in the
    /// intervals' `i64`: the next value in `[0, m)`.
    fn numbers(seed: u64) -> impl FnMut(i64) -> i64 {
        let mut next = crate::model::testing::xorshift(seed);
        move |m: i64| next(m as u64) as i64
    }

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
    fn union_of_up_to_forty_random_sets_is_the_folded_union() {
        // every count of sets (the halves' path above 4), spans overlapping, touching, empty
        let mut next = numbers(0x9e37_79b9_7f4a_7c15);
        for k in 0..=40 {
            let sets: Vec<IntervalSet> = (0..k)
                .map(|_| {
                    let n = next(12);
                    let v: Vec<(i64, i64)> = (0..n)
                        .map(|_| {
                            let a = next(400);
                            (a, a + next(30))
                        })
                        .collect();
                    set(&v)
                })
                .collect();
            let folded = sets.iter().fold(IntervalSet::new(), |acc, s| acc.union(s));
            let refs: Vec<&IntervalSet> = sets.iter().collect();
            assert_eq!(IntervalSet::union_of(&refs), folded, "{k} sets");
        }
    }

    #[test]
    fn union_of_many_is_the_folded_union() {
        let sets = [
            set(&[(0, 3), (10, 12), (40, 50)]),
            set(&[(2, 5), (12, 13), (30, 31)]),
            set(&[]),
            set(&[(5, 6), (20, 30), (49, 60)]),
        ];
        let folded = sets.iter().fold(IntervalSet::new(), |acc, s| acc.union(s));
        let refs: Vec<&IntervalSet> = sets.iter().collect();
        assert_eq!(IntervalSet::union_of(&refs), folded);
        assert_eq!(
            folded.spans(),
            &[
                Interval::new(0, 6),
                Interval::new(10, 13),
                Interval::new(20, 31),
                Interval::new(40, 60)
            ]
        );
        assert_eq!(IntervalSet::union_of(&refs[..1]), sets[0]);
        assert_eq!(IntervalSet::union_of(&[]), IntervalSet::new());
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
        assert_eq!(a.overlap_total(&b), a.intersect(&b).total());
        assert_eq!(b.overlap_total(&a), a.intersect(&b).total());
        assert_eq!(a.union(&b).total(), 40);
    }

    #[test]
    fn covered_within_window() {
        let a = set(&[(0, 10), (20, 30)]);
        assert_eq!(a.covered_within(Interval::new(5, 25)), 10);
        assert_eq!(a.clip(Interval::new(5, 25)).total(), 10);
        assert_eq!(a.covered_within(Interval::new(40, 50)), 0);
        // from any cursor, and windows moving forward from one kept cursor: the same
        let b = set(&[(0, 10), (20, 30), (35, 36), (40, 60), (70, 71)]);
        let windows = [
            (0, 5),
            (5, 25),
            (25, 38),
            (36, 45),
            (44, 80),
            (90, 95),
            (3, 72),
        ];
        let mut kept = 0;
        for (a0, a1) in windows {
            let w = Interval::new(a0, a1);
            let want = b.clip(w).total();
            for c in 0..=7 {
                assert_eq!(b.covered_within_from(w, &mut { c }), want, "{w:?} from {c}");
            }
            assert_eq!(b.covered_within_from(w, &mut kept), want, "{w:?} kept");
        }
    }

    #[test]
    fn remainder_takes_like_clip_intersect_subtract() {
        // a small deterministic generator: sets of up to 12 random intervals in [0, 100)
        let mut next = numbers(0x2545_f491_4f6c_dd1d);
        for _ in 0..500 {
            let sets: Vec<IntervalSet> = (0..4)
                .map(|_| {
                    let n = next(12);
                    IntervalSet::from_intervals((0..n).map(|_| {
                        let a = next(100);
                        Interval::new(a, a + next(20))
                    }))
                })
                .collect();
            let a = next(100);
            let span = Interval::new(a, a + next(60));
            let mut free = IntervalSet::from_intervals([span]);
            let mut r = Remainder::new(span);
            for set in &sets {
                let got = set.clip(span).intersect(&free);
                free = free.subtract(&got);
                // any cursor gives the same result
                let mut cursor = next(set.spans().len() as i64 + 2) as usize;
                assert_eq!(r.take_from(set, &mut cursor), got.total());
                assert_eq!(r.free, free.spans());
            }
            assert_eq!(r.total(), free.total());
            assert_eq!(r.is_empty(), free.is_empty());
        }
    }

    #[test]
    fn gallop_finds_the_end_of_a_prefix() {
        let v: Vec<i64> = (0..100).collect();
        for from in 0..=100 {
            for t in -1..=101 {
                let want = (t.max(0) as usize).clamp(from, 100);
                assert_eq!(gallop(&v, from, |&x| x < t), want, "from {from} t {t}");
            }
        }
    }

    #[test]
    fn builder_in_and_out_of_order_gives_the_same_union() {
        let ivs = [
            (0, 3),
            (1, 2),
            (3, 4),
            (6, 9),
            (6, 7),
            (10, 10),
            (12, 15),
            (2, 13),
            (20, 21),
        ];
        let want = set(&ivs);
        let mut b = UnionBuilder::new();
        for &(a, c) in &ivs[..5] {
            b.push(Interval::new(a, c));
        }
        assert_eq!(b.spans.len(), 2); // merged as they came: [0, 4), [6, 9)
        for &(a, c) in &ivs[5..] {
            b.push(Interval::new(a, c));
        }
        assert_eq!(b.finish(), want);
        assert_eq!(want.spans(), &[Interval::new(0, 15), Interval::new(20, 21)]);
    }
}
