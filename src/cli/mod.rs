//! Command-line interface: flag parsing, the flags resolved into a request of the library's
//! front door ([`crate::api`]), the api called, and its answer written with an exit code. One
//! file per subcommand ([`analyze`], [`phases`], [`slice`], [`memory`], [`diff`] with `check`,
//! [`summarize`] with `merge`, [`mod@mcp`]); [`args`] holds what they share. No pipeline code
//! lives here: what a flag means for the analysis is decided in `crate::api`.
//!
//! Exit codes: 0 success; 2 the input could not be read (missing, truncated, not a trace) or the
//! command line was wrong; 1 anything else (for example the output could not be written).

mod analyze;
mod args;
mod diff;
#[cfg(feature = "mcp")]
mod mcp;
mod memory;
mod phases;
mod slice;
mod summarize;

use clap::{Parser, Subcommand};

use crate::api::LoadSettings;
use analyze::AnalyzeArgs;
use diff::{CheckArgs, DiffArgs, CHECK_HELP, DIFF_HELP};
#[cfg(feature = "mcp")]
use mcp::{McpArgs, MCP_HELP};
use memory::{MemoryArgs, MEMORY_HELP};
use phases::{PhasesArgs, PHASES_HELP};
use slice::{SliceArgs, SLICE_HELP};
use summarize::{MergeArgs, SummarizeArgs, MERGE_HELP, SUMMARIZE_HELP};

const ABOUT: &str = "Tells you why your GPU workload is slow, from the profile you already have.";

const LONG_ABOUT: &str = "\
Tells you why your GPU workload is slow, from the profile you already have.

stallscope reads torch.profiler (Kineto) traces — .json, .json.gz, standard input, or a folder
of per-rank traces — and prints where each training or inference step spends its time:
kernels, copies, communication, runtime calls, the DataLoader, host work, and idle GPU time.
For a folder it compares the ranks (straggler, communication imbalance) and shows the slowest
rank in full.";

const AFTER_HELP: &str = "\
Examples:
  stallscope analyze trace.pt.trace.json.gz
  stallscope analyze trace.json --format json -o report.json
  stallscope analyze trace.json --format html -o report.html
  stallscope analyze trace.json --format csv --view kernels -o kernels.csv
  stallscope analyze trace.json --top 25 --sort host-self
  stallscope analyze trace.json --steps 3..6        # only ProfilerStep#3 … #6
  stallscope analyze trace.json --focus denoise     # only the time inside `denoise`
  stallscope analyze traces/                        # a folder of per-rank traces
  stallscope analyze traces/ --rank 3 --jobs 4      # rank 3's report; 4 files at once
  zcat big.json.gz | stallscope analyze -

Exit codes: 0 ok, 2 unreadable input or bad arguments, 1 other errors.
Hostile or broken input is refused with one line naming the limit, the file and the byte
offset (raise a limit with --limit NAME=VALUE or --max-inflate).
Set NO_COLOR to disable colours.";

#[derive(Parser, Debug)]
#[command(name = "stallscope", version, about = ABOUT, long_about = LONG_ABOUT, after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,

    /// Raise (or lower) a reading limit, NAME=VALUE, repeatable. Limits bound memory and time
    /// whatever the bytes; the defaults never trip on real traces. value-bytes (128M): one
    /// event or top-level JSON value; header-bytes (16M): a parsed top-level member such as
    /// deviceProperties (a larger one is ignored with a warning); names (1000000): distinct
    /// names; inflate-ratio (100), inflate-floor (1G) and inflate-bytes (64G): see
    /// --max-inflate. Sizes take K, M, G, T.
    #[arg(long, global = true, value_name = "NAME=VALUE")]
    limit: Vec<String>,

    /// How far a gzip input may inflate: RATIOx (inflated bytes per compressed byte, checked
    /// past inflate-floor, 1G; default 100x, real traces compress 10-20x), SIZE (absolute,
    /// default 64G), or both: `--max-inflate 500x,200G`.
    #[arg(long, global = true, value_name = "SPEC")]
    max_inflate: Option<String>,
}

