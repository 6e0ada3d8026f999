//! Device idle gaps inside the window, banded by length and attributed to what the host was
//! doing, plus the time the host spent waiting for the device.
//!
//! # Gaps
//!
//! Per device, **busy** is the union of all its kernels, copies and fills (launch-linked or
//! not: unlinked work still occupies the device) clipped to the window; a **gap** is a maximal
//! interval of the window outside busy, including the stretch from the window start to the
//! first activity and from the last activity to the window end. Devices without activity in
//! the window are left out. Every gap falls in one **band** by length ([`Band`]: < 10 µs,
//! 10–20 µs, 20–50 µs, 50 µs–1 ms, ≥ 1 ms; the nsys gap guide's normal / warning / severe
//! bands).
//!
//! # Attribution
//!
//! Each gap's time is split, to the nanosecond, between the [`Cause`]s; the splits of a gap
//! sum to its length, so per-cause totals sum to the idle time and no time is counted twice.
//! The *launching thread* is the host thread of the call that launched the activity ending the
//! gap (else the one that launched the activity before it, else the thread with most launch
//! calls). Let `a..b` be the gap and `L` the start of the launch call of the activity at `b`.
//!
//! 1. **queued** — `L ≤ a`: the next work was already queued when the device went idle, so the
//!    host was not late; the gap is device-side (inter-kernel latency, a wait on another
//!    stream or device). The whole gap.
//! 2. **sync** — some host sync call ([`super::syncs`]) was in progress when the device went
//!    idle (`start ≤ a < end`), or returned at most [`SYNC_RETURN_SKEW`] (20 µs) before it
//!    (host and device clocks agree to a few µs at best): the host drained the queue. The
//!    host had a **lead** of `a − start` when it entered the sync (the queued work it waited
//!    for); losing that lead is the sync's cost: the first `lead` ns of the gap's host part
//!    (`a..L` and the launch latency), host work in it included, except the parts spent in
//!    DataLoader (any thread) or compile spans (those keep their own cause). The rest of the
//!    gap is split as in 3: a host that was never ahead lost nothing to the sync, and host
//!    compute after a `.cpu()` is not sync time. The gap records which sync call
//!    ([`Gap::sync`]). Until the host has a **real lead** again ([`real_lead`]: the next
//!    work's launch call returned at least [`LAUNCH_LATENCY`] before the device needed it),
//!    what is left of the lead goes on charging the following gaps to the same sync: their
//!    launch, launch-path CPU and untraced parts, and queued gaps whose launch came back too
//!    late (two kernels of one operator a few µs apart). A queued gap with a real lead ends
//!    the drain.
//! 3. Otherwise `L..b` (the host had issued the launch, the work had not started) is
//!    **launch** up to [`LAUNCH_LATENCY`] (20 µs) after the launch call returned, and
//!    **queued** beyond (the device had the work and waited for something else: an event,
//!    another stream or device); `a..L` is split by what the launching thread was doing, in
//!    priority order: inside a sync call (**sync**) > inside compile / autotune /
//!    graph-capture / JIT / module-loading work on any thread (**compile**: the window's
//!    compile work, [`crate::window::compile_kind`], plus CUDA/HIP graph capture and
//!    instantiation) > inside a DataLoader span (**dataloader**,
//!    [`crate::window::steps::is_dataloader`]) > inside an allocation call (**alloc**,
//!    [`is_allocation`]: `cudaMalloc*`, `cudaFree*`, `hipMalloc`, `cuMemCreate`/`cuMemMap`,
//!    host allocation; or the innermost operator during which the caching allocator grew,
//!    `Total Reserved` rising in a `[memory]` event) > inside a
//!    runtime/driver call that issues or orders work (**launch**; other resource management
//!    such as stream creation or context initialisation, [`is_runtime_management`], is
//!    **cpu**) > inside a collective or MPI call the host runs itself (**host
//!    communication**, [`crate::model::classify::is_host_run_collective`]: `gloo:*`,
//!    `mpi:*`, Nsight Systems' `MPI_Send`/`MPI_Recv` ranges; waiting for other ranks; not
//!    `nccl:*`, whose spans enqueue device work) > inside an operator (not `ProfilerStep#`) or a Python frame (`python_function`,
//!    legacy `python`) that launches no device work (no launch call inside it: one linked to
//!    a kernel, copy or fill, or by its name a kernel or graph launch, copy or fill, for
//!    traces that do not link them) and is not inside an operator that does (**host compute**: a Python
//!    loop over CPU tensors, NumPy, preprocessing; `aten::empty` inside `aten::linear` is the
//!    linear's dispatch) > inside an operator or Python frame in the launch path, or another
//!    host span such as CUPTI overhead (**cpu**). What the
//!    launching thread leaves unexplained is then split by what the **other threads** of the
//!    process did (their work, or the GIL it holds, kept the launching thread from running;
//!    other processes, such as other ranks in one capture, have their own GPU and interpreter):
//!    DataLoader > allocation > host communication > any other span (**cpu**). Only what no
//!    thread explains is **untraced**. User annotations only label time: inside one, with
//!    nothing else recorded, the time is untraced. On an Nsight Systems export, where NVTX
//!    push/pop ranges are the host's only marks of its own work, those ranges are work, as
//!    operators and Python frames are on Kineto.
//!
//! 4. **startup** — one-time start-up ([`crate::analysis::startup::Startup::judged_spans`],
//!    on any thread), before every cause but no work: inside `a..L`, in the launch call and
//!    its latency (a lazy module load runs inside the next kernel's first launch call), and
//!    in a queued gap before a launch call still running at `a` returned. Each microsecond is charged once: the causes
//!    above never hold start-up time.
//! 5. **no work** — the gap after the device's last activity in the trace (nothing is
//!    launched on it afterwards) that no step's host span overlaps: no host fix recovers it,
//!    whatever the host did (first in priority). Inside a step, the host's work there is that
//!    step's cost, as in the steps before it.
//!
//! Per-stream gaps (between consecutive activities of one stream, inside the window) are
//! counted by band as detail, as HTA does; they overlap other streams' work and are never
//! summed as device idle.
//!
//! # Host wait
//!
//! [`StepWait::wait`] is, per analyzed step, the part of the step during which the host was
//! waiting for the device: the union of sync calls, of the host time blocked on a full launch
//! queue ([`super::launch::LaunchAnalysis::blocked`]) and of the device tails (the part of a
//! step after its host span ended, where only device work runs) not covered by another
//! step's host span (a tail that overlaps the next step's host work is pipelining, not
//! waiting). A faster device can shorten the step by at most this much: the rest of the step
//! is host work of its own.

use crate::model::fast::{HashMap, NameMemo, RunMap};

use super::launch::LaunchAnalysis;
use super::sync_calls::SyncKind;
use crate::model::os::ThreadRecord;
use crate::model::{CpuKind, Interval, IntervalSet, Ns, Remainder, Trace, UnionBuilder, NONE};
use crate::window::steps::{is_dataloader, Step};

/// Gap length band.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Band {
    /// Under 10 µs: normal inter-kernel latency.
    #[serde(rename = "lt_10us")]
    Under10us,
    /// 10–20 µs.
    #[serde(rename = "10_20us")]
    From10To20us,
    /// 20–50 µs: warning.
    #[serde(rename = "20_50us")]
    From20To50us,
    /// 50 µs–1 ms: severe.
    #[serde(rename = "50us_1ms")]
    From50usTo1ms,
    /// 1 ms and longer.
    #[serde(rename = "ge_1ms")]
    Over1ms,
}

/// All bands, shortest first.
pub const BANDS: [Band; 5] = [
    Band::Under10us,
    Band::From10To20us,
    Band::From20To50us,
    Band::From50usTo1ms,
    Band::Over1ms,
];

impl Band {
    /// Band of a gap length.
    pub fn of(len: Ns) -> Band {
        match len {
            l if l < 10_000 => Band::Under10us,
            l if l < 20_000 => Band::From10To20us,
            l if l < 50_000 => Band::From20To50us,
            l if l < 1_000_000 => Band::From50usTo1ms,
            _ => Band::Over1ms,
        }
    }
    /// Label.
    pub fn label(&self) -> &'static str {
        match self {
            Band::Under10us => "<10 µs",
            Band::From10To20us => "10-20 µs",
            Band::From20To50us => "20-50 µs",
            Band::From50usTo1ms => "50 µs-1 ms",
            Band::Over1ms => ">1 ms",
        }
    }
}

/// What the host was doing while the device was idle (see the module docs).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// Next work already queued: device-side gap.
    Queued,
    /// A host sync drained the queue.
    Sync,
    /// Compile, autotune or graph capture.
    Compile,
    /// DataLoader.
    Dataloader,
    /// Memory allocation: `cudaMalloc*`, `cudaFree`, `hipMalloc`, `cuMemCreate`/`cuMemMap`
    /// (expandable segments), host allocation and registration, and the caching allocator
    /// growing (the innermost operator during which `Total Reserved` rose,
    /// [`crate::model::memory::MemoryEvents::reserved_growth`]), on any host thread.
    Alloc,
    /// Runtime calls and launch latency.
    Launch,
    /// Other host work: the launch path (operators that launch device work, with what they
    /// call, and the Python frames around them), resource management calls, CUPTI overhead,
    /// and the work of the process's other threads.
    Cpu,
    /// Nothing recorded on the launching thread.
    Untraced,
    /// Host compute that feeds the device nothing: operators and Python frames on the
    /// launching thread that launch no device work and are not part of an operator that does
    /// (a Python loop over CPU tensors, NumPy, preprocessing, logging).
    HostCompute,
    /// No work: the device ran out of work at the end of the trace and nothing was launched
    /// on it afterwards; no host fix recovers it.
    NoWork,
    /// One-time start-up: context creation, module and lazy loading, and in a cold window
    /// first-call allocation and JIT compiles ([`crate::analysis::startup`], its judged
    /// spans), on any host thread; a steady state does not pay it again.
    Startup,
    /// Host communication: the launching thread was inside a collective or MPI call the host
    /// runs itself ([`crate::model::classify::is_host_run_collective`]: `gloo:*`, `mpi:*`,
    /// Nsight Systems' `MPI_Send`/`MPI_Recv` ranges; not `nccl:*`, whose spans enqueue device
    /// work), waiting for other ranks or the transfer.
    HostComm,
}

/// Number of causes.
pub const N_CAUSES: usize = 12;

/// All causes, in index order.
pub const CAUSES: [Cause; N_CAUSES] = [
    Cause::Queued,
    Cause::Sync,
    Cause::Compile,
    Cause::Dataloader,
    Cause::Alloc,
    Cause::Launch,
    Cause::Cpu,
    Cause::Untraced,
    Cause::HostCompute,
    Cause::NoWork,
    Cause::Startup,
    Cause::HostComm,
];

impl Cause {
    /// Label for reports.
    pub fn label(&self) -> &'static str {
        match self {
            Cause::Queued => "device-side (work already queued)",
            Cause::Sync => "sync wait",
            Cause::Compile => "compile/autotune",
            Cause::Dataloader => "dataloader",
            Cause::Alloc => "memory allocation",
            Cause::Launch => "launch overhead",
            Cause::Cpu => "other CPU work",
            Cause::Untraced => "nothing traced",
            Cause::HostCompute => "host compute (launches no GPU work)",
            Cause::NoWork => "no work left (nothing launched after)",
            Cause::Startup => "one-time start-up",
            Cause::HostComm => "host communication (collective or MPI call)",
        }
    }
}

/// One device gap.
#[derive(Clone, Debug, PartialEq)]
pub struct Gap {
    /// Start, ns.
    pub start: Ns,
    /// End, ns.
    pub end: Ns,
    /// Largest share of the split.
    pub cause: Cause,
    /// ns per cause; sums to the gap length.
    pub split: Split,
    /// Index of the step it starts in ([`NONE`] outside the steps; see [`Gap::step`]).
    pub step_index: u32,
    /// Device activity before it (index in `trace.gpu`, [`NONE`] at the window start).
    pub prev: u32,
    /// Device activity after it ([`NONE`] at the window end).
    pub next: u32,
    /// Launching thread (index in `trace.threads`, [`NONE`] if unknown).
    pub thread: u32,
    /// The sync call that drained the queue (index in `trace.cpu`, [`NONE`] if none).
    pub sync: u32,
}

/// A gap's time per cause ([`Cause`] as index), summing to its length. A window holds up to
/// hundreds of thousands of gaps, and nearly every gap has at most three causes, each shorter
/// than 2^32 ns (4.3 s): those are stored as up to three (cause, 32-bit ns) pairs, any other
/// split boxed in full. A [`Gap`] takes 56 bytes (96 with twelve 32-bit parts, 144 with
/// twelve 64-bit ones). The form is canonical (causes in index order), so equal splits are
/// equal values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Split {
    /// Up to three causes with time, in index order; unused places hold cause `u8::MAX` and 0.
    Few {
        /// The causes ([`Cause`] as index).
        causes: [u8; 3],
        /// Their ns.
        ns: [u32; 3],
    },
    /// More causes, or a part of 2^32 ns or more.
    Long(Box<[Ns; N_CAUSES]>),
}

