//! Kernel launches: launch-call vs kernel durations, launch queue depth per stream, and the host
//! time spent blocked on a full launch queue.
//!
//! # Definitions
//!
//! * **Launch call**: a runtime/driver call ([`CpuKind::Runtime`], [`CpuKind::Driver`],
//!   [`CpuKind::OtherRuntime`]) linked by correlation to at least one device activity (kernel,
//!   copy, fill) and not a graph launch. [`is_kernel_launch`] names the calls that launch one
//!   kernel (`cudaLaunchKernel`, `cuLaunchKernelEx`, `hipExtModuleLaunchKernel`, …);
//!   [`is_graph_launch`] names graph replays (`cudaGraphLaunch`, `hipGraphLaunch`), whose
//!   kernels all share one correlation and are left out of per-kernel launch statistics, as
//!   HTA does.
//! * **Short kernel** (HTA's launch-stats class): a kernel launched by a kernel-launch call of
//!   at most 50 µs whose own duration is shorter than that call.
//! * **Queue depth** (HTA's queue length): per device and stream, +1 at the start of each
//!   launch call, −1 when its activity starts on the device, swept in time order (at equal
//!   times the −1 comes first, so the depth is never overstated). Computed over the whole
//!   trace (work queued before the window counts), reported inside the window.
//! * **Queue full**: depth ≥ [`QUEUE_FULL_DEPTH`] (1,000). CUDA blocks the host once about
//!   1,022–1,024 launches are pending on a stream; HTA uses 1,024, the ns_resolution corpus
//!   trace tops out at 1,022, hence a threshold a little under the limit.
//! * **Blocked host time**: for each launch call made while its stream's queue was full, the
//!   part of the call beyond the median duration of same-name launch calls in the window
//!   (`[start + median, end)`), plus every `Command Buffer Full` event (CUPTI overhead record
//!   of the host waiting for room in the command buffer). Their union is
//!   [`LaunchAnalysis::blocked`]: time the host waited for the device, not work of its own.
//!
//! Every count and sum is over activities / calls that overlap the window's counted time
//! ([`crate::window::Window::mask`]).

use crate::model::fast::{HashMap, NameMemo};

use crate::model::{CpuKind, GpuKind, Interval, IntervalSet, NameId, Ns, Trace};

/// Queue depth at which a stream's launch queue counts as full.
pub const QUEUE_FULL_DEPTH: u32 = 1000;

/// HTA's cut-off for "short" launch calls, ns (50 µs).
pub const SHORT_LAUNCH_MAX: Ns = 50_000;

/// Name of the CUPTI overhead record written when the host waits for the command buffer.
pub const COMMAND_BUFFER_FULL: &str = "Command Buffer Full";

/// True for calls that launch one kernel (`cudaLaunchKernel`, `cudaLaunchKernelExC`,
/// `cuLaunchKernel[Ex]`, `hipLaunchKernel`, `hipExtModuleLaunchKernel`,
/// `cudaLaunchCooperativeKernel`, …).
pub fn is_kernel_launch(name: &str) -> bool {
    name.contains("LaunchKernel") || name.contains("LaunchCooperativeKernel")
}

/// True for graph replays (`cudaGraphLaunch`, `hipGraphLaunch`, `cuGraphLaunch`).
pub fn is_graph_launch(name: &str) -> bool {
    name.contains("GraphLaunch")
}

fn is_host_call(kind: CpuKind) -> bool {
    matches!(
        kind,
        CpuKind::Runtime | CpuKind::Driver | CpuKind::OtherRuntime
    )
}

/// Launch queue of one stream.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamQueue {
    /// Device id.
    pub device: i64,
    /// Stream id.
    pub stream: i64,
    /// Launch calls with activities on this stream, in the window.
    pub launches: u64,
    /// Largest depth inside the window.
    pub max_depth: u32,
    /// When it was first reached (ns, trace clock).
    pub max_depth_at: Ns,
    /// Time inside the window with depth ≥ [`QUEUE_FULL_DEPTH`], ns.
    pub full_time: Ns,
}

