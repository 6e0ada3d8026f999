//! `stallscope summarize` and `stallscope merge`: one rank reduced to a summary, summaries
//! merged into the folder's report.

use std::path::PathBuf;

use super::analyze::{AnalyzeArgs, Format, OpSort, View};
use super::args::ColorChoice;
use super::args::{parse_threads, print_warning, write_output, WindowArgs};
use crate::api::{self, LoadSettings, SummarizeRequest};

pub(super) const SUMMARIZE_HELP: &str = "\
Examples:
  stallscope summarize rank3.pt.trace.json.gz -o rank3.summary.json
  stallscope summarize rank3.pt.trace.json.gz --steps 5..20 -o rank3.summary.json
  stallscope merge ranks/*.summary.json              # the report `analyze ranks/` gives
  stallscope analyze summaries/                      # a folder of *.summary.json: the same

The summary (docs/summary.md) holds the rank's facts for the rank table and cross-rank rules
and its full report (the merged report is the slowest rank's); never the timeline. Give every
rank the same window flags. A trace that cannot be read still gives a summary, which lists it
as skipped (as `analyze FOLDER` does), and the exit code is 2.

Exit codes: 0 ok, 2 unreadable input (the summary lists it as skipped) or bad arguments,
1 the summary could not be written.";

/// `SummarizeArgs`.
#[derive(clap::Args, Debug)]
pub(super) struct SummarizeArgs {
    /// One rank's trace file (.json or .json.gz), an Nsight Systems export, or - for
    /// standard input. Its rank is `distributedInfo.rank`, else the file name's (`rank3`,
    /// `worker3`).
    pub(super) trace: PathBuf,

    /// Write the summary to FILE (by convention `*.summary.json`) instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub(super) output: Option<PathBuf>,

    #[command(flatten)]
    pub(super) window: WindowArgs,

    /// Parser and analysis threads (default: all cores).
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    pub(super) threads: Option<usize>,

    /// Analyze what was read from a truncated file instead of failing.
    #[arg(long)]
    pub(super) allow_truncated: bool,

    /// Do not print reading warnings on stderr.
    #[arg(long, short = 'q')]
    pub(super) quiet: bool,
}

pub(super) const MERGE_HELP: &str = "\
Examples:
  stallscope merge out/*.summary.json                        # the folder's report
  stallscope merge out/*.summary.json --format json -o report.json
  stallscope merge a.summary.json b.summary.json --summary -o ab.summary.json
  stallscope merge ab.summary.json c.summary.json            # merges in a tree give the same

The report is the one `stallscope analyze FOLDER` gives on the traces the summaries were made
from: the rank table, the cross-rank findings and the slowest rank's full report (`--rank N`:
that rank's, when a summary holds it). `ranks.folder` is the folder the traces were in (their
common parent) and `ranks.jobs` the value of --jobs.

Exit codes: 0 ok, 2 a summary that cannot be read, no readable rank, or bad arguments,
1 other errors.";

/// `MergeArgs`.
#[derive(clap::Args, Debug)]
pub(super) struct MergeArgs {
    /// Summaries written by `stallscope summarize` (or merged ones, `--summary`).
    #[arg(required = true)]
    pub(super) summaries: Vec<PathBuf>,

    /// Write one merged summary instead of the report (to merge again later).
    #[arg(long, conflicts_with_all = ["format", "view", "top", "sort"])]
    pub(super) summary: bool,

    /// Output format of the report.
    #[arg(long, short = 'f', value_enum, default_value_t = Format::Table)]
    pub(super) format: Format,

    /// Write the report (or the summary) to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub(super) output: Option<PathBuf>,

    /// Table written by --format csv (required with csv, not allowed otherwise).
    #[arg(long, value_enum, required_if_eq("format", "csv"))]
    pub(super) view: Option<View>,

    /// Rows of the kernel and operator tables (0 = all). Default: 10 in tables, all in JSON.
    #[arg(long, value_name = "N")]
    pub(super) top: Option<usize>,

    /// Order of the operator table.
    #[arg(long, value_enum, default_value_t = OpSort::DeviceSelf)]
    pub(super) sort: OpSort,

    /// Show this rank's full report (default: the slowest rank's).
    #[arg(long, value_name = "N")]
    pub(super) rank: Option<i64>,

    /// The `jobs` the report states: how many ranks were summarised at once (the merge cannot
    /// know it).
    #[arg(long, short = 'j', value_name = "N", default_value_t = 1)]
    pub(super) jobs: usize,

    /// When to use colours.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub(super) color: ColorChoice,

    /// Do not print reading warnings on stderr.
    #[arg(long, short = 'q')]
    pub(super) quiet: bool,
}

/// `summarize`: one rank's summary written; exit 2 when its trace could not be read.
pub(super) fn run_summarize(args: SummarizeArgs, load: LoadSettings) -> Result<(), (i32, String)> {
    let req = SummarizeRequest {
        trace: args.trace.clone(),
        recorded: None,
        window: args.window.spec()?,
        load: LoadSettings {
            threads: args.threads,
            allow_truncated: args.allow_truncated,
            progress: false,
            ..load
        },
    };
    let s = api::summarize(&req);
    if !args.quiet {
        for (p, w) in &s.warnings {
            print_warning(p, w);
        }
    }
    let mut text = s.to_json();
    text.push('\n');
    write_output(args.output.as_deref(), text.as_bytes())?;
    match s.skipped.first() {
        Some(k) => Err((
            2,
            format!("error: {} (the summary lists it as skipped)", k.error),
        )),
        None => Ok(()),
    }
}

/// `merge`: the folder's report from the summaries (written as `analyze` writes it), or one
/// merged summary.
pub(super) fn run_merge(args: MergeArgs) -> Result<(), (i32, String)> {
    let paths: Vec<String> = args
        .summaries
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if args.summary {
        let merged = api::merge_files(&paths, args.rank).map_err(|e| (2, format!("error: {e}")))?;
        let mut text = merged.to_json();
        text.push('\n');
        return write_output(args.output.as_deref(), text.as_bytes());
    }
    if args.view.is_some() && args.format != Format::Csv {
        return Err((2, "error: --view applies only to --format csv".into()));
    }
    if args.format == Format::Parquet {
        return Err((
            2,
            "error: --format parquet needs every rank's full report, which a summary does not \
             keep: run `stallscope analyze DIR --format parquet -o OUT` on the traces"
                .into(),
        ));
    }
    let mut timings = crate::timings::Timings::from_env();
    let out = api::merge_summaries(&paths, args.rank, args.jobs, None)
        .map_err(|e| (2, format!("error: {e}")))?;
    let as_analyze = AnalyzeArgs {
        trace: args.summaries[0].clone(),
        ncu: None,
        format: args.format,
        output: args.output,
        view: args.view,
        window: WindowArgs::default(),
        top: args.top,
        sort: args.sort,
        threads: None,
        jobs: Some(args.jobs),
        rank: args.rank,
        allow_truncated: false,
        no_clock_correction: false,
        color: args.color,
        quiet: args.quiet,
        job: None,
    };
    super::analyze::emit(&as_analyze, out, &mut timings, None)
}
