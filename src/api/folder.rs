//! Folders and summaries, beside the single-file pipeline: a folder of per-rank traces (each
//! rank through [`super::pipeline::rank_runner`], a few at a time, by
//! [`crate::multirank`]), one rank reduced to a summary (`summarize`), and summaries merged
//! into the folder's report (`merge`, or `analyze` on a folder of `*.summary.json`).

use std::path::PathBuf;

use crate::analysis::AnalyzeOptions;
use crate::ingest::folder::Listing;
use crate::multirank::{self, FolderOptions, RankHint, Summary};
use crate::report::Report;

use super::load::LoadSettings;
use super::pipeline::rank_runner;
use super::request::{AnalyzeError, AnalyzeRequest, Analyzed, EachReport};

/// `analyze FOLDER`: every rank file with at most `jobs` at once; the report of the slowest
/// rank (or `rank`) with the `ranks` section.
pub(crate) fn ranks(
    req: &AnalyzeRequest,
    listing: &Listing,
    each: &EachReport<'_>,
) -> Result<Analyzed, AnalyzeError> {
    let jobs = req.jobs.unwrap_or_else(multirank::default_jobs).max(1);
    // one progress bar for the folder (multirank::folder_bar), not one per file; parser
    // threads share the cores
    let mut load = req.load.options();
    if req.load.threads.is_none() {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        load.kineto.threads = (cores / jobs).max(1);
    }
    let opts = FolderOptions {
        load,
        jobs,
        rank: req.rank,
    };
    let run = rank_runner(AnalyzeOptions {
        window: req.window.clone(),
        ..AnalyzeOptions::default()
    });
    let each = |f: &crate::analysis::ranks::RankFacts, r: &Report| each(f.rank, r);
    let out = multirank::analyze_folder_with(&req.trace, listing, &opts, &run, &each)?;
    Ok(Analyzed {
        report: out.report,
        warnings: out.warnings,
        ncu_alone: false,
    })
}

/// `analyze FOLDER` on a folder of `*.summary.json`: their merge, named after the folder.
pub(crate) fn summaries(req: &AnalyzeRequest, listing: &Listing) -> Result<Analyzed, AnalyzeError> {
    let jobs = req.jobs.unwrap_or_else(multirank::default_jobs).max(1);
    let shown = req.trace.to_string_lossy().into_owned();
    let paths: Vec<String> = listing
        .files
        .iter()
        .map(|f| f.path.to_string_lossy().into_owned())
        .collect();
    merge_summaries(&paths, req.rank, jobs, Some((&shown, listing.ignored)))
}

/// What `summarize` is asked for, as the command and the Python module give it.
#[derive(Debug, Clone, Default)]
pub struct SummarizeRequest {
    /// The trace file to read.
    pub trace: PathBuf,
    /// The path the summary records for it (default: `trace`); the Python module reads
    /// bytes from a temporary file and records the name it was given.
    pub recorded: Option<String>,
    /// The window.
    pub window: crate::window::WindowSpec,
    /// How the trace is read; its threads are also the analysis threads.
    pub load: LoadSettings,
}

/// Summarises one rank ([`Summary::of_file_as`] over the single-file pipeline); an
/// unreadable trace gives a summary that lists it as skipped.
pub fn summarize(req: &SummarizeRequest) -> Summary {
    let opts = FolderOptions {
        load: req.load.options(),
        jobs: 1,
        rank: None,
    };
    let run = rank_runner(AnalyzeOptions {
        threads: req.load.analysis_threads(),
        window: req.window.clone(),
        ..AnalyzeOptions::default()
    });
    let file = req.trace.to_string_lossy().into_owned();
    let name = crate::text::file_name(&file);
    let hint = RankHint {
        name_rank: crate::ingest::folder::rank_from_name(
            req.recorded.as_deref().map_or(name.as_str(), |r| r),
        ),
        index: 0,
    };
    Summary::of_file_as(&file, req.recorded.as_deref(), hint, &opts, &run)
}

/// Merges summary files into one summary (`merge --summary`; `rank`: the full report kept).
pub fn merge_files(paths: &[String], rank: Option<i64>) -> Result<Summary, AnalyzeError> {
    multirank::merge_files(paths, rank).map_err(AnalyzeError::Input)
}

