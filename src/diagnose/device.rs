//! Device-side rules: the kernels themselves are slow. Each kernel instance is claimed by at
//! most one rule ([`Claims`]), in this order: `fallback-kernel`, `fp32-matmul`,
//! `small-kernels`, the roofline rules, then `low-occupancy` (which claims only the launches
//! its bound counts: grids smaller than the GPU). Every bound is capped by the
//! host's wait for the device ([`Facts::device_slack_us`]).

use crate::model::fast::{HashMap, NameMemo};

use super::claims::{cap, Claims, CAP_BASIS};
use super::roofline::{ATTAINABLE_BANDWIDTH, ATTAINABLE_COMPUTE};
use super::{
    count, fmt_ns, fmt_us_sentence, metric, pct, short, Evidence, Facts, Finding, Severity,
};
use crate::analysis::devices_db::{self, DeviceSpec};
use crate::analysis::roofline::CostKind;
use crate::model::classify::{self, KernelCategory, Precision};
use crate::model::{CpuKind, NameId, Ns, Trace, NONE};

/// Share of kernel time in fallback kernels above which `fallback-kernel` fires.
pub const FALLBACK_SHARE: f64 = 0.01;
/// Share of kernel time in FP32 GEMM/conv kernels above which `fp32-matmul` fires.
pub const FP32_SHARE: f64 = 0.05;
/// Kernels shorter than this are "small" (ns; nsys-ai's launch-overhead cut-off).
pub const SMALL_KERNEL: Ns = 10_000;
/// Small elementwise/reduction kernels per step above which `small-kernels` fires.
pub const SMALL_PER_STEP: u64 = 100;
/// Duration-weighted achieved occupancy (percent) under which a kernel counts as low.
pub const LOW_OCCUPANCY_PCT: f64 = 30.0;
/// Share of kernel time in low-occupancy kernels above which `low-occupancy` fires.
pub const LOW_OCCUPANCY_SHARE: f64 = 0.10;

/// All device-side findings.
pub fn rules(f: &Facts, claims: &mut Claims) -> Vec<Finding> {
    let mut tt = crate::timings::Timings::nested();
    let mut out = Vec::new();
    out.extend(claims.give_back(|c| fallback_kernel(f, c)));
    tt.lap("diagnose: fallback-kernel");
    out.extend(claims.give_back(|c| fp32_matmul(f, c)));
    tt.lap("diagnose: fp32-matmul");
    out.extend(claims.give_back(|c| small_kernels(f, c)));
    tt.lap("diagnose: small-kernels");
    out
}

/// `low-occupancy` runs after the roofline rules (their bound is tighter where shapes exist).
pub fn late_rules(f: &Facts, claims: &mut Claims) -> Vec<Finding> {
    claims
        .give_back(|c| low_occupancy(f, c))
        .into_iter()
        .collect()
}

/// Operator names that are PyTorch's slow (non-vendor) fallbacks.
pub fn is_fallback_op(name: &str) -> bool {
    name.starts_with("aten::slow_")
        || name.starts_with("aten::_slow_")
        || name.starts_with("aten::thnn_conv")
}

/// Kernel names of the fallback lowering (unfold into columns, then GEMM).
pub fn is_fallback_kernel(name: &str) -> bool {
    ["vol2col", "im2col", "col2vol", "col2im", "slow_conv"]
        .iter()
        .any(|p| name.contains(p))
}

fn op_name<'a>(f: &'a Facts<'a>, gi: u32) -> Option<&'a str> {
    op_name_id(f, gi).map(|n| f.trace.name(n))
}

/// Name of the operator that launched a device activity, if any.
fn op_name_id(f: &Facts, gi: u32) -> Option<NameId> {
    f.trace
        .owner_op_of(&f.trace.gpu[gi as usize])
        .map(|o| f.trace.cpu[o as usize].name)
}

/// Totals per launching operator ([`op_name_id`]) as totals per name, `(no operator)` for
/// kernels without one: counted by id in the loops, named once.
fn by_op_name<V: Copy + Default + std::ops::AddAssign>(
    trace: &Trace,
    by_id: HashMap<Option<NameId>, V>,
) -> Vec<(String, V)> {
    let mut by_name: HashMap<&str, V> = HashMap::default();
    for (id, v) in by_id {
        *by_name
            .entry(id.map_or("(no operator)", |n| trace.name(n)))
            .or_default() += v;
    }
    by_name
        .into_iter()
        .map(|(n, v)| (n.to_string(), v))
        .collect()
}

