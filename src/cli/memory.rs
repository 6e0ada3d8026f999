//! `stallscope memory`: where device memory goes.

use std::path::PathBuf;

use clap::ValueEnum;

use super::args::{
    input_error, parse_threads, print_warning, section_json, write_stdout, WindowArgs,
};
use crate::api::{self, LoadSettings, TraceRequest};
use crate::report;

pub(super) const MEMORY_HELP: &str = "\
Examples:
  stallscope memory trace.json.gz                  peak per device, live at the peak, churn
  stallscope memory trace.json.gz --format csv     allocated/reserved over the window
  stallscope memory memory_timeline.raw.json.gz    torch's export: bytes per category at the peak
  stallscope memory memory_timeline.raw.json.gz --format json

Exit codes: 0 ok, 2 unreadable input, bad arguments or no memory events.";

/// Output formats of `memory`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub(super) enum MemoryFormat {
    /// A summary for the terminal.
    Table,
    /// The `memory` section of the JSON report, or for an export `{"categories_at_peak": …}`.
    Json,
    /// The timeline: device, t_us, allocated and reserved bytes; for an export t_ns and one
    /// column per category.
    Csv,
}

/// `memory` flags.
#[derive(clap::Args, Debug)]
pub(super) struct MemoryArgs {
    /// Trace file (.json or .json.gz) recorded with profile_memory=True, or torch's
    /// memory-timeline export (.raw.json[.gz]), detected by content.
    pub(super) trace: PathBuf,

    #[command(flatten)]
    pub(super) window: WindowArgs,

    /// Output format.
    #[arg(long, short = 'f', value_enum, default_value_t = MemoryFormat::Table)]
    pub(super) format: MemoryFormat,

    /// Parser threads (default: all cores).
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    pub(super) threads: Option<usize>,

    /// Do not print reading warnings on stderr.
    #[arg(long, short = 'q')]
    pub(super) quiet: bool,
}

/// `memory`: torch's memory-timeline export, or the `memory` section of a trace's report.
pub(super) fn run(args: MemoryArgs, load: LoadSettings) -> Result<(), (i32, String)> {
    let req = TraceRequest {
        trace: args.trace.clone(),
        window: args.window.spec()?,
        load: LoadSettings {
            threads: args.threads,
            progress: true,
            ..load
        },
    };
    let path = req.trace.to_string_lossy().into_owned();
    let mut buf: Vec<u8> = Vec::new();
    let render = |e: std::io::Error| (1, format!("error: rendering: {e}"));
    let got = api::memory(&req, &mut |trace| {
        if !args.quiet {
            for w in &trace.warnings {
                print_warning(&path, &w.into());
            }
        }
    })
    .map_err(input_error)?;
    let rep = match got {
        api::Memory::Export(t) => {
            match args.format {
                MemoryFormat::Json => {
                    let v = report::memory_export_json(&path, &t);
                    serde_json::to_writer_pretty(&mut buf, &v)
                        .map_err(|e| (1, format!("error: rendering: {e}")))?;
                    buf.push(b'\n');
                }
                MemoryFormat::Table => {
                    report::terminal::write_memory_export(&path, &t, 100, &mut buf)
                        .map_err(render)?
                }
                MemoryFormat::Csv => {
                    report::csv::write_memory_export(&t, &mut buf).map_err(render)?
                }
            }
            return write_stdout(&buf);
        }
        api::Memory::Report(rep) => rep,
    };
    match args.format {
        MemoryFormat::Json => {
            let memory = serde_json::to_value(&rep.memory).unwrap_or_default();
            section_json(&rep, "memory", memory, &mut buf)?;
        }
        MemoryFormat::Table => {
            report::terminal::write_memory(&rep, 100, &mut buf).map_err(render)?;
        }
        MemoryFormat::Csv => {
            let opts = report::RenderOptions {
                top: 0,
                ..Default::default()
            };
            report::Renderer::render(
                &report::csv::Csv {
                    view: report::csv::View::Memory,
                },
                &rep,
                &opts,
                &mut buf,
            )
            .map_err(render)?;
        }
    }
    write_stdout(&buf)
}
