//! Where device memory goes over the window: the memory timeline per device, from the blocks
//! of [`crate::model::memory`] (`profile_memory=True`).
//!
//! # Definitions
//!
//! * **Allocated** at time `t`: the bytes allocated before the first event (`Total Allocated` −
//!   `Bytes` of the earliest event), plus every block allocated at or before `t`, minus every
//!   block freed before `t` (allocations at one timestamp are taken before frees, see
//!   [`crate::model::memory::MemoryEvents`]). It equals the profiler's `Total Allocated`
//!   whenever every allocation of the device was recorded.
//! * **Reserved**: the last `Total Reserved` at or before `t` (what the caching allocator holds
//!   from the driver).
//! * **Peak**: the largest allocated total inside the window (the first time it is reached);
//!   **live at the peak**: the blocks allocated at or before it and not freed before it,
//!   grouped by the operator that allocated them — the outermost operator (`aten::linear`,
//!   `autograd::engine::evaluate_function: …`) running on the allocating thread at that
//!   moment — and by its phase (the outermost annotation or module call on that thread;
//!   `(unannotated)` outside any). Bytes allocated before the trace began are one group.
//! * **Held by the allocator** at the peak: reserved − allocated.
//! * **Churn** per step: allocations and frees inside the step's span, count and bytes.

use serde::Serialize;

use super::phases::UNANNOTATED;
use crate::model::fast::HashMap;
use crate::model::memory::{MemBlock, MemoryEvents};
use crate::model::{CpuKind, Interval, Ns, Trace, NONE};
use crate::window::annotations::is_phase_event;
use crate::window::steps::Step;

/// Points kept for the chart of one device.
pub const CHART_POINTS: usize = 600;

/// Live blocks at the peak grouped by allocating operator and phase.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct LiveGroup {
    /// Outermost operator on the allocating thread (`(before the trace)` for bytes allocated
    /// before the first event, `(no operator)` outside any).
    pub op: String,
    /// Its phase (outermost annotation or module call on that thread).
    pub phase: String,
    /// Blocks.
    pub blocks: u64,
    /// Bytes.
    pub bytes: u64,
}

/// One of the largest allocations of the window.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct LargeAlloc {
    /// Bytes.
    pub bytes: u64,
    /// Allocated at, µs since the trace start.
    pub at_us: f64,
    /// Held for, µs (absent when not freed in the trace).
    pub held_us: Option<f64>,
    /// Allocating operator.
    pub op: String,
    /// Its phase.
    pub phase: String,
}

/// Allocation churn of one step.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct StepChurn {
    /// Step name.
    pub step: String,
    /// Allocations in the step.
    pub allocs: u64,
    /// Their bytes.
    pub alloc_bytes: u64,
    /// Frees in the step.
    pub frees: u64,
    /// Their bytes.
    pub freed_bytes: u64,
    /// Highest allocated total in the step.
    pub peak_allocated: i64,
}

/// One point of the chart: allocated and reserved after the events at `t_us`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct MemPoint {
    /// µs since the trace start.
    pub t_us: f64,
    /// Allocated bytes (the highest value in the point's bucket).
    pub allocated: i64,
    /// Reserved bytes (-1 when not recorded).
    pub reserved: i64,
}

