//! Finds the boundaries of the entries of `traceEvents` in a byte stream without parsing them.
//!
//! The scanner walks the top-level object (or a bare array of events, the old autograd export)
//! and yields one [`Item`] per event object and per other top-level value. Inside an event it
//! only tracks braces and string state, jumping with SIMD `memchr` to the next interesting byte,
//! so it runs several times faster than the parser that later reads each event. Work is
//! resumable: when an item is not complete in the buffer, [`Scanner::next`] reports
//! [`Step::NeedMore`] without changing state, and the caller retries from the same position
//! once more bytes are appended.
//!
//! Real traces contain strings with unescaped quotes (Python names). A closing quote that is
//! not followed by `:`, `,`, `}` or `]` is taken as part of the string and the event is marked
//! for repair, so one bad name cannot desynchronize the rest of the file.

use std::io::Read;

use memchr::{memchr2, memchr3};

/// What the scanner found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// One entry of `traceEvents`: `buf[start..end]` is a JSON object.
    Event {
        /// Offset of `{`.
        start: usize,
        /// Offset after `}`.
        end: usize,
        /// The scanner saw an unescaped quote inside a string.
        repair: bool,
    },
    /// A top-level member other than `traceEvents`: `buf[start..end]` is its JSON value.
    TopValue {
        /// Member name.
        key: String,
        /// Offset of the value's first byte.
        start: usize,
        /// Offset after the value.
        end: usize,
    },
}

/// Result of one scanning step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// An item, and the position to continue from.
    Item(Item, usize),
    /// The item starting at the given position is not complete in the buffer.
    NeedMore(usize),
    /// The document is complete; the position after it.
    Done(usize),
}

/// A structural error, at an offset into the buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanError {
    /// Buffer offset of the offending byte.
    pub offset: usize,
    /// What was expected.
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Doc,
    Key,
    Colon,
    Value,
    ObjCommaOrEnd,
    Elem { in_object: bool },
    ElemCommaOrEnd { in_object: bool },
    Done,
}

/// Resumable scanner state (between items).
#[derive(Debug, Clone)]
pub struct Scanner {
    state: State,
    key: String,
    /// True once the document turned out to be an object or array of events.
    pub saw_events: bool,
    /// Elements of the event array that are not objects (skipped).
    pub non_objects: u64,
    /// Offset in the buffer of the last `next` call of the first such element.
    pub first_non_object: Option<usize>,
}

impl Default for Scanner {
    fn default() -> Self {
        Self::new()
    }
}

fn skip_ws(buf: &[u8], mut i: usize) -> usize {
    while i < buf.len() && matches!(buf[i], b' ' | b'\n' | b'\r' | b'\t') {
        i += 1;
    }
    i
}

/// Skips a JSON string starting at `buf[i] == b'"'`. Returns the offset after the closing
/// quote, or `None` when the buffer ends first. Sets `repair` on unescaped inner quotes.
#[inline]
fn skip_string(buf: &[u8], mut i: usize, eof: bool, repair: &mut bool) -> Option<usize> {
    i += 1;
    loop {
        if i >= buf.len() {
            return None;
        }
        let k = memchr2(b'"', b'\\', &buf[i..])?;
        i += k;
        if buf[i] == b'\\' {
            i += 2;
            continue;
        }
        // closing quote candidate: what follows must end a key or a value
        let j = skip_ws(buf, i + 1);
        if j >= buf.len() {
            if eof {
                return Some(i + 1);
            }
            return None;
        }
        match buf[j] {
            b':' | b',' | b'}' | b']' => return Some(i + 1),
            _ => {
                *repair = true;
                i += 1;
            }
        }
    }
}

