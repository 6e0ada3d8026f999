//! Small helpers that keep the analyses fast on large traces.
//!
//! * [`HashMap`] / [`HashSet`]: the model's fast tables ([`crate::model::fasthash`]),
//!   re-exported for the analyses.
//! * [`Bits`]: one bit per event index, for marks over every host or device event.
//! * [`NameMemo`]: a name classification (`&str → T`) computed once per interned name and read
//!   by index afterwards, for rules that classify every event by its name.

pub use crate::model::fasthash::{FastHasher, HashMap, HashSet};
use crate::model::{NameId, Trace};

/// Asks the CPU to bring `v[i]` into its caches (a hint: nothing on other architectures or
/// when `i` is out of range), for a pass that reads elements in an order the hardware cannot
/// predict, a few iterations before it reads them.
#[inline(always)]
pub fn prefetch<T>(v: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(x) = v.get(i) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint that never faults; the pointer is to a live element
        unsafe { _mm_prefetch::<_MM_HINT_T0>((x as *const T).cast::<i8>()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (v, i);
}

/// For a pass over device events `gpu` (indices into [`Trace::gpu`], in order) that reads
/// each one's launch call (its owner operator, say): at position `k`, fetches ahead the
/// device event 16 places on and the launch call of the one 8 places on. The calls lie
/// anywhere in the host events; without this, reading them is most of such a pass. (A pass
/// over all of [`Trace::gpu`] uses [`crate::model::prefetch_launch_ahead`] or
/// [`Trace::gpu_with_launches`].)
#[inline(always)]
pub fn prefetch_launches(trace: &Trace, gpu: &[u32], k: usize) {
    if let Some(&g) = gpu.get(k + 16) {
        prefetch(&trace.gpu, g as usize);
    }
    if let Some(g) = gpu.get(k + 8).and_then(|&g| trace.gpu.get(g as usize)) {
        prefetch(&trace.cpu, g.launch as usize);
    }
}

/// Whether some interned name of `trace` satisfies `f` (every event's name is interned).
pub fn any_name(trace: &Trace, f: impl Fn(&str) -> bool) -> bool {
    (0..trace.names.len()).any(|k| f(trace.name(NameId(k as u32))))
}

/// [`any_name`] as the gate of a pass over the host events that only acts on events whose
/// name satisfies `f` (a classification by substrings, say): `false` only when no name
/// does, so that the pass can be skipped without reading the events. The names are looked
/// at only when they are far fewer than the host events (one per [`EVENTS_PER_NAME`]);
/// otherwise checking every name (kernels' among them) could cost more than the pass, which
/// classifies only the names its events carry, and the answer is `true` without looking.
pub fn may_name(trace: &Trace, f: impl Fn(&str) -> bool) -> bool {
    trace.names.len().saturating_mul(EVENTS_PER_NAME) >= trace.cpu.len() || any_name(trace, f)
}

/// Host events per interned name under which [`may_name`] does not look at the names.
pub const EVENTS_PER_NAME: usize = 64;

/// A classification of names computed at most once per interned name.
pub struct NameMemo<'t, T: Copy, F: Fn(&str) -> T> {
    trace: &'t Trace,
    cache: Vec<Option<T>>,
    f: F,
}

impl<'t, T: Copy, F: Fn(&str) -> T> NameMemo<'t, T, F> {
    /// An empty memo of `f` over the names of `trace`.
    pub fn new(trace: &'t Trace, f: F) -> Self {
        NameMemo {
            trace,
            cache: Vec::new(),
            f,
        }
    }

    /// `f` of the name behind `id`.
    #[inline]
    pub fn get(&mut self, id: NameId) -> T {
        match self.cache.get(id.0 as usize) {
            Some(Some(v)) => *v,
            _ => self.compute(id),
        }
    }

    /// The first [`NameMemo::get`] of a name: out of line, so the lookup stays small enough
    /// to inline into per-event loops.
    #[cold]
    #[inline(never)]
    fn compute(&mut self, id: NameId) -> T {
        let i = id.0 as usize;
        if i >= self.cache.len() {
            self.cache.resize(self.trace.names.len().max(i + 1), None);
        }
        let v = (self.f)(self.trace.name(id));
        self.cache[i] = Some(v);
        v
    }
}

/// A map for the few devices of a trace, whose events come in runs of one device: a lookup
/// checks the last key hit, then searches the entries in order (no hashing). Meant for a
/// handful of keys; use [`HashMap`] for many.
#[derive(Clone, Debug)]
pub struct RunMap<K, V> {
    entries: Vec<(K, V)>,
    last: usize,
}

impl<K, V> Default for RunMap<K, V> {
    fn default() -> Self {
        RunMap {
            entries: Vec::new(),
            last: 0,
        }
    }
}

impl<K: Copy + Ord, V> RunMap<K, V> {
    /// The value of `key`, made by `init` when the key is new.
    #[inline]
    pub fn get_or_insert_with(&mut self, key: K, init: impl FnOnce() -> V) -> &mut V {
        if self.entries.get(self.last).is_none_or(|e| e.0 != key) {
            self.last = match self.entries.iter().position(|e| e.0 == key) {
                Some(k) => k,
                None => {
                    self.entries.push((key, init()));
                    self.entries.len() - 1
                }
            };
        }
        &mut self.entries[self.last].1
    }

    /// The entries, by key.
    pub fn into_sorted(self) -> Vec<(K, V)> {
        let mut v = self.entries;
        v.sort_unstable_by_key(|e| e.0);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, BuildHasherDefault, Hash};

    fn h<T: Hash>(v: T) -> u64 {
        BuildHasherDefault::<FastHasher>::default().hash_one(v)
    }

    #[test]
    fn strings_differ_by_tail_and_length() {
        assert_ne!(h("abcdefgh1"), h("abcdefgh2"));
        assert_ne!(h("abc"), h("abc\0"));
        assert_ne!(h(""), h("\0"));
        assert_eq!(h("nccl:all_reduce"), h("nccl:all_reduce"));
    }

    #[test]
    fn run_map_keeps_one_entry_per_key() {
        let mut m: RunMap<i64, Vec<u32>> = RunMap::default();
        for (i, k) in [3, 3, 1, 3, 2, 1, 1].into_iter().enumerate() {
            m.get_or_insert_with(k, Vec::new).push(i as u32);
        }
        assert_eq!(
            m.into_sorted(),
            vec![(1, vec![2, 5, 6]), (2, vec![4]), (3, vec![0, 1, 3])]
        );
    }

    #[test]
    fn memo_computes_once_per_name() {
        let mut b = crate::model::build::TraceBuilder::new();
        b.op("aten::mm", 0.0, 1.0);
        let t = b.build();
        let calls = std::cell::Cell::new(0);
        let mut m = NameMemo::new(&t, |n: &str| {
            calls.set(calls.get() + 1);
            n.len()
        });
        let id = t.names.get("aten::mm").unwrap();
        assert_eq!(m.get(id), 8);
        assert_eq!(m.get(id), 8);
        assert_eq!(calls.get(), 1);
    }
}

/// One bit per index: a mark over every host or device event of a large trace (a `Vec<bool>`
/// writes eight times the memory, and each of its pages costs a page fault on first write).
#[derive(Clone, Debug, Default)]
pub struct Bits {
    words: Vec<u64>,
    len: usize,
}

impl Bits {
    /// `len` bits, all clear.
    pub fn new(len: usize) -> Bits {
        Bits {
            words: vec![0; len.div_ceil(64)],
            len,
        }
    }
    /// The number of bits.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True when there are no bits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Bit `i` (false past the end).
    #[inline]
    pub fn get(&self, i: usize) -> bool {
        i < self.len && self.words[i / 64] >> (i % 64) & 1 != 0
    }
    /// Sets bit `i` (`i < len`) and returns its previous value.
    #[inline]
    pub fn replace(&mut self, i: usize) -> bool {
        let w = &mut self.words[i / 64];
        let was = *w >> (i % 64) & 1 != 0;
        *w |= 1 << (i % 64);
        was
    }
    /// Sets bit `i` (`i < len`).
    #[inline]
    pub fn set(&mut self, i: usize) {
        self.words[i / 64] |= 1 << (i % 64);
    }
    /// Clears bit `i` (`i < len`).
    #[inline]
    pub fn clear(&mut self, i: usize) {
        self.words[i / 64] &= !(1 << (i % 64));
    }
}

#[cfg(test)]
mod bits_tests {
    use super::Bits;

    #[test]
    fn bits_set_replace_clear_and_bounds() {
        let mut b = Bits::new(130);
        assert_eq!(b.len(), 130);
        assert!(!b.get(129) && !b.get(130) && !b.get(usize::MAX));
        assert!(!b.replace(129));
        assert!(b.replace(129));
        b.set(0);
        b.set(64);
        assert!(b.get(0) && b.get(64) && b.get(129) && !b.get(1) && !b.get(63));
        b.clear(64);
        assert!(!b.get(64) && b.get(0));
        assert!(Bits::new(0).is_empty());
    }
}

#[cfg(test)]
mod name_gate_tests {
    use super::{any_name, may_name, EVENTS_PER_NAME};
    use crate::model::build::TraceBuilder;

    /// `may_name` says no only after looking at every name, and looks only when the names
    /// are far fewer than the host events.
    #[test]
    fn may_name_is_false_only_when_no_name_matches() {
        let trace = |ops: usize, names: usize| {
            let mut b = TraceBuilder::new();
            for k in 0..ops {
                b.op(&format!("aten::op{}", k % names), k as f64, 0.5);
            }
            b.build()
        };
        let many_events = trace(4 * EVENTS_PER_NAME, 2);
        assert!(!may_name(&many_events, |n| n.contains("GraphLaunch")));
        assert!(may_name(&many_events, |n| n == "aten::op1"));
        assert!(any_name(&many_events, |n| n == "aten::op1"));
        // as many names as events: not looked at, so possibly there
        let many_names = trace(50, 50);
        assert!(!any_name(&many_names, |n| n.contains("GraphLaunch")));
        assert!(may_name(&many_names, |n| n.contains("GraphLaunch")));
    }
}
