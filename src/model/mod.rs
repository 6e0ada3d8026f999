//! The timeline model: one representation of a profile, whatever format it came from.
//!
//! The bottom of the pipeline (ARCHITECTURE.md): it may use only the support modules
//! (`par`, `timings`); every other stage uses it.
//!
//! Readers in [`crate::ingest`] fill a [`Trace`]; analyses in [`crate::analysis`] only read it.
//! Times are integer nanoseconds ([`Ns`]) from the clock of the source file (Kineto: epoch or
//! `baseTimeNanoseconds`-relative µs × 1000). Names are interned ([`NameId`]).
//!
//! Events are split in two vectors: host-side spans ([`CpuEvent`]: operators, annotations,
//! runtime/driver calls, Python frames) and device-side activities ([`GpuEvent`]: kernels,
//! copies, fills, syncs, GPU annotations). Links between them (a launch and its kernels, an
//! operator and its launches) are resolved once, in [`Trace::finalize`].

pub mod build;
pub mod classify;
pub mod clock;
pub mod fast;
pub mod fasthash;
pub mod idindex;
pub mod intern;
pub mod intervals;
pub mod memory;
pub mod os;

use crate::par::join;
use idindex::IdIndex;

pub use intern::{Interner, NameId};
pub use intervals::{Interval, IntervalSet, Remainder, UnionBuilder};

/// Time in nanoseconds.
pub type Ns = i64;

/// "No index" marker for the `u32` link fields.
pub const NONE: u32 = u32::MAX;

/// What kind of file a trace came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceFormat {
    /// torch.profiler / Kineto Chrome-trace JSON.
    Kineto,
    /// Nsight Systems SQLite export (`nsys export --type sqlite`).
    NsysSqlite,
    /// Nsight Compute CSV (`ncu --csv`): per-kernel metrics, no timeline.
    NcuCsv,
}

/// Where a trace came from and how big it was.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Source {
    /// The path as given (`-` for standard input).
    pub path: String,
    /// Input format.
    pub format: SourceFormat,
    /// Uncompressed bytes read.
    pub bytes: u64,
    /// Bytes on disk when the input was compressed.
    pub compressed_bytes: Option<u64>,
    /// Number of entries in `traceEvents`.
    pub events: u64,
}

/// GPU vendor, as far as the trace tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Vendor {
    /// NVIDIA (CUDA).
    Nvidia,
    /// AMD (ROCm/HIP).
    Amd,
    /// Anything else or unknown.
    #[default]
    Other,
}

/// One accelerator as described by the trace (`deviceProperties`) and/or seen in events.
#[derive(Clone, Debug, Default)]
pub struct Device {
    /// Device id as used by the events (`args.device`).
    pub id: i64,
    /// Marketing name (`""` when the trace does not say).
    pub name: String,
    /// Streaming multiprocessors / compute units.
    pub sm_count: Option<u32>,
    /// Global memory in bytes.
    pub memory_bytes: Option<u64>,
    /// Compute capability major.
    pub compute_major: Option<u32>,
    /// Compute capability minor.
    pub compute_minor: Option<u32>,
    /// Max resident threads per SM.
    pub max_threads_per_sm: Option<u32>,
    /// Warp / wavefront size.
    pub warp_size: Option<u32>,
    /// Vendor guessed from name and runtime API names.
    pub vendor: Vendor,
    /// True when the device ran at least one GPU event in the trace.
    pub active: bool,
    /// Peak `Total Allocated` seen in `[memory]` events for this device, bytes.
    pub peak_allocated: Option<u64>,
}

/// A host thread (or process-level pseudo thread).
#[derive(Clone, Debug, Default)]
pub struct Thread {
    /// Process id (numeric, or a stable negative code for names such as `"Spans"`).
    pub pid: i64,
    /// Thread id.
    pub tid: i64,
    /// `thread_name` metadata, if any.
    pub name: Option<String>,
}

/// Role of a host-side span.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CpuKind {
    /// ATen operator or `record_function` range written as `cpu_op` / `Operator`.
    Op,
    /// `user_annotation` (record_function ranges, `ProfilerStep#N`).
    UserAnnotation,
    /// CUDA/HIP runtime API call (`cuda_runtime` / `Runtime`).
    Runtime,
    /// CUDA driver API call (`cuda_driver`, e.g. `cuLaunchKernel` for Triton).
    Driver,
    /// `python_function` frame (with_stack).
    PythonFunction,
    /// Legacy `python` category.
    Python,
    /// Vendor runtime other than CUDA/HIP (`mtia_runtime`, `xpu_runtime`, ...).
    OtherRuntime,
    /// Anything else with a duration (`overhead`, unknown categories).
    Other,
}

/// A host-side span.
#[derive(Clone, Copy, Debug)]
pub struct CpuEvent {
    /// Start, ns.
    pub start: Ns,
    /// Duration, ns (never negative).
    pub dur: Ns,
    /// Name.
    pub name: NameId,
    /// Index into [`Trace::threads`].
    pub thread: u32,
    /// Role.
    pub kind: CpuKind,
    /// True for `python_function` frames that are `nn.Module` calls.
    pub is_module: bool,
    /// `External id` (0 = none).
    pub external_id: u64,
    /// `correlation` for runtime/driver calls (0 = none).
    pub correlation: u64,
    /// For runtime/driver calls: index in [`Trace::cpu`] of the op with the same External id.
    pub owner_op: u32,
}

impl CpuEvent {
    /// End, ns.
    pub fn end(&self) -> Ns {
        self.start + self.dur
    }
    /// As an interval.
    pub fn interval(&self) -> Interval {
        Interval::new(self.start, self.start + self.dur)
    }
}

