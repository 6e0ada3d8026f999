//! Folders of per-rank traces: which files are traces, and the rank a file name implies.
//!
//! A folder holds one Kineto trace per rank (`*.json`, `*.json.gz`, e.g.
//! `rank-3.Jul_15_10_52_41.1074.pt.trace.json.gz` or `worker3_step_12.pt.trace.json`). Files
//! are listed in name order, not recursively; hidden files and other extensions are left out
//! (and counted). The rank of a file is its `distributedInfo.rank`, read with the trace; the
//! name and the listing order are fallbacks ([`rank_from_name`], [`RankFile::index`]).

use std::path::{Path, PathBuf};

use super::LoadError;

/// A trace file found in a folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankFile {
    /// Its path (the folder joined with the file name).
    pub path: PathBuf,
    /// The rank its name implies, if any.
    pub name_rank: Option<i64>,
    /// Its position in the listing (sorted by name), the last fallback for its rank.
    pub index: usize,
    /// Its size in bytes as stored (compressed for `.json.gz`), when listed.
    pub size: u64,
}

/// The trace files of a folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    /// Trace files, by name.
    pub files: Vec<RankFile>,
    /// Other entries left out (other extensions, hidden files, sub-folders).
    pub ignored: usize,
}

impl Listing {
    /// The bytes to read: the sizes of the trace files as stored (compressed for `.json.gz`,
    /// as the progress bar counts compressed bytes).
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

/// True for names that look like Kineto traces: `*.json` or `*.json.gz` (any case).
pub fn is_trace_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    !n.starts_with('.') && (n.ends_with(".json") || n.ends_with(".json.gz"))
}

/// The rank a file name implies: digits after `rank` or `worker` (optionally followed by `-`
/// or `_`), the first such match, `rank` before `worker`. `rank-34.Jul_15.pt.trace.json` → 34,
/// `worker3_step_12.pt.trace.json` → 3, `bs_32_rank0.json.gz` → 0.
pub fn rank_from_name(name: &str) -> Option<i64> {
    let n = name.to_ascii_lowercase();
    for key in ["rank", "worker"] {
        let mut from = 0;
        while let Some(i) = n[from..].find(key) {
            let rest = &n[from + i + key.len()..];
            let rest = rest
                .strip_prefix('-')
                .or_else(|| rest.strip_prefix('_'))
                .unwrap_or(rest);
            let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
            if !digits.is_empty() && digits.len() <= 9 {
                return digits.parse().ok();
            }
            from += i + key.len();
        }
    }
    None
}

/// Lists the trace files of a folder. A folder without any is an error naming it.
pub fn list(dir: &Path) -> Result<Listing, LoadError> {
    let shown = dir.to_string_lossy().into_owned();
    let rd = std::fs::read_dir(dir).map_err(|e| LoadError::io(&shown, e))?;
    let mut names: Vec<(String, u64)> = Vec::new();
    let mut ignored = 0;
    for entry in rd {
        let entry = entry.map_err(|e| LoadError::io(&shown, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        // follows symbolic links: a link to a trace counts as a trace (of the target's size)
        let file_size = std::fs::metadata(entry.path())
            .ok()
            .filter(|m| m.is_file())
            .map(|m| m.len());
        if let (Some(size), true) = (file_size, is_trace_name(&name)) {
            names.push((name, size));
        } else {
            ignored += 1;
        }
    }
    if names.is_empty() {
        return Err(LoadError::new(
            &shown,
            format!(
                "no trace files in this folder (looked for *.json and *.json.gz, e.g. \
                 rank-0.pt.trace.json.gz; {ignored} other entr{} left out)",
                if ignored == 1 { "y" } else { "ies" }
            ),
        ));
    }
    names.sort();
    let files = names
        .into_iter()
        .enumerate()
        .map(|(index, (name, size))| RankFile {
            name_rank: rank_from_name(&name),
            path: dir.join(&name),
            index,
            size,
        })
        .collect();
    Ok(Listing { files, ignored })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_names() {
        assert!(is_trace_name("rank0.json"));
        assert!(is_trace_name("x.pt.trace.json.gz"));
        assert!(is_trace_name("X.JSON.GZ"));
        assert!(!is_trace_name(".hidden.json"));
        assert!(!is_trace_name("report.sqlite"));
        assert!(!is_trace_name("notes.json.txt"));
    }

    #[test]
    fn ranks_from_names() {
        assert_eq!(
            rank_from_name("rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"),
            Some(34)
        );
        assert_eq!(rank_from_name("rank_0.json"), Some(0));
        assert_eq!(rank_from_name("sampled_rank-1.json.gz"), Some(1));
        assert_eq!(rank_from_name("bs_32_rank0.json.gz"), Some(0));
        assert_eq!(
            rank_from_name("worker7_step_12.1694128201553.pt.trace.json.gz"),
            Some(7)
        );
        assert_eq!(rank_from_name("Rank3_worker5.json"), Some(3));
        assert_eq!(rank_from_name("ranking_worker2.json"), Some(2));
        assert_eq!(rank_from_name("trace.json"), None);
    }

    /// The total is the sum of the trace files' sizes as stored (a gzip file's compressed
    /// size, a link's target's size); files left out do not count.
    #[test]
    fn total_bytes_of_a_folder() {
        let dir =
            std::env::temp_dir().join(format!("stallscope-folder-total-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
        let gz = samples.join("h100_bert_small.json.gz");
        let plain = samples.join("h100_kineto_2026_format.json");
        std::fs::copy(&gz, dir.join("rank0.json.gz")).unwrap();
        std::os::unix::fs::symlink(&plain, dir.join("rank1.json")).unwrap();
        std::fs::write(dir.join("notes.txt"), "not a trace").unwrap();
        std::fs::write(dir.join(".hidden.json"), "{}").unwrap();
        let listing = list(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        let listing = listing.unwrap();
        let size = |p: &Path| std::fs::metadata(p).unwrap().len();
        assert_eq!(listing.files.len(), 2);
        assert_eq!(listing.files[0].size, size(&gz));
        assert_eq!(listing.files[1].size, size(&plain));
        assert_eq!(listing.total_bytes(), size(&gz) + size(&plain));
        assert_eq!(listing.ignored, 2);
    }
}
