//! `stallscope._native`: the Rust side of the `stallscope` Python package.
//!
//! It adds no analysis of its own: it is a front door of the library, beside the command and
//! the MCP server. [`analyze`] builds the api's [`stallscope::api::AnalyzeRequest`] from
//! keyword arguments (with the command's load settings, [`LoadSettings::from_env`]) and runs
//! the same [`stallscope::api::analyze`] in-process with the GIL released, and
//! [`NativeReport`] hands back the report through the crate's own renderers (JSON, HTML,
//! Markdown, the terminal's findings); `diff`, `summarize` and the merger call the api too.
//! [`cli`] runs the command itself (`stallscope::cli::run_with`, its only use of the command
//! line's module), for the wheel's `stallscope` script and `python -m stallscope`. The typed Python API (`Report`, `TraceError`, DataFrames, the
//! capture helper) lives in `python/stallscope/`.
//!
//! A Rust panic never crosses into Python: every entry point runs under `catch_unwind` and
//! turns a panic into `RuntimeError`.

use std::ffi::OsString;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use stallscope::api::{self, AnalyzeError, AnalyzeRequest, LoadSettings, SideOptions};
use stallscope::diff::render::DiffFormat;
use stallscope::diff::{Loaded, SideError, Which};
use stallscope::multirank::Summary;
use stallscope::report::{self, Renderer, Report};

create_exception!(
    _native,
    TraceError,
    PyValueError,
    "The input could not be read: missing, truncated, not a trace, or corrupt.\n\n\
     `path` is the file and `offset` the byte offset in the (uncompressed) input where the \
     problem was found, or None when it has no place."
);

/// Runs `f`, turning a Rust panic into `RuntimeError` (the message of the panic included).
fn no_panic<T>(what: &str, f: impl FnOnce() -> T) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        PyRuntimeError::new_err(format!(
            "stallscope: internal error in {what} (please report it): {msg}"
        ))
    })
}

/// `TraceError` for an input that could not be read, with its `path`, `offset` and `reason`.
fn trace_error(py: Python<'_>, e: &stallscope::ingest::LoadError) -> PyResult<PyErr> {
    let err = TraceError::new_err(e.to_string());
    let value = err.value(py);
    value.setattr("path", &e.path)?;
    value.setattr("offset", e.offset)?;
    value.setattr("reason", &e.message)?;
    Ok(err)
}

/// The report of one analysis, as the command builds it before rendering.
#[pyclass(module = "stallscope._native", name = "NativeReport", frozen)]
struct NativeReport {
    report: Report,
    ncu_alone: bool,
}

impl NativeReport {
    fn render(&self, py: Python<'_>, r: &(dyn Renderer + Sync), top: usize) -> PyResult<String> {
        let opts = report::RenderOptions {
            top,
            color: false,
            width: 100,
        };
        let rep = &self.report;
        py.detach(|| {
            no_panic("rendering", || {
                let mut buf = Vec::new();
                r.render(rep, &opts, &mut buf)?;
                String::from_utf8(buf).map_err(std::io::Error::other)
            })
        })?
        .map_err(|e| PyRuntimeError::new_err(format!("stallscope: rendering: {e}")))
    }
}

#[pymethods]
impl NativeReport {
    /// The versioned JSON report, byte for byte what `stallscope analyze --format json`
    /// writes (every kernel and operator row).
    fn json(&self, py: Python<'_>) -> PyResult<String> {
        self.render(py, &report::json::Json, 0)
    }

    /// The self-contained HTML report (`--format html`), `top` rows per table (0 = all).
    fn html(&self, py: Python<'_>, top: usize) -> PyResult<String> {
        if self.ncu_alone {
            return Err(PyValueError::new_err(
                "an Nsight Compute CSV alone has no HTML report; analyze a trace with ncu=CSV",
            ));
        }
        self.render(py, &report::html::Html, top)
    }

    /// The Markdown report (`--format md`), `top` rows per table (0 = all).
    fn markdown(&self, py: Python<'_>, top: usize) -> PyResult<String> {
        if self.ncu_alone {
            return Err(PyValueError::new_err(
                "an Nsight Compute CSV alone has no Markdown report; analyze a trace with ncu=CSV",
            ));
        }
        self.render(py, &report::markdown::Markdown, top)
    }