impl Split {
    /// The split of ns per cause ([`Cause`] as index).
    pub fn new(full: &[Ns; N_CAUSES]) -> Split {
        let (mut causes, mut ns, mut k) = ([u8::MAX; 3], [0u32; 3], 0);
        for (c, &v) in full.iter().enumerate() {
            if v == 0 {
                continue;
            }
            match u32::try_from(v) {
                Ok(v) if k < 3 => {
                    causes[k] = c as u8;
                    ns[k] = v;
                    k += 1;
                }
                _ => return Split::Long(Box::new(*full)),
            }
        }
        Split::Few { causes, ns }
    }

    /// The time of one cause, ns.
    #[inline]
    pub fn get(&self, c: Cause) -> Ns {
        match self {
            Split::Few { causes, ns } => causes
                .iter()
                .position(|&x| x == c as u8)
                .map_or(0, |k| ns[k] as Ns),
            Split::Long(l) => l[c as usize],
        }
    }

    /// The time of every cause, ns ([`Cause`] as index).
    pub fn full(&self) -> [Ns; N_CAUSES] {
        match self {
            Split::Few { causes, ns } => {
                let mut out = [0; N_CAUSES];
                for (&c, &v) in causes.iter().zip(ns) {
                    if let Some(o) = out.get_mut(c as usize) {
                        *o = v as Ns;
                    }
                }
                out
            }
            Split::Long(l) => **l,
        }
    }
}

impl Gap {
    /// Index of the step it starts in (`None` outside the window's steps).
    pub fn step(&self) -> Option<usize> {
        (self.step_index != NONE).then_some(self.step_index as usize)
    }

    /// Length, ns.
    pub fn len(&self) -> Ns {
        self.end - self.start
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }
    /// Band.
    pub fn band(&self) -> Band {
        Band::of(self.len())
    }
}

/// Count and total of gaps in a band.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BandStat {
    /// Gaps.
    pub count: u64,
    /// Their total length, ns.
    pub total: Ns,
}

/// Per-stream gap bands (detail only).
#[derive(Clone, Debug, PartialEq)]
pub struct StreamGaps {
    /// Stream id.
    pub stream: i64,
    /// Activities of the stream in the window.
    pub activities: u64,
    /// Bands, [`BANDS`] order.
    pub bands: [BandStat; 5],
}

/// One device's gaps.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceGaps {
    /// Device id.
    pub device: i64,
    /// Busy time in the window (union of activities), ns.
    pub busy: Ns,
    /// Idle time in the window, ns (= sum of gap lengths).
    pub idle: Ns,
    /// Gaps in time order.
    pub gaps: Vec<Gap>,
    /// Bands, [`BANDS`] order.
    pub bands: [BandStat; 5],
    /// Idle per cause, ns.
    pub by_cause: [Ns; N_CAUSES],
    /// Idle per band and cause, ns.
    pub by_band_cause: [[Ns; N_CAUSES]; 5],
    /// Per-stream detail.
    pub streams: Vec<StreamGaps>,
    /// The host-compute span that ran longest in the gap with the most
    /// [`Cause::HostCompute`] time: (index in `trace.cpu`, its overlap with that gap, ns);
    /// `None` without host compute.
    pub compute_site: Option<(u32, Ns)>,
    /// What the OS recorded of the launching threads during the [`Cause::Untraced`] time
    /// (Nsight Systems' context switches and OS runtime calls, [`crate::model::os`]); `None`
    /// without untraced time or without such records.
    pub untraced_os: Option<UntracedOs>,
}

/// What the OS recorded of the launching thread while a device waited with nothing traced on
/// the host ([`DeviceGaps::untraced_os`]). A gap whose untraced time a sync's drain took in
/// part ([`Cause::Sync`]) counts the same share of each figure.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UntracedOs {
    /// Untraced time of the gaps whose launching thread's scheduling was recorded, ns.
    pub scheduled: Ns,
    /// Of it, the time that thread was off a CPU (blocked or preempted), ns; the rest it ran
    /// work nobody traced.
    pub off_cpu: Ns,
    /// Untraced time inside the launching thread's outermost OS runtime calls, per function
    /// name, largest first.
    pub calls: Vec<(crate::model::NameId, Ns)>,
    /// The launching thread's CPU samples in that time (all of a gap's untraced time, the
    /// drain's share included: they say what the thread ran), per sampled function, most
    /// first.
    pub samples: Vec<(crate::model::NameId, u64)>,
}

/// Host wait per step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepWait {
    /// Time the host waited for the device, ns.
    pub wait: Ns,
}

/// Gaps of every device plus the host wait.
#[derive(Clone, Debug, Default)]
pub struct GapAnalysis {
    /// Hull of the window's counted time.
    pub window: Interval,
    /// Devices with activity in the window, by id.
    pub devices: Vec<DeviceGaps>,
    /// Host wait per analyzed step.
    pub step_wait: Vec<StepWait>,
    /// Host compile/autotune/capture time in the window (union, all threads), ns.
    pub compile_time: Ns,
}

impl GapAnalysis {
    /// The device with the most busy time.
    pub fn primary(&self) -> Option<&DeviceGaps> {
        self.devices.iter().max_by_key(|d| (d.busy, -d.device))
    }
    /// Largest idle attributed to `cause` on any device, ns.
    pub fn max_cause(&self, cause: Cause) -> Ns {
        self.devices
            .iter()
            .map(|d| d.by_cause[cause as usize])
            .max()
            .unwrap_or(0)
    }
}

/// How long after its launch call returns a kernel may take to start on an idle device and
/// still count as launch latency (ns); a later start means the device was waiting for
/// something else (an event, another stream or device) and counts as `queued`.
pub const LAUNCH_LATENCY: Ns = 20_000;

/// A sync call that returned at most this long before the device went idle drained the
/// queue (ns): the host and device clocks of a trace agree to a few µs at best, so a sync often
/// appears to return just before the work it waited for ends.
pub const SYNC_RETURN_SKEW: Ns = 20_000;

/// True when the host had a *real* lead on a device that needed new work at `t`: the launch
/// call `l` of that work returned at least [`LAUNCH_LATENCY`] before `t`. A launch that
/// returned later (two kernels of one operator a few µs apart) kept the device waiting for
/// the host, queued as its work looks.
pub fn real_lead(l: &crate::model::CpuEvent, t: Ns) -> bool {
    l.end() + LAUNCH_LATENCY <= t
}

/// True for runtime calls that manage resources rather than issue work (allocation, context
/// and stream creation, module loading, device queries): host work of their own, not launch
/// overhead.
pub fn is_runtime_management(name: &str) -> bool {
    const PARTS: &[&str] = &[
        "Malloc",
        "Free",
        "HostAlloc",
        "HostRegister",
        "HostUnregister",
        "Create",
        "Destroy",
        "ModuleLoad",
        "ModuleUnload",
        "Init",
        "StreamPriorityRange",
        "GetDeviceProperties",
        "DeviceReset",
        "SetDevice",
        "MemGetInfo",
        "GraphInstantiate",
        "GraphUpload",
        "GetDeviceCount",
        "DeviceEnablePeerAccess",
        "IpcOpenMemHandle",
        "IpcGetMemHandle",
    ];
    PARTS.iter().any(|p| name.contains(p))
}

/// True for runtime/driver calls that allocate or free memory (`cudaMalloc*`, `cudaFree*`,
/// `hipMalloc`, `cuMemAlloc*`, `cudaHostAlloc`, `cudaHostRegister`, ...): a gap they cover is
/// [`Cause::Alloc`], on any host thread.
pub fn is_allocation(name: &str) -> bool {
    const PARTS: &[&str] = &[
        "Malloc",
        "Free",
        "MemAlloc",
        "HostAlloc",
        "HostRegister",
        "HostUnregister",
        "MemCreate",
        "MemMap",
        "MemRelease",
    ];
    PARTS.iter().any(|p| name.contains(p))
}

fn is_capture_begin(name: &str) -> bool {
    name.contains("StreamBeginCapture")
}

fn is_capture_end(name: &str) -> bool {
    name.contains("StreamEndCapture")
}

/// Host activity of one thread, by class.
#[derive(Default)]
struct ThreadSets {
    sync: IntervalSet,
    dataloader: IntervalSet,
    runtime: IntervalSet,
    cpu: IntervalSet,
    alloc: IntervalSet,
    /// Operators and Python frames that launch no device work, outside any operator that
    /// does ([`Cause::HostCompute`]).
    compute: IntervalSet,
    /// Host-side collectives and MPI calls ([`Cause::HostComm`]).
    comm: IntervalSet,
}

/// An operator or Python frame of one thread, while its subtree is open: whether it (or
/// anything inside it) launched device work, and its nearest enclosing span.
struct HostSpan {
    iv: Interval,
    /// Index in `trace.cpu`.
    idx: u32,
    /// An operator (its dispatch includes what it calls), not a Python frame.
    op: bool,
    /// A launch call (one linked to device work, or a kernel/graph launch, copy or fill
    /// by its name) ran inside it.
    launched: bool,
    /// Index of the enclosing span in the thread's open subtree ([`NONE`] for a root).
    parent: u32,
}

/// The operators and Python frames of one thread, nested by time: a stack of the open ones
/// and the spans of the open subtree, resolved into launch-path and host-compute time once
/// the subtree's root has ended (a parent learns that it launches only from a later child).
#[derive(Default)]
struct SpanTree {
    spans: Vec<HostSpan>,
    stack: Vec<u32>,
    /// Per span of the subtree being resolved: inside an operator that launches.
    in_launching_op: Vec<bool>,
    /// The outermost host-compute spans (their parent, if any, is in the launch path), in
    /// start order: what names host-compute time ([`DeviceGaps::compute_site`]).
    compute_roots: Vec<(Interval, u32)>,
}

impl SpanTree {
    /// Closes the spans that ended by `t`; a finished subtree goes to `path` (spans in the
    /// launch path: they launch, or sit inside an operator that does) and `compute`.
    fn close_until(&mut self, t: Ns, path: &mut UnionBuilder, compute: &mut UnionBuilder) {
        while let Some(&top) = self.stack.last() {
            if self.spans[top as usize].iv.end > t {
                break;
            }
            self.stack.pop();
        }
        if self.stack.is_empty() && !self.spans.is_empty() {
            self.flush(path, compute);
        }
    }

    /// Resolves the subtree (parents come before their children).
    fn flush(&mut self, path: &mut UnionBuilder, compute: &mut UnionBuilder) {
        let in_launching_op = &mut self.in_launching_op;
        in_launching_op.clear();
        for s in &self.spans {
            let inside = s.parent != NONE && {
                let p = &self.spans[s.parent as usize];
                (p.op && p.launched) || in_launching_op[s.parent as usize]
            };
            in_launching_op.push(inside);
            if s.launched || inside {
                path.push(s.iv);
            } else {
                compute.push(s.iv);
                let parent_compute = s.parent != NONE && {
                    let p = &self.spans[s.parent as usize];
                    !(p.launched || in_launching_op[s.parent as usize])
                };
                if !parent_compute {
                    self.compute_roots.push((s.iv, s.idx));
                }
            }
        }
        self.spans.clear();
        self.stack.clear();
    }

    /// Opens a span (the caller closed those that ended before it).
    fn open(&mut self, iv: Interval, idx: u32, op: bool) {
        let parent = self.stack.last().copied().unwrap_or(NONE);
        self.stack.push(self.spans.len() as u32);
        self.spans.push(HostSpan {
            iv,
            idx,
            op,
            launched: false,
            parent,
        });
    }

    /// A launch call at `t`: every open span launched (its ancestors were marked with it).
    fn launch(&mut self) {
        for &i in self.stack.iter().rev() {
            let s = &mut self.spans[i as usize];
            if s.launched {
                break;
            }
            s.launched = true;
        }
    }
}

/// The caching allocator grew at `ts` on thread `th`: the innermost operator of `open_ops[th]`
/// that contains `ts` goes to the thread's allocation set (`per_thread[th][4]`).
fn grown_in(open_ops: &mut [Vec<Interval>], per_thread: &mut [[UnionBuilder; 8]], ts: Ns, th: u32) {
    let Some(stack) = open_ops.get_mut(th as usize) else {
        return;
    };
    while stack.last().is_some_and(|o| o.end < ts) {
        stack.pop();
    }
    if let (Some(op), Some(sets)) = (stack.last(), per_thread.get_mut(th as usize)) {
        sets[4].push(*op);
    }
}

/// Gaps of every device in the window's counted time `mask`, attributed; host wait per step.
/// `compile` is the host compile / autotune work ([`crate::window::CompileWork::spans`]);
/// graph capture (`cudaStreamBeginCapture` … `cudaStreamEndCapture` on one thread) and graph
/// instantiation are added to it here. `startup` is the window's one-time start-up
/// ([`crate::analysis::startup::Startup::judged_spans`]): [`Cause::Startup`].
pub fn analyze_gaps(
    trace: &Trace,
    mask: &IntervalSet,
    steps: &[Step],
    launch: &LaunchAnalysis,
    compile: &IntervalSet,
    startup: &IntervalSet,
) -> GapAnalysis {
    let syncs = super::sync_calls::sync_calls(trace);
    analyze_gaps_with(trace, mask, steps, launch, compile, startup, &syncs)
}

