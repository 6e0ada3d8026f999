//! Per-device summary: utilization, estimated SM efficiency and occupancy, tensor cores.
//!
//! SKELETON: to be implemented (see the brief).

use crate::model::{Interval, Ns, Trace};

/// One device's summary over a window.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuSummary {
    /// Device id.
    pub device: i64,
    /// Name.
    pub name: String,
    /// SMs / CUs.
    pub sm_count: Option<u32>,
    /// Memory, bytes.
    pub memory_bytes: Option<u64>,
    /// `"major.minor"`.
    pub compute_capability: Option<String>,
    /// Fraction of the window with a kernel running (0..1).
    pub utilization: Option<f64>,
    /// Estimated SM efficiency (0..1).
    pub sm_efficiency: Option<f64>,
    /// Estimated achieved occupancy, kernel-time weighted (0..1).
    pub achieved_occupancy: Option<f64>,
    /// Share of kernel time in tensor-core kernels (0..1).
    pub tensor_core_ratio: Option<f64>,
    /// Kernel time inside the window, ns (sum over kernels).
    pub kernel_time: Ns,
}

/// Summaries of every device that ran work, in id order.
pub fn gpu_summaries(_trace: &Trace, _window: Interval) -> Vec<GpuSummary> {
    todo!("gpu")
}
