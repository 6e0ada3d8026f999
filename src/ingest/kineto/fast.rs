//! Hand-written parser for one Kineto event: the fast path in front of the serde visitors of
//! [`super::event`].
//!
//! It reads the common shapes (string `ph`/`cat`/`name`, raw `pid`/`tid`/`ts`/`dur`/`id`, an
//! `args` object of integers, strings and `[x, y, z]` arrays) in one pass over the bytes,
//! borrowing strings, and skips everything else with a strict validating skipper. Whenever a
//! value has another shape (a float, a number written as a string, escapes in a name, ...)
//! that one value is handed to the same serde `Deserialize` impl the slow path uses, so the
//! result is the same [`RawEvent`] the slow path would give. When the event is not valid JSON
//! (or anything looks unusual) the parser returns `None` and the caller runs the serde path,
//! then the lenient repair: warnings and recovery stay exactly as before.
//!
//! In front of it, [`Shapes`] reads the events whose shape a parser thread has already seen
//! (the same keys in the same order with the same separators) by comparing their literal
//! bytes and reading only their values ([`shape`]), with the same result.

use std::borrow::Cow;

use serde::Deserialize;

use super::digits::{eight_digits_u64, parse8};
use super::event::{micros_as_ns, ArgSlot, BStr, Decoded, Dim3, Num, RawArgs, RawEvent};

mod shape;
pub use shape::Shapes;

/// Clears the members of `e` an event sets, but for `args` (which [`Cur::args`] resets, or
/// [`Cur::event`] when the event has none).
#[inline(always)]
fn reset_members(e: &mut RawEvent<'_>) {
    e.ph.reset();
    e.cat.reset();
    e.name.reset();
    e.pid = None;
    e.tid = None;
    e.ts = None;
    e.dur = None;
    e.id = None;
    e.decoded = Decoded::default();
}

/// A cursor at the start of one event's bytes, when they are valid UTF-8.
///
/// The whole event is checked for UTF-8 once, up front. serde_json only checks the strings
/// it decodes, so an event with invalid UTF-8 in a skipped value goes to serde, which accepts
/// it as before: only the speed differs.
fn cursor(bytes: &[u8]) -> Option<Cur<'_>> {
    let text = ascii_str(bytes).or_else(|| std::str::from_utf8(bytes).ok())?;
    Some(Cur {
        s: text,
        b: bytes,
        i: 0,
        args_seen: 0,
    })
}

/// Parses one event object (`bytes` is exactly `{...}`) into `out` with the general parser
/// alone; false lets serde decide (`out` is then unspecified).
#[cfg(test)]
pub fn parse<'a>(bytes: &'a [u8], out: &mut RawEvent<'a>) -> bool {
    let Some(mut c) = cursor(bytes) else {
        return false;
    };
    c.ws();
    if c.event(out).is_none() {
        return false;
    }
    c.ws();
    c.i == bytes.len()
}

/// Parses one event object (`bytes` is exactly `{...}`) into `out` through the event shapes
/// learned so far ([`Shapes`]), learning this event's shape when it takes the general
/// parser; false lets serde decide (`out` is then unspecified).
pub fn parse_shaped<'a>(shapes: &mut Shapes, bytes: &'a [u8], out: &mut RawEvent<'a>) -> bool {
    let Some(mut c) = cursor(bytes) else {
        return false;
    };
    let text = c.s;
    c.ws();
    let start = c.i;
    if !shapes.event(&mut c, out) {
        c.i = start;
        if c.event(out).is_none() {
            return false;
        }
        shapes.learn(&text[start..c.i]);
    }
    c.ws();
    c.i == bytes.len()
}

/// Parses the event object at `pos` of a block known to be UTF-8, through the event shapes
/// learned so far as [`parse_shaped`], for readers that walk a chain of events without knowing
/// their ends beforehand. `Ok(end)`: parsed into `out`, the object ends before `end`.
/// `Err(Some(end))`: a valid JSON value ends before `end` but has a shape the fast path leaves
/// to serde (the caller parses `text[pos..end]` as [`parse_shaped`]'s caller would).
/// `Err(None)`: no valid JSON value starts at `pos`.
#[inline]
pub fn parse_at_shaped<'a>(
    shapes: &mut Shapes,
    text: &'a str,
    pos: usize,
    out: &mut RawEvent<'a>,
) -> Result<usize, Option<usize>> {
    let mut c = Cur {
        s: text,
        b: text.as_bytes(),
        i: pos,
        args_seen: 0,
    };
    if shapes.event(&mut c, out) {
        return Ok(c.i);
    }
    c.i = pos;
    if c.event(out).is_some() {
        shapes.learn(&text[pos..c.i]);
        return Ok(c.i);
    }
    c.i = pos;
    match c.skip() {
        Some((_, end)) => Err(Some(end)),
        None => Err(None),
    }
}

/// `text` when `bytes` is valid UTF-8 (checked 16 ASCII bytes at a time first).
pub fn utf8(bytes: &[u8]) -> Option<&str> {
    ascii_str(bytes).or_else(|| std::str::from_utf8(bytes).ok())
}

