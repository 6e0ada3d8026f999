//! ASCII digits read eight at a time (SWAR), for the serde path of [`super::event`] and the
//! hand-written parser of `super::fast`: below both, so that neither reaches into the other.

/// True when all 8 bytes of `x` (loaded little-endian) are ASCII digits.
#[inline(always)]
pub(super) fn eight_digits_u64(x: u64) -> bool {
    ((x & 0xF0F0_F0F0_F0F0_F0F0)
        | ((x.wrapping_add(0x0606_0606_0606_0606) & 0xF0F0_F0F0_F0F0_F0F0) >> 4))
        == 0x3333_3333_3333_3333
}

/// The value of 8 ASCII digits loaded little-endian (first digit in the lowest byte), in
/// three multiply-and-mask steps instead of eight.
#[inline(always)]
pub(super) fn parse8(x: u64) -> u64 {
    let x = x & 0x0F0F_0F0F_0F0F_0F0F;
    let x = (x.wrapping_mul(10) + (x >> 8)) & 0x00FF_00FF_00FF_00FF;
    let x = (x.wrapping_mul(100) + (x >> 16)) & 0x0000_FFFF_0000_FFFF;
    (x.wrapping_mul(10_000) + (x >> 32)) & 0xFFFF_FFFF
}

/// The value of `b` when it is 1 to 18 ASCII digits (no sign, no other byte).
#[inline]
pub(super) fn digits_value(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 18 {
        return None;
    }
    let mut v: u64 = 0;
    let mut c = b.chunks_exact(8);
    for w in &mut c {
        let x = u64::from_le_bytes(w.try_into().unwrap());
        if !eight_digits_u64(x) {
            return None;
        }
        v = v * 100_000_000 + parse8(x);
    }
    for &d in c.remainder() {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v * 10 + (d - b'0') as u64;
    }
    Some(v)
}
