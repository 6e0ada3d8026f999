//! Per-device GPU timeline split (TraceLens's definition): computation, exposed
//! communication, exposed memcpy, idle.
//!
//! SKELETON: to be implemented (see the brief).

use crate::model::{Interval, Ns, Trace};

/// One device's split.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuTimeline {
    /// Device id.
    pub device: i64,
    /// First start to last end of the device work counted.
    pub total: Ns,
    /// Union of computation (kernels that are not communication, and memsets).
    pub computation: Ns,
    /// Communication not overlapped by computation.
    pub exposed_comm: Ns,
    /// Copies not overlapped by computation or communication.
    pub exposed_memcpy: Ns,
    /// total − busy.
    pub idle: Ns,
    /// Union of all counted work.
    pub busy: Ns,
    /// Union of communication.
    pub total_comm: Ns,
    /// Union of copies.
    pub total_memcpy: Ns,
}

/// The split for every device, over `window` when given.
pub fn gpu_timeline(_trace: &Trace, _window: Option<Interval>) -> Vec<GpuTimeline> {
    todo!("timeline")
}