/// `bytes` as `&str` when it is all ASCII (the common case, checked 16 bytes at a time).
#[inline]
fn ascii_str(bytes: &[u8]) -> Option<&str> {
    let mut hi = 0u32;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let n = bytes.len();
        if n >= 16 {
            let p = bytes.as_ptr();
            // SAFETY: SSE2 is part of the x86_64 baseline; every load reads 16 bytes inside
            // `bytes` (the last one ends at its end and may overlap the one before).
            unsafe {
                let mut acc = _mm_setzero_si128();
                let mut i = 0;
                // 64 bytes a turn (four loads, one loop test), then 16
                while i + 64 <= n {
                    let a = _mm_loadu_si128(p.add(i) as *const __m128i);
                    let b = _mm_loadu_si128(p.add(i + 16) as *const __m128i);
                    let c = _mm_loadu_si128(p.add(i + 32) as *const __m128i);
                    let d = _mm_loadu_si128(p.add(i + 48) as *const __m128i);
                    acc = _mm_or_si128(acc, _mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d)));
                    i += 64;
                }
                while i + 16 <= n {
                    acc = _mm_or_si128(acc, _mm_loadu_si128(p.add(i) as *const __m128i));
                    i += 16;
                }
                acc = _mm_or_si128(acc, _mm_loadu_si128(p.add(n - 16) as *const __m128i));
                hi = _mm_movemask_epi8(acc) as u32;
            }
        } else {
            for &x in bytes {
                hi |= (x >> 7) as u32;
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    for &x in bytes {
        hi |= (x >> 7) as u32;
    }
    if hi != 0 {
        return None;
    }
    // SAFETY: every byte is below 0x80, and ASCII is valid UTF-8.
    Some(unsafe { std::str::from_utf8_unchecked(bytes) })
}

/// How many of the 8 bytes of `x` (loaded little-endian) are ASCII digits before the first
/// other byte (8 when all are).
#[inline(always)]
fn leading_digits(x: u64) -> usize {
    // byte - '0' is below 10 exactly for digits; adding 0x76 to the low 7 bits sets the high
    // bit from 10 up (no carry crosses bytes), and bytes from 0x80 (after the xor) have it
    let a = x ^ (ONES * u64::from(b'0'));
    let other = ((a & !HIGHS).wrapping_add(ONES * 0x76) | a) & HIGHS;
    if other == 0 {
        8
    } else {
        (other.trailing_zeros() / 8) as usize
    }
}

/// What [`Cur::number`] found.
#[derive(Clone, Copy)]
enum NumTok {
    /// A plain integer of at most 18 digits.
    Int(i64),
    /// A fraction without exponent whose significand is below 2^53 and has at most 22
    /// fractional digits (so it is exactly representable, and so is the power of ten).
    Float(f64),
    /// Any other valid number.
    Other,
}

/// Powers of ten up to 10^8 as integers.
const POW10_U64: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// Powers of ten exactly representable as `f64`.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// High bit of each byte of `x` that equals `c` (exact, no false positives).
#[inline(always)]
fn eq_bytes(x: u64, c: u8) -> u64 {
    let v = x ^ (ONES * c as u64);
    !(((v & !HIGHS).wrapping_add(!HIGHS)) | v) & HIGHS
}

/// Number of leading JSON whitespace bytes in `b` (at least one is known to be there).
#[inline(never)]
fn ws_run(b: &[u8]) -> usize {
    // a newline and up to 6 spaces of indentation (pretty-printed traces) from one load
    if let (Some(&b'\n'), Some(w)) = (b.first(), b.get(..8)) {
        let x = u64::from_le_bytes(w.try_into().unwrap()) >> 8;
        let n = 1 + (!eq_bytes(x, b' ') & HIGHS).trailing_zeros() as usize / 8;
        if n < 8 && b[n] > b' ' {
            return n;
        }
    }
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    while i + 16 <= b.len() {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86_64 baseline; the load reads b[i..i + 16].
        let other = unsafe {
            let v = _mm_loadu_si128(b.as_ptr().add(i) as *const __m128i);
            let ws = _mm_or_si128(
                _mm_or_si128(
                    _mm_cmpeq_epi8(v, _mm_set1_epi8(b' ' as i8)),
                    _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\n' as i8)),
                ),
                _mm_or_si128(
                    _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\r' as i8)),
                    _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\t' as i8)),
                ),
            );
            !(_mm_movemask_epi8(ws) as u32) & 0xffff
        };
        if other != 0 {
            return i + other.trailing_zeros() as usize;
        }
        i += 16;
    }
    while i + 8 <= b.len() {
        let x = u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        let ws = eq_bytes(x, b' ') | eq_bytes(x, b'\n') | eq_bytes(x, b'\r') | eq_bytes(x, b'\t');
        let other = !ws & HIGHS;
        if other != 0 {
            return i + (other.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < b.len() && is_ws(b[i]) {
        i += 1;
    }
    i
}

/// One predicted member of an object, inside a method of [`Cur`] returning `Option<()>`:
/// when the bytes at the cursor `$c` are `$key` (`"name":`), reads the value with `$value` and
/// returns at the object's closing `}`; at any other key hands the rest of the object to the
/// general member loop with `$member` (`|cur, key|` reading one member), which gives the same
/// result.
macro_rules! predicted_member {
    ($c:ident, $member:expr, $key:literal, $value:expr) => {
        if !$c.b[$c.i..].starts_with($key) {
            return $c.members_from_key($member);
        }
        $c.i += $key.len();
        $c.ws();
        $value;
        if $c.member_end()? {
            return Some(());
        }
    };
}

struct Cur<'a> {
    /// The event, known to be UTF-8.
    s: &'a str,
    b: &'a [u8],
    i: usize,
    /// Number of `args` members read (so [`Cur::event`] knows whether to reset `args`).
    args_seen: u32,
}

#[inline(always)]
fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\n' | b'\r' | b'\t')
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Non-zero when some byte of `x` is `"`, `\` or a control character (below 0x20); the lowest
/// flagged byte is exact.
#[inline(always)]
fn special_bytes(x: u64) -> u64 {
    let ctl = x.wrapping_sub(ONES * 0x20) & !x;
    let q = x ^ (ONES * b'"' as u64);
    let q = q.wrapping_sub(ONES) & !q;
    let bs = x ^ (ONES * b'\\' as u64);
    let bs = bs.wrapping_sub(ONES) & !bs;
    (ctl | q | bs) & HIGHS
}

/// Bit i set when byte i of the 16 is `"`, `\\` or a control character (below 0x20).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn special_16(b: &[u8]) -> u32 {
    use std::arch::x86_64::*;
    debug_assert!(b.len() >= 16);
    // SAFETY: SSE2 is part of the x86_64 baseline; the load reads the 16 bytes of `b`
    // (callers pass at least 16), unaligned.
    unsafe {
        let v = _mm_loadu_si128(b.as_ptr() as *const __m128i);
        let q = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let bs = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        // unsigned c <= 0x1f  <=>  max(c, 0x1f) == 0x1f
        let lim = _mm_set1_epi8(0x1f);
        let ctl = _mm_cmpeq_epi8(_mm_max_epu8(v, lim), lim);
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(q, bs), ctl)) as u32
    }
}

/// The contents of a string: where they end and whether they hold escapes.
struct Span {
    start: usize,
    end: usize,
    escaped: bool,
}

