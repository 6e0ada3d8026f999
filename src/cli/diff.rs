//! `stallscope diff` and `stallscope check`: two profiles compared, and the comparison judged
//! against a budget.

use std::path::PathBuf;

use clap::ValueEnum;

use super::args::{parse_threads, print_warning, write_out, WindowArgs};
use crate::api::{self, DiffRequest, LoadSettings};

pub(super) const DIFF_HELP: &str = "\
Examples:
  stallscope diff before.pt.trace.json.gz after.pt.trace.json.gz
  stallscope diff base.json after.pt.trace.json.gz      # a saved report as the baseline
  stallscope diff before/ after/                        # folders of per-rank traces
  stallscope diff a.json.gz b.json.gz --format md -o diff.md   # a pull-request comment
  stallscope diff a.json.gz b.json.gz --format html -o diff.html
  stallscope diff a.json.gz b.json.gz --focus denoise   # the same window on both sides
  stallscope diff a.json.gz b.json.gz --sequential      # one trace in memory at a time
  stallscope diff --before a1.json.gz a2.json.gz a3.json.gz --after b1.json.gz b2.json.gz b3.json.gz

Each side is a Kineto trace (.json, .json.gz), an Nsight Systems export, a folder of per-rank
traces, or a JSON report saved with `stallscope analyze TRACE --format json -o base.json`.
Two traces are read side by side, each with half of the threads, so both are in memory at once;
--sequential reads them one after the other with every thread: the peak memory of one trace, in
about the same time. Every figure is per step. The step-time change is tested against the
step-to-step spread with the Mann-Whitney U test on the per-step durations (at least 3 steps per
side); the contributors list what explains the change and sums to it. See docs/diff.md.

Exit codes: 0 ok, 2 unreadable input (the message names the side and the file) or bad
arguments, 1 other errors.";

pub(super) const CHECK_HELP: &str = "\
Make a baseline once (a small JSON file to keep in the repository or as a CI artifact):
  stallscope analyze trace.pt.trace.json.gz --format json -o base.json
Then, in CI:
  stallscope check new.pt.trace.json.gz --baseline base.json --max-regression 5%
  stallscope check new.pt.trace.json.gz --baseline base.json --budget stallscope.toml
  stallscope check new.pt.trace.json.gz --baseline base.json --format md -o comment.md
  stallscope check new1.json.gz new2.json.gz new3.json.gz --baseline a1.json a2.json a3.json

A regression fails only when it is over its threshold and, for the step time, beyond noise
(Mann-Whitney U on the per-step durations, p < 0.05; with too few steps to test, the threshold
alone decides and the summary says so). The budget file (TOML, see docs/diff.md) can limit the
step time, the GPU idle share (points), a phase's or a kernel's GPU time, and new high-severity
findings. Without --budget or --max-regression the step time may grow by 5%.
One summary line goes to stderr; the budget table (or --format md/json/html: the full
comparison with the budget) to stdout or -o.

Exit codes: 0 pass (every budget within its limit), 1 regression (a budget failed; also a
step-time estimate over the limit that the noise could not judge), 2 unreadable input or bad
arguments, 3 inconclusive (nothing failed, but the step-time verdict could not tell: too few
steps or runs, or a run-to-run spread a budget-sized regression could hide in; the stderr line
starts `stallscope check: INCONCLUSIVE` and says why). In CI, to warn rather than fail on 3:
  stallscope check ... || [ $? -eq 3 ]";

/// Output formats of `diff` and `check`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub(super) enum DiffFormatArg {
    /// Tables for the terminal.
    Table,
    /// The versioned comparison JSON (see docs/json-report.md).
    Json,
    /// GitHub-flavoured Markdown for a pull-request comment.
    Md,
    /// One self-contained HTML page with side-by-side bars.
    Html,
}

impl DiffFormatArg {
    fn to_report(self) -> crate::diff::render::DiffFormat {
        match self {
            DiffFormatArg::Table => crate::diff::render::DiffFormat::Table,
            DiffFormatArg::Json => crate::diff::render::DiffFormat::Json,
            DiffFormatArg::Md => crate::diff::render::DiffFormat::Md,
            DiffFormatArg::Html => crate::diff::render::DiffFormat::Html,
        }
    }
}

