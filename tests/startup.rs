//! One-time start-up (`analysis::startup`, issue 29) on real captures: each category a
//! wall-clock union across threads, located relative to the window, in the JSON report and
//! the window section of every format.

mod common;

use common::{analyze_json, corpus_file, ok_stdout, sample};

/// A cold `torch.compile` first call captured on CPU: its Dynamo/Inductor compile is JIT
/// start-up and the first run of the compiled region other one-time work; together they are
/// the capture's compile work (no allocation or module load on CPU), all inside the window.
#[test]
fn cold_torch_compile_on_cpu() {
    let path = sample("torch_cpu_cold_compile.json.gz");
    let r = analyze_json(&path, &[]);
    let w = &r["window"];
    let s = &w["startup"];
    let total = s["total_us"].as_f64().unwrap();
    // the start-up here is exactly the compile work: one union, the same figure
    assert!(
        (total - w["compile_us"].as_f64().unwrap()).abs() < 0.01,
        "{s}"
    );
    assert!(total > 0.5 * w["duration_us"].as_f64().unwrap(), "{s}");
    let part = |k: &str| {
        s["parts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["kind"] == k)
            .cloned()
    };
    let jit = part("jit_compile").expect("JIT compile");
    let by_kind = |k: &str| {
        w["compile"]["by_kind"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["kind"] == k)
            .map_or(0.0, |x| x["us"].as_f64().unwrap())
    };
    let (dynamo, inductor) = (by_kind("dynamo"), by_kind("inductor"));
    // a union of the Dynamo and Inductor spans (Inductor runs inside Dynamo's compile)
    let j = jit["us"].as_f64().unwrap();
    assert!(
        j >= dynamo.max(inductor) - 0.01 && j <= dynamo + inductor + 0.01,
        "{jit}"
    );
    assert!(part("other_one_time").is_some(), "{s}");
    assert!(
        part("allocation").is_none() && part("context_module").is_none(),
        "{s}"
    );
    assert_eq!(s["in_window_us"], s["total_us"]);
    assert_eq!(s["before_window_us"].as_f64(), Some(0.0));
    // no device work: the window is not cold (nothing ran on a device), nothing is judged
    assert_eq!(s["cold_window"], false);
    assert_eq!(s["judged_us"].as_f64(), Some(0.0));
    // every format shows it in the window section
    let p = path.to_str().unwrap();
    for fmt in ["table", "md", "html"] {
        let out = ok_stdout(&["analyze", p, "--format", fmt]);
        assert!(out.contains("one-time, union across threads"), "{fmt}");
    }
}

/// An Nsight Systems export of a cold first call: `cudaMalloc_v3020` (769.477 µs, before the
/// first launch) and `cudaHostAlloc_v3020` (3,568.941 µs) are first-call allocation by their
/// versioned names, and each kernel's first `cudaLaunchKernel_v7000` (17,436.399 and
/// 17,764.006 µs, the device idle) is lazy module loading; figures checked against the
/// export's CUPTI_ACTIVITY_KIND_RUNTIME rows. Together 97.1 % of the 39.91 ms window. Its
/// two kernels and one copy run once each: nothing repeats, so the verdict is "No steady
/// state", naming the start-up and its share of the window.
#[test]
fn versioned_allocations_and_lazy_loads_in_an_nsys_export() {
    let Some(path) = corpus_file("nsys/sqlite/nsysai_mock_rtx3080_nsys2026.1.sqlite") else {
        return;
    };
    let r = analyze_json(&path, &[]);
    let s = &r["window"]["startup"];
    let parts = s["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 2, "{s}");
    let close = |v: &serde_json::Value, want: f64| (v.as_f64().unwrap() - want).abs() < 0.01;
    assert_eq!(parts[0]["kind"], "context_module");
    assert_eq!(parts[0]["calls"], 2);
    assert!(close(&parts[0]["us"], 17436.399 + 17764.006), "{s}");
    assert_eq!(parts[1]["kind"], "allocation");
    assert_eq!(parts[1]["calls"], 2);
    assert!(close(&parts[1]["us"], 769.477 + 3568.941), "{s}");
    assert!(close(&s["before_window_us"], 769.477), "{s}");
    assert_eq!(s["cold_window"], true);
    assert_eq!(r["verdict_class"], "no_steady_state", "{}", r["verdict"]);
    let v = r["verdict"].as_str().unwrap();
    assert!(
        v.contains(
            "39.54 ms of one-time start-up (context/module load 35.20 ms, first-call \
             allocation 4.34 ms), 97.1% of the window"
        ),
        "{v}"
    );
    assert!(v.contains("CUDA_MODULE_LOADING=EAGER"), "{v}");
}

/// A trace without start-up work has no `startup` object (the JSON of such traces is as
/// before).
#[test]
fn absent_without_startup_work() {
    let r = analyze_json(&sample("torch_cpu_loss_loop.json.gz"), &[]);
    assert!(r["window"].get("startup").is_none(), "{}", r["window"]);
}

/// The finding of one id, if reported.
fn finding<'a>(r: &'a serde_json::Value, id: &str) -> Option<&'a serde_json::Value> {
    r["findings"].as_array()?.iter().find(|x| x["id"] == id)
}