/// The memory timeline of one device over the window.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct DeviceMemory {
    /// Device id.
    pub device: i64,
    /// Device memory, bytes (absent when the trace does not say).
    pub capacity: Option<u64>,
    /// Allocated at the window start.
    pub start_allocated: i64,
    /// Peak allocated in the window.
    pub peak_allocated: i64,
    /// When, µs since the trace start.
    pub peak_at_us: f64,
    /// Step of the peak (absent outside any step).
    pub peak_step: Option<String>,
    /// Reserved at the peak (-1 when not recorded).
    pub reserved_at_peak: i64,
    /// Reserved − allocated at the peak (0 when reserved is not recorded).
    pub held_at_peak: i64,
    /// Largest reserved total in the window (-1 when not recorded).
    pub peak_reserved: i64,
    /// Blocks live at the peak by operator and phase, largest first (all groups).
    pub live_at_peak: Vec<LiveGroup>,
    /// Bytes live at the peak by phase, largest first.
    pub live_by_phase: Vec<(String, u64)>,
    /// The largest allocations made in the window (up to 10).
    pub largest: Vec<LargeAlloc>,
    /// Allocations and frees per step.
    pub churn: Vec<StepChurn>,
    /// Allocated and reserved over the window, at most [`CHART_POINTS`] points.
    pub points: Vec<MemPoint>,
    /// Frees whose allocation was not recorded (in the whole trace).
    pub unmatched_frees: u64,
    /// Largest `Total Allocated` the profiler recorded in the whole trace (-1 when the trace
    /// has no `Total Allocated`).
    pub recorded_peak: i64,
    /// False when the events carry no `Addr` (PyTorch before 1.10): frees cannot be paired
    /// with allocations, so `live_at_peak`, `live_by_phase` and `held_us` are empty.
    pub blocks_known: bool,
}

/// The memory timeline of every device with memory events.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct MemoryAnalysis {
    /// Per device, by id.
    pub devices: Vec<DeviceMemory>,
    /// Memory events in the trace.
    pub events: u64,
}

/// The outermost operator and phase running on the allocating thread of each block when it
/// was allocated: one sweep over the host spans in start order with the blocks in time order,
/// keeping only the current outermost span per thread (no table of spans).
fn attribute<'t>(trace: &'t Trace, blocks: &[&MemBlock]) -> Vec<(&'t str, &'t str)> {
    let mut out = vec![(BEFORE, UNANNOTATED); blocks.len()];
    let mut order: Vec<u32> = (0..blocks.len() as u32)
        .filter(|&i| {
            let b = blocks[i as usize];
            b.alloc != Ns::MIN && b.thread != NONE
        })
        .collect();
    order.sort_unstable_by_key(|&i| blocks[i as usize].alloc);
    // per thread: (end, cpu index) of the current outermost operator and phase
    let none = (Ns::MIN, NONE);
    let mut op = vec![none; trace.threads.len()];
    let mut phase = vec![none; trace.threads.len()];
    // per name: 0 not looked at, 1 opens a phase, 2 does not
    let mut opens: Vec<u8> = vec![0; trace.names.len()];
    let mut ci = 0usize;
    for i in order {
        let b = blocks[i as usize];
        while let Some(e) = trace.cpu.get(ci).filter(|e| e.start <= b.alloc) {
            let th = e.thread as usize;
            if e.kind == CpuKind::Op && op.get(th).is_some_and(|s| e.start >= s.0) {
                op[th] = (e.end(), ci as u32);
            }
            if phase.get(th).is_some_and(|s| e.start >= s.0) {
                let k = &mut opens[e.name.0 as usize];
                if *k == 0 {
                    *k = if is_phase_event(e.kind, e.is_module, trace.name(e.name)) {
                        1
                    } else {
                        2
                    };
                }
                if *k == 1 {
                    phase[th] = (e.end(), ci as u32);
                }
            }
            ci += 1;
        }
        let at = |v: &[(Ns, u32)], default: &'t str| {
            v.get(b.thread as usize)
                .filter(|s| s.1 != NONE && b.alloc <= s.0)
                .map_or(default, |s| trace.name(trace.cpu[s.1 as usize].name))
        };
        out[i as usize] = (at(&op, NO_OP), at(&phase, UNANNOTATED));
    }
    out
}

/// Group name of the bytes allocated before the trace began.
pub const BEFORE: &str = "(before the trace)";
/// Group name of blocks allocated outside any operator.
pub const NO_OP: &str = "(no operator)";

/// Chart points: per slice of the window, the highest allocated value (so the peak is drawn).
struct Chart {
    start: Ns,
    span: Ns,
    bucket: i64,
    points: Vec<(Ns, i64)>,
}

