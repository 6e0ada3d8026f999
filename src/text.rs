//! Plain-text helpers shared by the diagnosis (finding titles and evidence) and the renderers,
//! so that a count or a shortened kernel name reads the same everywhere.

/// Thousands separators: `1234567` → `1,234,567`.
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Formats ns with an adaptive unit: `812 ns`, `41.3 µs`, `177.59 ms`, `2.41 s`; zero is
/// `0 ns`.
pub fn fmt_ns(ns: f64) -> String {
    let a = ns.abs();
    if a < 1000.0 {
        format!("{ns:.0} ns")
    } else if a < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if a < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// Formats µs with an adaptive unit: `812 ns`, `41.3 µs`, `177.59 ms`, `2.41 s`; zero is `0`
/// (a table cell). Every renderer's durations.
pub fn fmt_us(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a < 1.0 {
        format!("{:.0} ns", v * 1000.0)
    } else if a < 1000.0 {
        format!("{v:.1} µs")
    } else if a < 1_000_000.0 {
        format!("{:.2} ms", v / 1000.0)
    } else {
        format!("{:.2} s", v / 1_000_000.0)
    }
}

/// The variant of [`fmt_us`] that the diagnosis writes into its sentences: zero reads `0 ns`,
/// and the value is scaled by way of ns ([`fmt_ns`] of `us × 1000`), so on a rounding edge
/// its last digit may differ from [`fmt_us`]'s. Kept apart so that neither output moves a
/// byte.
pub fn fmt_us_sentence(us: f64) -> String {
    fmt_ns(us * 1000.0)
}

/// A 0..1 ratio as a percentage with one decimal: `0.125` → `12.5%`. The one percentage
/// formatter of the diagnosis and the renderers.
pub fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// Bytes with binary units: `1536` → `1.5 KiB`, one decimal from KiB up.
pub fn fmt_bytes(b: u64) -> String {
    let f = b as f64;
    if f >= (1u64 << 30) as f64 {
        format!("{:.1} GiB", f / (1u64 << 30) as f64)
    } else if f >= (1u64 << 20) as f64 {
        format!("{:.1} MiB", f / (1u64 << 20) as f64)
    } else if f >= 1024.0 {
        format!("{:.1} KiB", f / 1024.0)
    } else {
        format!("{b} B")
    }
}

/// The last component of a path (`runs/rank0.json` → `rank0.json`), or the path itself when it
/// has none.
pub fn file_name(path: &str) -> String {
    std::path::Path::new(path)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string())
}

/// Shortens `s` to at most `max` characters by cutting the middle (`head…tail`).
pub fn shorten_middle(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    if max <= 1 {
        return "…".chars().take(max).collect();
    }
    let keep = max - 1;
    let head = keep.div_ceil(2);
    let tail = keep - head;
    let h: String = s.chars().take(head).collect();
    let t: String = s.chars().skip(n - tail).collect();
    format!("{h}…{t}")
}

/// A part of a sentence in which `` `code` `` marks code ([`code_parts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part<'a> {
    /// Text; `first` for the part the sentence starts with.
    Text {
        /// The text.
        text: &'a str,
        /// True for the part the sentence starts with.
        first: bool,
    },
    /// The inside of a matched pair of backticks.
    Code(&'a str),
    /// An unmatched backtick (the last one of an odd count), before the text that follows it.
    Tick,
}

/// Calls `f` on the parts of `s` in order: text, code between matched backticks, and a
/// [`Part::Tick`] for an unmatched one. Each renderer escapes the parts its own way.
pub fn code_parts<'a>(s: &'a str, mut f: impl FnMut(Part<'a>)) {
    let parts: Vec<&str> = s.split('`').collect();
    for (i, p) in parts.iter().enumerate() {
        if i % 2 == 1 && i + 1 < parts.len() {
            f(Part::Code(p));
        } else {
            if i % 2 == 1 {
                f(Part::Tick);
            }
            f(Part::Text {
                text: p,
                first: i == 0,
            });
        }
    }
}

/// Untrusted text (a name or key from a trace) made safe for a terminal: control characters
/// (ESC and the rest of C0, DEL, C1) and the bidirectional overrides that reorder what a
/// reader sees are written as visible escapes (`\x1b`, `\u{202e}`), so an escape sequence in a
/// name is shown as text, never sent to the terminal. Everything else is unchanged.
pub fn printable(s: &str) -> String {
    let risky =
        |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !s.chars().any(risky) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !risky(c) {
            out.push(c);
        } else if (c as u32) < 0x100 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    out
}