impl<'a> Cur<'a> {
    /// `s[from..to]` without the two char-boundary checks of `&str` slicing (71 instructions
    /// per event as an out-of-line call). Callers pass offsets of ASCII bytes (quotes, the
    /// first byte of a value, the byte after a number or a string) or the end, which are char
    /// boundaries of the valid UTF-8 text.
    #[inline(always)]
    fn text(&self, from: usize, to: usize) -> &'a str {
        assert!(from <= to && to <= self.b.len());
        debug_assert!(self.s.is_char_boundary(from) && self.s.is_char_boundary(to));
        // SAFETY: in bounds (checked above); both offsets are char boundaries of the valid
        // UTF-8 `s` (see above), so the bytes between them are valid UTF-8.
        unsafe { std::str::from_utf8_unchecked(self.b.get_unchecked(from..to)) }
    }

    #[inline(always)]
    fn ws(&mut self) {
        let b = self.b;
        let i = self.i;
        match b.get(i) {
            Some(&c) if c > b' ' => {}
            None => {}
            Some(_) => {
                // one space before a non-space is the most common run (`": "`)
                if b[i] == b' ' && b.get(i + 1).is_some_and(|&c| c > b' ') {
                    self.i = i + 1;
                } else {
                    self.i = i + ws_run(&b[i..]);
                }
            }
        }
    }

    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Steps past the `{` the cursor is on and the whitespace after it; true when the object
    /// is empty (its `}` eaten too).
    #[inline(always)]
    fn open_object(&mut self) -> bool {
        self.i += 1;
        self.ws();
        self.eat(b'}').is_some()
    }

    #[inline(always)]
    fn eat(&mut self, c: u8) -> Option<()> {
        if self.peek() == Some(c) {
            self.i += 1;
            Some(())
        } else {
            None
        }
    }

    /// Scans a JSON string at `"`: valid escapes, no raw control characters (as serde_json
    /// requires); UTF-8 is not checked here.
    #[inline(always)]
    fn string(&mut self) -> Option<Span> {
        debug_assert_eq!(self.b[self.i], b'"');
        let b = self.b;
        let start = self.i + 1;
        let mut j = start;
        let mut escaped = false;
        loop {
            'find: {
                #[cfg(target_arch = "x86_64")]
                while j + 16 <= b.len() {
                    let m = special_16(&b[j..j + 16]);
                    if m != 0 {
                        j += m.trailing_zeros() as usize;
                        break 'find;
                    }
                    j += 16;
                }
                while j + 8 <= b.len() {
                    let x = u64::from_le_bytes(b[j..j + 8].try_into().unwrap());
                    let m = special_bytes(x);
                    if m != 0 {
                        j += (m.trailing_zeros() / 8) as usize;
                        break 'find;
                    }
                    j += 8;
                }
            }
            let c = *b.get(j)?;
            match c {
                b'"' => {
                    self.i = j + 1;
                    return Some(Span {
                        start,
                        end: j,
                        escaped,
                    });
                }
                b'\\' => {
                    escaped = true;
                    match *b.get(j + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => j += 2,
                        b'u' => {
                            let hex = b.get(j + 2..j + 6)?;
                            if !hex.iter().all(|h| h.is_ascii_hexdigit()) {
                                return None;
                            }
                            j += 6;
                        }
                        _ => return None,
                    }
                }
                0x00..=0x1f => return None,
                _ => j += 1,
            }
        }
    }

    /// A string decoded as serde_json would (borrowed when it has no escapes).
    #[inline(always)]
    fn str_value(&mut self) -> Option<Cow<'a, str>> {
        let at = self.i;
        let s = self.string()?;
        if !s.escaped {
            return Some(Cow::Borrowed(self.text(s.start, s.end)));
        }
        serde_json::from_slice::<String>(&self.b[at..self.i])
            .ok()
            .map(Cow::Owned)
    }

    /// Skips a JSON number, checking its grammar. Returns `Int(v)` for a plain integer of at
    /// most 18 digits (`v` its value), `Other` for any other valid number (more digits, a
    /// fraction or an exponent).
    #[inline(always)]
    fn number(&mut self) -> Option<NumTok> {
        let b = self.b;
        let mut j = self.i;
        // A non-negative integer of 1 to 7 digits (ids, pids, durations, sizes: most numbers)
        // from one 8-byte load: count its digits, check the byte after them, value them.
        if let Some(w) = b.get(j..j + 8) {
            let x = u64::from_le_bytes(w.try_into().unwrap());
            let n = leading_digits(x);
            if (1..8).contains(&n) && (n == 1 || x & 0xff != u64::from(b'0')) {
                let next = (x >> (8 * n)) as u8;
                if !matches!(next, b'.' | b'e' | b'E') {
                    self.i = j + n;
                    return Some(NumTok::Int(parse8(x << (8 * (8 - n))) as i64));
                }
            }
            // 8 to 16 digits (microsecond timestamps, addresses, byte counts) from two loads
            if n == 8 && x & 0xff != u64::from(b'0') {
                if let Some(w) = b.get(j + 8..j + 16) {
                    let y = u64::from_le_bytes(w.try_into().unwrap());
                    let m = leading_digits(y);
                    let next = if m < 8 {
                        Some((y >> (8 * m)) as u8)
                    } else {
                        b.get(j + 16).copied()
                    };
                    // (a 17th digit, or a number cut by the end, takes the general path)
                    if next.is_some_and(|c| !matches!(c, b'0'..=b'9' | b'.' | b'e' | b'E')) {
                        let low = match m {
                            0 => 0,
                            8 => parse8(y),
                            _ => parse8(y << (8 * (8 - m))),
                        };
                        self.i = j + 8 + m;
                        return Some(NumTok::Int((parse8(x) * POW10_U64[m] + low) as i64));
                    }
                }
            }
        }
        let neg = b.get(j) == Some(&b'-');
        if neg {
            j += 1;
        }
        let digits_from = j;
        let mut mag: u64 = 0;
        match *b.get(j)? {
            b'0' => j += 1,
            b'1'..=b'9' => {
                while j + 8 <= b.len() {
                    let x = u64::from_le_bytes(b[j..j + 8].try_into().unwrap());
                    if !eight_digits_u64(x) {
                        break;
                    }
                    mag = mag.wrapping_mul(100_000_000).wrapping_add(parse8(x));
                    j += 8;
                }
                while j < b.len() && b[j].is_ascii_digit() {
                    mag = mag.wrapping_mul(10).wrapping_add((b[j] - b'0') as u64);
                    j += 1;
                }
            }
            _ => return None,
        }
        let int_digits = j - digits_from;
        let mut int = int_digits <= 18;
        let mut frac_digits = 0;
        if b.get(j) == Some(&b'.') {
            int = false;
            j += 1;
            let d = j;
            while j < b.len() && b[j].is_ascii_digit() {
                mag = mag.wrapping_mul(10).wrapping_add((b[j] - b'0') as u64);
                j += 1;
            }
            if j == d {
                return None;
            }
            frac_digits = j - d;
        }
        let mut plain = true;
        if matches!(b.get(j), Some(b'e' | b'E')) {
            plain = false;
            int = false;
            j += 1;
            if matches!(b.get(j), Some(b'+' | b'-')) {
                j += 1;
            }
            let d = j;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            if j == d {
                return None;
            }
        }
        self.i = j;
        Some(if int {
            // at most 18 digits: below 10^18 < 2^63
            let v = mag as i64;
            NumTok::Int(if neg { -v } else { v })
        } else if plain && frac_digits > 0 && int_digits + frac_digits <= 19 && mag < 1 << 53 {
            // an exact significand over an exact power of ten: one correctly rounded division,
            // the value serde_json gives (with or without its `float_roundtrip`)
            let f = mag as f64 / POW10[frac_digits.min(22)];
            if frac_digits <= 22 {
                NumTok::Float(if neg { -f } else { f })
            } else {
                NumTok::Other
            }
        } else {
            NumTok::Other
        })
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            Some(())
        } else {
            None
        }
    }

    /// Skips any JSON value with serde_json's `IgnoredAny` rules (strings are not checked for
    /// UTF-8). Returns the byte range of the value.
    fn skip(&mut self) -> Option<(usize, usize)> {
        let start = self.i;
        // the common skipped values, a number or a string, without the container machinery
        match self.peek()? {
            b'"' => {
                self.string()?;
                return Some((start, self.i));
            }
            b'-' | b'0'..=b'9' => {
                self.number()?;
                return Some((start, self.i));
            }
            _ => {}
        }
        // arrays of integers and plain strings (`Input Dims`, `Input type`, `Input Strides`
        // of every operator), checked in one loop over their bytes
        if let Some(end) = plain_array_end(self.b, start) {
            self.i = end;
            return Some((start, end));
        }
        self.walk(start)
    }

    /// [`Cur::skip`]'s general walk over any value, from `start` (the cursor).
    fn walk(&mut self, start: usize) -> Option<(usize, usize)> {
        // open containers, innermost last: true = object (no allocation per skipped value:
        // `Input Dims` and the like are arrays of arrays on every operator)
        let mut stack = Containers::default();
        loop {
            // a value
            self.ws();
            match self.peek()? {
                b'"' => {
                    self.string()?;
                }
                b'-' | b'0'..=b'9' => {
                    self.number()?;
                }
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                c @ (b'[' | b'{') => {
                    self.i += 1;
                    self.ws();
                    let obj = c == b'{';
                    let close = if obj { b'}' } else { b']' };
                    if self.eat(close).is_none() {
                        stack.push(obj);
                        if obj {
                            self.key_colon()?;
                        }
                        continue;
                    }
                }
                _ => return None,
            }
            // after a value: commas and closings
            loop {
                let Some(obj) = stack.last() else {
                    return Some((start, self.i));
                };
                self.ws();
                match self.peek()? {
                    b',' => {
                        self.i += 1;
                        if obj {
                            self.ws();
                            self.key_colon()?;
                        }
                        break;
                    }
                    b'}' if obj => {
                        self.i += 1;
                        stack.pop();
                    }
                    b']' if !obj => {
                        self.i += 1;
                        stack.pop();
                    }
                    _ => return None,
                }
            }
        }
    }

    /// `"key"` `:` inside a skipped object.
    fn key_colon(&mut self) -> Option<()> {
        if self.peek()? != b'"' {
            return None;
        }
        self.string()?;
        self.ws();
        self.eat(b':')
    }

    /// The value at the cursor handed to serde (for uncommon shapes).
    fn serde<T: Deserialize<'a>>(&mut self) -> Option<T> {
        let (s, e) = self.skip()?;
        serde_json::from_slice::<T>(&self.b[s..e]).ok()
    }

    /// A map key, decoded like serde's `BStr` key (borrowed bytes unless it has escapes).
    #[inline(always)]
    fn key(&mut self) -> Option<Cow<'a, [u8]>> {
        if self.peek()? != b'"' {
            return None;
        }
        let at = self.i;
        let s = self.string()?;
        let k = if s.escaped {
            Cow::Owned(
                serde_json::from_slice::<String>(&self.b[at..self.i])
                    .ok()?
                    .into_bytes(),
            )
        } else {
            Cow::Borrowed(&self.b[s.start..s.end])
        };
        if self.peek() == Some(b':') {
            self.i += 1;
        } else {
            self.ws();
            self.eat(b':')?;
        }
        self.ws();
        Some(k)
    }

    /// The members of an object from the cursor on a member's key: calls `f` with each key,
    /// the cursor on the value (after whitespace); `f` must consume the value.
    #[inline(always)]
    fn members_from_key(
        &mut self,
        mut f: impl FnMut(&mut Self, &[u8]) -> Option<()>,
    ) -> Option<()> {
        loop {
            let k = self.key()?;
            f(self, &k)?;
            if self.member_end()? {
                return Some(());
            }
        }
    }

    /// After a member's value: `,` (false, the cursor on the next key) or the closing `}`
    /// (true); anything else is `None`.
    #[inline(always)]
    fn member_end(&mut self) -> Option<bool> {
        self.ws();
        match self.peek()? {
            b',' => {
                self.i += 1;
                self.ws();
                Some(false)
            }
            b'}' => {
                self.i += 1;
                Some(true)
            }
            _ => None,
        }
    }

    /// A string value as [`BStr`]. The common case, a string without escapes, comes back from
    /// [`Cur::plain_str`] in two registers: returning the whole `Option<BStr>` from a call
    /// went through the stack and stalled on the reload (a store-forwarding miss, 17 % of
    /// the parse time of flow events).
    #[inline(always)]
    fn bstr(&mut self) -> Option<BStr<'a>> {
        if let Some(s) = self.plain_str() {
            return Some(BStr(Some(Cow::Borrowed(s))));
        }
        self.bstr_other()
    }

    /// The string at the cursor when it is one and has no escapes (the cursor then moves
    /// past it); `None` leaves the cursor where it was.
    #[inline(never)]
    fn plain_str(&mut self) -> Option<&'a str> {
        if self.peek()? != b'"' {
            return None;
        }
        let at = self.i;
        let s = self.string()?;
        if s.escaped {
            self.i = at;
            return None;
        }
        Some(self.text(s.start, s.end))
    }

    /// [`Cur::bstr`] for strings with escapes and other values.
    #[cold]
    #[inline(never)]
    fn bstr_other(&mut self) -> Option<BStr<'a>> {
        if self.peek()? == b'"' {
            return self.str_value().map(|s| BStr(Some(s)));
        }
        self.serde::<BStr<'a>>()
    }

    /// The raw text of a value (what `&RawValue` would hold).
    fn raw(&mut self) -> Option<&'a str> {
        match self.peek()? {
            b'-' | b'0'..=b'9' => {
                let s = self.i;
                self.number()?;
                Some(self.text(s, self.i))
            }
            _ => {
                let (s, e) = self.skip()?;
                Some(self.text(s, e))
            }
        }
    }

    /// [`Cur::raw`], and the value when the text is a plain integer of at most 18 digits.
    #[inline(always)]
    fn raw_int(&mut self) -> Option<(&'a str, Option<i64>)> {
        if let b'-' | b'0'..=b'9' = self.peek()? {
            let s = self.i;
            let t = self.number()?;
            let v = match t {
                NumTok::Int(v) => Some(v),
                _ => None,
            };
            return Some((self.text(s, self.i), v));
        }
        Some((self.raw()?, None))
    }

    fn num(&mut self) -> Option<Num> {
        if let b'-' | b'0'..=b'9' = self.peek()? {
            let s = self.i;
            match self.number()? {
                NumTok::Int(v) => return Some(Num::Int(v)),
                NumTok::Float(f) => return Some(Num::Float(f)),
                NumTok::Other => self.i = s,
            }
        }
        self.serde::<Num>()
    }

    fn dim3(&mut self) -> Option<Dim3> {
        let at = self.i;
        if self.peek()? == b'[' {
            self.i += 1;
            let mut out = [0u32; 3];
            let mut k = 0;
            self.ws();
            if self.eat(b']').is_some() {
                return Some(Dim3(out));
            }
            loop {
                let s = self.i;
                let small = match self.peek()? {
                    b'0'..=b'9' => match self.number()? {
                        NumTok::Int(v) if self.i - s <= 9 => Some(v),
                        _ => None,
                    },
                    _ => None,
                };
                match small {
                    Some(v) => {
                        if k < 3 {
                            out[k] = (v as u64).min(u32::MAX as u64) as u32;
                        }
                        k += 1;
                    }
                    _ => {
                        self.i = at;
                        return self.serde::<Dim3>();
                    }
                }
                self.ws();
                match self.peek()? {
                    b',' => {
                        self.i += 1;
                        self.ws();
                    }
                    b']' => {
                        self.i += 1;
                        return Some(Dim3(out));
                    }
                    _ => return None,
                }
            }
        }
        self.serde::<Dim3>()
    }

    fn args(&mut self, a: &mut RawArgs<'a>) -> Option<()> {
        if self.peek()? != b'{' {
            *a = self.serde::<RawArgs<'a>>()?;
            self.args_seen += 1;
            return Some(());
        }
        a.clear();
        self.args_seen += 1;
        if self.open_object() {
            return Some(());
        }
        // libkineto's orders of the `args` of operators, runtime calls, kernels, memory copies
        // and sets and memory events, predicted as in [`Cur::event`]; the general loop takes
        // over at the first other key
        macro_rules! predicted {
            ($key:literal, $value:expr) => {
                predicted_member!(self, |c, k| c.arg_member(a, k), $key, $value)
            };
        }
        if self.b[self.i..].starts_with(b"\"Ev Idx\":") {
            // memory events (`[memory]` instants)
            predicted!(b"\"Ev Idx\":", {
                self.skip()?;
            });
            predicted!(b"\"Device Type\":", a.device_type = self.num()?);
            predicted!(b"\"Device Id\":", a.device_id = self.num()?);
            predicted!(b"\"Addr\":", a.addr = self.num()?);
            predicted!(b"\"Bytes\":", a.mem_bytes = self.num()?);
            predicted!(b"\"Total Allocated\":", a.total_allocated = self.num()?);
            predicted!(b"\"Total Reserved\":", a.total_reserved = self.num()?);
            return self.members_from_key(|c, k| c.arg_member(a, k));
        }
        predicted!(b"\"External id\":", a.external_id = self.num()?);
        let rest = &self.b[self.i..];
        if rest.starts_with(b"\"Ev Idx\":") {
            // operators and annotations
            predicted!(b"\"Ev Idx\":", {
                self.skip()?;
            });
        } else if rest.starts_with(b"\"cbid\":") {
            predicted!(b"\"cbid\":", {
                self.skip()?;
            });
            predicted!(b"\"correlation\":", a.correlation = self.num()?);
        } else if rest.starts_with(b"\"queued\":") {
            predicted!(b"\"queued\":", {
                self.skip()?;
            });
            predicted!(b"\"device\":", a.device = self.num()?);
            predicted!(b"\"context\":", {
                self.skip()?;
            });
            predicted!(b"\"stream\":", a.stream = self.num()?);
            predicted!(b"\"correlation\":", a.correlation = self.num()?);
            predicted!(b"\"registers per thread\":", a.registers = self.num()?);
            predicted!(b"\"shared memory\":", a.shared_memory = self.num()?);
            predicted!(b"\"blocks per SM\":", a.blocks_per_sm = self.num()?);
            predicted!(b"\"warps per SM\":", a.warps_per_sm = self.num()?);
            predicted!(b"\"grid\":", a.grid = self.dim3()?);
            predicted!(b"\"block\":", a.block = self.dim3()?);
            predicted!(b"\"est. achieved occupancy %\":", a.occupancy = self.num()?);
        } else if rest.starts_with(b"\"device\":") {
            predicted!(b"\"device\":", a.device = self.num()?);
            predicted!(b"\"context\":", {
                self.skip()?;
            });
            predicted!(b"\"stream\":", a.stream = self.num()?);
            predicted!(b"\"correlation\":", a.correlation = self.num()?);
            predicted!(b"\"bytes\":", a.bytes = self.num()?);
        }
        self.members_from_key(|c, k| c.arg_member(a, k))
    }

    /// One member of `args`, the cursor on its value.
    #[inline(always)]
    fn arg_member(&mut self, a: &mut RawArgs<'a>, k: &[u8]) -> Option<()> {
        match a.slot(k) {
            Some(ArgSlot::Num(v)) => *v = self.num()?,
            Some(ArgSlot::Dim3(v)) => *v = self.dim3()?,
            Some(ArgSlot::Str(v)) => *v = self.bstr()?,
            Some(ArgSlot::Raw(v)) => *v = Some(self.raw()?),
            None => {
                self.skip()?;
            }
        }
        Some(())
    }

    fn event(&mut self, e: &mut RawEvent<'a>) -> Option<()> {
        // `args` is reset by `Cur::args`, so only events without one need the reset here
        let args_before = self.args_seen;
        let r = self.event_members(e);
        if self.args_seen == args_before {
            e.args.clear();
        }
        r
    }

    fn event_members(&mut self, e: &mut RawEvent<'a>) -> Option<()> {
        if self.peek()? != b'{' {
            return None;
        }
        reset_members(e);
        if self.open_object() {
            return Some(());
        }
        // libkineto writes the members of each kind of event in a fixed order (complete
        // events: `ph`, `cat`, `name`, `pid`, `tid`, `ts`, `dur`, `args`; flows: `ph`, `id`,
        // `pid`, `tid`, `ts`, `cat`, `name`, `bp`; instants: `ph`, `cat`, `s`, `name`, `pid`, `tid`,
        // `ts`, `args`): each predicted key costs one comparison instead of a string scan and
        // a dispatch. The first other key hands over to the general loop, which gives the
        // same result (a repeated key still overwrites, as with serde).
        macro_rules! predicted {
            ($key:literal, $value:expr) => {
                predicted_member!(self, |c, k| c.event_member(e, k), $key, $value)
            };
        }
        predicted!(b"\"ph\":", e.ph = self.bstr()?);
        match e.ph.0.as_deref() {
            Some("s" | "f") => {
                predicted!(b"\"id\":", e.id = Some(self.raw()?));
                predicted!(b"\"pid\":", self.pid(e)?);
                predicted!(b"\"tid\":", self.tid(e)?);
                predicted!(b"\"ts\":", self.ts(e)?);
                predicted!(b"\"cat\":", e.cat = self.bstr()?);
                predicted!(b"\"name\":", e.name = self.bstr()?);
                // flow ends: the binding point
                predicted!(b"\"bp\":", {
                    self.skip()?;
                });
            }
            Some("i") => {
                predicted!(b"\"cat\":", e.cat = self.bstr()?);
                predicted!(b"\"s\":", {
                    self.skip()?;
                });
                predicted!(b"\"name\":", e.name = self.bstr()?);
                predicted!(b"\"pid\":", self.pid(e)?);
                predicted!(b"\"tid\":", self.tid(e)?);
                predicted!(b"\"ts\":", self.ts(e)?);
                predicted!(b"\"args\":", self.args(&mut e.args)?);
            }
            _ => {
                predicted!(b"\"cat\":", e.cat = self.bstr()?);
                predicted!(b"\"name\":", e.name = self.bstr()?);
                predicted!(b"\"pid\":", self.pid(e)?);
                predicted!(b"\"tid\":", self.tid(e)?);
                predicted!(b"\"ts\":", self.ts(e)?);
                predicted!(b"\"dur\":", self.dur(e)?);
                predicted!(b"\"args\":", self.args(&mut e.args)?);
            }
        }
        self.members_from_key(|c, k| c.event_member(e, k))
    }

    /// `pid`: its text and, for a plain integer, its value (what `id_value` would give).
    #[inline(always)]
    fn pid(&mut self, e: &mut RawEvent<'a>) -> Option<()> {
        let (t, v) = self.raw_int()?;
        (e.pid, e.decoded.pid) = (Some(t), v);
        Some(())
    }

    /// `tid`, as [`Cur::pid`].
    #[inline(always)]
    fn tid(&mut self, e: &mut RawEvent<'a>) -> Option<()> {
        let (t, v) = self.raw_int()?;
        (e.tid, e.decoded.tid) = (Some(t), v);
        Some(())
    }

    /// `ts`: its text and, for integer microseconds, the nanoseconds (what `micros_to_ns`
    /// would give; fractions are left to it).
    #[inline(always)]
    fn ts(&mut self, e: &mut RawEvent<'a>) -> Option<()> {
        let (t, v) = self.raw_int()?;
        (e.ts, e.decoded.ts_ns) = (Some(t), v.and_then(micros_as_ns));
        Some(())
    }

    /// `dur`, as [`Cur::ts`].
    #[inline(always)]
    fn dur(&mut self, e: &mut RawEvent<'a>) -> Option<()> {
        let (t, v) = self.raw_int()?;
        (e.dur, e.decoded.dur_ns) = (Some(t), v.and_then(micros_as_ns));
        Some(())
    }

    /// One member of an event, the cursor on its value.
    #[inline(always)]
    fn event_member(&mut self, e: &mut RawEvent<'a>, k: &[u8]) -> Option<()> {
        match k {
            b"ph" => e.ph = self.bstr()?,
            b"cat" => e.cat = self.bstr()?,
            b"name" => e.name = self.bstr()?,
            b"pid" => self.pid(e)?,
            b"tid" => self.tid(e)?,
            b"ts" => self.ts(e)?,
            b"dur" => self.dur(e)?,
            b"id" => e.id = Some(self.raw()?),
            b"args" => self.args(&mut e.args)?,
            _ => {
                self.skip()?;
            }
        }
        Some(())
    }
}

