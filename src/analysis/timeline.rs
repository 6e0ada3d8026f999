//! Per-device GPU timeline split (TraceLens's `gpu_timeline` definition): computation, exposed
//! communication, exposed memcpy, idle.
//!
//! # Definition
//!
//! For each device (grouped by [`GpuEvent::device`]):
//!
//! * **Events counted**: kernels, memcpys and memsets ([`GpuEvent::is_activity`]) that are
//!   linked to a host launch through a launch flow ([`GpuEvent::flow_linked`]), as TraceLens
//!   does by default (`include_unlinked_kernels=False`). GPU work whose launch is outside the
//!   trace and AMD `gpu_memset` events (which have no flow) are therefore left out.
//!   [`gpu_timeline_with`] can include unlinked events too.
//! * **Classes**: *memcpy* = [`GpuKind::Memcpy`] events, plus ROCm 7.1 copy kernels
//!   (`MEMORY_COPY_*`, `__amd_rocclr_copyBuffer*`, see [`crate::model::classify::is_copy_kernel`]);
//!   *communication* = other events whose name passes [`crate::model::classify::is_communication`];
//!   *computation* = everything else, **memsets included**.
//! * With a window, every event is clipped to it first; events that do not overlap it are
//!   dropped (a zero-length event counts when it lies inside the window).
//! * `computation` = |∪ computation|; `exposed_comm` = |∪ comm − ∪ computation|;
//!   `exposed_memcpy` = |∪ memcpy − ∪ computation − ∪ comm|; `busy` = |∪ all|;
//!   `total` = last end − first start over the counted events (zero-length events included,
//!   like TraceLens's hull); `idle` = total − busy; `total_comm` = |∪ comm|;
//!   `total_memcpy` = |∪ memcpy|.
//!
//! So `computation + exposed_comm + exposed_memcpy + idle == total` exactly (integer ns).
//! Devices without any counted event are omitted (even when they ran unlinked work: see
//! [`GpuTimeline::unlinked`] and [`gpu_timeline_with`]). Results are sorted by device id.
//! Reports use [`gpu_timeline_auto`], which counts unlinked events too where launch flows
//! cannot exist (Nsight Systems input) or are missing for a whole device.

use std::collections::BTreeMap;

use crate::model::classify::KernelClasses;
use crate::model::fast::RunMap;
use crate::model::{GpuEvent, GpuKind, Interval, NameId, Ns, Trace, UnionBuilder};

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
    /// Number of device events counted.
    pub events: u64,
    /// Kernels, copies and fills of this device (overlapping the window) left out because no
    /// launch links them (0 with `include_unlinked`). Large values mean the split covers only
    /// part of the device's work (e.g. work queued before profiling started).
    pub unlinked: u64,
    /// First start and last end of the counted work (empty at 0 when nothing was counted).
    pub span: Interval,
}

impl GpuTimeline {
    /// `part` as a percentage of `total` (0 when total is 0), like TraceLens's `percent`.
    pub fn percent(&self, part: Ns) -> f64 {
        if self.total > 0 {
            part as f64 * 100.0 / self.total as f64
        } else {
            0.0
        }
    }
}

/// The timeline class of a device event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimelineClass {
    /// Kernels that are not communication, and memsets.
    Computation,
    /// Collective kernels (NCCL/RCCL).
    Communication,
    /// Memory copies.
    Memcpy,
}

/// Class of a device event under the TraceLens rules; `None` for events that are not
/// kernels, copies or fills (syncs, GPU annotations).
pub fn timeline_class(trace: &Trace, g: &GpuEvent) -> Option<TimelineClass> {
    let classes = trace.kernel_classes();
    class_with(g, |id| name_flags(&classes, id))
}

/// (copy kernel, communication) of a name.
fn name_flags(classes: &KernelClasses, id: NameId) -> (bool, bool) {
    let c = classes.get(id);
    (c.copy_kernel, c.communication)
}

