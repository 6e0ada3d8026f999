//! The report's own copies of the facts it serializes whole from a lower stage: the reading
//! warnings ([`WarningInfo`]), the findings ([`FindingInfo`] with its evidence and
//! locations), efficiency ([`EfficiencyInfo`]), device memory ([`MemoryInfo`]) and an Nsight
//! Compute launch ([`NcuKernelInfo`]). Each mirrors its source type field for field (same
//! names, order and serde rules, so the JSON is the same bytes) and is converted by hand
//! (`From`), so that a field added below changes the JSON only by an edit here
//! (ARCHITECTURE.md, "Report types are mirrors"). The Nsight Compute launch leaves out the
//! source's `metrics` map, which is never serialized.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::analysis::efficiency::{
    Efficiency, EfficiencyRow, ExcludedOp, StepEfficiency, Uncovered,
};
use crate::analysis::memory::{
    DeviceMemory, LargeAlloc, LiveGroup, MemPoint, MemoryAnalysis, StepChurn,
};
use crate::diagnose::{Evidence, Finding, Location, Severity};
use crate::ingest::ncu::{Bound, NcuKernel, NcuRule, WarpStall};
use crate::model::Warning;

/// A warning met while reading; the result is still usable.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct WarningInfo {
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

/// A place to look at in Perfetto.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct LocationInfo {
    /// What it is (`gap`, `kernel`, `op`, `sync`, `annotation`, `launch`, …).
    pub what: String,
    /// Its name.
    pub name: String,
    /// Step it lies in (`ProfilerStep#N`), if any.
    pub step: Option<String>,
    /// Start, µs since `source.trace_start_us`.
    pub start_us: f64,
    /// Duration, µs.
    pub duration_us: f64,
}

/// The numbers behind a finding.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct EvidenceInfo {
    /// Human-readable facts with their numbers.
    pub facts: Vec<String>,
    /// The same numbers for scripts (µs for times, 0..1 for shares, plain counts).
    pub metrics: BTreeMap<String, f64>,
    /// Where to look (first occurrences, largest instances).
    pub locations: Vec<LocationInfo>,
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct FindingInfo {
    /// Stable rule id (`launch-bound`, …).
    #[serde(deserialize_with = "crate::text::static_words::one")]
    pub id: crate::text::static_words::Word,
    /// Severity.
    pub severity: Severity,
    /// One-line title.
    pub title: String,
    /// Upper bound of the time the fix could save, µs per step.
    pub recoverable_us: f64,
    /// How `recoverable_us` was computed.
    pub recoverable_basis: String,
    /// Numbers, ops, kernels, steps and timestamps.
    pub evidence: EvidenceInfo,
    /// What to do: concrete APIs, flags and code patterns.
    pub advice: Vec<String>,
}

/// Operator calls left out as impossible (`analysis::efficiency::Implausible`), by operator name.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct ExcludedOpInfo {
    /// Operator name.
    pub name: String,
    /// Calls left out.
    pub calls: u64,
    /// Device time of their kernels, µs per step.
    pub device_us: f64,
    /// The largest achieved ÷ possible ratio among them (> 1).
    pub factor: f64,
    /// `flops` when that ratio is FLOP/s over the dtype's dense peak, `bytes` when bytes/s
    /// over the DRAM bandwidth.
    pub bound: String,
}

/// Matrix-kernel time whose FLOPs are unknown, by reason.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct UncoveredInfo {
    /// `no_shapes` (the launching operator has no recorded shapes), `no_formula` (no formula
    /// for the recorded inputs), `graph_replay` (kernels replayed from a CUDA/HIP graph),
    /// `no_operator` (no recorded operator launched them), `impossible` (the call was left
    /// out, see `excluded`).
    pub reason: String,
    /// Share of the matrix-kernel time, 0..1.
    pub share: f64,
    /// The operator with the most such time, when one launched them.
    pub op: Option<String>,
}