/// Skips an object or array starting at `buf[i]`. Returns the end offset, or `None`.
#[inline]
fn skip_container(buf: &[u8], mut i: usize, eof: bool, repair: &mut bool) -> Option<usize> {
    let (open, close) = if buf[i] == b'{' {
        (b'{', b'}')
    } else {
        (b'[', b']')
    };
    let mut depth = 0usize;
    loop {
        if i >= buf.len() {
            return None;
        }
        let k = memchr3(b'"', open, close, &buf[i..])?;
        i += k;
        let c = buf[i];
        if c == b'"' {
            i = skip_string(buf, i, eof, repair)?;
        } else if c == open {
            depth += 1;
            i += 1;
        } else {
            depth -= 1;
            i += 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
}

/// Skips a scalar (number, literal, or a bare token such as `N/A`).
fn skip_scalar(buf: &[u8], mut i: usize, eof: bool) -> Option<usize> {
    while i < buf.len() {
        match buf[i] {
            b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t' => return Some(i),
            _ => i += 1,
        }
    }
    if eof {
        Some(i)
    } else {
        None
    }
}

/// True when the text at `i`, where an event was expected, is a line of log text (`LOG:`,
/// `WARNING:2026-…`, `W1127 …`): it starts a line (only blanks between it and the line
/// break before it, or the start of the block), starts with a letter and is not a JSON
/// literal. A letter in the middle of a line is broken JSON, reported at its byte.
fn is_log_line(buf: &[u8], i: usize) -> bool {
    if !buf[i].is_ascii_alphabetic() {
        return false;
    }
    let starts_line = buf[..i]
        .iter()
        .rev()
        .find(|c| !matches!(c, b' ' | b'\t' | b'\r'))
        .is_none_or(|c| *c == b'\n');
    if !starts_line {
        return false;
    }
    let word = &buf[i..];
    let literal = [&b"true"[..], b"false", b"null"].iter().any(|l| {
        word.starts_with(l)
            && word
                .get(l.len())
                .is_none_or(|c| !c.is_ascii_alphanumeric() && *c != b'_' && *c != b':')
    });
    !literal
}

/// The end of the line that starts at `i` (after its newline); `None` when it does not end
/// in `buf` and more bytes follow.
fn line_end(buf: &[u8], i: usize, eof: bool) -> Option<usize> {
    match memchr::memchr(b'\n', &buf[i..]) {
        Some(n) => Some(i + n + 1),
        None if eof => Some(buf.len()),
        None => None,
    }
}

fn skip_value(buf: &[u8], i: usize, eof: bool, repair: &mut bool) -> Option<usize> {
    match buf[i] {
        b'{' | b'[' => skip_container(buf, i, eof, repair),
        b'"' => skip_string(buf, i, eof, repair),
        _ => skip_scalar(buf, i, eof),
    }
}

/// Bit masks of one 64-byte chunk: quotes, backslashes, `{`, `}`, and the bytes that may
/// follow a closing quote directly (`:` `,` `}` `]`).
#[derive(Clone, Copy, Default)]
struct Masks {
    quote: u64,
    backslash: u64,
    open: u64,
    close: u64,
    sep: u64,
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn masks_sse2(chunk: &[u8; 64]) -> Masks {
    // SSE2 is part of the x86_64 baseline: no runtime detection needed.
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is always available on x86_64; loads are unaligned loads of 16 bytes
    // from within the 64-byte array.
    unsafe {
        let q = _mm_set1_epi8(b'"' as i8);
        let b = _mm_set1_epi8(b'\\' as i8);
        let o = _mm_set1_epi8(b'{' as i8);
        let c = _mm_set1_epi8(b'}' as i8);
        let colon = _mm_set1_epi8(b':' as i8);
        let comma = _mm_set1_epi8(b',' as i8);
        let rb = _mm_set1_epi8(b']' as i8);
        let mut m = Masks::default();
        for k in 0..4 {
            let v = _mm_loadu_si128(chunk.as_ptr().add(16 * k) as *const __m128i);
            let sh = 16 * k as u32;
            let bits = |x: __m128i| ((_mm_movemask_epi8(x) as u32 as u64) & 0xffff) << sh;
            let close = bits(_mm_cmpeq_epi8(v, c));
            m.quote |= bits(_mm_cmpeq_epi8(v, q));
            m.backslash |= bits(_mm_cmpeq_epi8(v, b));
            m.open |= bits(_mm_cmpeq_epi8(v, o));
            m.close |= close;
            let sep = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(v, colon), _mm_cmpeq_epi8(v, comma)),
                _mm_cmpeq_epi8(v, rb),
            );
            m.sep |= close | bits(sep);
        }
        m
    }
}

/// The AVX2 masks: two 32-byte halves instead of four 16-byte quarters.
///
/// # Safety
/// The CPU must support AVX2 (checked once by [`fast_events`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn masks_avx2(chunk: &[u8; 64]) -> Masks {
    use std::arch::x86_64::*;
    let lo = _mm256_loadu_si256(chunk.as_ptr() as *const __m256i);
    let hi = _mm256_loadu_si256(chunk.as_ptr().add(32) as *const __m256i);
    let (q, b, o, c) = (
        _mm256_set1_epi8(b'"' as i8),
        _mm256_set1_epi8(b'\\' as i8),
        _mm256_set1_epi8(b'{' as i8),
        _mm256_set1_epi8(b'}' as i8),
    );
    let (colon, comma, rb) = (
        _mm256_set1_epi8(b':' as i8),
        _mm256_set1_epi8(b',' as i8),
        _mm256_set1_epi8(b']' as i8),
    );
    // one mask of 64 bits from the same comparison on both halves
    macro_rules! bits {
        (|$v:ident| $e:expr) => {{
            let l = {
                let $v = lo;
                $e
            };
            let h = {
                let $v = hi;
                $e
            };
            (_mm256_movemask_epi8(l) as u32 as u64)
                | ((_mm256_movemask_epi8(h) as u32 as u64) << 32)
        }};
    }
    let close = bits!(|v| _mm256_cmpeq_epi8(v, c));
    Masks {
        quote: bits!(|v| _mm256_cmpeq_epi8(v, q)),
        backslash: bits!(|v| _mm256_cmpeq_epi8(v, b)),
        open: bits!(|v| _mm256_cmpeq_epi8(v, o)),
        close,
        // `}` joins as bits: sharing its comparison vector made LLVM spill it byte by byte
        sep: close
            | bits!(|v| _mm256_or_si256(
                _mm256_or_si256(_mm256_cmpeq_epi8(v, colon), _mm256_cmpeq_epi8(v, comma)),
                _mm256_cmpeq_epi8(v, rb),
            )),
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn masks_sse2(chunk: &[u8; 64]) -> Masks {
    let mut m = Masks::default();
    for (i, &c) in chunk.iter().enumerate() {
        let bit = 1u64 << i;
        match c {
            b'"' => m.quote |= bit,
            b'\\' => m.backslash |= bit,
            b'{' => m.open |= bit,
            b'}' => {
                m.close |= bit;
                m.sep |= bit;
            }
            b':' | b',' | b']' => m.sep |= bit,
            _ => {}
        }
    }
    m
}

/// Positions of characters escaped by a backslash (simdjson's odd-run rule); `prev` carries
/// "the first character of the next chunk is escaped".
#[inline(always)]
fn find_escaped(backslash: u64, prev: &mut u64) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    if backslash | *prev == 0 {
        // most chunks of a trace have no backslash at all
        return 0;
    }
    let backslash = backslash & !*prev;
    let follows = (backslash << 1) | *prev;
    let odd_starts = backslash & !EVEN & !follows;
    let (even_starts, overflow) = odd_starts.overflowing_add(backslash);
    *prev = overflow as u64;
    let invert = even_starts << 1;
    (EVEN ^ invert) & follows
}

/// [`prefix_xor`] in one carry-less multiplication by all ones.
///
/// # Safety
/// The CPU must support PCLMULQDQ (checked once by [`fast_events`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "pclmulqdq")]
#[inline]
unsafe fn prefix_xor_clmul(x: u64) -> u64 {
    use std::arch::x86_64::*;
    let a = _mm_set_epi64x(0, x as i64);
    let ones = _mm_set1_epi8(-1);
    _mm_cvtsi128_si64(_mm_clmulepi64_si128(a, ones, 0)) as u64
}

/// Bit i = XOR of bits 0..=i.
#[inline(always)]
fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

#[inline(always)]
pub(super) fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\n' | b'\r' | b'\t')
}

