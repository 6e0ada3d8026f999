//! A folder of per-rank traces, with bounded memory, and the per-rank summaries that merge.
//!
//! Each rank runs the single-file pipeline, which the caller hands in as a [`RankRunner`]
//! (the library's front door, `crate::api`, gives its one pipeline: load → window → analyze →
//! diagnose → report; this module never runs a stage itself), and is then reduced to a
//! [`Summary`]: its [`RankFacts`] and its full report; its trace and analysis are dropped
//! before the next file starts on that worker. Summaries merge ([`Summary::merge`]): the facts
//! of every rank are kept, and only one full report: the slowest rank's (by
//! [`ranks::is_slower`], the order [`ranks::summarize`] uses), or the rank asked for with
//! `--rank`; when the ranks, compared over their common window, make another rank the slowest,
//! [`finish_with`] asks the caller for that rank's report again. At most `jobs` files are in
//! flight, so peak memory is about `jobs` × one rank plus that one report. The cross-rank
//! summary and rules run over the facts alone ([`ranks::summarize`],
//! [`diagnose::ranks::diagnose_ranks`]) when the merged summary is finished into the folder's
//! report ([`finish`]).
//!
//! `analyze DIR` merges the summaries in memory; `stallscope summarize TRACE` writes one to a
//! file (JSON, docs/summary.md) and `stallscope merge` (or `analyze` on a folder of
//! `*.summary.json`) reads them back: the same [`Summary`] type and the same [`finish`], so
//! the report is the same whether the ranks were summarised here or on a cluster's workers.
//! Merging is associative and commutative (facts, skipped files and warnings are kept in a
//! canonical order; the kept report is the maximum of a total order), so summaries can be
//! merged in any tree.
//!
//! Progress is one bar for the whole folder ([`folder_bar`]): every rank's load advances it by
//! the bytes it reads, and its message counts the ranks done.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::analysis::ranks::{self, RankFacts, RankSource};
use crate::diagnose;
use crate::ingest::folder::Listing;
use crate::ingest::{self, LoadError, LoadOptions};
use crate::report::mirrors::WarningInfo as Warning;
use crate::report::ranks::{RanksSection, SkippedFile};
use crate::report::Report;

/// Settings for [`analyze_folder`].
#[derive(Clone, Debug, Default)]
pub struct FolderOptions {
    /// Reader settings for every rank file. Their progress settings apply to the folder as a
    /// whole ([`folder_bar`]); no rank shows a bar of its own.
    pub load: LoadOptions,
    /// Files loaded and analysed at once (at least 1).
    pub jobs: usize,
    /// Show this rank's full report instead of the slowest rank's.
    pub rank: Option<i64>,
}

/// One rank file to run the single-file pipeline on ([`RankRunner`]).
pub struct RankJob<'a> {
    /// The file read.
    pub file: &'a str,
    /// The path recorded in the facts, the report and the errors (the file's, unless its
    /// bytes were handed over in a temporary file).
    pub recorded: &'a str,
    /// What the rank number falls back on.
    pub hint: RankHint,
    /// Reader settings (the folder's progress bar included).
    pub load: &'a LoadOptions,
}

/// The single-file pipeline for one rank, given by the caller: the rank's facts (its rank
/// from `distributedInfo`, else [`RankHint`]) and full report, or the one-line error naming
/// the file that lists it as skipped.
pub type RankRunner<'a> = dyn Fn(&RankJob<'_>) -> Result<(RankFacts, Report), String> + Sync + 'a;

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

/// Version of the summary format ([`Summary::stallscope_summary`]). Bumped on incompatible
/// changes; fields may be added. A summary is read back only by the version that matches.
pub const SUMMARY_VERSION: u32 = 1;