/// Totals of a group of calls (an operator name, a phase).
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct EfficiencyRowInfo {
    /// Operator name, or phase name (`(unannotated)` for calls outside any annotation).
    pub name: String,
    /// Calls in the window.
    pub calls: u64,
    /// Device time of their kernels, µs per step.
    pub device_us: f64,
    /// FLOPs per step.
    pub flops: f64,
    /// Minimum DRAM bytes per step.
    pub bytes: f64,
    /// FLOPs ÷ device time, TFLOP/s.
    pub achieved_tflops: f64,
    /// Bytes ÷ device time, GB/s.
    pub achieved_gbs: f64,
    /// Roofline time of the calls, µs per step (absent when the device has no peaks).
    pub roofline_us: Option<f64>,
    /// Device time minus roofline time, µs per step (absent when the device has no peaks).
    pub lost_us: Option<f64>,
    /// Share of the FLOPs that came from the profiler's `flops` argument, 0..1.
    pub flops_from_args: f64,
    /// Dtype carrying most of the FLOPs (see `analysis::efficiency::precision`).
    #[serde(deserialize_with = "crate::text::static_words::one")]
    pub dtype: crate::text::static_words::Word,
}

/// One step.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct StepEfficiencyInfo {
    /// `ProfilerStep#N`.
    pub name: String,
    /// Step duration, µs.
    pub duration_us: f64,
    /// FLOPs of the calls whose kernels started in the step.
    pub flops: f64,
    /// FLOPs ÷ duration, TFLOP/s.
    pub achieved_tflops: f64,
    /// MFU of the step, 0..1 (absent without a peak).
    pub mfu: Option<f64>,
}

/// EfficiencyInfo of the window (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct EfficiencyInfo {
    /// Board whose peaks are used (absent when the device is not in the peak table).
    pub device: Option<String>,
    /// Devices that ran counted calls.
    pub devices: u32,
    /// Dtype carrying most FLOPs: `bfloat16`, `half`, `float8`, `tf32`, `float`, ...
    #[serde(deserialize_with = "crate::text::static_words::one")]
    pub dtype: crate::text::static_words::Word,
    /// Dense peak for that dtype, TFLOP/s per device.
    pub peak_tflops: Option<f64>,
    /// DRAM bandwidth per device, GB/s.
    pub mem_bw_gbs: Option<f64>,
    /// Mean step (counted time ÷ steps), µs.
    pub step_us: f64,
    /// FLOPs per step.
    pub flops_per_step: f64,
    /// Minimum DRAM bytes per step.
    pub bytes_per_step: f64,
    /// FLOPs ÷ step time, TFLOP/s (all devices).
    pub achieved_tflops: f64,
    /// Bytes ÷ step time, GB/s (all devices).
    pub achieved_gbs: f64,
    /// Model FLOPs utilization, 0..1 (absent without a peak, below `analysis::efficiency::MIN_ACCOUNTED`, or when
    /// the FLOPs exceed the device: `mfu_unknown` says which).
    pub mfu: Option<f64>,
    /// Why no MFU is given although the device has a peak: "MFU unknown: FLOPs known for N% of
    /// matrix-kernel time …".
    pub mfu_unknown: Option<String>,
    /// Matrix-kernel time under calls with known FLOPs ÷ all matrix-kernel time, 0..1
    /// (absent when the window ran no matrix kernel).
    pub accounted_share: Option<f64>,
    /// Share of the FLOPs from the profiler's `flops` argument, 0..1.
    pub flops_from_args: f64,
    /// Matrix-kernel time with unknown FLOPs, by reason (largest first).
    pub uncovered: Vec<UncoveredInfo>,
    /// Calls left out as impossible, by operator (most device time first).
    pub excluded: Vec<ExcludedOpInfo>,
    /// Per step.
    pub steps: Vec<StepEfficiencyInfo>,
    /// Top-level phases (annotations), by time lost against the roofline (else device time).
    pub phases: Vec<EfficiencyRowInfo>,
    /// Operators, by time lost against the roofline (else device time).
    pub ops: Vec<EfficiencyRowInfo>,
}