    /// The verdict and findings as the terminal report prints them, without colour,
    /// fitted to `width` columns.
    fn summary(&self, width: usize) -> PyResult<String> {
        no_panic("rendering", || {
            let mut buf = Vec::new();
            report::terminal::write_findings(&self.report, width, false, &mut buf)?;
            String::from_utf8(buf).map_err(std::io::Error::other)
        })?
        .map_err(|e| PyRuntimeError::new_err(format!("stallscope: rendering: {e}")))
    }

    /// The header of `stallscope analyze --format csv --view VIEW` (`steps`, `kernels`,
    /// `copies`, `ops`, `phases`, `ranks`): the column names of the Python tables.
    fn csv_columns(&self, view: &str) -> PyResult<Vec<String>> {
        use report::csv::View;
        let view = match view {
            "steps" => View::Steps,
            "kernels" => View::Kernels,
            "copies" => View::Copies,
            "ops" => View::Ops,
            "phases" => View::Phases,
            "ranks" => View::Ranks,
            _ => return Err(PyValueError::new_err(format!("no CSV view {view:?}"))),
        };
        let opts = report::RenderOptions {
            top: 1,
            color: false,
            width: 100,
        };
        let mut buf = Vec::new();
        no_panic("rendering", || {
            report::csv::Csv { view }.render(&self.report, &opts, &mut buf)
        })?
        .map_err(|e| PyRuntimeError::new_err(format!("stallscope: rendering: {e}")))?;
        let text = String::from_utf8_lossy(&buf);
        let header = text.split("\r\n").next().unwrap_or_default();
        Ok(header.split(',').map(str::to_string).collect())
    }

    /// True when the input was an Nsight Compute CSV alone (findings and `ncu` only).
    #[getter]
    fn ncu_alone(&self) -> bool {
        self.ncu_alone
    }
}

/// Parses a window bound with the command's parser; a bad value is `ValueError`.
fn parse_window(
    s: Option<&str>,
    parse: fn(&str) -> Result<stallscope::window::WindowSpec, String>,
    what: &str,
) -> PyResult<Option<stallscope::window::WindowSpec>> {
    s.map(|s| parse(s).map_err(|e| PyValueError::new_err(format!("{what}={s:?}: {e}"))))
        .transpose()
}

/// The window of the keyword arguments (`steps`, `time`: the command's `A..B` strings), with
/// the command's parsers and rules; a bad or conflicting value is `ValueError`.
fn window_spec(
    steps: Option<&str>,
    time: Option<&str>,
    focus: Option<String>,
    all_steps: bool,
) -> PyResult<stallscope::window::WindowSpec> {
    stallscope::window::WindowSpec::compose(
        all_steps,
        parse_window(steps, stallscope::window::parse_steps, "steps")?,
        parse_window(time, stallscope::window::parse_time, "time")?,
        focus,
    )
    .map_err(PyValueError::new_err)
}

/// Analyzes `path` like `stallscope analyze` and returns the report (operators by device
/// self time, every row). `steps` and `time` are the command's `A..B` strings.
#[pyfunction]
#[pyo3(signature = (path, *, steps=None, time=None, focus=None, all_steps=false, ncu=None,
    threads=None, jobs=None, rank=None, allow_truncated=false))]
#[allow(clippy::too_many_arguments)]
fn analyze(
    py: Python<'_>,
    path: PathBuf,
    steps: Option<&str>,
    time: Option<&str>,
    focus: Option<String>,
    all_steps: bool,
    ncu: Option<PathBuf>,
    threads: Option<usize>,
    jobs: Option<usize>,
    rank: Option<i64>,
    allow_truncated: bool,
) -> PyResult<NativeReport> {
    if threads == Some(0) || jobs == Some(0) {
        return Err(PyValueError::new_err(
            "threads and jobs must be at least 1 (None uses every core)",
        ));
    }
    let window = window_spec(steps, time, focus, all_steps)?;
    let req = AnalyzeRequest {
        trace: path,
        ncu,
        window,
        load: LoadSettings {
            threads,
            allow_truncated,
            ..LoadSettings::from_env()
        },
        jobs,
        rank,
    };
    let out = py.detach(|| {
        no_panic("analyze", || {
            let mut timings = stallscope::timings::Timings::from_env();
            api::analyze(&req, &mut timings).map(|mut a| {
                api::sort_ops(&mut a.report, api::OpSort::DeviceSelf);
                a
            })
        })
    })?;
    match out {
        Ok(a) => Ok(NativeReport {
            report: a.report,
            ncu_alone: a.ncu_alone,
        }),
        Err(AnalyzeError::Input(e)) => Err(trace_error(py, &e)?),
        Err(AnalyzeError::Request(m)) => Err(PyValueError::new_err(m)),
    }
}

