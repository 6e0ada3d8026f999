//! Kernel table: one row per kernel name.
//!
//! SKELETON: to be implemented (see the brief).

use super::classify::KernelCategory;
use crate::model::{Interval, Ns, Trace};

/// One kernel name's statistics.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelRow {
    /// Full kernel name.
    pub name: String,
    /// Category.
    pub category: KernelCategory,
    /// Calls.
    pub calls: u64,
    /// Total time, ns.
    pub total: Ns,
    /// Mean, ns.
    pub mean: f64,
    /// Min, ns.
    pub min: Ns,
    /// Max, ns.
    pub max: Ns,
    /// Duration-weighted mean blocks per SM.
    pub blocks_per_sm: Option<f64>,
    /// Duration-weighted mean estimated achieved occupancy, percent.
    pub occupancy_pct: Option<f64>,
    /// Runs on tensor cores.
    pub tensor_core: bool,
    /// Share of all kernel time in the window (0..1).
    pub share: f64,
}

/// Rows by total time descending.
pub fn kernel_table(_trace: &Trace, _window: Interval) -> Vec<KernelRow> {
    todo!("kernels")
}
