//! Roofline rules: `memory-bound` and `compute-bound` operators, from recorded shapes and
//! dtypes against the device's peaks ([`crate::analysis::roofline`]).
//!
//! # What a fix can recover
//!
//! No kernel runs at the datasheet peak, so the gain of a call is measured against an
//! **attainable** roofline, not the datasheet's: `max(FLOPs ÷ (ATTAINABLE_COMPUTE × peak),
//! bytes ÷ (ATTAINABLE_BANDWIDTH × bandwidth))`. Vendor GEMMs and convolutions (cuBLAS,
//! cuDNN, hipBLASLt, MIOpen) reach about 60-80 % of the dense datasheet peak on their best
//! shapes at sustained clocks and less on MI300-class parts, so [`ATTAINABLE_COMPUTE`] is 0.6:
//! a call at half the peak is near its practical roofline (a sixth of its time to gain); copy
//! and pointwise kernels reach 80-90 % of the DRAM bandwidth, so [`ATTAINABLE_BANDWIDTH`] is
//! 0.8. The efficiency section keeps the datasheet roofline (TraceLens's), the gap to it is in
//! the evidence. The rules fire only when FLOPs are known for at least half of the
//! matrix-kernel time ([`crate::analysis::efficiency::MIN_ACCOUNTED`]): otherwise the calls
//! with shapes are a minority and the figures would describe them, not the step.

use std::collections::HashMap;

use super::claims::{cap, Claims, CAP_BASIS};
use super::{count, fmt_us_sentence, pct, Evidence, Facts, Finding};
use crate::analysis::roofline::OpPoint;

/// Share of kernel time in one class (memory- or compute-bound ops) from which its rule
/// fires.
pub const CLASS_SHARE: f64 = 0.05;
/// Share of the step the class's gap to the roofline must reach for the rule to fire.
pub const GAP_SHARE: f64 = 0.01;
/// Share of the dense datasheet peak a vendor GEMM/convolution/attention kernel attains at
/// best (see the module docs).
pub const ATTAINABLE_COMPUTE: f64 = 0.6;
/// Share of the datasheet DRAM bandwidth a streaming kernel attains at best.
pub const ATTAINABLE_BANDWIDTH: f64 = 0.8;

/// The least time a call's kernels can practically take: its roofline at the attainable
/// ceilings, ns (`ideal` is the datasheet roofline).
pub fn attainable_ns(p: &OpPoint) -> f64 {
    if !p.has_roofline() {
        return 0.0;
    }
    let c = p.cost.flops / (p.peak_tflops * 1e12 * ATTAINABLE_COMPUTE) * 1e9;
    let m = p.cost.bytes / (p.bw_gbs * 1e9 * ATTAINABLE_BANDWIDTH) * 1e9;
    c.max(m)
}

/// What a call can gain: its device time above [`attainable_ns`], ns.
fn gain_ns(p: &OpPoint) -> f64 {
    (p.time as f64 - attainable_ns(p)).max(0.0)
}

#[derive(Default)]
struct Agg {
    calls: u64,
    time: i64,
    flops: f64,
    bytes: f64,
    ideal: f64,
    gap: f64,
    peak: f64,
    bw: f64,
    tc: bool,
    dtype: &'static str,
    shapes: HashMap<u32, i64>, // dims name id → time
    first: u32,
}

/// Roofline findings.
pub fn rules(f: &Facts, claims: &mut Claims) -> Vec<Finding> {
    // MFU and roofline only on a majority of the matrix work (see the module docs)
    if let Some(e) = &f.a.efficiency {
        if e.accounted_share
            .is_some_and(|a| a < crate::analysis::efficiency::MIN_ACCOUNTED)
        {
            return Vec::new();
        }
    }
    let points: Vec<&OpPoint> = claims.points.iter().filter(|p| p.has_roofline()).collect();
    if points.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut memory: Vec<&OpPoint> = Vec::new();
    let mut compute: Vec<&OpPoint> = Vec::new();
    for &p in &points {
        if p.kernels.iter().all(|&k| claims.free(k)) {
            if p.memory_bound {
                memory.push(p);
            } else {
                compute.push(p);
            }
        }
    }
    for (id, class) in [("memory-bound", memory), ("compute-bound", compute)] {
        if let Some(x) = class_finding(f, id, &class).filter(|x| x.recoverable_us > 0.0) {
            for p in &class {
                for &k in &p.kernels {
                    claims.take(k);
                }
            }
            out.push(x);
        }
    }
    out
}