/// Start-up is a cause in the host's lead accounting (issue 29): on the corpus's
/// start-up-dominated captures the device idle in start-up is charged to start-up, once, and
/// a `startup` finding above info, first, carries the verdict with its time; the launch and
/// idle findings no longer charge it to launch overhead or host work.
#[test]
fn startup_dominated_captures_charge_their_idle_to_startup() {
    // (the RTX 3080 mock runs each of its three activities once: nothing repeats, and its
    // one-pass verdict names the start-up and its share)
    let files = [
        (
            "hta/tests__data__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
            "startup_dominates",
        ),
        (
            "nsys/sqlite/nsysai_mock_rtx3080_nsys2026.1.sqlite",
            "no_steady_state",
        ),
        (
            "tracelens/tests__traces__perf_model__normalization__normalization_layer_test.json.gz",
            "startup_dominates",
        ),
    ];
    for (rel, class) in files {
        let Some(path) = corpus_file(rel) else {
            continue;
        };
        let r = analyze_json(&path, &[]);
        assert_eq!(r["verdict_class"], class, "{rel}");
        let first = &r["findings"][0];
        assert_eq!(first["id"], "startup", "{rel}: {}", r["findings"]);
        assert_ne!(first["severity"], "info", "{rel}");
        // its time is the verdict's: the judged start-up, and at most that much device idle
        let judged = r["window"]["startup"]["judged_us"].as_f64().unwrap();
        let m = &first["evidence"]["metrics"];
        assert!(
            (m["startup_us"].as_f64().unwrap() - judged).abs() < 0.01,
            "{rel}"
        );
        let rec = first["recoverable_us"].as_f64().unwrap();
        assert!(
            rec > 0.5 * judged && rec <= judged + 0.01,
            "{rel}: {rec} of {judged}"
        );
        // claimed once: what the host-side findings claim together fits in the device idle
        // (the largest device's idle in the window, as `gpu-idle-gaps` reports it)
        let idle = finding(&r, "gpu-idle-gaps")
            .and_then(|x| x["evidence"]["metrics"].as_object())
            .into_iter()
            .flatten()
            .filter(|(k, _)| k.ends_with("_idle_us"))
            .filter_map(|(_, v)| v.as_f64())
            .fold(0.0, f64::max);
        let claimed: f64 = ["startup", "launch-bound", "gpu-idle-gaps", "host-compute"]
            .iter()
            .filter_map(|id| finding(&r, id))
            .map(|x| x["recoverable_us"].as_f64().unwrap())
            .sum();
        assert!(claimed <= idle + 0.01, "{rel}: {claimed} > {idle}");
    }
    // the ROCm capture: the 6.54 ms lazy code-object load inside `hipLaunchKernel` was 6.76
    // ms of "launch overhead" in one 6.63 ms gap; it is start-up now, to the ns
    let Some(path) = corpus_file(files[0].0) else {
        return;
    };
    let r = analyze_json(&path, &[]);
    let s = finding(&r, "startup").unwrap();
    assert_eq!(s["recoverable_us"].as_f64(), Some(6543.109));
    let idle = finding(&r, "gpu-idle-gaps").unwrap();
    assert!(idle["recoverable_us"].as_f64().unwrap() < 1000.0, "{idle}");
    let facts = idle["evidence"]["facts"].to_string();
    assert!(
        facts.contains("one-time start-up 6.54 ms (→ startup)"),
        "{facts}"
    );
}

