//! Iterations of inference servers: the steps of a capture that has no `ProfilerStep#N`.
//!
//! vLLM, SGLang and similar servers run one *iteration* per scheduler tick (one forward
//! pass over the current batch) and mark it with an annotation instead of a profiler step.
//! [`find_iterations`] recognises those marks and [`crate::window::steps`] treats each
//! iteration as a step (breakdown, device extension, steady state, `--steps`). The
//! [`StepRule`] that found the steps is reported, and [`crate::analysis::iterations::summarize`] gives the facts an
//! inference engineer asks for first: how many iterations of each kind (prefill, decode,
//! mixed), how long each kind takes, and how much time passes *between* iterations (the
//! scheduler's host time, during which the GPU has nothing of the iteration to run).
//!
//! # Rules, in priority order (the first that matches anything wins)
//!
//! | rule | host spans (`user_annotation` or `cpu_op`) | kind |
//! |---|---|---|
//! | [`StepRule::VllmExecute`] | name starts with `execute_` and holds `context_C` and `generation_G` (vLLM's detailed `execute_N_context_C(…)_generation_G(…)` and native `execute_context_C(…)_generation_G(…)`) | C requests in prefill, G in decode: prefill when only C > 0, decode when only G > 0, mixed when both |
//! | [`StepRule::VllmExecute`] | `execute_new_N_cached_M` (N new requests, M already running) | prefill when only N > 0, decode when only M > 0, mixed when both |
//! | [`StepRule::VllmExecute`] | exactly `execute_model` | not known |
//! | [`StepRule::SglangStep`] | `step[EXTEND …]`, `step[DECODE …]`, `step[MIXED …]`; ATOM's `prefill[…]` / `decode[…]` | EXTEND and prefill = prefill, DECODE and decode = decode, MIXED = mixed |
//! | [`StepRule::SglangStep`] | exactly `forward_batch`, `run_batch`, `forward_batch_generation`, `forward_extend` (prefill), `forward_decode` (decode), `forward_mixed` (mixed) | as named, else not known |
//! | [`StepRule::GraphLaunch`] | no mark above, at least 2 `cudaGraphLaunch`/`hipGraphLaunch` calls: one iteration per launch, from that launch to the next (the last one to its own end) | decode (a replayed graph is a decode step in both servers) |
//!
//! Marks nested inside a mark of the same rule are not iterations (the outer one is), so a
//! server that wraps `step[…]` in `run_batch` gets one iteration per tick. Iterations take
//! the names `Iteration#1`, `Iteration#2`, … in time order; `--steps 3..5` selects by that
//! number.
//!
//! # Known limits
//!
//! * The graph-launch rule cannot tell a full-graph decode loop (one replay per iteration)
//!   from piecewise graphs (several replays per forward pass); it is used only when no
//!   annotation marks the iterations, and the report names it so that the reader can judge.
//! * Phases come from the annotation's text only; an unmarked iteration has no phase.

use serde::Serialize;

use crate::model::{CpuKind, Interval, Trace};

/// Which rule found a trace's steps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepRule {
    /// `ProfilerStep#N` spans (torch.profiler's schedule).
    ProfilerStep,
    /// vLLM's `execute_*` iteration annotations.
    VllmExecute,
    /// SGLang's `step[…]`, `forward_batch`/`run_batch` and ATOM's `prefill[…]`/`decode[…]`.
    SglangStep,
    /// One `cudaGraphLaunch`/`hipGraphLaunch` per iteration.
    GraphLaunch,
    /// No mark: the whole trace is one step `"0"`.
    #[default]
    WholeTrace,
}

