//! `torch.compile`d code in the window: graph breaks, and how much of the GPU time the
//! operator table cannot explain.
//!
//! TorchDynamo wraps the execution of each frame it transformed in a `Torch-Compiled Region:
//! F/C` range (frame `F`, its `C`-th compilation). Inside it, each compiled graph runs as one
//! call (`## Call CompiledFxGraph <hash>` for Inductor, `CompiledFunction` for AOTAutograd).
//! When Dynamo cannot trace part of a frame (a **graph break**) the frame runs several
//! compiled graphs with eager Python between them, and the code after the break is a new
//! frame (a resume function) with its own region, nested in the first. So:
//!
//! * a top-level region (not inside another region on its thread) is one call of a compiled
//!   function; its outermost compiled-graph calls are the graphs it ran;
//! * two or more graphs in one call means graph breaks; the host time from the end of one
//!   graph call to the start of the next is the eager work between them, less any compile
//!   work there (a recompiling frame compiles between its graphs: that time is the compile
//!   report's, not eager Python's);
//! * the GPU idle a break causes is the device time between the last activity launched by one
//!   graph call and the first launched by the next that no activity on that device covers.
//!
//! A compiled region called several times (a diffusion loop, a serving step) with one graph
//! per call has no break: the host work between calls is the caller's.
//!
//! Inductor launches its generated Triton kernels under a host range named like the kernel
//! (`triton_poi_fused_…`), not under the `aten::` operators they fuse, so the operator table
//! cannot say which operators the time belongs to. [`CompiledFacts::hidden_kernel_time`]
//! counts the kernel time launched inside a region with no `aten::` operator owning the
//! launch. Kernels of CUDA/HIP graph replays launched inside a region (`mode="reduce-overhead"`)
//! are left out of both `compiled_kernel_time` and `hidden_kernel_time`: they lack an operator
//! because they are replayed ([`super::graphs`]).

use serde::Serialize;

use crate::model::{CpuKind, GpuKind, Interval, IntervalSet, Ns, Trace, NONE};

/// Prefix of Dynamo's region ranges.
pub const REGION_PREFIX: &str = "Torch-Compiled Region";

/// True for the host range of one compiled-graph call.
pub fn is_graph_call(name: &str) -> bool {
    name.contains("CompiledFxGraph") || name == "CompiledFunction"
}

/// One call of a compiled function with graph breaks.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BrokenCall {
    /// Region name of the call (`Torch-Compiled Region: 0/0`).
    pub region: String,
    /// Start of the region, ns.
    pub start: Ns,
    /// Length of the region, ns.
    pub dur: Ns,
    /// Compiled graphs it ran.
    pub graphs: u32,
    /// Regions nested in it (resume functions after breaks).
    pub nested_regions: u32,
    /// Host time between its graph calls, ns.
    pub host_between: Ns,
    /// Device idle between the work of consecutive graphs, ns.
    pub gpu_idle_between: Ns,
}

/// Compiled code in a window.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CompiledFacts {
    /// Top-level region calls in the window.
    pub calls: u64,
    /// Distinct region names (`F/C`) in the window, nested included.
    pub regions: Vec<String>,
    /// Compiled-graph calls in the window (outermost in their region).
    pub graphs: u64,
    /// Calls that ran two or more graphs, longest host time between graphs first.
    pub broken: Vec<BrokenCall>,
    /// Breaks in the window (graphs − 1 over the broken calls).
    pub breaks: u64,
    /// Host time between graphs over the broken calls, ns.
    pub host_between: Ns,
    /// Device idle between graphs over the broken calls, ns.
    pub gpu_idle_between: Ns,
    /// Kernel time in the window, ns.
    pub kernel_time: Ns,
    /// Kernel time launched inside a region (graph replays excepted), ns.
    pub compiled_kernel_time: Ns,
    /// Of it, kernels launched with no `aten::` operator owning the launch, ns.
    pub hidden_kernel_time: Ns,
    /// Distinct names of those kernels.
    pub hidden_kernel_names: u64,
    /// Per device, the device time between the work of consecutive graphs of broken calls
    /// (for the diagnosis, which gives their idle to `graph-breaks`; not serialized).
    #[serde(skip)]
    pub break_spans: Vec<(i32, IntervalSet)>,
}