/// How [`analyze_gaps`] classifies a host span by its name.
#[derive(Clone, Copy)]
struct NameClass {
    instantiate: bool,
    dataloader: bool,
    step: bool,
    cap_begin: bool,
    cap_end: bool,
    management: bool,
    alloc: bool,
    command_buffer_full: bool,
    /// A collective or MPI call the host runs itself
    /// ([`crate::model::classify::is_host_run_collective`]).
    host_comm: bool,
    /// Issues device work by its name (kernel or graph launch, copy, fill): a launch even
    /// when the trace does not link it to its activity.
    issues_work: bool,
}

impl NameClass {
    fn of(n: &str) -> NameClass {
        NameClass {
            instantiate: n.contains("GraphInstantiate"),
            dataloader: is_dataloader(n),
            step: n.starts_with("ProfilerStep#"),
            cap_begin: is_capture_begin(n),
            cap_end: is_capture_end(n),
            management: is_runtime_management(n),
            alloc: is_allocation(n),
            command_buffer_full: n == super::launch::COMMAND_BUFFER_FULL,
            host_comm: crate::model::classify::is_host_run_collective(n),
            issues_work: super::launch::is_kernel_launch(n)
                || super::launch::is_graph_launch(n)
                || n.contains("Memcpy")
                || n.contains("Memset"),
        }
    }
}

/// [`analyze_gaps`] with the trace's sync calls already found ([`super::sync_calls::sync_calls`]).
///
/// The steps: what the device events say ([`DeviceWork::of`]), one pass over the host events
/// for what each thread did ([`HostActivity::of`]), the sync calls indexed by start
/// ([`SyncIndex`]), then per device its busy spans and gaps ([`busy_and_gaps`]), each gap
/// attributed ([`Walk::attribute`]) and counted ([`device_gaps`]), and last the host wait per
/// step ([`step_waits`]).
pub fn analyze_gaps_with(
    trace: &Trace,
    mask: &IntervalSet,
    steps: &[Step],
    launch: &LaunchAnalysis,
    compile: &IntervalSet,
    startup: &IntervalSet,
    syncs: &[(u32, SyncKind)],
) -> GapAnalysis {
    let window = mask.hull().unwrap_or_default();
    let device = DeviceWork::of(trace);
    let HostActivity {
        threads,
        trees,
        capture,
        main_thread,
    } = HostActivity::of(trace, syncs, &device.launched);
    // compile work counts on every thread: it holds the process (GIL, compile workers)
    let compile_set = compile.union(&IntervalSet::from_intervals(capture));
    let sync_index = SyncIndex::new(trace, syncs);
    let ctx = Attribution {
        trace,
        steps,
        threads: &threads,
        compile: &compile_set,
        startup,
        syncs: &sync_index,
        main_thread,
        last_start: &device.last_start,
        empty: ThreadSets::default(),
        os: (!trace.os.is_empty()).then(|| {
            (0..trace.threads.len() as u32)
                .map(|t| trace.os.thread(t))
                .collect()
        }),
    };
    let mut processes = Processes::new(trace, threads.len());
    let mut walk = Walk::default();
    let devices = activities_by_device(trace, mask)
        .iter()
        .map(|(dev, acts)| device_gaps(&ctx, &mut processes, &mut walk, &trees, *dev, acts, mask))
        .collect();
    let step_wait = step_waits(steps, &sync_index, launch);
    let compile_time = compile_set.intersect(mask).total();
    GapAnalysis {
        window,
        devices,
        step_wait,
        compile_time,
    }
}

/// What the device events say before the gaps are walked.
struct DeviceWork {
    /// Bits over `trace.cpu`: the host calls that launched device work (linked to a kernel,
    /// copy or fill).
    launched: Vec<u64>,
    /// The start of each device's last activity in the trace (no work after it:
    /// [`Cause::NoWork`]).
    last_start: HashMap<i64, Ns>,
}

impl DeviceWork {
    /// One pass over the device events.
    fn of(trace: &Trace) -> DeviceWork {
        let mut launched = vec![0u64; trace.cpu.len().div_ceil(64)];
        let mut last_start: HashMap<i64, Ns> = HashMap::default();
        for g in &trace.gpu {
            if g.is_activity() {
                let l = last_start.entry(g.device as i64).or_insert(g.start);
                *l = (*l).max(g.start);
            }
            if g.launch != NONE && g.is_activity() {
                if let Some(w) = launched.get_mut(g.launch as usize / 64) {
                    *w |= 1 << (g.launch % 64);
                }
            }
        }
        DeviceWork {
            launched,
            last_start,
        }
    }
}

/// What each host thread did, from one pass over the host events in start order.
struct HostActivity {
    /// Per thread (index = thread): its activity by class.
    threads: Vec<ThreadSets>,
    /// Per thread: its span tree, resolved (its host-compute roots name host compute).
    trees: Vec<SpanTree>,
    /// Graph capture (`cudaStreamBeginCapture` … `cudaStreamEndCapture` on one thread) and
    /// graph instantiation: compile work.
    capture: Vec<Interval>,
    /// The thread with most launch calls ([`NONE`] without any runtime call): the launching
    /// thread of a gap whose activities have no launch.
    main_thread: u32,
}

impl HostActivity {
    /// The pass; `launched` marks the host calls linked to device work ([`DeviceWork`]).
    fn of(trace: &Trace, syncs: &[(u32, SyncKind)], launched: &[u64]) -> HostActivity {
        // Host classes per thread (index = thread): sync, dataloader, runtime, cpu.
        // unions built as events come (in start order), not vectors of every event
        // (5: host compute, 6: launch-path operators and frames, from each thread's span tree;
        // 7: host collectives and MPI calls)
        let mut per_thread: Vec<[UnionBuilder; 8]> = Vec::new();
        let mut trees: Vec<SpanTree> = Vec::new();
        let is_launch = |i: usize| launched[i / 64] >> (i % 64) & 1 == 1;
        let mut capture: Vec<Interval> = Vec::new();
        let mut open_capture: HashMap<u32, Ns> = HashMap::default();
        // launch calls per thread; `None` for threads without host calls
        let mut launch_count: Vec<Option<u64>> = Vec::new();
        let mut name_class = NameMemo::new(trace, NameClass::of);
        // sync calls come in `trace.cpu` order: a cursor finds them
        let mut next_sync = syncs.iter().map(|s| s.0).peekable();
        // the caching allocator growing: the innermost operator open on the thread when `Total
        // Reserved` rose is allocation work (found with a stack of open operators per thread,
        // kept only when the trace has such growth)
        let mut growth = trace.memory.reserved_growth().peekable();
        let track_growth = growth.peek().is_some();
        let mut open_ops: Vec<Vec<Interval>> = Vec::new();
        // On an Nsight Systems export, the NVTX push/pop ranges of a thread are the host's own
        // marks of its work, with no operator or Python frame under them (unless `emit_nvtx`
        // made them operators): the host is in that range's work, as it is in an operator's
        // or a frame's on Kineto. The start/end ranges (on companion pseudo-threads, negative
        // tids) overlap freely and only label time, as Kineto's annotations do.
        let ranges_are_work = trace.source.format == crate::model::SourceFormat::NsysSqlite;
        for (i, e) in trace.cpu.iter().enumerate() {
            let t = e.thread as usize;
            if per_thread.len() <= t {
                per_thread.resize_with(t + 1, Default::default);
                trees.resize_with(t + 1, Default::default);
            }
            if track_growth {
                while let Some((ts, th)) = growth.next_if(|g| g.0 < e.start) {
                    grown_in(&mut open_ops, &mut per_thread, ts, th);
                }
                if e.kind == CpuKind::Op {
                    if open_ops.len() <= t {
                        open_ops.resize_with(t + 1, Vec::new);
                    }
                    let stack = &mut open_ops[t];
                    while stack.last().is_some_and(|o| o.end <= e.start) {
                        stack.pop();
                    }
                    stack.push(e.interval());
                }
            }
            let sets = &mut per_thread[t];
            let tree = &mut trees[t];
            let iv = e.interval();
            {
                let [.., compute, path, _] = &mut *sets;
                tree.close_until(e.start, path, compute);
            }
            let mut compile_iv = None;
            match e.kind {
                CpuKind::Runtime | CpuKind::Driver | CpuKind::OtherRuntime => {
                    let c = name_class.get(e.name);
                    if launch_count.len() <= t {
                        launch_count.resize(t + 1, None);
                    }
                    *launch_count[t].get_or_insert(0) += (e.correlation != 0) as u64;
                    if is_launch(i) || c.issues_work {
                        tree.launch();
                    }
                    while next_sync.next_if(|&s| s < i as u32).is_some() {}
                    if next_sync.next_if_eq(&(i as u32)).is_some() {
                        sets[0].push(iv);
                    } else if c.instantiate {
                        compile_iv = Some(iv);
                    } else if c.alloc {
                        sets[4].push(iv);
                    } else if c.management {
                        sets[3].push(iv);
                    } else {
                        sets[2].push(iv);
                    }
                    if c.cap_begin {
                        open_capture.insert(e.thread, e.start);
                    } else if c.cap_end {
                        if let Some(s) = open_capture.remove(&e.thread) {
                            compile_iv = Some(Interval::new(s, e.end()));
                        }
                    }
                }
                CpuKind::Op
                | CpuKind::UserAnnotation
                | CpuKind::Python
                | CpuKind::PythonFunction => {
                    let c = name_class.get(e.name);
                    if c.dataloader && e.kind != CpuKind::Python {
                        sets[1].push(iv);
                    } else if c.host_comm && e.kind != CpuKind::Python {
                        // waiting for other ranks: neither host compute nor the launch path
                        sets[7].push(iv);
                    } else if !c.step
                        && (e.kind != CpuKind::UserAnnotation
                            || ranges_are_work
                                && trace.threads.get(t).is_some_and(|th| th.tid >= 0))
                    {
                        // annotations only label time; operators, Python frames and NVTX
                        // ranges are work, in the launch path or host compute (decided when
                        // their subtree ends)
                        tree.open(iv, i as u32, e.kind == CpuKind::Op);
                    }
                }
                CpuKind::Other => {
                    if !name_class.get(e.name).command_buffer_full {
                        sets[3].push(iv);
                    }
                }
            }
            if let Some(c) = compile_iv {
                capture.push(c);
            }
        }
        for (ts, th) in growth {
            grown_in(&mut open_ops, &mut per_thread, ts, th);
        }
        for (tree, sets) in trees.iter_mut().zip(per_thread.iter_mut()) {
            let [.., compute, path, _] = &mut *sets;
            tree.flush(path, compute);
        }
        let threads = per_thread
            .into_iter()
            .map(|v| {
                let [sync, dataloader, runtime, cpu, alloc, compute, path, comm] =
                    v.map(UnionBuilder::finish);
                ThreadSets {
                    sync,
                    dataloader,
                    runtime,
                    cpu: cpu.union(&path),
                    alloc,
                    compute,
                    comm,
                }
            })
            .collect();
        let main_thread = launch_count
            .iter()
            .enumerate()
            .filter_map(|(t, c)| c.map(|c| (t as u32, c)))
            .max_by_key(|&(t, c)| (c, std::cmp::Reverse(t)))
            .map(|(t, _)| t)
            .unwrap_or(NONE);
        HostActivity {
            threads,
            trees,
            capture,
            main_thread,
        }
    }
}

/// The threads of each process, for what a launching thread leaves unexplained: a gap is
/// then caused by another thread's work (or the GIL it holds); other processes (other ranks
/// in one capture) have their own GPUs and interpreters.
///
/// Nothing is built for a process of one thread (its sets are that thread's, borrowed; for a
/// gap of that very thread they add nothing). The sets of a process of several threads are
/// the union of theirs, built the first time a gap is left unexplained by its launching
/// thread, by a linear merge of the threads' sorted sets.
struct Processes {
    /// Distinct pids of the threads with host activity, sorted.
    pids: Vec<i64>,
    /// Per process: its threads with host activity.
    members: Vec<Vec<u32>>,
    /// Per process of several threads: the union of their sets, once built.
    union: Vec<Option<ThreadSets>>,
}

