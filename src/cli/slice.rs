//! `stallscope slice`: one window of a trace written back out.

use std::path::PathBuf;

use super::args::{input_error, parse_threads, print_warning, WindowArgs};
use crate::api::{self, LoadSettings, TraceRequest};

pub(super) const SLICE_HELP: &str = "\
Examples:
  stallscope slice big.pt.trace.json.gz --steps 4..5 -o small.json.gz
  stallscope slice big.pt.trace.json.gz -o steady.json          # the automatic steady state
  stallscope slice big.pt.trace.json.gz --time 0..200000 -o first200ms.json
  stallscope slice big.pt.trace.json.gz --focus vae_decode -o decode.json.gz

The slice keeps metadata events, top-level members (deviceProperties, distributedInfo, ...),
every event overlapping the window and the flows whose both ends are inside; `stallscope
analyze` of the slice gives the same per-step numbers as the original for those steps. The
input is streamed (memory stays far below the file size); output is gzip when its name ends in
.gz. The input is read twice (steps first, then the copy), so it must be a file, not stdin.

Window (all commands): by default the steady state; see `analyze --help`.";

/// `slice` flags.
#[derive(clap::Args, Debug)]
pub(super) struct SliceArgs {
    /// Trace file (.json or .json.gz, detected by content).
    pub(super) trace: PathBuf,

    #[command(flatten)]
    pub(super) window: WindowArgs,

    /// Output file; gzip when it ends in .gz.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub(super) output: PathBuf,

    /// Parser threads for the first reading (default: all cores).
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    pub(super) threads: Option<usize>,

    /// Do not print reading warnings on stderr.
    #[arg(long, short = 'q')]
    pub(super) quiet: bool,
}

/// `slice`: the window planned and written, and what was kept said on stderr.
pub(super) fn run(args: SliceArgs, load: LoadSettings) -> Result<(), (i32, String)> {
    let window = args.window.spec()?;
    let req = TraceRequest {
        trace: args.trace.clone(),
        window,
        load: LoadSettings {
            threads: args.threads,
            progress: true,
            ..load
        },
    };
    let path = req.trace.to_string_lossy().into_owned();
    let wp = api::plan_slice(&req, &mut |trace| {
        if !args.quiet {
            for w in &trace.warnings {
                print_warning(&path, &w.into());
            }
        }
    })
    .map_err(input_error)?;
    for e in &wp.excluded {
        if !args.quiet && !e.reason.starts_with("not selected") {
            eprintln!("excluded {}: {}", e.step, e.reason);
        }
    }
    let stats = api::write_slice(&req, &args.output, &wp).map_err(input_error)?;
    eprintln!(
        "{}: {} of {} events ({}; {} flow events without their other end dropped) → {}",
        args.output.display(),
        stats.events_out,
        stats.events_in,
        wp.steps_desc,
        stats.flows_dropped,
        crate::report::terminal::fmt_bytes(stats.bytes_out),
    );
    if stats.skipped > 0 {
        eprintln!(
            "warning: {} events that are not valid JSON were dropped",
            stats.skipped
        );
    }
    Ok(())
}
