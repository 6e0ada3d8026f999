//! A folder of per-rank traces, with bounded memory.
//!
//! Each rank runs the single-file pipeline ([`ingest::load`] → [`analysis::try_analyze`] →
//! [`Report::new`], which diagnoses) and is then reduced to its [`RankFacts`]; its trace and
//! analysis are dropped before the next file starts on that worker. At most `jobs` files are in
//! flight, so peak memory is about `jobs` × one rank plus the one full report that is kept:
//! the slowest rank's (by [`ranks::is_slower`], the order [`ranks::summarize`] uses), or the
//! rank asked for with `--rank`. The cross-rank summary and rules run over the facts alone
//! ([`ranks::summarize`], [`diagnose::ranks::diagnose_ranks`]).
//!
//! Progress is one bar for the whole folder ([`folder_bar`]): every rank's load advances it by
//! the bytes it reads, and its message counts the ranks done.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::analysis::ranks::{self, RankFacts, RankSource, TopFinding};
use crate::analysis::{self, AnalyzeOptions};
use crate::diagnose;
use crate::ingest::folder::{self, Listing, RankFile};
use crate::ingest::{self, LoadError, LoadOptions};
use crate::model::Warning;
use crate::report::ranks::{RanksSection, SkippedFile};
use crate::report::Report;

/// Settings for [`analyze_folder`].
#[derive(Clone, Debug, Default)]
pub struct FolderOptions {
    /// Reader settings for every rank file. Their progress settings apply to the folder as a
    /// whole ([`folder_bar`]); no rank shows a bar of its own.
    pub load: LoadOptions,
    /// The window of every rank.
    pub analyze: AnalyzeOptions,
    /// Files loaded and analysed at once (at least 1).
    pub jobs: usize,
    /// Show this rank's full report instead of the slowest rank's.
    pub rank: Option<i64>,
}

/// Default `--jobs`: 2 or the number of cores, whichever is smaller.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(2)
}

/// The result of a folder: the shown rank's full report with its `ranks` section, and the
/// reading warnings of every rank (for stderr).
#[derive(Debug)]
pub struct FolderReport {
    /// The full report of the slowest rank (or of `--rank`), `ranks` set.
    pub report: Report,
    /// Reading warnings per rank file, by path.
    pub warnings: Vec<(String, Warning)>,
}

/// Why a folder could not be analysed.
#[derive(Debug)]
pub enum FolderError {
    /// Nothing readable (no trace files, or every file failed): an input error.
    Input(LoadError),
    /// `--rank N` names no rank of the folder.
    NoSuchRank(String),
}

impl std::fmt::Display for FolderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FolderError::Input(e) => write!(f, "{e}"),
            FolderError::NoSuchRank(m) => write!(f, "{m}"),
        }
    }
}

struct Done {
    facts: RankFacts,
    report: Report,
}

/// One rank: load, analyse, report; the trace and analysis are dropped on return.
fn one_rank(file: &RankFile, opts: &FolderOptions) -> Result<Done, String> {
    let path = file.path.to_string_lossy().into_owned();
    let trace = ingest::load(&path, &opts.load).map_err(|e| e.to_string())?;
    let a = analysis::try_analyze(&trace, &opts.analyze).map_err(|e| format!("{path}: {e}"))?;
    let (rank, source) = match trace.distributed.as_ref().and_then(|d| d.rank) {
        Some(r) => (r, RankSource::DistributedInfo),
        None => match file.name_rank {
            Some(r) => (r, RankSource::FileName),
            None => (file.index as i64, RankSource::Order),
        },
    };
    let mut facts = RankFacts::new(&trace, &a, &path, rank, source);
    let report = Report::new(&trace, &a);
    facts.top_finding = report.findings.first().map(|f| TopFinding {
        id: f.id.to_string(),
        severity: f.severity.as_str(),
        recoverable_us: f.recoverable_us,
        title: f.title.clone(),
    });
    Ok(Done { facts, report })
}

/// Hands the pages freed by a rank back to the system (glibc keeps freed memory in its
/// arenas), so that the next rank starts from the same footprint.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: malloc_trim only returns free memory of the allocator's own arenas to the
        // system; it takes no pointers and is thread-safe.
        unsafe {
            malloc_trim(0);
        }
    }
}