/// What the other threads of a gap's process did ([`Processes::others`]).
enum Others<'s> {
    /// Nothing the launching thread's own sets do not already hold.
    Nothing,
    /// The one thread of the process.
    Thread(&'s ThreadSets),
    /// The union of the sets of its threads (`cpu` holds their runtime and host compute).
    Union(&'s ThreadSets),
}

impl Processes {
    /// The processes of the `n` threads with host activity.
    fn new(trace: &Trace, n: usize) -> Processes {
        let pid_of = |t: usize| trace.threads.get(t).map_or(0, |th| th.pid);
        let mut pids: Vec<i64> = (0..n).map(pid_of).collect();
        pids.sort_unstable();
        pids.dedup();
        let mut members = vec![Vec::new(); pids.len()];
        for t in 0..n {
            if let Ok(p) = pids.binary_search(&pid_of(t)) {
                members[p].push(t as u32);
            }
        }
        Processes {
            union: (0..pids.len()).map(|_| None).collect(),
            pids,
            members,
        }
    }

    /// Processes.
    fn len(&self) -> usize {
        self.pids.len()
    }

    /// The process of `thread` (`None` for [`NONE`] or a process without host activity).
    fn of(&self, trace: &Trace, thread: u32) -> Option<usize> {
        if thread == NONE {
            return None;
        }
        let pid = trace.threads.get(thread as usize).map_or(0, |th| th.pid);
        self.pids.binary_search(&pid).ok()
    }

    /// What the threads of process `p` did, for a gap whose launching thread is `thread` and
    /// whose own sets were taken first.
    fn others<'s>(&'s mut self, p: usize, thread: u32, threads: &'s [ThreadSets]) -> Others<'s> {
        match self.members[p][..] {
            [] => Others::Nothing,
            [m] if m == thread => Others::Nothing,
            [m] => Others::Thread(&threads[m as usize]),
            _ => {
                let members = &self.members[p];
                Others::Union(self.union[p].get_or_insert_with(|| {
                    // each thread's set is already sorted and disjoint: merged pairwise in
                    // linear time, not re-sorted from all the spans
                    // (one merge per set kind: no intermediate union per thread)
                    let all = |picks: &[fn(&ThreadSets) -> &IntervalSet]| {
                        let sets: Vec<&IntervalSet> = members
                            .iter()
                            .flat_map(|&t| picks.iter().map(move |p| p(&threads[t as usize])))
                            .collect();
                        IntervalSet::union_of(&sets)
                    };
                    ThreadSets {
                        sync: IntervalSet::new(),
                        dataloader: all(&[|t| &t.dataloader]),
                        runtime: IntervalSet::new(),
                        cpu: all(&[|t| &t.cpu, |t| &t.runtime, |t| &t.compute]),
                        alloc: all(&[|t| &t.alloc]),
                        compute: IntervalSet::new(),
                        comm: all(&[|t| &t.comm]),
                    }
                }))
            }
        }
    }
}

/// The sync calls sorted by start with a running max of their ends (for "in progress at t",
/// and for the walk back from a gap over the calls that can reach into it).
pub(super) struct SyncIndex {
    /// (start, end, index in `trace.cpu`), in `trace.cpu` order (by start).
    pub(super) calls: Vec<(Ns, Ns, u32)>,
    /// The largest end among the calls up to each one.
    pub(super) prefix_max_end: Vec<Ns>,
}

impl SyncIndex {
    /// The index of `syncs` (in `trace.cpu` order, as [`super::sync_calls::sync_calls`] finds
    /// them).
    pub(super) fn new(trace: &Trace, syncs: &[(u32, SyncKind)]) -> SyncIndex {
        let calls: Vec<(Ns, Ns, u32)> = syncs
            .iter()
            .map(|&(i, _)| {
                let e = &trace.cpu[i as usize];
                (e.start, e.end(), i)
            })
            .collect();
        let mut prefix_max_end: Vec<Ns> = Vec::with_capacity(calls.len());
        for (k, s) in calls.iter().enumerate() {
            let prev = if k > 0 {
                prefix_max_end[k - 1]
            } else {
                Ns::MIN
            };
            prefix_max_end.push(prev.max(s.1));
        }
        SyncIndex {
            calls,
            prefix_max_end,
        }
    }

    /// A sync in progress at `t`, or one that returned at most [`SYNC_RETURN_SKEW`] before it
    /// ([`NONE`] when none). `cursor` is where the search starts (the gaps of a device come in
    /// time order) and is left where the next one should start; any value is correct.
    fn in_progress(&self, t: Ns, cursor: &mut usize) -> u32 {
        let since = t - SYNC_RETURN_SKEW;
        let mut j = crate::model::intervals::seek(&self.calls, cursor, |s| s.0 <= t);
        while j > 0 {
            j -= 1;
            if self.prefix_max_end[j] <= since {
                break;
            }
            if self.calls[j].1 > since {
                return self.calls[j].2;
            }
        }
        NONE
    }
}

/// The activities of each device overlapping the mask (a zero-length one counts inside it),
/// by device id, each list in `trace.gpu` order (by start).
fn activities_by_device(trace: &Trace, mask: &IntervalSet) -> Vec<(i64, Vec<u32>)> {
    let in_mask = |t: Ns| {
        let sp = mask.spans();
        let i = sp.partition_point(|m| m.start <= t);
        i > 0 && t < sp[i - 1].end
    };
    let mut by_device: RunMap<i64, Vec<u32>> = RunMap::default();
    // activities come by start: the search of the mask goes on from the last one's
    let mut cursor = 0;
    for (i, g) in trace.gpu.iter().enumerate() {
        if !g.is_activity() {
            continue;
        }
        let inside = if g.dur > 0 {
            mask.covered_within_from(g.interval(), &mut cursor) > 0
        } else {
            in_mask(g.start)
        };
        if inside {
            by_device
                .get_or_insert_with(g.device as i64, Vec::new)
                .push(i as u32);
        }
    }
    by_device.into_sorted()
}

/// A gap before it is attributed: start, end, the activity before it and the one after it
/// ([`NONE`] at the window's edges).
type RawGap = (Ns, Ns, u32, u32);

/// One device's busy time inside the mask and its gaps, in time order.
fn busy_and_gaps(trace: &Trace, acts: &[u32], mask: &IntervalSet) -> (Ns, Vec<RawGap>) {
    let max_dur = acts
        .iter()
        .map(|&i| trace.gpu[i as usize].dur)
        .max()
        .unwrap_or(0);
    let mut busy: Ns = 0;
    let mut raw: Vec<RawGap> = Vec::new();
    for w in mask.spans() {
        // activities overlapping this span (sorted by start)
        let lo = acts.partition_point(|&i| trace.gpu[i as usize].start < w.start - max_dur);
        let hi = acts.partition_point(|&i| trace.gpu[i as usize].start < w.end);
        // busy spans with the activity that starts each span and the one that ends it
        let mut spans: Vec<(Ns, Ns, u32, u32)> = Vec::new();
        for &i in &acts[lo..hi] {
            let g = &trace.gpu[i as usize];
            if g.end() <= w.start && !(g.dur == 0 && g.start >= w.start) {
                continue;
            }
            let s = g.start.max(w.start);
            let e = g.end().min(w.end);
            match spans.last_mut() {
                Some(last) if s <= last.1 => {
                    if e > last.1 {
                        last.1 = e;
                        last.3 = i;
                    }
                }
                _ => spans.push((s, e, i, i)),
            }
        }
        busy += spans.iter().map(|s| s.1 - s.0).sum::<Ns>();
        let mut cur = w.start;
        let mut prev = NONE;
        for &(s, e, first, last) in &spans {
            if s > cur {
                // a gap opened by the window start has no activity before it
                let next = if trace.gpu[first as usize].start == s {
                    first
                } else {
                    NONE
                };
                raw.push((cur, s, prev, next));
            }
            cur = cur.max(e);
            prev = last;
        }
        if w.end > cur {
            raw.push((cur, w.end, prev, NONE));
        }
    }
    (busy, raw)
}

/// What every gap's attribution reads.
struct Attribution<'a> {
    trace: &'a Trace,
    steps: &'a [Step],
    /// Per thread: its host activity ([`HostActivity::threads`]).
    threads: &'a [ThreadSets],
    /// Compile work, graph capture and instantiation included.
    compile: &'a IntervalSet,
    /// One-time start-up ([`Cause::Startup`]).
    startup: &'a IntervalSet,
    syncs: &'a SyncIndex,
    /// [`HostActivity::main_thread`].
    main_thread: u32,
    /// [`DeviceWork::last_start`].
    last_start: &'a HashMap<i64, Ns>,
    /// The sets of a thread without host activity.
    empty: ThreadSets,
    /// The OS's record of the host threads, by thread; `None` when the trace has none
    /// (Kineto).
    os: Option<Vec<ThreadRecord<'a>>>,
}

/// How a gap's time was split ([`Walk::attribute`]).
struct Attributed {
    split: [Ns; N_CAUSES],
    /// The sync call the gap belongs to ([`Gap::sync`]).
    sync: u32,
    /// The launching thread.
    thread: u32,
    /// What the OS recorded of the launching thread during the untraced time, before a
    /// drain took its share: (untraced ns, of it with the thread's scheduling recorded, of
    /// that off a CPU); the calls go to [`Walk::os_calls`].
    os: [Ns; 3],
}

/// The state of the walk over one device's gaps in time order (its buffers are reused from
/// device to device).
#[derive(Default)]
struct Walk {
    /// What is left of the gap's host part while the causes take theirs.
    free: Remainder,
    /// Where the searches of each thread's sets start (sync, dataloader, runtime, cpu,
    /// alloc, compute, comm): the gaps come in time order.
    cursors: Vec<[usize; 7]>,
    /// The same for the compile set.
    compile_cursor: usize,
    /// The same for the start-up set.
    startup_cursor: usize,
    /// The same for the sync calls ([`SyncIndex::in_progress`]).
    sync_cursor: usize,
    /// The same for each thread's off-CPU time, OS calls and CPU samples
    /// ([`os_of_untraced`]).
    os_cursors: Vec<[usize; 3]>,
    /// The same for each process' sets ([`Processes::others`]).
    process_cursors: Vec<[usize; 7]>,
    /// What is left of the lead the host had before the last sync drained the queue.
    drain_budget: Ns,
    /// That sync.
    drain_sync: u32,
    /// The gap's untraced time inside the launching thread's OS calls (name, ns), before the
    /// drain's share is taken out.
    os_calls: Vec<(crate::model::NameId, Ns)>,
    /// The functions of the launching thread's CPU samples in the gap's untraced time.
    os_samples: Vec<crate::model::NameId>,
}

/// Removes from `free` the part that `set` covers and adds it to `cause`.
fn take(
    free: &mut Remainder,
    split: &mut [Ns; N_CAUSES],
    set: &IntervalSet,
    cause: Cause,
    cursor: &mut usize,
) {
    split[cause as usize] += free.take_from(set, cursor);
}

/// What the other threads of the gap's process did: their DataLoader spans, then (with
/// `all`) their allocation and any other spans.
fn take_others(
    free: &mut Remainder,
    split: &mut [Ns; N_CAUSES],
    others: Others,
    cur: &mut [usize; 7],
    all: bool,
) {
    let sets = match others {
        Others::Nothing => return,
        Others::Thread(s) | Others::Union(s) => s,
    };
    take(
        free,
        split,
        &sets.dataloader,
        Cause::Dataloader,
        &mut cur[1],
    );
    if !all {
        return;
    }
    take(free, split, &sets.alloc, Cause::Alloc, &mut cur[4]);
    // another thread in a collective or MPI call, with nothing recorded on the launching
    // thread: the launching thread most likely waits for that communication
    take(free, split, &sets.comm, Cause::HostComm, &mut cur[6]);
    take(free, split, &sets.cpu, Cause::Cpu, &mut cur[3]);
    if let Others::Thread(s) = others {
        // a union's cpu holds these; one thread's are taken one after the other (what they
        // cover of `free` is the same)
        take(free, split, &s.runtime, Cause::Cpu, &mut cur[2]);
        take(free, split, &s.compute, Cause::Cpu, &mut cur[5]);
    }
}

impl Walk {
    /// Starts the walk of a device.
    fn start(&mut self, threads: usize, processes: usize) {
        self.cursors.clear();
        self.cursors.resize(threads, [0; 7]);
        self.compile_cursor = 0;
        self.startup_cursor = 0;
        self.sync_cursor = 0;
        self.os_cursors.clear();
        self.os_cursors.resize(threads, [0; 3]);
        self.process_cursors.clear();
        self.process_cursors.resize(processes, [0; 7]);
        self.drain_budget = 0;
        self.drain_sync = NONE;
    }