/// [`timeline_class`] with the name flags from `flags` (a per-name memo on large traces).
fn class_with(
    g: &GpuEvent,
    mut flags: impl FnMut(NameId) -> (bool, bool),
) -> Option<TimelineClass> {
    match g.kind {
        GpuKind::Memcpy => Some(TimelineClass::Memcpy),
        GpuKind::Kernel | GpuKind::Memset => {
            let (copy, comm) = flags(g.name);
            if g.kind == GpuKind::Kernel && copy {
                Some(TimelineClass::Memcpy)
            } else if comm {
                Some(TimelineClass::Communication)
            } else {
                Some(TimelineClass::Computation)
            }
        }
        GpuKind::Sync | GpuKind::Annotation => None,
    }
}

/// The split for every device, over `window` when given; only launch-linked events count
/// (TraceLens's default). See the module documentation for the exact definition.
pub fn gpu_timeline(trace: &Trace, window: Option<Interval>) -> Vec<GpuTimeline> {
    gpu_timeline_with(trace, window, false)
}

/// The split a report shows: TraceLens's linked-only rule ([`gpu_timeline`]) where launch
/// links exist, and every device activity ([`gpu_timeline_with`] with `include_unlinked`)
/// where they cannot: for Nsight Systems input (its activities carry correlation ids, not
/// Kineto flows) and when some device that ran work in the window has no linked event at all
/// (traces written without flow events), which would otherwise vanish from the split.
pub fn gpu_timeline_auto(trace: &Trace, window: Option<Interval>) -> Vec<GpuTimeline> {
    use crate::model::SourceFormat;
    if trace.source.format == SourceFormat::NsysSqlite {
        return gpu_timeline_with(trace, window, true);
    }
    let linked = gpu_timeline(trace, window);
    // the devices that ran work in the window (a few)
    let mut active: Vec<i64> = Vec::new();
    for g in &trace.gpu {
        let d = g.device as i64;
        if g.is_activity()
            && !active.contains(&d)
            && window.is_none_or(|w| overlaps(g.interval(), w))
        {
            active.push(d);
        }
    }
    if active.iter().all(|d| linked.iter().any(|t| t.device == *d)) {
        linked
    } else {
        gpu_timeline_with(trace, window, true)
    }
}

/// Whether `iv` counts inside `window`: it overlaps it, or, when zero-length, lies in it.
fn overlaps(iv: Interval, window: Interval) -> bool {
    if iv.is_empty() {
        iv.start >= window.start && iv.start <= window.end
    } else {
        iv.overlap(&window) > 0
    }
}

#[derive(Default)]
struct DeviceAcc {
    comp: UnionBuilder,
    comm: UnionBuilder,
    memcpy: UnionBuilder,
    first: Ns,
    last: Ns,
    events: u64,
}