#[derive(Default)]
struct State {
    facts: Vec<RankFacts>,
    shown: Option<(RankFacts, Report)>,
    skipped: Vec<SkippedFile>,
    warnings: Vec<(String, Warning)>,
}

impl State {
    fn add(&mut self, d: Done, wanted: Option<i64>) {
        for w in &d.report.warnings {
            self.warnings.push((d.facts.path.clone(), w.clone()));
        }
        let keep = match (&self.shown, wanted) {
            (_, Some(n)) if d.facts.rank != n => false,
            (None, _) => true,
            (Some((cur, _)), Some(_)) => (d.facts.rank, &d.facts.path) < (cur.rank, &cur.path),
            (Some((cur, _)), None) => ranks::is_slower(&d.facts, cur),
        };
        self.facts.push(d.facts.clone());
        if keep {
            // the previous candidate's report is dropped here
            self.shown = Some((d.facts, d.report));
        }
    }
}

/// "reading 8 ranks (3 done)"
fn reading_message(files: usize, done: usize) -> String {
    format!(
        "reading {files} rank{} ({done} done)",
        if files == 1 { "" } else { "s" }
    )
}

/// The folder's progress bar, over the bytes of all its trace files as stored
/// ([`Listing::total_bytes`]; ranks read in parallel advance it together), and whether it is
/// ours to clear: the caller's bar (`load.progress`), or a bar on stderr when it is a terminal
/// and the files total over `load.progress_over` bytes, or none.
pub fn folder_bar(listing: &Listing, load: &LoadOptions) -> Option<(indicatif::ProgressBar, bool)> {
    let total = listing.total_bytes();
    let message = reading_message(listing.files.len(), 0);
    match (&load.progress, load.progress_over) {
        (Some(b), _) => {
            b.set_length(total);
            b.set_message(message);
            Some((b.clone(), false))
        }
        (None, Some(min)) if total > min && std::io::stderr().is_terminal() => {
            Some((ingest::progress_bar(total, message), true))
        }
        _ => None,
    }
}

/// Analyses every rank file of `dir` with at most `opts.jobs` at once. Files that fail are
/// skipped (listed in the `ranks` section); it is an error when none can be read.
pub fn analyze_folder(dir: &Path, opts: &FolderOptions) -> Result<FolderReport, FolderError> {
    analyze_folder_with(dir, opts, &|_, _| {})
}

/// A consumer of every rank's full report ([`analyze_folder_with`]).
pub type EachRank<'a> = dyn Fn(&RankFacts, &Report) + Sync + 'a;