/// Live blocks at the peak grouped by allocating operator and phase.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct LiveGroupInfo {
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
pub struct LargeAllocInfo {
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
pub struct StepChurnInfo {
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
pub struct MemPointInfo {
    /// µs since the trace start.
    pub t_us: f64,
    /// Allocated bytes (the highest value in the point's bucket).
    pub allocated: i64,
    /// Reserved bytes (-1 when not recorded).
    pub reserved: i64,
}

/// The memory timeline of one device over the window.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct DeviceMemoryInfo {
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
    pub live_at_peak: Vec<LiveGroupInfo>,
    /// Bytes live at the peak by phase, largest first.
    pub live_by_phase: Vec<(String, u64)>,
    /// The largest allocations made in the window (up to 10).
    pub largest: Vec<LargeAllocInfo>,
    /// Allocations and frees per step.
    pub churn: Vec<StepChurnInfo>,
    /// Allocated and reserved over the window, at most `analysis::memory::CHART_POINTS` points.
    pub points: Vec<MemPointInfo>,
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
pub struct MemoryInfo {
    /// Per device, by id.
    pub devices: Vec<DeviceMemoryInfo>,
    /// Memory events in the trace.
    pub events: u64,
}

/// One rule result (`Rule Name`, `Rule Type` INF/WRN/OPT/ERR, description, speedup).
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct NcuRuleInfo {
    /// Section identifier (`SpeedOfLight`, `Occupancy`, ...).
    pub section: String,
    /// Rule name (`SOLBottleneck`, ...).
    pub name: String,
    /// `INF`, `WRN`, `OPT` or `ERR`.
    pub kind: String,
    /// Rule message as ncu wrote it (first line only for ERR tracebacks).
    pub message: String,
    /// Estimated speedup, % (`Estimated Speedup`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speedup_pct: Option<f64>,
    /// `local` or `global`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speedup_type: Option<String>,
}

/// A warp-stall reason and its weight.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct WarpStallInfo {
    /// Reason (`long_scoreboard`, `barrier`, ...).
    pub reason: String,
    /// Cycles stalled per issued instruction (`smsp__average_warps_issue_stalled_*`), or the
    /// share of PC samples (`smsp__pcsamp_warps_issue_stalled_*`, 0..1) when only those exist.
    pub value: f64,
}

/// One profiled kernel launch.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct NcuKernelInfo {
    /// `ID` (launch index in the report).
    pub id: u64,
    /// `Kernel Name` (demangled as ncu printed it).
    pub name: String,
    /// `Process Name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    /// `Device`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<i64>,
    /// `CC` (compute capability).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_capability: Option<String>,
    /// `Stream`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<i64>,
    /// `Block Size` (`(32, 1, 1)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<[u32; 3]>,
    /// `Grid Size`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grid: Option<[u32; 3]>,
    /// `gpu__time_duration.sum`, ns.
    pub duration_ns: Option<i64>,
    /// `sm__throughput.avg.pct_of_peak_sustained_elapsed`.
    pub sm_pct: Option<f64>,
    /// `gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed`.
    pub memory_pct: Option<f64>,
    /// `gpu__dram_throughput…` (or `dram__throughput…`).
    pub dram_pct: Option<f64>,
    /// `l1tex__throughput.avg.pct_of_peak_sustained_active`.
    pub l1_pct: Option<f64>,
    /// `lts__throughput.avg.pct_of_peak_sustained_elapsed`.
    pub l2_pct: Option<f64>,
    /// `sm__maximum_warps_per_active_cycle_pct`.
    pub theoretical_occupancy_pct: Option<f64>,
    /// `sm__warps_active.avg.pct_of_peak_sustained_active`.
    pub achieved_occupancy_pct: Option<f64>,
    /// The `launch__occupancy_limit_*` with the fewest blocks (`registers`, `shared_mem`,
    /// `warps`, `blocks`), when theoretical occupancy is below 100 %.
    pub occupancy_limiter: Option<String>,
    /// `launch__waves_per_multiprocessor`.
    pub waves_per_sm: Option<f64>,
    /// `launch__registers_per_thread`.
    pub registers_per_thread: Option<f64>,
    /// `lts__t_sector_hit_rate.pct`.
    pub l2_hit_rate_pct: Option<f64>,
    /// Local-memory (spill) instructions: `sass__inst_executed_local_loads` + `_stores`, or
    /// `l1tex__t_sectors_pipe_lsu_mem_local_op_{ld,st}.sum` sectors.
    pub local_memory_ops: Option<f64>,
    /// Shared-memory bank conflicts (`l1tex__data_bank_conflicts_pipe_lsu_mem_shared*`).
    pub bank_conflicts: Option<f64>,
    /// Bank conflicts ÷ shared-memory wavefronts, % (ncu's rule fires at ≥ 10 %).
    pub bank_conflict_pct: Option<f64>,
    /// Top warp-stall reasons, largest first (at most 3; `selected` excluded).
    pub warp_stalls: Vec<WarpStallInfo>,
    /// SOL classification (absent: no data).
    pub bound: Option<Bound>,
    /// The SOL rule's finding name (`High Throughput`, `Latency Issue`, ...).
    #[serde(deserialize_with = "crate::text::static_words::option")]
    pub sol: Option<crate::text::static_words::Word>,
    /// ncu's rule results for this launch.
    pub rules: Vec<NcuRuleInfo>,
}