/// On captures with no steady state or dominated by start-up the gaps and launch figures come
/// from one cold pass: `launch-bound` and `gpu-idle-gaps` recover nothing judged (0, info),
/// keep the pass's figure in their evidence and say why; rules valid on one pass keep their
/// grounds (`host-sync` on the simple_add benchmark, `compile-in-window` on vLLM's graph
/// capture).
#[test]
fn one_cold_pass_caps_the_launch_and_idle_findings() {
    let files = [
        "hta/tests__data__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
        "nsys/sqlite/nsysai_mock_rtx3080_nsys2026.1.sqlite",
        "tracelens/tests__traces__perf_model__normalization__normalization_layer_test.json.gz",
        "hta/tests__data__critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
        "hta/tests__data__critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz",
        "tracelens/tests__traces__b200__eager_trace.json.gz",
        "tracelens/tests__traces__inference__vllm_prefilldecode_piecewise__capture_traces__graph_capture_rank_0.1773709679453551615.pt.trace.json.gz",
    ];
    for rel in files {
        let Some(path) = corpus_file(rel) else {
            continue;
        };
        let r = analyze_json(&path, &[]);
        let class = r["verdict_class"].as_str().unwrap();
        assert!(
            ["no_steady_state", "startup_dominates"].contains(&class),
            "{rel}: {class}"
        );
        for id in ["launch-bound", "gpu-idle-gaps"] {
            let Some(x) = finding(&r, id) else {
                continue;
            };
            assert_eq!(x["severity"], "info", "{rel}: {id}");
            assert_eq!(x["recoverable_us"].as_f64(), Some(0.0), "{rel}: {id}");
            assert!(
                x["evidence"]["facts"]
                    .to_string()
                    .contains("from one cold pass"),
                "{rel}: {id}"
            );
            assert!(x["recoverable_basis"]
                .as_str()
                .unwrap()
                .starts_with("not judged"));
        }
        // the first finding above info is never one of them
        let first = r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["severity"] != "info");
        if let Some(x) = first {
            assert!(
                !["launch-bound", "gpu-idle-gaps"].contains(&x["id"].as_str().unwrap()),
                "{rel}: {x}"
            );
        }
    }
    // the eager B200 serving step: 58.84 ms of host-late gaps under 1 ms in its one pass
    // (58.56 ms before gaps during a launch call still running counted as launch overhead
    // rather than queued work: docs/verdicts/2026-11-27-w11-one-pass-dispatch.md)
    if let Some(path) = corpus_file(files[5]) {
        let r = analyze_json(&path, &[]);
        let lb = finding(&r, "launch-bound").unwrap();
        let m = &lb["evidence"]["metrics"];
        assert_eq!(m["one_pass_us_per_step"].as_f64(), Some(58843.586));
    }
    // grounds kept: a sync inside the benchmark's call, graph capture in a capture of it
    if let Some(path) =
        corpus_file("hta/tests__data__execution_trace__benchmark_simple_add_trace.json.gz")
    {
        let r = analyze_json(&path, &[]);
        let s = finding(&r, "host-sync").unwrap();
        assert_eq!(s["recoverable_us"].as_f64(), Some(2399.0));
        assert_eq!(s["severity"], "low");
    }
    if let Some(path) = corpus_file(files[6]) {
        let r = analyze_json(&path, &[]);
        let c = &r["findings"][0];
        assert_eq!(c["id"], "compile-in-window");
        assert_eq!(c["severity"], "high");
    }
}

/// Issue 29: a gap is labelled with a host call only when that call covers most of the gap.
/// The Triton sample's 13.33 s gap (its launching thread ran a 1.35 ms `Torch-Compiled
/// Region: 0/0` and a few µs of calls in it; the rest is untraced) is "nothing traced", not
/// named by the compiled region or a call inside it.
#[test]
fn a_short_call_does_not_name_a_long_gap_in_a_real_capture() {
    let r = analyze_json(&sample("a100_triton_example.json.gz"), &[]);
    let g = finding(&r, "gpu-idle-gaps").unwrap();
    let longest = g["evidence"]["locations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["what"] == "gap")
        .max_by(|a, b| {
            let d = |x: &serde_json::Value| x["duration_us"].as_f64().unwrap();
            d(a).total_cmp(&d(b))
        })
        .unwrap();
    assert!(longest["duration_us"].as_f64().unwrap() > 13e6, "{longest}");
    assert_eq!(longest["name"], "nothing traced", "{longest}");
}