/// The comparison of two profiles, as `stallscope diff` builds it before rendering.
#[pyclass(module = "stallscope._native", name = "NativeComparison", frozen)]
struct NativeComparison {
    comparison: stallscope::diff::Comparison,
}

#[pymethods]
impl NativeComparison {
    /// The versioned comparison JSON, byte for byte what `stallscope diff --format json`
    /// writes (every row).
    fn json(&self, py: Python<'_>) -> PyResult<String> {
        self.render(py, DiffFormat::Json, 0)
    }

    /// The self-contained HTML comparison (`--format html`), `top` rows per table (0 = all).
    fn html(&self, py: Python<'_>, top: usize) -> PyResult<String> {
        self.render(py, DiffFormat::Html, top)
    }

    /// The Markdown comparison (`--format md`), `top` rows per table (0 = all).
    fn markdown(&self, py: Python<'_>, top: usize) -> PyResult<String> {
        self.render(py, DiffFormat::Md, top)
    }

    /// The terminal tables (`--format table`, no colour, 100 columns), `top` rows per table.
    fn table(&self, py: Python<'_>, top: usize) -> PyResult<String> {
        self.render(py, DiffFormat::Table, top)
    }
}

impl NativeComparison {
    fn render(&self, py: Python<'_>, format: DiffFormat, top: usize) -> PyResult<String> {
        let c = &self.comparison;
        py.detach(|| {
            no_panic("rendering", || {
                let mut buf = Vec::new();
                stallscope::diff::render::render(c, format, top, &mut buf)?;
                String::from_utf8(buf).map_err(std::io::Error::other)
            })
        })?
        .map_err(|e| PyRuntimeError::new_err(format!("stallscope: rendering: {e}")))
    }
}

/// One side of `diff`: a path to load, or a report already made.
enum DiffSide {
    Path(PathBuf),
    Report(Py<NativeReport>),
}

impl DiffSide {
    fn extract(v: &Bound<'_, PyAny>, which: Which) -> PyResult<DiffSide> {
        if let Ok(r) = v.cast::<NativeReport>() {
            if r.get().ncu_alone {
                return Err(PyValueError::new_err(format!(
                    "{} side: a report of an Nsight Compute CSV alone has no steps or \
                     timeline to compare",
                    which.as_str()
                )));
            }
            return Ok(DiffSide::Report(r.clone().unbind()));
        }
        v.extract::<PathBuf>().map(DiffSide::Path).map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "{} must be a path or a Report",
                which.as_str()
            ))
        })
    }

    /// The label of the side in the comparison: the path as given, or the report's source.
    fn label(&self) -> String {
        match self {
            DiffSide::Path(p) => p.to_string_lossy().into_owned(),
            DiffSide::Report(r) => r.get().report.source.path.clone(),
        }
    }

    fn load(&self, which: Which, opts: &SideOptions) -> Result<Loaded, SideError> {
        match self {
            DiffSide::Path(p) => api::load_side(p, which, opts),
            DiffSide::Report(r) => api::report_side(&r.get().report, which),
        }
    }
}

/// One side of `diff`: one capture (a path or a `NativeReport`), or a list or tuple of them
/// (repeated runs of the same program).
fn diff_sides(v: &Bound<'_, PyAny>, which: Which) -> PyResult<Vec<DiffSide>> {
    if v.is_instance_of::<pyo3::types::PyList>() || v.is_instance_of::<pyo3::types::PyTuple>() {
        let items: Vec<Bound<'_, PyAny>> = v.try_iter()?.collect::<PyResult<_>>()?;
        if items.is_empty() {
            return Err(PyValueError::new_err(format!(
                "{} side: an empty list of captures",
                which.as_str()
            )));
        }
        return items.iter().map(|i| DiffSide::extract(i, which)).collect();
    }
    Ok(vec![DiffSide::extract(v, which)?])
}

