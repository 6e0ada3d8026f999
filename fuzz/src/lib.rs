//! stallscope's fuzz targets (see `targets.rs`); `src/bin/` has one AFL binary per target.

#[path = "targets.rs"]
pub mod targets;
