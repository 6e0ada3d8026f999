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
    Text { text: &'a str, first: bool },
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
