//! Rules on `torch.compile`d code ([`crate::analysis::compiled`]): `graph-breaks`.

use super::host::break_claim;
use super::{count, fmt_ns, fmt_us_sentence, metric, short, Evidence, Facts, Finding};

/// Share of the step of GPU idle between graphs above which `graph-breaks` fires.
pub const BREAK_SHARE: f64 = 0.01;

/// All rules on compiled code.
pub fn rules(f: &Facts) -> Vec<Finding> {
    graph_breaks(f).into_iter().collect()
}

/// `graph-breaks`: compiled calls that ran several graphs with eager host work between them.
/// It claims the device idle between the graphs' work caused by that host work (launch
/// overhead, CPU work, allocation; syncs stay with `host-sync`), whatever the gap's length.
fn graph_breaks(f: &Facts) -> Option<Finding> {
    let c = &f.a.compiled;
    if c.breaks == 0 {
        return None;
    }
    let (idle, _) = break_claim(f);
    let rec = f.per_step_us(idle);
    let host = f.per_step_us(c.host_between);
    if f.share_of_step(rec) < BREAK_SHARE && f.share_of_step(host) < BREAK_SHARE {
        return None;
    }
    let steps = f.n_steps as f64;
    let broken = c.broken.len() as f64;
    let mut e = Evidence::default();
    e.facts.push(format!(
        "{} compiled call(s) per step ran {:.1} graphs each on average ({} graph breaks per \
         step); regions: {}",
        fmt_count(broken / steps),
        c.broken.iter().map(|b| b.graphs as f64).sum::<f64>() / broken,
        fmt_count(c.breaks as f64 / steps),
        short(&c.regions.join(", "), 160)
    ));
    e.facts.push(format!(
        "eager host work between graphs: {} per step; the GPU sat idle {} per step between the \
         graphs' work ({} of it waiting for that host work)",
        fmt_us_sentence(host),
        fmt_us_sentence(f.per_step_us(c.gpu_idle_between)),
        fmt_us_sentence(rec)
    ));
    if let Some(b) = c.broken.first() {
        e.facts.push(format!(
            "largest: {} ran {} graphs with {} of host work between them ({} nested region(s): \
             the resume functions after the breaks)",
            b.region,
            b.graphs,
            fmt_ns(b.host_between as f64),
            b.nested_regions
        ));
        e.locations
            .push(f.location("compiled call", &b.region, b.start, b.dur));
    }
    metric(&mut e, "gpu_idle_us_per_step", rec);
    metric(&mut e, "host_between_us_per_step", host);
    metric(&mut e, "breaks_per_step", c.breaks as f64 / steps);
    metric(&mut e, "broken_calls_per_step", broken / steps);
    let advice = vec![
        "Find the breaks: `TORCH_LOGS=graph_breaks python train.py` prints each break with its \
         reason and source line; `torch._dynamo.explain(model)(*inputs)` counts graphs and \
         breaks without running the training loop."
            .to_string(),
        "Make them errors while fixing them: `torch.compile(model, fullgraph=True)` fails at \
         the first break instead of running eagerly around it."
            .into(),
        "Common causes: `.item()`, `.tolist()`, `print` or data-dependent Python branches on \
         tensor values in `forward`; keep them out of the compiled function, or set \
         `torch._dynamo.config.capture_scalar_outputs=True` for `.item()`."
            .into(),
    ];
    Some(Finding {
        id: "graph-breaks",
        severity: f.severity(rec),
        title: format!(
            "Graph breaks: {} breaks per step, the GPU waits {} per step for eager code between \
             compiled graphs",
            fmt_count(c.breaks as f64 / steps),
            fmt_us_sentence(rec)
        ),
        recoverable_us: rec,
        recoverable_basis: "device idle, per step, between the work of consecutive graphs of \
                            one compiled call while the host ran the eager code between them \
                            (launch overhead, operators, Python, allocation); one graph would \
                            queue that work back to back"
            .into(),
        evidence: e,
        advice,
    })
}

