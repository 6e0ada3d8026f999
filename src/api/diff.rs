//! `diff` and `check`: each side loaded through the api (a saved JSON report read as it is,
//! a trace or a folder of ranks through the pipeline), then compared by [`crate::diff`].

use std::path::{Path, PathBuf};

use crate::analysis::AnalyzeOptions;
use crate::diff::check::{Budget, Percent};
use crate::diff::side::{read_saved, Loaded, Side, SideError, Which};
use crate::diff::{Comparison, DiffOptions};
use crate::ingest::LoadOptions;
use crate::report::mirrors::WarningInfo as Warning;
use crate::report::Report;

use super::input::{guess, Input};
use super::load::LoadSettings;
use super::pipeline::{self, FileError, FileOptions};

/// What `diff` (and `check`) compare: two sides, each one capture or several captures of the
/// same program (repeated runs), each capture a trace, an Nsight Systems export, a folder of
/// ranks or a saved JSON report, read with the same window.
#[derive(Debug, Clone, Default)]
pub struct DiffRequest {
    /// The baseline (with `before_runs`, its first capture).
    pub before: PathBuf,
    /// The new profile (with `after_runs`, its first capture).
    pub after: PathBuf,
    /// Further captures of the baseline (repeated runs), after `before`.
    pub before_runs: Vec<PathBuf>,
    /// Further captures of the new profile, after `after`.
    pub after_runs: Vec<PathBuf>,
    /// The noise test's level and the step-time budget the verdict judges against.
    pub options: DiffOptions,
    /// The window of the sides that are analysed.
    pub window: crate::window::WindowSpec,
    /// How the sides are read (`threads` over both sides: two traces read at once share
    /// them; `None` = every core). The progress bar is left out when both sides are read at
    /// once (two bars would overwrite each other's line).
    pub load: LoadSettings,
    /// Folders: rank files at once per side (`None` = [`crate::multirank::default_jobs`]).
    pub jobs: Option<usize>,
    /// Read two trace sides one after the other, each with every reader thread, instead of
    /// side by side: the peak memory of one trace instead of both at once.
    pub sequential: bool,
}

/// Two sides compared, with the reading warnings of both (before's first).
pub struct Compared {
    /// The comparison.
    pub comparison: Comparison,
    /// Reading warnings of the traces read, with their paths.
    pub warnings: Vec<(String, Warning)>,
}

/// How to load a side that is a trace or a folder (a saved report ignores them).
#[derive(Debug, Clone, Default)]
pub struct SideOptions {
    /// Reader settings.
    pub load: LoadOptions,
    /// Window and analysis settings.
    pub analyze: AnalyzeOptions,
    /// Folder: rank files at once.
    pub jobs: usize,
    /// Two trace sides one after the other ([`DiffRequest::sequential`]).
    pub sequential: bool,
}

impl DiffRequest {
    /// The options each side is loaded with.
    pub fn side_options(&self) -> SideOptions {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let settings = LoadSettings {
            threads: Some(self.load.threads.unwrap_or(cores)),
            progress: self.load.progress && (self.sequential || !self.both_read()),
            ..self.load.clone()
        };
        SideOptions {
            load: settings.options(),
            analyze: AnalyzeOptions {
                window: self.window.clone(),
                ..AnalyzeOptions::default()
            },
            jobs: self.jobs.unwrap_or_else(crate::multirank::default_jobs),
            sequential: self.sequential,
        }
    }

    /// True when neither side is a saved report and each is one capture: both are read, at
    /// once (repeated runs are read one after the other).
    fn both_read(&self) -> bool {
        self.before_runs.is_empty()
            && self.after_runs.is_empty()
            && [&self.before, &self.after]
                .iter()
                .all(|p| !(p.is_file() && super::input::is_saved_report(p)))
    }
}