fn fallback_kernel(f: &Facts, claims: &mut Claims) -> Option<Finding> {
    let trace = f.trace;
    // the names first (far fewer than the events): no fallback operator or kernel name in the
    // trace, no walk over its events
    let (mut any_op, mut any_kernel) = (false, false);
    for (_, n) in trace.names.iter() {
        any_op |= is_fallback_op(n);
        any_kernel |= is_fallback_kernel(n);
    }
    if !any_op && !any_kernel {
        return None;
    }
    // outermost fallback operators per thread, sorted by start
    let mut ops: HashMap<u32, Vec<(Ns, Ns, u32)>> = HashMap::default();
    let mut fallback_op = NameMemo::new(trace, is_fallback_op);
    let mut fallback_kernel = NameMemo::new(trace, is_fallback_kernel);
    if any_op {
        for (i, e) in trace.cpu.iter().enumerate() {
            if e.kind == CpuKind::Op && fallback_op.get(e.name) {
                let v = ops.entry(e.thread).or_default();
                if v.last().is_some_and(|&(_, end, _)| e.start < end) {
                    continue; // nested in the previous one
                }
                v.push((e.start, e.end(), i as u32));
            }
        }
    }
    let mut by_op: HashMap<String, (u64, Ns, u32)> = HashMap::default(); // calls, time, first op
    let mut by_kernel: HashMap<NameId, Ns> = HashMap::default();
    let mut seen_ops: Vec<u32> = Vec::new();
    let mut total: Ns = 0;
    let kernels = claims.kernels.clone();
    for gi in kernels {
        if !claims.free(gi) {
            continue;
        }
        let g = &trace.gpu[gi as usize];
        let mut owner: Option<u32> = None;
        if g.launch != NONE {
            let l = &trace.cpu[g.launch as usize];
            if let Some(v) = ops.get(&l.thread) {
                let k = v.partition_point(|&(s, _, _)| s <= l.start);
                if k > 0 && l.end() <= v[k - 1].1 {
                    owner = Some(v[k - 1].2);
                }
            }
        }
        let by_name = fallback_kernel.get(g.name);
        if owner.is_none() && !by_name {
            continue;
        }
        claims.take(gi);
        total += g.dur;
        *by_kernel.entry(g.name).or_default() += g.dur;
        let (label, first) = match owner {
            Some(o) => (trace.name(trace.cpu[o as usize].name).to_string(), o),
            None => (
                op_name(f, gi).unwrap_or("(no operator)").to_string(),
                trace.owner_op_of(g).unwrap_or(NONE),
            ),
        };
        let x = by_op.entry(label).or_insert((0, 0, first));
        x.1 += g.dur;
        if let Some(o) = owner {
            if !seen_ops.contains(&o) {
                seen_ops.push(o);
                x.0 += 1;
            }
        }
    }
    let kt = claims.kernel_time;
    if total == 0 || kt == 0 || (total as f64) < FALLBACK_SHARE * kt as f64 {
        return None;
    }
    let share = total as f64 / kt as f64;
    let mut e = Evidence::default();
    e.facts.push(format!(
        "{} per step in PyTorch's fallback convolution path = {} of kernel time",
        fmt_us_sentence(f.per_step_us(total)),
        pct(share)
    ));
    let mut ops_v: Vec<(String, (u64, Ns, u32))> = by_op.into_iter().collect();
    ops_v.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then(a.0.cmp(&b.0)));
    let mut names: Vec<String> = Vec::new();
    for (name, (calls, t, first)) in ops_v.iter().take(4) {
        e.facts.push(format!(
            "{}: {} calls, {} on the device ({} of kernel time)",
            name,
            count(*calls),
            fmt_ns(*t as f64),
            pct(*t as f64 / kt as f64)
        ));
        if *first != NONE {
            let c = &trace.cpu[*first as usize];
            e.locations.push(f.location("op", name, c.start, c.dur));
        }
        names.push(name.clone());
    }
    let mut ks: Vec<(NameId, Ns)> = by_kernel.into_iter().collect();
    ks.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let lowering: Ns = ks
        .iter()
        .filter(|(n, _)| is_fallback_kernel(trace.name(*n)))
        .map(|x| x.1)
        .sum();
    for (n, t) in ks.iter().take(4) {
        e.facts.push(format!(
            "  kernel {}: {}",
            short(trace.name(*n), 90),
            fmt_ns(*t as f64)
        ));
    }
    if lowering > 0 {
        e.facts.push(format!(
            "of which {} in column lowering (vol2col/im2col and inverses): pure overhead that \
             an implicit-GEMM vendor kernel does not pay",
            fmt_ns(lowering as f64)
        ));
    }
    if let Some(shapes) = super::roofline::shapes_of_ops(f, &names, 3) {
        for s in shapes {
            e.facts.push(s);
        }
    }
    metric(&mut e, "fallback_us_per_step", f.per_step_us(total));
    metric(&mut e, "fallback_share_of_kernel_time", share);
    metric(&mut e, "lowering_us_per_step", f.per_step_us(lowering));
    let raw = f.per_step_us(total);
    let rec = cap(f, raw, &mut e);
    let dilated = names.iter().any(|n| n.contains("dilated"));
    let mut advice = vec![
        "cuDNN/MIOpen declined these convolutions and PyTorch fell back to im2col/vol2col + \
         GEMM. Check what blocks the vendor path: `torch.backends.cudnn.enabled` must be \
         True; float64 inputs are not supported; an input or weight over 2^31 elements \
         exceeds cuDNN's 32-bit indexing (split the batch or the time axis, e.g. decode in \
         chunks)."
            .to_string(),
        "Use a supported memory format and dtype: `x = x.contiguous(memory_format=\
         torch.channels_last_3d)` (or `channels_last` for 2D) with the module converted the \
         same way, in fp16/bf16 under `torch.autocast`."
            .into(),
    ];
    if dilated {
        advice.push(
            "Dilated 3D convolutions: check the dilation/padding/groups combination against \
             cuDNN's support for your version (`torch.backends.cudnn.version()`); an \
             equivalent formulation (e.g. dilation folded into a strided reshape, or a \
             Triton/`torch.compile` convolution) avoids the fallback."
                .into(),
        );
    }
    advice.push(
        "Confirm in a micro-benchmark with `torch.profiler`: the op should dispatch to \
         `aten::cudnn_convolution` (or `miopen_convolution`), not `aten::slow_conv*`."
            .into(),
    );
    Some(Finding {
        id: "fallback-kernel",
        severity: f.severity(rec),
        title: format!(
            "Slow fallback convolution ({}) takes {} of kernel time",
            names.first().map(|s| s.as_str()).unwrap_or("slow_conv"),
            pct(share)
        ),
        recoverable_us: rec,
        recoverable_basis: format!(
            "device time of the fallback operators' kernels per step (a vendor kernel still \
             needs some of it, so this is an upper bound); {CAP_BASIS}"
        ),
        evidence: e,
        advice,
    })
}

fn is_fp64(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    ["dgemm", "double", "f64", "fp64", "zgemm", "d884"]
        .iter()
        .any(|p| l.contains(p))
}

/// What [`fp32_matmul`] found among the free GEMM/convolution kernels that ran without tensor
/// cores on a device that has them: the FP32 ones (taken from the claims), the time a faster
/// path would save, and the evidence of FP32 and of what was left out.
#[derive(Default)]
struct Fp32Scan {
    /// Device time of the FP32 kernels taken.
    total: Ns,
    /// Time saved under bf16/fp16 autocast (the whole time on a device without peaks), ns.
    raw_ns: f64,
    /// Time saved with TF32 alone, ns.
    tf32_ns: f64,
    /// Time of kernels whose call has known FLOPs (bounded by the roofline).
    bounded_ns: Ns,
    /// Calls and time per kernel name.
    by_kernel: HashMap<NameId, (u64, Ns)>,
    /// Time per launching operator.
    by_op: HashMap<Option<NameId>, Ns>,
    /// The peaks used (the last device with a spec).
    spec_used: Option<&'static DeviceSpec>,
    /// Some kernel ran on a device not in the peak table.
    any_unknown: bool,
    /// Time with FP32 evidence in the kernel name.
    by_name_evidence: Ns,
    /// Time with FP32 evidence only in the operator's input types.
    by_types_evidence: Ns,
    /// Time left out for want of any dtype evidence.
    no_evidence: Ns,
    /// The kernel-name fragments that said FP32.
    name_fragments: Vec<&'static str>,
    /// Time left out as low precision, by precision.
    low_precision: std::collections::BTreeMap<&'static str, Ns>,
}

/// FLOPs and bytes of the GEMM/convolution kernels whose call has known FLOPs (a call's cost
/// spread over its kernels by time): the faster path is bounded by the attainable roofline,
/// not only by the kernels' present efficiency.
fn fp32_work(trace: &Trace, claims: &Claims) -> HashMap<u32, (f64, f64)> {
    let mut work: HashMap<u32, (f64, f64)> = HashMap::default();
    for p in claims.points {
        if p.time > 0 && matches!(p.cost.kind, CostKind::Gemm | CostKind::Conv) {
            for &k in &p.kernels {
                let w = trace.gpu[k as usize].dur as f64 / p.time as f64;
                work.insert(k, (p.cost.flops * w, p.cost.bytes * w));
            }
        }
    }
    work
}

