//! Command-line interface: parses arguments, runs ingest → analysis → report, sets exit codes.
//!
//! Exit codes: 0 success; 2 the input could not be read (missing, truncated, not a trace) or the
//! command line was wrong; 1 anything else (for example the output could not be written).

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::analysis::{self, AnalyzeOptions};
use crate::ingest::{self, LoadOptions};
use crate::report::{self, Renderer, Report};

const ABOUT: &str = "Tells you why your GPU workload is slow, from the profile you already have.";

const LONG_ABOUT: &str = "\
Tells you why your GPU workload is slow, from the profile you already have.

stallscope reads torch.profiler (Kineto) traces — .json, .json.gz or standard input — and prints
where each training or inference step spends its time: kernels, copies, communication, runtime
calls, the DataLoader, host work, and idle GPU time.";

const AFTER_HELP: &str = "\
Examples:
  stallscope analyze trace.pt.trace.json.gz
  stallscope analyze trace.json --format json -o report.json
  stallscope analyze trace.json --format html -o report.html
  stallscope analyze trace.json --format csv --view kernels -o kernels.csv
  stallscope analyze trace.json --top 25 --sort host-self
  zcat big.json.gz | stallscope analyze -

Exit codes: 0 ok, 2 unreadable input or bad arguments, 1 other errors.
Set NO_COLOR to disable colours.";

#[derive(Parser, Debug)]
#[command(name = "stallscope", version, about = ABOUT, long_about = LONG_ABOUT, after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Analyze a trace: steps, time breakdown, GPU summary, GPU timeline, kernels, operators.
    #[command(after_help = AFTER_HELP)]
    Analyze(AnalyzeArgs),
}

/// Output formats.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    /// Tables for the terminal.
    Table,
    /// The versioned JSON report (see docs/json-report.md).
    Json,
    /// One self-contained HTML page with charts (works offline).
    Html,
    /// GitHub-flavoured Markdown for pull requests and issues.
    Md,
    /// CSV of one table (needs --view).
    Csv,
}

/// Tables that `--format csv` can write.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum View {
    /// The kernel table.
    Kernels,
    /// The operator table.
    Ops,
    /// One row per step with its time breakdown.
    Steps,
}

/// Colour choice.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum ColorChoice {
    /// Colour when standard output is a terminal and NO_COLOR is unset or empty.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

/// Operator table order.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum OpSort {
    /// Device time of the op's own kernels (default, like the TensorBoard plugin).
    DeviceSelf,
    /// Device time including children.
    DeviceTotal,
    /// Host time minus children.
    HostSelf,
    /// Host wall time.
    HostTotal,
    /// Number of calls.
    Calls,
    /// Name.
    Name,
}

#[derive(clap::Args, Debug)]
struct AnalyzeArgs {
    /// Trace file (.json or .json.gz, detected by content), or - for standard input.
    /// Also an Nsight Systems export (.sqlite, or .nsys-rep with nsys on PATH) or an Nsight
    /// Compute CSV (its kernel table alone).
    trace: PathBuf,

    /// Nsight Compute CSV (`ncu --csv --page details|raw`) whose kernels are joined to the
    /// trace's by name and order and added to the report.
    #[arg(long, value_name = "FILE")]
    ncu: Option<PathBuf>,

    /// Output format.
    #[arg(long, short = 'f', value_enum, default_value_t = Format::Table)]
    format: Format,

    /// Write the report to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,

    /// Table written by --format csv (required with csv, not allowed otherwise).
    #[arg(long, value_enum, required_if_eq("format", "csv"))]
    view: Option<View>,

    /// Analyze every step (today's default; a steady-state window will become the default).
    #[arg(long)]
    all: bool,

    /// Rows of the kernel and operator tables (0 = all). Default: 10 in tables, all in JSON.
    #[arg(long, value_name = "N")]
    top: Option<usize>,

    /// Order of the operator table.
    #[arg(long, value_enum, default_value_t = OpSort::DeviceSelf)]
    sort: OpSort,

    /// Parser threads (default: all cores).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,

    /// Analyze what was read from a truncated file instead of failing.
    #[arg(long)]
    allow_truncated: bool,

    /// When to use colours.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    color: ColorChoice,

    /// Do not print reading warnings on stderr.
    #[arg(long, short = 'q')]
    quiet: bool,
}

/// Sorts the operator rows of a report.
pub fn sort_ops(r: &mut Report, key: OpSort) {
    let desc = |a: f64, b: f64| b.partial_cmp(&a).unwrap_or(std::cmp::Ordering::Equal);
    match key {
        OpSort::DeviceSelf => r.ops.sort_by(|a, b| {
            desc(a.device_self_us, b.device_self_us).then(desc(a.host_total_us, b.host_total_us))
        }),
        OpSort::DeviceTotal => r.ops.sort_by(|a, b| desc(a.device_total_us, b.device_total_us)),
        OpSort::HostSelf => r.ops.sort_by(|a, b| desc(a.host_self_us, b.host_self_us)),
        OpSort::HostTotal => r.ops.sort_by(|a, b| desc(a.host_total_us, b.host_total_us)),
        OpSort::Calls => r.ops.sort_by_key(|o| std::cmp::Reverse(o.calls)),
        OpSort::Name => r.ops.sort_by(|a, b| a.name.cmp(&b.name)),
    }
}

