//! [`IdIndex`]: event ids (correlation ids, External ids, flow ids) to event indices, and
//! [`IdSet`]: sets of such ids.
//!
//! Profilers hand out these ids from counters, so the ids of one trace are nearly dense: a
//! slot array indexed by `id - min` replaces the hash table whenever the id range is at most
//! a few times the number of ids. Lookups are then one bounds check and one load, and ids met
//! in time order touch the array in order (the hash table touched it at random, which made
//! the two id tables of `Trace::finalize` half of its time on large traces). Sparse ids (a
//! few huge values, ids from several processes) keep the hash table.

use super::fasthash::HashMap;

/// A map from non-zero `u64` ids to `u32` values below `u32::MAX`, dense or hashed.
pub enum IdIndex {
    /// `slots[id - base]` holds the value plus one, 0 when absent: the array starts as
    /// zeroed memory, which the allocator hands over without writing it (a fresh mapping), so
    /// the pages of ids never met are never touched.
    Dense {
        /// The smallest id.
        base: u64,
        /// One value (plus one) per id from `base`.
        slots: Vec<u32>,
    },
    /// Any other id set.
    Hashed(HashMap<u64, u32>),
}

impl IdIndex {
    /// An empty index for the given ids (only their range and number are used); dense when
    /// the range spans at most 8 slots per id (plus 4096): 32 bytes per id, about what a
    /// hash table takes.
    pub fn for_ids(ids: impl Iterator<Item = u64>) -> Self {
        match Self::dense_range(ids) {
            Ok(range) => Self::dense(range),
            Err(n) => IdIndex::Hashed(HashMap::with_capacity_and_hasher(n, Default::default())),
        }
    }

    /// An empty slot array over a [`IdIndex::dense_range`].
    fn dense(range: Option<(u64, u64)>) -> Self {
        match range {
            Some((base, span)) => IdIndex::Dense {
                base,
                slots: vec![0; span as usize + 1],
            },
            None => IdIndex::Dense {
                base: 0,
                slots: Vec::new(),
            },
        }
    }

    /// The smallest id and the range of `ids` when a slot array fits them (`None` for no
    /// ids), else their number.
    fn dense_range(ids: impl Iterator<Item = u64>) -> Result<Option<(u64, u64)>, usize> {
        let (mut lo, mut hi, mut n) = (u64::MAX, 0u64, 0usize);
        for id in ids {
            lo = lo.min(id);
            hi = hi.max(id);
            n += 1;
        }
        if n == 0 {
            return Ok(None);
        }
        let span = hi - lo;
        if span <= 8 * n as u64 + 4096 {
            Ok(Some((lo, span)))
        } else {
            Err(n)
        }
    }

    /// [`IdIndex::build`] (the first value of an id wins) when the ids are nearly dense, `None`
    /// when it would be a hash table: for a caller that holds one by these ids already.
    pub fn build_dense<I>(pairs: I) -> Option<Self>
    where
        I: Iterator<Item = (u64, u32)> + Clone,
    {
        let range = Self::dense_range(pairs.clone().map(|(id, _)| id)).ok()?;
        Some(Self::dense(range).fill(pairs, |_, _| false))
    }

    /// The index of `(id, value)` pairs, made in two passes (the id range, then the values):
    /// the first value of an id wins unless `replace(old, new)` says a later one replaces it.
    pub fn build<I>(pairs: I, replace: impl FnMut(u32, u32) -> bool) -> Self
    where
        I: Iterator<Item = (u64, u32)> + Clone,
    {
        IdIndex::for_ids(pairs.clone().map(|(id, _)| id)).fill(pairs, replace)
    }

    /// `self` with the `(id, value)` pairs set, as [`IdIndex::build`] says.
    fn fill(
        mut self,
        pairs: impl Iterator<Item = (u64, u32)>,
        mut replace: impl FnMut(u32, u32) -> bool,
    ) -> Self {
        for (id, v) in pairs {
            self.set(id, v, &mut replace);
        }
        self
    }

    /// The value of `id`.
    #[inline]
    pub fn get(&self, id: u64) -> Option<u32> {
        match self {
            IdIndex::Dense { base, slots } => {
                let v = *slots.get(id.wrapping_sub(*base) as usize)?;
                v.checked_sub(1)
            }
            IdIndex::Hashed(m) => m.get(&id).copied(),
        }
    }

    /// Sets `id` to `value` when it has no value, or when `replace(old, value)` says so.
    /// `id` must be one of the ids the index was made for (a dense index ignores others).
    #[inline]
    fn set(&mut self, id: u64, value: u32, replace: &mut impl FnMut(u32, u32) -> bool) {
        debug_assert!(value != u32::MAX);
        match self {
            IdIndex::Dense { base, slots } => {
                let Some(s) = slots.get_mut(id.wrapping_sub(*base) as usize) else {
                    return;
                };
                if *s == 0 || (*s != value + 1 && replace(*s - 1, value)) {
                    *s = value + 1;
                }
            }
            IdIndex::Hashed(m) => {
                let s = m.entry(id).or_insert(value);
                if *s != value && replace(*s, value) {
                    *s = value;
                }
            }
        }
    }
}

