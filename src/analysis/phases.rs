//! Phases: the tree of user annotations and the device work launched inside each — "how much
//! GPU time did `denoise`, `vae_decode` and `ctx_update` launch?".
//!
//! # Annotations and device work
//!
//! The annotation calls, their path tree and the call every device activity is attributed to
//! (with its backward flag) are built below the window, in [`crate::window::annotations`],
//! where they are defined.
//!
//! # Per phase ([`phases`])
//!
//! Phases are aggregated by path over the window ([`crate::window::Window`]); only the
//! device activities that belong to the window count (launched in its host time). For each:
//!
//! | field | definition |
//! |---|---|
//! | `calls` | calls of that path overlapping the window's host time |
//! | `cpu_total` | Σ over those calls of their duration inside the host time (wall time, not self time) |
//! | `kernel_count` | device activities (kernels, copies, fills — HTA's "GPU kernels") attributed to the phase **or any phase below it** |
//! | `gpu_time` | Σ of their durations (concurrent work counts twice, like `Self CUDA` of `key_averages`) |
//! | `self_*` | the same for activities attributed to the phase itself, not to a child |
//! | `gpu_span` | \|∪ over calls of [first start, last end] of the call's activities (inclusive) ∩ mask\| |
//! | `share` | `gpu_span` ÷ the window's counted time: the share of the step during which the phase's device work was in flight |
//! | `gpu_share` | `gpu_time` ÷ the device time of all activities in the window |
//! | `breakdown` | `gpu_time` split by kind: compute kernels, communication kernels ([`crate::model::classify::is_communication`]), copies, fills |
//! | `backward_*` | the backward part of `kernel_count`/`gpu_time` |
//! | `top_kernels` | the 5 names with the most `gpu_time` (inclusive) |
//!
//! `(unannotated)` (depth 0) holds activities attributed to no call; its `gpu_span` is the
//! union of those activities. Phases are listed depth-first, siblings by `gpu_time`
//! descending, `(unannotated)` last.

use crate::model::fast::HashMap;

use crate::model::{GpuEvent, GpuKind, Interval, IntervalSet, NameId, Ns, Trace, NONE};
use crate::window::Window;

use crate::window::annotations::{shortest_gpu_annotation, Annotations};

/// Path of the activities attributed to no annotation.
pub const UNANNOTATED: &str = "(unannotated)";

/// A kernel name inside a phase.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseKernel {
    /// Name.
    pub name: String,
    /// Activities.
    pub calls: u64,
    /// Σ duration, ns.
    pub total: Ns,
}

/// Device time of a phase by kind (ns) and counts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PhaseBreakdown {
    /// Compute kernels, ns.
    pub kernel: Ns,
    /// Compute kernels.
    pub kernel_count: u64,
    /// Communication kernels, ns.
    pub communication: Ns,
    /// Communication kernels.
    pub communication_count: u64,
    /// Copies, ns.
    pub memcpy: Ns,
    /// Copies.
    pub memcpy_count: u64,
    /// Fills, ns.
    pub memset: Ns,
    /// Fills.
    pub memset_count: u64,
}

/// One phase (see the module docs for every definition).
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    /// Names from the root joined by `/` (`(unannotated)` for the rest).
    pub path: String,
    /// Last name of the path.
    pub name: String,
    /// 0 for roots.
    pub depth: u32,
    /// Calls in the window.
    pub calls: u64,
    /// Σ wall time of the calls inside the window's host time, ns.
    pub cpu_total: Ns,
    /// `cpu_total / calls`, ns.
    pub cpu_mean: f64,
    /// Device activities launched inside (inclusive).
    pub kernel_count: u64,
    /// Σ of their durations, ns.
    pub gpu_time: Ns,
    /// Device activities launched directly inside (not in a child).
    pub self_kernel_count: u64,
    /// Σ of their durations, ns.
    pub self_gpu_time: Ns,
    /// Union of the calls' device spans within the window, ns.
    pub gpu_span: Ns,
    /// `gpu_span` ÷ the window's counted time.
    pub share: f64,
    /// `gpu_time` ÷ the window's device time.
    pub gpu_share: f64,
    /// `gpu_time` by kind.
    pub breakdown: PhaseBreakdown,
    /// Backward device activities (inclusive).
    pub backward_kernel_count: u64,
    /// Their time, ns.
    pub backward_gpu_time: Ns,
    /// Top 5 names by time (inclusive).
    pub top_kernels: Vec<PhaseKernel>,
}

