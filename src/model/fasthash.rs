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

/// The last `n` bytes of `bytes` (1 to 7 of them) as a little-endian word, without a copy
/// through memory: the last 8 bytes shifted when there are 8, else one or two loads of 4, 2
/// or 1 bytes (what the zero-padded remainder gives: a string's hash is the same either way).
#[inline(always)]
fn tail(bytes: &[u8], n: usize) -> u64 {
    let len = bytes.len();
    if len >= 8 {
        let w = u64::from_le_bytes(bytes[len - 8..].try_into().expect("8 bytes"));
        return w >> (8 * (8 - n));
    }
    // len == n < 8: the first 4 (or 2, or 1) and the last 4 (or 2, or 1), overlapping
    if n >= 4 {
        let lo = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")) as u64;
        let hi = u32::from_le_bytes(bytes[n - 4..].try_into().expect("4 bytes")) as u64;
        lo | hi << (8 * (n - 4))
    } else if n >= 2 {
        let lo = u16::from_le_bytes(bytes[..2].try_into().expect("2 bytes")) as u64;
        let hi = u16::from_le_bytes(bytes[n - 2..].try_into().expect("2 bytes")) as u64;
        lo | hi << (8 * (n - 2))
    } else {
        bytes[0] as u64
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
            self.add(tail(bytes, r.len()) ^ ((r.len() as u64) << 59));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_are_the_zero_padded_remainders() {
        // every remainder length of every string length up to 40, against the padded copy
        let bytes: Vec<u8> = (1..=40u8).map(|b| b.wrapping_mul(37) ^ 0xa5).collect();
        for len in 1..=bytes.len() {
            let s = &bytes[..len];
            let n = len % 8;
            if n == 0 {
                continue;
            }
            let mut b = [0u8; 8];
            b[..n].copy_from_slice(&s[len - n..]);
            assert_eq!(tail(s, n), u64::from_le_bytes(b), "length {len}");
        }
    }
}
