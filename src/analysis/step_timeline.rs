//! The device timeline of one representative step: what each stream ran, where the device sat
//! idle, and where the host or the device synchronized. The HTML report draws it; the JSON
//! report carries it as `step_timeline`.
//!
//! # Definition
//!
//! * **Representative step**: the step of median duration among the analyzed steps (sorted by
//!   duration, the element at index `(n - 1) / 2`, the earlier step on ties).
//! * **Events**: kernels, copies and fills ([`GpuEvent::is_activity`]) that overlap the step's
//!   span, linked to a launch or not, clipped to the span. They are grouped by device, then by
//!   stream (one lane per stream, by stream id); each carries its category
//!   ([`crate::model::classify::categorize`] for kernels; copies and fills are `memcpy`/`memset`).
//! * **Cap**: when more than `max_events` events would be listed over all devices, consecutive
//!   events of a lane are merged into one [`Block`] wherever the time between them is at most
//!   a threshold, chosen as the smallest that brings the total to `max_events` or below. An
//!   aggregated block keeps its event count, the sum of its events' durations, the category
//!   with the most time and the name of its longest event. Nothing is dropped: every event is
//!   in exactly one block.
//! * **Idle gaps** of a device: the step span minus the union of that device's events over all
//!   its streams, including the time before its first and after its last event. `idle` is
//!   their total; the longest are listed (in time order; [`MAX_GAPS`] over all devices, an
//!   equal share per device but at least [`MIN_GAPS`]), `gap_count` counts all.
//! * **Syncs**: device-side synchronization records ([`GpuKind::Sync`], `cuda_sync`) of the
//!   device, and the host calls that wait for the device as [`super::host::sync_calls::sync_calls`]
//!   defines them (stream, device and event syncs, blocking copies), both overlapping the step
//!   and clipped to it; at most [`MAX_SYNCS`] of each list are kept.

use std::collections::BTreeMap;

use super::host::sync_calls::SyncKind;
use crate::model::classify::{KernelCategory, KernelClasses};
use crate::model::{GpuEvent, GpuKind, Interval, IntervalSet, NameId, Ns, Trace};
use crate::window::steps::Step;

/// Default cap on the events listed over all devices.
pub const MAX_EVENTS: usize = 1600;
/// Idle gaps listed over all devices (the longest ones of each device, an equal share each,
/// at least [`MIN_GAPS`] per device).
pub const MAX_GAPS: usize = 400;
/// Idle gaps listed per device at least.
pub const MIN_GAPS: usize = 50;
/// Sync records listed per device, and host sync calls listed.
pub const MAX_SYNCS: usize = 200;

/// One drawn item: a single device event, or several consecutive ones merged by the cap.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// Start, ns (clipped to the step).
    pub start: Ns,
    /// Duration, ns (clipped to the step); for an aggregate, first start to last end.
    pub dur: Ns,
    /// The event's name; for an aggregate, the name of its longest event.
    pub name: NameId,
    /// Kind of the (longest) event.
    pub kind: GpuKind,
    /// Category; for an aggregate, the category with the most time.
    pub category: KernelCategory,
    /// Events in the block (1 for a single event).
    pub count: u32,
    /// Sum of the events' clipped durations, ns (equals `dur` for a single event).
    pub busy: Ns,
}

/// One stream of a device.
#[derive(Clone, Debug, PartialEq)]
pub struct Lane {
    /// Stream id.
    pub stream: i64,
    /// Blocks in start order.
    pub blocks: Vec<Block>,
}

/// A synchronization record or call.
#[derive(Clone, Debug, PartialEq)]
pub struct SyncMark {
    /// Start, ns (clipped to the step).
    pub start: Ns,
    /// Duration, ns (clipped to the step).
    pub dur: Ns,
    /// Name (`cudaStreamSynchronize`, `Event Sync`, ...).
    pub name: NameId,
}