/// Takes the free GEMM/convolution kernels without tensor cores on a device that has them
/// whose name or operator input types say FP32, and sums what a faster path would save.
fn fp32_scan(f: &Facts, claims: &mut Claims) -> Fp32Scan {
    let trace = f.trace;
    let mut specs: HashMap<i32, (Option<bool>, Option<&'static DeviceSpec>)> = HashMap::default();
    let mut fp64 = NameMemo::new(trace, is_fp64);
    let mut name_prec = NameMemo::new(trace, classify::name_precision);
    let mut types_prec: HashMap<NameId, Option<Precision>> = HashMap::default();
    let work = fp32_work(trace, claims);
    let mut x = Fp32Scan::default();
    for k in 0..claims.kernels.len() {
        crate::model::fast::prefetch_launches(trace, &claims.kernels, k);
        let gi = claims.kernels[k];
        if !claims.free(gi) {
            continue;
        }
        let g = &trace.gpu[gi as usize];
        let (cat, tc) = claims.class(g.name);
        if tc || !matches!(cat, KernelCategory::Gemm | KernelCategory::Conv) {
            continue;
        }
        let (has_tc, spec) = *specs.entry(g.device).or_insert_with(|| {
            trace
                .device(g.device as i64)
                .map(|d| (devices_db::has_tensor_cores(d), devices_db::lookup(d)))
                .unwrap_or((None, None))
        });
        if has_tc != Some(true) || fp64.get(g.name) {
            continue;
        }
        // FP32 only on evidence: the kernel name, else the operator's recorded input types
        let owner_at = trace.owner_op_of(g);
        let owner = owner_at.map(|o| &trace.cpu[o as usize]);
        let types = owner_at
            .and_then(|o| trace.op_shape_at(o as usize))
            .and_then(|s| {
                *types_prec
                    .entry(s.types)
                    .or_insert_with(|| classify::types_precision(trace.name(s.types)))
            });
        match (name_prec.get(g.name), types) {
            (Some(Precision::Low(p)), _) | (_, Some(Precision::Low(p))) => {
                *x.low_precision.entry(p).or_default() += g.dur;
                continue;
            }
            (Some(Precision::Fp32(frag)), _) => {
                x.by_name_evidence += g.dur;
                if !x.name_fragments.contains(&frag) {
                    x.name_fragments.push(frag);
                }
            }
            (None, Some(Precision::Fp32(_))) => x.by_types_evidence += g.dur,
            (None, None) => {
                x.no_evidence += g.dur;
                continue;
            }
        }
        claims.take(gi);
        x.total += g.dur;
        match spec.and_then(|s| s.fp32_matmul_target().map(|p| (s, p))) {
            Some((s, peak)) => {
                // the same kernels at the same efficiency on the faster path, but never above
                // the attainable roofline (a sixth of the time at most is left otherwise)
                let dur = g.dur as f64;
                let known = work.get(&gi).copied();
                let floor = |pk: f64, elem: f64| match known {
                    Some((fl, by)) => (fl / (pk * 1e12 * ATTAINABLE_COMPUTE) * 1e9)
                        .max(by * elem / (s.mem_bw * 1e9 * ATTAINABLE_BANDWIDTH) * 1e9),
                    None => 0.0,
                };
                if known.is_some() {
                    x.bounded_ns += g.dur;
                }
                x.raw_ns += (dur - (dur * s.fp32 / peak).max(floor(peak, 0.5))).max(0.0);
                if let Some(t) = s.tf32_faster() {
                    x.tf32_ns += (dur - (dur * s.fp32 / t).max(floor(t, 1.0))).max(0.0);
                }
                x.spec_used = Some(s);
            }
            None => {
                x.raw_ns += g.dur as f64;
                x.any_unknown = true;
            }
        }
        let k = x.by_kernel.entry(g.name).or_default();
        k.0 += 1;
        k.1 += g.dur;
        *x.by_op.entry(owner.map(|o| o.name)).or_default() += g.dur;
    }
    x
}

fn fp32_matmul(f: &Facts, claims: &mut Claims) -> Option<Finding> {
    let trace = f.trace;
    let Fp32Scan {
        total,
        raw_ns,
        tf32_ns,
        bounded_ns,
        by_kernel,
        by_op,
        spec_used,
        any_unknown,
        by_name_evidence,
        by_types_evidence,
        no_evidence,
        name_fragments,
        low_precision,
    } = fp32_scan(f, claims);
    let kt = claims.kernel_time;
    if total == 0 || kt == 0 || (total as f64) < FP32_SHARE * kt as f64 {
        return None;
    }
    let share = total as f64 / kt as f64;
    let mut e = Evidence::default();
    e.facts.push(format!(
        "{} per step in GEMM/convolution kernels that do not use tensor cores = {} of kernel \
         time, on a device that has them",
        fmt_us_sentence(f.per_step_us(total)),
        pct(share)
    ));
    for d in &f.a.devices {
        if let Some(r) = d.tensor_core_ratio {
            e.facts.push(format!(
                "GPU {} ({}): {} of kernel time on tensor cores",
                d.device,
                if d.name.is_empty() {
                    "unnamed"
                } else {
                    &d.name
                },
                pct(r)
            ));
        }
    }
    let mut ks: Vec<(NameId, (u64, Ns))> = by_kernel.into_iter().collect();
    ks.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then(a.0.cmp(&b.0)));
    for (n, (c, t)) in ks.iter().take(5) {
        e.facts.push(format!(
            "  {} ×{}: {}",
            short(trace.name(*n), 90),
            count(*c),
            fmt_ns(*t as f64)
        ));
    }
    let mut os = by_op_name(trace, by_op);
    os.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let ops: Vec<String> = os
        .iter()
        .take(5)
        .map(|(n, t)| format!("{} {}", n, fmt_ns(*t as f64)))
        .collect();
    e.facts.push(format!("launched by: {}", ops.join(", ")));
    let mut evidence = Vec::new();
    if by_name_evidence > 0 {
        evidence.push(format!(
            "the kernel name ({}) for {}",
            name_fragments
                .iter()
                .map(|x| format!("`{x}`"))
                .collect::<Vec<_>>()
                .join(", "),
            fmt_ns(by_name_evidence as f64)
        ));
    }
    if by_types_evidence > 0 {
        evidence.push(format!(
            "the operator's recorded input types (`float`) for {}",
            fmt_ns(by_types_evidence as f64)
        ));
    }
    e.facts
        .push(format!("FP32 evidence: {}", evidence.join("; ")));
    if !low_precision.is_empty() {
        e.facts.push(format!(
            "not counted: {} in GEMM/convolution kernels without tensor cores whose name or \
             inputs say {} (not FP32 matmuls: GEMV kernels do not use tensor cores, and need \
             not)",
            fmt_ns(low_precision.values().sum::<Ns>() as f64),
            low_precision.keys().copied().collect::<Vec<_>>().join("/")
        ));
    }
    if no_evidence > 0 {
        e.facts.push(format!(
            "not counted: {} in such kernels with no dtype in their name and no recorded input \
             types (profile with `record_shapes=True` to tell)",
            fmt_ns(no_evidence as f64)
        ));
    }
    metric(
        &mut e,
        "fp32_evidence_name_us_per_step",
        f.per_step_us(by_name_evidence),
    );
    metric(
        &mut e,
        "fp32_evidence_input_types_us_per_step",
        f.per_step_us(by_types_evidence),
    );
    if let Some(&(n, _)) = ks.first() {
        if let Some(&gi) = claims
            .kernels
            .iter()
            .find(|&&gi| trace.gpu[gi as usize].name == n)
        {
            let g = &trace.gpu[gi as usize];
            e.locations
                .push(f.location("kernel", trace.name(n), g.start, g.dur));
        }
    }
    let tf32 = spec_used.and_then(|s| s.tf32_faster()).is_some();
    if let Some(s) = spec_used {
        e.facts.push(format!(
            "{} peaks: FP32 {} TFLOP/s, BF16/FP16 tensor (FP32 accumulate) {} TFLOP/s, TF32 {}",
            s.name,
            s.fp32,
            s.fp16.unwrap_or(0.0),
            match (s.tf32, s.tf32_faster()) {
                (Some(t), Some(_)) => format!("{t} TFLOP/s"),
                (Some(t), None) => format!("{t} TFLOP/s, no faster than FP32: no TF32 advice"),
                (None, _) => "not supported".to_string(),
            }
        ));
        if tf32 {
            e.facts.push(format!(
                "with TF32 alone (inputs unchanged): {} per step",
                fmt_us_sentence(tf32_ns / f.n_steps as f64 / 1000.0)
            ));
            metric(
                &mut e,
                "tf32_gain_us_per_step",
                tf32_ns / f.n_steps as f64 / 1000.0,
            );
        }
        if bounded_ns > 0 {
            e.facts.push(format!(
                "{} of it with known FLOPs: bounded by the attainable roofline ({:.0}% of the \
                 tensor peak, {:.0}% of the bandwidth with half the bytes)",
                fmt_ns(bounded_ns as f64),
                ATTAINABLE_COMPUTE * 100.0,
                ATTAINABLE_BANDWIDTH * 100.0
            ));
        }
    }
    metric(&mut e, "fp32_gemm_us_per_step", f.per_step_us(total));
    metric(&mut e, "fp32_gemm_share_of_kernel_time", share);
    let raw = raw_ns / f.n_steps as f64 / 1000.0;
    let rec = cap(f, raw, &mut e);
    let mut advice = Vec::new();
    if tf32 || spec_used.is_none() {
        advice.push(
            "Allow TF32 tensor cores for FP32 matmuls: `torch.set_float32_matmul_precision(\"high\")` \
             (and `torch.backends.cudnn.allow_tf32 = True` for convolutions, the default)."
                .to_string(),
        );
    }
    advice.push(
        "Run in mixed precision: `with torch.autocast(device_type=\"cuda\", dtype=torch.bfloat16):` \
         (bf16 on Ampere/Hopper/MI200 and later; on Volta/Turing use `dtype=torch.float16` with \
         `torch.amp.GradScaler` for training)."
            .into(),
    );
    advice.push(
        "For convolutions also use channels-last (`model.to(memory_format=torch.channels_last)`) \
         so cuDNN picks tensor-core kernels; keep GEMM dimensions multiples of 8."
            .into(),
    );
    Some(Finding {
        id: "fp32-matmul",
        severity: f.severity(rec),
        title: format!(
            "FP32 GEMMs/convolutions without tensor cores: {} of kernel time",
            pct(share)
        ),
        recoverable_us: rec,
        recoverable_basis: if any_unknown {
            format!(
                "their device time per step (device not in the peak table: whole time as \
                 the bound); {CAP_BASIS}"
            )
        } else {
            format!(
                "their device time × (1 − FP32 peak ÷ BF16/FP16 tensor peak at FP32 accumulate) \
                 per step, i.e. the same kernels at the same efficiency under bf16/fp16 autocast, \
                 never faster than the attainable roofline where their FLOPs are known; \
                 {CAP_BASIS}"
            )
        },
        evidence: e,
        advice,
    })
}