/// Like [`gpu_timeline`]; with `include_unlinked`, device events without a launch link count
/// too (TraceLens's `include_unlinked_kernels=True`).
pub fn gpu_timeline_with(
    trace: &Trace,
    window: Option<Interval>,
    include_unlinked: bool,
) -> Vec<GpuTimeline> {
    let mut devices: RunMap<i64, DeviceAcc> = RunMap::default();
    let mut unlinked: BTreeMap<i64, u64> = BTreeMap::new();
    let classes = trace.kernel_classes();
    for g in &trace.gpu {
        let Some(class) = class_with(g, |id| name_flags(&classes, id)) else {
            continue;
        };
        let mut iv = g.interval();
        if let Some(w) = window {
            if !overlaps(iv, w) {
                continue;
            }
            iv = Interval::new(iv.start.max(w.start), iv.end.min(w.end));
        }
        if !(include_unlinked || g.flow_linked) {
            *unlinked.entry(g.device as i64).or_default() += 1;
            continue;
        }
        let acc = devices.get_or_insert_with(g.device as i64, || DeviceAcc {
            first: Ns::MAX,
            last: Ns::MIN,
            ..DeviceAcc::default()
        });
        acc.first = acc.first.min(iv.start);
        acc.last = acc.last.max(iv.end);
        acc.events += 1;
        match class {
            TimelineClass::Computation => acc.comp.push(iv),
            TimelineClass::Communication => acc.comm.push(iv),
            TimelineClass::Memcpy => acc.memcpy.push(iv),
        }
    }
    devices
        .into_sorted()
        .into_iter()
        .map(|(device, acc)| {
            let comp = acc.comp.finish();
            let comm = acc.comm.finish();
            let memcpy = acc.memcpy.finish();
            // measured, not built: exposed = own − covered by higher classes
            let comp_comm = comp.union(&comm);
            let memcpy_covered = memcpy.overlap_total(&comp_comm);
            let exposed_comm = comm.total() - comm.overlap_total(&comp);
            let exposed_memcpy = memcpy.total() - memcpy_covered;
            let span = Interval::new(acc.first, acc.last);
            let total = span.len();
            let busy = comp_comm.total() + memcpy.total() - memcpy_covered;
            GpuTimeline {
                device,
                total,
                computation: comp.total(),
                exposed_comm,
                exposed_memcpy,
                idle: total - busy,
                busy,
                total_comm: comm.total(),
                total_memcpy: memcpy.total(),
                events: acc.events,
                unlinked: unlinked.get(&device).copied().unwrap_or(0),
                span,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::build::TraceBuilder;

    fn kernel(b: &mut TraceBuilder, name: &str, dev: i32, stream: i32, start: f64, dur: f64) {
        let corr = b.runtime("cudaLaunchKernel", 0, start - 5.0, 1.0);
        b.gpu(GpuKind::Kernel, name, dev, stream, start, dur, corr);
    }

    #[test]
    fn empty_trace_gives_no_devices() {
        let t = TraceBuilder::new().build();
        assert!(gpu_timeline(&t, None).is_empty());
        assert!(gpu_timeline(&t, Some(Interval::new(0, 1000))).is_empty());
    }

    #[test]
    fn overlaps_across_streams_count_once() {
        let mut b = TraceBuilder::new();
        kernel(&mut b, "gemm_a", 0, 7, 10.0, 10.0); // [10, 20)
        kernel(&mut b, "gemm_b", 0, 13, 15.0, 10.0); // [15, 25)
        kernel(&mut b, "gemm_c", 0, 7, 30.0, 10.0); // [30, 40)
        let t = b.build();
        let tl = gpu_timeline(&t, None);
        assert_eq!(tl.len(), 1);
        let d = &tl[0];
        assert_eq!(d.device, 0);
        assert_eq!(d.computation, 25_000);
        assert_eq!(d.busy, 25_000);
        assert_eq!(d.total, 30_000);
        assert_eq!(d.idle, 5_000);
        assert_eq!(d.events, 3);
        assert_eq!(
            d.computation + d.exposed_comm + d.exposed_memcpy + d.idle,
            d.total
        );
    }

    #[test]
    fn exposed_comm_and_memcpy() {
        let mut b = TraceBuilder::new();
        kernel(&mut b, "gemm", 0, 7, 0.0, 10.0); // comp [0, 10)
        kernel(&mut b, "ncclDevKernel_AllReduce_Sum_f32", 0, 20, 5.0, 20.0); // comm [5, 25)
        let c = b.runtime("cudaMemcpyAsync", 0, 1.0, 1.0);
        b.gpu(
            GpuKind::Memcpy,
            "Memcpy DtoH (Device -> Pinned)",
            0,
            7,
            20.0,
            10.0,
            c,
        ); // [20, 30)
        let c = b.runtime("cudaMemsetAsync", 0, 1.0, 1.0);
        b.gpu(GpuKind::Memset, "Memset (Device)", 0, 7, 40.0, 2.0, c); // comp [40, 42)
        let t = b.build();
        let d = &gpu_timeline(&t, None)[0];
        assert_eq!(d.computation, 12_000);
        assert_eq!(d.total_comm, 20_000);
        assert_eq!(d.exposed_comm, 15_000); // [10, 25)
        assert_eq!(d.total_memcpy, 10_000);
        assert_eq!(d.exposed_memcpy, 5_000); // [25, 30)
        assert_eq!(d.busy, 32_000);
        assert_eq!(d.total, 42_000);
        assert_eq!(d.idle, 10_000);
        assert_eq!(
            d.computation + d.exposed_comm + d.exposed_memcpy + d.idle,
            d.total
        );
    }

    #[test]
    fn rocm_copy_kernels_are_memcpy() {
        let mut b = TraceBuilder::new();
        kernel(&mut b, "__amd_rocclr_copyBuffer", 0, 0, 0.0, 4.0);
        kernel(&mut b, "MEMORY_COPY_DEVICE_TO_HOST", 0, 0, 10.0, 4.0);
        kernel(&mut b, "__amd_rocclr_fillBufferAligned", 0, 0, 20.0, 4.0);
        let t = b.build();
        let d = &gpu_timeline(&t, None)[0];
        assert_eq!(d.total_memcpy, 8_000);
        assert_eq!(d.computation, 4_000);
    }

    #[test]
    fn unlinked_events_and_syncs_are_left_out() {
        let mut b = TraceBuilder::new();
        kernel(&mut b, "k", 0, 7, 100.0, 10.0);
        b.gpu(
            GpuKind::Kernel,
            "queued_before_profiling",
            0,
            7,
            0.0,
            50.0,
            0,
        );
        let c = b.runtime("cudaStreamSynchronize", 0, 1.0, 1.0);
        b.gpu(GpuKind::Sync, "Stream Sync", 0, 7, 110.0, 500.0, c);
        let t = b.build();
        let d = &gpu_timeline(&t, None)[0];
        assert_eq!(
            (d.computation, d.total, d.events, d.unlinked),
            (10_000, 10_000, 1, 1)
        );
        let d = &gpu_timeline_with(&t, None, true)[0];
        assert_eq!(
            (d.computation, d.total, d.events, d.unlinked),
            (60_000, 110_000, 2, 0)
        );
        // outside the window it is not counted as left out either
        let d = &gpu_timeline(&t, Some(Interval::new(90_000, 200_000)))[0];
        assert_eq!((d.events, d.unlinked), (1, 0));
    }

    #[test]
    fn window_clips_events() {
        let mut b = TraceBuilder::new();
        kernel(&mut b, "a", 0, 7, 0.0, 20.0); // [0, 20)
        kernel(&mut b, "b", 0, 7, 30.0, 20.0); // [30, 50)
        kernel(&mut b, "c", 0, 7, 100.0, 5.0); // outside
        let t = b.build();
        let d = &gpu_timeline(&t, Some(Interval::new(10_000, 40_000)))[0];
        assert_eq!(d.computation, 20_000);
        assert_eq!(d.span, Interval::new(10_000, 40_000));
        assert_eq!(d.total, 30_000);
        assert_eq!(d.idle, 10_000);
        assert_eq!(d.events, 2);
        // a window with nothing in it
        assert!(gpu_timeline(&t, Some(Interval::new(60_000, 90_000))).is_empty());
    }

    #[test]
    fn devices_are_separate() {
        let mut b = TraceBuilder::new();
        kernel(&mut b, "a", 1, 7, 0.0, 10.0);
        kernel(&mut b, "b", 0, 7, 5.0, 10.0);
        let t = b.build();
        let tl = gpu_timeline(&t, None);
        assert_eq!(tl.iter().map(|d| d.device).collect::<Vec<_>>(), vec![0, 1]);
        assert!(tl.iter().all(|d| d.busy == 10_000 && d.idle == 0));
    }

    #[test]
    fn zero_length_events_extend_the_span() {
        let mut b = TraceBuilder::new();
        kernel(&mut b, "a", 0, 7, 10.0, 10.0);
        let c = b.runtime("cudaMemcpyAsync", 0, 1.0, 1.0);
        b.gpu(GpuKind::Memcpy, "Memcpy HtoD", 0, 7, 30.0, 0.0, c);
        let t = b.build();
        let d = &gpu_timeline(&t, None)[0];
        assert_eq!((d.busy, d.total, d.idle), (10_000, 20_000, 10_000));
    }
}