/// The end of the JSON array at `b[i]` when it is made only of arrays, integers and plain
/// strings (ASCII, no escapes or control bytes), with spaces as its only whitespace: the
/// common `args` arrays, in one pass over their bytes. `None` for anything else (a float, an
/// object, a literal, a newline, an invalid or cut value): [`Cur::skip`]'s general walk then
/// decides, from the same start. A strict subset of JSON, so whatever ends here is a value the
/// general walk accepts with the same end.
fn plain_array_end(b: &[u8], mut i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'[') {
        return None;
    }
    i += 1;
    let mut depth = 1usize;
    // at a value right after a `[` (where a `]` closes an empty array), not after a `,`
    let mut opened = true;
    let spaces = |i: &mut usize| {
        while b.get(*i) == Some(&b' ') {
            *i += 1;
        }
    };
    loop {
        spaces(&mut i);
        match *b.get(i)? {
            b'[' => {
                i += 1;
                depth += 1;
                opened = true;
                continue;
            }
            b']' if opened => {
                i += 1;
                depth -= 1;
            }
            b'"' => {
                i += 1;
                loop {
                    match *b.get(i)? {
                        b'"' => break,
                        b'\\' | 0..=0x1f | 0x80.. => return None,
                        _ => i += 1,
                    }
                }
                i += 1;
            }
            c @ (b'-' | b'0'..=b'9') => {
                if c == b'-' {
                    i += 1;
                }
                // (a fraction, an exponent or a digit after a leading 0 is left to the walk
                // by the check after the value: only a space, `,` or `]` may follow)
                match *b.get(i)? {
                    b'0' => i += 1,
                    b'1'..=b'9' => {
                        while b.get(i).is_some_and(u8::is_ascii_digit) {
                            i += 1;
                        }
                    }
                    _ => return None,
                }
            }
            _ => return None,
        }
        // after a value: closings, then a comma (back to a value) or the end
        loop {
            if depth == 0 {
                return Some(i);
            }
            spaces(&mut i);
            match *b.get(i)? {
                b',' => {
                    i += 1;
                    opened = false;
                    break;
                }
                b']' => {
                    i += 1;
                    depth -= 1;
                }
                _ => return None,
            }
        }
    }
}