/// Fast path over a run of events: appends `(start, end)` of each complete event found from
/// `pos` and returns the position after the last one. It treats every unescaped quote as a
/// string delimiter and accepts an event only when each of its closing quotes is followed
/// (after whitespace) by `:` `,` `}` or `]` — exactly the case where the byte-by-byte rules of
/// [`Scanner::next`] give the same boundaries without repair. Between events it accepts only
/// whitespace and commas. Anything else (an event that needs repair, the end of the array, a
/// non-object element, an event cut by the end of the buffer) stops it before that point, for
/// [`Scanner::next`] to handle.
fn fast_events(buf: &[u8], pos: usize, out: &mut Vec<(u32, u32, bool)>) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::atomic::{AtomicU8, Ordering};
        // 0 = not checked yet, 1 = SSE2 only, 2 = AVX2 and PCLMULQDQ
        static LEVEL: AtomicU8 = AtomicU8::new(0);
        let mut level = LEVEL.load(Ordering::Relaxed);
        if level == 0 {
            level = if std::env::var_os("STALLSCOPE_NO_AVX2").is_none()
                && is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("pclmulqdq")
            {
                2
            } else {
                1
            };
            LEVEL.store(level, Ordering::Relaxed);
        }
        if level == 2 {
            // SAFETY: the CPU supports both features (checked above).
            return unsafe { fast_events_avx2(buf, pos, out) };
        }
    }
    fast_events_with::<false>(buf, pos, out)
}

/// [`fast_events`] compiled for AVX2 and PCLMULQDQ.
///
/// # Safety
/// The CPU must support both.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,pclmulqdq")]
unsafe fn fast_events_avx2(buf: &[u8], pos: usize, out: &mut Vec<(u32, u32, bool)>) -> usize {
    fast_events_with::<true>(buf, pos, out)
}

