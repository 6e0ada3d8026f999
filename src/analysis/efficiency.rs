//! How much of the device the step uses: FLOPs, bytes, achieved TFLOP/s and GB/s, and **MFU**
//! (model FLOPs utilization) per step, per phase and per operator, from the roofline points of
//! [`super::roofline`].
//!
//! # Definitions
//!
//! * **FLOPs** of an operator call: the profiler's `flops` argument when recorded
//!   (`with_flops=True`), else the formula of [`super::roofline`] over the recorded shapes and
//!   dtypes (`record_shapes=True`). Only calls whose kernels ran in the window count.
//! * **Bytes**: the formula's minimum DRAM traffic (0 for calls known only by `flops`).
//! * **Achieved TFLOP/s** of the window: FLOPs ÷ the window's counted time (the sum of the step
//!   durations); of an operator or phase: its FLOPs ÷ the device time of its kernels.
//! * **MFU**: FLOPs ÷ (counted time × dense peak × devices), the peak being that of the dtype
//!   that carries most FLOPs ([`peak_tflops`]; FP32 calls whose kernels ran on tensor cores
//!   count as TF32). Devices: those that ran a counted call. Not computed when the device is
//!   not in the peak table ([`super::devices_db`]).
//! * **Accounted share**: the device time of the window's matrix kernels (GEMM, convolution,
//!   attention: where the FLOPs are) that ran under a call with known FLOPs, over the time of
//!   all of them. An MFU computed from 40% of the matrix work understates the true MFU; the
//!   share says how far to trust it. Below [`MIN_ACCOUNTED`] (half the matrix-kernel time)
//!   no MFU is given: `mfu_unknown` says for how much the FLOPs are known and why not for the
//!   rest (`uncovered`: no recorded shapes, no formula for the recorded inputs, kernels replayed
//!   from graphs, kernels no operator launched, calls left out as impossible).
//! * **Impossible calls**: a call whose FLOPs ÷ device time exceed the dense peak of its dtype,
//!   or whose bytes ÷ device time exceed the DRAM bandwidth, cannot have run those kernels on
//!   those shapes ([`super::roofline::Implausible`]): it is left out of every figure here and
//!   listed in `excluded` (by operator, with the factor), and the window's notes say so. An MFU
//!   above 1 (concurrent calls whose sum exceeds the device) is withheld the same way.
//! * **Time lost against the roofline** of an operator or phase: the device time of its calls
//!   minus their roofline time `max(FLOPs ÷ peak, bytes ÷ bandwidth)`, summed (never
//!   negative per call).

use serde::Serialize;

use super::devices_db::{self, DeviceSpec};
use super::phases::UNANNOTATED;
use super::roofline::{Implausible, OpPoint};
use crate::model::classify::KernelCategory;
use crate::model::fast::HashMap;
use crate::model::{GpuKind, Ns, Trace, NONE};
use crate::window::annotations::Annotations;
use crate::window::steps::Step;

/// Dense peak of a device for a dtype, TFLOP/s: `bfloat16`/`half` → the FP16/BF16 tensor
/// peak, `float8` → FP8, `tf32` → TF32, `float` → FP32 on the regular pipes, `double` → FP64.
/// `None` when the device has no such peak or the dtype has none (integers, `other`).
///
/// The one place efficiency reads the peak table: new precisions are added here.
pub fn peak_tflops(spec: &DeviceSpec, dtype: &str) -> Option<f64> {
    match dtype {
        "bfloat16" | "half" => spec.fp16,
        "float8" => spec.fp8,
        "tf32" => spec.tf32,
        "float" => Some(spec.fp32),
        "double" => spec.fp64,
        _ => None,
    }
}

/// Precision a call's FLOPs are counted against: its dtype, `tf32` for FP32 calls whose
/// kernels used tensor cores.
pub fn precision(p: &OpPoint) -> &'static str {
    if p.cost.dtype == "float" && p.tensor_cores {
        "tf32"
    } else {
        p.cost.dtype
    }
}