/// Reading settings shared by `diff` and `check`.
/// `SidesArgs`.
#[derive(clap::Args, Debug)]
pub(super) struct SidesArgs {
    #[command(flatten)]
    pub(super) window: WindowArgs,

    /// Parser threads over both sides (default: all cores; two traces share them).
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    pub(super) threads: Option<usize>,

    /// Folders: rank files loaded at once per side.
    #[arg(long, short = 'j', value_name = "N")]
    pub(super) jobs: Option<usize>,

    /// Read the two sides one after the other, each with every thread, instead of side by
    /// side: the peak memory of one trace instead of two, in about the same time.
    #[arg(long)]
    pub(super) sequential: bool,

    /// Do not print reading warnings on stderr.
    #[arg(long, short = 'q')]
    pub(super) quiet: bool,
}

/// The long help (`--help`) of a command with the window flags: its own text, then the
/// window's (the flattened window flags' `after_long_help` would otherwise replace the
/// command's).
fn with_window(help: &str) -> String {
    format!("{help}\n\n{}", super::args::WINDOW_HELP)
}

/// `DiffArgs`.
#[derive(clap::Args, Debug)]
#[command(after_long_help = with_window(DIFF_HELP))]
pub(super) struct DiffArgs {
    /// The baseline: trace, Nsight Systems export, folder of ranks, or saved JSON report.
    #[arg(required_unless_present = "before_runs")]
    pub(super) before: Option<PathBuf>,
    /// The new profile (same kinds).
    #[arg(required_unless_present = "after_runs")]
    pub(super) after: Option<PathBuf>,

    /// Several captures of the baseline (repeated runs): `--before A1 A2 A3`.
    #[arg(long = "before", value_name = "CAPTURE", num_args = 1.., conflicts_with = "before")]
    pub(super) before_runs: Vec<PathBuf>,
    /// Several captures of the new profile: `--after B1 B2 B3`.
    #[arg(long = "after", value_name = "CAPTURE", num_args = 1.., conflicts_with = "after")]
    pub(super) after_runs: Vec<PathBuf>,
    /// Step-time regression the verdict tolerates, e.g. 5% (default 5%).
    #[arg(long, value_name = "PCT", value_parser = crate::diff::check::parse_percent)]
    pub(super) max_regression: Option<f64>,

    /// Output format.
    #[arg(long, short = 'f', value_enum, default_value_t = DiffFormatArg::Table)]
    pub(super) format: DiffFormatArg,

    /// Write to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub(super) output: Option<PathBuf>,

    /// Rows per table (0 = all). Default: 10 (table, md), 30 (html), all (json).
    #[arg(long, value_name = "N")]
    pub(super) top: Option<usize>,

    #[command(flatten)]
    pub(super) sides: SidesArgs,
}

/// `CheckArgs`. The usage names the new profile first: `--baseline` takes several values, so
/// a profile written after it would be read as one more baseline.
#[derive(clap::Args, Debug)]
#[command(
    after_long_help = with_window(CHECK_HELP),
    override_usage = "stallscope check [OPTIONS] <TRACE>... --baseline <BASE>..."
)]
pub(super) struct CheckArgs {
    /// The new profile: trace, Nsight Systems export, folder of ranks, or saved JSON report
    /// (several: captures of it, repeated runs).
    #[arg(required = true, num_args = 1..)]
    pub(super) trace: Vec<PathBuf>,

    /// The baseline: a JSON report (`stallscope analyze TRACE --format json -o base.json`) or
    /// a trace (several: `--baseline A1 A2 A3`, repeated runs).
    #[arg(long, value_name = "BASE", required = true, num_args = 1..)]
    pub(super) baseline: Vec<PathBuf>,

    /// Largest step-time regression, e.g. 5% (default 5% without --budget; overrides the
    /// budget file's step_time).
    #[arg(long, value_name = "PCT", value_parser = crate::diff::check::parse_percent)]
    pub(super) max_regression: Option<f64>,

    /// Budget file (TOML) naming metrics and thresholds; see docs/diff.md.
    #[arg(long, value_name = "FILE")]
    pub(super) budget: Option<PathBuf>,

    /// Output format of the full report on stdout (default: the budget table).
    #[arg(long, short = 'f', value_enum, default_value_t = DiffFormatArg::Table)]
    pub(super) format: DiffFormatArg,