impl From<&Warning> for WarningInfo {
    fn from(w: &Warning) -> Self {
        WarningInfo {
            code: w.code,
            count: w.count,
            first_offset: w.first_offset,
            message: w.message.clone(),
        }
    }
}

impl From<&Location> for LocationInfo {
    fn from(l: &Location) -> Self {
        LocationInfo {
            what: l.what.clone(),
            name: l.name.clone(),
            step: l.step.clone(),
            start_us: l.start_us,
            duration_us: l.duration_us,
        }
    }
}

impl From<&Evidence> for EvidenceInfo {
    fn from(e: &Evidence) -> Self {
        EvidenceInfo {
            facts: e.facts.clone(),
            metrics: e.metrics.clone(),
            locations: e.locations.iter().map(LocationInfo::from).collect(),
        }
    }
}

impl From<&Finding> for FindingInfo {
    fn from(f: &Finding) -> Self {
        FindingInfo {
            id: f.id,
            severity: f.severity,
            title: f.title.clone(),
            recoverable_us: f.recoverable_us,
            recoverable_basis: f.recoverable_basis.clone(),
            evidence: EvidenceInfo::from(&f.evidence),
            advice: f.advice.clone(),
        }
    }
}

impl From<&ExcludedOp> for ExcludedOpInfo {
    fn from(x: &ExcludedOp) -> Self {
        ExcludedOpInfo {
            name: x.name.clone(),
            calls: x.calls,
            device_us: x.device_us,
            factor: x.factor,
            bound: x.bound.clone(),
        }
    }
}

impl From<&Uncovered> for UncoveredInfo {
    fn from(u: &Uncovered) -> Self {
        UncoveredInfo {
            reason: u.reason.clone(),
            share: u.share,
            op: u.op.clone(),
        }
    }
}

impl UncoveredInfo {
    /// The reason in words (`analysis::efficiency::Uncovered::describe`, whose sentences
    /// stay beside the reasons they name).
    pub fn describe(&self) -> String {
        Uncovered {
            reason: self.reason.clone(),
            share: self.share,
            op: self.op.clone(),
        }
        .describe()
    }
}

impl From<&EfficiencyRow> for EfficiencyRowInfo {
    fn from(x: &EfficiencyRow) -> Self {
        EfficiencyRowInfo {
            name: x.name.clone(),
            calls: x.calls,
            device_us: x.device_us,
            flops: x.flops,
            bytes: x.bytes,
            achieved_tflops: x.achieved_tflops,
            achieved_gbs: x.achieved_gbs,
            roofline_us: x.roofline_us,
            lost_us: x.lost_us,
            flops_from_args: x.flops_from_args,
            dtype: x.dtype,
        }
    }
}

impl From<&StepEfficiency> for StepEfficiencyInfo {
    fn from(s: &StepEfficiency) -> Self {
        StepEfficiencyInfo {
            name: s.name.clone(),
            duration_us: s.duration_us,
            flops: s.flops,
            achieved_tflops: s.achieved_tflops,
            mfu: s.mfu,
        }
    }
}

impl From<&Efficiency> for EfficiencyInfo {
    fn from(e: &Efficiency) -> Self {
        EfficiencyInfo {
            device: e.device.clone(),
            devices: e.devices,
            dtype: e.dtype,
            peak_tflops: e.peak_tflops,
            mem_bw_gbs: e.mem_bw_gbs,
            step_us: e.step_us,
            flops_per_step: e.flops_per_step,
            bytes_per_step: e.bytes_per_step,
            achieved_tflops: e.achieved_tflops,
            achieved_gbs: e.achieved_gbs,
            mfu: e.mfu,
            mfu_unknown: e.mfu_unknown.clone(),
            accounted_share: e.accounted_share,
            flops_from_args: e.flops_from_args,
            uncovered: e.uncovered.iter().map(UncoveredInfo::from).collect(),
            excluded: e.excluded.iter().map(ExcludedOpInfo::from).collect(),
            steps: e.steps.iter().map(StepEfficiencyInfo::from).collect(),
            phases: e.phases.iter().map(EfficiencyRowInfo::from).collect(),
            ops: e.ops.iter().map(EfficiencyRowInfo::from).collect(),
        }
    }
}

