//! stallscope: why is this GPU workload slow, and what to do about it, from a profile.
//!
//! Data flows one way, and the modules follow it:
//! [`ingest`] (one module per input format) → [`model`] (one timeline) →
//! [`window`] (which part of the trace is analyzed: steady state, steps, time range, focus) →
//! [`analysis`] (pure functions from model to serializable facts) → [`diagnose`] (rules from
//! facts to a verdict and findings) → [`report`] (renderers that format, never compute).
//! [`multirank`] runs the single-file pipeline over a folder of per-rank traces, a few ranks
//! at a time; [`slice`](mod@slice) writes a window back out as a smaller trace; [`diff`]
//! compares two reports. [`api`] is the library's front door (the API boundary): typed
//! requests, one load-options value, one input dispatch and the one single-file pipeline. The
//! front doors call it: `cli` (the command), `mcp` (feature `mcp`, on by default: an MCP
//! server) and the Python package. No module imports from a later stage (ARCHITECTURE.md has
//! the order; `tests/architecture.rs` checks it).

#![deny(missing_docs)]

pub mod advice;
pub mod analysis;
pub mod api;
pub mod cli;
pub mod diagnose;
pub mod diff;
pub mod ingest;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod model;
pub mod multirank;
pub mod par;
pub mod report;
pub mod slice;
pub mod text;
pub mod timings;
pub mod window;