/// The open containers of a value [`Cur::skip`] walks, innermost last (true: an object):
/// the first 64 levels as bits, deeper ones (no trace nests so deep) in a vector.
#[derive(Default)]
struct Containers {
    depth: usize,
    bits: u64,
    deep: Vec<bool>,
}

impl Containers {
    #[inline]
    fn push(&mut self, obj: bool) {
        if self.depth < 64 {
            self.bits = (self.bits & !(1 << self.depth)) | (u64::from(obj) << self.depth);
        } else {
            self.deep.push(obj);
        }
        self.depth += 1;
    }

    #[inline]
    fn last(&self) -> Option<bool> {
        match self.depth {
            0 => None,
            d if d <= 64 => Some(self.bits >> (d - 1) & 1 == 1),
            _ => self.deep.last().copied(),
        }
    }

    #[inline]
    fn pop(&mut self) {
        self.depth = self.depth.saturating_sub(1);
        if self.depth >= 64 {
            self.deep.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parser through learned shapes gives what the general parser gives, for an event
    /// seen for the first time (learned) and again (through the trie), after the events
    /// `shapes` learned before.
    fn check_shaped(shapes: &mut Shapes, doc: &[u8]) {
        let mut general = RawEvent::default();
        let ok = parse(doc, &mut general);
        for pass in 0..2 {
            let mut shaped = RawEvent::default();
            assert_eq!(
                parse_shaped(shapes, doc, &mut shaped),
                ok,
                "pass {pass}: {:?}",
                String::from_utf8_lossy(doc)
            );
            if ok {
                assert_eq!(
                    format!("{shaped:?}"),
                    format!("{general:?}"),
                    "pass {pass}: {:?}",
                    String::from_utf8_lossy(doc)
                );
                // (`Decoded` prints as `_`)
                assert!(
                    shaped.decoded == general.decoded,
                    "pass {pass}, decoded: {:?}",
                    String::from_utf8_lossy(doc)
                );
            }
        }
    }

    /// The docs read one after the other into one reused event (as a parser thread reads
    /// them: an event's `args` slots left from the one before must be cleared) give the
    /// general parser's result on a fresh event.
    fn check_reused(shapes: &mut Shapes, docs: &[&[u8]]) {
        let mut reused = RawEvent::default();
        for doc in docs {
            let mut general = RawEvent::default();
            let ok = parse(doc, &mut general);
            if parse_shaped(shapes, doc, &mut reused) != ok {
                panic!("reused: {:?}", String::from_utf8_lossy(doc));
            }
            if ok {
                assert_eq!(
                    format!("{reused:?}"),
                    format!("{general:?}"),
                    "reused: {:?}",
                    String::from_utf8_lossy(doc)
                );
            } else {
                // after a rejected event the caller reads the next one into a value it made
                reused = RawEvent::default();
            }
        }
    }

    #[test]
    fn ascii_is_checked_at_every_byte() {
        // one byte from 0x80 at each position of buffers of 1 to 200 bytes (the 64-byte turns,
        // the 16-byte ones, the overlapping last load and the short loop): not ASCII; without
        // it, the same text
        for n in 1..=200usize {
            let plain: Vec<u8> = (0..n).map(|k| b' ' + (k % 90) as u8).collect();
            assert_eq!(ascii_str(&plain).map(str::len), Some(n), "length {n}");
            for at in 0..n {
                let mut b = plain.clone();
                b[at] = 0x80 | (at as u8 & 0x7f);
                assert!(ascii_str(&b).is_none(), "length {n}, byte {at}");
            }
        }
    }

    #[test]
    fn plain_arrays_end_where_the_general_walk_ends() {
        // what the fast end accepts, the general walk accepts with the same end (and serde
        // reads as one value); what it leaves, the walk decides
        let docs = [
            "[[512], [], [512]]",
            "[[512, 512]]",
            "[\"float\", \"double\", \"float\"]",
            "[]",
            "[ ]",
            "[[], [[]], [[[-1, 0, 9]]]]",
            "[ [ 1 ] , \"\" ]",
            "[-0, 10, 2048]",
            "[[1, 2], \"c10::Half\", [3]] , 7",
            "[1,]",
            "[,1]",
            "[1 2]",
            "[01]",
            "[-]",
            "[1.5]",
            "[1e3]",
            "[true]",
            "[null, 1]",
            "[{\"a\": 1}]",
            "[\"a\\\"b\"]",
            "[\"\u{e9}\"]",
            "[\n1]",
            "[[1]",
            "[1]]",
            "[\"x",
            "[-12",
            "]",
        ];
        let mut fast = 0;
        for d in docs {
            let b = d.as_bytes();
            let mut c = cursor(b).unwrap();
            let general = c.walk(0);
            let serde_ok = serde_json::Deserializer::from_str(d)
                .into_iter::<serde::de::IgnoredAny>()
                .next()
                .is_some_and(|r| r.is_ok());
            match plain_array_end(b, 0) {
                Some(end) => {
                    fast += 1;
                    assert_eq!(general, Some((0, end)), "{d}");
                    assert!(serde_json::from_str::<serde::de::IgnoredAny>(&d[..end]).is_ok());
                }
                None => {
                    // left to the walk, which accepts only what serde accepts
                    assert_eq!(general.is_some(), serde_ok, "{d}");
                }
            }
        }
        assert_eq!(fast, 10);
    }

    #[test]
    fn shapes_give_the_general_result() {
        // one trie through all the events, in order: shapes shared, split and extended
        let docs: &[&str] = &[
            "{\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 7, \"tid\": 8,\n    \"ts\": 1669783687464200, \"dur\": 19,\n    \"args\": {\n      \"External id\": 3075,\"Ev Idx\": 2\n    }\n  }",
            // other values of every kind in the same shape
            "{\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\\\"b\\u00e9\", \"pid\": 7, \"tid\": 8,\n    \"ts\": 12.5, \"dur\": -3,\n    \"args\": {\n      \"External id\": \"12\",\"Ev Idx\": [1, {\"x\": 2}]\n    }\n  }",
            "{\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": null, \"pid\": 7, \"tid\": 8,\n    \"ts\": 99999999999999999999, \"dur\": 1e3,\n    \"args\": {\n      \"External id\": 1.5,\"Ev Idx\": null\n    }\n  }",
            // another thread, another kind, whitespace before a value, a repeated key
            "{\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 7, \"tid\": 9,\n    \"ts\": 1, \"dur\": 2,\n    \"args\": {\n      \"External id\": 3075,\"Ev Idx\": 2\n    }\n  }",
            "{\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\":  \"aten::mm\", \"pid\": 7, \"tid\": 8,\n    \"ts\": 1, \"dur\": 2,\n    \"args\": {\n      \"External id\": 3075,\"Ev Idx\": 2\n    }\n  }",
            "{\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"x\", \"name\": \"y\", \"pid\": 7, \"tid\": 8,\n    \"ts\": 1, \"dur\": 2\n  }",
            "{\"ph\": \"f\", \"id\": 73689, \"pid\": 1, \"tid\": 7, \"ts\": 1669783687389324, \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}",
            "{\"ph\": \"f\", \"id\": \"0x1f\", \"pid\": \"Spans\", \"tid\": 7, \"ts\": 5, \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}",
            "{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": 1, \"tid\": 2, \"ts\": 3, \"args\": {\"Device Type\": 1, \"Device Id\": 0, \"Total Allocated\": 5435638784}}",
            "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 1, \"dur\": 2, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 5, \"grid\": [1, 2, 3], \"block\": [4, 5], \"blocks per SM\": 0.25}}",
            "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 1, \"dur\": 2, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 5, \"grid\": \"?\", \"block\": [4, 5, 6, 7], \"blocks per SM\": \"x\"}}",
            // args that are empty, not an object, missing; keys in another order; no members
            "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 1, \"dur\": 2, \"args\": {}}",
            "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 1, \"dur\": 2, \"args\": null}",
            "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 1, \"dur\": 2}",
            "{\"cat\": \"kernel\", \"ph\": \"X\", \"ts\": 1, \"dur\": 2, \"name\": \"k\", \"pid\": 0, \"tid\": 7}",
            "{}",
            "{ }",
            // invalid after a learned shape: rejected as the general parser rejects it
            "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 1x, \"dur\": 2}",
            "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 1, \"dur\": 2",
            "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\u{1}\", \"pid\": 0, \"tid\": 7, \"ts\": 1, \"dur\": 2}",
            "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 1, \"dur\": 2} ",
            "{\"ph\": \"X\", \"cat\": \"ker\\nel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 1, \"dur\": 2}",
            "{\"p\\u0068\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 1, \"dur\": 2}",
        ];
        let mut shapes = Shapes::default();
        for doc in docs {
            check_shaped(&mut shapes, doc.as_bytes());
        }
        // and through a trie that learned every one of them first
        for doc in docs {
            check_shaped(&mut shapes, doc.as_bytes());
        }
        // one event reused through them all, in order and in reverse, learning and learned
        let bytes: Vec<&[u8]> = docs.iter().map(|d| d.as_bytes()).collect();
        let reversed: Vec<&[u8]> = bytes.iter().rev().copied().collect();
        check_reused(&mut Shapes::default(), &bytes);
        check_reused(&mut shapes, &bytes);
        check_reused(&mut shapes, &reversed);
    }

    #[test]
    fn skipped_containers_as_a_stack() {
        // the bits and the deep vector answer as a vector of flags does, across the 64th level
        let mut next = crate::model::testing::xorshift(0x5eed_c0de);
        for _ in 0..200 {
            let (mut ours, mut plain) = (Containers::default(), Vec::new());
            for _ in 0..400 {
                if next(3) < 2 && plain.len() < 150 {
                    let obj = next(2) == 1;
                    ours.push(obj);
                    plain.push(obj);
                } else {
                    ours.pop();
                    plain.pop();
                }
                assert_eq!(ours.last(), plain.last().copied());
            }
        }
        // and a value nested past 64 levels is skipped whole
        for depth in [1, 63, 64, 65, 100] {
            let doc = format!("{}1{},7", "[{\"k\": ".repeat(depth), "}]".repeat(depth));
            let mut c = Cur {
                s: &doc,
                b: doc.as_bytes(),
                i: 0,
                args_seen: 0,
            };
            assert_eq!(c.skip(), Some((0, doc.len() - 2)), "depth {depth}");
        }
    }

    #[test]
    fn shaped_events_take_the_trie() {
        let doc = b"{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 1, \"dur\": 2}";
        let other = b"{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"kk\", \"pid\": 0, \"tid\": 7, \"ts\": 10, \"dur\": 20}";
        let mut shapes = Shapes::default();
        let text = std::str::from_utf8(other).unwrap();
        let mut c = Cur {
            s: text,
            b: other,
            i: 0,
            args_seen: 0,
        };
        assert!(
            !shapes.event(&mut c, &mut RawEvent::default()),
            "nothing learned yet"
        );
        assert!(parse_shaped(&mut shapes, doc, &mut RawEvent::default()));
        let mut c = Cur {
            s: text,
            b: other,
            i: 0,
            args_seen: 0,
        };
        let mut e = RawEvent::default();
        assert!(
            shapes.event(&mut c, &mut e),
            "the learned shape reads the next event"
        );
        assert_eq!(c.i, other.len());
        assert_eq!(e.name.0.as_deref(), Some("kk"));
        assert_eq!(e.decoded.ts_ns, Some(10_000));
        assert_eq!(e.decoded.tid, Some(7));
        // a literal longer than a node holds (an instant's constant members and the
        // pretty-printer's indentation: 214 bytes before `ts`, four nodes) is read through
        // its pieces
        let pad = " ".repeat(60);
        let long = |ts: u32| {
            format!(
                "{{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\",{pad}\"name\": \
                 \"[memory]\",{pad}\"pid\": 1, \"tid\": 2, \"ts\": {ts}}}"
            )
        };
        let (first, next) = (long(3), long(40));
        assert!(parse_shaped(
            &mut shapes,
            first.as_bytes(),
            &mut RawEvent::default()
        ));
        let mut c = cursor(next.as_bytes()).unwrap();
        let mut e = RawEvent::default();
        assert!(
            shapes.event(&mut c, &mut e),
            "a long literal through its pieces"
        );
        assert_eq!((c.i, e.decoded.ts_ns), (next.len(), Some(40_000)));
    }

    /// The fast parser must give what serde gives, or defer to it.
    fn check(doc: &[u8]) {
        let slow = serde_json::from_slice::<RawEvent>(doc);
        let mut fast = RawEvent::default();
        match parse(doc, &mut fast).then_some(fast) {
            Some(fast) => {
                let slow = slow.unwrap_or_else(|e| {
                    panic!(
                        "fast parser accepted what serde rejects ({e}): {:?}",
                        String::from_utf8_lossy(doc)
                    )
                });
                assert_eq!(
                    format!("{fast:?}"),
                    format!("{slow:?}"),
                    "{:?}",
                    String::from_utf8_lossy(doc)
                );
                // what was decoded on the way is what the texts decode to
                use super::super::event::{id_value, micros_to_ns, IdValue};
                let d = fast.decoded;
                let int = |t: Option<&str>| match id_value(t) {
                    IdValue::Int(v) => Some(v),
                    _ => None,
                };
                let doc = String::from_utf8_lossy(doc);
                assert!(
                    d.ts_ns.is_none() || d.ts_ns == fast.ts.and_then(micros_to_ns),
                    "{doc}"
                );
                assert!(
                    d.dur_ns.is_none() || d.dur_ns == fast.dur.and_then(micros_to_ns),
                    "{doc}"
                );
                assert!(d.pid.is_none() || d.pid == int(fast.pid), "{doc}");
                assert!(d.tid.is_none() || d.tid == int(fast.tid), "{doc}");
            }
            None => {
                // deferring is always allowed; it must be rare on valid input, which the
                // corpus test checks
            }
        }
    }

    #[test]
    fn typical_events_take_the_fast_path() {
        let docs: &[&[u8]] = &[
            br#"{"ph": "X", "cat": "kernel", "name": "void k<128>(float*)", "pid": 0, "tid": 7,
                "ts": 1712195495505543.2, "dur": 2.125,
                "args": {"External id": 52, "device": 0, "stream": 7, "correlation": 7001,
                "registers per thread": 96, "shared memory": 32768, "blocks per SM": 2.4,
                "warps per SM": 19.2, "grid": [192, 1, 1], "block": [256, 1, 1],
                "est. achieved occupancy %": 37}}"#,
            br#"{"ph":"s","id":7001,"pid":910,"tid":910,"ts":5010,"cat":"ac2g","name":"ac2g"}"#,
            br#"{"name": "thread_name", "ph": "M", "pid": 0, "tid": 7, "args": {"name": "stream 7 "}}"#,
            br#"{"ph": "X", "cat": "Trace", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 1, "dur": 2, "args": {"Op count": 0}}"#,
            br#"{"ph":"X","cat":"cpu_op","name":"aten::mm","args":{"Input Dims":[[128,256],[256,64]],"Input type":["float","float"],"Concrete Inputs":["",""],"Ev Idx":51}}"#,
            br#"{}"#,
        ];
        for d in docs {
            assert!(
                parse(d, &mut RawEvent::default()),
                "{}",
                String::from_utf8_lossy(d)
            );
            check(d);
        }
    }

    /// Fractions read by the fast path are the very `f64` serde_json gives.
    #[test]
    fn fractions_match_serde() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..20000 {
            let int_len = 1 + next() % 12;
            let frac_len = 1 + next() % 24;
            let mut t = String::new();
            if next() % 4 == 0 {
                t.push('-');
            }
            for k in 0..int_len {
                let d = next() % 10;
                t.push(char::from(
                    b'0' + if k == 0 && int_len > 1 { 1 + d % 9 } else { d } as u8,
                ));
            }
            t.push('.');
            for _ in 0..frac_len {
                t.push(char::from(b'0' + (next() % 10) as u8));
            }
            let doc = format!(
                r#"{{"args": {{"blocks per SM": {t}, "warps per SM": 0.{:03}}}}}"#,
                next() % 1000
            );
            assert!(parse(doc.as_bytes(), &mut RawEvent::default()), "{doc}");
            check(doc.as_bytes());
        }
    }