/// For a pass over `gpu` at index `i` that reads each event's launch call: fetches the call of
/// the event [`LAUNCH_AHEAD`] further on ([`fast::prefetch`]; see
/// [`Trace::gpu_with_launches`], which a pass that only reads the events should use; a pass
/// over a list of device-event indices uses [`fast::prefetch_launches`]).
#[inline(always)]
pub fn prefetch_launch_ahead(gpu: &[GpuEvent], cpu: &[CpuEvent], i: usize) {
    if let Some(a) = gpu.get(i + LAUNCH_AHEAD) {
        fast::prefetch(cpu, a.launch as usize);
    }
}

/// How many device events ahead [`prefetch_launch_ahead`] fetches a launch call: far enough
/// for memory to answer (~70 ns) while a few events are handled, near enough to stay cached.
pub const LAUNCH_AHEAD: usize = 16;

/// Role of a device-side activity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum GpuKind {
    /// Kernel.
    Kernel,
    /// Memory copy.
    Memcpy,
    /// Memory fill.
    Memset,
    /// CUPTI sync record (`cuda_sync`).
    Sync,
    /// `gpu_user_annotation`: GPU span of a user annotation.
    Annotation,
}

/// A device-side activity.
///
/// 64 bytes: kernel launch details (grid, block, registers, occupancy, ...) live in
/// [`Trace::kernel_infos`], shared by every launch with the same details.
#[derive(Clone, Copy, Debug)]
pub struct GpuEvent {
    /// Start, ns.
    pub start: Ns,
    /// Duration, ns.
    pub dur: Ns,
    /// Correlation id of the launching runtime call (0 = none).
    pub correlation: u64,
    /// External id (0 = none).
    pub external_id: u64,
    /// Bytes moved (memcpy/memset).
    pub bytes: u64,
    /// Name.
    pub name: NameId,
    /// Device id (`args.device`, else `pid`).
    pub device: i32,
    /// Stream id (`args.stream`, else `tid`); see [`stream_id`] for ids outside `i32`.
    pub stream: i32,
    /// Index in [`Trace::cpu`] of the runtime/driver call with the same correlation.
    pub launch: u32,
    /// Launch details: index in [`Trace::kernel_infos`] (0 = [`KernelInfo::UNKNOWN`]); see
    /// [`Trace::kernel_info`].
    pub info: u32,
    /// Role.
    pub kind: GpuKind,
    /// True when the event carries a CUDA/HIP graph id (a graph replay).
    pub in_graph: bool,
    /// True when an `ac2g`-style flow starting on the host points at this correlation.
    pub flow_linked: bool,
}

/// A stream id as stored in [`GpuEvent::stream`]: ids that fit in `i32` (CUDA and HIP stream
/// numbers, `stream 7` names, `-1` for none) are kept as they are; anything else (a name
/// hashed by the reader, a 64-bit handle) is folded to a stable code below `-2^30`, distinct
/// for distinct ids unless two of them collide in 30 bits.
pub fn stream_id(id: i64) -> i32 {
    match i32::try_from(id) {
        Ok(v) if v > -(1 << 30) => v,
        _ => {
            let h = (id as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 34; // 30 bits
            -(1 << 30) - h as i32
        }
    }
}

/// Launch details of a kernel, as recorded (Kineto `args`, Nsight Systems kernel columns).
/// Stored once per distinct value in [`Trace::kernel_infos`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelInfo {
    /// `blocks per SM` (NaN when absent).
    pub blocks_per_sm: f32,
    /// `warps per SM` (NaN when absent).
    pub warps_per_sm: f32,
    /// `est. achieved occupancy %` (NaN when absent).
    pub occupancy_pct: f32,
    /// Grid dimensions (0 = unknown).
    pub grid: [u32; 3],
    /// Block dimensions (0 = unknown).
    pub block: [u32; 3],
    /// Static + dynamic shared memory per block, bytes.
    pub shared_mem: u32,
    /// Registers per thread (0 = unknown).
    pub registers: u16,
}

impl KernelInfo {
    /// Nothing recorded: entry 0 of [`Trace::kernel_infos`], the details of non-kernels.
    pub const UNKNOWN: KernelInfo = KernelInfo {
        blocks_per_sm: f32::NAN,
        warps_per_sm: f32::NAN,
        occupancy_pct: f32::NAN,
        grid: [0; 3],
        block: [0; 3],
        shared_mem: 0,
        registers: 0,
    };

    /// Every field as bits (equal keys = identical values, NaNs included).
    fn key(&self) -> [u32; 11] {
        let [g0, g1, g2] = self.grid;
        let [b0, b1, b2] = self.block;
        [
            self.blocks_per_sm.to_bits(),
            self.warps_per_sm.to_bits(),
            self.occupancy_pct.to_bits(),
            g0,
            g1,
            g2,
            b0,
            b1,
            b2,
            self.shared_mem,
            self.registers as u32,
        ]
    }
}

impl Default for KernelInfo {
    fn default() -> Self {
        Self::UNKNOWN
    }
}

/// Deduplicates [`KernelInfo`]s while a trace is read: launches of one kernel with one
/// configuration share an entry. Id 0 is [`KernelInfo::UNKNOWN`].
#[derive(Clone, Debug)]
pub struct KernelInfoTable {
    infos: Vec<KernelInfo>,
    ids: fasthash::HashMap<[u32; 11], u32>,
}

impl Default for KernelInfoTable {
    fn default() -> Self {
        Self::new()
    }
}

impl KernelInfoTable {
    /// A table holding only [`KernelInfo::UNKNOWN`] (id 0).
    pub fn new() -> Self {
        let mut ids = fasthash::HashMap::default();
        ids.insert(KernelInfo::UNKNOWN.key(), 0);
        KernelInfoTable {
            infos: vec![KernelInfo::UNKNOWN],
            ids,
        }
    }