fn class_finding(f: &Facts, id: &'static str, pts: &[&OpPoint]) -> Option<Finding> {
    let trace = f.trace;
    let kt = f.a.kernels.iter().map(|k| k.total).sum::<i64>().max(1) as f64;
    let time: i64 = pts.iter().map(|p| p.time).sum();
    let gap: f64 = pts.iter().map(|p| gain_ns(p)).sum();
    let datasheet_gap: f64 = pts.iter().map(|p| (p.time as f64 - p.ideal).max(0.0)).sum();
    let raw = gap / f.n_steps as f64 / 1000.0;
    if (time as f64) < CLASS_SHARE * kt || f.share_of_step(raw) < GAP_SHARE {
        return None;
    }
    let mut by: HashMap<String, Agg> = HashMap::new();
    for p in pts {
        let op = &trace.cpu[p.op as usize];
        let a = by
            .entry(trace.name(op.name).to_string())
            .or_insert_with(|| Agg {
                first: p.op,
                ..Agg::default()
            });
        a.calls += 1;
        a.time += p.time;
        a.flops += p.cost.flops;
        a.bytes += p.cost.bytes;
        a.ideal += p.ideal;
        a.gap += gain_ns(p);
        a.peak = p.peak_tflops;
        a.bw = p.bw_gbs;
        a.tc |= p.tensor_cores;
        a.dtype = p.cost.dtype;
        if let Some(s) = trace.op_shape_at(p.op as usize) {
            *a.shapes.entry(s.dims.0).or_default() += p.time;
        }
    }
    let mut rows: Vec<(String, Agg)> = by.into_iter().collect();
    rows.sort_by(|a, b| {
        b.1.gap
            .partial_cmp(&a.1.gap)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.0.cmp(&b.0))
    });
    let memory = id == "memory-bound";
    let mut e = Evidence::default();
    e.facts.push(format!(
        "{} operators with recorded shapes run {} per step ({} of kernel time); at the \
         datasheet roofline they would take {} per step, at the attainable one ({:.0}% of \
         the compute peak, {:.0}% of the bandwidth) {}",
        if memory {
            "memory-bound"
        } else {
            "compute-bound"
        },
        fmt_us_sentence(f.per_step_us(time)),
        pct(time as f64 / kt),
        fmt_us_sentence(pts.iter().map(|p| p.ideal).sum::<f64>() / f.n_steps as f64 / 1000.0),
        ATTAINABLE_COMPUTE * 100.0,
        ATTAINABLE_BANDWIDTH * 100.0,
        fmt_us_sentence(
            pts.iter().map(|p| attainable_ns(p)).sum::<f64>() / f.n_steps as f64 / 1000.0
        )
    ));
    for (name, a) in rows.iter().take(6) {
        let t = a.time.max(1) as f64;
        let tflops = a.flops / t / 1000.0;
        let gbs = a.bytes / t;
        let shape = a
            .shapes
            .iter()
            .max_by_key(|(k, v)| (**v, std::cmp::Reverse(**k)))
            .map(|(k, _)| compact(trace.name(crate::model::NameId(*k))))
            .unwrap_or_default();
        // a share of a peak is never printed above 100 %: say what the excess means instead
        let share = |x: f64, of: f64, unit: &str, above: &str| {
            if x > of {
                format!("above the {of:.0} {unit} {above}")
            } else {
                format!("{} of {of:.0} {unit}", pct(x / of))
            }
        };
        e.facts.push(format!(
            "  {} {}{} ×{}: {} per step, {:.1} TFLOP/s ({}), {:.0} GB/s ({}), {:.1} FLOP/B \
             (ridge {:.0})",
            name,
            if a.dtype == "other" { "" } else { a.dtype },
            if shape.is_empty() {
                String::new()
            } else {
                format!(" {}", super::short(&shape, 60))
            },
            count(a.calls),
            fmt_us_sentence(f.per_step_us(a.time)),
            tflops,
            share(
                tflops,
                a.peak,
                if a.tc {
                    "TFLOP/s tensor"
                } else {
                    "TFLOP/s FP32"
                },
                "peak: some kernels use faster units than their names say"
            ),
            gbs,
            share(gbs, a.bw, "GB/s", "DRAM bandwidth: cache-resident data"),
            a.flops / a.bytes,
            a.peak * 1000.0 / a.bw,
        ));
        e.metrics
            .insert(format!("{name}/achieved_tflops"), super::round3(tflops));
        e.metrics
            .insert(format!("{name}/achieved_gbs"), super::round3(gbs));
        let c = &trace.cpu[a.first as usize];
        e.locations.push(f.location("op", name, c.start, c.dur));
    }
    if let Some(s) = f
        .trace
        .devices
        .iter()
        .filter(|d| d.active)
        .find_map(crate::analysis::devices_db::lookup)
    {
        e.facts.push(format!(
            "peaks used ({}): FP32 {} TFLOP/s, tensor FP16/BF16 {} TFLOP/s, {} GB/s",
            s.name,
            s.fp32,
            s.fp16.map(|x| x.to_string()).unwrap_or("-".into()),
            s.mem_bw
        ));
    }
    super::metric(&mut e, "gap_to_roofline_us_per_step", raw);
    super::metric(
        &mut e,
        "gap_to_datasheet_roofline_us_per_step",
        datasheet_gap / f.n_steps as f64 / 1000.0,
    );
    let rec = cap(f, raw, &mut e);
    let advice: Vec<String> = if memory {
        vec![
            "Move fewer bytes: fuse chains of pointwise/normalization ops into their neighbours \
             (`torch.compile`), and use fused attention (`F.scaled_dot_product_attention`) \
             instead of materialized softmax(QKᵀ)."
                .into(),
            "Halve the traffic with lower precision: bf16/fp16 activations under \
             `torch.autocast`, FP8 where supported (Transformer Engine, torchao)."
                .into(),
            "GEMMs below the ridge point are too skinny: batch more rows per call (larger \
             batch, fused QKV projections) to raise their arithmetic intensity."
                .into(),
        ]
    } else {
        vec![
            "Use the fastest math the device has: bf16/fp16 (or TF32 for FP32 models, \
             `torch.set_float32_matmul_precision(\"high\")`), FP8 on Hopper/Blackwell/MI300 \
             (Transformer Engine, torchao)."
                .into(),
            "Far below peak: check shapes for tile alignment (multiples of 64/128 for the big \
             dimensions, 8/16 for dtype alignment), try `torch.compile(mode=\"max-autotune\")` \
             or `torch.backends.cudnn.benchmark=True` for convolutions."
                .into(),
        ]
    };
    Some(Finding {
        id,
        severity: f.severity(rec),
        title: format!(
            "{} operators: {} per step above their attainable roofline time",
            if memory {
                "Memory-bound"
            } else {
                "Compute-bound"
            },
            fmt_us_sentence(raw)
        ),
        recoverable_us: rec,
        recoverable_basis: format!(
            "per operator call, measured device time minus the attainable roofline time \
             max(FLOPs ÷ ({:.0}% of the peak), bytes ÷ ({:.0}% of the bandwidth)) — what the \
             best vendor kernels reach — summed per step; {CAP_BASIS}",
            ATTAINABLE_COMPUTE * 100.0,
            ATTAINABLE_BANDWIDTH * 100.0
        ),
        evidence: e,
        advice,
    })
}