/// A per-step count: whole numbers without decimals.
fn fmt_count(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        count(x.round() as u64)
    } else {
        format!("{x:.1}")
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnose::testutil::{find, run};
    use crate::model::build::TraceBuilder;
    use crate::model::GpuKind;

    /// A step of one compiled call with `graphs` graphs, `eager_us` of eager work between
    /// graphs; the device runs each graph's kernel 2 µs after its launch.
    fn step(graphs: usize, eager_us: f64) -> crate::model::Trace {
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
        let per = 20.0 + eager_us;
        let len = per * (graphs - 1) as f64 + 20.0;
        b.annotation("ProfilerStep#0", 0.0, len + 10.0);
        b.op("Torch-Compiled Region: 0/0", 1.0, len);
        for k in 0..graphs {
            let s = 1.0 + per * k as f64;
            b.op("## Call CompiledFxGraph fabc", s, 20.0);
            let tk = b.op("triton_poi_fused_add_0", s + 1.0, 10.0);
            let c = b.runtime("cudaLaunchKernel", tk, s + 2.0, 5.0);
            b.gpu(
                GpuKind::Kernel,
                "triton_poi_fused_add_0",
                0,
                7,
                s + 9.0,
                10.0,
                c,
            );
            if k + 1 < graphs {
                b.op("aten::nonzero", s + 20.0, eager_us);
            }
        }
        b.build()
    }

    #[test]
    fn graph_breaks_claim_the_idle_between_graphs() {
        let d = run(&step(3, 300.0));
        let g = find(&d, "graph-breaks").expect("graph-breaks");
        // kernels at 10..20, 330..340, 650..660: 310 µs idle between each pair, while the host
        // ran the eager op
        assert_eq!(g.recoverable_us, 620.0);
        assert_eq!(g.evidence.metrics["breaks_per_step"], 2.0);
        assert_eq!(g.evidence.metrics["host_between_us_per_step"], 600.0);
        // launch-bound and gpu-idle-gaps do not claim the same idle
        for x in &d.findings {
            if matches!(x.id, "launch-bound" | "gpu-idle-gaps") {
                assert!(x.recoverable_us < 620.0 * 0.05, "{x:?}");
            }
        }
        assert!(d.verdict.starts_with("Graph breaks"), "{}", d.verdict);
    }

    /// A step of two graph replays of 20 kernels of 10 µs, 20 µs apart on the device (the
    /// graph's own dependencies), on a device clock 400 µs behind the host's (under the
    /// capture check's 1 ms): most kernels start before their launch call, so the gap
    /// attribution finds the host late, in Python (operators) — launch-bound, were it not a
    /// replay.
    fn replays() -> crate::model::Trace {
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
        b.annotation("ProfilerStep#0", 0.0, 1700.0);
        for r in 0..2 {
            let at = 405.0 + 600.0 * r as f64;
            b.op("aten::add", at - 400.0, 399.0);
            let c = b.runtime("cudaGraphLaunch", 0, at, 5.0);
            for k in 0..20 {
                let s = at - 400.0 + 30.0 * k as f64;
                b.gpu(GpuKind::Kernel, "gemm", 0, 7, s, 10.0, c);
            }
        }
        b.build()
    }

    #[test]
    fn no_launch_bound_inside_graph_replays() {
        let t = replays();
        let d = run(&t);
        // 2 × 19 gaps of 20 µs inside the replays: not launch overhead
        assert!(find(&d, "launch-bound").is_none(), "{:?}", d.findings);
        assert!(!d.verdict.contains("launch-bound"), "{}", d.verdict);
        let a = crate::diagnose::testutil::analysis(&t);
        let g = &a.graphs;
        assert_eq!((g.launches, g.with_kernels, g.kernels), (2, 2, 40));
        assert_eq!((g.busy, g.span), (400_000, 1_160_000));
    }

    #[test]
    fn one_graph_per_call_no_finding() {
        let d = run(&step(1, 300.0));
        assert!(find(&d, "graph-breaks").is_none());
    }
}