    /// Id of `info`, added when new.
    pub fn intern(&mut self, info: &KernelInfo) -> u32 {
        let next = self.infos.len() as u32;
        let id = *self.ids.entry(info.key()).or_insert(next);
        if id == next {
            self.infos.push(*info);
        }
        id
    }

    /// The entry of an id.
    pub fn get(&self, id: u32) -> &KernelInfo {
        &self.infos[id as usize]
    }

    /// Entries in id order.
    pub fn infos(&self) -> &[KernelInfo] {
        &self.infos
    }

    /// Number of entries (at least 1).
    pub fn len(&self) -> usize {
        self.infos.len()
    }

    /// Never true (entry 0 is always there); for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        self.infos.is_empty()
    }

    /// The entries, for [`Trace::kernel_infos`].
    pub fn into_vec(self) -> Vec<KernelInfo> {
        self.infos
    }
}

impl GpuEvent {
    /// A device event of `kind` named `name` over `start..start + dur` (ns) with nothing else
    /// known: device 0, stream −1, no correlation, External id, bytes or launch details, not
    /// in a graph, not linked to a launch (readers fill what their records say).
    pub fn new(name: NameId, kind: GpuKind, start: Ns, dur: Ns) -> GpuEvent {
        GpuEvent {
            start,
            dur,
            name,
            kind,
            device: 0,
            stream: -1,
            correlation: 0,
            external_id: 0,
            bytes: 0,
            info: 0,
            in_graph: false,
            flow_linked: false,
            launch: NONE,
        }
    }

    /// End, ns.
    pub fn end(&self) -> Ns {
        self.start + self.dur
    }
    /// As an interval.
    pub fn interval(&self) -> Interval {
        Interval::new(self.start, self.start + self.dur)
    }
    /// Kernels, copies and fills: the work that occupies a device.
    pub fn is_activity(&self) -> bool {
        matches!(
            self.kind,
            GpuKind::Kernel | GpuKind::Memcpy | GpuKind::Memset
        )
    }
}

/// `distributedInfo`, when present.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Distributed {
    /// Backend (`nccl`, `gloo`, ...).
    pub backend: Option<String>,
    /// This file's rank.
    pub rank: Option<i64>,
    /// World size.
    pub world_size: Option<i64>,
}

/// A warning met while reading; the result is still usable.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Warning {
    /// Short stable code (`control-chars`, `invalid-utf8`, `skipped-event`, ...).
    #[serde(deserialize_with = "crate::text::static_words::one")]
    pub code: crate::text::static_words::Word,
    /// How many times it happened.
    pub count: u64,
    /// Byte offset of the first occurrence (uncompressed stream), if known.
    pub first_offset: Option<u64>,
    /// Human-readable description of the first occurrence.
    pub message: String,
}

/// The largest time or duration a trace may hold, in ns: 2^62 ns, 146 years. Beyond it a value
/// is no time but a corrupt number (`1212076812900E086`), and two of them would overflow when
/// added (an event's end is `start + dur`). Every reader leaves such values out.
pub const MAX_TIME_NS: Ns = 1 << 62;

/// The most time the durations of one side (host or device) of a trace may sum to, ns: 2^61
/// ns, 73 years ([`Trace::check_totals`]).
pub const MAX_TOTAL_NS: Ns = 1 << 61;

/// How far a device activity may run past the start of the next one on its stream before
/// its duration is taken as wrong (ns): timestamps of one stream overlap by a few µs in real
/// traces (13 µs at most over the corpus); a corrupt duration overruns by far more.
pub const STREAM_OVERRUN_TOLERANCE: Ns = 20_000;

/// A whole profile, ready for analysis.
#[derive(Debug)]
pub struct Trace {
    /// Where it came from.
    pub source: Source,
    /// All names.
    pub names: Interner,
    /// Devices listed or seen.
    pub devices: Vec<Device>,
    /// Host threads.
    pub threads: Vec<Thread>,
    /// Host spans, sorted by start (longer first on ties).
    pub cpu: Vec<CpuEvent>,
    /// Device activities, sorted by start.
    pub gpu: Vec<GpuEvent>,
    /// Distinct kernel launch details, indexed by [`GpuEvent::info`]; entry 0 is
    /// [`KernelInfo::UNKNOWN`].
    pub kernel_infos: Vec<KernelInfo>,
    /// Distributed setup, if recorded.
    pub distributed: Option<Distributed>,
    /// `baseTimeNanoseconds`, if given.
    pub base_time_ns: Option<i64>,
    /// Reading warnings.
    pub warnings: Vec<Warning>,
    /// Sampled GPU metrics (Nsight Systems `--gpu-metrics-devices`); empty when not recorded.
    pub gpu_metrics: Vec<GpuMetricSeries>,
    /// Input shapes of operators, by External id (`record_shapes=True`; only `cpu_op` events
    /// that carry `Input Dims`).
    pub op_shapes: fasthash::HashMap<u64, OpShape>,
    /// FLOPs the profiler computed for operators (`with_flops=True` writes `args.flops`), by
    /// External id; they win over the shape formulas of [`crate::analysis::roofline`].
    pub op_flops: fasthash::HashMap<u64, u64>,
    /// Collective arguments of device collective kernels (Kineto copies them from the
    /// launching `record_param_comms`), by the kernel's correlation id; empty when not
    /// recorded.
    pub kernel_comms: fasthash::HashMap<u64, CommArgs>,
    /// Collective arguments of host operators (`record_param_comms`), by External id; empty
    /// when not recorded.
    pub op_comms: fasthash::HashMap<u64, CommArgs>,
    /// Device memory allocations and frees (`profile_memory=True`: `[memory]` instants of
    /// CUDA/HIP devices), folded into blocks as they are read; empty when not recorded.
    pub memory: memory::MemoryEvents,
    /// Device clock corrections applied to [`Trace::gpu`] ([`clock::correct`]; empty when
    /// none was applied).
    pub clock_corrections: Vec<clock::ClockCorrection>,
    /// [`classify::KernelClass`] of the names of [`Trace::gpu`], by name id, made by the first
    /// [`Trace::kernel_class`] (empty until then; the analyses share it across threads).
    pub kernel_classes: std::sync::OnceLock<Box<[Option<classify::KernelClass>]>>,
    /// Each operator's [`OpShape`] by its index in [`Trace::cpu`], made by the first
    /// [`Trace::op_shape_at`] (empty until then; shared across threads like
    /// [`Trace::kernel_classes`]).
    pub op_shape_index: std::sync::OnceLock<OpShapeIndex>,
    /// The earliest start and latest end of any event, ns, made by the first
    /// [`Trace::bounds`] (the window and the capture facts both ask; shared like
    /// [`Trace::kernel_classes`]).
    pub bounds: std::sync::OnceLock<(Ns, Ns)>,
    /// What the OS recorded of the host threads (Nsight Systems: off-CPU time and OS runtime
    /// calls); empty for Kineto.
    pub os: os::OsActivity,
}