impl From<&LiveGroup> for LiveGroupInfo {
    fn from(g: &LiveGroup) -> Self {
        LiveGroupInfo {
            op: g.op.clone(),
            phase: g.phase.clone(),
            blocks: g.blocks,
            bytes: g.bytes,
        }
    }
}

impl From<&LargeAlloc> for LargeAllocInfo {
    fn from(a: &LargeAlloc) -> Self {
        LargeAllocInfo {
            bytes: a.bytes,
            at_us: a.at_us,
            held_us: a.held_us,
            op: a.op.clone(),
            phase: a.phase.clone(),
        }
    }
}

impl From<&StepChurn> for StepChurnInfo {
    fn from(c: &StepChurn) -> Self {
        StepChurnInfo {
            step: c.step.clone(),
            allocs: c.allocs,
            alloc_bytes: c.alloc_bytes,
            frees: c.frees,
            freed_bytes: c.freed_bytes,
            peak_allocated: c.peak_allocated,
        }
    }
}

impl From<&MemPoint> for MemPointInfo {
    fn from(p: &MemPoint) -> Self {
        MemPointInfo {
            t_us: p.t_us,
            allocated: p.allocated,
            reserved: p.reserved,
        }
    }
}

impl From<&DeviceMemory> for DeviceMemoryInfo {
    fn from(d: &DeviceMemory) -> Self {
        DeviceMemoryInfo {
            device: d.device,
            capacity: d.capacity,
            start_allocated: d.start_allocated,
            peak_allocated: d.peak_allocated,
            peak_at_us: d.peak_at_us,
            peak_step: d.peak_step.clone(),
            reserved_at_peak: d.reserved_at_peak,
            held_at_peak: d.held_at_peak,
            peak_reserved: d.peak_reserved,
            live_at_peak: d.live_at_peak.iter().map(LiveGroupInfo::from).collect(),
            live_by_phase: d.live_by_phase.clone(),
            largest: d.largest.iter().map(LargeAllocInfo::from).collect(),
            churn: d.churn.iter().map(StepChurnInfo::from).collect(),
            points: d.points.iter().map(MemPointInfo::from).collect(),
            unmatched_frees: d.unmatched_frees,
            recorded_peak: d.recorded_peak,
            blocks_known: d.blocks_known,
        }
    }
}

impl From<&MemoryAnalysis> for MemoryInfo {
    fn from(m: &MemoryAnalysis) -> Self {
        MemoryInfo {
            devices: m.devices.iter().map(DeviceMemoryInfo::from).collect(),
            events: m.events,
        }
    }
}

impl From<&NcuRule> for NcuRuleInfo {
    fn from(r: &NcuRule) -> Self {
        NcuRuleInfo {
            section: r.section.clone(),
            name: r.name.clone(),
            kind: r.kind.clone(),
            message: r.message.clone(),
            speedup_pct: r.speedup_pct,
            speedup_type: r.speedup_type.clone(),
        }
    }
}

impl From<&WarpStall> for WarpStallInfo {
    fn from(w: &WarpStall) -> Self {
        WarpStallInfo {
            reason: w.reason.clone(),
            value: w.value,
        }
    }
}

impl From<&NcuKernel> for NcuKernelInfo {
    fn from(k: &NcuKernel) -> Self {
        NcuKernelInfo {
            id: k.id,
            name: k.name.clone(),
            process: k.process.clone(),
            device: k.device,
            compute_capability: k.compute_capability.clone(),
            stream: k.stream,
            block: k.block,
            grid: k.grid,
            duration_ns: k.duration_ns,
            sm_pct: k.sm_pct,
            memory_pct: k.memory_pct,
            dram_pct: k.dram_pct,
            l1_pct: k.l1_pct,
            l2_pct: k.l2_pct,
            theoretical_occupancy_pct: k.theoretical_occupancy_pct,
            achieved_occupancy_pct: k.achieved_occupancy_pct,
            occupancy_limiter: k.occupancy_limiter.clone(),
            waves_per_sm: k.waves_per_sm,
            registers_per_thread: k.registers_per_thread,
            l2_hit_rate_pct: k.l2_hit_rate_pct,
            local_memory_ops: k.local_memory_ops,
            bank_conflicts: k.bank_conflicts,
            bank_conflict_pct: k.bank_conflict_pct,
            warp_stalls: k.warp_stalls.iter().map(WarpStallInfo::from).collect(),
            bound: k.bound,
            sol: k.sol,
            rules: k.rules.iter().map(NcuRuleInfo::from).collect(),
        }
    }
}