/// Compares two profiles like `stallscope diff BEFORE AFTER`. Each side is a path (trace,
/// folder of ranks, Nsight Systems export or saved JSON report) or a `NativeReport`, or a list
/// of them (repeated runs: `stallscope diff --before A1 A2 --after B1 B2`); the window options
/// apply to the paths that are analyzed (a report is compared as it is). With `check`, the
/// comparison is judged like `stallscope check` against the budget file `budget` and
/// `max_regression` (percent; both absent: 5 %). A side that cannot be loaded is `TraceError`
/// whose message starts with `before side:` or `after side:` and whose `path` is that side's.
#[pyfunction]
#[pyo3(signature = (before, after, *, steps=None, time=None, focus=None, all_steps=false,
    threads=None, max_regression=None, budget=None, check=false, sequential=false))]
#[allow(clippy::too_many_arguments)]
fn diff(
    py: Python<'_>,
    before: &Bound<'_, PyAny>,
    after: &Bound<'_, PyAny>,
    steps: Option<&str>,
    time: Option<&str>,
    focus: Option<String>,
    all_steps: bool,
    threads: Option<usize>,
    max_regression: Option<f64>,
    budget: Option<PathBuf>,
    check: bool,
    sequential: bool,
) -> PyResult<NativeComparison> {
    if threads == Some(0) {
        return Err(PyValueError::new_err(
            "threads must be at least 1 (None uses every core)",
        ));
    }
    if let Some(p) = max_regression {
        if !(p.is_finite() && p >= 0.0) {
            return Err(PyValueError::new_err(format!(
                "max_regression must be a percentage >= 0, not {p}"
            )));
        }
    }
    let window = window_spec(steps, time, focus, all_steps)?;
    let (b, a) = (
        diff_sides(before, Which::Before)?,
        diff_sides(after, Which::After)?,
    );
    let labels: (Vec<String>, Vec<String>) = (
        b.iter().map(DiffSide::label).collect(),
        a.iter().map(DiffSide::label).collect(),
    );
    let budget = if check {
        let file = match &budget {
            Some(p) => Some(
                stallscope::diff::check::read_budget(p)
                    .map_err(|e| PyValueError::new_err(format!("budget: {e}")))?,
            ),
            None => None,
        };
        Some(api::budget(file, max_regression))
    } else {
        max_regression.map(|p| api::budget(None, Some(p)))
    };
    let options = budget.as_ref().map(api::check_options).unwrap_or_default();
    let opts = api::DiffRequest {
        window,
        load: LoadSettings {
            threads,
            ..LoadSettings::from_env()
        },
        sequential,
        ..api::DiffRequest::default()
    }
    .side_options();
    let out = py.detach(|| {
        no_panic("diff", || {
            let (lb, la) = match (&b[..], &a[..]) {
                ([DiffSide::Path(pb)], [DiffSide::Path(pa)]) => {
                    let (lb, la) = api::load_pair(pb, pa, &opts);
                    (vec![lb?], vec![la?])
                }
                _ => {
                    let load = |ss: &[DiffSide], which| -> Result<Vec<Loaded>, SideError> {
                        ss.iter().map(|s| s.load(which, &opts)).collect()
                    };
                    (load(&b, Which::Before)?, load(&a, Which::After)?)
                }
            };
            let mut c = api::compare_loaded(&lb, &la, (&labels.0, &labels.1), &options);
            if check {
                if let Some(budget) = &budget {
                    api::judge(&mut c, budget);
                }
            }
            Ok::<_, SideError>(c)
        })
    })?;
    match out {
        Ok(comparison) => Ok(NativeComparison { comparison }),
        Err(e) => {
            // the capture named in the message, else the side's first
            let side = if e.0.starts_with("after side") {
                &labels.1
            } else {
                &labels.0
            };
            let path = side
                .iter()
                .find(|l| e.0.contains(l.as_str()))
                .unwrap_or(&side[0]);
            let err = TraceError::new_err(e.to_string());
            let value = err.value(py);
            value.setattr("path", path)?;
            value.setattr("offset", py.None())?;
            value.setattr("reason", &e.0)?;
            Err(err)
        }
    }
}