/// The recorded inputs of one operator call: the raw JSON texts of `Input Dims`, `Input type`
/// and `Concrete Inputs` (`[]` when absent), interned in [`Trace::names`] (shapes repeat).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpShape {
    /// `Input Dims`, e.g. `[[128, 256], [256, 64]]`.
    pub dims: NameId,
    /// `Input type`, e.g. `["float", "float"]`.
    pub types: NameId,
    /// `Concrete Inputs`, e.g. `["", "[1, 1]"]`.
    pub concrete: NameId,
}

/// [`Trace::op_shapes`] by host event: the passes that read the shapes of every operator
/// walk [`Trace::cpu`] in order, and a hash lookup by External id per operator waits for
/// memory each time (the table is megabytes; ids are spread over it). Here the shapes are
/// read in event order.
#[derive(Debug, Default)]
pub struct OpShapeIndex {
    /// Per host event: its position in `shapes`, or [`OpShapeIndex::NONE`].
    at: Box<[u32]>,
    /// The operators' shapes, in event order.
    shapes: Box<[OpShape]>,
}

impl OpShapeIndex {
    const NONE: u32 = u32::MAX;

    fn of(trace: &Trace) -> OpShapeIndex {
        if trace.op_shapes.is_empty() {
            return OpShapeIndex::default();
        }
        // the map's entries through a slot array by id when the ids are nearly dense (as a
        // profiler's counters make them): operators met in time order then read it in order,
        // where the map is read at random; else the map itself
        let by_id = IdIndex::build_dense(trace.op_shapes.keys().copied().zip(0u32..))
            .map(|ix| (ix, trace.op_shapes.values().copied().collect::<Vec<_>>()));
        let shape_of = |id: u64| match &by_id {
            Some((ix, entries)) => ix.get(id).map(|k| entries[k as usize]),
            None => trace.op_shapes.get(&id).copied(),
        };
        let mut at = vec![Self::NONE; trace.cpu.len()];
        let mut shapes = Vec::new();
        for (slot, e) in at.iter_mut().zip(&trace.cpu) {
            if e.kind != CpuKind::Op {
                continue;
            }
            if let Some(s) = shape_of(e.external_id) {
                *slot = shapes.len() as u32;
                shapes.push(s);
            }
        }
        OpShapeIndex {
            at: at.into_boxed_slice(),
            shapes: shapes.into_boxed_slice(),
        }
    }
}

/// What the trace records of one collective (Kineto `args` of `record_param_comms` and,
/// since PyTorch 2.x, of the collective kernel it launches): `None` where absent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommArgs {
    /// `Seq`: the collective's number in its process group (the same on every rank).
    pub seq: Option<u64>,
    /// `Comms Id`: one id for the same operation on every rank.
    pub comms_id: Option<u64>,
    /// `Process Group Name` (or `Process Group ID` as text), interned.
    pub group: Option<NameId>,
    /// `In msg nelems`: elements sent.
    pub in_nelems: Option<u64>,
    /// `Out msg nelems`: elements received.
    pub out_nelems: Option<u64>,
    /// `dtype` of the message (`Float`, `BFloat16`, ...), interned.
    pub dtype: Option<NameId>,
}

impl CommArgs {
    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        *self == CommArgs::default()
    }

    /// Bytes of one element of a recorded `dtype` (the c10 scalar type names Kineto writes),
    /// `None` for a name it does not know.
    pub fn dtype_bytes(dtype: &str) -> Option<u64> {
        Some(match dtype {
            "Double" | "Long" | "ComplexFloat" | "UInt64" => 8,
            "Float" | "Int" | "UInt32" | "ComplexHalf" => 4,
            "Half" | "BFloat16" | "Short" | "UInt16" => 2,
            "Byte" | "Char" | "Bool" | "Float8_e4m3fn" | "Float8_e5m2" | "Float8_e4m3fnuz"
            | "Float8_e5m2fnuz" | "Float8_e8m0fnu" => 1,
            "ComplexDouble" => 16,
            _ => return None,
        })
    }
}

