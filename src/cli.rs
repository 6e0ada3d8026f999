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

/// The reading limits of this run (`--limit`, `--max-inflate`), set once the arguments are
/// parsed and applied by [`base_load_options`].
static LIMITS: std::sync::Mutex<Option<ingest::limits::Limits>> = std::sync::Mutex::new(None);

/// The limits of `--limit` and `--max-inflate` over the defaults.
fn parse_limits(cli: &Cli) -> Result<ingest::limits::Limits, String> {
    let mut l = ingest::limits::Limits::default();
    for spec in &cli.limit {
        l.set(spec)?;
    }
    if let Some(m) = &cli.max_inflate {
        l.set_max_inflate(m)?;
    }
    Ok(l)
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
    /// regression over its threshold and beyond noise, 2 on unreadable input.
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

const MEMORY_HELP: &str = "\
Examples:
  stallscope memory trace.json.gz                  peak per device, live at the peak, churn
  stallscope memory trace.json.gz --format csv     allocated/reserved over the window
  stallscope memory memory_timeline.raw.json.gz    torch's export: bytes per category at the peak
  stallscope memory memory_timeline.raw.json.gz --format json

Exit codes: 0 ok, 2 unreadable input, bad arguments or no memory events.";

/// Output formats of `memory`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum MemoryFormat {
    /// A summary for the terminal.
    Table,
    /// The `memory` section of the JSON report, or for an export `{"categories_at_peak": …}`.
    Json,
    /// The timeline: device, t_us, allocated and reserved bytes; for an export t_ns and one
    /// column per category.
    Csv,
}

#[derive(clap::Args, Debug)]
struct MemoryArgs {
    /// Trace file (.json or .json.gz) recorded with profile_memory=True, or torch's
    /// memory-timeline export (.raw.json[.gz]), detected by content.
    trace: PathBuf,

    #[command(flatten)]
    window: WindowArgs,

    /// Output format.
    #[arg(long, short = 'f', value_enum, default_value_t = MemoryFormat::Table)]
    format: MemoryFormat,

    /// Parser threads (default: all cores).
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    threads: Option<usize>,

    /// Do not print reading warnings on stderr.
    #[arg(long, short = 'q')]
    quiet: bool,
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
    /// Parquet tables for SQL engines, one file per table into the folder -o DIR (see
    /// docs/parquet.md): steps, GPU timeline, kernels, operators, collectives, findings (and
    /// ranks, for a folder), each row with the job (--job) and the rank.
    Parquet,
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
    /// One row per phase (annotation path) with the device time it launched.
    Phases,
    /// One row per rank (a folder of per-rank traces).
    Ranks,
    /// Device memory over the window: allocated and reserved bytes per device, at most 600
    /// points each (needs `profile_memory=True`).
    Memory,
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
    /// Compute CSV (its kernel table alone). A folder of per-rank traces (*.json,
    /// *.json.gz) gives a table of the ranks, cross-rank findings and the full report of the
    /// slowest rank; a folder of rank summaries (*.summary.json, `stallscope summarize`) gives
    /// the same report from them (see `stallscope merge`).
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

    /// --format parquet: the `job` column of every row (default: the input's file or folder
    /// name), so that the tables of several jobs can be queried together.
    #[arg(long, value_name = "NAME")]
    job: Option<String>,

    #[command(flatten)]
    window: WindowArgs,

    /// Rows of the kernel and operator tables (0 = all). Default: 10 in tables, all in JSON.
    #[arg(long, value_name = "N")]
    top: Option<usize>,

    /// Order of the operator table.
    #[arg(long, value_enum, default_value_t = OpSort::DeviceSelf)]
    sort: OpSort,

    /// Parser and analysis threads per file (default: all cores; 1 runs the analyses one
    /// after another; for a folder, the cores are shared by the jobs).
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    threads: Option<usize>,

    /// Folder: rank files loaded and analysed at once (default: 2 or the number of cores,
    /// whichever is smaller). Peak memory grows with it: about N × one rank.
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<usize>,

    /// Folder: show this rank's full report under the rank table (default: the slowest rank).
    #[arg(long, value_name = "N")]
    rank: Option<i64>,

    /// Analyze what was read from a truncated file instead of failing.
    #[arg(long)]
    allow_truncated: bool,

    /// Keep device timestamps as recorded. By default, when every activity of a device starts
    /// over 1 ms after (or before) its launch and at least 3 launches that reached an idle
    /// device agree on that delay, the device's clock is taken as offset and shifted back
    /// (the capture check says by how much); use this to compare with the raw times.
    #[arg(long)]
    no_clock_correction: bool,

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
        OpSort::DeviceTotal => r
            .ops
            .sort_by(|a, b| desc(a.device_total_us, b.device_total_us)),
        OpSort::HostSelf => r.ops.sort_by(|a, b| desc(a.host_self_us, b.host_self_us)),
        OpSort::HostTotal => r.ops.sort_by(|a, b| desc(a.host_total_us, b.host_total_us)),
        OpSort::Calls => r.ops.sort_by_key(|o| std::cmp::Reverse(o.calls)),
        OpSort::Name => r.ops.sort_by(|a, b| a.name.cmp(&b.name)),
    }
}