/// Launch statistics over a window.
#[derive(Clone, Debug, Default)]
pub struct LaunchAnalysis {
    /// Kernels launched one by one (kernel-launch calls) in the window.
    pub kernels: u64,
    /// Of those, kernels shorter than their launch call (call ≤ 50 µs).
    pub short_kernels: u64,
    /// Device time of the short kernels, ns.
    pub short_kernel_time: Ns,
    /// Host time of the launch calls of the short kernels, ns.
    pub short_launch_time: Ns,
    /// Kernel-launch calls in the window.
    pub launch_calls: u64,
    /// Their total duration, ns.
    pub launch_time: Ns,
    /// Median kernel-launch call duration, ns.
    pub launch_p50: Ns,
    /// 90th percentile, ns.
    pub launch_p90: Ns,
    /// Longest kernel-launch call: (index in `trace.cpu`, duration).
    pub longest_launch: Option<(u32, Ns)>,
    /// Graph replays in the window.
    pub graph_launches: u64,
    /// Device activities launched by those replays.
    pub graph_kernels: u64,
    /// Per stream, by device then stream.
    pub queues: Vec<StreamQueue>,
    /// Launch calls made while their stream's queue was full.
    pub queue_full_launches: u64,
    /// Host time in those calls beyond the median launch time, ns.
    pub blocked_launch_time: Ns,
    /// `Command Buffer Full` events in the window.
    pub command_buffer_full: u64,
    /// Their total duration, ns.
    pub command_buffer_full_time: Ns,
    /// Host time blocked on the device by a full queue (see the module docs).
    pub blocked: IntervalSet,
}

impl LaunchAnalysis {
    /// Deepest queue over all streams.
    pub fn max_depth(&self) -> u32 {
        self.queues.iter().map(|q| q.max_depth).max().unwrap_or(0)
    }
}

/// The `p`-th percentile of `v` (the value at rank ⌈(n − 1)·p / 100⌉ in sorted order; 0 when
/// empty), found by selection: `v` is reordered, not sorted.
fn percentile(v: &mut [Ns], p: usize) -> Ns {
    if v.is_empty() {
        return 0;
    }
    let i = ((v.len() - 1) * p).div_ceil(100);
    *v.select_nth_unstable(i.min(v.len() - 1)).1
}