/// One sampled GPU metric of one device (Nsight Systems GPU metrics: `SMs Active`,
/// `DRAM Read Bandwidth`, ...). Values are as recorded (percent of peak for throughput
/// metrics); sample `i` describes the time from `times[i]` to `times[i + 1]`.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct GpuMetricSeries {
    /// Device id (GPU index).
    pub device: i64,
    /// Metric name as recorded, including any unit suffix (`SMs Active [Throughput %]`).
    pub name: String,
    /// Sample timestamps, ns, ascending.
    pub times: Vec<Ns>,
    /// Sample values.
    pub values: Vec<f64>,
}

impl Trace {
    /// Name of a string id.
    pub fn name(&self, id: NameId) -> &str {
        self.names.resolve(id)
    }

    /// [`classify::KernelClass`] of a name: read from a table of every device event's name,
    /// built by the first call (one classification per name for all the analyses); a name no
    /// device event carries is classified on the spot.
    pub fn kernel_class(&self, id: NameId) -> classify::KernelClass {
        self.kernel_classes().get(id)
    }

    /// The table behind [`Trace::kernel_class`], for loops over many events.
    pub fn kernel_classes(&self) -> classify::KernelClasses<'_> {
        let table = self.kernel_classes.get_or_init(|| {
            let mut t = vec![None; self.names.len()];
            for g in &self.gpu {
                if let Some(slot @ None) = t.get_mut(g.name.0 as usize) {
                    *slot = Some(classify::KernelClass::of(self.name(g.name)));
                }
            }
            t.into_boxed_slice()
        });
        classify::KernelClasses { table, trace: self }
    }

    /// The recorded input shapes of host event `i`: those of its External id
    /// (`op_shapes.get(&cpu[i].external_id)`), read for operators from an index in event order
    /// made on first use ([`OpShapeIndex`]), so that a pass over every operator reads them in
    /// order. `None` when `i` is out of range.
    #[inline]
    pub fn op_shape_at(&self, i: usize) -> Option<&OpShape> {
        let e = self.cpu.get(i)?;
        if self.op_shapes.is_empty() {
            return None;
        }
        if e.kind != CpuKind::Op {
            return self.op_shapes.get(&e.external_id);
        }
        let ix = self.op_shape_index.get_or_init(|| OpShapeIndex::of(self));
        match ix.at.get(i) {
            Some(&k) if k != OpShapeIndex::NONE => ix.shapes.get(k as usize),
            _ => None,
        }
    }

    /// The earliest start and the latest end of any host or device event, ns (`(start, start)`
    /// without events; see [`Trace::start`]): one pass over the events at the first call.
    /// Asked after the trace is complete (its clock corrected), like [`Trace::kernel_class`].
    pub fn bounds(&self) -> (Ns, Ns) {
        *self.bounds.get_or_init(|| {
            let lo = self.start();
            let hi = self
                .cpu
                .iter()
                .map(|e| e.end())
                .chain(self.gpu.iter().map(|g| g.end()))
                .max()
                .unwrap_or(lo);
            (lo, hi.max(lo))
        })
    }

    /// Earliest start over host and device events (the trace origin for reports).
    pub fn start(&self) -> Ns {
        let c = self.cpu.first().map(|e| e.start).unwrap_or(i64::MAX);
        let g = self.gpu.first().map(|e| e.start).unwrap_or(i64::MAX);
        let s = c.min(g);
        if s == i64::MAX {
            0
        } else {
            s
        }
    }

    /// Launch details of a device event ([`KernelInfo::UNKNOWN`] when none were recorded).
    pub fn kernel_info(&self, g: &GpuEvent) -> &KernelInfo {
        self.kernel_infos
            .get(g.info as usize)
            .unwrap_or(&KernelInfo::UNKNOWN)
    }

    /// Device entry for an id, if any.
    pub fn device(&self, id: i64) -> Option<&Device> {
        self.devices.iter().find(|d| d.id == id)
    }

    /// Sorts events and resolves links. Readers call this once after filling the vectors.
    pub fn finalize(&mut self) {
        self.finalize_with(false)
    }

    /// [`Trace::finalize`], on two threads when `parallel` (the halves of the host sort side
    /// by side, then the launch links beside the operator table; same result).
    pub fn finalize_with(&mut self, parallel: bool) {
        // Stable sorts; readers usually hand over time-ordered (or block-wise sorted) events,
        // so check first: a sorted vector costs one pass and no scratch memory.
        let cpu_order = |a: &CpuEvent, b: &CpuEvent| a.start.cmp(&b.start).then(b.dur.cmp(&a.dur));
        let sorted = |v: &[CpuEvent]| v.windows(2).all(|w| cpu_order(&w[0], &w[1]).is_le());
        let sort_gpu = |gpu: &mut Vec<GpuEvent>| {
            if !gpu.windows(2).all(|w| w[0].start <= w[1].start) {
                gpu.sort_by_key(|g| g.start);
            }
        };
        let mut tt = crate::timings::Timings::nested();
        // events move: an index by position made before is stale
        self.op_shape_index = Default::default();
        let mut gpu_sorted = false;
        if !sorted(&self.cpu) {
            let mid = self.cpu.len() / 2;
            let big = parallel && self.cpu.len() >= 1 << 16;
            if big {
                // halves on two threads (the device sort beside the second), then one merge of
                // the two sorted runs, also on two threads: a stable sort of both halves
                // followed by a stable merge is the stable sort of the whole
                let (left, right) = self.cpu.split_at_mut(mid);
                let gpu = &mut self.gpu;
                join(
                    true,
                    || left.sort_by(cpu_order),
                    || {
                        right.sort_by(cpu_order);
                        sort_gpu(gpu);
                    },
                );
                gpu_sorted = true;
            }
            tt.lap("finalize: sort halves");
            if big {
                crate::par::merge_runs(&mut self.cpu, mid, true, cpu_order);
            } else {
                self.cpu.sort_by(cpu_order);
            }
            tt.lap("finalize: merge halves");
        }
        if !gpu_sorted {
            sort_gpu(&mut self.gpu);
        }
        self.cut_stream_overruns();

        let is_launch = |k: CpuKind| {
            matches!(
                k,
                CpuKind::Runtime | CpuKind::Driver | CpuKind::OtherRuntime
            )
        };
        let is_op = |k: CpuKind| matches!(k, CpuKind::Op | CpuKind::UserAnnotation);
        let (cpu, gpu) = (&self.cpu, &mut self.gpu);
        let ((), op_by_ext) = join(
            parallel,
            || {
                // device events -> launching call, by correlation (first call wins)
                let pairs = cpu
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| is_launch(e.kind) && e.correlation != 0)
                    .map(|(i, e)| (e.correlation, i as u32));
                link_by_correlation(pairs, gpu);
            },
            || {
                // operators by External id (first wins; ids are unique in well-formed traces;
                // an operator is preferred over an annotation with the same id)
                IdIndex::build(
                    cpu.iter()
                        .enumerate()
                        .filter(|(_, e)| is_op(e.kind) && e.external_id != 0)
                        .map(|(i, e)| (e.external_id, i as u32)),
                    |old, new| {
                        cpu[new as usize].kind == CpuKind::Op
                            && cpu[old as usize].kind == CpuKind::UserAnnotation
                    },
                )
            },
        );
        tt.lap("finalize: id tables, launches");
        // runtime calls -> operator (a half on each thread)
        let owners = |cpu: &mut [CpuEvent]| {
            for e in cpu.iter_mut() {
                if is_launch(e.kind) && e.external_id != 0 {
                    if let Some(op) = op_by_ext.get(e.external_id) {
                        e.owner_op = op;
                    }
                }
            }
        };
        let half = self.cpu.len() / 2;
        let (left, right) = self.cpu.split_at_mut(half);
        join(
            parallel && left.len() >= 1 << 16,
            || owners(left),
            || owners(right),
        );
        drop(op_by_ext);
        tt.lap("finalize: owners");
        let mut active: Vec<i64> = Vec::new();
        for g in &self.gpu {
            if g.is_activity() && !active.contains(&(g.device as i64)) {
                active.push(g.device as i64);
            }
        }
        active.sort_unstable();
        self.merge_renumbered_device(&active);
        for id in active {
            match self.devices.iter_mut().find(|d| d.id == id) {
                Some(d) => d.active = true,
                None => self.devices.push(Device {
                    id,
                    active: true,
                    ..Device::default()
                }),
            }
        }
        self.devices.sort_by_key(|d| d.id);
    }

    /// One device described in `deviceProperties` and one *other* device id active is one
    /// device seen under two numberings (the process saw the board as device 0 through
    /// `CUDA_VISIBLE_DEVICES`/`HIP_VISIBLE_DEVICES`, while the tracer wrote the physical index
    /// in the events): the described entry takes the active id, so the board keeps its name
    /// and peaks, with a `device-renumbered` warning. With several entries, or when the active
    /// id is described, nothing changes.
    fn merge_renumbered_device(&mut self, active: &[i64]) {
        let [id] = active else { return };
        if self.devices.len() != 1 || self.devices[0].id == *id {
            return;
        }
        let d = &mut self.devices[0];
        if d.name.is_empty() && d.sm_count.is_none() && d.memory_bytes.is_none() {
            return;
        }
        let listed = d.id;
        d.id = *id;
        let name = if d.name.is_empty() {
            "the one device".to_string()
        } else {
            format!("`{}`", d.name)
        };
        self.warnings.push(Warning {
            code: "device-renumbered",
            count: 1,
            first_offset: None,
            message: format!(
                "{name} is listed as device {listed} in deviceProperties while the events ran on \
                 device {id} only: taken as one device (a visible-devices renumbering), named \
                 device {id}"
            ),
        });
    }

    /// Device activities that last past the start of the next activity on their stream, by
    /// more than [`STREAM_OVERRUN_TOLERANCE`], cannot be right: a stream runs its work in order
    /// (kernels of a CUDA graph excepted: a graph's branches run side by side on the stream it
    /// was launched into; only activities with a launch correlation are checked). Such a
    /// duration is what makes a kernel longer than its step (a corrupt `dur` stretches the
    /// step it extends to). Each is cut at that start, and a
    /// `stream-overrun` warning counts them and names the first (its correlation id finds it
    /// in the file). Expects `gpu` sorted by start.
    fn cut_stream_overruns(&mut self) {
        let mut last: fasthash::HashMap<(i32, i32), u32> = fasthash::HashMap::default();
        let mut count = 0u64;
        let mut first: Option<(u32, Ns)> = None;
        for i in 0..self.gpu.len() {
            let g = &self.gpu[i];
            // only work launched through a runtime call (a correlation id): the device events
            // of other accelerators (MTIA's `dma_request` on a queue's thread) need not run in
            // order on what the reader takes as their stream
            if !g.is_activity() || g.in_graph || g.correlation == 0 {
                continue;
            }
            let (key, start) = ((g.device, g.stream), g.start);
            if let Some(prev) = last.insert(key, i as u32) {
                let p = &mut self.gpu[prev as usize];
                let overrun = p.end() - start;
                if overrun > STREAM_OVERRUN_TOLERANCE {
                    count += 1;
                    first.get_or_insert((prev, overrun));
                    p.dur = start - p.start;
                }
            }
        }
        if let Some((i, overrun)) = first {
            let g = &self.gpu[i as usize];
            let name = crate::text::shorten_middle(self.names.resolve(g.name), 60);
            self.warnings.push(Warning {
                code: "stream-overrun",
                count,
                first_offset: None,
                message: format!(
                    "device activities last past the start of the next activity on their stream \
                     (a stream runs its work in order, so their durations cannot be right): each \
                     was cut at that start; the first: `{name}` (device {}, stream {}, \
                     correlation {}) by {:.1} µs",
                    g.device,
                    g.stream,
                    g.correlation,
                    overrun as f64 / 1e3
                ),
            });
        }
    }

    /// Refuses a trace whose host or device durations sum past [`MAX_TOTAL_NS`]: no profile
    /// comes near (it is 73 years of summed time), and below it every sum the analysis makes
    /// over events of one side (operators' totals, device time, a step's parts) fits in an
    /// `i64` with room to spare, so a hostile file cannot overflow one (each reader already
    /// bounds one time or duration by [`MAX_TIME_NS`]).
    pub fn check_totals(&self) -> Result<(), String> {
        let host: u128 = self.cpu.iter().map(|c| c.dur.max(0) as u128).sum();
        let device: u128 = self.gpu.iter().map(|g| g.dur.max(0) as u128).sum();
        for (side, total) in [("host", host), ("device", device)] {
            if total > MAX_TOTAL_NS as u128 {
                return Err(format!(
                    "the {side} events' durations sum to {:.3e} ns, past 2^61 ns (73 years): \
                     not a profile (corrupt durations)",
                    total as f64
                ));
            }
        }
        Ok(())
    }

    /// The device events with their launch calls (`None`: not linked), in order, each launch
    /// call fetched into the cache a few events ahead ([`fast::prefetch`]): the calls of
    /// consecutive device events lie far apart in [`Trace::cpu`], and a pass that reads each
    /// would otherwise wait for memory once per device event.
    pub fn gpu_with_launches(&self) -> impl Iterator<Item = (&GpuEvent, Option<&CpuEvent>)> {
        let (gpu, cpu) = (&self.gpu, &self.cpu);
        gpu.iter().enumerate().map(move |(i, g)| {
            prefetch_launch_ahead(gpu, cpu, i);
            (g, cpu.get(g.launch as usize))
        })
    }

    /// The operator that launched a device event, through its runtime call's External id.
    pub fn owner_op_of(&self, g: &GpuEvent) -> Option<u32> {
        if g.launch != NONE {
            let l = &self.cpu[g.launch as usize];
            if l.owner_op != NONE {
                return Some(l.owner_op);
            }
        }
        None
    }
}