/// Share of the matrix-kernel time (GEMM, convolution, attention) whose FLOPs must be known for
/// an MFU to be given (and for the roofline findings to fire): below it the FLOPs seen are a
/// minority of the work and the MFU would describe the calls that happen to have shapes.
pub const MIN_ACCOUNTED: f64 = 0.5;

/// Operator calls left out as impossible ([`Implausible`]), by operator name.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct ExcludedOp {
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
pub struct Uncovered {
    /// `no_shapes` (the launching operator has no recorded shapes), `no_formula` (no formula
    /// for the recorded inputs), `graph_replay` (kernels replayed from a CUDA/HIP graph: a
    /// graph id on the kernel, or a `cudaGraphLaunch`/`hipGraphLaunch` launching it),
    /// `no_operator` (no recorded operator launched them), `impossible` (the call was left
    /// out, see `excluded`).
    pub reason: String,
    /// Share of the matrix-kernel time, 0..1.
    pub share: f64,
    /// The operator with the most such time, when one launched them.
    pub op: Option<String>,
}

impl Uncovered {
    /// The reason in words.
    pub fn describe(&self) -> String {
        let op = self.op.as_deref().unwrap_or("?");
        match self.reason.as_str() {
            "no_shapes" => format!(
                "operators without recorded shapes (e.g. `{op}`; profile with \
                 `record_shapes=True`)"
            ),
            "no_formula" if super::roofline::has_formula(op) => format!(
                "no FLOPs from the recorded inputs of `{op}` (e.g. a convolution without \
                 `Concrete Inputs`, which older PyTorch does not record)"
            ),
            "no_formula" => format!(
                "operators without a FLOPs formula (e.g. `{op}`; backward convolutions and \
                 custom operators have none)"
            ),
            "graph_replay" => {
                "kernels replayed from CUDA/HIP graphs (their shapes are hidden inside the replay)"
                    .to_string()
            }
            "no_operator" => "kernels no recorded operator launched".to_string(),
            _ => "calls left out because their shapes imply more than the device can do".into(),
        }
    }
}

/// Totals of a group of calls (an operator name, a phase).
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct EfficiencyRow {
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
    /// Dtype carrying most of the FLOPs (see [`precision`]).
    #[serde(deserialize_with = "crate::text::static_words::one")]
    pub dtype: crate::text::static_words::Word,
}

/// One step.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct StepEfficiency {
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

/// Efficiency of the window (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Efficiency {
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
    /// Model FLOPs utilization, 0..1 (absent without a peak, below [`MIN_ACCOUNTED`], or when
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
    pub uncovered: Vec<Uncovered>,
    /// Calls left out as impossible, by operator (most device time first).
    pub excluded: Vec<ExcludedOp>,
    /// Per step.
    pub steps: Vec<StepEfficiency>,
    /// Top-level phases (annotations), by time lost against the roofline (else device time).
    pub phases: Vec<EfficiencyRow>,
    /// Operators, by time lost against the roofline (else device time).
    pub ops: Vec<EfficiencyRow>,
}

#[derive(Default)]
struct Acc {
    calls: u64,
    time: Ns,
    flops: f64,
    bytes: f64,
    ideal: f64,
    lost: f64,
    args_flops: f64,
    by_dtype: Vec<(&'static str, f64)>,
}

impl Acc {
    fn add(&mut self, p: &OpPoint, time: Ns, share: f64) {
        self.calls += 1;
        self.time += time;
        let flops = p.cost.flops * share;
        self.flops += flops;
        self.bytes += p.cost.bytes * share;
        let ideal = p.ideal * share;
        self.ideal += ideal;
        self.lost += (time as f64 - ideal).max(0.0);
        if p.cost.from_args {
            self.args_flops += flops;
        }
        let d = precision(p);
        match self.by_dtype.iter_mut().find(|(k, _)| *k == d) {
            Some((_, v)) => *v += flops,
            None => self.by_dtype.push((d, flops)),
        }
    }
    fn dtype(&self) -> &'static str {
        self.by_dtype
            .iter()
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(a.0)))
            .map_or("other", |x| x.0)
    }
    fn row(&self, name: String, n_steps: f64, roofline: bool) -> EfficiencyRow {
        let t = self.time.max(1) as f64;
        EfficiencyRow {
            name,
            calls: self.calls,
            device_us: self.time as f64 / n_steps / 1000.0,
            flops: self.flops / n_steps,
            bytes: self.bytes / n_steps,
            achieved_tflops: self.flops / t / 1000.0,
            achieved_gbs: self.bytes / t,
            roofline_us: roofline.then(|| self.ideal / n_steps / 1000.0),
            lost_us: roofline.then(|| self.lost / n_steps / 1000.0),
            flops_from_args: if self.flops > 0.0 {
                self.args_flops / self.flops
            } else {
                0.0
            },
            dtype: self.dtype(),
        }
    }
}