/// Phases of one window.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PhaseAnalysis {
    /// Depth-first, siblings by device time descending, `(unannotated)` last.
    pub phases: Vec<Phase>,
    /// Device activities in the window.
    pub activities: u64,
    /// Their Σ duration, ns.
    pub device_time: Ns,
    /// True when some activity in the window is backward work.
    pub has_backward: bool,
}

#[derive(Default)]
struct Acc {
    calls: u64,
    cpu: Ns,
    count: u64,
    time: Ns,
    self_count: u64,
    self_time: Ns,
    bd: PhaseBreakdown,
    bw_count: u64,
    bw_time: Ns,
    kernels: HashMap<NameId, (u64, Ns)>,
    spans: Vec<Interval>,
}

impl Acc {
    fn add(&mut self, g: &GpuEvent, comm: bool, backward: bool) {
        self.count += 1;
        self.time += g.dur;
        let (t, c) = match g.kind {
            GpuKind::Memcpy => (&mut self.bd.memcpy, &mut self.bd.memcpy_count),
            GpuKind::Memset => (&mut self.bd.memset, &mut self.bd.memset_count),
            _ if comm => (&mut self.bd.communication, &mut self.bd.communication_count),
            _ => (&mut self.bd.kernel, &mut self.bd.kernel_count),
        };
        *t += g.dur;
        *c += 1;
        if backward {
            self.bw_count += 1;
            self.bw_time += g.dur;
        }
        let k = self.kernels.entry(g.name).or_default();
        k.0 += 1;
        k.1 += g.dur;
    }
}