/// Sets each device event's `launch` to the first launch call (of `pairs`: correlation id,
/// index in `cpu`, in event order) with its correlation id. Nearly dense ids go through a slot
/// array ([`IdIndex`]). Sparse ones (Nsight Systems exports: a correlation counter shared by
/// every kind of CUDA record, and a process rank in the high bits) are sorted once and looked
/// up from where the last device event's id was found: device events come by start and their
/// launches' ids mostly grow with it, so each search is a few steps near the last one,
/// instead of a hash table probed at random (0.3 s for 3.1 M calls of an 823 MB export).
fn link_by_correlation<I>(pairs: I, gpu: &mut [GpuEvent])
where
    I: Iterator<Item = (u64, u32)> + Clone,
{
    if let Some(ix) = IdIndex::build_dense(pairs.clone()) {
        for g in gpu.iter_mut() {
            if g.correlation != 0 {
                if let Some(l) = ix.get(g.correlation) {
                    g.launch = l;
                }
            }
        }
        return;
    }
    let mut sorted: Vec<(u64, u32)> = pairs.collect();
    if !sorted.is_sorted_by_key(|p| p.0) {
        // by id, then position: the first call of an id first (in place, no scratch)
        sorted.sort_unstable();
    }
    sorted.dedup_by_key(|p| p.0);
    let mut at = 0usize;
    for g in gpu.iter_mut() {
        if g.correlation == 0 {
            continue;
        }
        let id = g.correlation;
        // the first position whose id is not below `id`, searched from the last one found
        intervals::seek(&sorted, &mut at, |p| p.0 < id);
        if let Some(&(found, l)) = sorted.get(at) {
            if found == id {
                g.launch = l;
            }
        }
    }
}