/// The body of [`fast_events`]; `AVX2` selects the AVX2 masks and the carry-less prefix XOR
/// (only inside [`fast_events_avx2`]).
#[inline(always)]
fn fast_events_with<const AVX2: bool>(
    buf: &[u8],
    pos: usize,
    out: &mut Vec<(u32, u32, bool)>,
) -> usize {
    let n = buf.len();
    let mut depth: u32 = 0;
    let mut in_str: u64 = 0; // all ones when a string continues into the next chunk
    let mut prev_esc: u64 = 0;
    let mut ev_start = pos;
    let mut last_end = pos;
    let mut gap_from = pos;
    let mut off = pos;
    let mut pad;
    while off < n {
        // full chunks straight from the buffer; the last one padded with spaces
        let (chunk, valid): (&[u8; 64], u64) = match buf.get(off..off + 64) {
            Some(c) => (c.try_into().unwrap(), u64::MAX),
            None => {
                pad = [b' '; 64];
                pad[..n - off].copy_from_slice(&buf[off..]);
                (&pad, (1u64 << (n - off)) - 1)
            }
        };
        #[cfg(target_arch = "x86_64")]
        let (m, esc, quote, inside) = {
            // SAFETY: AVX2 is true only inside `fast_events_avx2`, whose caller checked both
            // features.
            let m = if AVX2 {
                unsafe { masks_avx2(chunk) }
            } else {
                masks_sse2(chunk)
            };
            let esc = find_escaped(m.backslash, &mut prev_esc);
            let quote = m.quote & !esc;
            let px = if AVX2 {
                unsafe { prefix_xor_clmul(quote) }
            } else {
                prefix_xor(quote)
            };
            (m, esc, quote, px ^ in_str)
        };
        #[cfg(not(target_arch = "x86_64"))]
        let (m, esc, quote, inside) = {
            let m = masks_sse2(chunk);
            let esc = find_escaped(m.backslash, &mut prev_esc);
            let quote = m.quote & !esc;
            (m, esc, quote, prefix_xor(quote) ^ in_str)
        };
        let _ = esc;
        in_str = ((inside as i64) >> 63) as u64;
        // a backslash outside a string, or a closing quote not followed by a structural
        // character, ends the fast path at that position
        let mut stop_at = 64u32;
        let bad_bs = m.backslash & !inside & valid;
        if bad_bs != 0 {
            stop_at = bad_bs.trailing_zeros();
        }
        // closing quotes directly followed by `:` `,` `}` or `]` are fine; the others (space
        // after them, the last byte of the chunk, anything else) are checked byte by byte
        let mut closing = quote & !inside & valid & !(m.sep >> 1);
        while closing != 0 {
            let b = closing.trailing_zeros();
            if b >= stop_at {
                break;
            }
            closing &= closing - 1;
            let mut j = off + b as usize + 1;
            while j < n && is_ws(buf[j]) {
                j += 1;
            }
            if j >= n || !matches!(buf[j], b':' | b',' | b'}' | b']') {
                stop_at = b;
                break;
            }
        }
        let limit = if stop_at == 64 {
            valid
        } else {
            (1u64 << stop_at) - 1
        };
        let mut structural = (m.open | m.close) & !inside & limit;
        while structural != 0 {
            let b = structural.trailing_zeros() as usize;
            structural &= structural - 1;
            let p = off + b;
            if buf[p] == b'{' {
                if depth == 0 {
                    if !buf[gap_from..p].iter().all(|&c| is_ws(c) || c == b',') {
                        return last_end;
                    }
                    ev_start = p;
                }
                depth += 1;
            } else {
                if depth == 0 {
                    return last_end;
                }
                depth -= 1;
                if depth == 0 {
                    out.push((ev_start as u32, (p + 1) as u32, false));
                    last_end = p + 1;
                    gap_from = p + 1;
                }
            }
        }
        if stop_at != 64 {
            return last_end;
        }
        off += 64;
        if depth == 0 {
            let end = off.min(n);
            if !buf[gap_from..end].iter().all(|&c| is_ws(c) || c == b',') {
                return last_end;
            }
            gap_from = end;
        }
    }
    last_end
}

impl Scanner {
    /// A scanner at the start of a document.
    pub fn new() -> Self {
        Scanner {
            state: State::Doc,
            key: String::new(),
            saw_events: false,
            non_objects: 0,
            first_non_object: None,
        }
    }

    /// Inside the events array (between elements): `Some((expects_element, in_object))`,
    /// where `expects_element` is true right after `[` or a `,` and false right after an
    /// element, and `in_object` tells whether the array is the `traceEvents` member of an
    /// object (false for a bare top-level array).
    pub fn events_position(&self) -> Option<(bool, bool)> {
        match self.state {
            State::Elem { in_object } => Some((true, in_object)),
            State::ElemCommaOrEnd { in_object } => Some((false, in_object)),
            _ => None,
        }
    }

    /// A scanner inside the events array at the position [`Scanner::events_position`]
    /// reports as `(expects_element, in_object)`: to go on where a chain reader left off.
    pub fn in_events(expects_element: bool, in_object: bool) -> Self {
        Scanner {
            state: if expects_element {
                State::Elem { in_object }
            } else {
                State::ElemCommaOrEnd { in_object }
            },
            saw_events: true,
            ..Scanner::new()
        }
    }

    /// Goes on inside the events array where chain blocks ended ([`Scanner::in_events`]),
    /// keeping the count of skipped non-object values and the first one's offset.
    pub fn resume_in_events(&mut self, expects_element: bool, in_object: bool) {
        let (non_objects, first) = (self.non_objects, self.first_non_object);
        *self = Scanner::in_events(expects_element, in_object);
        (self.non_objects, self.first_non_object) = (non_objects, first);
    }

    /// Inside the events array, appends the complete events that follow `pos` to `out` (as
    /// `(start, end, repair)` offsets into `buf`) with a fast SIMD path, and returns the
    /// position to continue from with [`Scanner::next`]. Gives the same events as repeated
    /// calls to `next` would; it leaves to `next` whatever it does not handle (the end of the
    /// array, events that need repair, incomplete events). Does nothing outside the events
    /// array or for buffers of 4 GiB and more.
    pub fn next_events(
        &mut self,
        buf: &[u8],
        pos: usize,
        out: &mut Vec<(u32, u32, bool)>,
    ) -> usize {
        let in_object = match self.state {
            State::Elem { in_object } | State::ElemCommaOrEnd { in_object } => in_object,
            _ => return pos,
        };
        if buf.len() >= u32::MAX as usize {
            return pos;
        }
        let before = out.len();
        let end = fast_events(buf, pos, out);
        if out.len() > before {
            self.state = State::ElemCommaOrEnd { in_object };
        }
        end
    }