/// One device during the step.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceSteps {
    /// Device id.
    pub device: i64,
    /// Streams by id.
    pub lanes: Vec<Lane>,
    /// Events of the device that overlap the step.
    pub events: u64,
    /// Union of those events within the step, ns.
    pub busy: Ns,
    /// Step duration minus `busy`, ns.
    pub idle: Ns,
    /// Number of idle gaps.
    pub gap_count: u64,
    /// The longest idle gaps, in time order (see [`MAX_GAPS`]).
    pub gaps: Vec<Interval>,
    /// Device-side sync records, in time order.
    pub syncs: Vec<SyncMark>,
}

/// The representative step's timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct StepTimeline {
    /// Step name.
    pub step: String,
    /// Index of the step in the analyzed steps.
    pub step_index: usize,
    /// The step's span.
    pub span: Interval,
    /// Devices with work in the step, by id.
    pub devices: Vec<DeviceSteps>,
    /// Host synchronization calls in the step, in time order.
    pub host_syncs: Vec<SyncMark>,
    /// Events over all devices.
    pub events: u64,
    /// Blocks listed over all devices (`< events` when the cap merged some).
    pub blocks: u64,
}

/// Index of the step of median duration (the earlier one on ties), or `None` without steps.
pub fn representative_step(steps: &[Step]) -> Option<usize> {
    if steps.is_empty() {
        return None;
    }
    let mut order: Vec<usize> = (0..steps.len()).collect();
    order.sort_by_key(|&i| (steps[i].span.len(), i));
    Some(order[(order.len() - 1) / 2])
}

fn category_of(classes: &KernelClasses, g: &GpuEvent) -> KernelCategory {
    match g.kind {
        GpuKind::Memcpy => KernelCategory::Memcpy,
        GpuKind::Memset => KernelCategory::Memset,
        _ => classes.get(g.name).category,
    }
}

/// True when `[start, start + dur)` overlaps the span (a zero-length event: lies inside it).
fn overlaps(span: Interval, start: Ns, dur: Ns) -> bool {
    if dur > 0 {
        start < span.end && start + dur > span.start
    } else {
        start >= span.start && start < span.end
    }
}

/// At most `max` of a sequence of `n` elements, evenly spaced, chosen as the sequence goes by
/// (its length known first): `keep` says, for the elements in order, whether each one is
/// kept, so the sequence is never held whole (a capture can hold a million sync calls).
struct Thinning {
    n: usize,
    max: usize,
    i: usize,
}

impl Thinning {
    fn new(n: usize, max: usize) -> Self {
        Thinning { n, max, i: 0 }
    }

    fn keep(&mut self) -> bool {
        let (i, n, max) = (self.i, self.n, self.max);
        self.i += 1;
        max != 0 && (n <= max || (i * max) / n != ((i + 1) * max) / n)
    }
}

struct Ev {
    start: Ns,
    end: Ns,
    name: NameId,
    kind: GpuKind,
    category: KernelCategory,
}

/// Merges consecutive events of a lane whose distance is at most `threshold` (`None`: keep
/// every event as its own block).
fn blocks_of(evs: &[Ev], threshold: Option<Ns>) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    let mut i = 0;
    while i < evs.len() {
        let mut j = i + 1;
        let mut end = evs[i].end;
        if let Some(t) = threshold {
            while j < evs.len() && evs[j].start - end <= t {
                end = end.max(evs[j].end);
                j += 1;
            }
        }
        let group = &evs[i..j];
        let longest = group
            .iter()
            .max_by_key(|e| (e.end - e.start, std::cmp::Reverse(e.start)))
            .expect("non-empty group");
        let mut by_cat: BTreeMap<KernelCategory, Ns> = BTreeMap::new();
        for e in group {
            *by_cat.entry(e.category).or_default() += e.end - e.start;
        }
        let category = by_cat
            .iter()
            .max_by_key(|(c, t)| (**t, std::cmp::Reverse(**c)))
            .map(|(c, _)| *c)
            .unwrap_or(longest.category);
        out.push(Block {
            start: evs[i].start,
            dur: end - evs[i].start,
            name: longest.name,
            kind: longest.kind,
            category,
            count: group.len() as u32,
            busy: group.iter().map(|e| e.end - e.start).sum(),
        });
        i = j;
    }
    out
}