/// Launch statistics over the window's counted time `mask`.
pub fn analyze_launches(trace: &Trace, mask: &IntervalSet) -> LaunchAnalysis {
    let mut out = LaunchAnalysis::default();
    let point_in = |t: Ns| {
        let sp = mask.spans();
        let i = sp.partition_point(|m| m.start <= t);
        i > 0 && t < sp[i - 1].end
    };
    let inside = |iv: Interval| {
        if iv.is_empty() {
            point_in(iv.start)
        } else {
            mask.covered_within(iv) > 0
        }
    };

    // Name classes, once per name: (kernel launch, graph launch).
    let mut class = NameMemo::new(trace, |n: &str| (is_kernel_launch(n), is_graph_launch(n)));

    // Queue events per (device, stream): launch calls entering the queue (call start, call
    // index) and activities leaving it (activity start, call index). Activities come in start
    // order, so the leaving events are sorted as they are pushed.
    #[derive(Default)]
    struct Queue {
        enter: Vec<(Ns, u32)>,
        leave: Vec<(Ns, u32)>,
    }
    let mut queue_index: HashMap<(i64, i64), usize> = HashMap::default();
    let mut queues: Vec<((i64, i64), Queue)> = Vec::new();
    let mut last: Option<((i64, i64), usize)> = None;
    let mut graph_calls: Vec<u32> = Vec::new();
    // kernel launch calls (indices, 4 bytes each: their durations are read again below, in
    // index order)
    let mut launch_calls_seen: Vec<u32> = Vec::new();
    for (g, l) in trace.gpu_with_launches() {
        let Some(l) = l.filter(|_| g.is_activity()) else {
            continue;
        };
        if !is_host_call(l.kind) {
            continue;
        }
        let (kernel_launch, graph) = class.get(l.name);
        if graph {
            if inside(l.interval()) {
                out.graph_kernels += 1;
                graph_calls.push(g.launch);
            }
            continue;
        }
        let key = (g.device as i64, g.stream as i64);
        let q = match last {
            Some((k, q)) if k == key => q,
            _ => {
                let q = *queue_index.entry(key).or_insert_with(|| {
                    queues.push((key, Queue::default()));
                    queues.len() - 1
                });
                last = Some((key, q));
                q
            }
        };
        let q = &mut queues[q].1;
        q.enter.push((l.start, g.launch));
        q.leave.push((g.start, g.launch));
        if g.kind == GpuKind::Kernel && kernel_launch && inside(g.interval()) {
            out.kernels += 1;
            launch_calls_seen.push(g.launch);
            if l.dur <= SHORT_LAUNCH_MAX && g.dur < l.dur {
                out.short_kernels += 1;
                out.short_kernel_time += g.dur;
                out.short_launch_time += l.dur;
            }
        }
    }
    drop(queue_index);
    graph_calls.sort_unstable();
    graph_calls.dedup();
    out.graph_launches = graph_calls.len() as u64;

    // Launch-call durations (kernel launches, each call once).
    launch_calls_seen.sort_unstable();
    launch_calls_seen.dedup();
    let mut durs: Vec<Ns> = launch_calls_seen
        .iter()
        .map(|&i| trace.cpu[i as usize].dur)
        .collect();
    out.launch_calls = durs.len() as u64;
    out.launch_time = durs.iter().sum();
    out.longest_launch = launch_calls_seen
        .iter()
        .map(|&i| (i, trace.cpu[i as usize].dur))
        .max_by_key(|&(i, d)| (d, std::cmp::Reverse(i)));
    out.launch_p50 = percentile(&mut durs, 50);
    out.launch_p90 = percentile(&mut durs, 90);

    // Sweep each stream's queue.
    let mut blocked: Vec<Interval> = Vec::new();
    let mut full_calls: Vec<u32> = Vec::new();
    queues.sort_unstable_by_key(|&(key, _)| key);
    for (key, Queue { enter, leave }) in &mut queues {
        let key = *key;
        // calls enter in start order; at equal times an activity leaves first (the depth is
        // never overstated); the order among equal times of one kind changes nothing below
        for v in [&mut *enter, &mut *leave] {
            if !v.windows(2).all(|w| w[0].0 <= w[1].0) {
                v.sort_unstable_by_key(|&(t, _)| t);
            }
        }
        let mut q = StreamQueue {
            device: key.0,
            stream: key.1,
            launches: 0,
            max_depth: 0,
            max_depth_at: 0,
            full_time: 0,
        };
        let mut depth: i64 = 0;
        let mut last_t: Ns = Ns::MIN;
        let mut calls: Vec<u32> = Vec::new();
        let (mut i, mut j) = (0, 0);
        while i < enter.len() || j < leave.len() {
            let take_leave = i == enter.len() || (j < leave.len() && leave[j].0 <= enter[i].0);
            let (t, d, l) = if take_leave {
                j += 1;
                (leave[j - 1].0, -1, leave[j - 1].1)
            } else {
                i += 1;
                (enter[i - 1].0, 1, enter[i - 1].1)
            };
            if depth >= QUEUE_FULL_DEPTH as i64 && last_t != Ns::MIN {
                q.full_time += mask.covered_within(Interval::new(last_t, t));
            }
            depth = (depth + d).max(0);
            last_t = t;
            if d == 1 && point_in(t) {
                calls.push(l);
                if depth as u32 > q.max_depth {
                    q.max_depth = depth as u32;
                    q.max_depth_at = t;
                }
                if depth >= QUEUE_FULL_DEPTH as i64 {
                    full_calls.push(l);
                }
            }
        }
        calls.sort_unstable();
        calls.dedup();
        q.launches = calls.len() as u64;
        out.queues.push(q);
    }
    full_calls.sort_unstable();
    full_calls.dedup();
    out.queue_full_launches = full_calls.len() as u64;

    // Median duration per launch-call name (all launch calls with activities, in window), for
    // the names of the calls made while a queue was full (usually none)
    let mut full_names: Vec<NameId> = full_calls
        .iter()
        .map(|&l| trace.cpu[l as usize].name)
        .collect();
    full_names.sort_unstable();
    full_names.dedup();
    let mut by_name: HashMap<NameId, Vec<Ns>> = HashMap::default();
    if !full_names.is_empty() {
        for (_, q) in &queues {
            for &(_, l) in &q.enter {
                let c = &trace.cpu[l as usize];
                if full_names.binary_search(&c.name).is_ok() && inside(c.interval()) {
                    by_name.entry(c.name).or_default().push(c.dur);
                }
            }
        }
    }
    drop(queues);
    // a call with several activities on one stream appears several times: fine for a median
    let median: HashMap<NameId, Ns> = by_name
        .into_iter()
        .map(|(k, mut v)| (k, percentile(&mut v, 50)))
        .collect();
    for &l in &full_calls {
        let c = &trace.cpu[l as usize];
        let typical = median.get(&c.name).copied().unwrap_or(0);
        let iv = Interval::new(c.start + typical, c.end());
        if !iv.is_empty() {
            out.blocked_launch_time += iv.len();
            blocked.push(iv);
        }
    }
    // names are interned once: compare ids, and skip the scan when the name never occurs
    if let Some(command_buffer_full) = trace.names.get(COMMAND_BUFFER_FULL) {
        for e in &trace.cpu {
            if e.dur > 0 && e.name == command_buffer_full && inside(e.interval()) {
                out.command_buffer_full += 1;
                out.command_buffer_full_time += e.dur;
                blocked.push(e.interval());
            }
        }
    }
    out.blocked = IntervalSet::from_intervals(blocked).intersect(mask);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::build::TraceBuilder;
    use crate::model::NONE;

    fn whole(t: &Trace) -> IntervalSet {
        IntervalSet::from_intervals([Interval::new(
            0,
            t.gpu.iter().map(|g| g.end()).max().unwrap_or(0) + 1_000_000,
        )])
    }

    #[test]
    fn short_kernels_and_launch_percentiles() {
        let mut b = TraceBuilder::new();
        // 3 kernels of 2 µs launched by 6 µs calls (short), 1 kernel of 100 µs (not short)
        for i in 0..3 {
            let s = i as f64 * 10.0;
            b.op_with_kernel("aten::add", "add_kernel", s, 8.0, s + 5.0, 2.0);
        }
        b.op_with_kernel("aten::mm", "gemm", 40.0, 8.0, 45.0, 100.0);
        let t = b.build();
        let l = analyze_launches(&t, &whole(&t));
        assert_eq!(l.kernels, 4);
        assert_eq!(l.short_kernels, 3);
        assert_eq!(l.short_kernel_time, 6_000);
        assert_eq!(l.short_launch_time, 18_000);
        assert_eq!(l.launch_calls, 4);
        assert_eq!(l.launch_p50, 6_000);
        assert_eq!(l.launch_time, 24_000);
        assert_eq!(l.queues.len(), 1);
        assert_eq!(l.queue_full_launches, 0);
        assert!(l.blocked.is_empty());
    }

    #[test]
    fn queue_depth_counts_pending_launches() {
        let mut b = TraceBuilder::new();
        // 5 launches at 0,1,2,3,4 µs; kernels start at 100, 110, ... (all pending at 4 µs)
        for i in 0..5 {
            let c = b.runtime("cudaLaunchKernel", 0, i as f64, 0.5);
            b.gpu(GpuKind::Kernel, "k", 0, 7, 100.0 + 10.0 * i as f64, 10.0, c);
        }
        let t = b.build();
        let l = analyze_launches(&t, &whole(&t));
        let q = &l.queues[0];
        assert_eq!((q.device, q.stream, q.max_depth, q.launches), (0, 7, 5, 5));
        assert_eq!(q.max_depth_at, 4_000);
        assert_eq!(q.full_time, 0);
    }

    #[test]
    fn full_queue_blocks_the_host() {
        let mut b = TraceBuilder::new();
        // 1,100 launches of 1 µs each; the GPU starts the first one at 5 ms and runs them
        // back to back (10 µs each): the queue passes 1,000 and the later calls take 10 µs.
        let n = 1100;
        let mut t_host = 0.0;
        for i in 0..n {
            let dur = if i >= 1000 { 10.0 } else { 1.0 };
            let c = b.runtime("cudaLaunchKernel", 0, t_host, dur);
            t_host += dur + 0.01;
            b.gpu(
                GpuKind::Kernel,
                "k",
                0,
                7,
                5000.0 + 10.0 * i as f64,
                10.0,
                c,
            );
        }
        let mut t = b.build();
        t.cpu.push(crate::model::CpuEvent {
            start: 3_000_000,
            dur: 300_000,
            name: t.names.intern(COMMAND_BUFFER_FULL),
            thread: 0,
            kind: CpuKind::Other,
            is_module: false,
            external_id: 0,
            correlation: 0,
            owner_op: NONE,
        });
        t.finalize();
        let l = analyze_launches(&t, &whole(&t));
        // no kernel starts before 5 ms: all 1,100 launches are pending at once
        assert_eq!(l.max_depth(), 1100);
        // launches #1000..#1100 find the queue full
        assert_eq!(l.queue_full_launches, 101);
        // 100 of them take 10 µs against a median of 1 µs: 9 µs each blocked
        assert_eq!(l.blocked_launch_time, 100 * 9_000);
        assert_eq!(l.command_buffer_full, 1);
        assert_eq!(l.command_buffer_full_time, 300_000);
        assert_eq!(l.blocked.total(), 300_000 + 100 * 9_000);
        assert!(l.queues[0].full_time > 0);
    }

    #[test]
    fn graph_replays_are_counted_apart() {
        let mut b = TraceBuilder::new();
        let c = b.runtime("cudaGraphLaunch", 0, 0.0, 5.0);
        for i in 0..4 {
            b.gpu(GpuKind::Kernel, "k", 0, 7, 10.0 + 3.0 * i as f64, 2.0, c);
        }
        let t = b.build();
        let l = analyze_launches(&t, &whole(&t));
        assert_eq!((l.graph_launches, l.graph_kernels, l.kernels), (1, 4, 0));
        assert!(l.queues.is_empty());
    }

    #[test]
    fn names() {
        assert!(is_kernel_launch("cudaLaunchKernel"));
        assert!(is_kernel_launch("cuLaunchKernelEx"));
        assert!(is_kernel_launch("hipExtModuleLaunchKernel"));
        assert!(is_kernel_launch("cudaLaunchCooperativeKernel"));
        assert!(!is_kernel_launch("cudaMemcpyAsync"));
        assert!(is_graph_launch("hipGraphLaunch"));
        assert!(!is_graph_launch("cudaLaunchKernel"));
    }
}
