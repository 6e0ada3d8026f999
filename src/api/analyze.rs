//! `analyze`: one request, whatever the input (a trace, standard input, a folder of ranks, a
//! folder of summaries, an Nsight Compute CSV alone), to one [`Report`].

use crate::analysis::AnalyzeOptions;
use crate::report::mirrors::WarningInfo as Warning;
use crate::report::Report;
use crate::timings::Timings;

use super::input::{guess, Input};
use super::pipeline::{self, FileOptions};
use super::request::{AnalyzeError, AnalyzeRequest, Analyzed, EachReport};

/// Operator table order.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum OpSort {
    /// Device time of the op's own kernels (default, like the TensorBoard plugin).
    #[default]
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

/// Runs the request: what the input is ([`guess`]), then its pipeline, to the report the
/// command renders (before `--sort` and `--top`). `timings` gets the load / analyze / report
/// laps.
pub fn analyze(req: &AnalyzeRequest, timings: &mut Timings) -> Result<Analyzed, AnalyzeError> {
    analyze_with(req, timings, &|_, _| {})
}

/// [`analyze`], handing every rank's full report to `each` with its rank: each rank of a
/// folder as it is done (any order), or the one trace (its `distributedInfo` rank, else 0).
/// Not called for an Nsight Compute CSV alone nor for summaries. `--format parquet` collects
/// its tables so.
pub fn analyze_with(
    req: &AnalyzeRequest,
    timings: &mut Timings,
    each: &EachReport<'_>,
) -> Result<Analyzed, AnalyzeError> {
    let path = req.trace.to_string_lossy().into_owned();
    match guess(&req.trace)? {
        Input::NcuCsv => ncu_alone(req, &path),
        Input::MemoryExport => Err(AnalyzeError::Request(format!(
            "{path} is torch's memory-timeline export, not a trace: \
             `stallscope memory {path}` reads it"
        ))),
        Input::RankFolder(listing) => {
            no_ncu_beside_a_folder(req)?;
            super::folder::ranks(req, &listing, each)
        }
        Input::SummaryFolder(listing) => {
            no_ncu_beside_a_folder(req)?;
            super::folder::summaries(req, &listing)
        }
        Input::Stdin | Input::Trace | Input::SavedReport => one_file(req, &path, timings, each),
    }
}

fn no_ncu_beside_a_folder(req: &AnalyzeRequest) -> Result<(), AnalyzeError> {
    match req.ncu {
        Some(_) => Err(AnalyzeError::Request(
            "--ncu joins an Nsight Compute CSV to one trace, not to a folder".into(),
        )),
        None => Ok(()),
    }
}

/// One trace file (or standard input) through the pipeline.
fn one_file(
    req: &AnalyzeRequest,
    path: &str,
    timings: &mut Timings,
    each: &EachReport<'_>,
) -> Result<Analyzed, AnalyzeError> {
    if req.rank.is_some() {
        return Err(AnalyzeError::Request(
            "--rank applies to a folder of per-rank traces".into(),
        ));
    }
    let opts = FileOptions {
        load: req.load.options(),
        analyze: AnalyzeOptions {
            threads: req.load.analysis_threads(),
            window: req.window.clone(),
            ..AnalyzeOptions::default()
        },
        ncu: req.ncu.clone(),
        recorded: None,
    };
    let mut warnings: Vec<(String, Warning)> = Vec::new();
    let out = pipeline::run_file(path, &opts, Some(timings), &mut |trace| {
        warnings.extend(
            trace
                .warnings
                .iter()
                .map(|w| (path.to_string(), Warning::from(w))),
        );
    })?;
    warnings.extend(out.ncu_warnings);
    each(
        out.trace
            .distributed
            .as_ref()
            .and_then(|d| d.rank)
            .unwrap_or(0),
        &out.report,
    );
    let report = out.report;
    drop(out.analysis);
    drop(out.trace);
    timings.lap("free");
    Ok(Analyzed {
        report,
        warnings,
        ncu_alone: false,
    })
}

/// `analyze KERNELS.csv`: the Nsight Compute findings (weighted by ncu's own durations) and
/// kernel table alone.
fn ncu_alone(req: &AnalyzeRequest, path: &str) -> Result<Analyzed, AnalyzeError> {
    if req.ncu.is_some() {
        return Err(AnalyzeError::Request(
            "--ncu joins an Nsight Compute CSV to a trace; the input is already one".into(),
        ));
    }
    let report = pipeline::ncu_alone(path).map_err(AnalyzeError::Input)?;
    Ok(Analyzed {
        warnings: report
            .warnings
            .iter()
            .map(|w| (path.to_string(), w.clone()))
            .collect(),
        report,
        ncu_alone: true,
    })
}