/// Helpers of the crate's tests.
#[cfg(test)]
pub(crate) mod testing {
    /// A xorshift generator for randomised tests: `next(n)` is a number below `n`, the same
    /// sequence for the same `seed` (not zero) on every run.
    pub(crate) fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |n| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_sizes() {
        // the model is most of the memory of a large trace: keep these from growing
        assert_eq!(std::mem::size_of::<GpuEvent>(), 64);
        assert_eq!(std::mem::size_of::<CpuEvent>(), 48);
        assert_eq!(std::mem::size_of::<KernelInfo>(), 44);
    }

    #[test]
    fn sparse_correlations_link_as_a_table_would() {
        // launch calls with sparse, repeated, partly unordered ids (two processes' ranks in
        // the high bits) and device events asking for them in a shuffled order: each gets the
        // first call of its id, as the first-wins table gives
        let mut below = testing::xorshift(0x9e37_79b9_7f4a_7c15);
        for round in 0..200 {
            let n = 1 + below(300) as usize;
            let mut pairs: Vec<(u64, u32)> = Vec::new();
            let mut id = 1 + below(5);
            for i in 0..n {
                id += below(if round % 2 == 0 { 50_000 } else { 3 });
                let rank = below(2) << 40;
                let jitter = if below(10) == 0 { below(200) } else { 0 };
                pairs.push((rank | id.saturating_sub(jitter).max(1), i as u32));
            }
            let mut first: std::collections::HashMap<u64, u32> = Default::default();
            for &(c, i) in &pairs {
                first.entry(c).or_insert(i);
            }
            let asked: Vec<u64> = (0..n)
                .map(|k| match below(4) {
                    0 => 0,
                    1 => pairs[below(n as u64) as usize].0 + below(2),
                    _ => pairs[(k + below(7) as usize).min(n - 1)].0,
                })
                .collect();
            let mut gpu: Vec<GpuEvent> = (asked.iter())
                .map(|&c| GpuEvent {
                    correlation: c,
                    ..GpuEvent::new(NameId(0), GpuKind::Kernel, 0, 0)
                })
                .collect();
            link_by_correlation(pairs.iter().copied(), &mut gpu);
            for g in &gpu {
                let want = match g.correlation {
                    0 => NONE,
                    c => first.get(&c).copied().unwrap_or(NONE),
                };
                assert_eq!(g.launch, want, "round {round}: id {:#x}", g.correlation);
            }
        }
    }