/// Splits text at spaces into lines of at most `w` characters.
pub fn wrap(text: &str, w: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ') {
        if !cur.is_empty() && cur.chars().count() + 1 + word.chars().count() > w {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines.into_iter().map(|l| shorten_middle(&l, w)).collect()
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn durations_and_percentages() {
        assert_eq!(fmt_ns(812.0), "812 ns");
        assert_eq!(fmt_ns(0.0), "0 ns");
        assert_eq!(fmt_us(0.0), "0");
        assert_eq!(fmt_us_sentence(0.0), "0 ns");
        assert_eq!(fmt_us(41.25), "41.2 µs");
        assert_eq!(fmt_us_sentence(177_592.0), "177.59 ms");
        assert_eq!(fmt_us(177_592.0), "177.59 ms");
        assert_eq!(pct(0.125), "12.5%");
        assert_eq!(pct(0.4126), "41.3%");
    }
}

#[cfg(test)]
mod printable_tests {
    use super::printable;

    #[test]
    fn escapes_are_shown_as_text() {
        assert_eq!(printable("a\u{1b}[31mred"), "a\\x1b[31mred");
        assert_eq!(printable("x\ny\u{9b}z\u{7f}"), "x\\x0ay\\x9bz\\x7f");
        assert_eq!(printable("abc\u{202e}cba"), "abc\\u{202e}cba");
        assert_eq!(printable("aten::mm µs"), "aten::mm µs");
    }
}

/// Reading back a saved report or summary: the report's fixed words (rule ids, severities,
/// warning codes, dtypes, kinds) are `&'static str` fields, so they are read through this
/// interner. Every distinct word is allocated once for the life of the process; the words
/// form small closed sets (the rules, the severities, the dtypes), so memory stays bounded
/// however many summaries are merged.
pub mod static_words {
    use std::collections::HashSet;
    use std::sync::Mutex;

    use serde::{Deserialize, Deserializer};

    /// A fixed word of a report: `&'static str` under a name serde does not take for a
    /// borrow from the input (its derive borrows every field spelled `&str`).
    pub type Word = &'static str;

    static WORDS: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);

    /// Distinct words the process keeps, at most. A report's fixed words (rule and warning
    /// codes, trust ids, units) number a few hundred; a file claiming more is not a report,
    /// and reading it must not leak memory without bound.
    pub const MAX_WORDS: usize = 4096;

    /// Longest fixed word, bytes (codes and ids are short).
    pub const MAX_WORD_BYTES: usize = 128;

    /// `s` as a `&'static str`, allocated on its first use only; an error past
    /// [`MAX_WORDS`] distinct words or for a word over [`MAX_WORD_BYTES`].
    pub fn intern(s: &str) -> Result<&'static str, String> {
        if s.len() > MAX_WORD_BYTES {
            return Err(format!(
                "a fixed word (code or id) of {} bytes, over {MAX_WORD_BYTES}: not a stallscope \
                 report",
                s.len()
            ));
        }
        let mut guard = WORDS.lock().unwrap_or_else(|e| e.into_inner());
        let set = guard.get_or_insert_with(HashSet::new);
        if let Some(w) = set.get(s) {
            return Ok(w);
        }
        if set.len() >= MAX_WORDS {
            return Err(format!(
                "more than {MAX_WORDS} distinct fixed words (codes and ids) read: not a \
                 stallscope report"
            ));
        }
        let w: &'static str = Box::leak(s.to_owned().into_boxed_str());
        set.insert(w);
        Ok(w)
    }

    /// `#[serde(deserialize_with = "crate::text::static_words::one")]` on a `&'static str`.
    pub fn one<'de, D: Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
        let s = std::borrow::Cow::<str>::deserialize(d)?;
        intern(&s).map_err(serde::de::Error::custom)
    }

    /// The same for an `Option<&'static str>`.
    pub fn option<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'static str>, D::Error> {
        let s = Option::<std::borrow::Cow<str>>::deserialize(d)?;
        s.map(|s| intern(&s).map_err(serde::de::Error::custom))
            .transpose()
    }

    /// The same for a `Vec<&'static str>`.
    pub fn vec<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<&'static str>, D::Error> {
        let v = Vec::<std::borrow::Cow<str>>::deserialize(d)?;
        v.iter()
            .map(|s| intern(s).map_err(serde::de::Error::custom))
            .collect()
    }
}