/// Loads both sides and compares them; an error names the side and the file. With repeated
/// runs (`before_runs`, `after_runs`) every capture is loaded, one after the other, and
/// [`crate::diff::compare_repeats`] judges the change against the spread between runs.
pub fn diff(req: &DiffRequest) -> Result<Compared, SideError> {
    let opts = req.side_options();
    if req.before_runs.is_empty() && req.after_runs.is_empty() {
        let (b, a) = load_pair(&req.before, &req.after, &opts);
        let (b, a) = (b?, a?);
        let comparison = crate::diff::compare(
            &b,
            &a,
            (&req.before.to_string_lossy(), &req.after.to_string_lossy()),
            &req.options,
        );
        let warnings = b.warnings.into_iter().chain(a.warnings).collect();
        return Ok(Compared {
            comparison,
            warnings,
        });
    }
    let before: Vec<&PathBuf> = std::iter::once(&req.before)
        .chain(&req.before_runs)
        .collect();
    let after: Vec<&PathBuf> = std::iter::once(&req.after).chain(&req.after_runs).collect();
    let load = |ps: &[&PathBuf], which| -> Result<Vec<Loaded>, SideError> {
        ps.iter().map(|p| load_side(p, which, &opts)).collect()
    };
    let b = load(&before, Which::Before)?;
    let a = load(&after, Which::After)?;
    let names = |ps: &[&PathBuf]| -> Vec<String> {
        ps.iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect()
    };
    let comparison =
        crate::diff::compare_repeats(&b, &a, (&names(&before), &names(&after)), &req.options);
    let warnings = b.into_iter().chain(a).flat_map(|l| l.warnings).collect();
    Ok(Compared {
        comparison,
        warnings,
    })
}

/// What `check` judges: the comparison `diff` makes of [`DiffRequest`] (the baseline is
/// `before`, the new profile `after`; several captures per side through `before_runs` and
/// `after_runs`), and the budget it is held to. The command builds one from its flags, the
/// MCP server's `diff` tool from `max_regression`, the Python module's `check` from its
/// arguments.
#[derive(Debug, Clone, Default)]
pub struct CheckRequest {
    /// The sides, their window and reading settings (`options.budget_pct` is replaced by the
    /// budget's step-time limit).
    pub diff: DiffRequest,
    /// The thresholds; [`budget`] makes the command's from a budget file and a limit.
    pub budget: Budget,
}

/// The budget `check` applies: the file's (or none), with `max_regression` (percent)
/// overriding its step-time limit; with neither, the step time may grow by
/// [`crate::diff::repeats::DEFAULT_BUDGET_PCT`].
pub fn budget(file: Option<Budget>, max_regression: Option<f64>) -> Budget {
    let had_file = file.is_some();
    let mut b = file.unwrap_or_default();
    if let Some(p) = max_regression {
        b.step_time = Some(Percent(p));
    } else if !had_file {
        b.step_time = Some(Percent(crate::diff::repeats::DEFAULT_BUDGET_PCT));
    }
    b
}

/// The comparison settings under `budget`: the verdict (of repeated runs, or per sample) is
/// judged against its step-time limit (default [`crate::diff::repeats::DEFAULT_BUDGET_PCT`]).
pub fn check_options(budget: &Budget) -> DiffOptions {
    DiffOptions {
        budget_pct: budget
            .step_time
            .map(|p| p.0)
            .unwrap_or(crate::diff::repeats::DEFAULT_BUDGET_PCT),
        ..DiffOptions::default()
    }
}

/// Loads the sides of `req`, compares them and judges the comparison against the budget:
/// the answer's `comparison.check` holds the outcome (`pass`, `regression`, `inconclusive`).
/// Errors as [`diff`].
pub fn check(req: &CheckRequest) -> Result<Compared, SideError> {
    let mut d = req.diff.clone();
    d.options = check_options(&req.budget);
    let mut out = diff(&d)?;
    judge(&mut out.comparison, &req.budget);
    Ok(out)
}

/// Judges a comparison (made with [`check_options`] of the same budget) against the budget,
/// into `c.check`.
pub fn judge(c: &mut Comparison, budget: &Budget) {
    let result = crate::diff::check::check(c, budget);
    c.check = Some(result);
}

/// Sides already loaded (a front door's cached or in-process reports), compared: one capture
/// per side as [`crate::diff::compare`], several (repeated runs) as
/// [`crate::diff::compare_repeats`]. `names` label each capture, in order.
pub fn compare_loaded(
    before: &[Loaded],
    after: &[Loaded],
    names: (&[String], &[String]),
    options: &DiffOptions,
) -> Comparison {
    crate::diff::compare_repeats(before, after, names, options)
}

/// A report made in this process as a side (the MCP server's cached reports, Python's
/// `Report` objects).
pub fn report_side(r: &Report, which: Which) -> Result<Loaded, SideError> {
    Ok(Loaded {
        side: Side::from_report(r)
            .map_err(|e| SideError(format!("{} side: {}: {e}", which.as_str(), r.source.path)))?,
        saved: false,
        warnings: Vec::new(),
    })
}

