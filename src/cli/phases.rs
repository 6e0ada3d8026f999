//! `stallscope phases`: the tree of annotations with the GPU time each launched.

use std::path::PathBuf;

use clap::ValueEnum;

use super::args::{
    input_error, parse_threads, print_warning, section_json, write_stdout, WindowArgs,
};
use crate::api::{self, LoadSettings, TraceRequest};
use crate::report;

pub(super) const PHASES_HELP: &str = "\
Examples:
  stallscope phases trace.json.gz                    # steady state, three levels deep
  stallscope phases trace.json.gz --depth 0 --all    # the whole tree over every step
  stallscope phases trace.json.gz --focus denoise    # inside `denoise` only
  stallscope phases trace.json.gz --format json | jq '.phases[] | select(.depth == 0)'

Columns: calls in the window; CPU wall time (total, mean per call); device activities
(kernels, copies, fills) launched inside the phase or below it, and their summed GPU time;
GPU span = union over calls of first-to-last device activity; share = GPU span ÷ window time;
bwd (training traces) = the part of the GPU time launched by backward (autograd) code.
Kernels launched outside every annotation are `(unannotated)`; backward work launched on the
autograd thread counts under the main thread's annotation around it (e.g. `## backward ##`).

Window (all commands): by default the steady state — every ProfilerStep except warm-up steps
with torch.compile/autotune work and outliers over 1.5× the median; see `analyze --help`.";

/// Phases output formats.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub(super) enum PhasesFormat {
    /// An indented tree for the terminal.
    Table,
    /// `{"window": …, "phases": […]}` with the fields of the JSON report.
    Json,
}

/// `phases` flags.
#[derive(clap::Args, Debug)]
pub(super) struct PhasesArgs {
    /// Trace file (.json or .json.gz, detected by content), or - for standard input.
    pub(super) trace: PathBuf,

    #[command(flatten)]
    pub(super) window: WindowArgs,

    /// Levels of the tree to print (0 = all).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub(super) depth: u32,

    /// Output format.
    #[arg(long, short = 'f', value_enum, default_value_t = PhasesFormat::Table)]
    pub(super) format: PhasesFormat,

    /// Parser threads (default: all cores).
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    pub(super) threads: Option<usize>,

    /// Analyze what was read from a truncated file instead of failing.
    #[arg(long)]
    pub(super) allow_truncated: bool,

    /// Do not print reading warnings on stderr.
    #[arg(long, short = 'q')]
    pub(super) quiet: bool,
}

/// `phases`: the report's `phases` section as a tree, or as JSON.
pub(super) fn run(args: PhasesArgs, load: LoadSettings) -> Result<(), (i32, String)> {
    let req = TraceRequest {
        trace: args.trace.clone(),
        window: args.window.spec()?,
        load: LoadSettings {
            threads: args.threads,
            allow_truncated: args.allow_truncated,
            progress: true,
            ..load
        },
    };
    let path = req.trace.to_string_lossy().into_owned();
    let rep = api::phases(&req, &mut |trace| {
        if !args.quiet {
            for w in &trace.warnings {
                print_warning(&path, &w.into());
            }
        }
    })
    .map_err(input_error)?;
    let mut buf: Vec<u8> = Vec::new();
    match args.format {
        PhasesFormat::Json => {
            let phases = serde_json::to_value(&rep.phases).unwrap_or_default();
            section_json(&rep, "phases", phases, &mut buf)?;
        }
        PhasesFormat::Table => {
            report::terminal::write_phases_tree(&rep, args.depth, 100, &mut buf)
                .map_err(|e| (1, format!("error: rendering: {e}")))?;
        }
    }
    write_stdout(&buf)
}
