//! stallscope: why is this GPU workload slow, and what to do about it, from a profile.
//!
//! Data flows one way, and the modules follow it:
//! [`ingest`] (one module per input format) → [`model`] (one timeline) →
//! [`analysis`] (pure functions from model to serializable facts) → [`report`] (renderers
//! that format, never compute) → `cli`.

pub mod analysis;
pub mod cli;
pub mod ingest;
pub mod model;
pub mod report;