impl Chart {
    fn new(window: Interval) -> Self {
        Chart {
            start: window.start,
            span: (window.end - window.start).max(1),
            bucket: -1,
            points: Vec::with_capacity(CHART_POINTS + 1),
        }
    }
    fn add(&mut self, t: Ns, v: i64) {
        // 64-bit when the product fits (times under ~178 days into the window), 128-bit past that
        let d = t - self.start;
        let b = match d.checked_mul(CHART_POINTS as i64) {
            Some(x) => x / self.span,
            None => (d as i128 * CHART_POINTS as i128 / self.span as i128) as i64,
        };
        match self.points.last_mut() {
            Some(last) if b == self.bucket => {
                if v > last.1 {
                    *last = (t, v);
                }
            }
            _ => {
                self.bucket = b;
                self.points.push((t, v));
            }
        }
    }
}

/// The largest `n` blocks, by size then allocation time.
fn largest<'b>(it: impl Iterator<Item = &'b MemBlock>, n: usize) -> Vec<&'b MemBlock> {
    let mut top: Vec<&MemBlock> = Vec::with_capacity(n + 1);
    for b in it {
        if top.len() == n && top.last().is_some_and(|l| l.bytes >= b.bytes) {
            continue;
        }
        let k = top.partition_point(|x| x.bytes >= b.bytes);
        top.insert(k, b);
        top.truncate(n);
    }
    top
}

/// The step `t` lies in (index into `steps`).
fn step_of(steps: &[Step], t: Ns) -> Option<usize> {
    let k = steps.partition_point(|s| s.span.start <= t);
    (k > 0 && t < steps[k - 1].span.end).then(|| k - 1)
}

/// What the walk over one device's allocations and frees gives.
struct Walk {
    /// Allocations and frees per step.
    churn: Vec<StepChurn>,
    /// Allocated at the window start.
    start_allocated: i64,
    /// Peak allocated in the window, and when.
    peak: (i64, Ns),
    /// The chart's points.
    chart: Chart,
}

/// The walk over device `dev`'s blocks in allocation order merged with its frees in free
/// order, from `base` allocated: allocations at a time before its frees (the highest value at
/// that time).
fn walk(all: &[MemBlock], dev: i32, base: i64, window: Interval, steps: &[Step]) -> Walk {
    // (free time, block) pairs: the sort compares its keys in place
    let mut frees: Vec<(Ns, u32)> = all
        .iter()
        .enumerate()
        .filter(|(_, b)| b.device == dev && b.free != Ns::MAX)
        .map(|(i, b)| (b.free, i as u32))
        .collect();
    frees.sort_unstable();
    // the walk: allocations at a time before its frees (the highest value at that time)
    let mut churn: Vec<StepChurn> = steps
        .iter()
        .map(|s| StepChurn {
            step: s.name.clone(),
            allocs: 0,
            alloc_bytes: 0,
            frees: 0,
            freed_bytes: 0,
            peak_allocated: i64::MIN,
        })
        .collect();
    let mut entered = 0usize; // steps whose start the walk has passed
    let mut cur = base;
    let mut start_allocated = None;
    let mut peak: Option<(i64, Ns)> = None;
    let mut chart = Chart::new(window);
    let (mut ai, mut fi) = (0usize, 0usize);
    let next_alloc = |ai: &mut usize| {
        while *ai < all.len() && (all[*ai].device != dev || all[*ai].alloc == Ns::MIN) {
            *ai += 1;
        }
        all.get(*ai).map(|b| b.alloc)
    };
    loop {
        let ta = next_alloc(&mut ai);
        let tf = frees.get(fi).map(|f| f.0);
        let t = match (ta, tf) {
            (Some(a), Some(f)) => a.min(f),
            (Some(a), None) => a,
            (None, Some(f)) => f,
            (None, None) => break,
        };
        // steps that start at or before t begin at the value before t
        while entered < steps.len() && steps[entered].span.start <= t {
            churn[entered].peak_allocated = cur;
            entered += 1;
        }
        if t >= window.start && t <= window.end && start_allocated.is_none() {
            start_allocated = Some(cur);
        }
        // the step of t: `entered` steps start at or before t (what `step_of` finds by a
        // search; the walk's times never decrease)
        let step = (entered > 0 && t < steps[entered - 1].span.end).then(|| entered - 1);
        debug_assert_eq!(step, step_of(steps, t));
        while let Some(b) = all.get(ai).filter(|b| b.alloc == t) {
            if b.device == dev {
                cur += b.bytes as i64;
                if let Some(k) = step {
                    churn[k].allocs += 1;
                    churn[k].alloc_bytes += b.bytes;
                }
            }
            ai += 1;
        }
        if let Some(k) = step {
            churn[k].peak_allocated = churn[k].peak_allocated.max(cur);
        }
        let inside = t >= window.start && t <= window.end;
        if inside {
            if peak.is_none_or(|p| cur > p.0) {
                peak = Some((cur, t));
            }
            chart.add(t, cur);
        }
        while let Some(&(_, i)) = frees.get(fi).filter(|f| f.0 == t) {
            let b = &all[i as usize];
            cur -= b.bytes as i64;
            if let Some(k) = step {
                churn[k].frees += 1;
                churn[k].freed_bytes += b.bytes;
            }
            fi += 1;
        }
        if inside {
            chart.add(t, cur);
        }
    }
    drop(frees);
    for c in &mut churn[entered..] {
        c.peak_allocated = cur;
    }
    Walk {
        churn,
        start_allocated: start_allocated.unwrap_or(cur),
        peak: peak.unwrap_or((cur, window.start)),
        chart,
    }
}