/// Merges summary files into the folder's report (`merge`, and `analyze` on a folder of
/// summaries, whose `folder` and `ignored` are then the folder's own).
pub fn merge_summaries(
    paths: &[String],
    rank: Option<i64>,
    jobs: usize,
    folder: Option<(&str, usize)>,
) -> Result<Analyzed, AnalyzeError> {
    let merged = merge_files(paths, rank)?;
    // the slowest rank over the common window: its report from its own summary file
    let fetch = |target: &crate::analysis::ranks::RankFacts| {
        paths.iter().find_map(|p| {
            let s = Summary::from_json(p, &std::fs::read(p).ok()?).ok()?;
            s.shown.filter(|o| o.facts.path == target.path)
        })
    };
    finish_summary_with(merged, rank, jobs, folder, &fetch)
}

/// The folder's report from a merged summary (see [`merge_summaries`]); without `folder`,
/// the common parent of the files summarised.
pub fn finish_summary(
    merged: Summary,
    rank: Option<i64>,
    jobs: usize,
    folder: Option<(&str, usize)>,
) -> Result<Analyzed, AnalyzeError> {
    finish_summary_with(merged, rank, jobs, folder, &|_| None)
}

/// [`finish_summary`] with a way to the report of a rank the merged summary did not keep
/// ([`multirank::finish_with`]).
fn finish_summary_with(
    merged: Summary,
    rank: Option<i64>,
    jobs: usize,
    folder: Option<(&str, usize)>,
    fetch: &multirank::FetchReport<'_>,
) -> Result<Analyzed, AnalyzeError> {
    let common;
    let (folder, ignored) = match folder {
        Some(f) => f,
        None => {
            common = common_folder(&merged);
            (common.as_str(), 0)
        }
    };
    let out = multirank::finish_with(merged, folder, jobs.max(1), ignored, rank, fetch)?;
    Ok(Analyzed {
        report: out.report,
        warnings: out.warnings,
        ncu_alone: false,
    })
}

/// The folder `merge` names in its report: the common parent of the files summarised (what
/// `analyze FOLDER` shows when given that folder), `.` when they have none.
fn common_folder(s: &Summary) -> String {
    let mut parents = s
        .ranks
        .iter()
        .map(|f| f.path.as_str())
        .chain(s.skipped.iter().map(|k| k.path.as_str()))
        .map(|p| {
            std::path::Path::new(p)
                .parent()
                .unwrap_or(std::path::Path::new(""))
        });
    let Some(first) = parents.next() else {
        return ".".into();
    };
    let mut common = first.to_path_buf();
    for p in parents {
        while !p.starts_with(&common) {
            if !common.pop() {
                break;
            }
        }
    }
    match common.to_string_lossy().into_owned() {
        c if c.is_empty() => ".".into(),
        c => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The caller's bar gets the folder's total as its length, ends there with every rank
    /// loaded in parallel (a failed one included), counts the ranks done, and is left to the
    /// caller to clear.
    #[test]
    fn one_bar_for_the_folder() {
        let f = crate::multirank::tests::folder("bar");
        // a rank that fails: half a trace
        let text = std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/h100_kineto_2026_format.json"),
        )
        .unwrap();
        std::fs::write(f.0.join("rank3.json"), &text[..text.len() / 2]).unwrap();
        let listing = crate::ingest::folder::list(&f.0).unwrap();
        let total = listing.total_bytes();
        let bar = indicatif::ProgressBar::hidden();
        let mut opts = FolderOptions {
            jobs: 2,
            ..FolderOptions::default()
        };
        opts.load.progress = Some(bar.clone());
        opts.load.kineto.block_size = 4096;
        let run = rank_runner(AnalyzeOptions::default());
        let out = multirank::analyze_folder(&f.0, &listing, &opts, &run).unwrap();
        assert_eq!(out.report.ranks.as_ref().unwrap().skipped.len(), 1);
        assert_eq!(bar.length(), Some(total));
        assert_eq!(bar.position(), total);
        assert_eq!(bar.message(), "reading 4 ranks (4 done)");
        assert!(!bar.is_finished());
    }
}
