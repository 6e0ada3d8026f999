//! torch's memory-timeline export (`prof.export_memory_timeline("x.raw.json.gz")` with a
//! `.raw.json[.gz]` name; HTA's `MemoryAnalysis` reads the same): a JSON array of
//! `[timestamp, action, bytes, category]` entries for one device.
//!
//! As `torch/profiler/_memory_profiler.py` writes it: `timestamp` in ns (-1 for tensors that
//! existed before profiling began), `action` 1 = pre-existing, 2 = create, 3 = increment
//! version (written as two entries: −bytes under the old version's category, +bytes under the
//! new one's), 4 = destroy (negative bytes); `category` indexes
//! [`CATEGORIES`]. The entries are folded as they are read into the bytes held per category
//! after each distinct timestamp (HTA's `_process_raw_events`), never kept.

use std::io::Read;

use serde::de::{Deserializer, SeqAccess, Visitor};

use super::LoadError;

/// Category names, in the export's index order (`_CATEGORY_TO_INDEX`); the last is the
/// memory the profiler could not categorize.
pub const CATEGORIES: [&str; 8] = [
    "parameter",
    "optimizer_state",
    "input",
    "temporary",
    "activation",
    "gradient",
    "autograd_detail",
    "unknown",
];

/// Bytes held per category after each distinct timestamp.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CategoryTimeline {
    /// Distinct timestamps in file order, ns (-1 for the pre-existing entries).
    pub times: Vec<i64>,
    /// Per timestamp: bytes per category ([`CATEGORIES`] order).
    pub sizes: Vec<[i64; 8]>,
    /// Entries read.
    pub entries: u64,
}

impl CategoryTimeline {
    /// Index of the largest total (the first one on ties).
    pub fn peak(&self) -> Option<usize> {
        let mut best: Option<(usize, i64)> = None;
        for (i, s) in self.sizes.iter().enumerate() {
            let t: i64 = s.iter().sum();
            if best.is_none_or(|b| t > b.1) {
                best = Some((i, t));
            }
        }
        best.map(|b| b.0)
    }
}

struct Fold<'a>(&'a mut CategoryTimeline);

impl<'de> Visitor<'de> for Fold<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON array of [timestamp, action, bytes, category] entries")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let t = self.0;
        while let Some((ts, action, bytes, cat)) = seq.next_element::<(i64, i64, i64, i64)>()? {
            if !(1..=4).contains(&action) {
                return Err(serde::de::Error::custom(format!(
                    "entry {}: action {action} is not 1 to 4",
                    t.entries
                )));
            }
            let Some(c) = usize::try_from(cat).ok().filter(|&c| c < CATEGORIES.len()) else {
                return Err(serde::de::Error::custom(format!(
                    "entry {}: category {cat} is not 0 to 7",
                    t.entries
                )));
            };
            if t.times.last() != Some(&ts) {
                t.times.push(ts);
                let prev = t.sizes.last().copied().unwrap_or([0; 8]);
                t.sizes.push(prev);
            }
            if let Some(s) = t.sizes.last_mut() {
                s[c] += bytes;
            }
            t.entries += 1;
        }
        Ok(())
    }
}

/// True when `head` (the first bytes of the decompressed input) looks like the export: an
/// array whose first element is an array of numbers.
pub fn sniff(head: &[u8]) -> bool {
    let s: Vec<u8> = head
        .iter()
        .copied()
        .filter(|c| !c.is_ascii_whitespace())
        .take(3)
        .collect();
    s.len() == 3 && s[0] == b'[' && s[1] == b'[' && (s[2] == b'-' || s[2].is_ascii_digit())
}

/// True when the file at `path` (plain or gzip) starts like the export ([`sniff`]).
pub fn is_export(path: &str) -> bool {
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    let mut raw = [0u8; 64];
    let n = f.read(&mut raw).unwrap_or(0);
    if raw[..n].starts_with(&[0x1f, 0x8b]) {
        let Ok(f) = std::fs::File::open(path) else {
            return false;
        };
        let mut head = [0u8; 64];
        let m = flate2::read::MultiGzDecoder::new(f)
            .read(&mut head)
            .unwrap_or(0);
        sniff(&head[..m])
    } else {
        sniff(&raw[..n])
    }
}

/// Reads an export (plain or gzip, detected by content) from `path`.
pub fn load(path: &str) -> Result<CategoryTimeline, LoadError> {
    let bytes = std::fs::read(path).map_err(|e| LoadError::new(path, format!("{e}")))?;
    let text = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut s = Vec::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_end(&mut s)
            .map_err(|e| LoadError::new(path, format!("gzip: {e}")))?;
        s
    } else {
        bytes
    };
    parse(&text).map_err(|(offset, msg)| LoadError::at(path, offset, msg))
}

/// Parses the export's JSON text; on error, the byte offset and the message.
pub fn parse(text: &[u8]) -> Result<CategoryTimeline, (u64, String)> {
    let mut t = CategoryTimeline::default();
    let mut de = serde_json::Deserializer::from_slice(text);
    let offset = |e: &serde_json::Error| {
        // line and column to a byte offset
        let (line, col) = (e.line(), e.column());
        let mut off = 0usize;
        for (i, l) in text.split(|&c| c == b'\n').enumerate() {
            if i + 1 == line {
                return (off + col.saturating_sub(1)) as u64;
            }
            off += l.len() + 1;
        }
        off as u64
    };
    de.deserialize_seq(Fold(&mut t))
        .and_then(|_| de.end())
        .map_err(|e| (offset(&e), e.to_string()))?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_per_timestamp() {
        let t = parse(b"[[-1, 1, 100, 0], [5, 2, 40, 4], [5, 2, 10, 3], [9, 3, -40, 4], [9, 3, 40, 5], [12, 4, -10, 3]]").unwrap();
        assert_eq!(t.times, vec![-1, 5, 9, 12]);
        assert_eq!(t.sizes[1], [100, 0, 0, 10, 40, 0, 0, 0]);
        assert_eq!(t.sizes[2], [100, 0, 0, 10, 0, 40, 0, 0]);
        assert_eq!(t.sizes[3], [100, 0, 0, 0, 0, 40, 0, 0]);
        assert_eq!(t.peak(), Some(1));
        assert_eq!(t.entries, 6);
        let e = parse(b"[[1, 2, 3, 9]]").unwrap_err();
        assert!(e.1.contains("category 9"), "{}", e.1);
        let e = parse(b"[[1, 2, 3, 0],\n [1, 2]]").unwrap_err();
        assert_eq!(e.0, 21);
        assert!(sniff(b" [[-1, 1"));
        assert!(!sniff(b"{\"traceEvents\""));
    }
}
