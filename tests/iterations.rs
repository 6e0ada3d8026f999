//! Iterations of inference servers as steps: marks of vLLM and SGLang, one graph replay per
//! iteration, the kinds of iterations, the gaps between them, the steady state and
//! `--steps`, on traces built here and on the serving traces of the TraceLens corpus.

mod common;

use stallscope::analysis::iterations::summarize;
use stallscope::analysis::{analyze, AnalyzeOptions};
use stallscope::model::build::TraceBuilder;
use stallscope::model::{GpuKind, Trace};
use stallscope::window::annotations::Annotations;
use stallscope::window::iterations::{IterationPhase, StepRule};
use stallscope::window::steps::analyze_steps;
use stallscope::window::{self, WindowSpec};

/// An iteration: a mark of `host_us` from `at`, launching `kernels` kernels of 100 µs each,
/// back to back from `at + 20`, launched 5 µs apart from `at + 5`.
fn iteration(b: &mut TraceBuilder, mark: &str, at: f64, host_us: f64, kernels: usize) {
    b.annotation(mark, at, host_us);
    for k in 0..kernels {
        let t = at + 5.0 + 5.0 * k as f64;
        let corr = b.runtime("cudaLaunchKernel", 0, t, 2.0);
        b.gpu(
            GpuKind::Kernel,
            "gemm_kernel",
            0,
            7,
            at + 20.0 + 100.0 * k as f64,
            100.0,
            corr,
        );
    }
}

const PREFILL: &str = "execute_context_2(512)_generation_0(0)";
const DECODE: &str = "execute_context_0(0)_generation_8(8)";

/// A prefill, then `decodes` decodes; every mark lasts longer than its kernels (host-bound
/// server) and the scheduler takes 300 µs between marks. The decode `slow` (1-based
/// iteration number, 0 = none) has 3× the kernels.
fn server(decodes: usize, slow: usize) -> Trace {
    let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
    let mut at = 0.0;
    // prefill: 20 kernels (2 ms of GPU) in a 2.5 ms mark
    iteration(&mut b, PREFILL, at, 2500.0, 20);
    at += 2500.0 + 300.0;
    for i in 0..decodes {
        let n = if i + 2 == slow { 12 } else { 4 };
        let host = 100.0 * n as f64 + 100.0;
        iteration(&mut b, DECODE, at, host, n);
        at += host + 300.0;
    }
    b.build()
}

#[test]
fn vllm_marks_are_iterations_with_kinds_and_gaps() {
    let t = server(5, 0);
    let s = analyze_steps(&t);
    assert_eq!(s.rule, StepRule::VllmExecute);
    assert!(!s.from_profiler_steps);
    let names: Vec<&str> = s.steps.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "Iteration#1",
            "Iteration#2",
            "Iteration#3",
            "Iteration#4",
            "Iteration#5",
            "Iteration#6"
        ]
    );
    assert_eq!(s.steps[0].phase, Some(IterationPhase::Prefill));
    assert!(s.steps[1..]
        .iter()
        .all(|x| x.phase == Some(IterationPhase::Decode)));
    // kernels end before the mark does: every iteration is its mark, 20 and 4 launches
    assert_eq!(s.steps[0].span.len(), 2_500_000);
    assert_eq!(s.steps[0].device_activities, 20);
    assert_eq!(s.steps[1].span.len(), 500_000);
    assert_eq!(s.steps[0].breakdown.kernel, 2_000_000);
    assert_eq!(s.steps[1].breakdown.kernel, 400_000);
    assert!(s.dropped.is_empty(), "{:?}", s.dropped);

    let sum = summarize(s.rule, &s.steps).unwrap();
    assert_eq!(sum.count, 6);
    assert_eq!(sum.gaps, 5);
    // the scheduler's 300 µs between marks, during which no iteration has GPU work
    assert_eq!(sum.mean_host_gap, 300_000.0);
    assert_eq!(sum.mean_idle_gap, 300_000.0);
    assert_eq!(sum.idle_gap_total, 1_500_000);
    let kinds: Vec<(&str, u64, f64)> = sum
        .phases
        .iter()
        .map(|p| (p.phase, p.count, p.mean))
        .collect();
    assert_eq!(
        kinds,
        [("prefill", 1, 2_500_000.0), ("decode", 5, 500_000.0)]
    );

    // the steady state is the run of decodes (the dominant kind); the lone prefill is
    // compared with them, not judged with them (issue 30)
    let a = Annotations::build(&t);
    let w = window::select(&t, &s, &a, &WindowSpec::Auto).unwrap();
    assert_eq!(w.steps, vec![1, 2, 3, 4, 5], "{:?}", w.excluded);
    assert_eq!(w.judged_kind, Some(Some(IterationPhase::Decode)));
    assert_eq!(w.excluded.len(), 1);
    assert!(
        w.excluded[0].reason.starts_with("other kind (prefill)"),
        "{:?}",
        w.excluded
    );
    assert_eq!(w.one_pass, None);
    // --steps selects iterations by number
    let w = window::select(
        &t,
        &s,
        &a,
        &WindowSpec::Steps {
            first: Some(2),
            last: Some(4),
        },
    )
    .unwrap();
    assert_eq!(w.steps, vec![1, 2, 3]);
}