fn ranked(mut rows: Vec<EfficiencyRow>) -> Vec<EfficiencyRow> {
    rows.sort_by(|a, b| {
        let key = |r: &EfficiencyRow| r.lost_us.unwrap_or(r.device_us);
        key(b).total_cmp(&key(a)).then(a.name.cmp(&b.name))
    });
    rows
}

/// The name of the top-level annotation a device activity is attributed to.
fn root_phase<'t>(trace: &'t Trace, ann: &Annotations, gi: u32) -> &'t str {
    let inst = ann
        .activity_instance
        .get(gi as usize)
        .copied()
        .unwrap_or(NONE);
    if inst == NONE {
        return UNANNOTATED;
    }
    let mut p = ann.instances[inst as usize].path;
    while ann.paths[p as usize].parent != NONE {
        p = ann.paths[p as usize].parent;
    }
    trace.name(ann.paths[p as usize].name)
}

/// Efficiency of a window: `points` are its roofline points and `implausible` the calls left
/// out of them ([`super::roofline::roofline_checked`] over the kernels `counts` says belong to
/// it), `steps` its steps, `window_ns` its counted time. `None` when no call has known FLOPs.
pub fn efficiency(
    trace: &Trace,
    points: &[OpPoint],
    implausible: &[Implausible],
    steps: &[Step],
    window_ns: Ns,
    ann: &Annotations,
    counts: &dyn Fn(u32) -> bool,
) -> Option<Efficiency> {
    if points.is_empty() || window_ns <= 0 {
        return None;
    }
    let n_steps = steps.len().max(1) as f64;
    let roofline = points.iter().all(|p| p.has_roofline());
    let mut total = Acc::default();
    let mut by_op: HashMap<&str, Acc> = HashMap::default();
    let mut by_phase: HashMap<&str, Acc> = HashMap::default();
    let mut step_flops = vec![0.0; steps.len()];
    let mut devices: Vec<i32> = Vec::new();
    let mut covered = vec![false; trace.gpu.len()];
    for p in points {
        let op_name = trace.name(trace.cpu[p.op as usize].name);
        total.add(p, p.time, 1.0);
        by_op.entry(op_name).or_default().add(p, p.time, 1.0);
        // a call's phase and step: those of its first kernel
        let first = p.kernels[0];
        let phase = root_phase(trace, ann, first);
        by_phase.entry(phase).or_default().add(p, p.time, 1.0);
        let start = trace.gpu[first as usize].start;
        let k = steps.partition_point(|s| s.span.start <= start);
        if k > 0 && start < steps[k - 1].span.end {
            step_flops[k - 1] += p.cost.flops;
        }
        for &g in &p.kernels {
            covered[g as usize] = true;
        }
        let d = trace.gpu[first as usize].device;
        if !devices.contains(&d) {
            devices.push(d);
        }
    }
    // matrix-kernel time under calls with known FLOPs, and why not for the rest
    let mut impossible = vec![false; trace.gpu.len()];
    for x in implausible {
        for &g in &x.point.kernels {
            impossible[g as usize] = true;
        }
    }
    // reason → (time, operator name → time)
    let mut gaps: Vec<(&'static str, Ns, HashMap<u32, Ns>)> = Vec::new();
    let (mut math, mut math_covered) = (0i64, 0i64);
    let classes = trace.kernel_classes();
    // kernels a CUDA/HIP graph launch replayed: their shapes are hidden inside the replay
    // (Kineto writes no graph id on them before 2026: their launch call says it)
    let mut graph_launch = crate::model::fast::NameMemo::new(trace, |n| n.contains("GraphLaunch"));
    for (gi, g) in trace.gpu.iter().enumerate() {
        if g.kind != GpuKind::Kernel || !counts(gi as u32) {
            continue;
        }
        let c = classes.get(g.name).category;
        if matches!(
            c,
            KernelCategory::Gemm | KernelCategory::Conv | KernelCategory::Attention
        ) {
            math += g.dur;
            if covered[gi] {
                math_covered += g.dur;
            } else {
                let owner = trace.owner_op_of(g);
                let reason = if impossible[gi] {
                    "impossible"
                } else if g.in_graph
                    || (g.launch != NONE && graph_launch.get(trace.cpu[g.launch as usize].name))
                {
                    "graph_replay"
                } else if let Some(o) = owner {
                    if trace.op_shape_at(o as usize).is_some() {
                        "no_formula"
                    } else {
                        "no_shapes"
                    }
                } else {
                    "no_operator"
                };
                let i = match gaps.iter().position(|x| x.0 == reason) {
                    Some(i) => i,
                    None => {
                        gaps.push((reason, 0, HashMap::default()));
                        gaps.len() - 1
                    }
                };
                gaps[i].1 += g.dur;
                if let Some(o) = owner {
                    *gaps[i].2.entry(trace.cpu[o as usize].name.0).or_default() += g.dur;
                }
            }
        }
    }
    let spec = devices
        .first()
        .and_then(|&d| trace.device(d as i64))
        .and_then(devices_db::lookup);
    let dtype = total.dtype();
    let peak = spec.and_then(|s| peak_tflops(s, dtype));
    let n_dev = devices.len().max(1) as f64;
    let accounted_share = (math > 0).then(|| math_covered as f64 / math as f64);
    let mut uncovered: Vec<Uncovered> = gaps
        .into_iter()
        .map(|(reason, t, ops)| Uncovered {
            reason: reason.to_string(),
            share: t as f64 / math.max(1) as f64,
            op: ops
                .into_iter()
                .max_by_key(|&(n, t)| (t, std::cmp::Reverse(n)))
                .map(|(n, _)| trace.name(crate::model::NameId(n)).to_string()),
        })
        .collect();
    uncovered.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.reason.cmp(&b.reason)));
    let window = window_ns as f64;
    let whole = peak.map(|pk| total.flops / (window * 1e-9) / (pk * 1e12 * n_dev));
    // FLOPs known for too little of the matrix time: said whether or not the device has a
    // peak for the dtype (without one, "no peak" would hide that the FLOPs are missing)
    let mfu_unknown = match (whole, accounted_share) {
        (_, Some(a)) if a < MIN_ACCOUNTED => Some(format!(
            "MFU unknown: FLOPs known for {:.1}% of matrix-kernel time (at least {:.0}% needed); \
             the rest: {}",
            a * 100.0,
            MIN_ACCOUNTED * 100.0,
            uncovered
                .iter()
                .map(|u| format!("{:.0}% {}", u.share * 100.0, u.describe()))
                .collect::<Vec<_>>()
                .join("; ")
        )),
        (Some(m), _) if m > 1.0 => Some(format!(
            "MFU unknown: the counted calls' FLOPs come to {:.0}% of the {} dense peak over the \
             window, more than the device can do (concurrent calls or recorded shapes that do \
             not match the kernels)",
            m * 100.0,
            dtype
        )),
        _ => None,
    };
    let peak = if mfu_unknown.is_some() { None } else { peak };
    let mfu_of = |flops: f64, ns: f64| {
        peak.map(|pk| flops / (ns * 1e-9) / (pk * 1e12 * n_dev))
            .filter(|m| *m <= 1.0)
    };
    let steps_out = steps
        .iter()
        .zip(&step_flops)
        .map(|(s, &f)| {
            let d = s.span.len().max(1) as f64;
            StepEfficiency {
                name: s.name.clone(),
                duration_us: d / 1000.0,
                flops: f,
                achieved_tflops: f / d / 1000.0,
                mfu: mfu_of(f, d),
            }
        })
        .collect();
    let rows = |m: HashMap<&str, Acc>| {
        ranked(
            m.into_iter()
                .map(|(k, a)| a.row(k.to_string(), n_steps, roofline))
                .collect(),
        )
    };
    Some(Efficiency {
        device: spec.map(|s| s.name.to_string()),
        devices: devices.len() as u32,
        dtype,
        peak_tflops: spec.and_then(|s| peak_tflops(s, dtype)),
        mem_bw_gbs: spec.map(|s| s.mem_bw),
        step_us: window / n_steps / 1000.0,
        flops_per_step: total.flops / n_steps,
        bytes_per_step: total.bytes / n_steps,
        achieved_tflops: total.flops / window / 1000.0,
        achieved_gbs: total.bytes / window,
        mfu: mfu_of(total.flops, window),
        mfu_unknown,
        accounted_share,
        flops_from_args: if total.flops > 0.0 {
            total.args_flops / total.flops
        } else {
            0.0
        },
        uncovered,
        excluded: excluded_ops(trace, implausible, n_steps),
        steps: steps_out,
        phases: rows(by_phase),
        ops: rows(by_op),
    })
}