/// The timeline of the representative step, with at most `max_events` blocks over all
/// devices. `None` when there is no step or the trace has no device activity.
pub fn step_timeline(trace: &Trace, steps: &[Step], max_events: usize) -> Option<StepTimeline> {
    step_timeline_with(
        trace,
        steps,
        max_events,
        &super::host::sync_calls::sync_calls(trace),
    )
}

/// [`step_timeline`] with the trace's sync calls already found
/// ([`super::host::sync_calls::sync_calls`]).
pub fn step_timeline_with(
    trace: &Trace,
    steps: &[Step],
    max_events: usize,
    syncs: &[(u32, SyncKind)],
) -> Option<StepTimeline> {
    let idx = representative_step(steps)?;
    if !trace.gpu.iter().any(|g| g.is_activity()) {
        return None;
    }
    let span = steps[idx].span;
    let clip = |start: Ns, end: Ns| (start.max(span.start), end.min(span.end));

    // Events overlapping the step (zero-length ones inside it count), per device and stream.
    let upper = trace.gpu.partition_point(|g| g.start < span.end);
    let mut lanes: BTreeMap<i64, BTreeMap<i64, Vec<Ev>>> = BTreeMap::new();
    // device syncs: counted per device here, the kept ones taken in a second pass (a
    // capture can hold a million)
    let mut dev_sync_count: BTreeMap<i64, usize> = BTreeMap::new();
    let classes = trace.kernel_classes();
    for g in &trace.gpu[..upper] {
        if !overlaps(span, g.start, g.dur) {
            continue;
        }
        let (s, e) = clip(g.start, g.end());
        if g.is_activity() {
            lanes
                .entry(g.device as i64)
                .or_default()
                .entry(g.stream as i64)
                .or_default()
                .push(Ev {
                    start: s,
                    end: e,
                    name: g.name,
                    kind: g.kind,
                    category: category_of(&classes, g),
                });
        } else if g.kind == GpuKind::Sync {
            *dev_sync_count.entry(g.device as i64).or_default() += 1;
        }
    }
    let mut dev_syncs: BTreeMap<i64, (Thinning, Vec<SyncMark>)> = dev_sync_count
        .into_iter()
        .map(|(d, n)| (d, (Thinning::new(n, MAX_SYNCS), Vec::new())))
        .collect();
    // the device syncs the first pass counted, in the same order
    let synced =
        |g: &&crate::model::GpuEvent| g.kind == GpuKind::Sync && overlaps(span, g.start, g.dur);
    for g in trace.gpu[..upper].iter().filter(synced) {
        if let Some((thinning, kept)) = dev_syncs.get_mut(&(g.device as i64)) {
            if thinning.keep() {
                let (s, e) = clip(g.start, g.end());
                kept.push(SyncMark {
                    start: s,
                    dur: e - s,
                    name: g.name,
                });
            }
        }
    }

    // The cap: find the smallest merge distance that brings the blocks under `max_events`.
    let events: usize = lanes.values().flat_map(|l| l.values()).map(Vec::len).sum();
    let lane_count: usize = lanes.values().map(|l| l.len()).sum();
    let threshold = if events <= max_events {
        None
    } else {
        // distances between consecutive events of a lane (to the running end)
        let mut dists: Vec<Ns> = Vec::with_capacity(events);
        for evs in lanes.values().flat_map(|l| l.values()) {
            let mut end = Ns::MIN;
            for (i, e) in evs.iter().enumerate() {
                if i > 0 {
                    dists.push(e.start - end);
                }
                end = end.max(e.end);
            }
        }
        dists.sort_unstable_by(|a, b| b.cmp(a));
        // blocks(t) = lanes + #{d > t}; keep at most `max_events - lanes` boundaries
        let keep = max_events.saturating_sub(lane_count);
        Some(match dists.get(keep) {
            Some(&d) => d.max(0),
            None => 0,
        })
    };

    let mut devices = Vec::new();
    let mut blocks_total = 0u64;
    let max_gaps = (MAX_GAPS / lanes.len().max(1)).max(MIN_GAPS);
    for (device, streams) in lanes {
        let all = IntervalSet::from_intervals(
            streams
                .values()
                .flat_map(|v| v.iter().map(|e| Interval::new(e.start, e.end))),
        );
        let busy = all.total();
        let idle_set = IntervalSet::from_intervals([span]).subtract(&all);
        let mut gaps: Vec<Interval> = idle_set.spans().to_vec();
        let gap_count = gaps.len() as u64;
        if gaps.len() > max_gaps {
            gaps.sort_by_key(|g| (std::cmp::Reverse(g.len()), g.start));
            gaps.truncate(max_gaps);
            // the kept gaps outlive the analysis: not the capacity of every gap
            gaps.shrink_to_fit();
            gaps.sort_by_key(|g| g.start);
        }
        let ev_count: usize = streams.values().map(Vec::len).sum();
        let lanes: Vec<Lane> = streams
            .into_iter()
            .map(|(stream, evs)| Lane {
                stream,
                blocks: blocks_of(&evs, threshold),
            })
            .collect();
        blocks_total += lanes.iter().map(|l| l.blocks.len() as u64).sum::<u64>();
        devices.push(DeviceSteps {
            device,
            lanes,
            events: ev_count as u64,
            busy,
            idle: span.len() - busy,
            gap_count,
            gaps,
            syncs: dev_syncs.remove(&device).map(|d| d.1).unwrap_or_default(),
        });
    }

    let host_sync_calls = || {
        syncs
            .iter()
            .map(|&(i, _)| &trace.cpu[i as usize])
            .filter(|c| overlaps(span, c.start, c.dur))
    };
    let mut thinning = Thinning::new(host_sync_calls().count(), MAX_SYNCS);
    let host_syncs: Vec<SyncMark> = host_sync_calls()
        .filter(|_| thinning.keep())
        .map(|c| {
            let (s, e) = clip(c.start, c.end());
            SyncMark {
                start: s,
                dur: e - s,
                name: c.name,
            }
        })
        .collect();

    Some(StepTimeline {
        step: steps[idx].name.clone(),
        step_index: idx,
        span,
        devices,
        host_syncs,
        events: events as u64,
        blocks: blocks_total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::build::TraceBuilder;
    use crate::window::steps::analyze_steps;

    /// Three steps of 100, 300 and 200 µs; each launches kernels on stream 7 and a copy on
    /// stream 9, and the middle-length step syncs.
    fn three_steps() -> Trace {
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100", 108, 40 << 30);
        for (i, (start, len)) in [(0.0, 100.0), (100.0, 300.0), (400.0, 200.0)]
            .into_iter()
            .enumerate()
        {
            b.annotation(&format!("ProfilerStep#{i}"), start, len);
            b.op_with_kernel(
                "aten::mm",
                "volta_sgemm_128x64_nn",
                start + 2.0,
                10.0,
                start + 20.0,
                30.0,
            );
            b.op_with_kernel(
                "aten::add",
                "vectorized_elementwise_kernel<add>",
                start + 14.0,
                10.0,
                start + 55.0,
                5.0,
            );
            let ext = b.op("aten::copy_", start + 30.0, 10.0);
            let c = b.runtime("cudaMemcpyAsync", ext, start + 31.0, 5.0);
            b.gpu(
                GpuKind::Memcpy,
                "Memcpy HtoD (Pageable -> Device)",
                0,
                9,
                start + 40.0,
                10.0,
                c,
            );
            if i == 2 {
                b.runtime("cudaMemcpy", 0, start + 95.0, 5.0);
                b.runtime("cudaStreamSynchronize", 0, start + 60.0, 30.0);
                b.gpu(GpuKind::Sync, "Stream Sync", 0, 7, start + 62.0, 1.0, 0);
            }
        }
        b.build()
    }

    #[test]
    fn median_step_lanes_gaps_and_syncs() {
        let t = three_steps();
        let st = analyze_steps(&t);
        assert_eq!(st.steps.len(), 3);
        let tl = step_timeline(&t, &st.steps, MAX_EVENTS).unwrap();
        assert_eq!(
            tl.step, "ProfilerStep#2",
            "200 µs is the median of 100/300/200"
        );
        assert_eq!(tl.step_index, 2);
        assert_eq!(tl.devices.len(), 1);
        let d = &tl.devices[0];
        assert_eq!(
            d.lanes.iter().map(|l| l.stream).collect::<Vec<_>>(),
            vec![7, 9]
        );
        let k = &d.lanes[0].blocks;
        assert_eq!(k.len(), 2);
        assert_eq!((k[0].start, k[0].dur, k[0].count), (420_000, 30_000, 1));
        assert_eq!(t.name(k[0].name), "volta_sgemm_128x64_nn");
        assert_eq!(k[0].category, KernelCategory::Gemm);
        assert_eq!(k[1].category, KernelCategory::Elementwise);
        let c = &d.lanes[1].blocks[0];
        assert_eq!(
            (c.kind, c.category),
            (GpuKind::Memcpy, KernelCategory::Memcpy)
        );
        // busy: 20..50 (kernel 20..50 and copy 40..50 overlap) + 55..60 = 35 µs of 200
        assert_eq!(d.busy, 35_000);
        assert_eq!(d.idle, 165_000);
        assert_eq!(
            d.gaps,
            vec![
                Interval::new(400_000, 420_000),
                Interval::new(450_000, 455_000),
                Interval::new(460_000, 600_000)
            ]
        );
        assert_eq!(d.gap_count, 3);
        assert_eq!(d.gaps.iter().map(|g| g.len()).sum::<Ns>(), d.idle);
        assert_eq!(d.syncs.len(), 1);
        assert_eq!(t.name(d.syncs[0].name), "Stream Sync");
        // the stream sync and the blocking copy, in time order (not the async copy)
        assert_eq!(tl.host_syncs.len(), 2);
        assert_eq!(t.name(tl.host_syncs[0].name), "cudaStreamSynchronize");
        assert_eq!(t.name(tl.host_syncs[1].name), "cudaMemcpy");
        assert_eq!((tl.events, tl.blocks), (3, 3));
    }

    #[test]
    fn cap_merges_close_events_and_keeps_every_one() {
        // one step, 1000 kernels of 1 µs every 2 µs, in bursts of 10 separated by 50 µs
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100", 108, 40 << 30);
        b.annotation("ProfilerStep#0", 0.0, 20_000.0);
        let mut t0 = 10.0;
        for burst in 0..100 {
            for k in 0..10 {
                let name = if k == 3 {
                    "long_gemm_kernel"
                } else {
                    "vectorized_elementwise_kernel"
                };
                let dur = if k == 3 { 1.5 } else { 1.0 };
                b.op_with_kernel("aten::op", name, t0 - 5.0, 3.0, t0, dur);
                t0 += 2.0;
            }
            t0 += 50.0;
            let _ = burst;
        }
        let t = b.build();
        let st = analyze_steps(&t);
        let full = step_timeline(&t, &st.steps, 5000).unwrap();
        assert_eq!((full.events, full.blocks), (1000, 1000));
        let capped = step_timeline(&t, &st.steps, 150).unwrap();
        assert_eq!(capped.events, 1000);
        assert_eq!(capped.blocks, 100, "one block per burst");
        let blocks = &capped.devices[0].lanes[0].blocks;
        assert!(blocks.iter().all(|b| b.count == 10));
        assert_eq!(blocks.iter().map(|b| b.count as u64).sum::<u64>(), 1000);
        assert_eq!(t.name(blocks[0].name), "long_gemm_kernel");
        assert_eq!(blocks[0].category, KernelCategory::Elementwise, "most time");
        assert_eq!(blocks[0].busy, 10_500);
        assert_eq!(blocks[0].dur, 19_000);
        // busy and idle do not depend on the cap
        assert_eq!(capped.devices[0].busy, full.devices[0].busy);
        assert_eq!(capped.devices[0].gap_count, full.devices[0].gap_count);
        // a cap below the lane count leaves one block per lane
        let one = step_timeline(&t, &st.steps, 1).unwrap();
        assert_eq!(one.blocks, 1);
        assert_eq!(one.devices[0].lanes[0].blocks[0].count, 1000);
    }

    #[test]
    fn gap_list_is_shared_between_devices() {
        // 4 devices, each with 300 kernels of 1 µs every 3 µs: 301 gaps per device
        let mut b = TraceBuilder::new();
        b.annotation("ProfilerStep#0", 0.0, 1000.0);
        for dev in 0..4 {
            for k in 0..300 {
                let t0 = 10.0 + 3.0 * k as f64;
                let ext = b.op("aten::add", t0 - 5.0, 3.0);
                let c = b.runtime("cudaLaunchKernel", ext, t0 - 4.5, 1.0);
                b.gpu(GpuKind::Kernel, "add_kernel", dev, 7, t0, 1.0, c);
            }
        }
        let t = b.build();
        let st = analyze_steps(&t);
        let tl = step_timeline(&t, &st.steps, MAX_EVENTS).unwrap();
        assert_eq!(tl.devices.len(), 4);
        for d in &tl.devices {
            assert_eq!(d.gap_count, 301);
            assert_eq!(d.gaps.len(), MAX_GAPS / 4);
            // the longest ones: leading (10 µs) and trailing gaps first
            assert!(d.gaps.iter().any(|g| g.len() == 10_000));
            assert!(d.gaps.windows(2).all(|w| w[0].start < w[1].start));
        }
    }

    #[test]
    fn no_steps_or_no_device_work() {
        let t = three_steps();
        assert!(step_timeline(&t, &[], MAX_EVENTS).is_none());
        let mut b = TraceBuilder::new();
        b.annotation("ProfilerStep#0", 0.0, 10.0);
        b.op("aten::add", 1.0, 2.0);
        let cpu = b.build();
        let st = analyze_steps(&cpu);
        assert!(step_timeline(&cpu, &st.steps, MAX_EVENTS).is_none());
    }

    #[test]
    fn representative_is_lower_median() {
        let t = three_steps();
        let mut steps = analyze_steps(&t).steps;
        assert_eq!(representative_step(&steps), Some(2));
        steps.pop();
        // 100 and 300: the lower median
        assert_eq!(representative_step(&steps), Some(0));
    }

    #[test]
    fn thinning_keeps_count() {
        let kept = |n: usize, max: usize| {
            let mut t = Thinning::new(n, max);
            (0..n).filter(|_| t.keep()).collect::<Vec<usize>>()
        };
        let k = kept(1000, 200);
        assert_eq!(k.len(), 200);
        // evenly spaced: one in every five, the last of each run
        assert!(k.windows(2).all(|w| w[1] - w[0] == 5), "{k:?}");
        assert_eq!((k[0], k[199]), (4, 999));
        assert_eq!(kept(7, 200), (0..7).collect::<Vec<_>>());
        assert!(kept(7, 0).is_empty());
        assert_eq!(kept(201, 200).len(), 200);
    }
}
