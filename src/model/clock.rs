//! Device clock offset: found from the launch flows, and corrected when they anchor it.
//!
//! A profiler stamps host calls with the host clock and device activities with the device
//! clock, converted to the host's. When that conversion is off (as in some ROCm captures), every
//! activity of a device seems to start long after (or before) the call that launched it, and
//! every number that compares host and device times (idle time blamed on the host, step spans
//! extended to device work, waits) is wrong by the offset.
//!
//! **Suspected offset** (the `clock-offset` trust issue of `analysis::capture`): on a device
//! with at least [`MIN_ACTIVITIES`] activities linked to their launch call, every one of them
//! starts more than [`MIN_OFFSET`] after its call returned (device ahead), or one of them
//! starts more than [`MIN_OFFSET`] before its call began (device behind).
//!
//! A long delay alone does not prove an offset: a host far ahead of a busy GPU queues work, and
//! each activity then starts when the previous one ends, long after its launch. What tells
//! the two apart is an **anchor**: the first activity of a launch call that starts after its
//! device has been idle for at least [`IDLE_MIN`] (no kernel, copy or fill of the device
//! running; the first activity of the device does not count, since the device may have been
//! busy before the capture began). A device with nothing to run starts a launch within a few
//! µs of its call returning, so an anchor's delay (activity start − call end) is the offset
//! plus that launch latency. Idle periods come after host syncs and whenever the host is
//! slower than the device: independent points of the capture.
//!
//! **Correction is allowed** on a suspected device when:
//! 1. at least [`ANCHORS_MIN`] anchors have a delay within [`TOLERANCE`] of the smallest
//!    anchor delay (the floor is met repeatedly: a constant offset; a queue behind a busy GPU
//!    leaves no idle gap, and waits on other streams give delays above the floor, not on it);
//! 2. the floor, taken as the offset, leaves no linked activity starting more than
//!    [`TOLERANCE`] before its launch call began (an offset that would break causality is not
//!    a clock offset).
//!
//! Then [`correct`] subtracts the floor from the start of every device event of that device
//! (kernels, copies, fills, syncs, GPU annotations), re-sorts the device events, and records a
//! [`ClockCorrection`] in [`Trace::clock_corrections`]; everything downstream (window, steps,
//! gaps, waits, verdict) sees corrected times. The launch latency of the floor anchor is lost
//! in the shift (that anchor then starts as its call returns), an error of a few µs. Otherwise
//! the trace is left as it is and the capture check marks host-device timing unreliable.
//!
//! The loader runs [`correct`] on every trace unless asked not to (`analyze
//! --no-clock-correction`), so that a user can compare both readings.

use super::{CpuEvent, GpuEvent, Ns, Trace};

/// Smallest delay (or lead) that makes a device's clock suspect, ns (1 ms: far above any
/// launch latency, far below the offsets seen in real captures).
pub const MIN_OFFSET: Ns = 1_000_000;

/// Linked activities a device needs before its clock is judged (a handful of launches say too
/// little: the first launch of a process can be slow for other reasons).
pub const MIN_ACTIVITIES: u64 = 10;

/// Idle time of a device before an activity that makes that activity an anchor, ns. Above the
/// gap between activities of a busy queue (a few µs on NVIDIA GPUs, up to ~18 µs on the MI300
/// captures of the corpus), below the idle time a host sync or a slow host leaves.
pub const IDLE_MIN: Ns = 20_000;

/// How close to the floor an anchor's delay must be to count as meeting it, ns (the spread of
/// launch latencies on an idle device, graph launches included).
pub const TOLERANCE: Ns = 50_000;

/// Anchors that must meet the floor before a device is corrected.
pub const ANCHORS_MIN: u32 = 3;