/// Calls left out as impossible, by operator name (most device time first).
fn excluded_ops(trace: &Trace, implausible: &[Implausible], n_steps: f64) -> Vec<ExcludedOp> {
    let mut by: Vec<ExcludedOp> = Vec::new();
    for x in implausible {
        let name = trace.name(trace.cpu[x.point.op as usize].name);
        let bound = if x.compute { "flops" } else { "bytes" };
        let us = x.point.time as f64 / n_steps / 1000.0;
        match by.iter_mut().find(|r| r.name == name) {
            Some(r) => {
                r.calls += 1;
                r.device_us += us;
                if x.factor > r.factor {
                    r.factor = x.factor;
                    r.bound = bound.to_string();
                }
            }
            None => by.push(ExcludedOp {
                name: name.to_string(),
                calls: 1,
                device_us: us,
                factor: x.factor,
                bound: bound.to_string(),
            }),
        }
    }
    by.sort_by(|a, b| {
        b.device_us
            .total_cmp(&a.device_us)
            .then(a.name.cmp(&b.name))
    });
    by
}

/// One note per operator with calls left out as impossible (the window's notes): the operator,
/// the calls, the factor and why.
pub fn implausible_notes(trace: &Trace, implausible: &[Implausible]) -> Vec<String> {
    excluded_ops(trace, implausible, 1.0)
        .iter()
        .map(|x| {
            format!(
                "{} call(s) of {} left out of MFU and the roofline: their recorded shapes imply \
                 {:.2}× the device's {}, so the shapes do not belong to those kernels",
                x.calls,
                x.name,
                x.factor,
                if x.bound == "flops" {
                    "dense peak for their dtype"
                } else {
                    "DRAM bandwidth"
                }
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peaks_by_dtype() {
        let h = devices_db::H100_SXM;
        assert_eq!(peak_tflops(&h, "bfloat16"), Some(989.4));
        assert_eq!(peak_tflops(&h, "half"), Some(989.4));
        assert_eq!(peak_tflops(&h, "float8"), Some(1978.9));
        assert_eq!(peak_tflops(&h, "tf32"), Some(494.7));
        assert_eq!(peak_tflops(&h, "float"), Some(67.0));
        assert_eq!(peak_tflops(&h, "int64"), None);
        assert_eq!(peak_tflops(&devices_db::V100_SXM2, "float8"), None);
    }
}