/// Summarises one rank's trace like `stallscope summarize` and returns the summary's JSON
/// text (docs/summary.md). `name` is the path the summary records (default `path`). A trace
/// that cannot be read gives a summary that lists it as skipped, as `analyze DIR` does.
#[pyfunction]
#[pyo3(signature = (path, *, name=None, steps=None, time=None, focus=None, all_steps=false,
    threads=None, allow_truncated=false))]
#[allow(clippy::too_many_arguments)]
fn summarize(
    py: Python<'_>,
    path: PathBuf,
    name: Option<String>,
    steps: Option<&str>,
    time: Option<&str>,
    focus: Option<String>,
    all_steps: bool,
    threads: Option<usize>,
    allow_truncated: bool,
) -> PyResult<String> {
    if threads == Some(0) {
        return Err(PyValueError::new_err(
            "threads must be at least 1 (None uses every core)",
        ));
    }
    let req = api::SummarizeRequest {
        trace: path,
        recorded: name,
        window: window_spec(steps, time, focus, all_steps)?,
        load: LoadSettings {
            threads,
            allow_truncated,
            ..LoadSettings::from_env()
        },
    };
    py.detach(|| no_panic("summarize", || api::summarize(&req).to_json()))
}

/// Summaries merged one at a time (`stallscope merge`): only the merged summary is held,
/// whatever the number added.
#[pyclass(module = "stallscope._native", name = "NativeMerger")]
struct NativeMerger {
    merged: Summary,
    rank: Option<i64>,
    added: usize,
}

#[pymethods]
impl NativeMerger {
    /// A merger keeping `rank`'s full report (default: the slowest rank's).
    #[new]
    #[pyo3(signature = (*, rank=None))]
    fn new(rank: Option<i64>) -> Self {
        NativeMerger {
            merged: Summary::default(),
            rank,
            added: 0,
        }
    }

    /// Adds one summary's JSON text; `TraceError` when it is not a summary of this version.
    fn add(&mut self, py: Python<'_>, summary: &str) -> PyResult<()> {
        self.added += 1;
        let label = format!("summary #{}", self.added);
        let rank = self.rank;
        let merged = &mut self.merged;
        py.detach(|| {
            no_panic("merge", || {
                Summary::from_json(&label, summary.as_bytes()).map(|s| merged.merge(s, rank))
            })
        })?
        .map_err(|e| trace_error(py, &e).unwrap_or_else(|e| e))
    }

    /// The merged summary's JSON text (a summary again: it merges with others).
    fn summary(&self, py: Python<'_>) -> PyResult<String> {
        let merged = &self.merged;
        py.detach(|| no_panic("merge", || merged.to_json()))
    }

    /// The folder's report from the summaries added (`jobs` is the value the report states).
    fn report(&self, py: Python<'_>, jobs: usize) -> PyResult<NativeReport> {
        let merged = self.merged.clone();
        let rank = self.rank;
        let out = py.detach(|| {
            no_panic("merge", || {
                api::finish_summary(merged, rank, jobs, None).map(|mut a| {
                    api::sort_ops(&mut a.report, api::OpSort::DeviceSelf);
                    a
                })
            })
        })?;
        match out {
            Ok(a) => Ok(NativeReport {
                report: a.report,
                ncu_alone: false,
            }),
            Err(AnalyzeError::Input(e)) => Err(trace_error(py, &e)?),
            Err(AnalyzeError::Request(m)) => Err(PyValueError::new_err(m)),
        }
    }
}

/// Runs the `stallscope` command in this process with `argv` (program name first) and
/// returns its exit code; output goes to the process' standard output and error.
#[pyfunction]
fn cli(py: Python<'_>, argv: Vec<OsString>) -> PyResult<i32> {
    py.detach(|| no_panic("the command", || stallscope::cli::run_with(argv)))
}

/// The Rust extension of the `stallscope` package; use the `stallscope` module instead.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(analyze, m)?)?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(diff, m)?)?;
    m.add_function(wrap_pyfunction!(summarize, m)?)?;
    m.add_class::<NativeMerger>()?;
    m.add_class::<NativeReport>()?;
    m.add_class::<NativeComparison>()?;
    m.add("TraceError", m.py().get_type::<TraceError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