/// [`analyze_folder`], handing every rank's facts and full report to `each` as soon as the
/// rank is done (on the worker that analysed it, in completion order, before the report is
/// dropped): for outputs that need every rank's tables, such as `--format parquet`, without
/// keeping every report.
pub fn analyze_folder_with(
    dir: &Path,
    opts: &FolderOptions,
    each: &EachRank<'_>,
) -> Result<FolderReport, FolderError> {
    let listing = folder::list(dir).map_err(FolderError::Input)?;
    let files = &listing.files;
    let jobs = opts.jobs.clamp(1, files.len());
    // one bar for the folder, shared by the ranks' loads; none of their own
    let bar = folder_bar(&listing, &opts.load);
    let opts = &FolderOptions {
        load: LoadOptions {
            progress: bar.as_ref().map(|(b, _)| b.clone()),
            progress_over: None,
            ..opts.load.clone()
        },
        ..opts.clone()
    };
    let next = AtomicUsize::new(0);
    let state = Mutex::new(State::default());
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(file) = files.get(i) else { break };
                let out = one_rank(file, opts);
                if let Ok(d) = &out {
                    each(&d.facts, &d.report);
                }
                // the rank's trace and analysis are gone: return their pages
                release_freed_memory();
                let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
                match out {
                    Ok(d) => st.add(d, opts.rank),
                    Err(error) => st.skipped.push(SkippedFile {
                        path: file.path.to_string_lossy().into_owned(),
                        error,
                    }),
                }
                // under the lock, so that the counts shown only grow
                if let Some((b, _)) = &bar {
                    b.set_message(reading_message(
                        files.len(),
                        st.facts.len() + st.skipped.len(),
                    ));
                }
            });
        }
    });
    if let Some((b, true)) = &bar {
        b.finish_and_clear();
    }
    let mut st = state.into_inner().unwrap_or_else(|e| e.into_inner());
    st.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    st.warnings.sort_by(|a, b| a.0.cmp(&b.0));
    let shown_dir = dir.to_string_lossy().into_owned();
    if st.facts.is_empty() {
        let first = st
            .skipped
            .first()
            .map(|s| s.error.clone())
            .unwrap_or_default();
        return Err(FolderError::Input(LoadError::new(
            &shown_dir,
            format!(
                "no rank could be analysed ({} trace file{} tried); the first error: {first}",
                files.len(),
                if files.len() == 1 { "" } else { "s" }
            ),
        )));
    }
    let summary = ranks::summarize(std::mem::take(&mut st.facts));
    let Some((shown, mut report)) = st.shown.take() else {
        let mut have: Vec<i64> = summary.ranks.iter().map(|r| r.rank).collect();
        have.dedup();
        let list = have
            .iter()
            .map(|r| r.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(FolderError::NoSuchRank(format!(
            "error: --rank {}: no such rank in {shown_dir} (ranks read: {list})",
            opts.rank.unwrap_or_default()
        )));
    };
    let diagnosis = diagnose::ranks::diagnose_ranks(&summary);
    report.ranks = Some(RanksSection::new(
        &shown_dir,
        &summary,
        diagnosis,
        &shown,
        opts.rank.is_some(),
        jobs,
        st.skipped,
        listing.ignored,
    ));
    Ok(FolderReport {
        report,
        warnings: st.warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A temporary folder of rank files linked to (or cut from) the samples, removed on drop.
    struct Folder(PathBuf);

    impl Drop for Folder {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn folder(tag: &str) -> Folder {
        let dir =
            std::env::temp_dir().join(format!("stallscope-multirank-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
        std::os::unix::fs::symlink(
            samples.join("h100_bert_small.json.gz"),
            dir.join("rank0.json.gz"),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            samples.join("h100_kineto_2026_format.json"),
            dir.join("rank1.json"),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            samples.join("mi300x_bert_small.json.gz"),
            dir.join("rank2.json.gz"),
        )
        .unwrap();
        Folder(dir)
    }

    /// The caller's bar gets the folder's total as its length, ends there with every rank
    /// loaded in parallel (a failed one included), counts the ranks done, and is left to the
    /// caller to clear.
    #[test]
    fn one_bar_for_the_folder() {
        let f = folder("bar");
        // a rank that fails: half a trace
        let text = std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/h100_kineto_2026_format.json"),
        )
        .unwrap();
        std::fs::write(f.0.join("rank3.json"), &text[..text.len() / 2]).unwrap();
        let total = folder::list(&f.0).unwrap().total_bytes();
        let bar = indicatif::ProgressBar::hidden();
        let mut opts = FolderOptions {
            jobs: 2,
            ..FolderOptions::default()
        };
        opts.load.progress = Some(bar.clone());
        opts.load.kineto.block_size = 4096;
        let out = analyze_folder(&f.0, &opts).unwrap();
        assert_eq!(out.report.ranks.as_ref().unwrap().skipped.len(), 1);
        assert_eq!(bar.length(), Some(total));
        assert_eq!(bar.position(), total);
        assert_eq!(bar.message(), "reading 4 ranks (4 done)");
        assert!(!bar.is_finished());
    }

    #[test]
    fn folder_bar_only_when_asked() {
        let f = folder("ask");
        let listing = folder::list(&f.0).unwrap();
        // no bar of the caller's and no threshold: none (whether stderr is a terminal or not)
        assert!(folder_bar(&listing, &LoadOptions::default()).is_none());
        // a threshold above the total: none
        let over = LoadOptions {
            progress_over: Some(listing.total_bytes()),
            ..LoadOptions::default()
        };
        assert!(folder_bar(&listing, &over).is_none());
        let hidden = LoadOptions {
            progress: Some(indicatif::ProgressBar::hidden()),
            ..LoadOptions::default()
        };
        let (bar, own) = folder_bar(&listing, &hidden).unwrap();
        assert!(!own);
        assert_eq!(bar.length(), Some(listing.total_bytes()));
        assert_eq!(bar.message(), "reading 3 ranks (0 done)");
        assert_eq!(reading_message(1, 1), "reading 1 rank (1 done)");
    }
}