    /// Write to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub(super) output: Option<PathBuf>,

    #[command(flatten)]
    pub(super) sides: SidesArgs,
}

impl SidesArgs {
    /// The request comparing `before` with `after` under these settings.
    fn request(
        &self,
        before: &[PathBuf],
        after: &[PathBuf],
        load: LoadSettings,
        options: crate::diff::DiffOptions,
    ) -> Result<DiffRequest, (i32, String)> {
        let (Some((b0, bs)), Some((a0, as_))) = (before.split_first(), after.split_first()) else {
            return Err((2, "error: each side needs at least one capture".to_string()));
        };
        Ok(DiffRequest {
            before: b0.clone(),
            after: a0.clone(),
            before_runs: bs.to_vec(),
            after_runs: as_.to_vec(),
            options,
            window: self.window.spec()?,
            load: LoadSettings {
                threads: self.threads,
                progress: true,
                ..load
            },
            jobs: self.jobs,
            sequential: self.sequential,
        })
    }
}

/// Loads both sides and compares them; errors name the side and the file (exit 2).
fn compare_sides(
    before: &[PathBuf],
    after: &[PathBuf],
    a: &SidesArgs,
    load: LoadSettings,
    options: crate::diff::DiffOptions,
) -> Result<crate::diff::Comparison, (i32, String)> {
    let req = a.request(before, after, load, options)?;
    let out = api::diff(&req).map_err(|e| (2, format!("error: {e}")))?;
    if !a.quiet {
        for (p, w) in &out.warnings {
            print_warning(p, w);
        }
    }
    Ok(out.comparison)
}

/// `diff`: the comparison in its format.
pub(super) fn run_diff(args: DiffArgs, load: LoadSettings) -> Result<(), (i32, String)> {
    let side = |one: &Option<PathBuf>, many: &[PathBuf]| -> Vec<PathBuf> {
        one.iter().chain(many).cloned().collect()
    };
    let options = crate::diff::DiffOptions {
        budget_pct: args
            .max_regression
            .unwrap_or(crate::diff::repeats::DEFAULT_BUDGET_PCT),
        ..Default::default()
    };
    let c = compare_sides(
        &side(&args.before, &args.before_runs),
        &side(&args.after, &args.after_runs),
        &args.sides,
        load,
        options,
    )?;
    let top = args.top.unwrap_or(match args.format {
        DiffFormatArg::Table | DiffFormatArg::Md => 10,
        DiffFormatArg::Html => 30,
        DiffFormatArg::Json => 0,
    });
    let mut buf = Vec::new();
    crate::diff::render::render(&c, args.format.to_report(), top, &mut buf)
        .map_err(|e| (1, format!("error: rendering the comparison: {e}")))?;
    write_out(&args.output, &buf)
}

/// `check`: the comparison judged against the budget; exit 1 on a regression, 3 when the
/// step-time verdict is inconclusive and nothing failed.
pub(super) fn run_check(args: CheckArgs, load: LoadSettings) -> Result<(), (i32, String)> {
    let file = match &args.budget {
        Some(p) => Some(
            crate::diff::check::read_budget(p).map_err(|e| (2, format!("error: budget: {e}")))?,
        ),
        None => None,
    };
    let budget = api::budget(file, args.max_regression);
    // the verdict of repeated runs is judged against the step-time limit
    let options = api::check_options(&budget);
    let req = api::CheckRequest {
        diff: args
            .sides
            .request(&args.baseline, &args.trace, load, options)?,
        budget,
    };
    let out = api::check(&req).map_err(|e| (2, format!("error: {e}")))?;
    if !args.sides.quiet {
        for (p, w) in &out.warnings {
            print_warning(p, w);
        }
    }
    let c = out.comparison;
    let Some(result) = &c.check else {
        return Err((1, "error: the comparison was not judged".to_string()));
    };
    eprintln!("{}", result.summary);
    let code = result.outcome.exit_code();
    let mut buf = Vec::new();
    crate::diff::render::render_check(&c, args.format.to_report(), &mut buf)
        .map_err(|e| (1, format!("error: rendering the comparison: {e}")))?;
    write_out(&args.output, &buf)?;
    if code != 0 {
        return Err((code, String::new()));
    }
    Ok(())
}