/// `--threads N`: a positive count (0 used to mean one parser thread, unlike the analyses'
/// "automatic"; leave the flag out for all cores).
fn parse_threads(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1 (leave --threads out to use every core)".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// Load settings every command starts from: a progress bar over 50 MB, the memory map
/// unless `STALLSCOPE_NO_MMAP` is set (for benchmarks and for files that may shrink while
/// read), and chain blocks unless `STALLSCOPE_NO_CHAIN` is set (for benchmarks).
fn base_load_options() -> LoadOptions {
    let mut o = LoadOptions {
        progress_over: Some(50 << 20),
        no_mmap: std::env::var_os("STALLSCOPE_NO_MMAP").is_some(),
        ..LoadOptions::default()
    };
    o.kineto.chain = std::env::var_os("STALLSCOPE_NO_CHAIN").is_none();
    if let Some(l) = *LIMITS.lock().unwrap_or_else(|e| e.into_inner()) {
        o.kineto.limits = l;
    }
    o
}

/// [`base_load_options`] with a request's parser threads, truncation choice and progress bar.
fn request_load_options(
    threads: Option<usize>,
    allow_truncated: bool,
    progress: bool,
) -> LoadOptions {
    let mut lopts = base_load_options();
    if !progress {
        lopts.progress_over = None;
    }
    if let Some(t) = threads {
        lopts.kineto.threads = t.max(1);
    }
    lopts.kineto.allow_truncated = allow_truncated;
    lopts
}

/// What `analyze` is asked to read and which window to analyze: the command's arguments less
/// the output ones. The command builds one from its flags, the Python module from its keyword
/// arguments, and both get the same [`Report`] from [`analyze_request`].
#[derive(Debug, Clone, Default)]
pub struct AnalyzeRequest {
    /// A trace file, `-` for standard input, a folder of per-rank traces, an Nsight Systems
    /// export or an Nsight Compute CSV.
    pub trace: PathBuf,
    /// An Nsight Compute CSV joined to the trace's kernels (`--ncu`).
    pub ncu: Option<PathBuf>,
    /// The window (`--all`, `--steps`, `--time`, `--focus`; default the steady state).
    pub window: crate::window::WindowSpec,
    /// Parser and analysis threads per file (`--threads`; `None` = every core).
    pub threads: Option<usize>,
    /// Folder: rank files at once (`--jobs`; `None` = the default).
    pub jobs: Option<usize>,
    /// Folder: the rank whose full report is given (`--rank`; `None` = the slowest).
    pub rank: Option<i64>,
    /// Analyze what was read from a truncated file instead of failing.
    pub allow_truncated: bool,
    /// Show a progress bar on stderr for large inputs when stderr is a terminal.
    pub progress: bool,
    /// Keep device timestamps as recorded (`--no-clock-correction`; see
    /// [`crate::model::clock`]).
    pub no_clock_correction: bool,
}

/// Why [`analyze_request`] gave no report. Both are the command's exit code 2.
#[derive(Debug)]
pub enum AnalyzeError {
    /// The input (or the `--ncu` file) could not be read: names the file and, when known,
    /// the byte offset.
    Input(ingest::LoadError),
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

/// A report and what reading produced on the side.
#[derive(Debug)]
pub struct Analyzed {
    /// The report, with every kernel and operator row (sort them with [`sort_ops`]).
    pub report: Report,
    /// Reading warnings, each with the file it came from (every rank's for a folder).
    pub warnings: Vec<(String, crate::model::Warning)>,
    /// The input was an Nsight Compute CSV alone (the report has only its findings and
    /// `ncu` section; the command renders it as a table or JSON only).
    pub ncu_alone: bool,
}

/// Runs ingest → analysis → diagnosis for one request and returns the report the command
/// renders (before `--sort` and `--top`). `timings` gets the load / analyze / report laps.
pub fn analyze_request(
    req: &AnalyzeRequest,
    timings: &mut crate::timings::Timings,
) -> Result<Analyzed, AnalyzeError> {
    analyze_request_with(req, timings, &|_, _| {})
}

/// A consumer of each rank's full report: `(rank, report)` ([`analyze_request_with`]).
pub type EachReport<'a> = dyn Fn(i64, &Report) + Sync + 'a;

/// [`analyze_request`], handing every rank's full report to `each` with its rank: each rank
/// of a folder as it is done (any order), or the one trace (its `distributedInfo` rank, else
/// 0). Not called for an Nsight Compute CSV alone. `--format parquet` collects its tables so.
pub fn analyze_request_with(
    req: &AnalyzeRequest,
    timings: &mut crate::timings::Timings,
    each: &EachReport<'_>,
) -> Result<Analyzed, AnalyzeError> {
    let path = req.trace.to_string_lossy().into_owned();
    let mut lopts = request_load_options(req.threads, req.allow_truncated, req.progress);
    lopts.no_clock_correction = req.no_clock_correction;
    if path != "-" && ingest::ncu::looks_like(&path) {
        return analyze_ncu(req, &path);
    }
    if path != "-" && !req.trace.is_dir() && ingest::torch_memory::is_export(&path) {
        return Err(AnalyzeError::Request(format!(
            "{path} is torch's memory-timeline export, not a trace: \
             `stallscope memory {path}` reads it"
        )));
    }
    let out = if path != "-" && req.trace.is_dir() {
        analyze_folder(req, lopts, each)?
    } else {
        if req.rank.is_some() {
            return Err(AnalyzeError::Request(
                "--rank applies to a folder of per-rank traces".into(),
            ));
        }
        let mut trace = ingest::load(&path, &lopts).map_err(AnalyzeError::Input)?;
        timings.lap("load");
        let mut warnings: Vec<(String, crate::model::Warning)> = trace
            .warnings
            .iter()
            .map(|w| (path.clone(), w.clone()))
            .collect();
        let aopts = AnalyzeOptions {
            threads: req.threads.unwrap_or(0),
            window: req.window.clone(),
            ..AnalyzeOptions::default()
        };
        let mut a = analysis::try_analyze(&trace, &aopts)
            .map_err(|e| AnalyzeError::Request(e.to_string()))?;
        if let Some(p) = &req.ncu {
            let p = p.to_string_lossy().into_owned();
            let n = ingest::ncu::read(&p).map_err(AnalyzeError::Input)?;
            warnings.extend(n.warnings.iter().map(|w| (p.clone(), w.clone())));
            let steps = a.steps.steps.len();
            a.ncu = Some(analysis::ncu::joined(&trace, &a.selection, steps, &n));
        }
        timings.lap("analyze");
        if let Some(n) = &a.ncu {
            trace.warnings.extend(n.report.warnings.iter().cloned());
        }
        let report = Report::new(&trace, &a);
        each(
            trace.distributed.as_ref().and_then(|d| d.rank).unwrap_or(0),
            &report,
        );
        timings.lap("diagnose+report");
        drop(a);
        drop(trace);
        timings.lap("free");
        Analyzed {
            report,
            warnings,
            ncu_alone: false,
        }
    };
    Ok(out)
}

fn analyze(args: AnalyzeArgs) -> Result<(), (i32, String)> {
    if args.view.is_some() && args.format != Format::Csv {
        return Err((2, "error: --view applies only to --format csv".into()));
    }
    let req = AnalyzeRequest {
        trace: args.trace.clone(),
        ncu: args.ncu.clone(),
        window: args.window.spec()?,
        threads: args.threads,
        jobs: args.jobs,
        rank: args.rank,
        allow_truncated: args.allow_truncated,
        progress: true,
        no_clock_correction: args.no_clock_correction,
    };
    if args.job.is_some() && args.format != Format::Parquet {
        return Err((2, "error: --job applies only to --format parquet".into()));
    }
    let tables = (args.format == Format::Parquet)
        .then(|| parquet_tables(&args))
        .transpose()?
        .map(std::sync::Mutex::new);
    let mut timings = crate::timings::Timings::from_env();
    let each = |rank: i64, r: &Report| {
        if let Some(t) = &tables {
            add_rank_tables(t, rank, r);
        }
    };
    let out =
        analyze_request_with(&req, &mut timings, &each).map_err(|e| (2, format!("error: {e}")))?;
    emit(&args, out, &mut timings, tables)
}

/// Writes an analysis as `args` ask: warnings on stderr, then the report in its format
/// (`analyze`, and `merge` with the same output flags); `tables` are the Parquet tables
/// collected from every rank's report for `--format parquet`.
fn emit(
    args: &AnalyzeArgs,
    out: Analyzed,
    timings: &mut crate::timings::Timings,
    tables: Option<std::sync::Mutex<ParquetTables>>,
) -> Result<(), (i32, String)> {
    if !args.quiet {
        for (p, w) in &out.warnings {
            print_warning(p, w);
        }
    }
    if let Some(r) = &out.report.ranks {
        // skipped files and duplicate ranks are said even with --quiet: they change the table
        for k in &r.skipped {
            let line = format!("warning: skipped (not in the rank table): {}", k.error);
            eprintln!("{}", crate::text::printable(&line));
        }
        for d in &r.duplicates {
            eprintln!(
                "warning: rank {} appears in {} files: {}",
                d.rank,
                d.files.len(),
                d.files.join(", ")
            );
        }
    }
    if out.ncu_alone {
        return render_ncu(args, &out.report);
    }
    if let Some(t) = tables {
        return write_parquet(args, t, &out.report);
    }
    let mut rep = out.report;
    sort_ops(&mut rep, args.sort);
    if args.view == Some(View::Ranks) && rep.ranks.is_none() {
        return Err((
            2,
            "error: --view ranks needs a folder of per-rank traces".into(),
        ));
    }

    if args.view == Some(View::Memory) && rep.memory.is_none() {
        return Err((
            2,
            format!(
                "error: --view memory needs memory events, and {} has none (record \
                 with `torch.profiler.profile(profile_memory=True)`)",
                args.trace.display()
            ),
        ));
    }

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
            Format::Json | Format::Csv | Format::Parquet => 0,
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
        // written by write_parquet above
        Format::Parquet => return Err((1, "error: --format parquet needs -o DIR".into())),
        Format::Csv => Box::new(report::csv::Csv {
            view: match args.view {
                Some(View::Kernels) => report::csv::View::Kernels,
                Some(View::Ops) => report::csv::View::Ops,
                Some(View::Steps) | None => report::csv::View::Steps,
                Some(View::Phases) => report::csv::View::Phases,
                Some(View::Ranks) => report::csv::View::Ranks,
                Some(View::Memory) => report::csv::View::Memory,
            },
        }),
    };
    let mut buf: Vec<u8> = Vec::new();
    renderer
        .render(&rep, &ropts, &mut buf)
        .map_err(|e| (1, format!("error: rendering the report: {e}")))?;
    timings.lap("render");
    match &args.output {
        Some(p) => {
            std::fs::write(p, &buf).map_err(|e| (1, format!("error: {}: {e}", p.display())))?
        }
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

#[cfg(feature = "parquet")]
type ParquetTables = report::parquet::Tables;
#[cfg(not(feature = "parquet"))]
type ParquetTables = ();

/// `--format parquet`: checks that -o names a folder (Parquet is never written to standard
/// output) and starts the tables of the job (`--job`, else the input's file or folder name).
fn parquet_tables(args: &AnalyzeArgs) -> Result<ParquetTables, (i32, String)> {
    let Some(dir) = &args.output else {
        return Err((
            2,
            "error: --format parquet writes one file per table into a folder: give -o DIR \
             (it is never written to standard output)"
                .into(),
        ));
    };
    if dir.exists() && !dir.is_dir() {
        return Err((
            2,
            format!(
                "error: -o {}: --format parquet writes a folder of tables, and this is a file",
                dir.display()
            ),
        ));
    }
    #[cfg(feature = "parquet")]
    {
        let job = match &args.job {
            Some(j) => j.clone(),
            None if args.trace.as_os_str() == "-" => "stdin".to_string(),
            None => crate::text::file_name(&args.trace.to_string_lossy()),
        };
        Ok(report::parquet::Tables::new(&job))
    }
    #[cfg(not(feature = "parquet"))]
    Err((
        2,
        "error: this stallscope was built without the `parquet` feature".into(),
    ))
}

/// Adds one rank's report to the Parquet tables (from the analysis workers).
fn add_rank_tables(t: &std::sync::Mutex<ParquetTables>, rank: i64, r: &Report) {
    let mut t = t.lock().unwrap_or_else(|e| e.into_inner());
    #[cfg(feature = "parquet")]
    t.add_rank(rank, r);
    #[cfg(not(feature = "parquet"))]
    let _ = (&mut t, rank, r);
}

/// Writes the Parquet tables of `--format parquet` into `-o DIR`, the folder's `ranks`
/// section included, and says on stderr what was written.
fn write_parquet(
    args: &AnalyzeArgs,
    t: std::sync::Mutex<ParquetTables>,
    rep: &Report,
) -> Result<(), (i32, String)> {
    let mut t = t.into_inner().unwrap_or_else(|e| e.into_inner());
    let dir = args.output.clone().unwrap_or_default();
    #[cfg(feature = "parquet")]
    {
        if let Some(sec) = &rep.ranks {
            t.add_ranks_section(sec);
        }
        let files = t
            .write_dir(&dir)
            .map_err(|e| (1, format!("error: writing Parquet: {e}")))?;
        if !args.quiet {
            eprintln!(
                "wrote {} Parquet tables of job {:?} to {}",
                files.len(),
                t.job(),
                dir.display()
            );
        }
        Ok(())
    }
    #[cfg(not(feature = "parquet"))]
    {
        let _ = (&mut t, rep);
        Err((2, format!("error: {}: no parquet feature", dir.display())))
    }
}

/// A reading warning on stderr; names and keys in it come from the file and are shown as
/// text ([`crate::text::printable`]).
fn print_warning(path: &str, w: &crate::model::Warning) {
    let at = w
        .first_offset
        .map(|o| format!(" (first at byte {o})"))
        .unwrap_or_default();
    let line = format!("warning: {}: {} ×{}{}", path, w.message, w.count, at);
    eprintln!("{}", crate::text::printable(&line));
}

/// `stallscope analyze FOLDER`: every rank file with at most `jobs` at once; the report of
/// the slowest rank (or `rank`) with the `ranks` section.
fn analyze_folder(
    req: &AnalyzeRequest,
    mut lopts: LoadOptions,
    each: &EachReport<'_>,
) -> Result<Analyzed, AnalyzeError> {
    if req.ncu.is_some() {
        return Err(AnalyzeError::Request(
            "--ncu joins an Nsight Compute CSV to one trace, not to a folder".into(),
        ));
    }
    let jobs = req
        .jobs
        .unwrap_or_else(crate::multirank::default_jobs)
        .max(1);
    if let Some(out) = summaries_folder(req, jobs)? {
        return Ok(out);
    }
    // one progress bar for the folder (multirank::folder_bar), not one per file; parser
    // threads share the cores
    if req.threads.is_none() {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        lopts.kineto.threads = (cores / jobs).max(1);
    }
    let opts = crate::multirank::FolderOptions {
        load: lopts,
        analyze: AnalyzeOptions {
            window: req.window.clone(),
            ..AnalyzeOptions::default()
        },
        jobs,
        rank: req.rank,
    };
    let each = |f: &crate::analysis::ranks::RankFacts, r: &Report| each(f.rank, r);
    let out =
        crate::multirank::analyze_folder_with(&req.trace, &opts, &each).map_err(|e| match e {
            crate::multirank::FolderError::Input(e) => AnalyzeError::Input(e),
            crate::multirank::FolderError::NoSuchRank(m) => {
                AnalyzeError::Request(m.strip_prefix("error: ").unwrap_or(&m).to_string())
            }
        })?;
    Ok(Analyzed {
        report: out.report,
        warnings: out.warnings,
        ncu_alone: false,
    })
}

/// `stallscope analyze KERNELS.csv`: the Nsight Compute findings (weighted by ncu's own
/// durations) and kernel table alone.
fn analyze_ncu(req: &AnalyzeRequest, path: &str) -> Result<Analyzed, AnalyzeError> {
    if req.ncu.is_some() {
        return Err(AnalyzeError::Request(
            "--ncu joins an Nsight Compute CSV to a trace; the input is already one".into(),
        ));
    }
    let (trace, a) = analysis::ncu_alone(path).map_err(AnalyzeError::Input)?;
    Ok(Analyzed {
        report: Report::new(&trace, &a),
        warnings: trace
            .warnings
            .iter()
            .map(|w| (path.to_string(), w.clone()))
            .collect(),
        ncu_alone: true,
    })
}

/// Writes the report of an Nsight Compute CSV alone: its findings and kernel table, or JSON.
fn render_ncu(args: &AnalyzeArgs, rep: &Report) -> Result<(), (i32, String)> {
    let mut buf: Vec<u8> = Vec::new();
    let written = match args.format {
        Format::Table => {
            let color = match args.color {
                ColorChoice::Always => true,
                ColorChoice::Never => false,
                ColorChoice::Auto => {
                    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
                    args.output.is_none() && io::stdout().is_terminal() && !no_color
                }
            };
            report::terminal::write_findings(rep, 100, color, &mut buf).and_then(|_| {
                match &rep.ncu {
                    Some(s) => report::nvidia::write_ncu(s, args.top.unwrap_or(10), 100, &mut buf),
                    None => Ok(()),
                }
            })
        }
        Format::Json => report::json::Json.render(
            rep,
            &report::RenderOptions {
                top: 0,
                color: false,
                width: 100,
            },
            &mut buf,
        ),
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
        None => write_stdout(&buf),
    }
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
    match parse_limits(&cli) {
        Ok(l) => *LIMITS.lock().unwrap_or_else(|e| e.into_inner()) = Some(l),
        Err(m) => {
            eprintln!("error: {m}");
            return 2;
        }
    }
    let result = match cli.command {
        Command::Analyze(a) => analyze(a),
        Command::Phases(a) => phases(a),
        Command::Slice(a) => slice(a),
        Command::Memory(a) => memory(a),
        Command::Diff(a) => diff(a),
        Command::Check(a) => check(a),
        Command::Summarize(a) => summarize(a),
        Command::Merge(a) => merge(a),
        #[cfg(feature = "mcp")]
        Command::Mcp(a) => return mcp(a),
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

const WINDOW_HELP: &str = "\
Window (all commands): by default the steady state — every ProfilerStep except warm-up steps
that contain torch.compile/autotune work and outliers over 1.5× the median step; the report
says which steps were left out and why, and how much compile work there was. Inference-server
captures (vLLM execute_*, SGLang step[…]/run_batch, one cudaGraphLaunch per decode) have no
ProfilerStep: each iteration is a step (Iteration#1, #2, …; prefill, decode, mixed compared
with their own kind), and the report names the rule that found them.
  --all               every step
  --steps 3..6        ProfilerStep#3 to #6, or Iteration#3 to #6 (inclusive); also 5, 3.., ..6
  --time 1000..2500   µs from the start of the trace (as in the report's start_us)
  --focus denoise     only the time inside annotations named `denoise` (exact name, else
                      names containing it), each up to the end of the GPU work it launched;
                      combines with --all/--steps/--time";

const PHASES_HELP: &str = "\
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

const SLICE_HELP: &str = "\
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

#[cfg(feature = "mcp")]
const MCP_HELP: &str = "\
Configure it in your MCP client (it starts the server itself):
  claude mcp add stallscope -- stallscope mcp          # Claude Code
  {\"mcpServers\": {\"stallscope\": {\"command\": \"stallscope\", \"args\": [\"mcp\"]}}}
                                                       # Cursor (.cursor/mcp.json) and others

The server reads only trace files under the client's MCP roots (when the client offers roots),
else under its working directory, or under the --root folders when given; it writes only into
a temporary folder, or to a .json/.json.gz output the client names under those folders.
Analyses are cached per file (path, size, modification time) and window. Tools and their
input schemas: docs/mcp.md. Standard output carries the protocol; messages go to stderr.";

/// `stallscope mcp` options.
#[cfg(feature = "mcp")]
#[derive(clap::Args, Debug)]
struct McpArgs {
    /// Allow reading traces under DIR (repeatable). Default: the client's roots, else the
    /// working directory.
    #[arg(long, value_name = "DIR")]
    root: Vec<PathBuf>,

    /// Reports kept in memory at most.
    #[arg(long, value_name = "N", default_value_t = 16)]
    cache_entries: usize,

    /// Estimated memory of the kept reports at most, MB (0 keeps none).
    #[arg(long, value_name = "MB", default_value_t = 512)]
    cache_mb: usize,

    /// Parser and analysis threads per call (default: all cores).
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    threads: Option<usize>,
}

#[cfg(feature = "mcp")]
fn mcp(args: McpArgs) -> i32 {
    for r in &args.root {
        if !r.is_dir() {
            eprintln!("error: --root {}: not a folder", r.display());
            return 2;
        }
    }
    crate::mcp::serve(crate::mcp::ServeOptions {
        roots: args.root,
        cache_entries: args.cache_entries,
        cache_bytes: args.cache_mb.saturating_mul(1 << 20),
        threads: args.threads,
    })
}

/// Window selection flags shared by `analyze`, `phases` and `slice`.
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = "Window", after_long_help = WINDOW_HELP)]
struct WindowArgs {
    /// Analyze every step (default: the steady state, without compile warm-up and outliers).
    #[arg(long, conflicts_with_all = ["steps", "time"])]
    all: bool,

    /// Only these ProfilerStep numbers, inclusive: 3..6, 5, 3.. or ..6.
    #[arg(long, value_name = "A..B", value_parser = crate::window::parse_steps, conflicts_with = "time")]
    steps: Option<crate::window::WindowSpec>,

    /// Only this time range, in µs from the start of the trace: 1000..2500 (ends may be open).
    #[arg(long, value_name = "START..END", value_parser = crate::window::parse_time)]
    time: Option<crate::window::WindowSpec>,

    /// Only the time inside annotations named NAME (exact, else containing NAME), e.g. denoise.
    #[arg(long, value_name = "NAME")]
    focus: Option<String>,
}

impl WindowArgs {
    fn spec(&self) -> Result<crate::window::WindowSpec, (i32, String)> {
        crate::window::WindowSpec::compose(
            self.all,
            self.steps.clone(),
            self.time.clone(),
            self.focus.clone(),
        )
        .map_err(|e| (2, format!("error: {e}")))
    }

    fn options(&self) -> Result<AnalyzeOptions, (i32, String)> {
        Ok(AnalyzeOptions {
            window: self.spec()?,
            ..AnalyzeOptions::default()
        })
    }
}

/// Phases output formats.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum PhasesFormat {
    /// An indented tree for the terminal.
    Table,
    /// `{"window": …, "phases": […]}` with the fields of the JSON report.
    Json,
}

#[derive(clap::Args, Debug)]
struct PhasesArgs {
    /// Trace file (.json or .json.gz, detected by content), or - for standard input.
    trace: PathBuf,

    #[command(flatten)]
    window: WindowArgs,

    /// Levels of the tree to print (0 = all).
    #[arg(long, value_name = "N", default_value_t = 3)]
    depth: u32,

    /// Output format.
    #[arg(long, short = 'f', value_enum, default_value_t = PhasesFormat::Table)]
    format: PhasesFormat,

    /// Parser threads (default: all cores).
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    threads: Option<usize>,

    /// Analyze what was read from a truncated file instead of failing.
    #[arg(long)]
    allow_truncated: bool,

    /// Do not print reading warnings on stderr.
    #[arg(long, short = 'q')]
    quiet: bool,
}

#[derive(clap::Args, Debug)]
struct SliceArgs {
    /// Trace file (.json or .json.gz, detected by content).
    trace: PathBuf,

    #[command(flatten)]
    window: WindowArgs,

    /// Output file; gzip when it ends in .gz.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: PathBuf,

    /// Parser threads for the first reading (default: all cores).
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    threads: Option<usize>,

    /// Do not print reading warnings on stderr.
    #[arg(long, short = 'q')]
    quiet: bool,
}

fn load_for(
    path: &str,
    threads: Option<usize>,
    allow_truncated: bool,
    quiet: bool,
) -> Result<crate::model::Trace, (i32, String)> {
    let mut lopts = base_load_options();
    if let Some(t) = threads {
        lopts.kineto.threads = t.max(1);
    }
    lopts.kineto.allow_truncated = allow_truncated;
    let trace = ingest::load(path, &lopts).map_err(|e| (2, format!("error: {e}")))?;
    if !quiet {
        for w in &trace.warnings {
            print_warning(path, w);
        }
    }
    Ok(trace)
}

fn write_stdout(buf: &[u8]) -> Result<(), (i32, String)> {
    let mut out = io::stdout().lock();
    if let Err(e) = out.write_all(buf).and_then(|_| out.flush()) {
        if e.kind() != io::ErrorKind::BrokenPipe {
            return Err((1, format!("error: writing to standard output: {e}")));
        }
    }
    Ok(())
}

fn phases(args: PhasesArgs) -> Result<(), (i32, String)> {
    let path = args.trace.to_string_lossy().into_owned();
    let trace = load_for(&path, args.threads, args.allow_truncated, args.quiet)?;
    let a = analysis::try_analyze(&trace, &args.window.options()?)
        .map_err(|e| (2, format!("error: {e}")))?;
    let rep = Report::new(&trace, &a);
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

/// One section of the JSON report with the report's header fields and window (`phases`,
/// `memory`), pretty-printed into `buf`.
fn section_json(
    rep: &Report,
    key: &str,
    value: serde_json::Value,
    buf: &mut Vec<u8>,
) -> Result<(), (i32, String)> {
    let v = serde_json::json!({
        "schema_version": rep.schema_version,
        "generator": rep.generator,
        "source": rep.source,
        "window": rep.window,
        key: value,
    });
    serde_json::to_writer_pretty(&mut *buf, &v)
        .map_err(|e| (1, format!("error: rendering: {e}")))?;
    buf.push(b'\n');
    Ok(())
}

fn memory(args: MemoryArgs) -> Result<(), (i32, String)> {
    let path = args.trace.to_string_lossy().into_owned();
    let mut buf: Vec<u8> = Vec::new();
    let render = |e: io::Error| (1, format!("error: rendering: {e}"));
    if path != "-" && ingest::torch_memory::is_export(&path) {
        let t = ingest::torch_memory::load(&path).map_err(|e| (2, format!("error: {e}")))?;
        match args.format {
            MemoryFormat::Json => {
                let v = report::memory_export_json(&path, &t);
                serde_json::to_writer_pretty(&mut buf, &v)
                    .map_err(|e| (1, format!("error: rendering: {e}")))?;
                buf.push(b'\n');
            }
            MemoryFormat::Table => {
                report::terminal::write_memory_export(&path, &t, 100, &mut buf).map_err(render)?
            }
            MemoryFormat::Csv => report::csv::write_memory_export(&t, &mut buf).map_err(render)?,
        }
        return write_stdout(&buf);
    }
    let trace = load_for(&path, args.threads, false, args.quiet)?;
    let a = analysis::try_analyze(&trace, &args.window.options()?)
        .map_err(|e| (2, format!("error: {e}")))?;
    let rep = Report::new(&trace, &a);
    if rep.memory.is_none() {
        return Err((2, no_memory_message(&path, &trace)));
    }
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

/// The error of `stallscope memory` on a trace without a memory timeline: what the trace has
/// instead, and how to record memory events.
fn no_memory_message(path: &str, trace: &crate::model::Trace) -> String {
    let m = &trace.memory;
    let has = format!(
        "{} host spans, {} device activities",
        trace.cpu.len(),
        trace.gpu.len()
    );
    if m.events > 0 {
        format!(
            "error: {path} has {} memory events but none that allocates or frees a block \
             (no `Bytes`), so there is no timeline ({has})",
            m.events
        )
    } else {
        format!(
            "error: {path} has no memory events, on the CPU or a GPU ({has}, 0 `[memory]` \
             events); record with `torch.profiler.profile(profile_memory=True)`"
        )
    }
}

fn slice(args: SliceArgs) -> Result<(), (i32, String)> {
    let path = args.trace.to_string_lossy().into_owned();
    if path == "-" {
        return Err((
            2,
            "error: slice reads its input twice and needs a file, not standard input".into(),
        ));
    }
    let wp = {
        let trace = load_for(&path, args.threads, false, args.quiet)?;
        crate::slice::plan_window(&trace, &args.window.spec()?)
            .map_err(|e| (2, format!("error: {e}")))?
    };
    for e in &wp.excluded {
        if !args.quiet && !e.reason.starts_with("not selected") {
            eprintln!("excluded {}: {}", e.step, e.reason);
        }
    }
    let (plan, steps_desc) = (wp.plan, wp.steps_desc);
    let stats = crate::slice::slice_file(&args.trace, &args.output, &plan)
        .map_err(|e| (2, format!("error: {e}")))?;
    eprintln!(
        "{}: {} of {} events ({}; {} flow events without their other end dropped) → {}",
        args.output.display(),
        stats.events_out,
        stats.events_in,
        steps_desc,
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

const DIFF_HELP: &str = "\
Examples:
  stallscope diff before.pt.trace.json.gz after.pt.trace.json.gz
  stallscope diff base.json after.pt.trace.json.gz      # a saved report as the baseline
  stallscope diff before/ after/                        # folders of per-rank traces
  stallscope diff a.json.gz b.json.gz --format md -o diff.md   # a pull-request comment
  stallscope diff a.json.gz b.json.gz --format html -o diff.html
  stallscope diff a.json.gz b.json.gz --focus denoise   # the same window on both sides
  stallscope diff --before a1.json.gz a2.json.gz a3.json.gz --after b1.json.gz b2.json.gz b3.json.gz

Each side is a Kineto trace (.json, .json.gz), an Nsight Systems export, a folder of per-rank
traces, or a JSON report saved with `stallscope analyze TRACE --format json -o base.json`.
Two traces are read side by side. Every figure is per step. The step-time change is tested
against the step-to-step spread with the Mann-Whitney U test on the per-step durations (at
least 3 steps per side); the contributors list what explains the change and sums to it. See
docs/diff.md.

Exit codes: 0 ok, 2 unreadable input (the message names the side and the file) or bad
arguments, 1 other errors.";

const CHECK_HELP: &str = "\
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

Exit codes: 0 within budget, 1 regression, 2 unreadable input or bad arguments.";

/// Output formats of `diff` and `check`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum DiffFormatArg {
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
#[derive(clap::Args, Debug)]
struct SidesArgs {
    #[command(flatten)]
    window: WindowArgs,

    /// Parser threads over both sides (default: all cores; two traces share them).
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    threads: Option<usize>,

    /// Folders: rank files loaded at once per side.
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<usize>,

    /// Do not print reading warnings on stderr.
    #[arg(long, short = 'q')]
    quiet: bool,
}

#[derive(clap::Args, Debug)]
struct DiffArgs {
    /// The baseline: trace, Nsight Systems export, folder of ranks, or saved JSON report.
    #[arg(required_unless_present = "before_runs")]
    before: Option<PathBuf>,
    /// The new profile (same kinds).
    #[arg(required_unless_present = "after_runs")]
    after: Option<PathBuf>,

    // ---- issue 34, repeated runs (loop helper): several captures per side ----
    /// Several captures of the baseline (repeated runs): `--before A1 A2 A3`.
    #[arg(long = "before", value_name = "CAPTURE", num_args = 1.., conflicts_with = "before")]
    before_runs: Vec<PathBuf>,
    /// Several captures of the new profile: `--after B1 B2 B3`.
    #[arg(long = "after", value_name = "CAPTURE", num_args = 1.., conflicts_with = "after")]
    after_runs: Vec<PathBuf>,
    /// Step-time regression the verdict tolerates, e.g. 5% (default 5%).
    #[arg(long, value_name = "PCT", value_parser = crate::diff::check::parse_percent)]
    max_regression: Option<f64>,
    // ---- end issue 34 ----
    /// Output format.
    #[arg(long, short = 'f', value_enum, default_value_t = DiffFormatArg::Table)]
    format: DiffFormatArg,

    /// Write to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,

    /// Rows per table (0 = all). Default: 10 (table, md), 30 (html), all (json).
    #[arg(long, value_name = "N")]
    top: Option<usize>,

    #[command(flatten)]
    sides: SidesArgs,
}

#[derive(clap::Args, Debug)]
struct CheckArgs {
    /// The new profile: trace, Nsight Systems export, folder of ranks, or saved JSON report
    /// (issue 34: several captures of it, repeated runs).
    #[arg(required = true, num_args = 1..)]
    trace: Vec<PathBuf>,

    /// The baseline: a JSON report (`stallscope analyze TRACE --format json -o base.json`) or
    /// a trace (issue 34: several captures, `--baseline A1 A2 A3`).
    #[arg(long, value_name = "BASE", required = true, num_args = 1..)]
    baseline: Vec<PathBuf>,

    /// Largest step-time regression, e.g. 5% (default 5% without --budget; overrides the
    /// budget file's step_time).
    #[arg(long, value_name = "PCT", value_parser = crate::diff::check::parse_percent)]
    max_regression: Option<f64>,

    /// Budget file (TOML) naming metrics and thresholds; see docs/diff.md.
    #[arg(long, value_name = "FILE")]
    budget: Option<PathBuf>,

    /// Output format of the full report on stdout (default: the budget table).
    #[arg(long, short = 'f', value_enum, default_value_t = DiffFormatArg::Table)]
    format: DiffFormatArg,

    /// Write to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,

    #[command(flatten)]
    sides: SidesArgs,
}

/// How `diff` and `check` load a side that is a trace, an Nsight Systems export or a folder
/// (a saved JSON report ignores it): the command's load settings, `window` for the analysis,
/// `threads` parser threads over both sides (`None` = every core; two traces read at once
/// share them), `jobs` rank files at once for a folder (`None` = the default). The Python
/// module's `diff` builds its sides with the same settings.
pub fn diff_side_options(
    window: crate::window::WindowSpec,
    threads: Option<usize>,
    jobs: Option<usize>,
) -> crate::diff::SideOptions {
    let mut load = base_load_options();
    load.kineto.threads = threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    crate::diff::SideOptions {
        load,
        analyze: AnalyzeOptions {
            window,
            ..AnalyzeOptions::default()
        },
        jobs: jobs.unwrap_or_else(crate::multirank::default_jobs),
    }
}

/// Loads both sides and compares them; errors name the side and the file (exit 2).
fn compare_sides(
    before: &std::path::Path,
    after: &std::path::Path,
    a: &SidesArgs,
    diff_opts: &crate::diff::DiffOptions,
) -> Result<crate::diff::Comparison, (i32, String)> {
    let mut opts = diff_side_options(a.window.spec()?, a.threads, a.jobs);
    let both_read = [before, after]
        .iter()
        .all(|p| !(p.is_file() && crate::diff::side::is_saved_report(p)));
    if both_read {
        // the sides are read at once, and two bars would overwrite each other's line
        opts.load.progress_over = None;
    }
    let (b, f) = crate::diff::load_pair(before, after, &opts);
    let b = b.map_err(|e| (2, format!("error: {e}")))?;
    let f = f.map_err(|e| (2, format!("error: {e}")))?;
    if !a.quiet {
        for (p, w) in b.warnings.iter().chain(&f.warnings) {
            print_warning(p, w);
        }
    }
    Ok(crate::diff::compare(
        &b,
        &f,
        (&before.to_string_lossy(), &after.to_string_lossy()),
        diff_opts,
    ))
}

// ---- issue 34 (loop helper): several captures per side ----
/// Loads every capture of both sides (a single pair as [`compare_sides`] does) and compares
/// them ([`crate::diff::compare_repeats`]); errors name the side and the file (exit 2).
fn compare_runs(
    before: &[PathBuf],
    after: &[PathBuf],
    a: &SidesArgs,
    opts: &crate::diff::DiffOptions,
) -> Result<crate::diff::Comparison, (i32, String)> {
    if before.len() == 1 && after.len() == 1 {
        return compare_sides(&before[0], &after[0], a, opts);
    }
    let mut so = diff_side_options(a.window.spec()?, a.threads, a.jobs);
    so.load.progress_over = None;
    let load = |ps: &[PathBuf], which| -> Result<Vec<crate::diff::Loaded>, (i32, String)> {
        ps.iter()
            .map(|p| crate::diff::load_side(p, which, &so).map_err(|e| (2, format!("error: {e}"))))
            .collect()
    };
    let b = load(before, crate::diff::Which::Before)?;
    let f = load(after, crate::diff::Which::After)?;
    if !a.quiet {
        for (p, w) in b.iter().chain(&f).flat_map(|l| &l.warnings) {
            print_warning(p, w);
        }
    }
    let names = |ps: &[PathBuf]| -> Vec<String> {
        ps.iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect()
    };
    Ok(crate::diff::compare_repeats(
        &b,
        &f,
        (&names(before), &names(after)),
        opts,
    ))
}
// ---- end issue 34 ----

fn write_out(output: &Option<PathBuf>, buf: &[u8]) -> Result<(), (i32, String)> {
    match output {
        Some(p) => std::fs::write(p, buf).map_err(|e| (1, format!("error: {}: {e}", p.display()))),
        None => write_stdout(buf),
    }
}

fn diff(args: DiffArgs) -> Result<(), (i32, String)> {
    // ---- issue 34: several captures per side ----
    let side = |one: &Option<PathBuf>, many: &[PathBuf]| -> Vec<PathBuf> {
        one.iter().chain(many).cloned().collect()
    };
    let opts = crate::diff::DiffOptions {
        budget_pct: args
            .max_regression
            .unwrap_or(crate::diff::repeats::DEFAULT_BUDGET_PCT),
        ..Default::default()
    };
    let c = compare_runs(
        &side(&args.before, &args.before_runs),
        &side(&args.after, &args.after_runs),
        &args.sides,
        &opts,
    )?;
    // ---- end issue 34 ----
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

fn check(args: CheckArgs) -> Result<(), (i32, String)> {
    let mut budget = match &args.budget {
        Some(p) => {
            crate::diff::check::read_budget(p).map_err(|e| (2, format!("error: budget: {e}")))?
        }
        None => Default::default(),
    };
    if let Some(p) = args.max_regression {
        budget.step_time = Some(crate::diff::check::Percent(p));
    } else if args.budget.is_none() {
        budget.step_time = Some(crate::diff::check::Percent(5.0));
    }
    // ---- issue 34: several captures per side; the verdict judged against the step limit ----
    let opts = crate::diff::DiffOptions {
        budget_pct: budget
            .step_time
            .map(|p| p.0)
            .unwrap_or(crate::diff::repeats::DEFAULT_BUDGET_PCT),
        ..Default::default()
    };
    let mut c = compare_runs(&args.baseline, &args.trace, &args.sides, &opts)?;
    // ---- end issue 34 ----
    let result = crate::diff::check::check(&c, &budget);
    eprintln!("{}", result.summary);
    let failed = result.failed;
    c.check = Some(result);
    let mut buf = Vec::new();
    crate::diff::render::render_check(&c, args.format.to_report(), &mut buf)
        .map_err(|e| (1, format!("error: rendering the comparison: {e}")))?;
    write_out(&args.output, &buf)?;
    if failed {
        return Err((1, String::new()));
    }
    Ok(())
}

const SUMMARIZE_HELP: &str = "\
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

#[derive(clap::Args, Debug)]
struct SummarizeArgs {
    /// One rank's trace file (.json or .json.gz), an Nsight Systems export, or - for
    /// standard input. Its rank is `distributedInfo.rank`, else the file name's (`rank3`,
    /// `worker3`).
    trace: PathBuf,

    /// Write the summary to FILE (by convention `*.summary.json`) instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,

    #[command(flatten)]
    window: WindowArgs,

    /// Parser and analysis threads (default: all cores).
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    threads: Option<usize>,

    /// Analyze what was read from a truncated file instead of failing.
    #[arg(long)]
    allow_truncated: bool,

    /// Do not print reading warnings on stderr.
    #[arg(long, short = 'q')]
    quiet: bool,
}

const MERGE_HELP: &str = "\
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

#[derive(clap::Args, Debug)]
struct MergeArgs {
    /// Summaries written by `stallscope summarize` (or merged ones, `--summary`).
    #[arg(required = true)]
    summaries: Vec<PathBuf>,

    /// Write one merged summary instead of the report (to merge again later).
    #[arg(long, conflicts_with_all = ["format", "view", "top", "sort"])]
    summary: bool,

    /// Output format of the report.
    #[arg(long, short = 'f', value_enum, default_value_t = Format::Table)]
    format: Format,

    /// Write the report (or the summary) to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,

    /// Table written by --format csv (required with csv, not allowed otherwise).
    #[arg(long, value_enum, required_if_eq("format", "csv"))]
    view: Option<View>,

    /// Rows of the kernel and operator tables (0 = all). Default: 10 in tables, all in JSON.
    #[arg(long, value_name = "N")]
    top: Option<usize>,

    /// Order of the operator table.
    #[arg(long, value_enum, default_value_t = OpSort::DeviceSelf)]
    sort: OpSort,

    /// Show this rank's full report (default: the slowest rank's).
    #[arg(long, value_name = "N")]
    rank: Option<i64>,

    /// The `jobs` the report states: how many ranks were summarised at once (the merge cannot
    /// know it).
    #[arg(long, short = 'j', value_name = "N", default_value_t = 1)]
    jobs: usize,

    /// When to use colours.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    color: ColorChoice,

    /// Do not print reading warnings on stderr.
    #[arg(long, short = 'q')]
    quiet: bool,
}

/// What `summarize` is asked for, as the command and the Python module give it.
#[derive(Debug, Clone, Default)]
pub struct SummarizeRequest {
    /// The trace file to read.
    pub trace: PathBuf,
    /// The path the summary records for it (default: `trace`); the Python module reads
    /// bytes from a temporary file and records the name it was given.
    pub recorded: Option<String>,
    /// The window.
    pub window: crate::window::WindowSpec,
    /// Parser and analysis threads (`None` = every core).
    pub threads: Option<usize>,
    /// Analyze what was read from a truncated file instead of failing.
    pub allow_truncated: bool,
}

/// Summarises one rank ([`crate::multirank::Summary::of_file`]); an unreadable trace gives a
/// summary that lists it as skipped.
pub fn summarize_request(req: &SummarizeRequest) -> crate::multirank::Summary {
    let opts = crate::multirank::FolderOptions {
        load: request_load_options(req.threads, req.allow_truncated, false),
        analyze: AnalyzeOptions {
            threads: req.threads.unwrap_or(0),
            window: req.window.clone(),
            ..AnalyzeOptions::default()
        },
        jobs: 1,
        rank: None,
    };
    let file = req.trace.to_string_lossy().into_owned();
    let name = crate::text::file_name(&file);
    let hint = crate::multirank::RankHint {
        name_rank: ingest::folder::rank_from_name(
            req.recorded.as_deref().map_or(name.as_str(), |r| r),
        ),
        index: 0,
    };
    crate::multirank::Summary::of_file_as(&file, req.recorded.as_deref(), hint, &opts)
}

fn summarize(args: SummarizeArgs) -> Result<(), (i32, String)> {
    let req = SummarizeRequest {
        trace: args.trace.clone(),
        recorded: None,
        window: args.window.spec()?,
        threads: args.threads,
        allow_truncated: args.allow_truncated,
    };
    let s = summarize_request(&req);
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

/// Writes `buf` to the file, or to standard output.
fn write_output(path: Option<&std::path::Path>, buf: &[u8]) -> Result<(), (i32, String)> {
    match path {
        Some(p) => std::fs::write(p, buf).map_err(|e| (1, format!("error: {}: {e}", p.display()))),
        None => write_stdout(buf),
    }
}

/// The folder `merge` names in its report: the common parent of the files summarised (what
/// `analyze FOLDER` shows when given that folder), `.` when they have none.
fn common_folder(s: &crate::multirank::Summary) -> String {
    let mut parents = s
        .ranks
        .iter()
        .map(|f| f.path.as_str())
        .chain(s.skipped.iter().map(|k| k.path.as_str()))
        .map(|p| {
            std::path::Path::new(p)
                .parent()
                .unwrap_or(std::path::Path::new(""))
        });
    let Some(first) = parents.next() else {
        return ".".into();
    };
    let mut common = first.to_path_buf();
    for p in parents {
        while !p.starts_with(&common) {
            if !common.pop() {
                break;
            }
        }
    }
    match common.to_string_lossy().into_owned() {
        c if c.is_empty() => ".".into(),
        c => c,
    }
}

/// Merges summary files into the folder's report (`merge`, and `analyze` on a folder of
/// summaries, whose `folder` and `ignored` are then the folder's own).
pub fn merge_summaries(
    paths: &[String],
    rank: Option<i64>,
    jobs: usize,
    folder: Option<(&str, usize)>,
) -> Result<Analyzed, AnalyzeError> {
    let merged = crate::multirank::merge_files(paths, rank).map_err(AnalyzeError::Input)?;
    finish_summary(merged, rank, jobs, folder)
}

/// The folder's report from a merged summary (see [`merge_summaries`]).
pub fn finish_summary(
    merged: crate::multirank::Summary,
    rank: Option<i64>,
    jobs: usize,
    folder: Option<(&str, usize)>,
) -> Result<Analyzed, AnalyzeError> {
    let common;
    let (folder, ignored) = match folder {
        Some(f) => f,
        None => {
            common = common_folder(&merged);
            (common.as_str(), 0)
        }
    };
    let out = crate::multirank::finish(merged, folder, jobs.max(1), ignored, rank).map_err(
        |e| match e {
            crate::multirank::FolderError::Input(e) => AnalyzeError::Input(e),
            crate::multirank::FolderError::NoSuchRank(m) => {
                AnalyzeError::Request(m.strip_prefix("error: ").unwrap_or(&m).to_string())
            }
        },
    )?;
    Ok(Analyzed {
        report: out.report,
        warnings: out.warnings,
        ncu_alone: false,
    })
}

/// `analyze FOLDER` on a folder whose trace-named files are all `*.summary.json`: their
/// merge. `None` when the folder holds no summary; an error when it mixes them with traces.
fn summaries_folder(req: &AnalyzeRequest, jobs: usize) -> Result<Option<Analyzed>, AnalyzeError> {
    let listing = ingest::folder::list(&req.trace).map_err(AnalyzeError::Input)?;
    let is_summary = |f: &ingest::folder::RankFile| {
        crate::multirank::is_summary_name(&crate::text::file_name(&f.path.to_string_lossy()))
    };
    let summaries = listing.files.iter().filter(|f| is_summary(f)).count();
    if summaries == 0 {
        return Ok(None);
    }
    let shown = req.trace.to_string_lossy().into_owned();
    if summaries < listing.files.len() {
        return Err(AnalyzeError::Request(format!(
            "{shown} holds both traces and *.summary.json files; analyze a folder of one kind"
        )));
    }
    let paths: Vec<String> = listing
        .files
        .iter()
        .map(|f| f.path.to_string_lossy().into_owned())
        .collect();
    merge_summaries(&paths, req.rank, jobs, Some((&shown, listing.ignored))).map(Some)
}

fn merge(args: MergeArgs) -> Result<(), (i32, String)> {
    let paths: Vec<String> = args
        .summaries
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if args.summary {
        let merged = crate::multirank::merge_files(&paths, args.rank)
            .map_err(|e| (2, format!("error: {e}")))?;
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
            "error: --format parquet needs every rank's full report, which a summary does not              keep: run `stallscope analyze DIR --format parquet -o OUT` on the traces"
                .into(),
        ));
    }
    let mut timings = crate::timings::Timings::from_env();
    let out = merge_summaries(&paths, args.rank, args.jobs, None)
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
    emit(&as_analyze, out, &mut timings, None)
}
