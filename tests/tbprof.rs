//! The TensorBoard profiler plugin's numbers on its own ResNet-50 samples.
//!
//! Expected values come from the corpus, never from stallscope:
//! * `tbprof/DERIVED__samples_expected_by_final_plugin_code.json` — the plugin's last
//!   published source run on all four sample traces (per-step breakdown, averages, GPU
//!   utilization, Est. SM efficiency, Est. achieved occupancy, tensor-core ratio);
//! * `tbprof/tb_plugin__test__result_check_file.txt` — the plugin's own end-to-end test
//!   expectations (HTTP JSON of the overview) for span 1 of both runs, as displayed (rounded).
//!
//! Tolerances: per-step integers ±1 µs, averages ±1 µs, ratios ±0.01 percentage points.

mod common;

use serde_json::Value;
use stallscope::analysis::gpu::{gpu_summaries, GpuSummary};
use stallscope::model::Trace;
use stallscope::window::steps::{analyze_steps, Breakdown, StepAnalysis};

const DERIVED: &str = "tbprof/DERIVED__samples_expected_by_final_plugin_code.json";
const CHECK_FILE: &str = "tbprof/tb_plugin__test__result_check_file.txt";

/// ±1 µs on integer µs values.
const TOL_NS: f64 = 1000.0;
/// ±0.01 percentage points on ratios.
const TOL_RATIO: f64 = 1e-4;

struct Sample {
    /// Corpus path.
    file: &'static str,
    /// Key in the DERIVED json.
    key: &'static str,
    /// Line of the overview in the plugin's result check file (span 1 only).
    check_line: Option<usize>,
}

const NW0_SPAN1: Sample = Sample {
    file:
        "tbprof/tb_plugin__samples__resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz",
    key: "samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
    check_line: Some(0),
};
const NW0_SPAN2: Sample = Sample {
    file:
        "tbprof/tb_plugin__samples__resnet50_num_workers_0__worker0.1623143566756.pt.trace.json.gz",
    key: "samples/resnet50_num_workers_0/worker0.1623143566756.pt.trace.json.gz",
    check_line: None,
};
const NW4_SPAN1: Sample = Sample {
    file:
        "tbprof/tb_plugin__samples__resnet50_num_workers_4__worker0.1623212756351.pt.trace.json.gz",
    key: "samples/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz",
    check_line: Some(5),
};
const NW4_SPAN2: Sample = Sample {
    file:
        "tbprof/tb_plugin__samples__resnet50_num_workers_4__worker0.1623213129365.pt.trace.json.gz",
    key: "samples/resnet50_num_workers_4/worker0.1623213129365.pt.trace.json.gz",
    check_line: None,
};

