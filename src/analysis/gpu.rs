//! Per-device summary: utilization, estimated SM efficiency and occupancy, tensor cores —
//! the TensorBoard profiler plugin's "GPU Summary" (torch-tb-profiler, last source:
//! pytorch/kineto `tb_plugin/`, commit 041e7ce99f15, `gpu_metrics_parser.py` and
//! `tensor_cores_parser.py`).
//!
//! # Definitions
//!
//! The window is normally the all-steps span of [`crate::window::steps`] (as in the plugin, so gaps
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
//!   [`crate::model::classify::uses_tensor_cores`] (the plugin's 2021 name list plus current
//!   tensor-core kernels; the plugin uses only the 2021 list,
//!   [`crate::model::classify::uses_tensor_cores_tb`]). Sums, not unions: concurrent kernels
//!   each count. [`GpuSummary::kernel_time`] is the
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

use crate::model::{GpuEvent, GpuKind, Interval, IntervalSet, Ns, Trace};

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
fn sm_efficiency(trace: &Trace, kernels: &[&GpuEvent], window: Interval) -> Option<f64> {
    if window.is_empty() {
        return None;
    }
    // (time, blocks per SM) of kernel starts and of kernel ends, each in time order and, at
    // equal times, in kernel order (the order of the additions below, which round)
    let mut starts: Vec<(Ns, f64)> = Vec::with_capacity(kernels.len());
    let mut ends: Vec<(Ns, f64)> = Vec::with_capacity(kernels.len());
    for k in kernels {
        let b = trace.kernel_info(k).blocks_per_sm as f64;
        if b.is_finite() && b > 0.0 && k.dur > 0 {
            starts.push((k.start, b));
            ends.push((k.end(), b));
        }
    }
    // kernels come in start order, and most end in it too: sort (stably) only when needed
    for v in [&mut starts, &mut ends] {
        if !v.windows(2).all(|w| w[0].0 <= w[1].0) {
            v.sort_by_key(|p| p.0);
        }
    }
    // merged: starts before ends at equal times
    let (mut i, mut j) = (0, 0);
    let points = std::iter::from_fn(|| {
        let start = match (starts.get(i), ends.get(j)) {
            (Some(s), Some(e)) => s.0 <= e.0,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return None,
        };
        Some(if start {
            i += 1;
            (starts[i - 1].0, 0u8, starts[i - 1].1)
        } else {
            j += 1;
            (ends[j - 1].0, 1u8, ends[j - 1].1)
        })
    });
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
fn achieved_occupancy(trace: &Trace, kernels: &[&GpuEvent], window: Interval) -> Option<f64> {
    let mut weighted = 0.0f64;
    let mut time: Ns = 0;
    for k in kernels {
        let occ = trace.kernel_info(k).occupancy_pct as f64;
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
    let mut out = Vec::new();
    let classes = trace.kernel_classes();
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
                let tc = classes.get(k.name).tensor_cores;
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
            sm_efficiency: sm_efficiency(trace, &kernels, window),
            achieved_occupancy: achieved_occupancy(trace, &kernels, window),
            tensor_core_ratio: (kernel_time > 0).then(|| tc_time as f64 / kernel_time as f64),
            kernel_time,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::build::TraceBuilder;

    const US: Ns = 1000;

    fn win(a: Ns, b: Ns) -> Interval {
        Interval::new(a * US, b * US)
    }

    fn close(a: Option<f64>, b: f64) {
        let a = a.expect("a value");
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }

    /// A kernel on `device` with optional blocks per SM and occupancy.
    fn k(
        b: &mut TraceBuilder,
        name: &str,
        device: i32,
        start: f64,
        dur: f64,
        blocks: f32,
        occ: f32,
    ) {
        b.gpu(GpuKind::Kernel, name, device, 7, start, dur, 0);
        b.kernel_info(|k| {
            k.blocks_per_sm = blocks;
            k.occupancy_pct = occ;
        });
    }

    #[test]
    fn empty_trace_has_no_device() {
        assert!(gpu_summaries(&TraceBuilder::new().build(), win(0, 10)).is_empty());
    }

    #[test]
    fn utilization_is_the_kernel_union_inside_the_window() {
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100", 108, 40 << 30);
        k(&mut b, "a", 0, 0.0, 10.0, f32::NAN, f32::NAN);
        b.gpu(GpuKind::Kernel, "b", 0, 8, 5.0, 10.0, 0); // another stream
        k(&mut b, "c", 0, 30.0, 10.0, f32::NAN, f32::NAN);
        b.gpu(GpuKind::Memcpy, "Memcpy DtoD", 0, 9, 15.0, 15.0, 0); // not a kernel
        k(&mut b, "other_gpu", 1, 0.0, 50.0, f32::NAN, f32::NAN);
        let t = b.build();

        let s = gpu_summaries(&t, win(0, 50));
        assert_eq!(s.len(), 2);
        let d0 = &s[0];
        assert_eq!(d0.device, 0);
        assert_eq!(d0.name, "NVIDIA A100");
        assert_eq!(d0.sm_count, Some(108));
        assert_eq!(d0.memory_bytes, Some(40 << 30));
        assert_eq!(d0.compute_capability.as_deref(), Some("8.0"));
        close(d0.utilization, 25.0 / 50.0);
        assert_eq!(d0.kernel_time, 30 * US); // a sum, not a union
                                             // no blocks/occupancy args at all (e.g. AMD): None, not 0
        assert_eq!(d0.sm_efficiency, None);
        assert_eq!(d0.achieved_occupancy, None);

        // device 1 has no deviceProperties entry
        let d1 = &s[1];
        assert_eq!(d1.device, 1);
        assert_eq!(d1.name, "");
        assert_eq!(d1.compute_capability, None);
        close(d1.utilization, 1.0);

        // a narrower window clips
        let s = gpu_summaries(&t, win(10, 35));
        close(s[0].utilization, 10.0 / 25.0);
    }

    #[test]
    fn sm_efficiency_clips_blocks_per_sm_at_one_per_moment() {
        let mut b = TraceBuilder::new().device(0, "V100", 80, 32 << 30);
        k(&mut b, "a", 0, 0.0, 10.0, 0.5, 50.0);
        k(&mut b, "b", 0, 5.0, 10.0, 0.75, 25.0);
        k(&mut b, "c", 0, 20.0, 10.0, f32::NAN, f32::NAN);
        k(&mut b, "d", 0, 30.0, 10.0, 4.0, 0.0);
        k(&mut b, "e", 0, 40.0, 10.0, -1.0, -1.0); // invalid values are skipped
        let t = b.build();

        let s = &gpu_summaries(&t, win(0, 40))[0];
        // [0,5] 0.5 + [5,10] min(1.25, 1) + [10,15] 0.75 + [30,40] min(4, 1)
        close(s.sm_efficiency, (2.5 + 5.0 + 3.75 + 10.0) / 40.0);
        close(s.utilization, 35.0 / 40.0);
        // kernel-time weighted; the zero occupancy counts, the missing one does not
        close(
            s.achieved_occupancy,
            (50.0 * 10.0 + 25.0 * 10.0 + 0.0) / 30.0 / 100.0,
        );

        let s = &gpu_summaries(&t, win(8, 35))[0];
        close(s.sm_efficiency, (2.0 + 3.75 + 5.0) / 27.0);
        close(
            s.achieved_occupancy,
            (50.0 * 2.0 + 25.0 * 7.0 + 0.0 * 5.0) / 14.0 / 100.0,
        );

        // the invalid kernel alone: utilization only
        let s = &gpu_summaries(&t, win(40, 50))[0];
        close(s.utilization, 1.0);
        assert_eq!(s.sm_efficiency, None);
        assert_eq!(s.achieved_occupancy, None);
    }

    #[test]
    fn tensor_core_ratio_is_kernel_time_weighted() {
        let mut b = TraceBuilder::new().device(0, "V100", 80, 32 << 30);
        k(
            &mut b,
            "volta_h884gemm_64x128_ldg8_nn",
            0,
            0.0,
            10.0,
            f32::NAN,
            f32::NAN,
        );
        k(
            &mut b,
            "volta_sgemm_128x64_nn",
            0,
            10.0,
            30.0,
            f32::NAN,
            f32::NAN,
        );
        let t = b.build();
        let s = &gpu_summaries(&t, win(0, 40))[0];
        close(s.tensor_core_ratio, 0.25);
        assert_eq!(s.kernel_time, 40 * US);
        let s = &gpu_summaries(&t, win(5, 40))[0];
        close(s.tensor_core_ratio, 5.0 / 35.0);
    }

    #[test]
    fn zero_length_window_and_work_outside_it() {
        let mut b = TraceBuilder::new().device(0, "V100", 80, 32 << 30);
        k(&mut b, "a", 0, 0.0, 10.0, 0.5, 50.0);
        b.gpu(GpuKind::Memcpy, "Memcpy HtoD", 1, 9, 0.0, 5.0, 0);
        let t = b.build();

        for w in [win(5, 5), Interval::default()] {
            let s = gpu_summaries(&t, w);
            assert_eq!(s.len(), 2);
            for d in &s {
                assert_eq!(d.utilization, None);
                assert_eq!(d.sm_efficiency, None);
                assert_eq!(d.achieved_occupancy, None);
                assert_eq!(d.tensor_core_ratio, None);
                assert_eq!(d.kernel_time, 0);
            }
        }

        // kernels entirely outside the window: idle, nothing to average
        let s = gpu_summaries(&t, win(20, 30));
        close(s[0].utilization, 0.0);
        assert_eq!(s[0].sm_efficiency, None);
        assert_eq!(s[0].achieved_occupancy, None);
        assert_eq!(s[0].tensor_core_ratio, None);
        // a device that only copied is listed, with zero utilization
        assert_eq!(s[1].device, 1);
        close(s[1].utilization, 0.0);
    }
}