    /// Counts a log line skipped at `i` with the non-object elements (the reader's
    /// `non-object-event` warning gives the first one's offset).
    fn skip_log_line(&mut self, i: usize) {
        if self.non_objects == 0 {
            self.first_non_object = Some(i);
        }
        self.non_objects += 1;
    }

    /// True once the closing bracket of the document was seen.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Scans from `pos` for the next item. `eof` says no more bytes will follow `buf`.
    /// [`Step::NeedMore`] gives the position after the whitespace that precedes the incomplete
    /// item (whitespace changes no state), so a run of whitespace is consumed as it is read
    /// and never carried into the next block.
    pub fn next(&mut self, buf: &[u8], mut pos: usize, eof: bool) -> Result<Step, ScanError> {
        loop {
            let i = skip_ws(buf, pos);
            if i >= buf.len() {
                return Ok(if self.state == State::Done {
                    Step::Done(i)
                } else {
                    Step::NeedMore(i)
                });
            }
            let c = buf[i];
            let err = |msg: &str| ScanError {
                offset: i,
                message: msg.to_string(),
            };
            match self.state {
                State::Doc => match c {
                    b'{' => {
                        self.state = State::Key;
                        pos = i + 1;
                    }
                    b'[' => {
                        self.saw_events = true;
                        self.state = State::Elem { in_object: false };
                        pos = i + 1;
                    }
                    0xEF if buf[i..].starts_with(&[0xEF, 0xBB, 0xBF]) => pos = i + 3,
                    _ => return Err(err("expected a JSON object or array")),
                },
                State::Key => match c {
                    b'"' => {
                        let mut rep = false;
                        let Some(end) = skip_string(buf, i, eof, &mut rep) else {
                            return Ok(Step::NeedMore(i));
                        };
                        let raw = &buf[i..end];
                        self.key = serde_json::from_slice::<String>(raw).unwrap_or_else(|_| {
                            String::from_utf8_lossy(&raw[1..raw.len() - 1]).into()
                        });
                        self.state = State::Colon;
                        pos = end;
                    }
                    b'}' => {
                        self.state = State::Done;
                        return Ok(Step::Done(i + 1));
                    }
                    _ => return Err(err("expected a member name")),
                },
                State::Colon => {
                    if c != b':' {
                        return Err(err("expected ':'"));
                    }
                    self.state = State::Value;
                    pos = i + 1;
                }
                State::Value => {
                    if self.key == "traceEvents" && c == b'[' {
                        self.saw_events = true;
                        self.state = State::Elem { in_object: true };
                        pos = i + 1;
                        continue;
                    }
                    let mut rep = false;
                    let Some(end) = skip_value(buf, i, eof, &mut rep) else {
                        return Ok(Step::NeedMore(i));
                    };
                    self.state = State::ObjCommaOrEnd;
                    let key = std::mem::take(&mut self.key);
                    return Ok(Step::Item(Item::TopValue { key, start: i, end }, end));
                }
                State::ObjCommaOrEnd => match c {
                    b',' => {
                        self.state = State::Key;
                        pos = i + 1;
                    }
                    b'}' => {
                        self.state = State::Done;
                        return Ok(Step::Done(i + 1));
                    }
                    _ => return Err(err("expected ',' or '}' after a member")),
                },
                State::Elem { in_object } => match c {
                    b']' => {
                        pos = i + 1;
                        if in_object {
                            self.state = State::ObjCommaOrEnd;
                        } else {
                            self.state = State::Done;
                            return Ok(Step::Done(pos));
                        }
                    }
                    b'{' => {
                        let mut repair = false;
                        let Some(end) = skip_container(buf, i, eof, &mut repair) else {
                            return Ok(Step::NeedMore(i));
                        };
                        self.state = State::ElemCommaOrEnd { in_object };
                        return Ok(Step::Item(
                            Item::Event {
                                start: i,
                                end,
                                repair,
                            },
                            end,
                        ));
                    }
                    b',' => pos = i + 1, // tolerate empty slots / double commas
                    _ if is_log_line(buf, i) => {
                        // a log or warning line written into the array (kineto #1453,
                        // #1460): skipped to its end, counted with the non-objects
                        let Some(end) = line_end(buf, i, eof) else {
                            return Ok(Step::NeedMore(i));
                        };
                        self.skip_log_line(i);
                        pos = end;
                    }
                    _ => {
                        // a non-object element: skip it (counted; the reader warns)
                        let mut rep = false;
                        let Some(end) = skip_value(buf, i, eof, &mut rep) else {
                            return Ok(Step::NeedMore(i));
                        };
                        if self.non_objects == 0 {
                            self.first_non_object = Some(i);
                        }
                        self.non_objects += 1;
                        self.state = State::ElemCommaOrEnd { in_object };
                        pos = end;
                    }
                },
                State::ElemCommaOrEnd { in_object } => match c {
                    b',' => {
                        self.state = State::Elem { in_object };
                        pos = i + 1;
                    }
                    b']' => {
                        self.state = State::Elem { in_object };
                        pos = i; // let Elem handle the close
                    }
                    b'{' => {
                        // missing comma between events: tolerate
                        self.state = State::Elem { in_object };
                        pos = i;
                    }
                    _ if is_log_line(buf, i) => {
                        let Some(end) = line_end(buf, i, eof) else {
                            return Ok(Step::NeedMore(i));
                        };
                        self.skip_log_line(i);
                        pos = end;
                    }
                    _ => return Err(err("expected ',' or ']' after an event")),
                },
                State::Done => return Ok(Step::Done(i)),
            }
        }
    }
}