/// One rank (or a merge of several) reduced to what the folder's report needs: the facts of
/// every rank, the one full report kept, the files that could not be read and the reading
/// warnings. Serialised, it is the `*.summary.json` of `stallscope summarize`
/// (docs/summary.md); it never holds a timeline, so it stays small whatever the trace size
/// (the facts are a few hundred bytes a rank; the kept report is one rank's JSON report).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    /// Always [`SUMMARY_VERSION`]; also what marks a JSON file as a summary.
    pub stallscope_summary: u32,
    /// `stallscope x.y.z` that wrote it.
    pub generator: String,
    /// Every rank (capture) summarised, by rank then path.
    pub ranks: Vec<RankFacts>,
    /// The full report kept: the slowest rank's, or the requested rank's.
    pub shown: Option<ShownReport>,
    /// Files that could not be analysed, by path.
    pub skipped: Vec<SkippedFile>,
    /// Reading warnings, each with its rank file, by path.
    pub warnings: Vec<(String, Warning)>,
}

/// The one full report a [`Summary`] keeps, with its rank's facts.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ShownReport {
    /// The rank's facts (also in [`Summary::ranks`]).
    pub facts: RankFacts,
    /// Its full single-file report (no `ranks` section).
    pub report: Report,
}

impl Default for Summary {
    fn default() -> Self {
        Summary {
            stallscope_summary: SUMMARY_VERSION,
            generator: format!("stallscope {}", env!("CARGO_PKG_VERSION")),
            ranks: Vec::new(),
            shown: None,
            skipped: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

/// Where a rank file sits: what a rank number falls back on when the trace records none.
#[derive(Clone, Copy, Debug, Default)]
pub struct RankHint {
    /// The rank its file name implies ([`ingest::folder::rank_from_name`]).
    pub name_rank: Option<i64>,
    /// Its position among the folder's trace files, when known (a file summarised alone is
    /// placed again when the summaries are finished, see [`finish`]).
    pub index: usize,
}

impl Summary {
    /// Summarises one trace file: the pipeline (`run`), then the reduction. A file that
    /// cannot be read or analysed gives a summary that lists it as skipped (the error names
    /// the file), as `analyze DIR` lists it. `path` is the path recorded (the file is read
    /// from it).
    pub fn of_file(
        path: &str,
        hint: RankHint,
        opts: &FolderOptions,
        run: &RankRunner<'_>,
    ) -> Summary {
        Summary::of_file_as(path, None, hint, opts, run)
    }

    /// [`Summary::of_file`] reading `file` but recording it as `recorded` (when given): its
    /// path in the facts, the report and the errors (bytes handed over in a temporary file).
    pub fn of_file_as(
        file: &str,
        recorded: Option<&str>,
        hint: RankHint,
        opts: &FolderOptions,
        run: &RankRunner<'_>,
    ) -> Summary {
        let path = recorded.unwrap_or(file);
        let mut s = Summary::default();
        let job = RankJob {
            file,
            recorded: path,
            hint,
            load: &opts.load,
        };
        let out = run(&job).map_err(|e| match recorded {
            Some(r) => e.replace(file, r),
            None => e,
        });
        match out {
            Ok((facts, report)) => {
                s.warnings = report
                    .warnings
                    .iter()
                    .map(|w| (facts.path.clone(), w.clone()))
                    .collect();
                s.ranks.push(facts.clone());
                s.shown = Some(ShownReport { facts, report });
            }
            Err(error) => s.skipped.push(SkippedFile {
                path: path.to_string(),
                error,
            }),
        }
        s
    }

    /// Merges `other` into `self`: facts, skipped files and warnings are joined (in their
    /// canonical order), and the report kept is the slower rank's, or with `wanted` the
    /// requested rank's (the lower path among its captures). Associative and commutative.
    pub fn merge(&mut self, other: Summary, wanted: Option<i64>) {
        self.ranks.extend(other.ranks);
        self.ranks
            .sort_by(|a, b| (a.rank, &a.path).cmp(&(b.rank, &b.path)));
        self.skipped.extend(other.skipped);
        self.skipped.sort_by(|a, b| a.path.cmp(&b.path));
        self.warnings.extend(other.warnings);
        // stable: one file's warnings keep their order
        self.warnings.sort_by(|a, b| a.0.cmp(&b.0));
        let keep_other = match (&self.shown, &other.shown, wanted) {
            (_, None, _) => false,
            (_, Some(o), Some(n)) if o.facts.rank != n => false,
            (None, Some(_), _) => true,
            (Some(cur), Some(o), None) => ranks::is_slower(&o.facts, &cur.facts),
            (Some(cur), Some(o), Some(_)) => {
                cur.facts.rank != o.facts.rank || o.facts.path < cur.facts.path
            }
        };
        if keep_other {
            // the previous candidate's report is dropped here
            self.shown = other.shown;
        }
    }

    /// Reads a summary written by [`Summary::to_json`]. The error names the file and, for
    /// JSON that does not parse, the line and column.
    pub fn from_json(path: &str, text: &[u8]) -> Result<Summary, LoadError> {
        #[derive(serde::Deserialize)]
        struct Version {
            stallscope_summary: Option<u32>,
        }
        let v: Version = serde_json::from_slice(text)
            .map_err(|e| LoadError::new(path, format!("not a stallscope summary: {e}")))?;
        match v.stallscope_summary {
            Some(SUMMARY_VERSION) => {}
            Some(n) => {
                return Err(LoadError::new(
                    path,
                    format!("summary version {n}, this stallscope reads version {SUMMARY_VERSION}"),
                ))
            }
            None => {
                return Err(LoadError::new(
                    path,
                    "not a stallscope summary (no `stallscope_summary` member)".into(),
                ))
            }
        }
        serde_json::from_slice(text).map_err(|e| LoadError::new(path, format!("summary: {e}")))
    }

    /// The summary as JSON (compact: it is read by programs).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// True when a file name says it is a summary (`*.summary.json`, any case).
pub fn is_summary_name(name: &str) -> bool {
    name.to_ascii_lowercase().ends_with(".summary.json")
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

/// Analyses every rank file of `dir` (listed in `listing`) with `run`, at most `opts.jobs`
/// at once. Files that fail are skipped (listed in the `ranks` section); it is an error when
/// none can be read.
pub fn analyze_folder(
    dir: &Path,
    listing: &Listing,
    opts: &FolderOptions,
    run: &RankRunner<'_>,
) -> Result<FolderReport, FolderError> {
    analyze_folder_with(dir, listing, opts, run, &|_, _| {})
}

/// A consumer of every rank's full report ([`analyze_folder_with`]).
pub type EachRank<'a> = dyn Fn(&RankFacts, &Report) + Sync + 'a;

/// [`analyze_folder`], handing every rank's facts and full report to `each` as soon as the
/// rank is done (on the worker that analysed it, in completion order, before the report is
/// dropped): for outputs that need every rank's tables, such as `--format parquet`, without
/// keeping every report.
pub fn analyze_folder_with(
    dir: &Path,
    listing: &Listing,
    opts: &FolderOptions,
    run: &RankRunner<'_>,
    each: &EachRank<'_>,
) -> Result<FolderReport, FolderError> {
    let files = &listing.files;
    let jobs = opts.jobs.clamp(1, files.len());
    if files.len() > 1 {
        crate::advice::many_files();
    }
    // one bar for the folder, shared by the ranks' loads; none of their own
    let bar = folder_bar(listing, &opts.load);
    let opts = &FolderOptions {
        load: LoadOptions {
            progress: bar.as_ref().map(|(b, _)| b.clone()),
            progress_over: None,
            ..opts.load.clone()
        },
        ..opts.clone()
    };
    let next = AtomicUsize::new(0);
    let state = Mutex::new(Summary::default());
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(file) = files.get(i) else { break };
                let hint = RankHint {
                    name_rank: file.name_rank,
                    index: file.index,
                };
                let one = Summary::of_file(&file.path.to_string_lossy(), hint, opts, run);
                if let Some(shown) = &one.shown {
                    each(&shown.facts, &shown.report);
                }
                // the rank's trace and analysis are gone: return their pages
                release_freed_memory();
                let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
                st.merge(one, opts.rank);
                // under the lock, so that the counts shown only grow
                if let Some((b, _)) = &bar {
                    b.set_message(reading_message(
                        files.len(),
                        st.ranks.len() + st.skipped.len(),
                    ));
                }
            });
        }
    });
    if let Some((b, true)) = &bar {
        b.finish_and_clear();
    }
    let st = state.into_inner().unwrap_or_else(|e| e.into_inner());
    let shown_dir = dir.to_string_lossy().into_owned();
    // the slowest rank over the common window may not be the one kept: run it again
    let load = LoadOptions {
        progress: None,
        ..opts.load.clone()
    };
    let again = FolderOptions {
        load,
        ..opts.clone()
    };
    let fetch = |target: &RankFacts| {
        let file = files
            .iter()
            .find(|f| f.path.to_string_lossy() == target.path.as_str())?;
        let hint = RankHint {
            name_rank: file.name_rank,
            index: file.index,
        };
        Summary::of_file(&target.path, hint, &again, run).shown
    };
    finish_with(st, &shown_dir, jobs, listing.ignored, opts.rank, &fetch)
}