    /// The two-thread finalize (halves of the host sort, then a merge) gives the serial
    /// result: same order (ties included), links and owners.
    #[test]
    fn parallel_finalize_matches_serial() {
        let mut b = build::TraceBuilder::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for i in 0..40_000u64 {
            // coarse times and durations: many ties of (start, dur) with different names
            let t = next(5_000) as f64;
            let ext = b.op(&format!("op{}", i % 7), t, next(4) as f64);
            let corr = b.runtime("cudaLaunchKernel", ext, t, next(3) as f64);
            b.gpu(GpuKind::Kernel, "k", 0, 7, t + 1.0, 1.0, corr);
        }
        let mut t = b.build();
        // shuffle (Fisher-Yates) and forget the links, as a reader hands the vectors over
        for v in [&mut t.cpu] {
            for i in (1..v.len()).rev() {
                v.swap(i, next(i as u64 + 1) as usize);
            }
            v.iter_mut().for_each(|e| e.owner_op = NONE);
        }
        for i in (1..t.gpu.len()).rev() {
            t.gpu.swap(i, next(i as u64 + 1) as usize);
        }
        t.gpu.iter_mut().for_each(|g| g.launch = NONE);
        let mut serial = Trace {
            cpu: t.cpu.clone(),
            gpu: t.gpu.clone(),
            ..build::TraceBuilder::new().build()
        };
        serial.names = t.names.clone();
        serial.finalize_with(false);
        t.finalize_with(true);
        assert!(t.cpu.len() >= 1 << 16);
        assert_eq!(format!("{:?}", t.cpu), format!("{:?}", serial.cpu));
        assert_eq!(format!("{:?}", t.gpu), format!("{:?}", serial.gpu));
        assert!(t.cpu.iter().any(|e| e.owner_op != NONE));
        assert!(t.gpu.iter().all(|g| g.launch != NONE));
    }

    /// The index answers as the map does for every event: operators (with and without
    /// shapes), the runtime calls that share their External id, annotations; the events are
    /// handed over out of order, so the index is made after the sort.
    #[test]
    fn op_shape_at_reads_each_event_s_external_id() {
        op_shape_at_as_the_map(false);
        // ids too sparse for a slot array: the index reads the map
        op_shape_at_as_the_map(true);
    }

    fn op_shape_at_as_the_map(sparse: bool) {
        let mut b = build::TraceBuilder::new().device(0, "GPU", 80, 1 << 30);
        if sparse {
            b.shapes(1 << 40, "[[2]]", "[]", "[]");
        }
        for k in (0..60).rev() {
            let t = 10.0 * k as f64;
            let op = b.op(if k % 3 == 0 { "aten::mm" } else { "aten::add" }, t, 5.0);
            if k % 2 == 0 {
                b.shapes(op, &format!("[[{k}, 8]]"), "[\"float\"]", "[]");
            }
            let corr = b.runtime("cudaLaunchKernel", op, t + 1.0, 1.0);
            b.gpu(GpuKind::Kernel, "k", 0, 7, t + 2.0, 1.0, corr);
            if k % 7 == 0 {
                let a = b.annotation("## block ##", t, 6.0);
                b.shapes(a, "[[1]]", "[]", "[]");
            }
        }
        let t = b.build();
        let mut by_kind = [0usize; 3];
        for (i, e) in t.cpu.iter().enumerate() {
            assert_eq!(
                t.op_shape_at(i),
                t.op_shapes.get(&e.external_id),
                "event {i}"
            );
            if t.op_shape_at(i).is_some() {
                by_kind[match e.kind {
                    CpuKind::Op => 0,
                    CpuKind::Runtime => 1,
                    _ => 2,
                }] += 1;
            }
        }
        assert_eq!(by_kind, [30, 30, 9]);
        assert_eq!(t.op_shape_at(t.cpu.len()), None);
        // a trace without shapes makes no index
        let t = build::TraceBuilder::new().build();
        assert_eq!(t.op_shape_at(0), None);
        assert!(t.op_shape_index.get().is_none());
    }

    #[test]
    fn kernel_infos_are_shared() {
        let mut t = KernelInfoTable::new();
        let a = KernelInfo {
            grid: [2, 1, 1],
            registers: 32,
            ..KernelInfo::UNKNOWN
        };
        assert_eq!(t.intern(&KernelInfo::UNKNOWN), 0);
        assert_eq!(t.intern(&a), 1);
        assert_eq!(t.intern(&KernelInfo { ..a }), 1);
        assert_eq!(t.get(1).key(), a.key());
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn stream_ids() {
        assert_eq!(stream_id(7), 7);
        assert_eq!(stream_id(-1), -1);
        let a = stream_id(-4_000_000_000_000);
        let b = stream_id(1 << 40);
        assert!(a <= -(1 << 30) && b <= -(1 << 30) && a != b);
        assert_eq!(a, stream_id(-4_000_000_000_000));
    }
}
