//! Per-device summary: utilization, estimated SM efficiency and occupancy, tensor cores —
//! the TensorBoard profiler plugin's "GPU Summary" (torch-tb-profiler, last source:
//! pytorch/kineto `tb_plugin/`, commit 041e7ce99f15, `gpu_metrics_parser.py` and
//! `tensor_cores_parser.py`).
//!
//! # Definitions
//!
//! The window is normally the all-steps span of [`super::steps`] (as in the plugin, so gaps
//! between steps count as idle). Only kernels ([`GpuKind::Kernel`], communication kernels
//! included) count; copies and fills do not. A kernel belongs to the device in its
//! `args.device` (the reader falls back to `pid`).
//!
//! * **Utilization** = |union of the device's kernel intervals ∩ window| ÷ window length.
//! * **Est. SM efficiency** = ∫ min(1, Σ `blocks per SM` of the kernels running at t) dt over
//!   the window ÷ window length. Kernels without a positive `blocks per SM` are left out (so
//!   it is ≤ utilization); idle time counts as 0.
//! * **Est. achieved occupancy** = Σₖ occₖ × |kernel k ∩ window| ÷ Σₖ |kernel k ∩ window| over
//!   the kernels with a non-negative `est. achieved occupancy %` (zero included); reported as
//!   a fraction (the plugin shows the percentage). Idle time does not count.
//! * **Tensor-core ratio** = Σ |tensor-core kernel ∩ window| ÷ Σ |kernel ∩ window|, with
//!   [`classify::uses_tensor_cores`] (the plugin's 2021 name list plus current tensor-core
//!   kernels; the plugin uses only the 2021 list, [`classify::uses_tensor_cores_tb`]). Sums,
//!   not unions: concurrent kernels each count. [`GpuSummary::kernel_time`] is the
//!   denominator.
//!
//! A metric is `None` when it is undefined: a zero-length window (all four), no kernel with
//! `blocks per SM` / occupancy overlapping the window (AMD traces carry neither), or no
//! kernel time in the window (tensor-core ratio).
//!
//! Every device marked [`crate::model::Device::active`] (it ran a kernel, copy or fill) is
//! listed, in id order; the plugin lists only devices that ran a kernel.
//!
//! Values are kept as exact as the trace allows: intervals in integer ns, the integrals in
//! f64. `blocks per SM` and occupancy are stored as `f32` in the model, which moves the
//! results by about 1e-7 relative at most.

use std::collections::HashMap;

use super::classify;
use crate::model::{GpuEvent, GpuKind, Interval, IntervalSet, NameId, Ns, Trace};

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

/// ∫ min(1, Σ blocks per SM) over the window ÷ window length.
fn sm_efficiency(kernels: &[&GpuEvent], window: Interval) -> Option<f64> {
    if window.is_empty() {
        return None;
    }
    // (time, 0 = start / 1 = end, blocks per SM); starts before ends at equal times.
    let mut points: Vec<(Ns, u8, f64)> = Vec::new();
    for k in kernels {
        let b = k.blocks_per_sm as f64;
        if b.is_finite() && b > 0.0 && k.dur > 0 {
            points.push((k.start, 0, b));
            points.push((k.end(), 1, b));
        }
    }
    points.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    let mut active = 0usize;
    let mut blocks = 0.0f64;
    let mut last = Ns::MIN;
    let mut integral = 0.0f64;
    let mut any = false;
    for (t, kind, b) in points {
        if active > 0 && t > last {
            let covered = Interval::new(last, t).overlap(&window);
            if covered > 0 {
                integral += blocks.min(1.0) * covered as f64;
                any = true;
            }
        }
        last = t;
        if kind == 0 {
            active += 1;
            blocks += b;
        } else {
            active -= 1;
            // restart from an exact zero so rounding never leaks into idle time
            blocks = if active == 0 { 0.0 } else { blocks - b };
        }
    }
    any.then(|| integral / window.len() as f64)
}

/// Kernel-time weighted mean of `est. achieved occupancy %`, as a fraction.
fn achieved_occupancy(kernels: &[&GpuEvent], window: Interval) -> Option<f64> {
    let mut weighted = 0.0f64;
    let mut time: Ns = 0;
    for k in kernels {
        let occ = k.occupancy_pct as f64;
        if !(occ.is_finite() && occ >= 0.0) {
            continue;
        }
        let d = k.interval().overlap(&window);
        if d > 0 {
            weighted += occ * d as f64;
            time += d;
        }
    }
    (time > 0).then(|| weighted / time as f64 / 100.0)
}

/// Summaries of every device that ran work, in id order.
pub fn gpu_summaries(trace: &Trace, window: Interval) -> Vec<GpuSummary> {
    let mut tc_by_name: HashMap<NameId, bool> = HashMap::new();
    let mut out = Vec::new();
    for dev in trace.devices.iter().filter(|d| d.active) {
        let kernels: Vec<&GpuEvent> = trace
            .gpu
            .iter()
            .filter(|g| g.kind == GpuKind::Kernel && g.device as i64 == dev.id)
            .collect();

        let utilization = (!window.is_empty()).then(|| {
            let busy = IntervalSet::from_intervals(kernels.iter().map(|k| k.interval()));
            busy.covered_within(window) as f64 / window.len() as f64
        });

        let mut kernel_time: Ns = 0;
        let mut tc_time: Ns = 0;
        for k in &kernels {
            let d = k.interval().overlap(&window);
            if d > 0 {
                kernel_time += d;
                let tc = *tc_by_name
                    .entry(k.name)
                    .or_insert_with(|| classify::uses_tensor_cores(trace.name(k.name)));
                if tc {
                    tc_time += d;
                }
            }
        }

        out.push(GpuSummary {
            device: dev.id,
            name: dev.name.clone(),
            sm_count: dev.sm_count,
            memory_bytes: dev.memory_bytes,
            compute_capability: match (dev.compute_major, dev.compute_minor) {
                (Some(major), Some(minor)) => Some(format!("{major}.{minor}")),
                _ => None,
            },
            utilization,
            sm_efficiency: sm_efficiency(&kernels, window),
            achieved_occupancy: achieved_occupancy(&kernels, window),
            tensor_core_ratio: (kernel_time > 0).then(|| tc_time as f64 / kernel_time as f64),
            kernel_time,
        });
    }
    out
}
