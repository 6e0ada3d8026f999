//! The library's front door: the API boundary. The command (`crate::cli`), the MCP server
//! (`crate::mcp`) and the Python package (`python/src/lib.rs`) build typed requests here and
//! call nothing below this module for the pipeline, so the same input gets one answer
//! whichever door it came through.
//!
//! What crosses the boundary: requests ([`AnalyzeRequest`], [`SummarizeRequest`],
//! [`DiffRequest`], [`CheckRequest`], [`TraceRequest`] for `phases`, `memory` and `slice`), each with its
//! [`LoadSettings`]; back come a [`crate::report::Report`] (or a
//! [`crate::multirank::Summary`], a [`crate::diff::Comparison`], a slice plan), the reading
//! warnings, and typed errors ([`AnalyzeError`]: the input could not be read, or the request
//! does not fit it). Rendering stays with the front doors (they call `crate::report`'s
//! renderers on the report they get).
//!
//! The invariants:
//! - **one pipeline**: a trace file goes load → window → analyze → diagnose →
//!   `Report::new(trace, analysis, diagnosis)` in [`pipeline::run_file`] and nowhere else
//!   (a folder's ranks run it through [`pipeline::rank_runner`], handed to
//!   [`crate::multirank`]);
//! - **one load-options value**: [`LoadSettings`], limits included, built by each front door
//!   from its flags or arguments; no process-global reading state;
//! - **one input dispatch**: [`guess`] tells a trace, standard input, a folder of ranks or of
//!   summaries, a saved report, an Nsight Compute CSV and torch's memory export apart.
//!
//! Reading order: [`input`] (what the input is), [`load`] (how it is read), [`pipeline`] (the
//! single-file pipeline), [`request`] (the shared request, answer and error types), then one
//! file per request family: [`analyze`](mod@analyze),
//! [`folder`] (folders, summaries, merge), [`diff`](mod@diff), [`sections`] (phases, memory,
//! slice).

pub mod analyze;
pub mod diff;
pub mod folder;
pub mod input;
pub mod load;
pub mod pipeline;
pub mod request;
pub mod sections;

pub use analyze::{analyze, analyze_with, sort_ops, OpSort};
pub use diff::{
    budget, check, check_options, compare_loaded, diff, judge, load_pair, load_side, report_side,
    CheckRequest, Compared, DiffRequest, SideOptions,
};
pub use folder::{finish_summary, merge_files, merge_summaries, summarize, SummarizeRequest};
pub use input::{guess, GuessError, Input};
pub use load::LoadSettings;
pub use request::{AnalyzeError, AnalyzeRequest, Analyzed, EachReport};
pub use sections::{memory, phases, plan_slice, write_slice, Memory, TraceRequest};
