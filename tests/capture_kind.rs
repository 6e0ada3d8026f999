//! The kind of capture on corpus traces: CUDA/HIP graph replays (`graphs` in JSON) and
//! `torch.compile`d code (`compiled`), with the numbers checked against a Python computation
//! over the same JSON files (written in each test).

mod common;

fn close(got: &serde_json::Value, want: f64) -> bool {
    (got.as_f64().unwrap() - want).abs() < 0.01
}

#[test]
fn graph_replays_with_kernels_in_the_trace() {
    // Python: the activities whose correlation is a hipGraphLaunch's, the union of their
    // times (busy) and of each replay's first-start..last-end (span), in µs
    let cases = [
        (
            "tracelens/tests__traces__inference__vllm_prefilldecode_piecewise__graph_execution.json.gz",
            25,
            361,
            15,
            149_919.65,
            149_937.91,
        ),
        (
            "tracelens/tests__traces__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz",
            1,
            544,
            544,
            9_656.41,
            9_930.64,
        ),
    ];
    for (rel, launches, kernels, max, busy, span) in cases {
        let Some(p) = common::corpus_file(rel) else {
            return;
        };
        let r = common::analyze_json(&p, &[]);
        let g = &r["graphs"];
        assert_eq!(g["launches"], launches, "{rel}");
        assert_eq!(g["with_kernels"], launches, "{rel}");
        assert_eq!(
            (g["missing"].clone(), g["whole_graph"].clone()),
            (0.into(), 0.into())
        );
        assert_eq!(g["kernels"], kernels, "{rel}");
        assert_eq!(g["max_kernels_per_replay"], max, "{rel}");
        assert!(close(&g["busy_us"], busy), "{rel}: {}", g["busy_us"]);
        assert!(close(&g["span_us"], span), "{rel}: {}", g["span_us"]);
        let s = g["summary"].as_str().unwrap();
        assert!(s.contains("per-kernel detail known"), "{s}");
        // no replay is launch-bound
        assert!(!common::finding_ids(&r).contains(&"launch-bound"), "{rel}");
    }
}

#[test]
fn compiled_calls_without_breaks_and_kernel_time_without_operators() {
    // xDiT SD 3.5: the compiled transformer is called 4 times per step (the denoising loop),
    // one graph per call: no graph break. Python: kernel time 712,014.25 µs; launched inside
    // a `Torch-Compiled Region` 627,638.743 µs; of it with no `aten::` op owning the launch
    // (by External id) 68,814.307 µs, over 26 kernel names
    let rel = "tracelens/tests__traces__inference__xdit_sd_3.5__profile_trace_rank_0.json.gz";
    let Some(p) = common::corpus_file(rel) else {
        return;
    };
    let r = common::analyze_json(&p, &[]);
    let c = &r["compiled"];
    assert_eq!(
        (c["calls"].clone(), c["graphs"].clone()),
        (4.into(), 4.into())
    );
    assert_eq!(c["breaks"], 0);
    assert!(close(&c["kernel_us"], 712_014.25));
    assert!(close(&c["compiled_kernel_us"], 627_638.743));
    assert!(close(&c["hidden_kernel_us"], 68_814.307));
    assert_eq!(c["hidden_kernel_names"], 26);
    // 9.7 % of kernel time: below the note's threshold
    assert!(c.get("hides_detail").is_none());
    assert!(!common::finding_ids(&r).contains(&"graph-breaks"));
    // a trace without compiled code or graphs has neither section
    let Some(p) = common::corpus_file(
        "tracelens/tests__traces__h100__gaunernst_bert-small-uncased__1016001.json.gz",
    ) else {
        return;
    };
    let r = common::analyze_json(&p, &[]);
    assert!(r.get("compiled").is_none() && r.get("graphs").is_none());
}

#[test]
fn graph_replay_kernels_are_not_counted_as_compiled_code_without_operators() {
    // xDiT FLUX.1: the compiled region launches its CUDA graph (hipGraphLaunch, 4 replays of
    // 1,566 kernels); those kernels lack an operator because they are replayed, which the
    // graphs section says: the compiled-code note does not claim them
    let rel =
        "tracelens/tests__traces__inference__xdit_flux.1_aiter_sage__profile_trace_rank_0.json.gz";
    let Some(p) = common::corpus_file(rel) else {
        return;
    };
    let r = common::analyze_json(&p, &[]);
    assert_eq!(r["graphs"]["launches"], 4);
    assert_eq!(r["graphs"]["kernels"], 6264);
    assert_eq!(r["compiled"]["calls"], 4);
    assert_eq!(r["compiled"]["compiled_kernel_us"], 0.0);
    assert!(r["compiled"].get("hides_detail").is_none());
}

#[test]
fn compiled_code_hides_detail_note() {
    // HTA's Triton example: its one kernel (triton_poi_fused_add_cos_sin_0, 1.76 µs) is
    // launched by cuLaunchKernel inside `Torch-Compiled Region: 0/0`, under the host range
    // `triton_poi_fused_add_cos_sin_0` (External id 3), no aten operator: all kernel time
    let Some(p) = common::corpus_file("hta/tests__data__triton_example__triton_example.json.gz")
    else {
        return;
    };
    let r = common::analyze_json(&p, &[]);
    let c = &r["compiled"];
    assert!(close(&c["kernel_us"], 1.76) && close(&c["hidden_kernel_us"], 1.76));
    assert_eq!(c["hidden_kernel_names"], 1);
    let note = c["hides_detail"].as_str().expect("the note");
    assert!(note.contains("TORCH_COMPILE_DEBUG=1"), "{note}");
    let out = common::stallscope(&["analyze", p.to_str().unwrap(), "-f", "md"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("**Note:** Compiled code hides detail"));
}

/// A real `torch.compile` capture with graph breaks (samples/torch_cpu_compile_graph_breaks,
/// made by samples/make_torch_cpu_compile_graph_breaks.py with torch 2.15 on the CPU: two
/// `torch._dynamo.graph_break()` per forward, 20 eager multiplications between them). Dynamo
/// nests each resume function's region in the first, so each step has one top-level region
/// running three compiled graphs. Python over the JSON (regions and `## Call CompiledFxGraph`/
/// `CompiledFunction` ranges on the main thread; top-level regions, their outermost graph
/// calls, the gaps between consecutive calls): 4 calls, 12 graphs, 8 breaks, 1,459.408 µs
/// of host time between graphs.
#[test]
fn graph_breaks_in_a_real_compiled_capture() {
    let p = common::sample("torch_cpu_compile_graph_breaks.json.gz");
    let r = common::analyze_json(&p, &[]);
    let c = &r["compiled"];
    assert_eq!(c["calls"], 4, "{c}");
    assert_eq!(c["graphs"], 12, "{c}");
    assert_eq!(c["breaks"], 8, "{c}");
    assert!(close(&c["host_between_us"], 1_459.408), "{c}");
    assert_eq!(
        c["regions"],
        serde_json::json!([
            "Torch-Compiled Region: 0/0",
            "Torch-Compiled Region: 1/0",
            "Torch-Compiled Region: 2/0"
        ])
    );
}