#[test]
fn a_slow_decode_is_an_outlier_among_decodes() {
    let t = server(5, 4);
    let s = analyze_steps(&t);
    let a = Annotations::build(&t);
    let w = window::select(&t, &s, &a, &WindowSpec::Auto).unwrap();
    assert_eq!(w.steps, vec![1, 2, 4, 5]);
    assert_eq!(w.excluded.len(), 2);
    assert_eq!(w.excluded[1].step, "Iteration#4");
    assert!(
        w.excluded[1].reason.starts_with("outlier"),
        "{:?}",
        w.excluded
    );
}

/// Two captures of one server run (different lengths of the same loop) get the same verdict
/// and the same first findings.
#[test]
fn two_captures_of_one_run_agree() {
    let diag = |t: &Trace| {
        let a = analyze(t, &AnalyzeOptions::default());
        let d = stallscope::diagnose::diagnose(t, &a);
        let ids: Vec<String> = d
            .findings
            .iter()
            .take(3)
            .map(|f| f.id.to_string())
            .collect();
        (d.verdict, ids)
    };
    let (v1, f1) = diag(&server(4, 0));
    let (v2, f2) = diag(&server(9, 0));
    assert_eq!(f1, f2);
    // the verdict's figures may differ in the last digit; its first clause may not
    let head = |v: &str| v.split([',', '(', ':']).next().unwrap().to_string();
    assert_eq!(head(&v1), head(&v2), "{v1} / {v2}");
}

#[test]
fn sglang_marks_nested_in_run_batch_count_once() {
    let mut b = TraceBuilder::new().device(0, "AMD Instinct MI300X", 304, 192 << 30);
    let mut at = 0.0;
    for i in 0..4 {
        b.annotation("run_batch", at, 700.0);
        let mark = if i == 0 {
            "step[EXTEND bs=2 toks=512]"
        } else {
            "step[DECODE bs=2]"
        };
        iteration(&mut b, mark, at + 10.0, 600.0, 4);
        at += 1000.0;
    }
    let t = b.build();
    let s = analyze_steps(&t);
    assert_eq!(s.rule, StepRule::SglangStep);
    assert_eq!(s.steps.len(), 4);
    // run_batch is the outer mark: the iterations are its spans, without a phase
    assert_eq!(s.steps[0].host_span.len(), 700_000);
    assert_eq!(s.steps[0].phase, None);
}

#[test]
fn one_graph_replay_per_iteration_without_marks() {
    let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
    for i in 0..4 {
        let at = 1000.0 * i as f64;
        let corr = b.runtime("cudaGraphLaunch", 0, at, 20.0);
        for k in 0..3 {
            let g = b.gpu(
                GpuKind::Kernel,
                "decode_kernel",
                0,
                7,
                at + 30.0 + 100.0 * k as f64,
                100.0,
                corr,
            );
            g.in_graph = true;
        }
    }
    let t = b.build();
    let s = analyze_steps(&t);
    assert_eq!(s.rule, StepRule::GraphLaunch);
    assert_eq!(s.steps.len(), 4);
    assert!(s
        .steps
        .iter()
        .all(|x| x.phase == Some(IterationPhase::Decode)));
    // launch to next launch; the last one to its replay's end
    assert_eq!(s.steps[0].span.len(), 1_000_000);
    assert_eq!(s.steps[3].device_activities, 3);
    assert_eq!(s.steps[3].span.len(), 330_000);
}

