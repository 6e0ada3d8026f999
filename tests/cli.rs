//! End-to-end tests of the `stallscope` binary on the samples shipped in the repository
//! (they run on a fresh clone, without ../shared/corpus).

mod common;

use common::stallscope;

use std::process::Command;

fn json_report(path: &std::path::Path) -> serde_json::Value {
    common::analyze_json(path, &[])
}

fn close(actual: f64, expected: f64, tol: f64, what: &str) {
    assert!(
        (actual - expected).abs() <= tol,
        "{what}: got {actual}, expected {expected} ± {tol}"
    );
}

#[test]
fn analyze_table_on_shipped_resnet_sample() {
    let p = common::sample("resnet50_v100_num_workers_0.pt.trace.json.gz");
    let out = stallscope(&["analyze", p.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Steps (6)"), "{text}");
    assert!(text.contains("Tesla V100-DGXS-32GB"), "{text}");
    assert!(text.contains("dgrad_engine"), "{text}");
    for line in text.lines() {
        assert!(
            line.chars().count() <= 100,
            "line over 100 columns: {line:?}"
        );
        assert!(
            !line.contains('\x1b'),
            "colour codes with NO_COLOR: {line:?}"
        );
    }
}

/// The TensorBoard plugin's own end-to-end expectations for this sample
/// (../shared/reference/expected-values.md §2.1), through the CLI's JSON.
#[test]
fn json_report_reproduces_tensorboard_plugin_on_resnet_sample() {
    let r = json_report(&common::sample(
        "resnet50_v100_num_workers_0.pt.trace.json.gz",
    ));
    assert_eq!(r["schema_version"], 1);
    assert_eq!(r["source"]["events"], 75718);
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 6);
    assert_eq!(steps[0]["name"], "ProfilerStep#5");
    let expected_totals = [187948.0, 175153.0, 179733.0, 174564.0, 182172.0, 165983.0];
    for (s, e) in steps.iter().zip(expected_totals) {
        close(s["duration_us"].as_f64().unwrap(), e, 1.0, "step total");
    }
    let b = &r["breakdown_us"];
    close(
        r["step_time_us"].as_f64().unwrap(),
        177592.0,
        1.0,
        "average step",
    );
    close(b["kernel"].as_f64().unwrap(), 98589.0, 1.0, "kernel");
    close(b["memcpy"].as_f64().unwrap(), 1915.0, 1.0, "memcpy");
    close(b["memset"].as_f64().unwrap(), 89.0, 1.0, "memset");
    close(b["runtime"].as_f64().unwrap(), 2908.0, 1.0, "runtime");
    close(
        b["dataloader"].as_f64().unwrap(),
        59262.0,
        1.0,
        "dataloader",
    );
    close(b["cpu_exec"].as_f64().unwrap(), 13674.0, 1.0, "cpu_exec");
    close(b["other"].as_f64().unwrap(), 1156.0, 1.0, "other");
    close(
        b["communication"].as_f64().unwrap(),
        0.0,
        0.0,
        "communication",
    );
    let d = &r["devices"][0];
    assert_eq!(d["name"], "Tesla V100-DGXS-32GB");
    assert_eq!(d["sm_count"], 80);
    close(
        d["utilization"].as_f64().unwrap(),
        0.5551,
        0.0001,
        "GPU utilization",
    );
    close(
        d["sm_efficiency"].as_f64().unwrap(),
        0.5468,
        0.0001,
        "SM efficiency",
    );
    close(
        d["achieved_occupancy"].as_f64().unwrap(),
        0.4913,
        0.0001,
        "occupancy",
    );
    close(
        d["tensor_core_ratio"].as_f64().unwrap(),
        0.0,
        0.0,
        "tensor cores",
    );
    let k = &r["kernels"][0];
    assert!(k["name"]
        .as_str()
        .unwrap()
        .contains("dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>"));
    assert_eq!(k["calls"], 162);
    close(
        k["total_us"].as_f64().unwrap(),
        80756.0,
        1.0,
        "top kernel total",
    );
    assert_eq!(k["category"], "conv");
    assert_eq!(k["tensor_core"], false);
    let o = &r["ops"][0];
    assert_eq!(o["name"], "aten::cudnn_convolution_backward_weight");
    assert_eq!(o["calls"], 318);
    close(
        o["device_self_us"].as_f64().unwrap(),
        142461.0,
        1.0,
        "top op device self",
    );
    close(
        o["host_total_us"].as_f64().unwrap(),
        40246.0,
        1.0,
        "top op host total",
    );
}

fn timeline_csv(path: &std::path::Path) -> std::collections::HashMap<String, f64> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut it = l.split(',');
            Some((it.next()?.to_string(), it.next()?.parse::<f64>().ok()?))
        })
        .collect()
}

