//! Small helpers that keep the analyses fast on large traces.
//!
//! * [`HashMap`] / [`HashSet`]: the standard tables with a multiplicative hasher instead of
//!   SipHash. Keys here are trace data (event indices, name ids, thread and stream ids, short
//!   names), not attacker-chosen input, and SipHash was the largest single cost of the analyses
//!   (~115 instructions per lookup). The hasher is deterministic, so table iteration order no
//!   longer changes between runs (every output is sorted anyway).
//! * [`NameMemo`]: a name classification (`&str → T`) computed once per interned name and read
//!   by index afterwards, for rules that classify every event by its name.

use std::hash::{BuildHasherDefault, Hasher};

use crate::model::{NameId, Trace};

/// Multiplicative hasher (the one of `rustc-hash` 2, with the model's id tables' constant).
#[derive(Default, Clone, Copy)]
pub struct FastHasher(u64);

const K: u64 = 0xf135_7aea_2e62_a9c5;

impl FastHasher {
    #[inline]
    fn add(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(26) ^ i).wrapping_mul(K);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let r = chunks.remainder();
        if !r.is_empty() {
            let mut b = [0u8; 8];
            b[..r.len()].copy_from_slice(r);
            self.add(u64::from_le_bytes(b) ^ ((r.len() as u64) << 59));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn write_i32(&mut self, i: i32) {
        self.add(i as u32 as u64);
    }
    #[inline]
    fn write_i64(&mut self, i: i64) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0.rotate_left(26)
    }
}

/// `std::collections::HashMap` with [`FastHasher`]; build with `HashMap::default()`.
pub type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// `std::collections::HashSet` with [`FastHasher`]; build with `HashSet::default()`.
pub type HashSet<K> = std::collections::HashSet<K, BuildHasherDefault<FastHasher>>;

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
        if !self.entries.get(self.last).is_some_and(|e| e.0 == key) {
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
    use std::hash::{BuildHasher, Hash};

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