/// A recorded JSON array on one line (`[[16, 559], []]`), whatever the file's layout.
pub fn compact(text: &str) -> String {
    let s: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    s.replace(',', ", ")
}

/// Input shapes and dtypes of the first calls of the named operators, as evidence lines;
/// `None` when the trace does not record shapes.
pub fn shapes_of_ops(f: &Facts, names: &[String], n: usize) -> Option<Vec<String>> {
    let trace = f.trace;
    if trace.op_shapes.is_empty() {
        return None;
    }
    let mut out: Vec<String> = Vec::new();
    let mut seen: HashMap<(u32, u32), ()> = HashMap::new();
    let mut asked =
        crate::model::fast::NameMemo::new(trace, |name| names.iter().any(|x| x == name));
    for (i, e) in trace.cpu.iter().enumerate() {
        if out.len() >= n {
            break;
        }
        if e.external_id == 0 || !asked.get(e.name) {
            continue;
        }
        let Some(s) = trace.op_shape_at(i) else {
            continue;
        };
        if seen.insert((e.name.0, s.dims.0), ()).is_some() {
            continue;
        }
        out.push(format!(
            "  {} inputs {} {}{}",
            trace.name(e.name),
            super::short(&compact(trace.name(s.dims)), 80),
            super::short(&compact(trace.name(s.types)), 60),
            if compact(trace.name(s.concrete))
                .chars()
                .all(|c| matches!(c, '[' | ']' | '"' | ',' | ' '))
            {
                String::new()
            } else {
                format!(" {}", super::short(&compact(trace.name(s.concrete)), 60))
            }
        ));
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{find, run};
    use crate::model::build::TraceBuilder;
    use crate::model::GpuKind;

    /// Steps of one softmax over [64, 16, 1024, 1024] fp32 (2 × 4 GiB moved) taking
    /// `ms` each, GPU-bound (the host syncs on it).
    fn softmax_trace(ms: f64) -> crate::model::Trace {
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100 80GB HBM3", 132, 80 << 30);
        let mut t = 0.0;
        for s in 0..3 {
            let ext = b.op("aten::softmax", t, 10.0);
            b.shapes(
                ext,
                "[[64, 16, 1024, 1024], [], []]",
                "[\"float\", \"Scalar\", \"\"]",
                "[\"\", \"-1\", \"\"]",
            );
            let c = b.runtime("cudaLaunchKernel", ext, t + 2.0, 5.0);
            b.gpu(
                GpuKind::Kernel,
                "softmax_warp_forward",
                0,
                7,
                t + 10.0,
                ms * 1000.0,
                c,
            );
            b.runtime("cudaDeviceSynchronize", 0, t + 11.0, ms * 1000.0);
            b.annotation(&format!("ProfilerStep#{s}"), t, ms * 1000.0 + 15.0);
            t += ms * 1000.0 + 20.0;
        }
        b.build()
    }

    #[test]
    fn memory_bound_softmax() {
        // 2 × 4 GiB at 3.35 TB/s = 2.56 ms on the datasheet, 3.21 ms at the attainable 80 %
        // of it; it takes 10 ms
        let d = run(&softmax_trace(10.0));
        let m = find(&d, "memory-bound").expect("memory-bound");
        let ideal = 2.0 * 64.0 * 16.0 * 1024.0 * 1024.0 * 4.0 / 3350e9 * 1e6;
        let attainable = ideal / 0.8;
        assert!(
            (m.recoverable_us - (10_000.0 - attainable)).abs() < 1.0,
            "{} vs {}",
            m.recoverable_us,
            10_000.0 - attainable
        );
        assert!(
            (m.evidence.metrics["gap_to_datasheet_roofline_us_per_step"] - (10_000.0 - ideal))
                .abs()
                < 1.0
        );
        let gbs = m.evidence.metrics["aten::softmax/achieved_gbs"];
        assert!(
            (gbs - 2.0 * 4.0 * 1024.0 * 1024.0 * 1024.0 / 10e6).abs() < 1.0,
            "{gbs}"
        );
        assert!(find(&d, "compute-bound").is_none());
        // at the attainable roofline already (above the datasheet's): silent
        let d = run(&softmax_trace(attainable / 1000.0 * 1.001));
        assert!(
            find(&d, "memory-bound").is_none(),
            "{:?}",
            d.findings.iter().map(|f| f.id).collect::<Vec<_>>()
        );
    }

    #[test]
    fn compute_bound_gemm() {
        // bf16 GEMM 8192³ on an H100: 1.1 TFLOP, 1.11 ms at 989 TFLOP/s; it takes 4 ms
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100 80GB HBM3", 132, 80 << 30);
        let mut t = 0.0;
        for s in 0..2 {
            let ext = b.op("aten::mm", t, 10.0);
            b.shapes(
                ext,
                "[[8192, 8192], [8192, 8192]]",
                "[\"c10::BFloat16\", \"c10::BFloat16\"]",
                "[\"\", \"\"]",
            );
            let c = b.runtime("cudaLaunchKernel", ext, t + 2.0, 5.0);
            b.gpu(
                GpuKind::Kernel,
                "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n",
                0,
                7,
                t + 10.0,
                4000.0,
                c,
            );
            b.runtime("cudaDeviceSynchronize", 0, t + 11.0, 4000.0);
            b.annotation(&format!("ProfilerStep#{s}"), t, 4015.0);
            t += 4020.0;
        }
        let d = run(&b.build());
        let c = find(&d, "compute-bound").expect("compute-bound");
        let flops = 2.0 * 8192f64.powi(3);
        // attainable: 60 % of the dense peak, 1.85 ms
        let ideal = flops / (0.6 * 989.4e12) * 1e6;
        assert!(
            (c.recoverable_us - (4000.0 - ideal)).abs() < 1.0,
            "{}",
            c.recoverable_us
        );
        let tf = c.evidence.metrics["aten::mm/achieved_tflops"];
        assert!((tf - flops / 4e-3 / 1e12).abs() < 0.01, "{tf}");
        assert!(c
            .evidence
            .facts
            .iter()
            .any(|x| x.contains("[[8192, 8192], [8192, 8192]]")));
    }

    #[test]
    fn compact_layout() {
        assert_eq!(
            super::compact("[\n  [\n    16,\n    559\n  ],\n  []\n]"),
            "[[16, 559], []]"
        );
    }

    #[test]
    fn no_shapes_no_roofline() {
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100 80GB HBM3", 132, 80 << 30);
        b.op_with_kernel("aten::mm", "sm90_gemm_bf16", 0.0, 10.0, 5.0, 4000.0);
        let d = run(&b.build());
        assert!(find(&d, "compute-bound").is_none() && find(&d, "memory-bound").is_none());
    }
}
