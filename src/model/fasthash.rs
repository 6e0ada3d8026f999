//! The fast hash tables every stage uses (one hasher, one place).
//!
//! [`HashMap`] / [`HashSet`] are the standard tables with a multiplicative hasher instead of
//! SipHash. Keys are trace data (event indices, ids, name ids, thread and stream ids, short
//! names), not attacker-chosen input, and SipHash was the largest single cost of the id tables
//! and the analyses (~115 instructions per lookup). The hasher is deterministic, so table
//! iteration order does not change between runs (every output is sorted anyway).

use std::hash::{BuildHasherDefault, Hasher};

/// Multiplicative hasher (the one of `rustc-hash` 2).
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