/// The blocks of device `dev` live at the peak, grouped by operator and phase (largest
/// first), and their bytes by phase; what was allocated before the trace began counts as
/// `(before the trace)` when blocks are known.
fn live_at_peak(
    trace: &Trace,
    dev: i32,
    peak_allocated: i64,
    peak_t: Ns,
    blocks_known: bool,
) -> (Vec<LiveGroup>, Vec<(String, u64)>) {
    let all = &trace.memory.blocks;
    let on = |b: &&MemBlock| b.device == dev;
    let mut groups: HashMap<(&str, &str), (u64, u64)> = HashMap::default();
    let mut by_phase: HashMap<&str, u64> = HashMap::default();
    let mut live_bytes: i64 = 0;
    let live: Vec<&MemBlock> = all
        .iter()
        .filter(on)
        .filter(|b| blocks_known && b.live_at(peak_t) && b.alloc != Ns::MIN)
        .collect();
    for (b, (op, phase)) in live.iter().zip(attribute(trace, &live)) {
        let g = groups.entry((op, phase)).or_default();
        g.0 += 1;
        g.1 += b.bytes;
        *by_phase.entry(phase).or_default() += b.bytes;
        live_bytes += b.bytes as i64;
    }
    let before = peak_allocated - live_bytes;
    if before > 0 && blocks_known {
        groups.insert((BEFORE, UNANNOTATED), (0, before as u64));
        *by_phase.entry(UNANNOTATED).or_default() += before as u64;
    }
    let mut live_at_peak: Vec<LiveGroup> = groups
        .into_iter()
        .map(|((op, phase), (n, bytes))| LiveGroup {
            op: op.to_string(),
            phase: phase.to_string(),
            blocks: n,
            bytes,
        })
        .collect();
    live_at_peak.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then_with(|| a.op.cmp(&b.op))
            .then_with(|| a.phase.cmp(&b.phase))
    });
    let mut live_by_phase: Vec<(String, u64)> = by_phase
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    live_by_phase.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    (live_at_peak, live_by_phase)
}