impl CompiledFacts {
    /// True when `iv` on `device` lies wholly between the work of two graphs of a broken call.
    pub fn between_graphs(&self, device: i32, iv: Interval) -> bool {
        self.break_spans
            .iter()
            .find(|(d, _)| *d == device)
            .is_some_and(|(_, s)| !iv.is_empty() && s.covered_within(iv) == iv.len())
    }
}

/// A host range on one thread: (start, end, index in `trace.cpu`).
type Span = (Ns, Ns, u32);

/// The outermost spans of a start-sorted list (those not inside an earlier one).
fn outermost(v: &[Span]) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    for &s in v {
        if out.last().is_some_and(|o| s.0 >= o.0 && s.1 <= o.1) {
            continue;
        }
        out.push(s);
    }
    out
}

/// Index of the span of `v` (start-sorted, disjoint) containing `t`.
fn containing(v: &[Span], t: Ns) -> Option<usize> {
    let i = v.partition_point(|s| s.0 <= t);
    (i > 0 && t <= v[i - 1].1).then(|| i - 1)
}

/// Compiled code of the window whose counted time is `mask`; `compile` is the compile work
/// of the capture (left out of the host time between graphs).
pub fn compiled_facts(trace: &Trace, mask: &IntervalSet, compile: &IntervalSet) -> CompiledFacts {
    let mut out = CompiledFacts::default();
    // no compiled region among the names: none in the events either (the host events are
    // not read)
    if !crate::model::fast::may_name(trace, |n| n.starts_with(REGION_PREFIX)) {
        return out;
    }
    let n_threads = trace.threads.len();
    let mut regions: Vec<Vec<Span>> = vec![Vec::new(); n_threads];
    let mut calls: Vec<Vec<Span>> = vec![Vec::new(); n_threads];
    let mut class = crate::model::fast::NameMemo::new(trace, |n: &str| {
        (n.starts_with(REGION_PREFIX), is_graph_call(n))
    });
    let mut names: Vec<u32> = Vec::new();
    for (i, e) in trace.cpu.iter().enumerate() {
        if !matches!(e.kind, CpuKind::Op | CpuKind::UserAnnotation) {
            continue;
        }
        let t = e.thread as usize;
        if t >= n_threads {
            continue;
        }
        let (region, call) = class.get(e.name);
        if region {
            regions[t].push((e.start, e.end(), i as u32));
        } else if call {
            calls[t].push((e.start, e.end(), i as u32));
        }
    }
    if regions.iter().all(|v| v.is_empty()) {
        return out;
    }
    let by_start_then_longest = |a: &Span, b: &Span| a.0.cmp(&b.0).then(b.1.cmp(&a.1));
    let mut top: Vec<Vec<Span>> = Vec::with_capacity(n_threads);
    let mut graph_calls: Vec<Vec<Span>> = Vec::with_capacity(n_threads);
    for t in 0..n_threads {
        regions[t].sort_by(by_start_then_longest);
        calls[t].sort_by(by_start_then_longest);
        top.push(outermost(&regions[t]));
        graph_calls.push(outermost(&calls[t]));
    }

    // device hull of the work launched inside each graph call, and the kernel-time split
    let mut hulls: Vec<Vec<Option<(i32, Ns, Ns)>>> =
        graph_calls.iter().map(|v| vec![None; v.len()]).collect();
    let mut busy: Vec<(i32, Vec<Interval>)> = Vec::new();
    let mut hidden_names: Vec<u32> = Vec::new();
    let mut replay = crate::model::fast::NameMemo::new(trace, super::host::launch::is_graph_launch);
    for g in trace.gpu.iter().filter(|g| g.is_activity()) {
        match busy.iter_mut().find(|(d, _)| *d == g.device) {
            Some((_, v)) => v.push(g.interval()),
            None => busy.push((g.device, vec![g.interval()])),
        }
        let counted = mask.covered_within(g.interval()) > 0;
        if counted && g.kind == GpuKind::Kernel {
            out.kernel_time += g.dur;
        }
        if g.launch == NONE {
            continue;
        }
        let l = &trace.cpu[g.launch as usize];
        let t = l.thread as usize;
        if t >= n_threads {
            continue;
        }
        if let Some(k) = containing(&graph_calls[t], l.start) {
            let h = hulls[t][k].get_or_insert((g.device, g.start, g.end()));
            h.1 = h.1.min(g.start);
            h.2 = h.2.max(g.end());
        }
        // a graph replay's kernels have no operator for another reason (the graphs section)
        if counted
            && g.kind == GpuKind::Kernel
            && !replay.get(l.name)
            && containing(&top[t], l.start).is_some()
        {
            out.compiled_kernel_time += g.dur;
            let aten = trace
                .owner_op_of(g)
                .is_some_and(|o| trace.name(trace.cpu[o as usize].name).starts_with("aten::"));
            if !aten {
                out.hidden_kernel_time += g.dur;
                hidden_names.push(g.name.0);
            }
        }
    }
    hidden_names.sort_unstable();
    hidden_names.dedup();
    out.hidden_kernel_names = hidden_names.len() as u64;
    let busy: Vec<(i32, IntervalSet)> = busy
        .into_iter()
        .map(|(d, v)| (d, IntervalSet::from_intervals(v)))
        .collect();

    let mut spans: Vec<(i32, Vec<Interval>)> = Vec::new();
    for t in 0..n_threads {
        for &(rs, re, ri) in &top[t] {
            if mask.covered_within(Interval::new(rs, re.max(rs + 1))) == 0 {
                continue;
            }
            out.calls += 1;
            let inside = |s: &Span| s.0 >= rs && s.1 <= re;
            for s in regions[t].iter().filter(|s| inside(s)) {
                names.push(trace.cpu[s.2 as usize].name.0);
            }
            let nested = regions[t].iter().filter(|s| inside(s)).count() as u32 - 1;
            let first = graph_calls[t].partition_point(|s| s.0 < rs);
            let ks: Vec<usize> = (first..graph_calls[t].len())
                .take_while(|&k| graph_calls[t][k].0 <= re)
                .filter(|&k| inside(&graph_calls[t][k]))
                .collect();
            out.graphs += ks.len() as u64;
            if ks.len() < 2 {
                continue;
            }
            let mut call = BrokenCall {
                region: trace.name(trace.cpu[ri as usize].name).to_string(),
                start: rs,
                dur: re - rs,
                graphs: ks.len() as u32,
                nested_regions: nested,
                host_between: 0,
                gpu_idle_between: 0,
            };
            for w in ks.windows(2) {
                let (a, b) = (graph_calls[t][w[0]], graph_calls[t][w[1]]);
                if b.0 > a.1 {
                    let between = Interval::new(a.1, b.0);
                    call.host_between += between.len() - compile.covered_within(between);
                }
                if let (Some(ha), Some(hb)) = (hulls[t][w[0]], hulls[t][w[1]]) {
                    if ha.0 == hb.0 && hb.1 > ha.2 {
                        let gap = Interval::new(ha.2, hb.1);
                        let covered = busy
                            .iter()
                            .find(|(d, _)| *d == ha.0)
                            .map_or(0, |(_, s)| s.covered_within(gap));
                        call.gpu_idle_between += gap.len() - covered;
                        match spans.iter_mut().find(|(d, _)| *d == ha.0) {
                            Some((_, v)) => v.push(gap),
                            None => spans.push((ha.0, vec![gap])),
                        }
                    }
                }
            }
            out.breaks += ks.len() as u64 - 1;
            out.host_between += call.host_between;
            out.gpu_idle_between += call.gpu_idle_between;
            out.broken.push(call);
        }
    }
    spans.sort_by_key(|(d, _)| *d);
    out.break_spans = spans
        .into_iter()
        .map(|(d, v)| (d, IntervalSet::from_intervals(v)))
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut regions: Vec<String> = names
        .into_iter()
        .map(|n| trace.name(crate::model::NameId(n)).to_string())
        .collect();
    regions.sort();
    out.regions = regions;
    out.broken.sort_by(|a, b| {
        b.host_between
            .cmp(&a.host_between)
            .then(a.start.cmp(&b.start))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::build::TraceBuilder;

    fn everything() -> IntervalSet {
        IntervalSet::from_intervals([Interval::new(0, 1_000_000_000)])
    }

    /// One call of a compiled function with `graphs` graphs, each launching one 50 µs kernel,
    /// and `eager_us` of eager host work (one aten op and its kernel) between graphs.
    fn broken(b: &mut TraceBuilder, at: f64, graphs: usize, eager_us: f64) {
        let per = 20.0 + eager_us;
        let len = per * graphs as f64;
        b.op("Torch-Compiled Region: 0/0", at, len);
        for k in 0..graphs {
            let s = at + per * k as f64;
            if k > 0 {
                b.op("Torch-Compiled Region: 1/0", s - 1.0, len - per * k as f64);
            }
            let ext = b.op("## Call CompiledFxGraph fabc", s, 20.0);
            let tk = b.op("triton_poi_fused_add_0", s + 1.0, 10.0);
            let _ = ext;
            let c = b.runtime("cudaLaunchKernel", tk, s + 2.0, 5.0);
            // the device runs each graph's kernel 100 µs after its launch
            b.gpu(
                GpuKind::Kernel,
                "triton_poi_fused_add_0",
                0,
                7,
                s + 100.0,
                15.0,
                c,
            );
            if k + 1 < graphs {
                // the eager op between graphs launches a 5 µs kernel
                let op = b.op("aten::nonzero", s + 20.0, eager_us);
                let c = b.runtime("cudaLaunchKernel", op, s + 21.0, 3.0);
                b.gpu(GpuKind::Kernel, "nonzero_kernel", 0, 7, s + 121.0, 5.0, c);
            }
        }
    }

    #[test]
    fn breaks_host_time_and_gpu_idle_between_graphs() {
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
        broken(&mut b, 0.0, 3, 80.0);
        let t = b.build();
        let f = compiled_facts(&t, &everything(), &IntervalSet::default());
        assert_eq!((f.calls, f.graphs, f.breaks), (1, 3, 2));
        assert_eq!(f.broken[0].nested_regions, 2);
        // 80 µs of eager work between each pair of graphs
        assert_eq!(f.host_between, 160_000);
        // recompiling between the graphs (30 µs of compile work in the first gap, from 30 to
        // 60 µs): that time is compile work, not eager Python
        let compile = IntervalSet::from_intervals([Interval::new(30_000, 60_000)]);
        let g = compiled_facts(&t, &everything(), &compile);
        assert_eq!(g.host_between, 130_000);
        // graph kernels at 100..115 and 200..215, eager kernel at 121..126: idle 6 + 74 µs
        // per break
        assert_eq!(f.gpu_idle_between, 2 * (6_000 + 74_000));
        assert_eq!(
            f.regions,
            ["Torch-Compiled Region: 0/0", "Torch-Compiled Region: 1/0"]
        );
        // the Triton kernels (45 µs) have no aten op; the eager kernels (10 µs) have one
        assert_eq!((f.kernel_time, f.compiled_kernel_time), (55_000, 55_000));
        assert_eq!((f.hidden_kernel_time, f.hidden_kernel_names), (45_000, 1));
        assert!(f.between_graphs(0, Interval::new(126_000, 200_000)));
        assert!(!f.between_graphs(0, Interval::new(90_000, 100_000)));
    }

    #[test]
    fn one_graph_per_call_is_no_break() {
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
        broken(&mut b, 0.0, 1, 80.0);
        broken(&mut b, 1000.0, 1, 80.0);
        let f = compiled_facts(&b.build(), &everything(), &IntervalSet::default());
        assert_eq!((f.calls, f.graphs, f.breaks), (2, 2, 0));
        assert!(f.broken.is_empty());
        assert_eq!(f.regions, ["Torch-Compiled Region: 0/0"]);
    }

    #[test]
    fn no_region_no_facts() {
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
        b.op_with_kernel("aten::mm", "gemm", 0.0, 10.0, 20.0, 10.0);
        assert_eq!(
            compiled_facts(&b.build(), &everything(), &IntervalSet::default()),
            CompiledFacts::default()
        );
    }
}