    /// Integers read by the one-load path (1 to 7 digits) and the general one give what serde
    /// gives, whatever follows them.
    #[test]
    fn integers_match_serde() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let after = [
            ",", "}", " ,", "\n}", ".5,", "e3,", "E-2}", "0,", "x,", ".,", "]",
        ];
        let mut valid = 0;
        for _ in 0..20000 {
            let len = 1 + next() % 20;
            let mut t = String::new();
            if next() % 8 == 0 {
                t.push('-');
            }
            for k in 0..len {
                let d = next() % 10;
                // a leading zero now and then (invalid JSON when more digits follow)
                let d = if k == 0 && next() % 4 != 0 {
                    1 + d % 9
                } else {
                    d
                };
                t.push(char::from(b'0' + d as u8));
            }
            let tail = after[(next() % after.len() as u64) as usize];
            let field = ["dur", "pid", "ts"][(next() % 3) as usize];
            let doc = if tail.ends_with(',') {
                format!(
                    r#"{{"{field}": {t}{tail} "args": {{"External id": {t}{tail} "stream": 7}}}}"#
                )
            } else {
                format!(r#"{{"args": {{"correlation": {t}{tail}}}"#)
            };
            check(doc.as_bytes());
            // valid events stay on the fast path
            if serde_json::from_slice::<RawEvent>(doc.as_bytes()).is_ok() {
                assert!(parse(doc.as_bytes(), &mut RawEvent::default()), "{doc}");
                valid += 1;
            }
        }
        assert!(valid > 5000, "{valid}");
        for d in [
            &br#"{"dur": 7}"#[..],
            br#"{"dur":0}"#,
            br#"{"args":{"device":01}}"#,
        ] {
            check(d);
        }
    }