/// Reads `*.summary.json` files and merges them (`stallscope merge`, or `analyze` on a
/// folder of summaries). A summary that cannot be read is an input error: unlike a trace it
/// is not a rank, and leaving it out would drop its ranks silently.
pub fn merge_files(paths: &[String], wanted: Option<i64>) -> Result<Summary, LoadError> {
    let mut out = Summary::default();
    for p in paths {
        let text = std::fs::read(p).map_err(|e| LoadError::io(p, e))?;
        out.merge(Summary::from_json(p, &text)?, wanted);
    }
    Ok(out)
}

/// The folder's report from the merged summary of its ranks: the kept rank's full report with
/// the `ranks` section (`folder` is the folder as shown, `jobs` the files read at once,
/// `ignored` the folder entries that are not traces). Ranks numbered by their place in the
/// folder ([`RankSource::Order`]) are numbered again by their place among all the files
/// summarised (by path, skipped ones included), which is the folder's listing order when the
/// summaries are those of one folder's files. An error when no rank was read, or when
/// `wanted` names no rank (or a rank whose report the summaries do not keep).
pub fn finish(
    st: Summary,
    folder: &str,
    jobs: usize,
    ignored: usize,
    wanted: Option<i64>,
) -> Result<FolderReport, FolderError> {
    finish_with(st, folder, jobs, ignored, wanted, &|_| None)
}

