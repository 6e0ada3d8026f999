//! A folder of per-rank traces, with bounded memory.
//!
//! Each rank runs the single-file pipeline ([`ingest::load`] → [`analysis::try_analyze`] →
//! [`Report::new`], which diagnoses) and is then reduced to its [`RankFacts`]; its trace and
//! analysis are dropped before the next file starts on that worker. At most `jobs` files are in
//! flight, so peak memory is about `jobs` × one rank plus the one full report that is kept:
//! the slowest rank's (by [`ranks::is_slower`], the order [`ranks::summarize`] uses), or the
//! rank asked for with `--rank`. The cross-rank summary and rules run over the facts alone
//! ([`ranks::summarize`], [`diagnose::ranks::diagnose_ranks`]).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::analysis::ranks::{self, RankFacts, RankSource, TopFinding};
use crate::analysis::{self, AnalyzeOptions};
use crate::diagnose;
use crate::ingest::folder::{self, RankFile};
use crate::ingest::{self, LoadError, LoadOptions};
use crate::model::Warning;
use crate::report::ranks::RanksSection;
use crate::report::Report;

/// Settings for [`analyze_folder`].
#[derive(Clone, Debug, Default)]
pub struct FolderOptions {
    /// Reader settings for every rank file.
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

/// A rank file that could not be analysed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// The file.
    pub path: String,
    /// Why (one line, naming the file).
    pub error: String,
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
    skipped: Vec<Skipped>,
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

/// Analyses every rank file of `dir` with at most `opts.jobs` at once. Files that fail are
/// skipped (listed in the `ranks` section); it is an error when none can be read.
pub fn analyze_folder(dir: &Path, opts: &FolderOptions) -> Result<FolderReport, FolderError> {
    let listing = folder::list(dir).map_err(FolderError::Input)?;
    let files = &listing.files;
    let jobs = opts.jobs.clamp(1, files.len());
    let next = AtomicUsize::new(0);
    let state = Mutex::new(State::default());
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(file) = files.get(i) else { break };
                let out = one_rank(file, opts);
                // the rank's trace and analysis are gone: return their pages
                release_freed_memory();
                let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
                match out {
                    Ok(d) => st.add(d, opts.rank),
                    Err(error) => st.skipped.push(Skipped {
                        path: file.path.to_string_lossy().into_owned(),
                        error,
                    }),
                }
            });
        }
    });
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