impl StepRule {
    /// Stable identifier (JSON).
    pub fn as_str(&self) -> &'static str {
        match self {
            StepRule::ProfilerStep => "profiler_step",
            StepRule::VllmExecute => "vllm_execute",
            StepRule::SglangStep => "sglang_step",
            StepRule::GraphLaunch => "graph_launch",
            StepRule::WholeTrace => "whole_trace",
        }
    }

    /// What the rule looks for, for the report.
    pub fn describe(&self) -> &'static str {
        match self {
            StepRule::ProfilerStep => "ProfilerStep#N spans",
            StepRule::VllmExecute => "vLLM execute_* annotations, one per iteration",
            StepRule::SglangStep => "SGLang step[…]/forward_batch annotations, one per iteration",
            StepRule::GraphLaunch => {
                "one cudaGraphLaunch per iteration (no iteration annotation in the trace)"
            }
            StepRule::WholeTrace => "no step marks: the whole trace is one step",
        }
    }

    /// True for the rules that find server iterations.
    pub fn is_iteration(&self) -> bool {
        matches!(
            self,
            StepRule::VllmExecute | StepRule::SglangStep | StepRule::GraphLaunch
        )
    }
}

/// Kind of work an iteration does, from its annotation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IterationPhase {
    /// Only new prompts (context / extend).
    Prefill,
    /// Only generation of next tokens.
    Decode,
    /// Both in one batch (chunked prefill).
    Mixed,
}

impl IterationPhase {
    /// Stable identifier.
    pub fn as_str(&self) -> &'static str {
        match self {
            IterationPhase::Prefill => "prefill",
            IterationPhase::Decode => "decode",
            IterationPhase::Mixed => "mixed",
        }
    }

    fn of_counts(context: u64, generation: u64) -> Option<IterationPhase> {
        match (context > 0, generation > 0) {
            (true, false) => Some(IterationPhase::Prefill),
            (false, true) => Some(IterationPhase::Decode),
            (true, true) => Some(IterationPhase::Mixed),
            (false, false) => None,
        }
    }
}

/// The number right after `key` in `s` (e.g. `context_` in `execute_context_2(…)`).
fn number_after(s: &str, key: &str) -> Option<u64> {
    let at = s.find(key)? + key.len();
    let digits: &str = &s[at..];
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    digits[..end].parse().ok()
}

/// The rule and phase an annotation name marks, if it marks an iteration.
pub fn classify_mark(name: &str) -> Option<(StepRule, Option<IterationPhase>)> {
    if name == "execute_model" {
        return Some((StepRule::VllmExecute, None));
    }
    if let Some(rest) = name.strip_prefix("execute_") {
        if rest.contains("context_") && rest.contains("generation_") {
            let c = number_after(rest, "context_")?;
            let g = number_after(rest, "generation_")?;
            return Some((StepRule::VllmExecute, IterationPhase::of_counts(c, g)));
        }
        if let Some(tail) = rest.strip_prefix("new_") {
            let n = number_after(tail, "")?;
            let m = number_after(tail, "cached_")?;
            return Some((StepRule::VllmExecute, IterationPhase::of_counts(n, m)));
        }
        return None;
    }
    if let Some(body) = name.strip_prefix("step[") {
        let phase = if body.starts_with("EXTEND") {
            IterationPhase::Prefill
        } else if body.starts_with("DECODE") {
            IterationPhase::Decode
        } else if body.starts_with("MIXED") {
            IterationPhase::Mixed
        } else {
            return None;
        };
        return name
            .ends_with(']')
            .then_some((StepRule::SglangStep, Some(phase)));
    }
    if name.ends_with(']') {
        if name.starts_with("prefill[") {
            return Some((StepRule::SglangStep, Some(IterationPhase::Prefill)));
        }
        if name.starts_with("decode[") {
            return Some((StepRule::SglangStep, Some(IterationPhase::Decode)));
        }
    }
    match name {
        "forward_batch" | "run_batch" | "forward_batch_generation" => {
            Some((StepRule::SglangStep, None))
        }
        "forward_extend" => Some((StepRule::SglangStep, Some(IterationPhase::Prefill))),
        "forward_decode" => Some((StepRule::SglangStep, Some(IterationPhase::Decode))),
        "forward_mixed" => Some((StepRule::SglangStep, Some(IterationPhase::Mixed))),
        _ => None,
    }
}

/// One iteration found on the host.
#[derive(Clone, Debug, PartialEq)]
pub struct HostIteration {
    /// Host span of the mark (or launch to next launch).
    pub host: Interval,
    /// Prefill / decode / mixed, when the mark says.
    pub phase: Option<IterationPhase>,
}

