//! `stallscope analyze`: flags → an [`AnalyzeRequest`] → [`api::analyze_with`] → the report
//! in its format (and `merge`, which writes its report the same way).

use std::path::PathBuf;

use clap::ValueEnum;

use super::args::{parse_threads, print_warning, write_output, ColorChoice, WindowArgs};
use crate::api::{self, AnalyzeRequest, Analyzed, LoadSettings};
use crate::report::{self, Renderer, Report};

/// Output formats.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub(super) enum Format {
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
pub(super) enum View {
    /// The kernel table.
    Kernels,
    /// Copies and fills: direction, host memory, bytes per call and bandwidth per row.
    Copies,
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

/// Operator table order (`--sort`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub(super) enum OpSort {
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

impl OpSort {
    /// The api's order.
    pub(super) fn to_api(self) -> api::OpSort {
        match self {
            OpSort::DeviceSelf => api::OpSort::DeviceSelf,
            OpSort::DeviceTotal => api::OpSort::DeviceTotal,
            OpSort::HostSelf => api::OpSort::HostSelf,
            OpSort::HostTotal => api::OpSort::HostTotal,
            OpSort::Calls => api::OpSort::Calls,
            OpSort::Name => api::OpSort::Name,
        }
    }
}

/// `analyze` flags.
#[derive(clap::Args, Debug)]
pub(super) struct AnalyzeArgs {
    /// Trace file (.json or .json.gz, detected by content), or - for standard input.
    /// Also an Nsight Systems export (.sqlite, or .nsys-rep with nsys on PATH) or an Nsight
    /// Compute CSV (its kernel table alone). A folder of per-rank traces (*.json,
    /// *.json.gz) gives a table of the ranks, cross-rank findings and the full report of the
    /// slowest rank; a folder of rank summaries (*.summary.json, `stallscope summarize`) gives
    /// the same report from them (see `stallscope merge`).
    pub(super) trace: PathBuf,

    /// Nsight Compute CSV (`ncu --csv --page details|raw`) whose kernels are joined to the
    /// trace's by name and order and added to the report.
    #[arg(long, value_name = "FILE")]
    pub(super) ncu: Option<PathBuf>,

    /// Output format.
    #[arg(long, short = 'f', value_enum, default_value_t = Format::Table)]
    pub(super) format: Format,

    /// Write the report to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub(super) output: Option<PathBuf>,

    /// Table written by --format csv (required with csv, not allowed otherwise).
    #[arg(long, value_enum, required_if_eq("format", "csv"))]
    pub(super) view: Option<View>,

    /// --format parquet: the `job` column of every row (default: the input's file or folder
    /// name), so that the tables of several jobs can be queried together.
    #[arg(long, value_name = "NAME")]
    pub(super) job: Option<String>,

    #[command(flatten)]
    pub(super) window: WindowArgs,

    /// Rows of the kernel and operator tables (0 = all). Default: 10 in tables, all in JSON.
    #[arg(long, value_name = "N")]
    pub(super) top: Option<usize>,

    /// Order of the operator table.
    #[arg(long, value_enum, default_value_t = OpSort::DeviceSelf)]
    pub(super) sort: OpSort,

    /// Parser and analysis threads per file (default: all cores; 1 runs the analyses one
    /// after another; for a folder, the cores are shared by the jobs).
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    pub(super) threads: Option<usize>,

    /// Folder: rank files loaded and analysed at once (default: 2 or the number of cores,
    /// whichever is smaller). Peak memory grows with it: about N × one rank.
    #[arg(long, short = 'j', value_name = "N")]
    pub(super) jobs: Option<usize>,

    /// Folder: show this rank's full report under the rank table (default: the slowest rank).
    #[arg(long, value_name = "N")]
    pub(super) rank: Option<i64>,

    /// Analyze what was read from a truncated file instead of failing.
    #[arg(long)]
    pub(super) allow_truncated: bool,

    /// Keep device timestamps as recorded. By default, when every activity of a device starts
    /// over 1 ms after (or before) its launch and at least 3 launches that reached an idle
    /// device agree on that delay, the device's clock is taken as offset and shifted back
    /// (the capture check says by how much); use this to compare with the raw times.
    #[arg(long)]
    pub(super) no_clock_correction: bool,

    /// When to use colours.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub(super) color: ColorChoice,

    /// Do not print reading warnings on stderr.
    #[arg(long, short = 'q')]
    pub(super) quiet: bool,
}

/// `analyze`: the flags resolved into a request, the api's report, the report written.
pub(super) fn run(args: AnalyzeArgs, load: LoadSettings) -> Result<(), (i32, String)> {
    if args.view.is_some() && args.format != Format::Csv {
        return Err((2, "error: --view applies only to --format csv".into()));
    }
    let req = AnalyzeRequest {
        trace: args.trace.clone(),
        ncu: args.ncu.clone(),
        window: args.window.spec()?,
        load: LoadSettings {
            threads: args.threads,
            allow_truncated: args.allow_truncated,
            progress: true,
            no_clock_correction: args.no_clock_correction,
            ..load
        },
        jobs: args.jobs,
        rank: args.rank,
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
        api::analyze_with(&req, &mut timings, &each).map_err(|e| (2, format!("error: {e}")))?;
    emit(&args, out, &mut timings, tables)
}

/// collected from every rank's report for `--format parquet`.
pub(super) fn emit(
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
    api::sort_ops(&mut rep, args.sort.to_api());
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

    let color = args.color.resolve(args.output.is_some());
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
        // the top kernel rows and the top copy and fill rows (after them)
        let (mut kernels, mut copies) = (0, 0);
        rep.kernels.retain(|k| {
            let n = if k.copy.is_some() {
                &mut copies
            } else {
                &mut kernels
            };
            *n += 1;
            *n <= ropts.top
        });
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
                Some(View::Copies) => report::csv::View::Copies,
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
    write_output(args.output.as_deref(), &buf)
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

/// Writes the report of an Nsight Compute CSV alone: its findings and kernel table, or JSON.
fn render_ncu(args: &AnalyzeArgs, rep: &Report) -> Result<(), (i32, String)> {
    let mut buf: Vec<u8> = Vec::new();
    let written = match args.format {
        Format::Table => {
            let color = args.color.resolve(args.output.is_some());
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
    write_output(args.output.as_deref(), &buf)
}
