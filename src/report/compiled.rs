//! The report's `graphs` and `compiled` sections: CUDA/HIP graph replays
//! ([`crate::analysis::graphs`]) and `torch.compile`d code ([`crate::analysis::compiled`]),
//! in µs, each with the sentence the renderers print.

use serde::Serialize;

use crate::analysis::compiled::CompiledFacts;
use crate::analysis::graphs::GraphReplays;
use crate::model::Ns;

/// Share of the window's kernel time from which compiled code "hides detail".
pub const HIDDEN_SHARE: f64 = 0.5;

fn us(ns: Ns) -> f64 {
    ns as f64 / 1000.0
}

fn ms(ns: Ns) -> String {
    crate::diagnose::fmt_ns(ns as f64)
}

/// Graph replays in the window (absent without any).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct GraphsInfo {
    /// Graph launch calls in the window.
    pub launches: u64,
    /// Replays whose kernels are in the trace.
    pub with_kernels: u64,
    /// Replays traced as one whole-graph span (busy time known, kernels not).
    pub whole_graph: u64,
    /// Replays with nothing in the trace.
    pub missing: u64,
    /// Device activities of the replays in the trace.
    pub kernels: u64,
    /// Of them, with a graph id.
    pub kernels_with_graph_id: u64,
    /// Activities with a graph id and no link to a launch call.
    pub unlinked_graph_kernels: u64,
    /// Device time covered by replay activities, µs.
    pub busy_us: f64,
    /// Device time from each replay's first activity to its last, µs.
    pub span_us: f64,
    /// Of the span, idle (the graph's own dependencies; no host rule claims it), µs.
    pub idle_inside_us: f64,
    /// Host time in the graph launch calls, µs.
    pub launch_call_us: f64,
    /// Activities in the largest replay.
    pub max_kernels_per_replay: u64,
    /// What the trace knows of them, in one sentence.
    pub summary: String,
}

impl GraphsInfo {
    /// `None` without graph launches in the window.
    pub fn new(g: &GraphReplays) -> Option<GraphsInfo> {
        if g.launches == 0 {
            return None;
        }
        let mut parts = vec![format!(
            "{} CUDA/HIP graph launch{} in the window",
            g.launches,
            if g.launches == 1 { "" } else { "es" }
        )];
        if g.with_kernels > 0 {
            parts.push(format!(
                "{} with {} kernels in the trace (up to {} per replay; busy {} over {} of \
                 replay span): per-kernel detail known",
                g.with_kernels,
                g.kernels,
                g.max_kernels_per_replay,
                ms(g.busy),
                ms(g.span)
            ));
        }
        if g.whole_graph > 0 {
            parts.push(format!(
                "{} traced as whole graphs: busy time known, per-kernel detail not (profile \
                 with nsys --cuda-graph-trace=node)",
                g.whole_graph
            ));
        }
        if g.missing > 0 {
            parts.push(format!(
                "{} with no device activity in the trace: their GPU time is unknown, not zero",
                g.missing
            ));
        }
        let mut summary = parts.join("; ");
        summary.push_str(
            ". Launch overhead and launch-bound advice do not apply inside a replay: gaps \
             there are the graph's own.",
        );
        Some(GraphsInfo {
            launches: g.launches,
            with_kernels: g.with_kernels,
            whole_graph: g.whole_graph,
            missing: g.missing,
            kernels: g.kernels,
            kernels_with_graph_id: g.kernels_with_graph_id,
            unlinked_graph_kernels: g.unlinked_graph_kernels,
            busy_us: us(g.busy),
            span_us: us(g.span),
            idle_inside_us: us(g.idle_inside()),
            launch_call_us: us(g.launch_call_time),
            max_kernels_per_replay: g.max_kernels_per_replay,
            summary,
        })
    }
}