/// Aggregates the annotation tree over a window.
pub fn phases(trace: &Trace, ann: &Annotations, window: &Window) -> PhaseAnalysis {
    let np = ann.paths.len();
    let unannotated = np; // extra slot
    let mut acc: Vec<Acc> = (0..=np).map(|_| Acc::default()).collect();
    // per call: [first start, last end] of its counted device activities and below
    let mut inst_hull: Vec<Option<Interval>> = vec![None; ann.instances.len()];
    let mut out = PhaseAnalysis::default();
    let classes = trace.kernel_classes();

    for (gi, g) in trace.gpu.iter().enumerate() {
        if !g.is_activity() || !window.counts_activity_at(trace, gi) {
            continue;
        }
        out.activities += 1;
        out.device_time += g.dur;
        let comm = g.kind == GpuKind::Kernel && classes.get(g.name).communication;
        let bw = ann.backward.get(gi);
        out.has_backward |= bw;
        let inst = ann.activity_instance.get(gi).copied().unwrap_or(NONE);
        if inst == NONE {
            let a = &mut acc[unannotated];
            a.add(g, comm, bw);
            a.self_count += 1;
            a.self_time += g.dur;
            a.spans.push(g.interval());
            continue;
        }
        let own = ann.instances[inst as usize].path as usize;
        acc[own].self_count += 1;
        acc[own].self_time += g.dur;
        let mut p = own as u32;
        while p != NONE {
            acc[p as usize].add(g, comm, bw);
            p = ann.paths[p as usize].parent;
        }
        let iv = g.interval();
        let mut c = inst;
        while c != NONE {
            let h = &mut inst_hull[c as usize];
            *h = Some(match *h {
                Some(h) => Interval::new(h.start.min(iv.start), h.end.max(iv.end)),
                None => iv,
            });
            c = ann.instances[c as usize].parent;
        }
    }
    for (i, inst) in ann.instances.iter().enumerate() {
        let e = &trace.cpu[inst.cpu as usize];
        let iv = e.interval();
        let inside = window.host.covered_within(iv);
        let point = iv.is_empty() && window.contains_launch(e);
        if inside > 0 || point {
            let a = &mut acc[inst.path as usize];
            a.calls += 1;
            a.cpu += inside;
        }
        if let Some(h) = inst_hull[i] {
            acc[inst.path as usize].spans.push(h);
        }
    }

    let mask_total = window.mask.total();
    let make = |a: &mut Acc, path: String, name: String, depth: u32| -> Phase {
        let span = IntervalSet::from_intervals(std::mem::take(&mut a.spans))
            .intersect(&window.mask)
            .total();
        let mut kernels: Vec<(NameId, (u64, Ns))> = a.kernels.drain().collect();
        kernels.sort_by(|x, y| y.1 .1.cmp(&x.1 .1).then(x.0.cmp(&y.0)));
        Phase {
            path,
            name,
            depth,
            calls: a.calls,
            cpu_total: a.cpu,
            cpu_mean: if a.calls > 0 {
                a.cpu as f64 / a.calls as f64
            } else {
                0.0
            },
            kernel_count: a.count,
            gpu_time: a.time,
            self_kernel_count: a.self_count,
            self_gpu_time: a.self_time,
            gpu_span: span,
            share: if mask_total > 0 {
                span as f64 / mask_total as f64
            } else {
                0.0
            },
            gpu_share: if out.device_time > 0 {
                a.time as f64 / out.device_time as f64
            } else {
                0.0
            },
            breakdown: a.bd,
            backward_kernel_count: a.bw_count,
            backward_gpu_time: a.bw_time,
            top_kernels: kernels
                .into_iter()
                .take(5)
                .map(|(n, (c, t))| PhaseKernel {
                    name: trace.name(n).to_string(),
                    calls: c,
                    total: t,
                })
                .collect(),
        }
    };

    // depth-first order
    let mut children: Vec<Vec<u32>> = vec![Vec::new(); np];
    let mut roots: Vec<u32> = Vec::new();
    for (p, node) in ann.paths.iter().enumerate() {
        let a = &acc[p];
        if a.calls == 0 && a.count == 0 {
            continue;
        }
        if node.parent == NONE {
            roots.push(p as u32);
        } else {
            children[node.parent as usize].push(p as u32);
        }
    }
    let order = |v: &mut Vec<u32>, acc: &[Acc]| {
        v.sort_by(|&x, &y| {
            acc[y as usize]
                .time
                .cmp(&acc[x as usize].time)
                .then(acc[y as usize].cpu.cmp(&acc[x as usize].cpu))
                .then(
                    trace
                        .name(ann.paths[x as usize].name)
                        .cmp(trace.name(ann.paths[y as usize].name)),
                )
        })
    };
    order(&mut roots, &acc);
    for c in children.iter_mut() {
        order(c, &acc);
    }
    let mut stack: Vec<u32> = roots.into_iter().rev().collect();
    let mut phases = Vec::new();
    while let Some(p) = stack.pop() {
        let node = ann.paths[p as usize];
        let path = ann.path_string(trace, p);
        let name = trace.name(node.name).to_string();
        phases.push(make(&mut acc[p as usize], path, name, node.depth));
        for &c in children[p as usize].iter().rev() {
            stack.push(c);
        }
    }
    if acc[unannotated].count > 0 {
        phases.push(make(
            &mut acc[unannotated],
            UNANNOTATED.into(),
            UNANNOTATED.into(),
            0,
        ));
    }
    out.phases = phases;
    out
}