/// One piece of a document read by [`scan_stream`], with its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streamed<'b> {
    /// The document's shape, before any item: `bare` when it is a top-level array of events
    /// (the old autograd export) rather than an object.
    Start {
        /// The first byte after whitespace and a UTF-8 byte order mark is `[`.
        bare: bool,
    },
    /// One entry of `traceEvents`: its JSON object, as in the input.
    Event {
        /// The object's bytes.
        bytes: &'b [u8],
        /// The scanner saw an unescaped quote inside a string ([`Item::Event`]).
        repair: bool,
    },
    /// A top-level member other than `traceEvents`, in document order.
    TopValue {
        /// Member name.
        key: &'b str,
        /// Its JSON value's bytes.
        bytes: &'b [u8],
    },
}

/// Why [`scan_stream`] stopped.
#[derive(Debug)]
pub enum StreamError<E> {
    /// Reading the input failed.
    Io(std::io::Error),
    /// The document is not well-formed JSON at this absolute byte offset.
    Malformed {
        /// Offset from the start of the input.
        offset: u64,
        /// What was expected ([`ScanError::message`]).
        message: String,
    },
    /// The input ends inside the document; the offset of the first byte not consumed.
    Truncated {
        /// Offset from the start of the input.
        offset: u64,
    },
    /// The visitor's own error.
    Visit(E),
}