/// Compiled code in the window (absent without `Torch-Compiled Region` ranges).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct CompiledInfo {
    /// Top-level compiled calls.
    pub calls: u64,
    /// Distinct region names (`Torch-Compiled Region: F/C`).
    pub regions: Vec<String>,
    /// Compiled-graph calls.
    pub graphs: u64,
    /// Graph breaks (graphs − 1 over the calls with several graphs).
    pub breaks: u64,
    /// Host time between graphs of broken calls, µs.
    pub host_between_us: f64,
    /// Device idle between their graphs' work, µs.
    pub gpu_idle_between_us: f64,
    /// Kernel time in the window, µs.
    pub kernel_us: f64,
    /// Of it, launched inside compiled regions, µs.
    pub compiled_kernel_us: f64,
    /// Of that, with no `aten::` operator owning the launch (Inductor/Triton kernels), µs.
    pub hidden_kernel_us: f64,
    /// `hidden_kernel_us / kernel_us` (0 without kernels).
    pub hidden_share: f64,
    /// Distinct names of those kernels.
    pub hidden_kernel_names: u64,
    /// What the compiled code looks like, in one sentence.
    pub summary: String,
    /// Set when at least [`HIDDEN_SHARE`] of the kernel time has no operator: what that hides
    /// and how to get per-operator detail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hides_detail: Option<String>,
}

impl CompiledInfo {
    /// `None` without compiled calls in the window.
    pub fn new(c: &CompiledFacts) -> Option<CompiledInfo> {
        if c.calls == 0 {
            return None;
        }
        let share = if c.kernel_time > 0 {
            c.hidden_kernel_time as f64 / c.kernel_time as f64
        } else {
            0.0
        };
        let mut summary = format!(
            "{} call(s) of compiled code ({}) ran {} compiled graph call(s)",
            c.calls,
            c.regions.join(", "),
            c.graphs
        );
        if c.graphs == 0 {
            summary.push_str(" (no compiled-graph call ranges recorded: breaks cannot be counted)");
        } else if c.breaks > 0 {
            summary.push_str(&format!(
                "; {} graph break(s): {} of eager host work between graphs, GPU idle {} there \
                 (see graph-breaks)",
                c.breaks,
                ms(c.host_between),
                ms(c.gpu_idle_between)
            ));
        } else {
            summary.push_str("; no graph break (one graph per call)");
        }
        summary.push_str(&format!(
            "; {:.1}% of kernel time launched inside them (graph replays apart), {:.1}% with no \
             aten operator below",
            percent_of(c.compiled_kernel_time, c.kernel_time),
            share * 100.0
        ));
        let hides_detail = (share >= HIDDEN_SHARE).then(|| {
            format!(
                "Compiled code hides detail: {:.1}% of GPU kernel time ({} kernel names) is \
                 Inductor/Triton kernels launched inside compiled regions with no aten operator \
                 below them, so the operator table cannot say which model operators that time \
                 belongs to. For per-operator detail: profile the same steps without \
                 torch.compile; or run with TORCH_COMPILE_DEBUG=1 (Inductor writes each \
                 kernel's source with the aten operators it fused); the kernel names list the \
                 fused operators too (triton_poi_fused_add_mul_0 fuses add and mul).",
                share * 100.0,
                c.hidden_kernel_names
            )
        });
        Some(CompiledInfo {
            calls: c.calls,
            regions: c.regions.clone(),
            graphs: c.graphs,
            breaks: c.breaks,
            host_between_us: us(c.host_between),
            gpu_idle_between_us: us(c.gpu_idle_between),
            kernel_us: us(c.kernel_time),
            compiled_kernel_us: us(c.compiled_kernel_time),
            hidden_kernel_us: us(c.hidden_kernel_time),
            hidden_share: share,
            hidden_kernel_names: c.hidden_kernel_names,
            summary,
            hides_detail,
        })
    }
}

/// `part` as a percentage of `total` (a number, not text; 0 without a total).
fn percent_of(part: Ns, total: Ns) -> f64 {
    if total > 0 {
        part as f64 * 100.0 / total as f64
    } else {
        0.0
    }
}