    /// Splits the gap `a..b` of device `dev` between the causes (see the module
    /// documentation); `prev` and `next` are the activities around it.
    fn attribute(
        &mut self,
        ctx: &Attribution,
        processes: &mut Processes,
        dev: i64,
        (a, b, prev, next): RawGap,
    ) -> Attributed {
        let trace = ctx.trace;
        let Walk {
            free,
            cursors,
            compile_cursor,
            startup_cursor,
            sync_cursor,
            os_cursors,
            process_cursors,
            drain_budget,
            drain_sync,
            os_calls,
            os_samples,
        } = self;
        os_calls.clear();
        os_samples.clear();
        let mut os = [0; 3];
        let launch_of = |gi: u32| -> Option<&crate::model::CpuEvent> {
            if gi == NONE {
                return None;
            }
            let g = &trace.gpu[gi as usize];
            (g.launch != NONE).then(|| &trace.cpu[g.launch as usize])
        };
        let next_launch = launch_of(next);
        let thread = next_launch
            .or_else(|| launch_of(prev))
            .map(|l| l.thread)
            .unwrap_or(ctx.main_thread);
        let sets = ctx.threads.get(thread as usize).unwrap_or(&ctx.empty);
        let mut spare = [0; 7];
        let cur = cursors.get_mut(thread as usize).unwrap_or(&mut spare);
        let process = processes.of(trace, thread);
        let mut spare_p = [0; 7];
        let any_cursor = match process {
            Some(p) => &mut process_cursors[p],
            None => &mut spare_p,
        };
        let mut split = [0 as Ns; N_CAUSES];
        let mut sync = NONE;
        let gap = Interval::new(a, b);
        // after the device's last activity, outside every step's host work (inside a
        // step, the host's work there is that step's cost, as in the steps before)
        let no_work = next == NONE
            && ctx.last_start.get(&dev).is_none_or(|&s| s < b)
            && !ctx.steps.iter().any(|s| s.host_span.overlap(&gap) > 0);
        match next_launch {
            _ if no_work => {
                // the device ran out of work and nothing came after: no host fix recovers it
                split[Cause::NoWork as usize] = b - a;
                *drain_budget = 0;
            }
            Some(l) if l.end() <= a => {
                // the launch call had returned when the device went idle: its work was
                // queued (a call still running then had not queued it yet: the device waits
                // for the launch, the branch below, where a lazy module load inside the call
                // is start-up's)
                let rest = b - a;
                if *drain_budget > 0 && !real_lead(l, a) {
                    // queued, but the launch returned too late to keep the device busy: the
                    // host has no real lead yet (two kernels of one operator a few µs
                    // apart), the drain goes on
                    sync = *drain_sync;
                    let moved = rest.min(*drain_budget);
                    split[Cause::Sync as usize] = moved;
                    split[Cause::Queued as usize] = rest - moved;
                    *drain_budget -= moved;
                } else {
                    split[Cause::Queued as usize] = rest;
                    // the queue is ahead again: the drain is over
                    *drain_budget = 0;
                }
            }
            _ => {
                let l_start = next_launch.map(|l| l.start.clamp(a, b)).unwrap_or(b);
                // launch latency ends LAUNCH_LATENCY after the call returned; a later start
                // is a device-side wait
                let l_latency_end = next_launch
                    .map(|l| (l.end() + LAUNCH_LATENCY).clamp(l_start, b))
                    .unwrap_or(b);
                split[Cause::Queued as usize] += b - l_latency_end;
                free.reset(Interval::new(a, l_start));
                let sp = &mut split;
                // one-time start-up first, on any thread: a steady state does not pay it
                // again, whatever else the host did meanwhile
                take(free, sp, ctx.startup, Cause::Startup, startup_cursor);
                let s = ctx.syncs.in_progress(a, sync_cursor);
                // a sync drained the queue: the first `lead` ns of the gap's host part (the
                // lead the host had when it entered the sync) are its cost, the host work in
                // them included; DataLoader and compile keep their own
                let mut lead_end = a;
                if s != NONE {
                    sync = s;
                    take(free, sp, ctx.compile, Cause::Compile, compile_cursor);
                    take(free, sp, &sets.dataloader, Cause::Dataloader, &mut cur[1]);
                    if let (Some(p), false) = (process, free.is_empty()) {
                        let others = processes.others(p, thread, ctx.threads);
                        take_others(free, sp, others, any_cursor, false);
                    }
                    let lead = (a - trace.cpu[s as usize].start).max(0);
                    lead_end = a.saturating_add(lead);
                    let drained = IntervalSet::from_intervals([Interval::new(a, lead_end)]);
                    take(free, sp, &drained, Cause::Sync, &mut 0);
                    *drain_budget = lead;
                    *drain_sync = s;
                }
                take(free, sp, &sets.sync, Cause::Sync, &mut cur[0]);
                take(free, sp, ctx.compile, Cause::Compile, compile_cursor);
                take(free, sp, &sets.dataloader, Cause::Dataloader, &mut cur[1]);
                take(free, sp, &sets.alloc, Cause::Alloc, &mut cur[4]);
                take(free, sp, &sets.runtime, Cause::Launch, &mut cur[2]);
                take(free, sp, &sets.comm, Cause::HostComm, &mut cur[6]);
                take(free, sp, &sets.compute, Cause::HostCompute, &mut cur[5]);
                take(free, sp, &sets.cpu, Cause::Cpu, &mut cur[3]);
                // nothing on the launching thread: what the other threads did (their sets
                // are looked at, and built, only when something is left)
                if let (Some(p), false) = (process, free.is_empty()) {
                    let others = processes.others(p, thread, ctx.threads);
                    take_others(free, sp, others, any_cursor, true);
                }
                let untraced = free.total();
                split[Cause::Untraced as usize] += untraced;
                if let (Some(rec), true) = (&ctx.os, untraced > 0) {
                    let mine = rec.get(thread as usize).copied().unwrap_or_default();
                    let mut scratch = [0; 3];
                    let cur = os_cursors.get_mut(thread as usize).unwrap_or(&mut scratch);
                    os = os_of_untraced(mine, free.spans(), cur, os_calls, os_samples);
                }
                // the launch call and its latency: start-up where a lazy module load runs in
                // the call, then the sync's while inside its lead, then launch overhead
                let latency = Interval::new(l_start, l_latency_end);
                let st = ctx.startup.covered_within_from(latency, startup_cursor);
                split[Cause::Startup as usize] += st;
                let latency_in_lead =
                    (lead_end.min(l_latency_end) - l_start).clamp(0, latency.len() - st);
                split[Cause::Sync as usize] += latency_in_lead;
                split[Cause::Launch as usize] += latency.len() - st - latency_in_lead;
                if s != NONE {
                    *drain_budget = (*drain_budget - split[Cause::Sync as usize]).max(0);
                } else if *drain_budget > 0 {
                    // still rebuilding the lead a sync drained: launch overhead and host work
                    // are the sync's cost, up to what is left of the lead the host had
                    // (beyond it, host work is its own cause)
                    sync = *drain_sync;
                    for c in [
                        Cause::Launch,
                        Cause::Cpu,
                        Cause::HostCompute,
                        Cause::Untraced,
                    ] {
                        let moved = split[c as usize].min(*drain_budget);
                        split[c as usize] -= moved;
                        split[Cause::Sync as usize] += moved;
                        *drain_budget -= moved;
                    }
                }
            }
        }
        debug_assert_eq!(split.iter().sum::<Ns>(), gap.len());
        Attributed {
            split,
            sync,
            thread,
            os,
        }
    }
}

/// What the OS recorded of a thread (`mine`) during `free`, a gap's untraced time:
/// `[untraced ns, of it with the thread's scheduling recorded, of that off a CPU]`; the time
/// inside each of its outermost OS calls (its name, ns) goes to `out`, the functions of its
/// CPU samples to `sampled`. `cur` is where the searches of its off-CPU time, calls and
/// samples start (the gaps come in time order; any value is correct).
fn os_of_untraced(
    mine: ThreadRecord,
    free: &[Interval],
    cur: &mut [usize; 3],
    out: &mut Vec<(crate::model::NameId, Ns)>,
    sampled: &mut Vec<crate::model::NameId>,
) -> [Ns; 3] {
    let untraced: Ns = free.iter().map(|i| i.len()).sum();
    let (scheduled, off) = match mine.off_cpu {
        Some(set) => {
            let off = free
                .iter()
                .map(|&i| set.covered_within_from(i, &mut cur[0]))
                .sum::<Ns>();
            (untraced, off)
        }
        None => (0, 0),
    };
    if let (Some(first), Some(last)) = (free.first(), free.last()) {
        // the free spans are sorted and disjoint and the calls come by start: the spans that
        // end before a call starts end before every later call starts (one sweep, not every
        // span for every call)
        let mut k = 0;
        for c in mine.calls_in(Interval::new(first.start, last.end), &mut cur[1]) {
            let iv = c.interval();
            while free.get(k).is_some_and(|f| f.end <= iv.start) {
                k += 1;
            }
            let inside: Ns = (free[k..].iter())
                .take_while(|f| f.start < iv.end)
                .map(|f| f.overlap(&iv))
                .sum();
            if inside > 0 {
                out.push((c.name, inside));
            }
        }
    }
    for &f in free {
        sampled.extend(mine.samples_in(f, &mut cur[2]).iter().map(|s| s.function));
    }
    [untraced, scheduled, off]
}

/// `v × num / den` in 128 bits (`den` > 0): a gap's share of a figure.
fn share(v: Ns, num: Ns, den: Ns) -> Ns {
    (v as i128 * num as i128 / den as i128) as Ns
}

/// The gaps of device `dev` (its activities `acts` inside `mask`), attributed and counted by
/// band and cause, with the site of its host compute and the per-stream detail.
fn device_gaps(
    ctx: &Attribution,
    processes: &mut Processes,
    walk: &mut Walk,
    trees: &[SpanTree],
    dev: i64,
    acts: &[u32],
    mask: &IntervalSet,
) -> DeviceGaps {
    let steps = ctx.steps;
    walk.start(ctx.threads.len(), processes.len());
    let (busy, raw) = busy_and_gaps(ctx.trace, acts, mask);
    let mut out = DeviceGaps {
        device: dev,
        busy,
        idle: 0,
        gaps: Vec::with_capacity(raw.len()),
        bands: [BandStat::default(); 5],
        by_cause: [0; N_CAUSES],
        by_band_cause: [[0; N_CAUSES]; 5],
        streams: Vec::new(),
        compute_site: None,
        untraced_os: None,
    };
    let mut untraced_os = UntracedOs::default();
    // the gap with the most host compute: (its time, start, end, thread)
    let mut most_compute: (Ns, Ns, Ns, u32) = (0, 0, 0, NONE);
    let mut step_cursor = 0;
    // the launch call of a gap's next activity, read first thing in its attribution, lies
    // anywhere in the host events: fetched a few gaps ahead (the activity itself further
    // ahead, as its launch index is needed to find the call)
    let launch_ahead = |k: usize| {
        let (gpu, cpu) = (&ctx.trace.gpu, &ctx.trace.cpu);
        if let Some(&(_, _, _, next)) = raw.get(k + 16) {
            crate::model::fast::prefetch(gpu, next as usize);
        }
        if let Some(g) = raw.get(k + 8).and_then(|r| gpu.get(r.3 as usize)) {
            crate::model::fast::prefetch(cpu, g.launch as usize);
        }
    };
    for (k, &g) in raw.iter().enumerate() {
        launch_ahead(k);
        let (a, b, prev, next) = g;
        let Attributed {
            split,
            sync,
            thread,
            os,
        } = walk.attribute(ctx, processes, dev, g);
        // what the OS recorded of the untraced time, the drain's share taken out
        let untraced = split[Cause::Untraced as usize];
        if ctx.os.is_some() && os[0] > 0 && untraced > 0 {
            untraced_os.scheduled += share(os[1], untraced, os[0]);
            untraced_os.off_cpu += share(os[2], untraced, os[0]);
            for &(name, ns) in &walk.os_calls {
                let ns = share(ns, untraced, os[0]);
                match untraced_os.calls.iter_mut().find(|c| c.0 == name) {
                    Some(c) => c.1 += ns,
                    None => untraced_os.calls.push((name, ns)),
                }
            }
            // the samples describe what the thread ran, whichever cause the drain gives the
            // time: all of the gap's
            for &name in &walk.os_samples {
                match untraced_os.samples.iter_mut().find(|c| c.0 == name) {
                    Some(c) => c.1 += 1,
                    None => untraced_os.samples.push((name, 1)),
                }
            }
        }
        let gap = Interval::new(a, b);
        if split[Cause::HostCompute as usize] > most_compute.0 {
            most_compute = (split[Cause::HostCompute as usize], a, b, thread);
        }
        // the largest share; the first cause on ties
        let mut cause = CAUSES[0];
        for c in CAUSES {
            if split[c as usize] > split[cause as usize] {
                cause = c;
            }
        }
        let band = Band::of(gap.len());
        let bs = &mut out.bands[band as usize];
        bs.count += 1;
        bs.total += gap.len();
        for (k, v) in split.iter().enumerate() {
            out.by_cause[k] += v;
            out.by_band_cause[band as usize][k] += v;
        }
        out.idle += gap.len();
        // gaps come in time order: a cursor finds their steps
        while steps.get(step_cursor).is_some_and(|s| s.span.end <= a) {
            step_cursor += 1;
        }
        let step = steps
            .get(step_cursor)
            .is_some_and(|s| s.span.start <= a)
            .then_some(step_cursor);
        out.gaps.push(Gap {
            start: a,
            end: b,
            cause,
            split: Split::new(&split),
            step_index: step.map_or(NONE, |s| s as u32),
            prev,
            next,
            thread,
            sync,
        });
    }
    // freed before the stream gaps are found (10 MB at the peak of a 1 GB trace)
    drop(raw);
    out.compute_site = compute_site(trees, most_compute);
    out.streams = stream_gaps(ctx.trace, acts, mask);
    if ctx.os.is_some() && out.by_cause[Cause::Untraced as usize] > 0 {
        untraced_os.calls.retain(|c| c.1 > 0);
        untraced_os
            .calls
            .sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        untraced_os
            .samples
            .sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        out.untraced_os = Some(untraced_os);
    }
    out
}