/// (plugin role name, our value) for every role of a breakdown, plus the total.
fn roles(b: &Breakdown, total: i64) -> [(&'static str, i64); 9] {
    [
        ("Kernel", b.kernel),
        ("Memcpy", b.memcpy),
        ("Memset", b.memset),
        ("Communication", b.communication),
        ("Runtime", b.runtime),
        ("DataLoader", b.dataloader),
        ("CpuOp", b.cpu_exec),
        ("Other", b.other),
        ("Total", total),
    ]
}

fn derived(key: &str) -> Option<Value> {
    let path = common::corpus_file(DERIVED)?;
    let all: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    Some(
        all.get(key)
            .unwrap_or_else(|| panic!("{key} missing from {DERIVED}"))
            .clone(),
    )
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn close(what: &str, ours: f64, expected: f64, tol: f64) {
    assert!(
        (ours - expected).abs() <= tol,
        "{what}: ours {ours} vs expected {expected} (tolerance {tol})"
    );
}

fn run(s: &Sample) -> Option<(Trace, StepAnalysis, Vec<GpuSummary>, Value)> {
    let path = common::corpus_file(s.file)?;
    let exp = derived(s.key)?;
    let trace = common::load(&path);
    let steps = analyze_steps(&trace);
    let gpus = gpu_summaries(&trace, steps.span);
    Some((trace, steps, gpus, exp))
}

fn check(s: &Sample) {
    let Some((_trace, a, gpus, exp)) = run(s) else {
        return;
    };
    let label = s.key;

    // Steps: same names, same count, nothing trimmed on these samples.
    let names: Vec<String> = exp["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let ours: Vec<String> = a
        .steps
        .iter()
        .map(|st| st.number.expect("numbered step").to_string())
        .collect();
    assert_eq!(ours, names, "{label}: steps");
    assert!(a.from_profiler_steps, "{label}");
    assert!(a.dropped.is_empty(), "{label}: dropped {:?}", a.dropped);
    for st in &a.steps {
        assert_eq!(st.name, format!("ProfilerStep#{}", st.number.unwrap()));
        assert_eq!(
            st.breakdown.total(),
            st.span.len(),
            "{label}: parts sum to the step"
        );
        assert!(st.span.end >= st.host_span.end && st.span.start <= st.host_span.end);
        assert!(
            st.device_activities > 0,
            "{label}: {} launched nothing",
            st.name
        );
    }
    for w in a.steps.windows(2) {
        assert!(w[0].span.end <= w[1].span.start, "{label}: steps overlap");
    }
    assert_eq!(a.span.start, a.steps[0].span.start);
    assert_eq!(a.span.end, a.steps.last().unwrap().span.end);

    // Per-step breakdown, every role, ±1 µs.
    let costs = exp["step_costs_us"].as_array().unwrap();
    let mut max_dev = 0.0f64;
    for (st, c) in a.steps.iter().zip(costs) {
        for (role, ns) in roles(&st.breakdown, st.span.len()) {
            let e = f(&c[role]) * 1000.0;
            max_dev = max_dev.max((ns as f64 - e).abs());
            close(
                &format!("{label} {} {role} (ns)", st.name),
                ns as f64,
                e,
                TOL_NS,
            );
        }
    }

    // Averages.
    let avg = &exp["avg_costs_us"];
    let av = a.average;
    for (role, ours) in [
        ("Kernel", av.kernel),
        ("Memcpy", av.memcpy),
        ("Memset", av.memset),
        ("Communication", av.communication),
        ("Runtime", av.runtime),
        ("DataLoader", av.dataloader),
        ("CpuOp", av.cpu_exec),
        ("Other", av.other),
        ("Total", av.total),
    ] {
        close(
            &format!("{label} average {role} (ns)"),
            ours,
            f(&avg[role]) * 1000.0,
            TOL_NS,
        );
    }

    // GPU summary: one V100, device 0.
    assert_eq!(gpus.len(), 1, "{label}: active devices {gpus:?}");
    let g = &gpus[0];
    assert_eq!(g.device, 0);
    assert_eq!(g.name, "Tesla V100-DGXS-32GB");
    assert_eq!(g.sm_count, Some(80));
    assert_eq!(g.memory_bytes, Some(34_084_028_416));
    assert_eq!(g.compute_capability.as_deref(), Some("7.0"));
    let util = g.utilization.expect("utilization");
    let sm = g.sm_efficiency.expect("sm efficiency");
    let occ = g.achieved_occupancy.expect("occupancy");
    close(
        &format!("{label} GPU utilization"),
        util,
        f(&exp["gpu_utilization"]),
        TOL_RATIO,
    );
    close(
        &format!("{label} Est. SM efficiency"),
        sm,
        f(&exp["est_sm_efficiency"]),
        TOL_RATIO,
    );
    close(
        &format!("{label} Est. achieved occupancy"),
        occ,
        f(&exp["est_achieved_occupancy_pct"]) / 100.0,
        TOL_RATIO,
    );
    close(
        &format!("{label} tensor-core kernel time ratio"),
        g.tensor_core_ratio.expect("tc ratio"),
        f(&exp["tc_kernel_time_ratio"]),
        TOL_RATIO,
    );
    assert!(sm <= util, "{label}: SM efficiency above utilization");
    assert!(g.kernel_time > 0);

    eprintln!(
        "{label}: {} steps, max per-value deviation {max_dev} ns; util {util:.12} (diff {:+.1e}), \
         SM eff. {sm:.12} (diff {:+.1e}), occupancy {:.12} (diff {:+.1e})",
        a.steps.len(),
        util - f(&exp["gpu_utilization"]),
        sm - f(&exp["est_sm_efficiency"]),
        occ,
        occ - f(&exp["est_achieved_occupancy_pct"]) / 100.0,
    );

    if let Some(line) = s.check_line {
        check_against_plugin_test(label, line, &a, g);
    }
}

/// Value following `key` up to `end` in `s`.
fn between<'a>(s: &'a str, key: &str, end: &str) -> &'a str {
    let i = s.find(key).unwrap_or_else(|| panic!("{key} not in {s}")) + key.len();
    let j = s[i..].find(end).unwrap() + i;
    &s[i..j]
}

/// The plugin's own end-to-end expectations (span 1): per-step values, rounded averages and
/// the GPU summary as displayed.
fn check_against_plugin_test(label: &str, line: usize, a: &StepAnalysis, g: &GpuSummary) {
    let Some(path) = common::corpus_file(CHECK_FILE) else {
        return;
    };
    let text = std::fs::read_to_string(path).unwrap();
    let overview: Value = serde_json::from_str(text.lines().nth(line).unwrap()).unwrap();

    // Step table: columns "Step", then (role, tooltip) pairs; the tooltip carries the total.
    let columns: Vec<String> = overview["steps"]["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap_or("").to_string())
        .collect();
    let rows = overview["steps"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), a.steps.len(), "{label}: step rows");
    for (row, st) in rows.iter().zip(&a.steps) {
        assert_eq!(row[0].as_str().unwrap(), st.number.unwrap().to_string());
        let b = &st.breakdown;
        for (i, col) in columns.iter().enumerate().skip(1) {
            let ours = match col.as_str() {
                "Kernel" => b.kernel,
                "Memcpy" => b.memcpy,
                "Memset" => b.memset,
                "Communication" => b.communication,
                "Runtime" => b.runtime,
                "DataLoader" => b.dataloader,
                "CPU Exec" => b.cpu_exec,
                "Other" => b.other,
                "" => continue,
                other => panic!("unexpected column {other}"),
            };
            close(
                &format!("{label} check-file {} {col}", st.name),
                ours as f64,
                f(&row[i]) * 1000.0,
                TOL_NS,
            );
        }
        let total: f64 = between(row[2].as_str().unwrap(), "Total: ", "us")
            .parse()
            .unwrap();
        close(
            &format!("{label} check-file {} total", st.name),
            st.span.len() as f64,
            total * 1000.0,
            TOL_NS,
        );
    }

    // Average step time, rounded to µs as displayed.
    let perf = &overview["performance"][0];
    assert_eq!(
        (a.average.total / 1000.0).round(),
        f(&perf["value"]),
        "{label}: average step"
    );
    for child in perf["children"].as_array().unwrap() {
        let av = &a.average;
        let ours = match child["name"].as_str().unwrap() {
            "Kernel" => av.kernel,
            "Memcpy" => av.memcpy,
            "Memset" => av.memset,
            "Communication" => av.communication,
            "Runtime" => av.runtime,
            "DataLoader" => av.dataloader,
            "CPU Exec" => av.cpu_exec,
            "Other" => av.other,
            other => panic!("unexpected role {other}"),
        };
        assert_eq!(
            (ours / 1000.0).round(),
            f(&child["value"]),
            "{label}: average {child}"
        );
    }

    // GPU summary strings.
    let shown = |title: &str| -> String {
        overview["gpu_metrics"]["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["title"] == title)
            .unwrap_or_else(|| panic!("{title} not shown"))["value"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let pct = |v: Option<f64>| format!("{:.2} %", v.unwrap() * 100.0);
    assert_eq!(pct(g.utilization), shown("GPU Utilization"), "{label}");
    assert_eq!(pct(g.sm_efficiency), shown("Est. SM Efficiency"), "{label}");
    assert_eq!(
        pct(g.achieved_occupancy),
        shown("Est. Achieved Occupancy"),
        "{label}"
    );
    assert_eq!(
        g.compute_capability.clone().unwrap(),
        shown("Compute Capability")
    );
    assert_eq!(g.name, shown("Name"));
}

#[test]
fn resnet50_num_workers_0_span1() {
    check(&NW0_SPAN1);
}

#[test]
fn resnet50_num_workers_0_span2() {
    check(&NW0_SPAN2);
}

#[test]
fn resnet50_num_workers_4_span1() {
    check(&NW4_SPAN1);
}

#[test]
fn resnet50_num_workers_4_span2() {
    check(&NW4_SPAN2);
}

/// The plugin's own end-to-end expectations for span 1 of the num_workers=0 run
/// (`tb_plugin/test/result_check_file.txt`, also `expected-values.md` §2.1), µs:
/// step, Kernel, Memcpy, Memset, Runtime, DataLoader, CPU Exec, Other, Total.
const TB_CHECK_NW0: [[i64; 9]; 6] = [
    [5, 98598, 1941, 90, 2796, 69317, 14091, 1115, 187948],
    [6, 98570, 1947, 89, 2762, 57669, 12968, 1148, 175153],
    [7, 98596, 1931, 91, 2877, 61257, 13768, 1213, 179733],
    [8, 98623, 1938, 89, 2841, 56453, 13420, 1200, 174564],
    [9, 98504, 1937, 87, 2788, 62690, 15025, 1141, 182172],
    [10, 98641, 1798, 88, 3381, 48185, 12773, 1117, 165983],
];

/// The same trace ships in `samples/`, so this check runs even without the corpus.
#[test]
fn shipped_resnet50_sample_matches_the_plugin_test() {
    let trace = common::load(&common::sample(
        "resnet50_v100_num_workers_0.pt.trace.json.gz",
    ));
    let a = analyze_steps(&trace);
    assert_eq!(a.steps.len(), TB_CHECK_NW0.len());
    for (st, row) in a.steps.iter().zip(TB_CHECK_NW0) {
        let b = &st.breakdown;
        let ours = [
            st.number.unwrap(),
            b.kernel,
            b.memcpy,
            b.memset,
            b.runtime,
            b.dataloader,
            b.cpu_exec,
            b.other,
            st.span.len(),
        ];
        assert_eq!(ours[0], row[0]);
        for (i, (o, e)) in ours.iter().zip(row).enumerate().skip(1) {
            close(
                &format!("{} column {i}", st.name),
                *o as f64,
                (e * 1000) as f64,
                TOL_NS,
            );
        }
        assert_eq!(b.communication, 0);
    }
    // "Average Step Time" as displayed (rounded µs).
    let av = a.average;
    let shown = [
        (av.total, 177592.0),
        (av.kernel, 98589.0),
        (av.memcpy, 1915.0),
        (av.memset, 89.0),
        (av.runtime, 2908.0),
        (av.dataloader, 59262.0),
        (av.cpu_exec, 13674.0),
        (av.other, 1156.0),
    ];
    for (ours, e) in shown {
        assert_eq!((ours / 1000.0).round(), e);
    }
    let g = &gpu_summaries(&trace, a.span)[0];
    let pct = |v: Option<f64>| format!("{:.2}", v.unwrap() * 100.0);
    assert_eq!(pct(g.utilization), "55.51");
    assert_eq!(pct(g.sm_efficiency), "54.68");
    assert_eq!(pct(g.achieved_occupancy), "49.13");
    assert_eq!(pct(g.tensor_core_ratio), "0.00");
}