/// A set of `u64` ids: a bit per id of the range when the ids are nearly dense (at most 64
/// slots per id, so at most the 8 bytes per id a list takes), a hash set otherwise.
pub enum IdSet {
    /// Bit `id - base` of `bits`.
    Dense {
        /// The smallest id.
        base: u64,
        /// One bit per id from `base`.
        bits: Vec<u64>,
    },
    /// Any other id set.
    Hashed(super::fasthash::HashSet<u64>),
}

impl IdSet {
    /// The set of `ids` (repeats allowed).
    pub fn new(ids: &[u64]) -> Self {
        let (Some(&lo), Some(&hi)) = (ids.iter().min(), ids.iter().max()) else {
            return IdSet::Dense {
                base: 0,
                bits: Vec::new(),
            };
        };
        let span = hi - lo;
        if span <= 64 * ids.len() as u64 + 4096 {
            let mut bits = vec![0u64; (span / 64) as usize + 1];
            for &id in ids {
                let k = id - lo;
                bits[(k / 64) as usize] |= 1 << (k % 64);
            }
            IdSet::Dense { base: lo, bits }
        } else {
            IdSet::Hashed(ids.iter().copied().collect())
        }
    }

    /// True when `id` is in the set.
    #[inline]
    pub fn contains(&self, id: u64) -> bool {
        match self {
            IdSet::Dense { base, bits } => {
                let k = id.wrapping_sub(*base);
                bits.get((k / 64) as usize)
                    .is_some_and(|w| w & (1 << (k % 64)) != 0)
            }
            IdSet::Hashed(s) => s.contains(&id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(ids: &[u64]) -> [IdIndex; 2] {
        let dense = IdIndex::for_ids(ids.iter().copied());
        assert!(matches!(dense, IdIndex::Dense { .. }));
        let hashed = IdIndex::Hashed(HashMap::default());
        [dense, hashed]
    }

    #[test]
    fn dense_and_hashed_agree() {
        let ids = [7u64, 9, 7, 12, 3000, 9];
        for mut ix in both(&ids) {
            for (i, &id) in ids.iter().enumerate() {
                ix.set(id, i as u32, &mut |_, _| false);
            }
            // first wins
            assert_eq!(ix.get(7), Some(0));
            assert_eq!(ix.get(9), Some(1));
            assert_eq!(ix.get(12), Some(3));
            assert_eq!(ix.get(3000), Some(4));
            assert_eq!(ix.get(8), None);
            assert_eq!(ix.get(0), None);
            assert_eq!(ix.get(u64::MAX), None);
            ix.set(9, 5, &mut |old, _| old == 1);
            assert_eq!(ix.get(9), Some(5));
            ix.set(9, 6, &mut |_, _| false);
            assert_eq!(ix.get(9), Some(5));
            // the largest value an index holds
            ix.set(12, u32::MAX - 1, &mut |_, _| true);
            assert_eq!(ix.get(12), Some(u32::MAX - 1));
            ix.set(7, 0, &mut |_, _| true);
            assert_eq!(ix.get(7), Some(0));
        }
    }

    #[test]
    fn id_sets_dense_and_hashed() {
        let ids = [70u64, 5, 7, 5, 200, 64, 63, 128];
        let dense = IdSet::new(&ids);
        assert!(matches!(dense, IdSet::Dense { .. }));
        let hashed = IdSet::Hashed(ids.iter().copied().collect());
        for set in [dense, hashed] {
            for id in 0..300 {
                assert_eq!(set.contains(id), ids.contains(&id), "{id}");
            }
            assert!(!set.contains(u64::MAX));
        }
        let sparse = IdSet::new(&[1, 1 << 40]);
        assert!(matches!(sparse, IdSet::Hashed(_)));
        assert!(sparse.contains(1 << 40) && sparse.contains(1) && !sparse.contains(2));
        assert!(!IdSet::new(&[]).contains(0));
    }

    #[test]
    fn build_keeps_the_first_value_unless_replaced() {
        let pairs = [(5u64, 0u32), (9, 1), (5, 2), (9, 3)];
        let first = IdIndex::build(pairs.iter().copied(), |_, _| false);
        assert_eq!((first.get(5), first.get(9)), (Some(0), Some(1)));
        // replace 0 by a later value, never 1
        let pref = IdIndex::build(pairs.iter().copied(), |old, _| old == 0);
        assert_eq!((pref.get(5), pref.get(9)), (Some(2), Some(1)));
        assert_eq!(pref.get(6), None);
    }

    #[test]
    fn sparse_ids_are_hashed() {
        let ids = [1u64, 1 << 40, 5];
        assert!(matches!(
            IdIndex::for_ids(ids.iter().copied()),
            IdIndex::Hashed(_)
        ));
        assert!(matches!(
            IdIndex::for_ids(std::iter::empty()),
            IdIndex::Dense { .. }
        ));
        let mut ix = IdIndex::for_ids(ids.iter().copied());
        for (i, &id) in ids.iter().enumerate() {
            ix.set(id, i as u32, &mut |_, _| false);
        }
        assert_eq!(ix.get(1 << 40), Some(1));
        assert_eq!(ix.get(4), None);
    }
}