/// A correction applied to one device's clock ([`Trace::clock_corrections`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClockCorrection {
    /// Device id.
    pub device: i32,
    /// What was subtracted from the device's timestamps, ns: positive when the device clock
    /// was ahead (activities started late), negative when it was behind.
    pub offset: Ns,
    /// Anchors whose delay met the floor (see the module docs).
    pub anchors: u32,
    /// Linked activities of the device.
    pub activities: u64,
}

/// What the launch flows say about one device's clock ([`estimate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockEstimate {
    /// Device id.
    pub device: i32,
    /// Activities (kernels, copies, fills) linked to their launch call.
    pub activities: u64,
    /// Smallest delay from a call's return to the start of its activity, ns.
    pub min_delay: Ns,
    /// Largest lead of an activity's start before its call began, ns (negative: none).
    pub max_lead: Ns,
    /// Anchors found (first activities of a launch after an idle device).
    pub anchors: u32,
    /// Anchors within [`TOLERANCE`] of the smallest anchor delay.
    pub at_floor: u32,
    /// The offset the anchors allow correcting, ns (`None`: not suspected, or not allowed).
    pub offset: Option<Ns>,
}

impl ClockEstimate {
    /// True when the device clock is suspect: every activity starts late (device ahead), or
    /// one starts well before its launch (device behind).
    pub fn suspected(&self) -> bool {
        self.activities >= MIN_ACTIVITIES
            && (self.min_delay > MIN_OFFSET || self.max_lead > MIN_OFFSET)
    }

    /// True when the device clock is ahead of the host's (the late-start form).
    pub fn ahead(&self) -> bool {
        self.min_delay > MIN_OFFSET
    }
}

/// Per device with linked activities (in device id order), what its launch flows say about its
/// clock. One pass over the device events; allocation per device and per launch call, not per
/// event.
pub fn estimate(trace: &Trace) -> Vec<ClockEstimate> {
    let mut est = Estimator::default();
    // launch calls whose first activity has been seen (an anchor is a call's first activity)
    let mut seen = crate::model::fast::Bits::new(trace.cpu.len());
    for (g, call) in trace.gpu_with_launches().filter(|(g, _)| g.is_activity()) {
        let call = call.map(|c| (c, !seen.replace(g.launch as usize)));
        est.add(g, call);
    }
    est.finish()
}

/// [`estimate`] fed one device activity at a time, for a caller that walks the activities for
/// its own facts too (the capture check): one pass, one look at each launch call.
#[derive(Default)]
pub struct Estimator {
    per: Vec<Acc>,
}

struct Acc {
    device: i32,
    activities: u64,
    min_delay: Ns,
    max_lead: Ns,
    // min of (start - call start): the largest offset causality allows
    min_from_call: Ns,
    busy_until: Option<Ns>,
    anchors: Vec<Ns>,
}

impl Estimator {
    /// Adds a device activity (kernel, copy or fill, in start order) with its launch call, if
    /// linked, and whether it is that call's first activity.
    #[inline]
    pub fn add(&mut self, g: &GpuEvent, call: Option<(&CpuEvent, bool)>) {
        let per = &mut self.per;
        let i = match per.iter().position(|a| a.device == g.device) {
            Some(i) => i,
            None => {
                per.push(Acc {
                    device: g.device,
                    activities: 0,
                    min_delay: Ns::MAX,
                    max_lead: Ns::MIN,
                    min_from_call: Ns::MAX,
                    busy_until: None,
                    anchors: Vec::new(),
                });
                per.len() - 1
            }
        };
        let a = &mut per[i];
        if let Some((call, first)) = call {
            let delay = g.start - call.end();
            a.activities += 1;
            a.min_delay = a.min_delay.min(delay);
            a.max_lead = a.max_lead.max(call.start - g.start);
            a.min_from_call = a.min_from_call.min(g.start - call.start);
            if first && a.busy_until.is_some_and(|b| g.start - b >= IDLE_MIN) {
                a.anchors.push(delay);
            }
        }
        a.busy_until = Some(a.busy_until.map_or(g.end(), |b| b.max(g.end())));
    }