/// Names the host compute of the gap with the most of it (`(its time, start, end, thread)`):
/// the outermost compute span of that thread that ran longest in that gap.
fn compute_site(trees: &[SpanTree], most_compute: (Ns, Ns, Ns, u32)) -> Option<(u32, Ns)> {
    if most_compute.0 <= 0 {
        return None;
    }
    let (_, a, b, th) = most_compute;
    let roots = trees.get(th as usize).map_or(&[][..], |t| &t.compute_roots);
    let gap = Interval::new(a, b);
    // roots are disjoint and in start order: those overlapping the gap are a run
    let from = roots.partition_point(|r| r.0.end <= a);
    roots[from..]
        .iter()
        .take_while(|r| r.0.start < b)
        .map(|r| (r.1, r.0.overlap(&gap)))
        .max_by_key(|&(i, ov)| (ov, std::cmp::Reverse(i)))
}

/// Per-stream detail: the gaps between the activities of each stream inside the mask, by band.
fn stream_gaps(trace: &Trace, acts: &[u32], mask: &IntervalSet) -> Vec<StreamGaps> {
    let mut by_stream: HashMap<i64, (u64, UnionBuilder)> = HashMap::default();
    for &i in acts {
        let g = &trace.gpu[i as usize];
        let (n, ivs) = by_stream.entry(g.stream as i64).or_default();
        *n += 1;
        ivs.push(g.interval());
    }
    let mut streams: Vec<StreamGaps> = by_stream
        .into_iter()
        .map(|(stream, (n, ivs))| {
            let set = ivs.finish().intersect(mask);
            let mut bands = [BandStat::default(); 5];
            for g in set.gaps() {
                let b = &mut bands[Band::of(g.len()) as usize];
                b.count += 1;
                b.total += g.len();
            }
            StreamGaps {
                stream,
                activities: n,
                bands,
            }
        })
        .collect();
    streams.sort_by_key(|s| s.stream);
    streams
}