/// Reads a whole document from `input` block by block (`block` bytes at a time, doubled while
/// one item does not fit) with a [`Scanner`], and calls `visit` with [`Streamed::Start`] and
/// then each item in document order. Memory stays at a block or two, never the file. Returns
/// the input's length in bytes (what follows the document is read and counted, not scanned).
///
/// The streaming way to drive the scanner, for callers that see every item once and in order
/// (`stallscope slice`); the reader drives the scanner itself, over mapped or reused buffers
/// cut for its parser threads ([`super::read_from`]).
pub fn scan_stream<R: Read, E>(
    mut input: R,
    block: usize,
    mut visit: impl FnMut(Streamed<'_>) -> Result<(), E>,
) -> Result<u64, StreamError<E>> {
    let block = block.max(1);
    let mut scanner = Scanner::new();
    let mut buf: Vec<u8> = Vec::with_capacity(block);
    // absolute offset of buf[0]
    let mut base: u64 = 0;
    let mut eof = false;
    let mut target = block;
    let mut started = false;
    loop {
        while !eof && buf.len() < target {
            let want = (target - buf.len()) as u64;
            let n = (&mut input)
                .take(want)
                .read_to_end(&mut buf)
                .map_err(StreamError::Io)?;
            if n == 0 {
                eof = true;
            }
        }
        if !started {
            let i = buf
                .iter()
                .position(|c| !c.is_ascii_whitespace())
                .unwrap_or(buf.len());
            let mut j = i;
            if buf[j..].starts_with(&[0xEF, 0xBB, 0xBF]) {
                j += 3;
            }
            while j < buf.len() && buf[j].is_ascii_whitespace() {
                j += 1;
            }
            if j >= buf.len() && !eof {
                target = target.saturating_mul(2);
                continue;
            }
            let bare = buf.get(j) == Some(&b'[');
            visit(Streamed::Start { bare }).map_err(StreamError::Visit)?;
            started = true;
        }
        let mut pos = 0usize;
        let mut progressed = false;
        let done = loop {
            match scanner.next(&buf, pos, eof) {
                Ok(Step::Item(Item::Event { start, end, repair }, next)) => {
                    let bytes = &buf[start..end];
                    visit(Streamed::Event { bytes, repair }).map_err(StreamError::Visit)?;
                    pos = next;
                    progressed = true;
                }
                Ok(Step::Item(Item::TopValue { key, start, end }, next)) => {
                    let bytes = &buf[start..end];
                    visit(Streamed::TopValue { key: &key, bytes }).map_err(StreamError::Visit)?;
                    pos = next;
                    progressed = true;
                }
                Ok(Step::NeedMore(p)) => {
                    pos = p;
                    break false;
                }
                Ok(Step::Done(p)) => {
                    pos = p;
                    break true;
                }
                Err(e) => {
                    return Err(StreamError::Malformed {
                        offset: base + e.offset as u64,
                        message: e.message,
                    })
                }
            }
        };
        if done {
            break;
        }
        if eof {
            return Err(StreamError::Truncated {
                offset: base + pos as u64,
            });
        }
        target = if progressed {
            block
        } else {
            target.saturating_mul(2)
        };
        buf.drain(..pos);
        base += pos as u64;
    }
    // the rest of the input, counted (trailing whitespace or garbage is not read as JSON)
    let mut sink = [0u8; 1 << 16];
    let mut rest = buf.len() as u64;
    loop {
        match input.read(&mut sink) {
            Ok(0) => break,
            Ok(n) => rest += n as u64,
            Err(e) => return Err(StreamError::Io(e)),
        }
    }
    Ok(base + rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_all(doc: &[u8]) -> Vec<Item> {
        let mut s = Scanner::new();
        let mut pos = 0;
        let mut out = vec![];
        loop {
            match s.next(doc, pos, true).unwrap() {
                Step::Item(it, p) => {
                    out.push(it);
                    pos = p;
                }
                Step::Done(_) => break,
                Step::NeedMore(p) => panic!("need more at {p}"),
            }
        }
        out
    }

    #[test]
    fn finds_events_and_top_values() {
        let doc = br#"{"schemaVersion": 1, "traceEvents": [ {"name": "a{", "x": {"y": "}"}}, {"n": "b\"}"} ], "deviceProperties": [{"id": 0}]}"#;
        let items = scan_all(doc);
        assert_eq!(items.len(), 4);
        match &items[1] {
            Item::Event { start, end, repair } => {
                assert_eq!(&doc[*start..*end], br#"{"name": "a{", "x": {"y": "}"}}"#);
                assert!(!repair);
            }
            _ => panic!(),
        }
        match &items[3] {
            Item::TopValue { key, start, end } => {
                assert_eq!(key, "deviceProperties");
                assert_eq!(&doc[*start..*end], br#"[{"id": 0}]"#);
            }
            _ => panic!(),
        }
    }

    #[test]
    fn resumes_after_partial_buffer() {
        let doc = br#"{"traceEvents": [{"a": 1}, {"b": "xyz"}]}"#;
        let mut s = Scanner::new();
        let cut = 30; // inside the second event
        let mut pos = 0;
        let mut n = 0;
        loop {
            match s.next(&doc[..cut], pos, false).unwrap() {
                Step::Item(_, p) => {
                    n += 1;
                    pos = p
                }
                Step::NeedMore(p) => {
                    pos = p;
                    break;
                }
                Step::Done(_) => panic!(),
            }
        }
        assert_eq!(n, 1);
        match s.next(doc, pos, true).unwrap() {
            Step::Item(Item::Event { start, end, .. }, _) => {
                assert_eq!(&doc[start..end], br#"{"b": "xyz"}"#)
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unescaped_quote_marks_repair() {
        let doc = br#"[{"name": "say "hi" now", "ph": "X"}, {"name": "ok"}]"#;
        let items = scan_all(doc);
        assert_eq!(items.len(), 2);
        assert!(matches!(items[0], Item::Event { repair: true, .. }));
        assert!(matches!(items[1], Item::Event { repair: false, .. }));
    }

    /// Items found by `next` alone, or by `next_events` + `next` as the reader does it,
    /// feeding the buffer in pieces of `step` bytes.
    fn scan_with(doc: &[u8], fast: bool, step: usize) -> Vec<Item> {
        let mut s = Scanner::new();
        let mut out = vec![];
        let mut pos = 0;
        let mut len = step.min(doc.len());
        let mut ranges = vec![];
        loop {
            let eof = len == doc.len();
            let buf = &doc[..len];
            if fast {
                ranges.clear();
                pos = s.next_events(buf, pos, &mut ranges);
                for &(a, b, r) in &ranges {
                    out.push(Item::Event {
                        start: a as usize,
                        end: b as usize,
                        repair: r,
                    });
                }
            }
            match s.next(buf, pos, eof) {
                Ok(Step::Item(it, p)) => {
                    out.push(it);
                    pos = p;
                }
                Ok(Step::NeedMore(p)) => {
                    pos = p;
                    if eof {
                        out.push(Item::TopValue {
                            key: "<truncated>".into(),
                            start: p,
                            end: p,
                        });
                        return out;
                    }
                    len = (len + step).min(doc.len());
                }
                Ok(Step::Done(_)) => return out,
                Err(e) => {
                    out.push(Item::TopValue {
                        key: format!("<error {}>", e.message),
                        start: e.offset,
                        end: e.offset,
                    });
                    return out;
                }
            }
        }
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    fn random_doc(r: &mut Rng) -> Vec<u8> {
        const PIECES: &[&str] = &[
            "a", "bc", " ", "\n", "\"", "\\\"", "\\\\", "\\", "{", "}", "[", "]", ":", ",", "é",
            "\\u00e9", "\t", "x\"y", "\\\\\\\"",
        ];
        let mut d = String::from("{\"schemaVersion\": 1, \"traceEvents\": [\n");
        let events = 1 + r.below(40);
        for e in 0..events {
            if e > 0 {
                d.push_str(if r.below(20) == 0 { ",," } else { ",\n  " });
            }
            if r.below(30) == 0 {
                d.push_str("17, ");
            }
            d.push_str("{\"ph\": \"X\", \"name\": \"");
            let k = r.below(6);
            for _ in 0..k {
                let p = if r.below(3) == 0 {
                    PIECES[r.below(PIECES.len())]
                } else {
                    "n"
                };
                d.push_str(p);
            }
            d.push_str("\", \"args\": {\"v\": [1, {\"w\": \"");
            for _ in 0..r.below(4) {
                d.push_str(PIECES[r.below(PIECES.len())]);
            }
            d.push_str("\"}], \"z\": 2}}");
        }
        d.push_str("\n], \"traceName\": \"t\"}");
        if r.below(4) == 0 {
            let cut = r.below(d.len());
            return d.as_bytes()[..cut].to_vec();
        }
        d.into_bytes()
    }

    #[test]
    fn fast_path_matches_slow_path() {
        let mut r = Rng(0x9e37_79b9_7f4a_7c15);
        let mut fast_events_seen = 0;
        for _ in 0..3000 {
            let doc = random_doc(&mut r);
            let slow = scan_with(&doc, false, doc.len().max(1));
            for step in [doc.len().max(1), 1 + r.below(200), 64, 7] {
                let fast = scan_with(&doc, true, step);
                assert_eq!(
                    slow,
                    fast,
                    "step {step}, doc {:?}",
                    String::from_utf8_lossy(&doc)
                );
            }
            fast_events_seen += slow.len();
        }
        assert!(fast_events_seen > 10_000);
    }

    #[test]
    fn escapes_across_chunks() {
        // backslash runs of every length, placed across 64-byte chunk borders
        for run in 0..6 {
            for shift in 0..70 {
                let mut d = String::from("{\"traceEvents\": [");
                d.push_str(&" ".repeat(shift));
                d.push_str("{\"name\": \"");
                d.push_str(&"\\\\".repeat(run));
                d.push_str("\\\"}{\"}, {\"b\": 1}]}");
                let doc = d.into_bytes();
                assert_eq!(
                    scan_with(&doc, false, doc.len()),
                    scan_with(&doc, true, doc.len())
                );
            }
        }
    }

    #[test]
    fn find_escaped_matches_scalar() {
        let mut r = Rng(12345);
        for _ in 0..20000 {
            let mut bytes = [b'a'; 128];
            for b in bytes.iter_mut() {
                if r.below(3) == 0 {
                    *b = b'\\';
                }
            }
            // scalar reference: a backslash escapes the next character
            let mut want = [false; 128];
            let mut i = 0;
            while i < 128 {
                if bytes[i] == b'\\' {
                    if i + 1 < 128 {
                        want[i + 1] = true;
                    }
                    i += 2;
                } else {
                    i += 1;
                }
            }
            let mut prev = 0u64;
            for c in 0..2 {
                let chunk: &[u8; 64] = bytes[c * 64..c * 64 + 64].try_into().unwrap();
                let esc = find_escaped(masks_sse2(chunk).backslash, &mut prev);
                for k in 0..64 {
                    assert_eq!(esc >> k & 1 == 1, want[c * 64 + k], "{:?}", bytes);
                }
            }
        }
    }

    /// The AVX2 masks and carry-less prefix XOR equal the SSE2/scalar ones, and both fast
    /// paths cut the same events (the dispatching one may use either).
    #[test]
    fn simd_levels_agree() {
        let mut r = Rng(0x2545_f491_4f6c_dd1d);
        let alphabet = b"\"\\{}[]:, \nax0";
        #[cfg(target_arch = "x86_64")]
        let avx = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("pclmulqdq");
        for _ in 0..20000 {
            let mut chunk = [0u8; 64];
            for b in chunk.iter_mut() {
                *b = alphabet[r.below(alphabet.len())];
            }
            let m = masks_sse2(&chunk);
            for (i, &c) in chunk.iter().enumerate() {
                let bit = |x: u64| x >> i & 1 == 1;
                assert_eq!(bit(m.quote), c == b'"');
                assert_eq!(bit(m.backslash), c == b'\\');
                assert_eq!(bit(m.open), c == b'{');
                assert_eq!(bit(m.close), c == b'}');
                assert_eq!(bit(m.sep), matches!(c, b':' | b',' | b'}' | b']'));
            }
            #[cfg(target_arch = "x86_64")]
            if avx {
                // SAFETY: both features were detected above.
                let (a, px) = unsafe { (masks_avx2(&chunk), prefix_xor_clmul(m.quote)) };
                assert_eq!(
                    (a.quote, a.backslash, a.open, a.close, a.sep),
                    (m.quote, m.backslash, m.open, m.close, m.sep)
                );
                assert_eq!(px, prefix_xor(m.quote));
            }
        }
        for _ in 0..2000 {
            let doc = random_doc(&mut r);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let skip = doc.iter().position(|&c| c == b'[').map_or(0, |p| p + 1);
            let ea = fast_events(&doc, skip, &mut a);
            let eb = fast_events_with::<false>(&doc, skip, &mut b);
            assert_eq!((ea, a), (eb, b), "{:?}", String::from_utf8_lossy(&doc));
        }
    }

    #[test]
    fn rejects_non_json() {
        let mut s = Scanner::new();
        assert!(s.next(b"hello", 0, true).is_err());
    }
}