/// The largest allocations of device `dev` made in the window (up to 10).
fn largest_allocations(
    trace: &Trace,
    dev: i32,
    window: Interval,
    blocks_known: bool,
) -> Vec<LargeAlloc> {
    let all = &trace.memory.blocks;
    let on = |b: &&MemBlock| b.device == dev;
    let origin = trace.start();
    let rel = |t: Ns| (t - origin) as f64 / 1000.0;
    let top = largest(
        all.iter()
            .filter(on)
            .filter(|b| b.alloc >= window.start && b.alloc <= window.end),
        10,
    );
    top.iter()
        .zip(attribute(trace, &top))
        .map(|(b, (op, phase))| LargeAlloc {
            bytes: b.bytes,
            at_us: rel(b.alloc),
            held_us: (blocks_known && b.free != Ns::MAX)
                .then(|| (b.free - b.alloc) as f64 / 1000.0),
            op: op.to_string(),
            phase: phase.to_string(),
        })
        .collect()
}

/// The memory timeline of every device over `window` (its steps give the churn).
///
/// One walk per device over its blocks in allocation order and, merged with them, its frees in
/// free order (an index sorted by free time: 4 bytes per block); no per-event series is kept.
pub fn memory_timeline(trace: &Trace, window: Interval, steps: &[Step]) -> Option<MemoryAnalysis> {
    let m: &MemoryEvents = &trace.memory;
    if m.is_empty() || m.blocks.is_empty() {
        return None;
    }
    let origin = trace.start();
    let rel = |t: Ns| (t - origin) as f64 / 1000.0;
    let mut out = MemoryAnalysis {
        devices: Vec::new(),
        events: m.events,
    };
    let all = &m.blocks;
    for dev in m.devices() {
        let on = |b: &&MemBlock| b.device == dev;
        let base = m.base.iter().find(|b| b.0 == dev).map_or(0, |b| b.2);
        let reserved: Vec<(Ns, i64)> = m
            .reserved
            .iter()
            .filter(|r| r.device == dev)
            .map(|r| (r.ts, r.bytes))
            .collect();
        let reserved_at = |t: Ns| {
            let k = reserved.partition_point(|r| r.0 <= t);
            if k == 0 {
                -1
            } else {
                reserved[k - 1].1
            }
        };
        let Walk {
            churn,
            start_allocated,
            peak: (peak_allocated, peak_t),
            chart,
        } = walk(all, dev, base, window, steps);
        let blocks_known = m.without_addr == 0;
        let (live_at_peak, live_by_phase) =
            live_at_peak(trace, dev, peak_allocated, peak_t, blocks_known);
        let largest = largest_allocations(trace, dev, window, blocks_known);
        let peak_reserved = reserved
            .iter()
            .filter(|r| r.0 >= window.start && r.0 <= window.end)
            .map(|r| r.1)
            .max()
            .unwrap_or_else(|| reserved_at(window.start));
        let reserved_at_peak = reserved_at(peak_t);
        let points = chart
            .points
            .iter()
            .map(|&(t, v)| MemPoint {
                t_us: rel(t),
                allocated: v,
                reserved: reserved_at(t),
            })
            .collect();
        let peak_step = step_of(steps, peak_t).map(|k| steps[k].name.clone());
        out.devices.push(DeviceMemory {
            device: dev as i64,
            capacity: trace.device(dev as i64).and_then(|d| d.memory_bytes),
            start_allocated,
            peak_allocated,
            peak_at_us: rel(peak_t),
            peak_step,
            reserved_at_peak,
            held_at_peak: if reserved_at_peak >= 0 {
                reserved_at_peak - peak_allocated
            } else {
                0
            },
            peak_reserved,
            live_at_peak,
            live_by_phase,
            largest,
            churn,
            points,
            unmatched_frees: all.iter().filter(on).filter(|b| b.alloc == Ns::MIN).count() as u64,
            recorded_peak: m
                .recorded_peak
                .iter()
                .find(|r| r.0 == dev)
                .map_or(-1, |r| r.1),
            blocks_known,
        });
    }
    Some(out)
}