/// HTA's "GPU kernels with user annotations" over a window: every device activity of the
/// window with the shortest `gpu_user_annotation` overlapping it on the same device and stream
/// (see [`shortest_gpu_annotation`]), among the GPU annotations that start before the end of
/// the window's host time — HTA reads only the events before its cut (the start of the last
/// `ProfilerStep`), GPU annotations included by their own timestamp, while it keeps every
/// kernel launched before the cut. Returns (activity index, annotation index or [`NONE`]) in
/// start order.
pub fn hta_kernel_annotations(trace: &Trace, window: &Window) -> Vec<(u32, u32)> {
    let acts: Vec<u32> = trace
        .gpu
        .iter()
        .enumerate()
        .filter(|&(i, g)| g.is_activity() && window.counts_activity_at(trace, i))
        .map(|(i, _)| i as u32)
        .collect();
    let cut = window.host.hull().map(|h| h.end).unwrap_or(Ns::MIN);
    let ann = shortest_gpu_annotation(trace, &acts, |a| a.start < cut);
    acts.into_iter().zip(ann).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::build::TraceBuilder;
    use crate::model::CpuKind;
    use crate::window::steps::analyze_steps;
    use crate::window::{self, WindowSpec};

    fn run(t: &Trace, spec: &WindowSpec) -> (Annotations, PhaseAnalysis) {
        let s = analyze_steps(t);
        let a = Annotations::build(t);
        let w = window::select(t, &s, &a, spec).unwrap();
        let p = phases(t, &a, &w);
        (a, p)
    }

    fn get<'a>(p: &'a PhaseAnalysis, path: &str) -> &'a Phase {
        p.phases
            .iter()
            .find(|x| x.path == path)
            .unwrap_or_else(|| panic!("no phase {path}: {:?}", paths(p)))
    }

    fn paths(p: &PhaseAnalysis) -> Vec<&str> {
        p.phases.iter().map(|x| x.path.as_str()).collect()
    }

    /// Checks the invariants every phase analysis must satisfy.
    fn check_invariants(p: &PhaseAnalysis) {
        let roots: u64 = p
            .phases
            .iter()
            .filter(|x| x.depth == 0)
            .map(|x| x.kernel_count)
            .sum();
        assert_eq!(roots, p.activities);
        let roots_t: Ns = p
            .phases
            .iter()
            .filter(|x| x.depth == 0)
            .map(|x| x.gpu_time)
            .sum();
        assert_eq!(roots_t, p.device_time);
        for x in &p.phases {
            let kids: Vec<&Phase> = p
                .phases
                .iter()
                .filter(|c| c.depth == x.depth + 1 && c.path.starts_with(&format!("{}/", x.path)))
                .collect();
            let sum: u64 = kids.iter().map(|c| c.kernel_count).sum();
            assert_eq!(x.kernel_count, x.self_kernel_count + sum, "{}", x.path);
            let b = x.breakdown;
            assert_eq!(b.kernel + b.communication + b.memcpy + b.memset, x.gpu_time);
        }
    }

    #[test]
    fn nested_annotations_and_unannotated_kernels() {
        let mut b = TraceBuilder::new();
        b.annotation("ProfilerStep#1", 0.0, 1000.0);
        b.annotation("denoise", 10.0, 500.0);
        b.annotation("attn", 20.0, 100.0);
        b.op_with_kernel("aten::bmm", "flash_fwd", 30.0, 20.0, 60.0, 100.0);
        b.op_with_kernel("aten::mm", "gemm", 200.0, 20.0, 210.0, 50.0);
        b.annotation("attn", 300.0, 100.0);
        b.op_with_kernel("aten::bmm", "flash_fwd", 310.0, 20.0, 320.0, 100.0);
        b.annotation("vae_decode", 600.0, 200.0);
        b.op_with_kernel("aten::conv", "vol2col", 610.0, 20.0, 620.0, 300.0);
        // outside every annotation
        b.op_with_kernel("aten::add", "elementwise", 900.0, 20.0, 950.0, 5.0);
        let t = b.build();
        let (_, p) = run(&t, &WindowSpec::All);
        check_invariants(&p);
        assert_eq!(
            paths(&p),
            ["vae_decode", "denoise", "denoise/attn", "(unannotated)"]
        );
        let d = get(&p, "denoise");
        assert_eq!((d.calls, d.cpu_total), (1, 500_000));
        assert_eq!((d.kernel_count, d.gpu_time), (3, 250_000));
        assert_eq!((d.self_kernel_count, d.self_gpu_time), (1, 50_000));
        // device span: first kernel 60 .. last end 420
        assert_eq!(d.gpu_span, 360_000);
        assert_eq!(d.top_kernels[0].name, "flash_fwd");
        assert_eq!(
            (d.top_kernels[0].calls, d.top_kernels[0].total),
            (2, 200_000)
        );
        let a = get(&p, "denoise/attn");
        assert_eq!((a.calls, a.cpu_total, a.cpu_mean), (2, 200_000, 100_000.0));
        assert_eq!((a.kernel_count, a.gpu_time, a.depth), (2, 200_000, 1));
        // two calls: [60, 160) ∪ [320, 420)
        assert_eq!(a.gpu_span, 200_000);
        let v = get(&p, "vae_decode");
        assert_eq!((v.kernel_count, v.gpu_time), (1, 300_000));
        let u = get(&p, UNANNOTATED);
        assert_eq!((u.kernel_count, u.gpu_time, u.calls), (1, 5_000, 0));
        // shares: the step runs 0 .. 1000 (its device work ends at 955, inside)
        assert_eq!(p.device_time, 555_000);
        assert!((d.gpu_share - 250.0 / 555.0).abs() < 1e-12);
        assert!((v.share - 300.0 / 1000.0).abs() < 1e-12);
    }

    #[test]
    fn window_restricts_calls_and_kernels() {
        let mut b = TraceBuilder::new();
        for s in 0..3 {
            let t0 = s as f64 * 100.0;
            b.annotation(&format!("ProfilerStep#{}", s + 1), t0, 90.0);
            b.annotation("denoise", t0 + 10.0, 50.0);
            b.op_with_kernel("aten::mm", "gemm", t0 + 20.0, 10.0, t0 + 25.0, 10.0);
        }
        let t = b.build();
        let (_, p) = run(&t, &crate::window::parse_steps("2..3").unwrap());
        check_invariants(&p);
        let d = get(&p, "denoise");
        assert_eq!((d.calls, d.kernel_count, d.gpu_time), (2, 2, 20_000));
        assert_eq!(p.activities, 2);
    }

    /// Sets correlation ids by hand (the builder only launches from thread 1) and relinks.
    fn link(t: &mut Trace, cpu_idx: usize, gpu_idx: usize, corr: u64) {
        t.cpu[cpu_idx].correlation = corr;
        t.gpu[gpu_idx].correlation = corr;
        t.finalize();
    }

    #[test]
    fn backward_on_an_autograd_thread_goes_to_the_main_thread_annotation() {
        let mut b = TraceBuilder::new();
        b.annotation("ProfilerStep#1", 0.0, 1000.0);
        b.annotation("## forward ##", 10.0, 100.0);
        b.op_with_kernel("aten::mm", "fwd_gemm", 20.0, 20.0, 30.0, 50.0);
        b.annotation("## backward ##", 200.0, 500.0);
        // autograd thread 2: evaluate_function op, a nested annotation, a launch
        b.cpu(
            CpuKind::Op,
            "autograd::engine::evaluate_function: MmBackward0",
            2,
            250.0,
            100.0,
        );
        b.cpu(CpuKind::Runtime, "cudaLaunchKernel", 2, 260.0, 5.0);
        b.cpu(CpuKind::UserAnnotation, "nccl:all_reduce", 2, 400.0, 50.0);
        b.cpu(CpuKind::Runtime, "cudaLaunchKernel", 2, 410.0, 5.0);
        b.gpu(GpuKind::Kernel, "bwd_gemm", 0, 7, 300.0, 40.0, 0);
        b.gpu(
            GpuKind::Kernel,
            "ncclKernel_AllReduce",
            0,
            20,
            420.0,
            40.0,
            0,
        );
        let mut t = b.build();
        let find_cpu = |t: &Trace, n: &str, start: Ns| {
            t.cpu
                .iter()
                .position(|e| t.name(e.name) == n && e.start == start)
                .unwrap()
        };
        let find_gpu = |t: &Trace, n: &str| t.gpu.iter().position(|g| t.name(g.name) == n).unwrap();
        let (c, g) = (
            find_cpu(&t, "cudaLaunchKernel", 260_000),
            find_gpu(&t, "bwd_gemm"),
        );
        link(&mut t, c, g, 900);
        let (c, g) = (
            find_cpu(&t, "cudaLaunchKernel", 410_000),
            find_gpu(&t, "ncclKernel_AllReduce"),
        );
        link(&mut t, c, g, 901);
        let (a, p) = run(&t, &WindowSpec::All);
        check_invariants(&p);
        assert_eq!(a.main_thread, Some(0));
        assert!(p.has_backward);
        let bw = get(&p, "## backward ##");
        assert_eq!((bw.kernel_count, bw.backward_kernel_count), (2, 2));
        assert_eq!(bw.self_kernel_count, 1);
        let nccl = get(&p, "## backward ##/nccl:all_reduce");
        assert_eq!((nccl.calls, nccl.kernel_count), (1, 1));
        assert_eq!(nccl.breakdown.communication, 40_000);
        assert_eq!(nccl.breakdown.communication_count, 1);
        // the launch at 410 is outside the evaluate_function op but on an autograd thread
        assert_eq!(nccl.backward_kernel_count, 1);
        let fw = get(&p, "## forward ##");
        assert_eq!((fw.kernel_count, fw.backward_kernel_count), (1, 0));
        assert!(p.phases.iter().all(|x| x.path != UNANNOTATED));
    }

    #[test]
    fn unlinked_kernels_use_the_gpu_annotation_twin() {
        let mut b = TraceBuilder::new();
        b.annotation("ProfilerStep#1", 0.0, 1000.0);
        let outer = b.annotation("decode", 10.0, 400.0);
        let inner = b.annotation("upsample", 20.0, 100.0);
        b.gpu(GpuKind::Annotation, "decode", 0, 7, 500.0, 300.0, 0)
            .external_id = outer;
        b.gpu(GpuKind::Annotation, "upsample", 0, 7, 520.0, 50.0, 0)
            .external_id = inner;
        b.gpu(GpuKind::Kernel, "k_inner", 0, 7, 530.0, 10.0, 0);
        b.gpu(GpuKind::Kernel, "k_outer", 0, 7, 700.0, 10.0, 0);
        b.gpu(GpuKind::Kernel, "k_other_stream", 0, 8, 530.0, 10.0, 0);
        // an exact duplicate of an annotation counts once
        b.annotation("decode", 10.0, 400.0);
        let t = b.build();
        let (_, p) = run(&t, &WindowSpec::All);
        check_invariants(&p);
        assert_eq!(get(&p, "decode/upsample").kernel_count, 1);
        assert_eq!(get(&p, "decode").kernel_count, 2);
        assert_eq!(get(&p, "decode").calls, 1);
        assert_eq!(get(&p, UNANNOTATED).kernel_count, 1);
        assert!(!paths(&p).contains(&"decode/decode"));
    }

    #[test]
    fn old_operator_record_functions_and_modules() {
        let mut b = TraceBuilder::new();
        b.cpu(CpuKind::Op, "ProfilerStep#1", 1, 0.0, 1000.0);
        b.cpu(CpuKind::Op, "Optimizer.step#SGD.step", 1, 10.0, 100.0);
        b.op_with_kernel("aten::add_", "add", 20.0, 10.0, 40.0, 5.0);
        b.cpu(CpuKind::Op, "aten::linear", 1, 200.0, 100.0);
        b.op_with_kernel("aten::mm", "gemm", 210.0, 10.0, 220.0, 5.0);
        let t = b.build();
        let (_, p) = run(&t, &WindowSpec::All);
        check_invariants(&p);
        assert_eq!(paths(&p), ["Optimizer.step#SGD.step", UNANNOTATED]);
    }

    #[test]
    fn hta_rule_ignores_gpu_annotations_after_the_cut() {
        let mut b = TraceBuilder::new();
        b.annotation("ProfilerStep#1", 0.0, 100.0);
        b.annotation("ProfilerStep#2", 101.0, 100.0);
        b.annotation("ProfilerStep#3", 202.0, 100.0);
        let ext = b.annotation("opt", 50.0, 40.0);
        b.op_with_kernel("aten::add_", "k1", 60.0, 10.0, 150.0, 5.0);
        let ext2 = b.annotation("opt", 150.0, 40.0);
        b.op_with_kernel("aten::add_", "k2", 160.0, 10.0, 250.0, 5.0);
        // GPU twins lag: the second starts after the host end of step 2
        b.gpu(GpuKind::Annotation, "opt", 0, 7, 145.0, 20.0, 0)
            .external_id = ext;
        b.gpu(GpuKind::Annotation, "opt", 0, 7, 245.0, 20.0, 0)
            .external_id = ext2;
        b.gpu(GpuKind::Annotation, "long", 0, 7, 100.0, 300.0, 0);
        let t = b.build();
        let s = analyze_steps(&t);
        let a = Annotations::build(&t);
        let w = window::select(&t, &s, &a, &window::parse_steps("1..2").unwrap()).unwrap();
        let rows = hta_kernel_annotations(&t, &w);
        let names: Vec<(&str, &str)> = rows
            .iter()
            .map(|&(g, an)| {
                (
                    t.name(t.gpu[g as usize].name),
                    if an == NONE {
                        "-"
                    } else {
                        t.name(t.gpu[an as usize].name)
                    },
                )
            })
            .collect();
        assert_eq!(names, [("k1", "opt"), ("k2", "long")]);
        // our own attribution, by launch, puts both under `opt`
        let p = phases(&t, &a, &w);
        assert_eq!(get(&p, "opt").kernel_count, 2);
    }
}