/// The full report of a rank that the summary did not keep, when the caller can give it again
/// (`analyze DIR` runs the rank's file again, `merge` reads its summary file again): see
/// [`finish_with`].
pub type FetchReport<'a> = dyn Fn(&RankFacts) -> Option<ShownReport> + 'a;

/// [`finish`], showing the slowest rank chosen after the common window
/// ([`ranks::summarize`]): a summary keeps the report of the rank slowest in its own window
/// (a merge sees one pair of ranks at a time), and when the ranks are then compared over the
/// steps they have in common another rank can be the slowest. Its report is asked of `fetch`
/// (by the rank's facts); without it (`None`) the kept report is shown.
pub fn finish_with(
    mut st: Summary,
    folder: &str,
    jobs: usize,
    ignored: usize,
    wanted: Option<i64>,
    fetch: &FetchReport<'_>,
) -> Result<FolderReport, FolderError> {
    renumber_by_order(&mut st);
    if st.ranks.is_empty() {
        let first = st
            .skipped
            .first()
            .map(|s| s.error.clone())
            .unwrap_or_default();
        let n = st.skipped.len();
        return Err(FolderError::Input(LoadError::new(
            folder,
            format!(
                "no rank could be analysed ({n} trace file{} tried); the first error: {first}",
                if n == 1 { "" } else { "s" }
            ),
        )));
    }
    let summary = ranks::summarize(std::mem::take(&mut st.ranks));
    if wanted.is_none() {
        let slow = &summary.ranks[summary.slowest];
        let kept = st.shown.as_ref().map(|s| &s.facts);
        // spans of one process are one entry: any of its captures is that rank's report
        let same = kept.is_some_and(|k| {
            k.rank == slow.rank
                && (k.path == slow.path || summary.spans.iter().any(|s| s.rank == slow.rank))
        });
        if !same {
            if let Some(mut o) = fetch(slow) {
                o.facts.rank = slow.rank;
                st.shown = Some(o);
            }
        }
    }
    let shown = st
        .shown
        .take()
        .filter(|s| wanted.is_none_or(|n| s.facts.rank == n));
    let Some(ShownReport {
        facts: shown,
        mut report,
    }) = shown
    else {
        let mut have: Vec<i64> = summary.ranks.iter().map(|r| r.rank).collect();
        have.dedup();
        let list = have
            .iter()
            .map(|r| r.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let n = wanted.unwrap_or_default();
        let why = if have.contains(&n) {
            format!("rank {n}'s full report is not in these summaries (a merged summary keeps one)")
        } else {
            format!("no such rank in {folder} (ranks read: {list})")
        };
        return Err(FolderError::NoSuchRank(format!("error: --rank {n}: {why}")));
    };
    let diagnosis = diagnose::ranks::diagnose_ranks(&summary);
    report.ranks = Some(RanksSection::new(
        folder,
        &summary,
        diagnosis,
        &shown,
        wanted.is_some(),
        jobs,
        st.skipped,
        ignored,
    ));
    Ok(FolderReport {
        report,
        warnings: st.warnings,
    })
}

/// Gives the ranks numbered by listing order ([`RankSource::Order`]) their place among all
/// the paths summarised, sorted (the listing's order).
fn renumber_by_order(st: &mut Summary) {
    let orderly = |f: &RankFacts| f.rank_source == RankSource::Order;
    if !st.ranks.iter().any(orderly) {
        return;
    }
    let mut paths: Vec<&str> = st
        .ranks
        .iter()
        .map(|f| f.path.as_str())
        .chain(st.skipped.iter().map(|s| s.path.as_str()))
        .collect();
    paths.sort_unstable();
    paths.dedup();
    let place: std::collections::HashMap<String, i64> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| (p.to_string(), i as i64))
        .collect();
    let renumber = |f: &mut RankFacts| {
        if f.rank_source == RankSource::Order {
            f.rank = place[&f.path];
        }
    };
    st.ranks.iter_mut().for_each(renumber);
    if let Some(s) = &mut st.shown {
        renumber(&mut s.facts);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A temporary folder of rank files linked to (or cut from) the samples, removed on drop.
    pub(crate) struct Folder(pub(crate) PathBuf);

    impl Drop for Folder {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    pub(crate) fn folder(tag: &str) -> Folder {
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

    #[test]
    fn a_folder_is_announced_before_its_files_are_read() {
        // the binary's allocator hook (crate::advice) hears of a folder's files before the
        // first is read; other tests of this binary may read folders too, hence at least one
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        static CALLS: AtomicUsize = AtomicUsize::new(0);
        static READ_BEFORE_CALL: AtomicUsize = AtomicUsize::new(0);
        crate::advice::on_many_files(|| {
            CALLS.fetch_add(1, SeqCst);
        });
        let f = folder("advice");
        let listing = ingest::folder::list(&f.0).unwrap();
        let opts = FolderOptions {
            load: LoadOptions::default(),
            jobs: 1,
            rank: None,
        };
        let before = CALLS.load(SeqCst);
        let run = |_: &RankJob<'_>| -> Result<(RankFacts, Report), String> {
            if CALLS.load(SeqCst) == before {
                READ_BEFORE_CALL.fetch_add(1, SeqCst);
            }
            Err("not analysed".into())
        };
        let _ = analyze_folder(&f.0, &listing, &opts, &run);
        assert!(CALLS.load(SeqCst) > before);
        assert_eq!(READ_BEFORE_CALL.load(SeqCst), 0);
    }

    #[test]
    fn folder_bar_only_when_asked() {
        let f = folder("ask");
        let listing = ingest::folder::list(&f.0).unwrap();
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
