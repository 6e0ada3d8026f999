//! The capture check (`trust` in JSON) on corpus traces: the AMD graph-replay traces of vLLM
//! whose device clock is offset from the host's, traces without such an offset, a CPU-only
//! trace; and the verdict, which does not blame device-side stalls on an offset clock.

mod common;

fn ids(r: &serde_json::Value) -> Vec<String> {
    r["trust"]["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn clock_offset_on_amd_graph_replays() {
    // smallest delay from a launch's return to its kernel (computed with Python from the
    // JSON: 146385.85 µs for hipModuleLaunchKernel on the piecewise trace, 6378.31 µs for
    // hipGraphLaunch on the full-graph one)
    let cases = [
        (
            "tracelens/tests__traces__inference__vllm_prefilldecode_piecewise__graph_execution.json.gz",
            146_385.853,
        ),
        (
            "tracelens/tests__traces__inference__vllm_decode_full__graph_execution.json.gz",
            6_378.309,
        ),
    ];
    for (rel, offset_us) in cases {
        let Some(p) = common::corpus_file(rel) else {
            return;
        };
        let r = common::analyze_json(&p, &[]);
        assert_eq!(ids(&r), ["clock-offset"], "{rel}");
        assert_eq!(r["trust"]["ok"], false);
        let got = r["trust"]["clock_offset_us"].as_f64().unwrap();
        assert!((got - offset_us).abs() < 0.01, "{rel}: {got}");
        // each is one extracted iteration: no steady state (issue 30), a verdict that blames
        // neither the host nor the device (the capture check names the offset)
        let v = r["verdict"].as_str().unwrap();
        assert!(
            v.starts_with("No steady state: one iteration"),
            "{rel}: {v}"
        );
        assert!(!v.contains("Device-side stalls"), "{v}");
        assert!(!v.contains("nothing traced on the host"), "{v}");
    }
}

#[test]
fn no_offset_on_nvidia_and_cpu_only() {
    for rel in [
        "hta/tests__data__ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
        "tracelens/tests__traces__h100__gaunernst_bert-small-uncased__1016001.json.gz",
        "tracelens/tests__traces__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz",
    ] {
        let Some(p) = common::corpus_file(rel) else {
            return;
        };
        let r = common::analyze_json(&p, &[]);
        assert!(!ids(&r).contains(&"clock-offset".to_string()), "{rel}");
        assert_eq!(r["trust"]["clock_offset_us"], 0.0);
    }
    let Some(p) = common::corpus_file(
        "hta/tests__data__cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    ) else {
        return;
    };
    let r = common::analyze_json(&p, &[]);
    assert_eq!(ids(&r), ["cpu-only"]);
}
