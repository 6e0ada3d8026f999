//! `phases`, `memory` and `slice`: one trace, one window, one part of the report (or the
//! window written back out).

use std::path::PathBuf;

use crate::analysis::AnalyzeOptions;
use crate::ingest::torch_memory::CategoryTimeline;
use crate::model::Trace;
use crate::report::Report;

use super::input::{guess, Input};
use super::load::LoadSettings;
use super::pipeline::{self, FileOptions};
use super::request::AnalyzeError;

/// One trace and a window: what `phases`, `memory` and `slice` read.
#[derive(Debug, Clone, Default)]
pub struct TraceRequest {
    /// The trace file (or `-` for standard input, except for `slice`).
    pub trace: PathBuf,
    /// The window.
    pub window: crate::window::WindowSpec,
    /// How it is read.
    pub load: LoadSettings,
}

impl TraceRequest {
    fn path(&self) -> String {
        self.trace.to_string_lossy().into_owned()
    }

    /// The trace through the pipeline; `loaded` sees the trace as soon as it is read.
    fn report(&self, loaded: &mut dyn FnMut(&Trace)) -> Result<pipeline::FileReport, AnalyzeError> {
        let opts = FileOptions {
            load: self.load.options(),
            analyze: AnalyzeOptions {
                window: self.window.clone(),
                ..AnalyzeOptions::default()
            },
            ncu: None,
            recorded: None,
        };
        Ok(pipeline::run_file(&self.path(), &opts, None, loaded)?)
    }
}

/// `phases`: the report whose `phases` section the command prints (`loaded` sees the trace as
/// soon as it is read, e.g. to print its warnings).
pub fn phases(req: &TraceRequest, loaded: &mut dyn FnMut(&Trace)) -> Result<Report, AnalyzeError> {
    Ok(req.report(loaded)?.report)
}

/// What `memory` read.
pub enum Memory {
    /// torch's memory-timeline export: bytes per category over time.
    Export(CategoryTimeline),
    /// A trace recorded with `profile_memory=True`: the report, whose `memory` section is set.
    Report(Box<Report>),
}

/// `memory`: torch's memory-timeline export, or the report of a trace with memory events (an
/// error, saying what the trace has instead, when it has none).
pub fn memory(req: &TraceRequest, loaded: &mut dyn FnMut(&Trace)) -> Result<Memory, AnalyzeError> {
    let path = req.path();
    if matches!(guess(&req.trace), Ok(Input::MemoryExport)) {
        let t = crate::ingest::torch_memory::load(&path).map_err(AnalyzeError::Input)?;
        return Ok(Memory::Export(t));
    }
    let out = req.report(loaded)?;
    if out.report.memory.is_none() {
        return Err(AnalyzeError::Request(no_memory_message(&path, &out.trace)));
    }
    Ok(Memory::Report(Box::new(out.report)))
}

/// Why a trace has no memory timeline: what the trace has instead, and how to record memory
/// events.
fn no_memory_message(path: &str, trace: &Trace) -> String {
    let m = &trace.memory;
    let has = format!(
        "{} host spans, {} device activities",
        trace.cpu.len(),
        trace.gpu.len()
    );
    if m.events > 0 {
        format!(
            "{path} has {} memory events but none that allocates or frees a block \
             (no `Bytes`), so there is no timeline ({has})",
            m.events
        )
    } else {
        format!(
            "{path} has no memory events, on the CPU or a GPU ({has}, 0 `[memory]` \
             events); record with `torch.profiler.profile(profile_memory=True)`"
        )
    }
}

/// `slice`, first step: the trace read (`loaded` sees it) and the window planned. The
/// caller says what was left out, then writes with [`write_slice`].
pub fn plan_slice(
    req: &TraceRequest,
    loaded: &mut dyn FnMut(&Trace),
) -> Result<crate::slice::WindowPlan, AnalyzeError> {
    if req.trace.as_os_str() == "-" {
        return Err(AnalyzeError::Request(
            "slice reads its input twice and needs a file, not standard input".into(),
        ));
    }
    let trace = pipeline::load(&req.path(), &req.load.options()).map_err(AnalyzeError::Input)?;
    loaded(&trace);
    crate::slice::plan_window(&trace, &req.window).map_err(|e| AnalyzeError::Request(e.to_string()))
}

/// `slice`, second step: the planned window written to `output` (gzip when it ends in
/// `.gz`), streaming the input again.
pub fn write_slice(
    req: &TraceRequest,
    output: &std::path::Path,
    plan: &crate::slice::WindowPlan,
) -> Result<crate::slice::SliceStats, AnalyzeError> {
    crate::slice::slice_file(&req.trace, output, &plan.plan)
        .map_err(|e| AnalyzeError::Request(e.to_string()))
}