    #[test]
    fn odd_values_match_serde() {
        let docs: &[&[u8]] = &[
            br#"{"name": "a\"b\u00e9\n", "ph": "X", "cat": 12, "args": {"External id": "52", "device": null, "grid": [1.5, 2], "block": {"x": 1}, "bytes": -3, "stream": 1e3, "correlation": 18446744073709551615, "graph id": 123456789012345678901234567890, "name": 7.5, "labels": ["x"]}}"#,
            br#"{"name": "a", "name": "b", "args": {"External id": 1, "external id": 2}}"#,
            br#"{"ts": "7", "dur": null, "pid": {"a": [1, {"b": "c"}]}, "tid": [], "id": true, "args": []}"#,
            br#"{"args": "none", "x": [[[[[[]]]]]], "y": {"": {"": {}}}}"#,
            br#"{"grid": [1,2,3,4,5], "args": {"grid": [4294967296, 7, 8, 9], "block": []}}"#,
            br#"{"\u0070h": "X", "args": {"Device Type": 1, "Device Id": -1, "Total Allocated": 99}}"#,
            br#"{"ph": "X", "ts": -0.5, "dur": 0, "args": {"bytes": 00}}"#,
            br#"{"ph": "X", "pid": -3, "tid": 9999999999999999, "ts": 9999999999999999, "dur": -2}"#,
            br#"{"ph": "X", "pid": 1, "pid": "x", "tid": 2, "tid": 3.5, "ts": 5, "ts": 6.5}"#,
            br#"{"ph": "X", "ts": 1., "args": {}}"#,
            br#"{"ph": "X", "ts": 1, "args": {"a": [1,]}}"#,
            br#"{"ph": "X", "ts": 1,}"#,
            br#"{"ph": "X" "ts": 1}"#,
            br#"{"ph": "X", "ts": tru}"#,
            b"{\"ph\": \"X\", \"name\": \"a\tb\"}",
            b"{\"ph\": \"X\", \"name\": \"a\xffb\"}",
            b"{\"ph\": \"X\", \"other\": \"a\xffb\"}",
            b"{\"ph\": \"X\", \"pid\": \"a\xffb\"}",
            br#"{"ph": "X", "name": "\ud800"}"#,
            br#"{"ph": "X", "other": "\ud800", "bad": "\q"}"#,
        ];
        for d in docs {
            check(d);
        }
    }