fn is_graph_launch(name: &str) -> bool {
    matches!(
        name,
        "cudaGraphLaunch" | "hipGraphLaunch" | "cudaGraphLaunch_v10000" | "cuGraphLaunch"
    )
}

/// The iterations of a trace without `ProfilerStep#N`, with the rule that found them; `None`
/// when no rule matches (see the module docs).
pub fn find_iterations(trace: &Trace) -> Option<(StepRule, Vec<HostIteration>)> {
    // marks per rule, in start order (trace.cpu is in start order)
    let mut marks: [Vec<(u32, HostIteration)>; 2] = [Vec::new(), Vec::new()];
    let mut memo = crate::model::fast::NameMemo::new(trace, classify_mark);
    for e in &trace.cpu {
        if !matches!(e.kind, CpuKind::UserAnnotation | CpuKind::Op) {
            continue;
        }
        let Some((rule, phase)) = memo.get(e.name) else {
            continue;
        };
        let slot = usize::from(rule == StepRule::SglangStep);
        let list = &mut marks[slot];
        let host = e.interval();
        // nested in (or a duplicate of) an earlier mark of the same rule: not an iteration
        if list
            .iter()
            .rev()
            .take(8)
            .any(|(t, m)| *t == e.thread && m.host.start <= host.start && host.end <= m.host.end)
        {
            continue;
        }
        list.push((e.thread, HostIteration { host, phase }));
    }
    for (slot, rule) in [(0, StepRule::VllmExecute), (1, StepRule::SglangStep)] {
        if !marks[slot].is_empty() {
            let its = std::mem::take(&mut marks[slot])
                .into_iter()
                .map(|(_, m)| m)
                .collect();
            return Some((rule, its));
        }
    }
    let launches: Vec<Interval> = trace
        .cpu
        .iter()
        .filter(|e| {
            matches!(e.kind, CpuKind::Runtime | CpuKind::Driver)
                && is_graph_launch(trace.name(e.name))
        })
        .map(|e| e.interval())
        .collect();
    if launches.len() < 2 {
        return None;
    }
    let its = launches
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let end = launches.get(i + 1).map_or(l.end, |n| n.start.max(l.end));
            HostIteration {
                host: Interval::new(l.start, end),
                phase: Some(IterationPhase::Decode),
            }
        })
        .collect();
    Some((StepRule::GraphLaunch, its))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_of_vllm_and_sglang() {
        use IterationPhase::*;
        let v = Some(StepRule::VllmExecute);
        let s = Some(StepRule::SglangStep);
        let cases: &[(&str, Option<StepRule>, Option<IterationPhase>)] = &[
            (
                "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)",
                v,
                Some(Decode),
            ),
            (
                "execute_context_1(888_788544)_generation_0(0)",
                v,
                Some(Prefill),
            ),
            ("execute_context_2(6144)_generation_3(3)", v, Some(Mixed)),
            ("execute_new_4_cached_0", v, Some(Prefill)),
            ("execute_new_0_cached_12", v, Some(Decode)),
            ("execute_new_1_cached_12", v, Some(Mixed)),
            ("execute_model", v, None),
            ("step[DECODE bs=32]", s, Some(Decode)),
            ("step[EXTEND bs=15 toks=15360]", s, Some(Prefill)),
            ("step[MIXED bs=2]", s, Some(Mixed)),
            ("prefill[bs=2 tok=14721 ctx=[7803, 6918]]", s, Some(Prefill)),
            ("decode[bs=64 tok=64 d=64]", s, Some(Decode)),
            ("run_batch", s, None),
            ("forward_decode", s, Some(Decode)),
        ];
        for (name, rule, phase) in cases {
            let got = classify_mark(name);
            assert_eq!(got.map(|g| g.0), *rule, "{name}");
            if rule.is_some() {
                assert_eq!(got.unwrap().1, *phase, "{name}");
            }
        }
        for other in [
            "sglang_profiler::forward_batch_info_compute_position_339",
            "execute_something",
            "step[OTHER]",
            "ProfilerStep#3",
            "decode",
            "aten::mm",
        ] {
            assert_eq!(classify_mark(other), None, "{other}");
        }
    }
}
