//! The single-file pipeline, written once: load → window → analyze → diagnose → report.
//! Every request that reads a trace runs it here: `analyze` of a file, each rank of a folder
//! (through [`rank_runner`], which [`crate::multirank`] calls), a side of `diff`, `phases`,
//! `memory`, `summarize` and the MCP server's tools.

use crate::analysis::ranks::{RankFacts, TopFinding};
use crate::analysis::{self, Analysis, AnalyzeOptions};
use crate::ingest::{self, LoadError, LoadOptions};
use crate::model::Trace;
use crate::multirank::{RankHint, RankJob};
use crate::report::mirrors::WarningInfo as Warning;
use crate::report::Report;
use crate::timings::Timings;

/// What one file is read with and analysed over.
#[derive(Clone, Debug, Default)]
pub struct FileOptions {
    /// Reader settings.
    pub load: LoadOptions,
    /// The window and the analysis threads.
    pub analyze: AnalyzeOptions,
    /// An Nsight Compute CSV joined to the trace's kernels (`--ncu`).
    pub ncu: Option<std::path::PathBuf>,
    /// The path the report records instead of the one read (a rank summarised from bytes
    /// handed over in a temporary file).
    pub recorded: Option<String>,
}

/// Why one file gave no report.
#[derive(Debug)]
pub enum FileError {
    /// The trace could not be read.
    Load(LoadError),
    /// The window selects nothing (the message names neither file nor offset).
    Window(String),
    /// The `--ncu` CSV could not be read.
    Ncu(LoadError),
}

/// A file through the whole pipeline: its trace and analysis (for a caller that needs a fact
/// the report does not carry; drop them as soon as possible) and its report.
pub struct FileReport {
    /// The trace as read.
    pub trace: Trace,
    /// Its analysis over the window.
    pub analysis: Analysis,
    /// The report, with the diagnosis.
    pub report: Report,
    /// Reading warnings of the `--ncu` CSV, with its path (the trace's are in the report).
    pub ncu_warnings: Vec<(String, Warning)>,
}

/// Runs the pipeline on `path`: load (then `loaded` sees the trace, e.g. to print its
/// warnings at once) → window and analysis → the `--ncu` join → diagnosis → report.
/// `timings` gets the load / analyze / diagnose+report laps.
pub fn run_file(
    path: &str,
    opts: &FileOptions,
    mut timings: Option<&mut Timings>,
    loaded: &mut dyn FnMut(&Trace),
) -> Result<FileReport, FileError> {
    let mut lap = |name: &str| {
        if let Some(t) = timings.as_deref_mut() {
            t.lap(name);
        }
    };
    let mut trace = load(path, &opts.load).map_err(FileError::Load)?;
    lap("load");
    if let Some(r) = &opts.recorded {
        trace.source.path = r.clone();
    }
    loaded(&trace);
    let mut a = analysis::try_analyze(&trace, &opts.analyze)
        .map_err(|e| FileError::Window(e.to_string()))?;
    let mut ncu_warnings = Vec::new();
    if let Some(p) = &opts.ncu {
        let p = p.to_string_lossy().into_owned();
        let n = ingest::ncu::read(&p).map_err(FileError::Ncu)?;
        ncu_warnings.extend(n.warnings.iter().map(|w| (p.clone(), Warning::from(w))));
        let steps = a.steps.steps.len();
        a.ncu = Some(analysis::ncu::joined(&trace, &a.selection, steps, &n));
    }
    lap("analyze");
    if let Some(n) = &a.ncu {
        trace.warnings.extend(n.report.warnings.iter().cloned());
    }
    let report = report_of(&trace, &a);
    lap("diagnose+report");
    Ok(FileReport {
        trace,
        analysis: a,
        report,
        ncu_warnings,
    })
}

/// The first step alone: the trace read (`slice` plans its window on it without analysing).
pub fn load(path: &str, opts: &LoadOptions) -> Result<Trace, LoadError> {
    ingest::load(path, opts)
}

/// The last two steps: the diagnosis of the facts, then the report that receives it.
pub fn report_of(trace: &Trace, a: &Analysis) -> Report {
    let diagnosis = crate::diagnose::diagnose(trace, a);
    let mut tt = crate::timings::Timings::nested();
    let r = Report::new(trace, a, diagnosis);
    tt.lap("report");
    r
}

/// The report of an Nsight Compute CSV alone: its findings (weighted by ncu's own durations)
/// and kernel table.
pub fn ncu_alone(path: &str) -> Result<Report, LoadError> {
    let (trace, a) = analysis::ncu_alone(path)?;
    Ok(report_of(&trace, &a))
}

/// The pipeline for one rank of a folder (or one `summarize`): the rank's facts and full
/// report, or the one-line error that lists the file as skipped. What
/// [`crate::multirank`] runs on each file; `analyze` is the window of every rank.
pub fn rank_runner(
    analyze: AnalyzeOptions,
) -> impl Fn(&RankJob<'_>) -> Result<(RankFacts, Report), String> + Sync {
    move |job: &RankJob<'_>| {
        let opts = FileOptions {
            load: job.load.clone(),
            analyze: analyze.clone(),
            ncu: None,
            recorded: Some(job.recorded.to_string()),
        };
        let path = job.recorded;
        let out = run_file(job.file, &opts, None, &mut |_| {}).map_err(|e| match e {
            FileError::Load(e) | FileError::Ncu(e) => e.to_string(),
            FileError::Window(m) => format!("{path}: {m}"),
        })?;
        let facts = rank_facts(&out, path, job.hint);
        Ok((facts, out.report))
    }
}

/// A rank's facts: its rank (`distributedInfo`, else the file name's, else its place in the
/// folder), the facts of its trace and analysis, and its report's top finding.
fn rank_facts(out: &FileReport, path: &str, hint: RankHint) -> RankFacts {
    use crate::analysis::ranks::RankSource;
    let (rank, source) = match out.trace.distributed.as_ref().and_then(|d| d.rank) {
        Some(r) => (r, RankSource::DistributedInfo),
        None => match hint.name_rank {
            Some(r) => (r, RankSource::FileName),
            None => (hint.index as i64, RankSource::Order),
        },
    };
    let mut facts = RankFacts::new(&out.trace, &out.analysis, path, rank, source);
    facts.top_finding = out.report.findings.first().map(|f| TopFinding {
        id: f.id.to_string(),
        severity: f.severity.as_str(),
        recoverable_us: f.recoverable_us,
        title: f.title.clone(),
    });
    facts
}