    #[test]
    fn corpus_events_take_the_fast_path_and_match_serde() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
        let Ok(rd) = std::fs::read_dir(dir.join("hta")) else {
            eprintln!("corpus absent: skipped");
            return;
        };
        let mut files: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        files.sort();
        let (mut fast, mut total) = (0usize, 0usize);
        let mut shapes = Shapes::default();
        for p in files.iter().take(12) {
            let raw = std::fs::read(p).unwrap();
            let mut bytes = Vec::new();
            if raw.starts_with(&[0x1f, 0x8b]) {
                use std::io::Read;
                flate2::read::MultiGzDecoder::new(&raw[..])
                    .read_to_end(&mut bytes)
                    .unwrap();
            } else {
                bytes = raw;
            }
            let Ok(v) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
                continue;
            };
            let Some(evs) = v.get("traceEvents").and_then(|e| e.as_array()) else {
                continue;
            };
            let texts: Vec<Vec<u8>> = evs
                .iter()
                .take(20_000)
                .map(|e| serde_json::to_vec_pretty(e).unwrap())
                .collect();
            for text in &texts {
                total += 1;
                if parse(text, &mut RawEvent::default()) {
                    fast += 1;
                }
                check(text);
                check_shaped(&mut shapes, text);
            }
            let docs: Vec<&[u8]> = texts.iter().map(|t| &t[..]).collect();
            check_reused(&mut shapes, &docs);
        }
        assert!(fast * 100 >= total * 99, "fast path on {fast} of {total}");
    }
}

#[cfg(test)]
mod microbench {
    use super::*;

    /// A profiling aid, not a test of speed (it asserts only that each event takes the fast
    /// path): `cargo test --release --lib microbench -- --ignored --nocapture` prints the time
    /// per event of the fast parser on typical libkineto events; `MB_ONLY=kernel MB_N=20000`
    /// under `valgrind --tool=callgrind` gives instructions per event (as in
    /// docs/performance.md).
    #[test]
    #[ignore]
    fn parse_profile() {
        let evs: [(&str, &[u8]); 6] = [
            ("cpu_op", b"{\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::expand\", \"pid\": 783658, \"tid\": 785244,\n    \"ts\": 1669783687464200, \"dur\": 19,\n    \"args\": {\n      \"External id\": 3075,\"Ev Idx\": 2\n    }\n  }"),
            ("runtime", b"{\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 783658, \"tid\": 783658,\n    \"ts\": 1669783687389292, \"dur\": 32,\n    \"args\": {\n      \"External id\": 73689,\n      \"cbid\": 211, \"correlation\": 73689\n    }\n  }"),
            ("kernel", b"{\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)\", \"pid\": 1, \"tid\": 7,\n    \"ts\": 1669783687389324, \"dur\": 3,\n    \"args\": {\n      \"External id\": 73689,\n      \"queued\": 0, \"device\": 1, \"context\": 1,\n      \"stream\": 7, \"correlation\": 73689,\n      \"registers per thread\": 16,\n      \"shared memory\": 0,\n      \"blocks per SM\": 0.3,\n      \"warps per SM\": 1.2,\n      \"grid\": [24, 1, 1],\n      \"block\": [128, 1, 1],\n      \"est. achieved occupancy %\": 2\n    }\n  }"),
            ("flow", b"{\n    \"ph\": \"s\", \"id\": 73689, \"pid\": 783658, \"tid\": 783658, \"ts\": 1669783687389292,\n    \"cat\": \"ac2g\", \"name\": \"ac2g\"\n  }"),
            ("flow_end", b"{\n    \"ph\": \"f\", \"id\": 73689, \"pid\": 1, \"tid\": 7, \"ts\": 1669783687389324,\n    \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  }"),
            ("instant", b"{\n    \"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\",\n    \"pid\": 783658, \"tid\": 785244,\n    \"ts\": 1669783687464300,\n    \"args\": {\n      \"Ev Idx\": 42070, \"Device Type\": 1, \"Device Id\": 1, \"Addr\": 139926520725504, \"Bytes\": 5242880, \"Total Allocated\": 5435638784, \"Total Reserved\": 12782141440\n    }\n  }"),
        ];
        let mut ev = RawEvent::default();
        let only = std::env::var("MB_ONLY").ok();
        let n: u32 = std::env::var("MB_N")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2_000_000);
        for (name, doc) in evs {
            if only.as_deref().is_some_and(|o| o != name) {
                continue;
            }
            // the reader's path: the first event learns its shape, the others walk it
            let mut shapes = Shapes::default();
            assert!(parse_shaped(&mut shapes, doc, &mut ev), "{name}");
            let t = std::time::Instant::now();
            for _ in 0..n {
                assert!(parse_shaped(
                    &mut shapes,
                    std::hint::black_box(doc),
                    &mut ev
                ));
                std::hint::black_box(&ev);
            }
            let ns = t.elapsed().as_nanos() as f64 / n as f64;
            eprintln!(
                "{name:8} {:4} B  {ns:6.1} ns/event  {:.2} ns/B",
                doc.len(),
                ns / doc.len() as f64
            );
        }
    }
}
