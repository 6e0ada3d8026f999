//! The server's memory of finished analyses: follow-up questions about a trace are answered
//! from its report instead of reading the file again.
//!
//! An entry is keyed by the file's (or rank folder's, see [`Key::of`]) canonical path, size
//! and modification time and by the
//! window (so a rewritten trace is read again, and each window has its own report). The cache
//! holds at most `max_entries` reports and `max_bytes` of their estimated size (the length of
//! their compact JSON, which tracks the heap they hold: names and table rows); the least
//! recently used go first, and a report larger than the whole bound is served but not kept.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// What an analysis depends on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    /// Canonical path.
    pub path: PathBuf,
    /// Bytes on disk.
    pub size: u64,
    /// Last modification.
    pub modified: Option<SystemTime>,
    /// The window, as `WindowSpec`'s display (`auto`, `--steps 3..6`, …).
    pub window: String,
}

impl Key {
    /// The key of `path` (canonical) as it is now on disk, for `window`.
    /// For a folder of per-rank traces: the total size of its entries and the latest
    /// modification of the folder or any entry (a rank file added, removed or rewritten is
    /// read again).
    pub fn of(path: &Path, window: String) -> std::io::Result<Key> {
        let m = std::fs::metadata(path)?;
        let (mut size, mut modified) = (m.len(), m.modified().ok());
        if m.is_dir() {
            size = 0;
            for e in std::fs::read_dir(path)? {
                let em = std::fs::metadata(e?.path())?;
                size += em.len();
                modified = modified.max(em.modified().ok());
            }
        }
        Ok(Key {
            path: path.to_path_buf(),
            size,
            modified,
            window,
        })
    }
}

/// A least-recently-used cache bounded by entries and estimated bytes.
#[derive(Debug)]
pub struct Lru<V> {
    /// Oldest first.
    entries: VecDeque<(Key, Arc<V>, usize)>,
    bytes: usize,
    max_entries: usize,
    max_bytes: usize,
}

impl<V> Lru<V> {
    /// An empty cache.
    pub fn new(max_entries: usize, max_bytes: usize) -> Lru<V> {
        Lru {
            entries: VecDeque::new(),
            bytes: 0,
            max_entries,
            max_bytes,
        }
    }

    /// The value of `key`, now the most recently used.
    pub fn get(&mut self, key: &Key) -> Option<Arc<V>> {
        let i = self.entries.iter().position(|(k, _, _)| k == key)?;
        let e = self.entries.remove(i)?;
        let v = e.1.clone();
        self.entries.push_back(e);
        Some(v)
    }

    /// Keeps `value` (estimated `bytes`), evicting the least recently used entries until the
    /// bounds hold; a value over the whole bound is not kept. Replaces an entry of the same key.
    pub fn insert(&mut self, key: Key, value: Arc<V>, bytes: usize) {
        if let Some(i) = self.entries.iter().position(|(k, _, _)| *k == key) {
            if let Some((_, _, b)) = self.entries.remove(i) {
                self.bytes -= b;
            }
        }
        if bytes > self.max_bytes || self.max_entries == 0 {
            return;
        }
        while self.entries.len() >= self.max_entries || self.bytes + bytes > self.max_bytes {
            match self.entries.pop_front() {
                Some((_, _, b)) => self.bytes -= b,
                None => break,
            }
        }
        self.bytes += bytes;
        self.entries.push_back((key, value, bytes));
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Estimated bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

/// Bytes of `value`'s compact JSON, counted without building it.
pub fn json_size<T: serde::Serialize>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    match serde_json::to_writer(&mut c, value) {
        Ok(()) => c.0,
        // unserializable: count it as too large to keep
        Err(_) => usize::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u64) -> Key {
        Key {
            path: PathBuf::from(format!("/t/{n}.json")),
            size: n,
            modified: None,
            window: "auto".into(),
        }
    }

    #[test]
    fn evicts_the_least_recently_used_by_count() {
        let mut c = Lru::new(2, 1000);
        c.insert(key(1), Arc::new(1), 10);
        c.insert(key(2), Arc::new(2), 10);
        assert_eq!(c.get(&key(1)).as_deref(), Some(&1)); // 1 is now the most recent
        c.insert(key(3), Arc::new(3), 10);
        assert_eq!(c.len(), 2);
        assert!(c.get(&key(2)).is_none());
        assert!(c.get(&key(1)).is_some() && c.get(&key(3)).is_some());
    }

    #[test]
    fn holds_no_more_than_the_byte_bound() {
        let mut c = Lru::new(100, 100);
        for n in 0..10 {
            c.insert(key(n), Arc::new(n), 30);
            assert!(c.bytes() <= 100, "{} bytes", c.bytes());
        }
        assert_eq!(c.len(), 3);
        assert_eq!(c.bytes(), 90);
        // the three most recent are left
        for n in 7..10 {
            assert!(c.get(&key(n)).is_some());
        }
        // larger than the whole bound: served by the caller, not kept, nothing evicted
        c.insert(key(99), Arc::new(99), 101);
        assert!(c.get(&key(99)).is_none());
        assert_eq!(c.len(), 3);
        // a bigger value evicts as many as needed
        c.insert(key(50), Arc::new(50), 80);
        assert_eq!((c.len(), c.bytes()), (1, 80));
    }

    #[test]
    fn a_changed_file_or_window_is_another_key() {
        let mut c = Lru::new(10, 1000);
        c.insert(key(1), Arc::new(1), 10);
        let mut k = key(1);
        k.modified = Some(SystemTime::UNIX_EPOCH);
        assert!(c.get(&k).is_none());
        let mut k = key(1);
        k.window = "--all".into();
        assert!(c.get(&k).is_none());
        // same key: replaced, counted once
        c.insert(key(1), Arc::new(2), 20);
        assert_eq!((c.len(), c.bytes()), (1, 20));
        assert_eq!(c.get(&key(1)).as_deref(), Some(&2));
    }

    #[test]
    fn json_size_is_the_compact_length() {
        let v = serde_json::json!({"a": [1, 2, 3], "b": "xy"});
        assert_eq!(json_size(&v), serde_json::to_string(&v).unwrap().len());
    }
}