/// A short label for a kernel name: the kernel function and its functor.
pub fn kernel_label(name: &str) -> String {
    let cleaned = name.replace("(anonymous namespace)::", "");
    let name = cleaned.as_str();
    let base_end = name.find(['<', '(']).unwrap_or(name.len());
    let base = name[..base_end]
        .trim_start_matches("void ")
        .rsplit("::")
        .next()
        .unwrap_or(name)
        .trim();
    let rest = &name[base_end..];
    let functor = ["Functor_", "_kernel_cuda", "Functor"]
        .iter()
        .find_map(|p| {
            let i = rest.find(p)?;
            let start = rest[..i]
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map(|j| j + 1)
                .unwrap_or(0);
            let end = i
                + p.len()
                + rest[i + p.len()..]
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len() - i - p.len());
            let s = &rest[start..end];
            (!s.is_empty()).then(|| s.to_string())
        });
    match functor {
        _ if base.is_empty() => short(name, 60),
        Some(fu) => format!("{base}[{fu}]"),
        None => short(base, 60),
    }
}

fn small_kernels(f: &Facts, claims: &mut Claims) -> Option<Finding> {
    let trace = f.trace;
    let is_small = |claims: &mut Claims, gi: u32| {
        let g = &trace.gpu[gi as usize];
        let (cat, _) = claims.class(g.name);
        g.dur < SMALL_KERNEL
            && claims.free(gi)
            && matches!(
                cat,
                KernelCategory::Elementwise | KernelCategory::Reduction | KernelCategory::Norm
            )
    };
    // runs per (device, stream) in start order (few streams: a list, the last one used first,
    // not a hash per kernel)
    let mut streams: Vec<((i32, i64), Vec<u32>)> = Vec::new();
    let mut last = usize::MAX;
    for &gi in &claims.kernels {
        let g = &trace.gpu[gi as usize];
        let key = (g.device, g.stream as i64);
        if streams.get(last).is_none_or(|s| s.0 != key) {
            last = match streams.iter().position(|s| s.0 == key) {
                Some(k) => k,
                None => {
                    streams.push((key, Vec::new()));
                    streams.len() - 1
                }
            };
        }
        streams[last].1.push(gi);
    }
    streams.sort_unstable_by_key(|s| s.0);
    let mut small_count: u64 = 0;
    let mut small_time: Ns = 0;
    let mut saved: Ns = 0;
    let mut runs: u64 = 0;
    // a run's first four kernel names (unused places `NameId(u32::MAX)`): a key without an
    // allocation per run
    let mut seqs: HashMap<[NameId; 4], (u64, u32, u32)> = HashMap::default();
    let mut by_op: HashMap<Option<NameId>, u64> = HashMap::default();
    let mut run: Vec<u32> = Vec::new();
    for (_, list) in &streams {
        let mut flush = |run: &mut Vec<u32>, claims: &mut Claims| {
            if run.len() >= 2 {
                let (mut sum, mut max) = (0, 0);
                for &i in run.iter() {
                    let d = trace.gpu[i as usize].dur;
                    sum += d;
                    max = max.max(d);
                }
                saved += sum - max;
                runs += 1;
                let mut key = [NameId(u32::MAX); 4];
                for (k, &i) in key.iter_mut().zip(run.iter()) {
                    *k = trace.gpu[i as usize].name;
                }
                let last = run[run.len() - 1];
                let x = seqs.entry(key).or_insert((0, run[0], last));
                x.0 += 1;
                for &i in run.iter() {
                    claims.take(i);
                }
            }
            run.clear();
        };
        for (k, &gi) in list.iter().enumerate() {
            crate::model::fast::prefetch_launches(trace, list, k);
            if is_small(claims, gi) {
                small_count += 1;
                small_time += trace.gpu[gi as usize].dur;
                *by_op.entry(op_name_id(f, gi)).or_default() += 1;
                run.push(gi);
            } else {
                flush(&mut run, claims);
            }
        }
        flush(&mut run, claims);
    }
    let per_step = small_count / f.n_steps as u64;
    if per_step < SMALL_PER_STEP || saved == 0 {
        return None;
    }
    let mut e = Evidence::default();
    e.facts.push(format!(
        "{} elementwise/reduction/norm kernels under {} per step ({} of kernel time), {} runs \
         of 2 or more back to back on a stream",
        count(per_step),
        fmt_ns(SMALL_KERNEL as f64),
        pct(small_time as f64 / claims.kernel_time.max(1) as f64),
        count(runs)
    ));
    let mut sv: Vec<([NameId; 4], (u64, u32, u32))> = seqs.into_iter().collect();
    sv.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.1 .1.cmp(&b.1 .1)));
    for (key, (c, first, last)) in sv.iter().take(3) {
        let labels: Vec<String> = key
            .iter()
            .take_while(|n| n.0 != u32::MAX)
            .map(|n| kernel_label(trace.name(*n)))
            .collect();
        e.facts
            .push(format!("  {}× {}", count(*c), labels.join(" → ")));
        let g = &trace.gpu[*first as usize];
        let end = trace.gpu[*last as usize].end();
        e.locations.push(f.location(
            "kernel sequence",
            &labels.join(" → "),
            g.start,
            end - g.start,
        ));
    }
    let mut ov = by_op_name(trace, by_op);
    ov.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let ops: Vec<String> = ov
        .iter()
        .take(5)
        .map(|(n, c)| format!("{} ×{}", n, count(*c)))
        .collect();
    e.facts.push(format!("launched by: {}", ops.join(", ")));
    metric(&mut e, "small_kernels_per_step", per_step as f64);
    metric(
        &mut e,
        "small_kernel_us_per_step",
        f.per_step_us(small_time),
    );
    metric(&mut e, "runs", runs as f64);
    let raw = f.per_step_us(saved);
    let rec = cap(f, raw, &mut e);
    let optimizer = ov
        .iter()
        .take(5)
        .any(|(n, _)| n.contains("_foreach") || n.contains("Optimizer") || n.ends_with("_"));
    let mut advice = vec![
        "Fuse the chains with `torch.compile(model)`: Inductor generates one kernel per \
         pointwise/reduction chain (and `mode=\"max-autotune-no-cudagraphs\"` tunes them)."
            .to_string(),
    ];
    if optimizer {
        advice.push(
            "Use a fused optimizer: `torch.optim.AdamW(params, fused=True)` (or \
             `foreach=True`), one kernel for all parameters instead of several per tensor."
                .into(),
        );
    }
    advice.push(
        "Use fused building blocks: `F.scaled_dot_product_attention`, fused LayerNorm/RMSNorm, \
         `torch.addcmul`/`torch.lerp` instead of chains of elementwise ops."
            .into(),
    );
    Some(Finding {
        id: "small-kernels",
        severity: f.severity(rec),
        title: format!(
            "{} small elementwise/reduction kernels per step: a fusion opportunity",
            count(per_step)
        ),
        recoverable_us: rec,
        recoverable_basis: format!(
            "per run of consecutive small kernels on a stream, its device time minus its \
             longest kernel (one fused kernel takes at least that long), per step; their \
             launch gaps belong to launch-bound; {CAP_BASIS}"
        ),
        evidence: e,
        advice,
    })
}