fn analyze(args: AnalyzeArgs) -> Result<(), (i32, String)> {
    if args.view.is_some() && args.format != Format::Csv {
        return Err((2, "error: --view applies only to --format csv".into()));
    }
    let path = args.trace.to_string_lossy().into_owned();
    let mut lopts = LoadOptions {
        progress_over: Some(50 << 20),
        ..LoadOptions::default()
    };
    if let Some(t) = args.threads {
        lopts.kineto.threads = t.max(1);
    }
    lopts.kineto.allow_truncated = args.allow_truncated;
    if path != "-" && ingest::ncu::looks_like(&path) {
        return analyze_ncu(&args, &path);
    }
    let trace = ingest::load(&path, &lopts).map_err(|e| (2, format!("error: {e}")))?;
    if !args.quiet {
        for w in &trace.warnings {
            let at = w
                .first_offset
                .map(|o| format!(" (first at byte {o})"))
                .unwrap_or_default();
            eprintln!("warning: {}: {} ×{}{}", path, w.message, w.count, at);
        }
    }
    let a = analysis::analyze(
        &trace,
        &AnalyzeOptions {
            all_steps: args.all,
        },
    );
    let mut rep = Report::new(&trace, &a);
    if let Some(p) = &args.ncu {
        let p = p.to_string_lossy().into_owned();
        let n = ingest::ncu::read(&p).map_err(|e| (2, format!("error: {e}")))?;
        rep.ncu = Some(report::nvidia::NcuSection::new(&n, Some(&trace)));
    }
    sort_ops(&mut rep, args.sort);

    let to_file = args.output.is_some();
    let color = match args.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            // no-color.org: set and non-empty disables colour
            let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
            !to_file && io::stdout().is_terminal() && !no_color
        }
    };
    let ropts = report::RenderOptions {
        top: args.top.unwrap_or(match args.format {
            Format::Table | Format::Md => 10,
            Format::Html => 50,
            Format::Json | Format::Csv => 0,
        }),
        color,
        width: 100,
    };
    if args.format == Format::Json && ropts.top > 0 {
        rep.kernels.truncate(ropts.top);
        rep.ops.truncate(ropts.top);
    }
    let renderer: Box<dyn Renderer> = match args.format {
        Format::Table => Box::new(report::terminal::Terminal),
        Format::Json => Box::new(report::json::Json),
        Format::Html => Box::new(report::html::Html),
        Format::Md => Box::new(report::markdown::Markdown),
        Format::Csv => Box::new(report::csv::Csv {
            view: match args.view {
                Some(View::Kernels) => report::csv::View::Kernels,
                Some(View::Ops) => report::csv::View::Ops,
                Some(View::Steps) | None => report::csv::View::Steps,
            },
        }),
    };
    let mut buf: Vec<u8> = Vec::new();
    renderer
        .render(&rep, &ropts, &mut buf)
        .map_err(|e| (1, format!("error: rendering the report: {e}")))?;
    match &args.output {
        Some(p) => std::fs::write(p, &buf)
            .map_err(|e| (1, format!("error: {}: {e}", p.display())))?,
        None => {
            let mut out = io::stdout().lock();
            if let Err(e) = out.write_all(&buf).and_then(|_| out.flush()) {
                if e.kind() != io::ErrorKind::BrokenPipe {
                    return Err((1, format!("error: writing to standard output: {e}")));
                }
            }
        }
    }
    Ok(())
}

/// `stallscope analyze KERNELS.csv`: the Nsight Compute kernel table alone (table or JSON).
fn analyze_ncu(args: &AnalyzeArgs, path: &str) -> Result<(), (i32, String)> {
    if args.ncu.is_some() {
        return Err((
            2,
            "error: --ncu joins an Nsight Compute CSV to a trace; the input is already one".into(),
        ));
    }
    let n = ingest::ncu::read(path).map_err(|e| (2, format!("error: {e}")))?;
    let section = report::nvidia::NcuSection::new(&n, None);
    let mut buf: Vec<u8> = Vec::new();
    let written = match args.format {
        Format::Table => {
            report::nvidia::write_ncu(&section, args.top.unwrap_or(10), 100, &mut buf)
        }
        Format::Json => {
            // the versioned report of an empty timeline, with its `ncu` section
            let mut trace = crate::model::build::TraceBuilder::new().build();
            trace.threads.clear();
            trace.source.path = path.to_string();
            trace.source.format = crate::model::SourceFormat::NcuCsv;
            trace.source.bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            trace.source.events = section.launches.len() as u64;
            let a = analysis::analyze(&trace, &AnalyzeOptions::default());
            let mut rep = Report::new(&trace, &a);
            rep.ncu = Some(section);
            report::json::Json.render(&rep, &report::RenderOptions {
                top: 0,
                color: false,
                width: 100,
            }, &mut buf)
        }
        _ => {
            return Err((
                2,
                "error: an Nsight Compute CSV alone renders as --format table or json; use \
                 --ncu FILE beside a trace for the other formats"
                    .into(),
            ))
        }
    };
    written.map_err(|e| (1, format!("error: rendering the report: {e}")))?;
    match &args.output {
        Some(p) => std::fs::write(p, &buf).map_err(|e| (1, format!("error: {}: {e}", p.display()))),
        None => {
            let mut out = io::stdout().lock();
            match out.write_all(&buf).and_then(|_| out.flush()) {
                Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
                    Err((1, format!("error: writing to standard output: {e}")))
                }
                _ => Ok(()),
            }
        }
    }
}

/// Runs the CLI with the process arguments; returns the exit code.
pub fn run() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    let result = match cli.command {
        Command::Analyze(a) => analyze(a),
    };
    match result {
        Ok(()) => 0,
        Err((code, msg)) => {
            eprintln!("{msg}");
            code
        }
    }
}