/// Host wait per step ([`StepWait`]).
fn step_waits(steps: &[Step], syncs: &SyncIndex, launch: &LaunchAnalysis) -> Vec<StepWait> {
    let mut waits: Vec<Interval> = syncs
        .calls
        .iter()
        .map(|s| Interval::new(s.0, s.1))
        .collect();
    waits.extend(launch.blocked.spans().iter().copied());
    let waits = IntervalSet::from_intervals(waits);
    // device tails not covered by the host work of a later step (pipelined work is not a wait)
    let host_steps = IntervalSet::from_intervals(steps.iter().map(|s| s.host_span));
    let tails = IntervalSet::from_intervals(
        steps
            .iter()
            .map(|s| Interval::new(s.host_span.end.max(s.span.start), s.span.end)),
    )
    .subtract(&host_steps);
    let all_waits = waits.union(&tails);
    steps
        .iter()
        .map(|s| StepWait {
            wait: all_waits.covered_within(s.span),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::build::TraceBuilder;
    use crate::model::GpuKind;

    fn run(t: &Trace, window: Interval) -> GapAnalysis {
        let mask = IntervalSet::from_intervals([window]);
        let l = super::super::launch::analyze_launches(t, &mask);
        let steps = super::super::steps::analyze_steps(t);
        let compile = crate::window::compile_work(t, &steps.steps).spans;
        analyze_gaps(t, &mask, &[], &l, &compile, &IntervalSet::new())
    }

    #[test]
    fn untraced_os_calls_sum_their_overlap_with_every_free_span() {
        // random free spans and outermost calls (some starting before the first span, some
        // long enough to cover several): the sweep gives each call the plain sum of its
        // overlaps with all spans, in call order
        let mut next = crate::model::testing::xorshift(0x2545_f491_4f6c_dd1d);
        let mut below = |n: u64| next(n) as Ns;
        for _ in 0..300 {
            let mut free = Vec::new();
            let mut t = below(50);
            for _ in 0..below(8) + 1 {
                let len = below(40) + 1;
                free.push(Interval::new(t, t + len));
                t += len + below(30) + 1;
            }
            let mut calls = Vec::new();
            let mut c = below(60);
            for _ in 0..below(10) {
                let dur = below(120);
                calls.push(crate::model::os::OsCall {
                    start: c,
                    dur,
                    name: crate::model::NameId(calls.len() as u32 + 1),
                    thread: 0,
                });
                c += dur + below(25);
            }
            let mine = crate::model::os::ThreadRecord {
                off_cpu: None,
                calls: &calls,
                samples: &[],
            };
            let (mut out, mut sampled) = (Vec::new(), Vec::new());
            os_of_untraced(mine, &free, &mut [0; 3], &mut out, &mut sampled);
            let (first, last) = (free[0], free[free.len() - 1]);
            let expected: Vec<_> = (mine.calls_in(Interval::new(first.start, last.end), &mut 0))
                .iter()
                .map(|c| {
                    (
                        c.name,
                        free.iter().map(|f| f.overlap(&c.interval())).sum::<Ns>(),
                    )
                })
                .filter(|&(_, ns)| ns > 0)
                .collect();
            assert_eq!(out, expected, "{free:?} {calls:?}");
        }
    }

    fn us(v: i64) -> Ns {
        v * 1000
    }

    /// A split of up to three causes under 2^32 ns each is kept as (cause, 32-bit ns) pairs,
    /// any other in full: the same values either way, and a gap of 56 bytes.
    #[test]
    fn split_few_and_long() {
        let mut full = [0 as Ns; N_CAUSES];
        full[Cause::Untraced as usize] = u32::MAX as Ns;
        full[Cause::Sync as usize] = 7;
        let s = Split::new(&full);
        assert!(matches!(s, Split::Few { .. }));
        assert_eq!(
            (s.get(Cause::Sync), s.get(Cause::Launch), s.full()),
            (7, 0, full)
        );
        full[Cause::Launch as usize] = 3;
        let three = Split::new(&full);
        assert!(matches!(three, Split::Few { .. }));
        assert_eq!((three.get(Cause::Launch), three.full()), (3, full));
        // a fourth cause, or a part of 2^32 ns or more: in full
        full[Cause::Cpu as usize] = 1;
        let four = Split::new(&full);
        assert!(matches!(four, Split::Long(_)));
        assert_eq!((four.get(Cause::Cpu), four.full()), (1, full));
        let mut big = [0 as Ns; N_CAUSES];
        big[Cause::Startup as usize] = 5_000_000_000;
        let l = Split::new(&big);
        assert!(matches!(l, Split::Long(_)));
        assert_eq!((l.get(Cause::Startup), l.full()), (5_000_000_000, big));
        // canonical: equal splits are equal values
        assert_eq!(Split::new(&full), four);
        assert_eq!(Split::new(&[0; N_CAUSES]).full(), [0; N_CAUSES]);
        assert_eq!(std::mem::size_of::<Gap>(), 56);
    }

    /// The gap of the first device that starts at `start` µs.
    fn gap_at(g: &GapAnalysis, start: i64) -> &Gap {
        g.devices[0]
            .gaps
            .iter()
            .find(|x| x.start == us(start))
            .unwrap_or_else(|| panic!("no gap at {start} µs"))
    }

    #[test]
    fn bands() {
        assert_eq!(Band::of(9_999), Band::Under10us);
        assert_eq!(Band::of(10_000), Band::From10To20us);
        assert_eq!(Band::of(49_999), Band::From20To50us);
        assert_eq!(Band::of(50_000), Band::From50usTo1ms);
        assert_eq!(Band::of(1_000_000), Band::Over1ms);
    }

    /// A launch call still running when the device went idle had not queued its work: the
    /// device waits for the host's launch (launch overhead), however early the call began.
    /// Only a call that returned before the gap left its work queued.
    #[test]
    fn a_launch_in_flight_is_launch_overhead_not_queued_work() {
        let mut b = TraceBuilder::new();
        let c = b.runtime("cudaLaunchKernel", 0, 1.0, 2.0);
        b.gpu(GpuKind::Kernel, "a", 0, 7, 5.0, 5.0, c);
        // the next launch runs 8-25 µs; its kernel starts at 22 µs, before the call returns
        let c = b.runtime("cudaLaunchKernel", 0, 8.0, 17.0);
        b.gpu(GpuKind::Kernel, "b", 0, 7, 22.0, 5.0, c);
        // one returned at 31 µs, long before its kernel at 80 µs: queued beyond the latency
        let c = b.runtime("cudaLaunchKernel", 0, 30.0, 1.0);
        b.gpu(GpuKind::Kernel, "c", 0, 7, 80.0, 5.0, c);
        let t = b.build();
        let g = run(&t, Interval::new(us(5), us(85)));
        let d = &g.devices[0];
        let gap = |at: i64| d.gaps.iter().find(|g| g.start == us(at)).unwrap();
        assert_eq!(gap(10).len(), us(12));
        assert_eq!(gap(10).split.get(Cause::Launch), us(12));
        assert_eq!(gap(10).split.get(Cause::Queued), 0);
        // [27, 80): queued, the call having returned at 31 µs (within the gap, its 20 µs of
        // latency end at 51 µs: launch overhead until then, the rest device-side)
        assert_eq!(gap(27).split.get(Cause::Queued), us(29));
    }

    #[test]
    fn union_over_streams_and_edges() {
        let mut b = TraceBuilder::new();
        // two streams overlapping: busy [10,30) and [50,60); window [0,100)
        let c = b.runtime("cudaLaunchKernel", 0, 1.0, 1.0);
        b.gpu(GpuKind::Kernel, "a", 0, 7, 10.0, 15.0, c);
        let c = b.runtime("cudaLaunchKernel", 0, 2.0, 1.0);
        b.gpu(GpuKind::Kernel, "b", 0, 13, 20.0, 10.0, c);
        let c = b.runtime("cudaLaunchKernel", 0, 3.0, 1.0);
        b.gpu(GpuKind::Kernel, "c", 0, 7, 50.0, 10.0, c);
        let t = b.build();
        let g = run(&t, Interval::new(0, us(100)));
        let d = &g.devices[0];
        assert_eq!(d.busy, us(30));
        assert_eq!(d.idle, us(70));
        let lens: Vec<Ns> = d.gaps.iter().map(|g| g.len()).collect();
        assert_eq!(lens, vec![us(10), us(20), us(40)]);
        // the middle gap: next kernel launched at 3 µs, long before → queued
        assert_eq!(d.gaps[1].cause, Cause::Queued);
        assert_eq!(d.bands[Band::From20To50us as usize].count, 2);
        assert_eq!(d.by_cause.iter().sum::<Ns>(), d.idle);
        // per stream: stream 7 has a gap [25,50) of 25 µs
        let s7 = d.streams.iter().find(|s| s.stream == 7).unwrap();
        assert_eq!(s7.bands[Band::From20To50us as usize].total, us(25));
    }

    #[test]
    fn host_late_gap_is_split_by_what_the_thread_did() {
        let mut b = TraceBuilder::new();
        // kernel 1 [0,10); host op [12, 40) containing launch [30,35); kernel 2 starts 38
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 1.0);
        b.gpu(GpuKind::Kernel, "k1", 0, 7, 0.0, 10.0, c);
        let ext = b.op("aten::add", 12.0, 28.0);
        let c = b.runtime("cudaLaunchKernel", ext, 30.0, 5.0);
        b.gpu(GpuKind::Kernel, "k2", 0, 7, 38.0, 2.0, c);
        let t = b.build();
        let g = run(&t, Interval::new(0, us(40)));
        let gap = &g.devices[0].gaps[0];
        assert_eq!((gap.start, gap.end), (us(10), us(38)));
        // [10,12) nothing, [12,30) cpu, [30,38) launch
        assert_eq!(gap.split.get(Cause::Untraced), us(2));
        assert_eq!(gap.split.get(Cause::Cpu), us(18));
        assert_eq!(gap.split.get(Cause::Launch), us(8));
        assert_eq!(gap.cause, Cause::Cpu);
        assert_eq!(gap.sync, NONE);
    }

    /// The sync's cost is bounded by the lead the host had when it entered it: a `.cpu()`
    /// that waited 30 µs, then a 5 ms loop over CPU tensors, is 30 µs of sync and 5 ms of host
    /// compute (not "Sync-bound" because a copy preceded it).
    #[test]
    fn drain_is_bounded_by_the_lead_and_host_compute_is_its_own() {
        let mut b = TraceBuilder::new();
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 1.0);
        b.gpu(GpuKind::Kernel, "k1", 0, 7, 0.0, 50.0, c); // [0, 50)
        b.runtime("cudaStreamSynchronize", 0, 20.0, 30.0); // [20, 50): lead 30 µs
        b.op("aten::sum", 55.0, 5000.0); // a CPU op: launches nothing
        let c = b.runtime("cudaLaunchKernel", 0, 5060.0, 5.0);
        b.gpu(GpuKind::Kernel, "k2", 0, 7, 5070.0, 10.0, c);
        let t = b.build();
        let g = run(&t, Interval::new(0, us(5080)));
        let gap = gap_at(&g, 50);
        assert_eq!(gap.split.get(Cause::Sync), us(30));
        assert_ne!(gap.sync, NONE);
        assert_eq!(gap.split.get(Cause::HostCompute), us(5055 - 80));
        assert_eq!(gap.split.get(Cause::Untraced), us(5));
        assert_eq!(gap.split.get(Cause::Launch), us(10));
        assert_eq!(gap.cause, Cause::HostCompute);
    }

    /// Host work in the launch path (operators that launch, what they call, the Python frames
    /// around them) is other CPU work; operators and frames that launch nothing, outside an
    /// operator that does, are host compute.
    #[test]
    fn launch_path_and_host_compute() {
        let mut b = TraceBuilder::new();
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 1.0);
        b.gpu(GpuKind::Kernel, "k1", 0, 7, 0.0, 10.0, c); // [0, 10)
        b.cpu(
            CpuKind::PythonFunction,
            "train.py(10): step",
            1,
            12.0,
            388.0,
        );
        b.cpu(
            CpuKind::PythonFunction,
            "train.py(20): cpu_loop",
            1,
            15.0,
            185.0,
        );
        b.op("aten::sum", 20.0, 170.0);
        let ext = b.op("aten::linear", 210.0, 180.0);
        b.op("aten::empty", 215.0, 20.0); // inside an operator that launches
        let c = b.runtime("cudaLaunchKernel", ext, 380.0, 5.0);
        b.gpu(GpuKind::Kernel, "k2", 0, 7, 395.0, 5.0, c);
        let t = b.build();
        let g = run(&t, Interval::new(0, us(400)));
        let gap = gap_at(&g, 10);
        assert_eq!(gap.split.get(Cause::Untraced), us(2));
        assert_eq!(gap.split.get(Cause::HostCompute), us(185));
        assert_eq!(gap.split.get(Cause::Cpu), us(3 + 10 + 170));
        assert_eq!(gap.split.get(Cause::Launch), us(15));
        // named by the outermost span that launched nothing
        let (i, ov) = g.devices[0].compute_site.expect("compute site");
        assert_eq!(t.name(t.cpu[i as usize].name), "train.py(20): cpu_loop");
        assert_eq!(ov, us(185));
    }

    /// A trace that does not link launches to kernels (some ROCm captures): a launch call by
    /// its name still puts its operator in the launch path.
    #[test]
    fn unlinked_launches_are_launches_by_name() {
        let mut b = TraceBuilder::new();
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 1.0);
        b.gpu(GpuKind::Kernel, "k1", 0, 7, 0.0, 10.0, c); // [0, 10)
        let ext = b.op("aten::mm", 20.0, 30.0);
        b.runtime("hipExtModuleLaunchKernel", ext, 40.0, 5.0); // its kernel is not linked
        b.gpu(GpuKind::Kernel, "k2", 0, 7, 60.0, 10.0, 0);
        let t = b.build();
        let g = run(&t, Interval::new(0, us(70)));
        let gap = gap_at(&g, 10);
        assert_eq!(gap.split.get(Cause::HostCompute), 0);
        assert_eq!(gap.split.get(Cause::Cpu), us(25));
        assert_eq!(gap.split.get(Cause::Launch), us(5));
    }

    /// Inside a drain, a gap whose work was queued but whose launch returned less than a
    /// launch latency before the device needed it (two kernels of one operator) is still the
    /// sync's; a real lead ends the drain.
    #[test]
    fn drain_lasts_until_a_real_lead() {
        let mut b = TraceBuilder::new();
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 1.0);
        b.gpu(GpuKind::Kernel, "k1", 0, 7, 0.0, 500.0, c); // [0, 500)
        b.runtime("cudaStreamSynchronize", 0, 5.0, 494.0); // lead 495 µs
        let ext = b.op("aten::foo", 510.0, 30.0);
        let c = b.runtime("cudaLaunchKernel", ext, 515.0, 5.0);
        b.gpu(GpuKind::Kernel, "k2", 0, 7, 530.0, 2.0, c); // [530, 532)
        let c = b.runtime("cudaLaunchKernel", ext, 528.0, 5.0); // returns 533
        b.gpu(GpuKind::Kernel, "k3", 0, 7, 535.0, 100.0, c); // [535, 635)
        let c = b.runtime("cudaLaunchKernel", 0, 560.0, 5.0); // returns 565: real lead
        b.gpu(GpuKind::Kernel, "k4", 0, 7, 640.0, 10.0, c); // [640, 650)
        let c = b.runtime("cudaLaunchKernel", 0, 700.0, 5.0);
        b.gpu(GpuKind::Kernel, "k5", 0, 7, 710.0, 10.0, c); // [710, 720)
        let t = b.build();
        let g = run(&t, Interval::new(0, us(720)));
        assert_eq!(gap_at(&g, 500).split.get(Cause::Sync), us(30));
        let inside = gap_at(&g, 532);
        assert_eq!(inside.split.get(Cause::Sync), us(3));
        assert_eq!(inside.sync, gap_at(&g, 500).sync);
        // [635, 640): a real lead, the drain is over; [650, 710) is host time of its own
        assert_eq!(gap_at(&g, 635).cause, Cause::Queued);
        assert_eq!(gap_at(&g, 650).split.get(Cause::Sync), 0);
    }

    /// The device idle after its last activity, with nothing launched on it afterwards, is no
    /// work left: no host cause.
    #[test]
    fn idle_after_the_last_work_is_no_work() {
        let mut b = TraceBuilder::new();
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 1.0);
        b.gpu(GpuKind::Kernel, "k1", 0, 7, 1.0, 9.0, c); // [1, 10)
        b.op("aten::sum", 20.0, 500.0);
        let t = b.build();
        let g = run(&t, Interval::new(0, us(600)));
        let gap = gap_at(&g, 10);
        assert_eq!(gap.split.get(Cause::NoWork), us(590));
        assert_eq!(gap.cause, Cause::NoWork);
    }

    #[test]
    fn gap_opened_during_a_sync_belongs_to_the_sync() {
        let mut b = TraceBuilder::new();
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 1.0);
        b.gpu(GpuKind::Kernel, "k1", 0, 7, 5.0, 100.0, c); // [5, 105)
        b.runtime("cudaStreamSynchronize", 0, 10.0, 96.0); // [10, 106)
        b.op("aten::add", 110.0, 500.0); // python work after the sync
        b.annotation(
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
            200.0,
            100.0,
        );
        let c = b.runtime("cudaLaunchKernel", 0, 620.0, 5.0);
        b.gpu(GpuKind::Kernel, "k2", 0, 7, 630.0, 10.0, c);
        let t = b.build();
        let g = run(&t, Interval::new(us(5), us(640)));
        let d = &g.devices[0];
        assert_eq!(d.gaps.len(), 1);
        let gap = &d.gaps[0];
        assert_eq!((gap.start, gap.end), (us(105), us(630)));
        assert_ne!(gap.sync, NONE);
        assert_eq!(gap.split.get(Cause::Dataloader), us(100));
        // the sync's cost is the lead the host had when it entered it ([10, 105)); the
        // operator after it, which launches nothing, is host compute
        assert_eq!(gap.split.get(Cause::Sync), us(95));
        assert_eq!(gap.split.get(Cause::HostCompute), us(310));
        assert_eq!(gap.split.get(Cause::Untraced), us(10));
        assert_eq!(gap.split.get(Cause::Launch), us(10));
        assert_eq!(gap.cause, Cause::HostCompute);
    }

    /// A gap while the launching thread waits in a host-side collective is host
    /// communication, never host compute; an NVTX range with nothing under it is host work on
    /// an Nsight Systems export (host compute, as it launches nothing) and only labels time on
    /// Kineto, where operators and frames mark the work.
    #[test]
    fn host_communication_and_nvtx_ranges() {
        let build = |name: &str, nsys: bool| {
            let mut b = TraceBuilder::new();
            let c = b.runtime("cudaLaunchKernel", 0, 0.0, 1.0);
            b.gpu(GpuKind::Kernel, "k1", 0, 7, 1.0, 9.0, c); // [1, 10)
            b.annotation(name, 100.0, 500.0);
            let c = b.runtime("cudaLaunchKernel", 0, 1000.0, 5.0);
            b.gpu(GpuKind::Kernel, "k2", 0, 7, 1010.0, 10.0, c);
            let mut t = b.build();
            if nsys {
                t.source.format = crate::model::SourceFormat::NsysSqlite;
            }
            t
        };
        // [10, 1000) the host part, [1000, 1010) the launch call
        let split = |name: &str, nsys: bool| {
            let t = build(name, nsys);
            let g = run(&t, Interval::new(0, us(1020)));
            gap_at(&g, 10).split.clone()
        };
        for (name, nsys) in [
            ("gloo:all_reduce", false),
            ("MPI:MPI_Recv", true),
            ("MPI_Recv", false),
        ] {
            let s = split(name, nsys);
            assert_eq!(s.get(Cause::HostComm), us(500), "{name}");
            assert_eq!(s.get(Cause::HostCompute), 0, "{name}");
            assert_eq!(s.get(Cause::Untraced), us(490), "{name}");
            assert_eq!(s.get(Cause::Launch), us(10), "{name}");
        }
        let kineto = split("preprocess", false);
        assert_eq!(kineto.get(Cause::Untraced), us(990));
        let nsys = split("preprocess", true);
        assert_eq!(nsys.get(Cause::HostCompute), us(500));
        assert_eq!(nsys.get(Cause::Untraced), us(490));
        // the step marks stay marks
        let step = split("ProfilerStep#3", true);
        assert_eq!(step.get(Cause::Untraced), us(990));
    }

    #[test]
    fn compile_and_dataloader_and_untraced() {
        let mut b = TraceBuilder::new();
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 1.0);
        b.gpu(GpuKind::Kernel, "k1", 0, 7, 1.0, 9.0, c); // [1, 10)
        b.cpu(
            CpuKind::PythonFunction,
            "torch/_dynamo/convert_frame.py(700): _compile",
            1,
            20.0,
            1000.0,
        );
        b.annotation(
            "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
            1100.0,
            400.0,
        );
        let c = b.runtime("cudaLaunchKernel", 0, 2000.0, 5.0);
        b.gpu(GpuKind::Kernel, "k2", 0, 7, 2010.0, 10.0, c);
        let t = b.build();
        let g = run(&t, Interval::new(0, us(2020)));
        let d = &g.devices[0];
        let gap = d.gaps.iter().find(|g| g.start == us(10)).unwrap();
        assert_eq!(gap.split.get(Cause::Compile), us(1000));
        assert_eq!(gap.split.get(Cause::Dataloader), us(400));
        assert_eq!(gap.split.get(Cause::Launch), us(10));
        assert_eq!(gap.split.get(Cause::Untraced), us(2000 - 10 - 1400));
        assert_eq!(gap.band(), Band::Over1ms);
        assert_eq!(g.compile_time, us(1000));
    }

    /// The OS's record of the launching thread describes the untraced time only: off a CPU,
    /// inside OS calls, CPU samples; what a span explains (the launch call) stays out.
    #[test]
    fn the_os_record_describes_untraced_time() {
        use crate::model::os::{CpuSample, OsActivity, OsCall};
        let mut b = TraceBuilder::new();
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 1.0);
        b.gpu(GpuKind::Kernel, "k1", 0, 7, 1.0, 9.0, c); // [1, 10)
        let c = b.runtime("cudaLaunchKernel", 0, 990.0, 5.0);
        b.gpu(GpuKind::Kernel, "k2", 0, 7, 1200.0, 10.0, c);
        let other = b.thread(2);
        let mut t = b.build();
        let poll = t.names.intern("poll");
        let write = t.names.intern("write");
        let (main, foo) = (t.names.intern("main"), t.names.intern("foo"));
        let call = |start: i64, end: i64, name| OsCall {
            start: us(start),
            dur: us(end - start),
            name,
            thread: 0,
        };
        let sample = |time: i64, thread, function| CpuSample {
            time: us(time),
            thread,
            function,
        };
        let mut samples: Vec<CpuSample> = (0..12).map(|k| sample(500 + 10 * k, 0, main)).collect();
        samples.extend([50, 60, 70].map(|at| sample(at, 0, foo)));
        // inside the launch call, and on another thread: not the untraced time's
        samples.extend([sample(992, 0, foo), sample(600, other, foo)]);
        samples.sort_by_key(|s| (s.thread, s.time));
        t.os = OsActivity {
            off_cpu: vec![Some(IntervalSet::from_intervals([
                Interval::new(us(100), us(400)),
                Interval::new(us(900), us(2000)),
            ]))],
            calls: vec![call(100, 400, poll), call(950, 995, write)],
            samples,
        };
        let g = run(&t, Interval::new(0, us(1210)));
        let d = &g.devices[0];
        let gap = gap_at(&g, 10);
        // [10, 990) untraced, [990, 1015) launch, [1015, 1200) queued
        assert_eq!(gap.split.get(Cause::Untraced), us(980));
        let os = d.untraced_os.as_ref().unwrap();
        assert_eq!(os.scheduled, us(980));
        // off a CPU: [100, 400) and [900, 990)
        assert_eq!(os.off_cpu, us(300 + 90));
        // `write` inside the untraced time only up to the launch call at 990
        assert_eq!(os.calls, vec![(poll, us(300)), (write, us(40))]);
        assert_eq!(os.samples, vec![(main, 12), (foo, 3)]);
        // a Kineto trace has no record
        t.os = OsActivity::default();
        assert!(run(&t, Interval::new(0, us(1210))).devices[0]
            .untraced_os
            .is_none());
    }

    #[test]
    fn late_start_after_launch_is_device_side() {
        let mut b = TraceBuilder::new();
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 1.0);
        b.gpu(GpuKind::Kernel, "k1", 0, 7, 1.0, 9.0, c); // [1, 10)
        b.runtime("cudaStreamWaitEvent", 0, 12.0, 2.0);
        let c = b.runtime("cudaLaunchKernel", 0, 20.0, 5.0); // returns at 25
        b.gpu(GpuKind::Kernel, "k2", 0, 7, 500.0, 10.0, c); // starts 475 µs later
        let t = b.build();
        let g = run(&t, Interval::new(0, us(510)));
        let gap = gap_at(&g, 10);
        assert_eq!((gap.start, gap.end), (us(10), us(500)));
        // [10,12) untraced, [12,14) launch (stream wait), [14,20) untraced,
        // [20,45) launch (call + 20 µs latency), [45,500) queued
        assert_eq!(gap.split.get(Cause::Untraced), us(8));
        assert_eq!(gap.split.get(Cause::Launch), us(2 + 25));
        assert_eq!(gap.split.get(Cause::Queued), us(455));
        assert_eq!(gap.cause, Cause::Queued);
    }

    #[test]
    fn annotations_label_time_and_allocations_are_host_work() {
        let mut b = TraceBuilder::new();
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 1.0);
        b.gpu(GpuKind::Kernel, "k1", 0, 7, 1.0, 9.0, c); // [1, 10)
        b.annotation("my_region", 0.0, 1000.0);
        b.runtime("cudaMalloc", 0, 100.0, 300.0);
        let c = b.runtime("cudaLaunchKernel", 0, 900.0, 5.0);
        b.gpu(GpuKind::Kernel, "k2", 0, 7, 910.0, 10.0, c);
        let t = b.build();
        let g = run(&t, Interval::new(0, us(920)));
        let gap = gap_at(&g, 10);
        assert_eq!(gap.split.get(Cause::Alloc), us(300));
        assert_eq!(gap.split.get(Cause::Launch), us(10));
        assert_eq!(gap.split.get(Cause::Untraced), us(900 - 10 - 300));
        assert!(is_runtime_management("cudaFree"));
        assert!(is_runtime_management("cudaDeviceGetStreamPriorityRange"));
        assert!(!is_runtime_management("cudaLaunchKernel"));
        assert!(!is_runtime_management("cudaMemcpyAsync"));
    }

    /// A gap the launching thread leaves unexplained belongs to what the other threads did:
    /// a long `cudaMalloc` is allocation, Python work is CPU; only a gap no thread explains
    /// is untraced.
    #[test]
    fn other_threads_explain_gaps() {
        let mut b = TraceBuilder::new();
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 1.0);
        b.gpu(GpuKind::Kernel, "k1", 0, 7, 1.0, 9.0, c); // [1, 10)
        b.cpu(CpuKind::Runtime, "cudaMalloc", 2, 100.0, 1600.0); // [100, 1700) thread 2
        b.cpu(CpuKind::Op, "aten::copy_", 3, 1800.0, 100.0); // [1800, 1900) thread 3
        b.cpu(CpuKind::Runtime, "hipMalloc", 1, 1950.0, 20.0); // launching thread
        let c = b.runtime("cudaLaunchKernel", 0, 2000.0, 5.0);
        b.gpu(GpuKind::Kernel, "k2", 0, 7, 2010.0, 10.0, c);
        let t = b.build();
        let g = run(&t, Interval::new(0, us(2020)));
        let gap = gap_at(&g, 10);
        assert_eq!(gap.split.get(Cause::Alloc), us(1600 + 20));
        assert_eq!(gap.split.get(Cause::Cpu), us(100));
        assert_eq!(gap.split.get(Cause::Launch), us(10));
        assert_eq!(
            gap.split.get(Cause::Untraced),
            us(2000 - 10 - 1600 - 100 - 20)
        );
        assert_eq!(gap.cause, Cause::Alloc);
        assert!(is_allocation("cuMemAlloc_v2"));
        assert!(is_allocation("cudaFreeAsync"));
        assert!(!is_allocation("cudaLaunchKernel"));
    }

    /// Another process (another rank in one capture) has its own GPU and interpreter: its
    /// work explains nothing of this process's gaps.
    #[test]
    fn other_processes_explain_nothing() {
        let mut b = TraceBuilder::new();
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 1.0);
        b.gpu(GpuKind::Kernel, "k1", 0, 7, 1.0, 9.0, c); // [1, 10)
        b.cpu(CpuKind::Op, "aten::mm", 9, 100.0, 500.0); // thread 9: another process
        b.cpu(CpuKind::Op, "aten::add", 3, 700.0, 100.0); // thread 3: this process
        let c = b.runtime("cudaLaunchKernel", 0, 1000.0, 5.0);
        b.gpu(GpuKind::Kernel, "k2", 0, 7, 1010.0, 10.0, c);
        let mut t = b.build();
        for th in t.threads.iter_mut().filter(|th| th.tid == 9) {
            th.pid = 2;
        }
        let g = run(&t, Interval::new(0, us(1020)));
        let gap = gap_at(&g, 10);
        assert_eq!(gap.split.get(Cause::Cpu), us(100));
        assert_eq!(gap.split.get(Cause::Untraced), us(1000 - 10 - 100));
    }

    /// The caching allocator growing is allocation: the driver calls of expandable segments
    /// (`cuMemCreate`, `cuMemMap`), and, when the profiler recorded no such call, the innermost
    /// operator during which `Total Reserved` rose. An operator that only reuses cached memory
    /// (reserved unchanged) stays other CPU work.
    #[test]
    fn caching_allocator_growth_is_allocation() {
        let mut b = TraceBuilder::new();
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 1.0);
        b.gpu(GpuKind::Kernel, "k1", 0, 7, 1.0, 9.0, c); // [1, 10)
        b.cpu(CpuKind::Driver, "cuMemCreate", 1, 20.0, 30.0); // [20, 50)
        b.cpu(CpuKind::Driver, "cuMemMap", 1, 50.0, 20.0); // [50, 70)
        b.op("aten::linear", 100.0, 800.0); // [100, 900)
        b.op("aten::empty", 200.0, 300.0); // [200, 500): grows the cache
        b.op("aten::empty", 600.0, 100.0); // [600, 700): reuses it
        b.memory(0, 0.0, 0xa, 512, 512, 2 << 20); // first sample: no previous value
        b.memory(0, 300.0, 0xb, 4 << 20, (4 << 20) + 512, 6 << 20); // grew
        b.memory(0, 650.0, 0xc, 512, (4 << 20) + 1024, 6 << 20); // reused
        let c = b.runtime("cudaLaunchKernel", 0, 950.0, 5.0);
        b.gpu(GpuKind::Kernel, "k2", 0, 7, 960.0, 10.0, c);
        let t = b.build();
        let g = run(&t, Interval::new(0, us(970)));
        let gap = gap_at(&g, 10);
        assert_eq!(gap.split.get(Cause::Alloc), us(30 + 20 + 300));
        // the rest of aten::linear, the reusing aten::empty included (it launches nothing:
        // host compute)
        assert_eq!(gap.split.get(Cause::HostCompute), us(800 - 300));
        assert_eq!(gap.cause, Cause::HostCompute);
    }

    /// Module loading and the JIT compilers beside Dynamo/Inductor are compile work, on any
    /// thread, and count in the window's compile report.
    #[test]
    fn module_loads_and_other_jits_are_compile() {
        let mut b = TraceBuilder::new();
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 1.0);
        b.gpu(GpuKind::Kernel, "k1", 0, 7, 1.0, 9.0, c); // [1, 10)
        b.cpu(CpuKind::Driver, "cuModuleLoadData", 2, 100.0, 300.0);
        b.cpu(CpuKind::Driver, "cuLibraryLoadData", 1, 450.0, 50.0);
        b.annotation("FusionKernelRuntime::compileFusionParallel", 600.0, 200.0);
        let c = b.runtime("cudaLaunchKernel", 0, 1000.0, 5.0);
        b.gpu(GpuKind::Kernel, "k2", 0, 7, 1010.0, 10.0, c);
        let t = b.build();
        let g = run(&t, Interval::new(0, us(1020)));
        let gap = gap_at(&g, 10);
        assert_eq!(gap.split.get(Cause::Compile), us(300 + 50 + 200));
        assert_eq!(g.compile_time, us(550));
        let steps = super::super::steps::analyze_steps(&t);
        let work = crate::window::compile_work(&t, &steps.steps);
        let kinds: Vec<&str> = work.by_kind.iter().map(|k| k.kind.as_str()).collect();
        assert_eq!(
            kinds,
            vec!["jit compile (nvFuser/TensorRT/XLA)", "module load"]
        );
    }

    /// A sync that drains the queue: the idle after it, until the queue is ahead again, is
    /// the sync's, also when the sync appears to return a few µs before the device went idle
    /// (clock skew) and when the host needs several launches to get ahead again.
    #[test]
    fn idle_after_a_drain_belongs_to_the_sync() {
        let mut b = TraceBuilder::new();
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 1.0);
        b.gpu(GpuKind::Kernel, "k1", 0, 7, 2.0, 500.0, c); // [2, 502)
        b.runtime("cudaStreamSynchronize", 0, 5.0, 494.0); // returns at 499: 3 µs early
        b.op("python work", 500.0, 100.0);
        let c = b.runtime("cudaLaunchKernel", 0, 600.0, 5.0);
        b.gpu(GpuKind::Kernel, "k2", 0, 7, 610.0, 10.0, c); // [610, 620)
        b.op("more python", 620.0, 50.0);
        let c = b.runtime("cudaLaunchKernel", 0, 670.0, 5.0);
        b.gpu(GpuKind::Kernel, "k3", 0, 7, 680.0, 100.0, c); // [680, 780)
        let c = b.runtime("cudaLaunchKernel", 0, 690.0, 5.0); // queued: ahead again
        b.gpu(GpuKind::Kernel, "k4", 0, 7, 790.0, 10.0, c); // [790, 800)
        b.op("late python", 800.0, 100.0);
        let c = b.runtime("cudaLaunchKernel", 0, 900.0, 5.0);
        b.gpu(GpuKind::Kernel, "k5", 0, 7, 910.0, 10.0, c);
        let t = b.build();
        let g = run(&t, Interval::new(us(2), us(920)));
        let at = |s: i64| gap_at(&g, s);
        // [502, 610): the drain
        assert_eq!(at(502).split.get(Cause::Sync), us(108));
        assert_ne!(at(502).sync, NONE);
        // [620, 680): still rebuilding the lead the host had (it waited 494 µs)
        assert_eq!(at(620).split.get(Cause::Sync), us(60));
        assert_eq!(at(620).sync, at(502).sync);
        // [780, 790): queued, the drain is over; [800, 910): host work of its own
        assert_eq!(at(780).cause, Cause::Queued);
        assert_eq!(at(800).split.get(Cause::Sync), 0);
        assert_eq!(at(800).cause, Cause::HostCompute);
    }

    #[test]
    fn host_wait_per_step() {
        let mut b = TraceBuilder::new();
        b.annotation("ProfilerStep#1", 0.0, 100.0);
        b.runtime("cudaDeviceSynchronize", 0, 50.0, 40.0);
        let c = b.runtime("cudaLaunchKernel", 0, 10.0, 1.0);
        b.gpu(GpuKind::Kernel, "k", 0, 7, 20.0, 130.0, c); // runs to 150: step extends
        let t = b.build();
        let steps = super::super::steps::analyze_steps(&t);
        let s = &steps.steps;
        assert_eq!(s[0].span, Interval::new(0, us(150)));
        let mask = IntervalSet::from_intervals([steps.span]);
        let l = super::super::launch::analyze_launches(&t, &mask);
        let g = analyze_gaps(&t, &mask, s, &l, &IntervalSet::new(), &IntervalSet::new());
        // sync [50,90) + device tail [100,150)
        assert_eq!(g.step_wait[0].wait, us(90));
        assert_eq!(g.devices[0].gaps[0].step(), Some(0));
    }
}