impl Cli {
    /// The load settings every subcommand starts from: the environment's switches and the
    /// limits of `--limit` and `--max-inflate` over the defaults.
    fn load_settings(&self) -> Result<LoadSettings, String> {
        let mut load = LoadSettings::from_env();
        for spec in &self.limit {
            load.limits.set(spec)?;
        }
        if let Some(m) = &self.max_inflate {
            load.limits.set_max_inflate(m)?;
        }
        Ok(load)
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Analyze a trace: steps, time breakdown, GPU summary, GPU timeline, kernels, operators.
    #[command(after_help = AFTER_HELP)]
    Analyze(AnalyzeArgs),
    /// Print the tree of user annotations (record_function ranges, nn.Modules) with the GPU
    /// time each launched.
    #[command(after_help = PHASES_HELP)]
    Phases(PhasesArgs),
    /// Write a smaller, valid trace of one window (steps, time range, focus) that Perfetto and
    /// chrome://tracing open.
    #[command(after_help = SLICE_HELP)]
    Slice(SliceArgs),
    /// Compare two profiles (traces, folders or saved JSON reports): step time and whether the
    /// change is beyond noise, what explains it, kernels/ops/phases added, removed and changed,
    /// findings resolved and new.
    #[command(after_help = DIFF_HELP)]
    Diff(DiffArgs),
    /// Gate CI on regressions: compare a profile with a baseline; exit 0 within budget, 1 on a
    /// regression over its threshold and beyond noise, 2 on unreadable input, 3 inconclusive.
    #[command(after_help = CHECK_HELP)]
    Check(CheckArgs),
    /// Serve the analyses to coding agents: a Model Context Protocol server on standard input
    /// and output (tools analyze, kernels, ops, phases, steps, explain_finding, slice).
    #[cfg(feature = "mcp")]
    #[command(after_help = MCP_HELP)]
    Mcp(McpArgs),
    /// Where device memory goes: the memory timeline of a trace recorded with
    /// profile_memory=True (peak, what is live at it, churn), or of torch's memory-timeline
    /// export (`export_memory_timeline("x.raw.json.gz")`: bytes per category at the peak).
    #[command(after_help = MEMORY_HELP)]
    Memory(MemoryArgs),
    /// Reduce one rank's trace to a small summary (JSON, kilobytes) that `merge` combines
    /// with the other ranks' into exactly the report `analyze FOLDER` gives: run it where the
    /// trace is (a cluster's workers), merge anywhere.
    #[command(after_help = SUMMARIZE_HELP)]
    Summarize(SummarizeArgs),
    /// Merge per-rank summaries (`summarize`) into the folder's report, or into one summary
    /// (`--format summary`) to merge again later: merging is associative.
    #[command(after_help = MERGE_HELP)]
    Merge(MergeArgs),
}

/// Runs the CLI with the process arguments; returns the exit code.
pub fn run() -> i32 {
    run_with(std::env::args_os())
}

/// Runs the CLI with these arguments (the first is the program name, as in `argv`); returns
/// the exit code. The Python module's `stallscope` command calls this in-process.
pub fn run_with<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    let load = match cli.load_settings() {
        Ok(l) => l,
        Err(m) => {
            eprintln!("error: {m}");
            return 2;
        }
    };
    let result = match cli.command {
        Command::Analyze(a) => analyze::run(a, load),
        Command::Phases(a) => phases::run(a, load),
        Command::Slice(a) => slice::run(a, load),
        Command::Memory(a) => memory::run(a, load),
        Command::Diff(a) => diff::run_diff(a, load),
        Command::Check(a) => diff::run_check(a, load),
        Command::Summarize(a) => summarize::run_summarize(a, load),
        Command::Merge(a) => summarize::run_merge(a),
        #[cfg(feature = "mcp")]
        Command::Mcp(a) => return mcp::mcp(a, load),
    };
    match result {
        Ok(()) => 0,
        Err((code, msg)) => {
            if !msg.is_empty() {
                // an error may quote the file (top-level keys, a name): shown as text
                let lines: Vec<String> = msg.lines().map(crate::text::printable).collect();
                eprintln!("{}", lines.join("\n"));
            }
            code
        }
    }
}