/// TraceLens's GPU timeline beside the shipped BERT samples (H100 and MI300X).
#[test]
fn json_timeline_matches_tracelens_on_shipped_samples() {
    for stem in ["h100_bert_small", "mi300x_bert_small"] {
        let r = json_report(&common::sample(&format!("{stem}.json.gz")));
        let csv = timeline_csv(&common::sample(&format!("{stem}.gpu_timeline.csv")));
        let tl = r["gpu_timeline"].as_array().unwrap();
        assert_eq!(tl.len(), 1, "{stem}: one device");
        let g = &tl[0];
        let ms = |k: &str| g[k].as_f64().unwrap() / 1000.0;
        for (ours, theirs) in [
            ("computation_us", "computation_time"),
            ("exposed_comm_us", "exposed_comm_time"),
            ("exposed_memcpy_us", "exposed_memcpy_time"),
            ("idle_us", "idle_time"),
            ("total_us", "total_time"),
        ] {
            close(ms(ours), csv[theirs], 1e-5, &format!("{stem} {ours}"));
        }
    }
}

#[test]
fn every_shipped_sample_analyzes() {
    for entry in std::fs::read_dir(common::sample("")).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.ends_with(".json") || name.ends_with(".json.gz")) {
            continue;
        }
        for fmt in ["table", "json"] {
            let out = stallscope(&["analyze", p.to_str().unwrap(), "--format", fmt]);
            assert!(
                out.status.success(),
                "{name} ({fmt}): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

#[test]
fn stdin_gives_the_same_report_as_the_file() {
    let p = common::sample("a100_triton_example.json.gz");
    let from_file = json_report(&p);
    let out = Command::new(env!("CARGO_BIN_EXE_stallscope"))
        .args(["analyze", "-", "--format", "json"])
        .stdin(std::fs::File::open(&p).unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let from_stdin: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(from_file["steps"], from_stdin["steps"]);
    assert_eq!(from_file["kernels"], from_stdin["kernels"]);
    assert_eq!(from_stdin["source"]["path"], "-");
}

#[test]
fn bad_inputs_exit_2_with_one_line_naming_the_file() {
    let dir = std::env::temp_dir().join(format!("stallscope-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty.json", vec![], "empty"),
        (
            "truncated.json",
            br#"{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2}, {"ph": "X", "na"#
                .to_vec(),
            "truncated",
        ),
        ("garbage.json", b"this is not json".to_vec(), "not"),
        (
            "other.json",
            br#"{"nodes": [], "schema": "1.0"}"#.to_vec(),
            "Execution Trace",
        ),
        (
            "db.sqlite",
            b"SQLite format 3\0xxxxxxxx".to_vec(),
            "Nsight Systems",
        ),
    ];
    for (name, bytes, needle) in cases {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        let out = stallscope(&["analyze", p.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim_end().lines().count(), 1, "{name}: {err}");
        assert!(err.contains(p.to_str().unwrap()), "{name}: {err}");
        assert!(err.contains(needle), "{name}: {err}");
    }
    let missing = dir.join("missing.json");
    let out = stallscope(&["analyze", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let out = stallscope(&["analyze"]);
    assert_eq!(out.status.code(), Some(2), "usage error");
    let out = stallscope(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Examples:"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn truncated_file_can_be_analyzed_on_request() {
    let dir = std::env::temp_dir().join(format!("stallscope-trunc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("t.json");
    std::fs::write(
        &p,
        br#"{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 2}, {"ph": "X", "na"#,
    )
    .unwrap();
    let out = stallscope(&[
        "analyze",
        p.to_str().unwrap(),
        "--allow-truncated",
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["warnings"][0]["code"], "truncated");
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning"));
    std::fs::remove_dir_all(&dir).ok();
}

/// `--threads 0` is refused (it used to mean one parser thread while the analyses read 0 as
/// "automatic"), and the memory-mapped read, the buffered read and the timings knob give the
/// same report.
#[test]
fn threads_zero_is_refused_and_read_knobs_keep_the_report() {
    let p = common::sample("h100_kineto_2026_format.json");
    let p = p.to_str().unwrap();
    let out = stallscope(&["analyze", p, "--threads", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("at least 1"), "{err}");
    let run = |env: &[(&str, &str)]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_stallscope"));
        c.args(["analyze", p, "--format", "json"]);
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().expect("run stallscope");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        (o.stdout, String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let (mapped, _) = run(&[]);
    let (read, _) = run(&[("STALLSCOPE_NO_MMAP", "1"), ("STALLSCOPE_NO_AVX2", "1")]);
    let (timed, stderr) = run(&[("STALLSCOPE_TIMINGS", "1")]);
    let (scanned, _) = run(&[("STALLSCOPE_NO_CHAIN", "1")]);
    assert_eq!(mapped, scanned);
    assert_eq!(mapped, read);
    assert_eq!(mapped, timed);
    for phase in ["load", "analyze", "diagnose+report", "render"] {
        assert!(stderr.contains(&format!("timing: {phase} ")), "{stderr}");
    }
}