/// Share of its roofline time above which an operator's kernels are "near the roofline":
/// more occupancy cannot make them much faster.
pub const NEAR_ROOFLINE: f64 = 0.5;

/// Why a kernel runs at low occupancy by design, if its name says (communication, persistent
/// kernels, flash-attention decoding).
pub fn low_occupancy_by_design(name: &str, category: KernelCategory) -> Option<&'static str> {
    let l = name.to_ascii_lowercase();
    if category == KernelCategory::Communication {
        Some("communication")
    } else if l.contains("persistent") {
        Some("persistent kernel")
    } else if category == KernelCategory::Attention
        && [
            "splitkv",
            "split_kv",
            "decode",
            "paged_attention",
            "flashdecoding",
        ]
        .iter()
        .any(|p| l.contains(p))
    {
        Some("flash-attention decode")
    } else {
        None
    }
}

fn low_occupancy(f: &Facts, claims: &mut Claims) -> Option<Finding> {
    let trace = f.trace;
    let kt: Ns = f.a.kernels.iter().map(|k| k.total).sum();
    if kt == 0 {
        return None;
    }
    // 0 is what Kineto writes when the estimate failed (cluster/TMA kernels)
    let candidates = f.a.kernels.iter().filter(|k| {
        k.occupancy_pct
            .is_some_and(|o| o > 0.0 && o < LOW_OCCUPANCY_PCT)
            && k.total as f64 >= 0.01 * kt as f64
    });
    // by-design families are leads for nobody: named in the evidence only
    let (by_design, low): (Vec<_>, Vec<_>) =
        candidates.partition(|k| low_occupancy_by_design(&k.name, k.category).is_some());
    let by_design_time: Ns = by_design.iter().map(|k| k.total).sum();
    // launches whose operator already runs near its roofline: occupancy is not what limits them
    let mut near = vec![false; trace.gpu.len()];
    if !low.is_empty() {
        for p in claims.points {
            if p.time > 0 && p.ideal >= NEAR_ROOFLINE * p.time as f64 {
                for &k in &p.kernels {
                    near[k as usize] = true;
                }
            }
        }
    }
    let low_time: Ns = low.iter().map(|k| k.total).sum();
    if (low_time as f64) < LOW_OCCUPANCY_SHARE * kt as f64 {
        return None;
    }
    let names: HashMap<&str, usize> = low
        .iter()
        .enumerate()
        .map(|(i, k)| (k.name.as_str(), i))
        .collect();
    let mut row_of = NameMemo::new(trace, |n: &str| names.get(n).copied());
    let mut raw_ns: f64 = 0.0;
    let mut underfilled: Ns = 0;
    let mut near_time: Ns = 0;
    let mut first: Vec<Option<u32>> = vec![None; low.len()];
    let kernels = claims.kernels.clone();
    for gi in kernels {
        let g = &trace.gpu[gi as usize];
        let Some(i) = row_of.get(g.name) else {
            continue;
        };
        if first[i].is_none() {
            first[i] = Some(gi);
        }
        if !claims.free(gi) {
            continue;
        }
        if near[gi as usize] {
            near_time += g.dur;
            continue;
        }
        let b = trace.kernel_info(g).blocks_per_sm as f64;
        if b.is_finite() && b > 0.0 && b < 1.0 {
            claims.take(gi);
            raw_ns += g.dur as f64 * (1.0 - b);
            underfilled += g.dur;
        }
    }
    let mut e = Evidence::default();
    e.facts.push(format!(
        "{} of kernel time in kernels with estimated achieved occupancy under {:.0}%",
        pct(low_time as f64 / kt as f64),
        LOW_OCCUPANCY_PCT
    ));
    let mut reg_limited = false;
    let mut small_grid = false;
    for (i, k) in low.iter().take(6).enumerate() {
        let mut detail = String::new();
        if let Some(gi) = first[i] {
            let g = &trace.gpu[gi as usize];
            let info = trace.kernel_info(g);
            if info.registers > 0 {
                detail.push_str(&format!(", {} registers/thread", info.registers));
                reg_limited |= info.registers >= 128;
            }
            let block = info.block;
            if block[0] > 0 {
                detail.push_str(&format!(
                    ", block {}",
                    block[0] as u64 * block[1].max(1) as u64 * block[2].max(1) as u64
                ));
            }
            if info.shared_mem > 0 {
                detail.push_str(&format!(", {} B shared", count(info.shared_mem as u64)));
            }
            e.locations
                .push(f.location("kernel", &k.name, g.start, g.dur));
        }
        let bps = k.blocks_per_sm.unwrap_or(f64::NAN);
        small_grid |= bps < 1.0;
        e.facts.push(format!(
            "  {}: {} of kernel time, occupancy {:.1}%, {:.2} blocks/SM{}",
            short(&k.name, 80),
            pct(k.share),
            k.occupancy_pct.unwrap_or(0.0),
            bps,
            detail
        ));
    }
    if underfilled > 0 {
        e.facts.push(format!(
            "{} of it ran with fewer blocks than SMs (grid too small to fill the GPU)",
            fmt_ns(underfilled as f64)
        ));
    }
    if near_time > 0 {
        e.facts.push(format!(
            "{} of it belongs to operators already at {:.0}% or more of their roofline: no \
             bound claimed for it",
            fmt_ns(near_time as f64),
            NEAR_ROOFLINE * 100.0
        ));
    }
    if by_design_time > 0 {
        let names: Vec<String> = by_design
            .iter()
            .take(3)
            .map(|k| {
                format!(
                    "{} ({})",
                    short(&k.name, 60),
                    low_occupancy_by_design(&k.name, k.category).unwrap_or("")
                )
            })
            .collect();
        e.facts.push(format!(
            "not counted: {} of kernel time in kernels that run at low occupancy by design: {}",
            pct(by_design_time as f64 / kt as f64),
            names.join(", ")
        ));
    }
    metric(
        &mut e,
        "low_occupancy_share_of_kernel_time",
        low_time as f64 / kt as f64,
    );
    metric(
        &mut e,
        "underfilled_us_per_step",
        f.per_step_us(underfilled),
    );
    let raw = raw_ns / f.n_steps as f64 / 1000.0;
    let rec = cap(f, raw, &mut e);
    let mut advice = Vec::new();
    if small_grid {
        advice.push(
            "Grids smaller than the GPU leave SMs idle: give each launch more work (larger \
             batch, batching independent small ops together, split-K GEMMs for small M×N)."
                .to_string(),
        );
    }
    if reg_limited {
        advice.push(
            "Register-heavy kernels fit few warps per SM: for your own or Triton kernels tune \
             `num_warps`/block sizes (`torch.compile(mode=\"max-autotune\")` does it for \
             Inductor kernels); for library kernels try `torch.backends.cudnn.benchmark=True` \
             and current cuDNN/cuBLAS."
                .into(),
        );
    }
    advice.push(
        "Low occupancy is a lead, not a verdict: GEMM and attention kernels with large tiles \
         run at 12-25% by design. Confirm with Nsight Compute (`ncu --set full`) on the kernels \
         listed."
            .into(),
    );
    Some(Finding {
        id: "low-occupancy",
        severity: if rec > 0.0 {
            f.severity(rec)
        } else {
            Severity::Info
        },
        title: format!(
            "Low achieved occupancy in top kernels: {} of kernel time under {:.0}%",
            pct(low_time as f64 / kt as f64),
            LOW_OCCUPANCY_PCT
        ),
        recoverable_us: rec,
        recoverable_basis: format!(
            "for launches with fewer blocks than SMs, device time × (1 − blocks per SM): the \
             idle SMs' share if the work filled the GPU; occupancy limited by registers or \
             shared memory gives no bound; {CAP_BASIS}"
        ),
        evidence: e,
        advice,
    })
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{find, run};
    use super::*;
    use crate::model::build::TraceBuilder;
    use crate::model::{GpuKind, KernelInfo};

    fn busy_steps(b: &mut TraceBuilder, kernels: &[(&str, &str, f64)], steps: usize) {
        busy_steps_typed(b, kernels, steps, None)
    }

    /// [`busy_steps`] with every operator's recorded `Input Dims` and `Input type` set to
    /// `shapes`.
    fn busy_steps_typed(
        b: &mut TraceBuilder,
        kernels: &[(&str, &str, f64)],
        steps: usize,
        shapes: Option<(&str, &str)>,
    ) {
        // each step launches `kernels` ahead of the GPU and ends with a device sync: the host
        // waits for the device (GPU-bound)
        let mut host = 0.0;
        let mut gpu = 50.0;
        for s in 0..steps {
            let start = host;
            for (op, k, dur) in kernels {
                let ext = b.op(op, host, 4.0);
                if let Some((dims, types)) = shapes {
                    b.shapes(ext, dims, types, "[]");
                }
                let c = b.runtime("cudaLaunchKernel", ext, host + 1.0, 2.0);
                b.gpu(GpuKind::Kernel, k, 0, 7, gpu, *dur, c);
                host += 5.0;
                gpu += dur + 1.0;
            }
            b.runtime("cudaDeviceSynchronize", 0, host, gpu - host);
            host = gpu + 5.0;
            gpu = host + 50.0;
            b.annotation(&format!("ProfilerStep#{s}"), start, host - start);
        }
    }

    #[test]
    fn fallback_kernel_fires_on_vol2col() {
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100 80GB HBM3", 132, 80 << 30);
        busy_steps(
            &mut b,
            &[
                (
                    "aten::slow_conv_dilated3d",
                    "void at::native::vol2col_kernel<c10::Half>",
                    1600.0,
                ),
                (
                    "aten::mm",
                    "nvjet_hsh_384x96_64x3_2x1_v_badd_coopA_NNT",
                    1000.0,
                ),
                ("aten::add", "vectorized_elementwise_kernel<add>", 100.0),
            ],
            3,
        );
        let d = run(&b.build());
        let fb = find(&d, "fallback-kernel").expect("fallback-kernel");
        assert!(
            fb.title.contains("aten::slow_conv_dilated3d"),
            "{}",
            fb.title
        );
        // 1.6 ms of 2.7 ms kernel time
        assert!(
            (fb.evidence.metrics["fallback_share_of_kernel_time"] - 1600.0 / 2700.0).abs() < 1e-3
        );
        assert!(
            (fb.recoverable_us - 1600.0).abs() < 1.0,
            "{}",
            fb.recoverable_us
        );
        assert_eq!(d.findings[0].id, "fallback-kernel");
        assert!(fb.advice.iter().any(|a| a.contains("channels_last_3d")));

        let mut b = TraceBuilder::new().device(0, "NVIDIA H100 80GB HBM3", 132, 80 << 30);
        busy_steps(
            &mut b,
            &[(
                "aten::cudnn_convolution",
                "sm90_xmma_fprop_implicit_gemm_bf16",
                1600.0,
            )],
            3,
        );
        assert!(find(&run(&b.build()), "fallback-kernel").is_none());
    }

    #[test]
    fn fp32_matmul_on_tensor_core_device_only() {
        let k = [
            ("aten::mm", "ampere_sgemm_128x64_tn", 1000.0),
            ("aten::add", "add_kernel", 100.0),
        ];
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        busy_steps(&mut b, &k, 3);
        let d = run(&b.build());
        let fp = find(&d, "fp32-matmul").expect("fp32-matmul");
        // A100, bf16 autocast: 1 − 19.5/312 = 0.9375 of 1 ms; TF32 alone 1 − 19.5/156
        assert!(
            (fp.recoverable_us - 937.5).abs() < 1.0,
            "{}",
            fp.recoverable_us
        );
        assert!((fp.evidence.metrics["tf32_gain_us_per_step"] - 875.0).abs() < 1.0);
        assert!(fp.advice[0].contains("set_float32_matmul_precision"));
        // a Pascal GPU has no tensor cores
        let mut b = TraceBuilder::new().device(0, "NVIDIA GeForce GTX 1080", 20, 8 << 30);
        busy_steps(&mut b, &k, 3);
        let mut t = b.build();
        t.devices[0].compute_major = Some(6);
        assert!(find(&run(&t), "fp32-matmul").is_none());
        // bf16 tensor-core GEMMs: nothing to say
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        busy_steps(
            &mut b,
            &[(
                "aten::mm",
                "sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n",
                1000.0,
            )],
            3,
        );
        assert!(find(&run(&b.build()), "fp32-matmul").is_none());
    }

    /// Low-precision GEMV/GEMM kernels without tensor cores are not FP32 matmuls; FP32 needs
    /// evidence (the name, else the operator's input types) and the finding says which.
    #[test]
    fn fp32_matmul_needs_dtype_evidence() {
        let bf16_gemv = (
            "aten::mm",
            "void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, float, 128, 16>",
            1000.0,
        );
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100 80GB HBM3", 132, 80 << 30);
        busy_steps(&mut b, &[bf16_gemv], 3);
        assert!(find(&run(&b.build()), "fp32-matmul").is_none());
        // a name without a dtype: the operator's input types decide
        let plain = ("aten::mm", "my_matmul_kernel", 1000.0);
        for (types, fires) in [
            (r#"["c10::BFloat16", "c10::BFloat16"]"#, false),
            (r#"["float", "float"]"#, true),
            ("", false),
        ] {
            let mut b = TraceBuilder::new().device(0, "NVIDIA H100 80GB HBM3", 132, 80 << 30);
            let shapes = Some(("[[64, 64], [64, 64]]", types)).filter(|s| !s.1.is_empty());
            busy_steps_typed(&mut b, &[plain], 3, shapes);
            let d = run(&b.build());
            let fp = find(&d, "fp32-matmul");
            assert_eq!(fp.is_some(), fires, "{types}");
            if let Some(fp) = fp {
                assert!(
                    fp.evidence
                        .facts
                        .iter()
                        .any(|x| x.starts_with("FP32 evidence: the operator's recorded input")),
                    "{:?}",
                    fp.evidence.facts
                );
            }
        }
        // an sgemm names its precision
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100 80GB HBM3", 132, 80 << 30);
        busy_steps(&mut b, &[("aten::mm", "ampere_sgemm_128x64_tn", 1000.0)], 3);
        let d = run(&b.build());
        let fp = find(&d, "fp32-matmul").expect("fires");
        assert!(
            fp.evidence
                .facts
                .iter()
                .any(|x| x.starts_with("FP32 evidence: the kernel name (`sgemm`)")),
            "{:?}",
            fp.evidence.facts
        );
    }

    /// Issue 29: the estimate is the path the advice enables on the board in the trace, bounded
    /// by the attainable roofline where the FLOPs are known.
    #[test]
    fn fp32_matmul_estimate_follows_the_board_and_the_roofline() {
        let sgemm = [("aten::mm", "ampere_sgemm_128x64_tn", 1000.0)];
        // GeForce RTX 4090: TF32 runs no faster than FP32 (82.6 TFLOP/s both), so the gain is
        // bf16/fp16 autocast's alone, 1 − 82.6/165.2 of 1 ms, and no TF32 advice
        let mut b = TraceBuilder::new().device(0, "NVIDIA GeForce RTX 4090", 128, 24 << 30);
        busy_steps(&mut b, &sgemm, 3);
        let d = run(&b.build());
        let fp = find(&d, "fp32-matmul").expect("fp32-matmul");
        assert!(
            (fp.recoverable_us - 500.0).abs() < 0.01,
            "{}",
            fp.recoverable_us
        );
        assert!(!fp.evidence.metrics.contains_key("tf32_gain_us_per_step"));
        assert!(
            fp.advice
                .iter()
                .all(|a| !a.contains("set_float32_matmul_precision")),
            "{:?}",
            fp.advice
        );
        // A100 with the shapes recorded: a 2048³ float mm (2·2048³ = 17.18 GFLOP in 1 ms, 17.2
        // TFLOP/s, plausible for FP32) would take 19.5/312 of 1 ms = 62.5 µs at the same
        // efficiency under autocast, faster than the attainable roofline allows: 17.18 GFLOP
        // at 60 % of 312 TFLOP/s = 91.77 µs (the bytes, half of 3·2048²·4 at 80 % of 2,039
        // GB/s, take 15.4 µs). Saved: 1000 − 91.77 = 908.23 µs, not 937.5.
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        busy_steps_typed(
            &mut b,
            &sgemm,
            3,
            Some(("[[2048, 2048], [2048, 2048]]", r#"["float", "float"]"#)),
        );
        let d = run(&b.build());
        let fp = find(&d, "fp32-matmul").expect("fp32-matmul");
        let floor = 2.0 * 2048f64.powi(3) / (312e12 * 0.6) * 1e6;
        assert!(
            (fp.recoverable_us - (1000.0 - floor)).abs() < 0.01,
            "{} vs {}",
            fp.recoverable_us,
            1000.0 - floor
        );
        assert!(
            fp.evidence
                .facts
                .iter()
                .any(|x| x.contains("with known FLOPs: bounded by the attainable roofline")),
            "{:?}",
            fp.evidence.facts
        );
    }

    #[test]
    fn fp32_matmul_is_capped_when_the_host_is_the_bottleneck() {
        // GPU finishes each kernel long before the host launches the next: no host wait
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        let mut t = 0.0;
        for s in 0..3 {
            let start = t;
            for _ in 0..10 {
                let ext = b.op("aten::mm", t, 300.0);
                let c = b.runtime("cudaLaunchKernel", ext, t + 290.0, 5.0);
                b.gpu(
                    GpuKind::Kernel,
                    "ampere_sgemm_128x64_tn",
                    0,
                    7,
                    t + 296.0,
                    100.0,
                    c,
                );
                t += 400.0;
            }
            b.annotation(&format!("ProfilerStep#{s}"), start, t - start);
        }
        let d = run(&b.build());
        let fp = find(&d, "fp32-matmul").expect("fires");
        assert!(fp.recoverable_us < 1.0, "{}", fp.recoverable_us);
        assert!(fp.evidence.metrics["uncapped_us_per_step"] > 800.0);
        assert_eq!(fp.severity, Severity::Info);
    }

    #[test]
    fn small_kernels_sequences() {
        let mut ks: Vec<(&str, &str, f64)> = Vec::new();
        for _ in 0..60 {
            ks.push(("aten::mul", "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_mul<float>>", 4.0));
            ks.push(("aten::add", "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>", 4.0));
            ks.push(("aten::mm", "sm80_xmma_gemm_bf16", 50.0));
        }
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        busy_steps(&mut b, &ks, 2);
        let d = run(&b.build());
        let sk = find(&d, "small-kernels").expect("small-kernels");
        assert_eq!(sk.evidence.metrics["small_kernels_per_step"], 120.0);
        // 60 runs of (4 + 4) µs, each saving 4 µs
        assert!(
            (sk.recoverable_us - 240.0).abs() < 0.5,
            "{}",
            sk.recoverable_us
        );
        assert!(sk.evidence.facts.iter().any(|x| x.contains("vectorized_elementwise_kernel[CUDAFunctor_mul] → vectorized_elementwise_kernel[CUDAFunctor_add]")), "{:?}", sk.evidence.facts);
        // 50 per step: below the threshold
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        busy_steps(&mut b, &ks[..75], 2);
        assert!(find(&run(&b.build()), "small-kernels").is_none());
    }

    #[test]
    fn low_occupancy_bound_from_small_grids() {
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        busy_steps(
            &mut b,
            &[
                ("aten::scan", "selective_scan_fwd_kernel", 1000.0),
                ("aten::mm", "sm80_xmma_gemm_bf16", 1000.0),
            ],
            2,
        );
        let mut t = b.build();
        let first = t.kernel_infos.len();
        t.kernel_infos.push(KernelInfo {
            occupancy_pct: 12.0,
            blocks_per_sm: 0.25,
            registers: 168,
            ..KernelInfo::UNKNOWN
        });
        t.kernel_infos.push(KernelInfo {
            occupancy_pct: 50.0,
            blocks_per_sm: 4.0,
            ..KernelInfo::UNKNOWN
        });
        for g in t.gpu.iter_mut() {
            let selective = t.names.resolve(g.name).starts_with("selective");
            g.info = first as u32 + u32::from(!selective);
        }
        let d = run(&t);
        let lo = find(&d, "low-occupancy").expect("low-occupancy");
        // 1 ms per step at 0.25 blocks/SM: 0.75 ms
        assert!(
            (lo.recoverable_us - 750.0).abs() < 1.0,
            "{}",
            lo.recoverable_us
        );
        assert!(lo
            .evidence
            .facts
            .iter()
            .any(|x| x.contains("selective_scan_fwd_kernel")));
        // all kernels well occupied: silent
        for k in &mut t.kernel_infos[first..] {
            k.occupancy_pct = 60.0;
        }
        assert!(find(&run(&t), "low-occupancy").is_none());
    }

    /// Flash-attention decode and persistent kernels run at low occupancy by design, and a
    /// kernel near its roofline gains nothing from occupancy: no lead above `info` for them.
    #[test]
    fn low_occupancy_only_where_it_costs_time() {
        let low = KernelInfo {
            occupancy_pct: 12.0,
            blocks_per_sm: 0.25,
            ..KernelInfo::UNKNOWN
        };
        let with_low = |kernels: &[(&str, &str, f64)], shapes: Option<(&str, &str)>| {
            let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
            busy_steps_typed(&mut b, kernels, 2, shapes);
            let mut t = b.build();
            t.kernel_infos.push(low);
            let info = t.kernel_infos.len() as u32 - 1;
            for g in t.gpu.iter_mut() {
                g.info = info;
            }
            run(&t)
        };
        for k in [
            "void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64>>(Flash_fwd_params)",
            "void cutlass::device_kernel<sm90_gemm_persistent_tma_warpspecialized<bf16>>()",
        ] {
            let d = with_low(&[("aten::op", k, 1000.0)], None);
            assert!(find(&d, "low-occupancy").is_none(), "{k}");
        }
        // a bf16 GEMM of 2·4096³ FLOP takes 440.5 µs at A100's 312 TFLOP/s: at 441 µs it is
        // on its roofline, so its low occupancy costs nothing
        let mm = ("aten::mm", "some_gemm_kernel_bf16", 441.0);
        let dims = "[[4096, 4096], [4096, 4096]]";
        let types = r#"["c10::BFloat16", "c10::BFloat16"]"#;
        let d = with_low(&[mm], Some((dims, types)));
        let lo = find(&d, "low-occupancy").expect("a lead");
        assert_eq!(lo.severity, Severity::Info, "{lo:?}");
        assert_eq!(lo.recoverable_us, 0.0);
        assert!(
            lo.evidence.facts.iter().any(|x| x.contains("roofline")),
            "{:?}",
            lo.evidence.facts
        );
        // the same kernel without shapes: a small grid is a lead that costs time
        let d = with_low(&[mm], None);
        let lo = find(&d, "low-occupancy").expect("fires");
        assert!(
            (lo.recoverable_us - 441.0 * 0.75).abs() < 1.0,
            "{}",
            lo.recoverable_us
        );
    }

    #[test]
    fn labels() {
        assert_eq!(
            kernel_label("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)"),
            "vectorized_elementwise_kernel[CUDAFunctor_add]"
        );
        assert_eq!(
            kernel_label("triton_poi_fused_add_mul_0"),
            "triton_poi_fused_add_mul_0"
        );
        assert_eq!(
            kernel_label("void (anonymous namespace)::clamp_position_kernel<long>(long*, long*)"),
            "clamp_position_kernel"
        );
        assert_eq!(
            kernel_label("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda(float)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast)"),
            "elementwise_kernel[direct_copy_kernel_cuda]"
        );
    }
}
