//! The types every request family shares: the `analyze` request, its answer and its error.

use std::path::PathBuf;

use crate::ingest::LoadError;
use crate::report::mirrors::WarningInfo as Warning;
use crate::report::Report;

use super::input::GuessError;
use super::load::LoadSettings;
use super::pipeline::FileError;

/// What `analyze` is asked to read and which window to analyze: the command's arguments less
/// the output ones. The command builds one from its flags, the MCP server from a tool's
/// input, the Python module from its keyword arguments, and all get the same [`Report`] from
/// [`analyze`].
#[derive(Debug, Clone, Default)]
pub struct AnalyzeRequest {
    /// A trace file, `-` for standard input, a folder of per-rank traces or of rank
    /// summaries, an Nsight Systems export or an Nsight Compute CSV.
    pub trace: PathBuf,
    /// An Nsight Compute CSV joined to the trace's kernels (`--ncu`).
    pub ncu: Option<PathBuf>,
    /// The window (`--all`, `--steps`, `--time`, `--focus`; default the steady state).
    pub window: crate::window::WindowSpec,
    /// How the input is read; its threads are also the analysis threads of one file.
    pub load: LoadSettings,
    /// Folder: rank files at once (`--jobs`; `None` = [`crate::multirank::default_jobs`]).
    pub jobs: Option<usize>,
    /// Folder: the rank whose full report is given (`--rank`; `None` = the slowest).
    pub rank: Option<i64>,
}

/// Why a request gave no report. Both are the command's exit code 2.
#[derive(Debug)]
pub enum AnalyzeError {
    /// The input (or the `--ncu` file) could not be read: names the file and, when known,
    /// the byte offset.
    Input(LoadError),
    /// The request does not fit the input: a window that matches nothing, `rank` on a single
    /// file or naming no rank of the folder, `ncu` beside a folder or an ncu CSV.
    Request(String),
}

impl std::fmt::Display for AnalyzeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AnalyzeError::Input(e) => write!(f, "{e}"),
            AnalyzeError::Request(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for AnalyzeError {}

impl From<FileError> for AnalyzeError {
    fn from(e: FileError) -> Self {
        match e {
            FileError::Load(e) | FileError::Ncu(e) => AnalyzeError::Input(e),
            FileError::Window(m) => AnalyzeError::Request(m),
        }
    }
}

impl From<GuessError> for AnalyzeError {
    fn from(e: GuessError) -> Self {
        match e {
            GuessError::Input(e) => AnalyzeError::Input(e),
            GuessError::Mixed(m) => AnalyzeError::Request(m),
        }
    }
}

impl From<crate::multirank::FolderError> for AnalyzeError {
    fn from(e: crate::multirank::FolderError) -> Self {
        match e {
            crate::multirank::FolderError::Input(e) => AnalyzeError::Input(e),
            crate::multirank::FolderError::NoSuchRank(m) => {
                AnalyzeError::Request(m.strip_prefix("error: ").unwrap_or(&m).to_string())
            }
        }
    }
}

/// A report and what reading produced on the side.
#[derive(Debug)]
pub struct Analyzed {
    /// The report, with every kernel and operator row (sort them with [`sort_ops`]).
    pub report: Report,
    /// Reading warnings, each with the file it came from (every rank's for a folder).
    pub warnings: Vec<(String, Warning)>,
    /// The input was an Nsight Compute CSV alone (the report has only its findings and
    /// `ncu` section; the command renders it as a table or JSON only).
    pub ncu_alone: bool,
}

/// A consumer of each rank's full report: `(rank, report)` (`api::analyze_with`).
pub type EachReport<'a> = dyn Fn(i64, &Report) + Sync + 'a;