/// After a trace reader refused a file: is it a JSON report whose keys were reordered (e.g.
/// rewritten by a tool that sorts keys)? Only small files are parsed to find out.
fn report_with_other_key_order(path: &Path) -> bool {
    let small = std::fs::metadata(path).is_ok_and(|m| m.len() < (256 << 20));
    small
        && std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .is_some_and(|v| {
                v.get("schema_version").is_some()
                    && v.get("generator")
                        .and_then(|g| g.as_str())
                        .is_some_and(|g| g.starts_with("stallscope"))
            })
}

/// Loads one side: a saved JSON report, or a trace / Nsight Systems export / folder of ranks
/// analyzed with `opts`. Errors are one line naming the side and the file.
pub fn load_side(path: &Path, which: Which, opts: &SideOptions) -> Result<Loaded, SideError> {
    let name = which.as_str();
    let p = path.to_string_lossy().into_owned();
    let kind = match guess(path) {
        Ok(k) => k,
        Err(super::input::GuessError::Input(e)) => {
            return Err(SideError(format!("{name} side: {e}")))
        }
        Err(super::input::GuessError::Mixed(m)) => {
            return Err(SideError(format!("{name} side: {m}")))
        }
    };
    let (report, warnings) = match kind {
        Input::SavedReport => {
            return Ok(Loaded {
                side: read_saved(path, which)?,
                saved: true,
                warnings: Vec::new(),
            })
        }
        Input::RankFolder(listing) => {
            let fo = crate::multirank::FolderOptions {
                load: opts.load.clone(),
                jobs: opts.jobs.max(1),
                rank: None,
            };
            let run = pipeline::rank_runner(opts.analyze.clone());
            let out = crate::multirank::analyze_folder(path, &listing, &fo, &run)
                .map_err(|e| SideError(format!("{name} side: {e}")))?;
            (out.report, out.warnings)
        }
        Input::SummaryFolder(listing) => {
            let paths: Vec<String> = listing
                .files
                .iter()
                .map(|f| f.path.to_string_lossy().into_owned())
                .collect();
            let jobs = opts.jobs.max(1);
            let out =
                super::folder::merge_summaries(&paths, None, jobs, Some((&p, listing.ignored)))
                    .map_err(|e| SideError(format!("{name} side: {e}")))?;
            (out.report, out.warnings)
        }
        Input::NcuCsv => {
            return Err(SideError(format!(
                "{name} side: {p}: an Nsight Compute CSV alone has no steps or timeline to \
                 compare; give the trace it was captured with"
            )))
        }
        Input::Stdin | Input::Trace | Input::MemoryExport => {
            let fopts = FileOptions {
                load: opts.load.clone(),
                analyze: opts.analyze.clone(),
                ncu: None,
                recorded: None,
            };
            let out = match pipeline::run_file(&p, &fopts, None, &mut |_| {}) {
                Ok(out) => out,
                Err(FileError::Load(_)) if report_with_other_key_order(path) => {
                    return Ok(Loaded {
                        side: read_saved(path, which)?,
                        saved: true,
                        warnings: Vec::new(),
                    })
                }
                Err(FileError::Load(e) | FileError::Ncu(e)) => {
                    return Err(SideError(format!("{name} side: {e}")))
                }
                Err(FileError::Window(m)) => {
                    return Err(SideError(format!("{name} side: {p}: {m}")))
                }
            };
            let warnings = out
                .trace
                .warnings
                .iter()
                .map(|w| (p.clone(), Warning::from(w)))
                .collect();
            (out.report, warnings)
        }
    };
    let side = Side::from_report(&report)
        .map_err(|e| SideError(format!("{name} side: {}: {e}", path.display())))?;
    Ok(Loaded {
        side,
        saved: false,
        warnings,
    })
}

/// Loads both sides, side by side on two threads when both are traces (each with half of
/// the reader threads given in `opts`), or one after the other when [`SideOptions::sequential`]
/// (each with all of them; one trace in memory at a time, as each side keeps only its report).
pub fn load_pair(
    before: &Path,
    after: &Path,
    opts: &SideOptions,
) -> (Result<Loaded, SideError>, Result<Loaded, SideError>) {
    let saved = |p: &Path| p.is_file() && super::input::is_saved_report(p);
    if opts.sequential || saved(before) || saved(after) {
        return (
            load_side(before, Which::Before, opts),
            load_side(after, Which::After, opts),
        );
    }
    let mut half = opts.clone();
    half.load.kineto.threads = (opts.load.kineto.threads / 2).max(1);
    std::thread::scope(|s| {
        let h = s.spawn(|| load_side(after, Which::After, &half));
        let b = load_side(before, Which::Before, &half);
        let a = h
            .join()
            .unwrap_or_else(|_| Err(SideError("after side: the analysis failed".into())));
        (b, a)
    })
}