/// The serving traces of the TraceLens corpus each hold one iteration; its kind comes from
/// the vLLM mark (which SGLang's traces carry too, around `step[…]`).
#[test]
fn corpus_serving_traces_are_iterations() {
    let cases = [
        (
            "tracelens/tests__traces__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz",
            "decode",
        ),
        (
            "tracelens/tests__traces__inference__sglang_prefilldecode__sglang_Qwen3-8B_prefilldecode.json.gz",
            "prefill",
        ),
        (
            "tracelens/tests__traces__inference__vllm_decode_full__graph_execution.json.gz",
            "decode",
        ),
        (
            "tracelens/tests__traces__inference__vllm_prefilldecode_piecewise__graph_execution.json.gz",
            "mixed",
        ),
        ("tracelens/tests__traces__b200__eager_trace.json.gz", "prefill"),
    ];
    for (rel, phase) in cases {
        let Some(p) = common::corpus_file(rel) else {
            return;
        };
        let r = common::analyze_json(&p, &[]);
        assert_eq!(r["steps_found"]["rule"], "vllm_execute", "{rel}");
        let steps = r["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 1, "{rel}");
        assert_eq!(steps[0]["name"], "Iteration#1", "{rel}");
        assert_eq!(steps[0]["phase"], phase, "{rel}");
        assert_eq!(r["steps_found"]["phases"][0]["phase"], phase, "{rel}");
    }
    // a training trace keeps its ProfilerSteps, and says so
    let Some(p) = common::corpus_file(
        "tracelens/tests__traces__h100__gaunernst_bert-small-uncased__1016001.json.gz",
    ) else {
        return;
    };
    let r = common::analyze_json(&p, &[]);
    assert_eq!(r["steps_found"]["rule"], "profiler_step");
    assert!(r["steps"][0].get("phase").is_none());
}

/// A decode-only server kept busy by its kernels: a 100 µs mark every 850 µs, each launching
/// 8 kernels of 100 µs that run back to back (GPU busy ~94 %). `prefill_after` (1-based decode
/// number, 0 = none) puts one prefill after that decode: a 5 ms mark with 1 ms of kernels. A
/// positive `load_ms` makes the first decode's mark hold a host load of that length (a cache
/// load: no compile work, no kernel) before its launches.
fn busy_server(decodes: usize, prefill_after: usize, load_ms: f64) -> Trace {
    let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
    let mut at = 0.0;
    for i in 1..=decodes {
        let load = if i == 1 { load_ms * 1000.0 } else { 0.0 };
        if load > 0.0 {
            b.annotation(DECODE, at, 100.0 + load);
            b.op("load_kv_cache", at + 1.0, load - 2.0);
            for k in 0..8 {
                let t = at + load + 5.0 + 5.0 * k as f64;
                let corr = b.runtime("cudaLaunchKernel", 0, t, 2.0);
                let s = at + load + 20.0 + 100.0 * k as f64;
                b.gpu(GpuKind::Kernel, "decode_gemm", 0, 7, s, 100.0, corr);
            }
        } else {
            iteration(&mut b, DECODE, at, 100.0, 8);
        }
        at += 850.0 + load;
        if i == prefill_after {
            iteration(&mut b, PREFILL, at, 5000.0, 10);
            at += 5050.0;
        }
    }
    b.build()
}

/// The verdict's class: its words before the first colon.
fn verdict_class(t: &Trace) -> String {
    let a = analyze(t, &AnalyzeOptions::default());
    let d = stallscope::diagnose::diagnose(t, &a);
    d.verdict.split(':').next().unwrap().to_string()
}

/// Issue 30: two captures of one decode workload get the same verdict class, whether or not
/// a lone prefill landed in one of them (it is compared with the decodes, not judged) or the
/// first iteration after the profiler started held a 2 ms load (a warm-up candidate).
#[test]
fn two_captures_of_one_workload_get_one_verdict_class() {
    let plain = verdict_class(&busy_server(10, 0, 0.0));
    assert_eq!(plain, "GPU-bound");
    assert_eq!(verdict_class(&busy_server(10, 6, 0.0)), plain);
    assert_eq!(verdict_class(&busy_server(10, 3, 0.0)), plain);
    assert_eq!(verdict_class(&busy_server(2, 0, 0.0)), plain);
    assert_eq!(verdict_class(&busy_server(2, 0, 2.0)), plain);
    assert_eq!(verdict_class(&busy_server(10, 6, 2.0)), plain);

    // the window is the longest run of decodes; the prefill is reported beside them
    let t = busy_server(10, 3, 0.0);
    let s = analyze_steps(&t);
    let a = Annotations::build(&t);
    let w = window::select(&t, &s, &a, &WindowSpec::Auto).unwrap();
    let kept: Vec<&str> = w.steps.iter().map(|&i| s.steps[i].name.as_str()).collect();
    assert_eq!(kept.first(), Some(&"Iteration#5"));
    assert_eq!(kept.len(), 7);
    let out: Vec<(&str, &str)> = w
        .excluded
        .iter()
        .map(|e| (e.step.as_str(), e.reason.split(':').next().unwrap()))
        .collect();
    assert_eq!(
        out,
        [
            (
                "Iteration#1",
                "outside the longest run of decode iterations (Iteration#5 … Iteration#11)"
            ),
            (
                "Iteration#2",
                "outside the longest run of decode iterations (Iteration#5 … Iteration#11)"
            ),
            (
                "Iteration#3",
                "outside the longest run of decode iterations (Iteration#5 … Iteration#11)"
            ),
            ("Iteration#4", "other kind (prefill)"),
        ]
    );
    let a = analyze(&t, &AnalyzeOptions::default());
    let r = stallscope::report::Report::new(&t, &a, stallscope::diagnose::diagnose(&t, &a));
    let kinds: Vec<(&str, u64, u64, bool)> = r
        .steps_found
        .phases
        .iter()
        .map(|p| (p.phase, p.count, p.in_window, p.judged))
        .collect();
    assert_eq!(kinds, [("prefill", 1, 0, false), ("decode", 10, 7, true)]);
    // 5 ms prefill over the decodes' 820 µs (kernels past the mark extend each decode)
    let ratio = r.steps_found.phases[0].vs_judged.unwrap();
    assert!((ratio - 5000.0 / 820.0).abs() < 1e-9, "{ratio}");
    let line = r.steps_found.kinds_line().unwrap();
    assert!(line.contains("6.1× a decode, not judged"), "{line}");

    // the first decode, held up 2 ms by a load, is a warm-up candidate even with no compile
    // work in it
    let t = busy_server(2, 0, 2.0);
    let s = analyze_steps(&t);
    let w = window::select(&t, &s, &Annotations::build(&t), &WindowSpec::Auto).unwrap();
    assert_eq!(w.steps, vec![1]);
    assert!(
        w.excluded[0]
            .reason
            .starts_with("warm-up: among the first iterations"),
        "{:?}",
        w.excluded
    );
}

/// A capture of one iteration (an extracted server step) has no steady state: the verdict
/// says so, with what the pass shows and how to capture several, instead of a bound.
#[test]
fn one_iteration_has_no_steady_state() {
    let t = busy_server(1, 0, 0.0);
    let a = analyze(&t, &AnalyzeOptions::default());
    assert_eq!(
        a.selection.one_pass.as_deref(),
        Some("one iteration (Iteration#1): a single server step, nothing to compare it with")
    );
    let v = stallscope::diagnose::diagnose(&t, &a).verdict;
    assert!(v.starts_with("No steady state: one iteration"), "{v}");
    assert!(v.contains("kernels 800.0 µs"), "{v}");
    assert!(v.contains("schedule(wait=1, warmup=1, active=3)"), "{v}");
    // one prefill beside one decode: no kind repeats
    let t = busy_server(1, 1, 0.0);
    let a = analyze(&t, &AnalyzeOptions::default());
    assert!(
        a.selection
            .one_pass
            .as_deref()
            .is_some_and(|p| p.ends_with("beside 1 of other kinds: no kind repeats")),
        "{:?}",
        a.selection.one_pass
    );
    // two decodes repeat
    let t = busy_server(2, 0, 0.0);
    assert_eq!(
        analyze(&t, &AnalyzeOptions::default()).selection.one_pass,
        None
    );
}

/// The serving traces of the TraceLens corpus are single extracted iterations: no steady
/// state, never a device-stall or host-bound verdict.
#[test]
fn corpus_single_iterations_have_no_steady_state() {
    for rel in [
        "tracelens/tests__traces__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz",
        "tracelens/tests__traces__inference__sglang_prefilldecode__sglang_Qwen3-8B_prefilldecode.json.gz",
        "tracelens/tests__traces__inference__vllm_decode_full__graph_execution.json.gz",
        "tracelens/tests__traces__inference__vllm_prefilldecode_piecewise__graph_execution.json.gz",
        "tracelens/tests__traces__b200__eager_trace.json.gz",
    ] {
        let Some(p) = common::corpus_file(rel) else {
            return;
        };
        let r = common::analyze_json(&p, &[]);
        let v = r["verdict"].as_str().unwrap();
        assert!(
            v.starts_with("No steady state: one iteration (Iteration#1)"),
            "{rel}: {v}"
        );
    }
}