    /// The estimates, in device id order.
    pub fn finish(self) -> Vec<ClockEstimate> {
        let mut out: Vec<ClockEstimate> = self
            .per
            .into_iter()
            .filter(|a| a.activities > 0)
            .map(|a| {
                let floor = a.anchors.iter().copied().min();
                let at_floor = floor.map_or(0, |f| {
                    a.anchors.iter().filter(|&&d| d - f <= TOLERANCE).count() as u32
                });
                let mut e = ClockEstimate {
                    device: a.device,
                    activities: a.activities,
                    min_delay: a.min_delay,
                    max_lead: a.max_lead,
                    anchors: a.anchors.len() as u32,
                    at_floor,
                    offset: None,
                };
                if let Some(f) = floor {
                    let causal = f <= a.min_from_call + TOLERANCE;
                    if e.suspected() && at_floor >= ANCHORS_MIN && causal {
                        e.offset = Some(f);
                    }
                }
                e
            })
            .collect();
        out.sort_by_key(|e| e.device);
        out
    }
}

/// Corrects every device whose launch flows allow it (module docs): shifts its device events,
/// re-sorts [`Trace::gpu`] and records the corrections in [`Trace::clock_corrections`]. Returns
/// the number of devices corrected. A trace already corrected is left as it is.
pub fn correct(trace: &mut Trace) -> usize {
    if !trace.clock_corrections.is_empty() {
        return 0;
    }
    let fixes: Vec<ClockCorrection> = estimate(trace)
        .iter()
        .filter_map(|e| {
            e.offset.map(|offset| ClockCorrection {
                device: e.device,
                offset,
                anchors: e.at_floor,
                activities: e.activities,
            })
        })
        .collect();
    if fixes.is_empty() {
        return 0;
    }
    for g in trace.gpu.iter_mut() {
        if let Some(c) = fixes.iter().find(|c| c.device == g.device) {
            g.start -= c.offset;
        }
    }
    // stable: events of one device keep their order
    trace.gpu.sort_by_key(|g| g.start);
    let n = fixes.len();
    trace.clock_corrections = fixes;
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::build::TraceBuilder;
    use crate::model::GpuKind;

    /// A host-bound loop on device 0: a launch every 100 µs (5 µs call), the kernel 2 µs
    /// after the call returns in the true clock, 30 µs long (so the device idles 68 µs before
    /// each kernel), every fourth iteration after a 1 ms device sync; the device clock is
    /// `offset_us` ahead.
    fn host_bound(offset_us: f64) -> Trace {
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
        let mut t = 0.0;
        for i in 0..20 {
            let c = b.runtime("cudaLaunchKernel", 0, t, 5.0);
            b.gpu(GpuKind::Kernel, "k", 0, 7, t + 7.0 + offset_us, 30.0, c);
            t += 100.0;
            if i % 4 == 3 {
                b.runtime("cudaDeviceSynchronize", 0, t, 1000.0);
                t += 1000.0;
            }
        }
        b.build()
    }

    #[test]
    fn a_constant_offset_is_found_and_corrected_exactly() {
        let mut t = host_bound(2500.0);
        let e = estimate(&t);
        assert_eq!(e.len(), 1);
        // 20 kernels, the first has no idle device before it: 19 anchors, all at 2502 µs
        assert_eq!((e[0].activities, e[0].anchors, e[0].at_floor), (20, 19, 19));
        assert_eq!(e[0].offset, Some(2_502_000));
        assert_eq!(correct(&mut t), 1);
        assert_eq!(
            t.clock_corrections,
            [ClockCorrection {
                device: 0,
                offset: 2_502_000,
                anchors: 19,
                activities: 20
            }]
        );
        // the corrected kernels start as their call returns (the 2 µs latency is in the shift)
        let right = host_bound(0.0);
        for (g, r) in t.gpu.iter().zip(&right.gpu) {
            assert_eq!(g.start, r.start - 2_000);
        }
        assert_eq!(
            correct(&mut t),
            0,
            "a corrected trace is not corrected twice"
        );
        // no offset: nothing suspected, nothing changed
        let mut t = host_bound(0.0);
        assert!(!estimate(&t)[0].suspected());
        assert_eq!(correct(&mut t), 0);
    }

    #[test]
    fn a_device_behind_is_corrected_backwards() {
        // kernels start 3 ms before they were launched
        let mut t = host_bound(-3000.0);
        let e = estimate(&t)[0];
        assert!(e.suspected() && !e.ahead());
        assert_eq!(e.offset, Some(-2_998_000));
        correct(&mut t);
        let right = host_bound(0.0);
        assert_eq!(t.gpu[0].start, right.gpu[0].start - 2_000);
    }

    /// The host issues a 40 µs kernel every 10 µs for 4 ms: the queue grows, each kernel
    /// starts when the previous one ends, and the device clock is right.
    fn host_ahead(lag_us: f64) -> Trace {
        let mut b = TraceBuilder::new().device(0, "AMD Instinct MI300X", 304, 192 << 30);
        let mut free = lag_us;
        for i in 0..400 {
            let at = 10.0 * i as f64;
            let c = b.runtime("hipLaunchKernel", 0, at, 4.0);
            let start = free.max(at + 6.0);
            b.gpu(GpuKind::Kernel, "k", 0, 0, start, 40.0, c);
            free = start + 40.0 + 4.0;
        }
        b.build()
    }

    #[test]
    fn a_host_ahead_of_a_busy_gpu_is_not_corrected() {
        // the GPU was busy for 2 ms with work from before the capture
        let mut t = host_ahead(2000.0);
        let e = estimate(&t)[0];
        assert!(e.suspected());
        // 4 µs between kernels: the device never idles, so no launch anchors the offset
        assert_eq!((e.anchors, e.offset), (0, None));
        assert_eq!(correct(&mut t), 0);
        assert!(t.clock_corrections.is_empty());
    }

    #[test]
    fn two_anchors_or_an_acausal_floor_allow_no_correction() {
        // only the kernels after the two syncs of 8 iterations reach an idle device
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
        let mut t = 0.0;
        for i in 0..12 {
            let c = b.runtime("cudaLaunchKernel", 0, t, 5.0);
            // back to back on the device but after each sync
            let start = 5000.0
                + 40.0 * i as f64
                + if i >= 4 { 100.0 } else { 0.0 }
                + if i >= 8 { 100.0 } else { 0.0 };
            b.gpu(GpuKind::Kernel, "k", 0, 7, start, 40.0, c);
            t += 10.0;
        }
        let e = estimate(&b.build())[0];
        assert!(e.suspected());
        // delays 5260 - 45 and 5520 - 85 µs: 220 µs apart, one anchor at the floor
        assert_eq!((e.anchors, e.at_floor, e.offset), (2, 1, None));

        // the 2.502 ms floor of `host_bound(2500.0)` with one more kernel queued right after
        // the fourth one (2.807 + 0.030 ms) but launched at 0.837 ms: shifted by the floor it
        // would start 0.452 ms before its call began, so the floor is not a clock offset
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
        let right = host_bound(2500.0);
        for g in &right.gpu {
            let call = &right.cpu[g.launch as usize];
            let c = b.runtime("cudaLaunchKernel", 0, call.start as f64 / 1e3, 5.0);
            b.gpu(GpuKind::Kernel, "k", 0, 7, g.start as f64 / 1e3, 30.0, c);
        }
        let c = b.runtime("cudaLaunchKernel", 1, 837.0, 5.0);
        b.gpu(GpuKind::Kernel, "k", 0, 7, 2837.0, 30.0, c);
        let e = estimate(&b.build())[0];
        assert!(e.suspected());
        assert_eq!((e.anchors, e.at_floor, e.offset), (19, 19, None));
    }
}
