//! `stallscope diff` and `stallscope check` end to end: a trace against itself, against a copy
//! with one kernel stretched, the TensorBoard plugin's two ResNet-50 runs, an Nsight Systems
//! before/after pair checked by hand in SQL, folders of ranks, and bad input on either side.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

/// The binary with `args` ([`common::stallscope`]).
fn run(args: &[&str]) -> Output {
    common::stallscope(args)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `diff BEFORE AFTER --format json [EXTRA…]`, asserting success.
fn diff_json(before: &Path, after: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["diff", s(before), s(after), "--format", "json"];
    args.extend_from_slice(extra);
    let out = run(&args);
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("valid comparison JSON")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("stallscope-diff-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn json_str(s: &str) -> Value {
    Value::String(s.to_string())
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Every decomposition sums to the step-time change; breakdown and timeline parts too.
fn assert_sums(c: &Value) {
    let change = f(&c["step_time"]["change_us"]);
    for key in ["contributors", "phase_contributors", "op_contributors"] {
        let sum: f64 = c[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| f(&r["change_us"]))
            .sum();
        assert!(
            (sum - change).abs() < 1e-6 * change.abs().max(1.0),
            "{key}: {sum} vs {change}"
        );
    }
    let sum: f64 = c["breakdown"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| f(&r["change_us"]))
        .sum();
    assert!((sum - change).abs() < 1e-3, "breakdown: {sum} vs {change}");
    for d in c["gpu_timeline"].as_array().unwrap() {
        let sum: f64 = d["parts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| f(&r["change_us"]))
            .sum();
        let total = f(&d["total"]["change_us"]);
        assert!((sum - total).abs() < 1e-3, "timeline: {sum} vs {total}");
    }
}

#[test]
fn a_trace_against_itself_and_its_saved_report_changes_nothing() {
    let t = common::sample("resnet50_v100_num_workers_0.pt.trace.json.gz");
    let c = diff_json(&t, &t, &[]);
    assert_eq!(c["schema_version"], 1);
    assert_eq!(f(&c["step_time"]["change_us"]), 0.0);
    assert_eq!(c["step_time"]["noise"]["judgement"], "within_noise");
    assert_eq!(c["step_time"]["noise"]["p_value"], 1.0);
    for key in ["kernels", "ops", "phases"] {
        for r in c[key].as_array().unwrap() {
            assert_eq!(r["status"], "unchanged", "{key}: {r}");
        }
    }
    for r in c["findings"].as_array().unwrap() {
        assert_eq!(r["status"], "unchanged", "{r}");
    }
    for r in c["breakdown"].as_array().unwrap() {
        assert_eq!(f(&r["change_us"]), 0.0);
    }
    assert!(
        c["caveats"].as_array().unwrap().is_empty(),
        "{}",
        c["caveats"]
    );
    assert_sums(&c);
    // check exits 0
    let out = run(&["check", s(&t), "--baseline", s(&t)]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "one summary line: {err}");
    assert!(err.starts_with("stallscope check: ok"), "{err}");

    // a saved report on a side gives the same comparison as its trace
    let dir = scratch("self");
    let base = dir.join("base.json");
    let out = run(&["analyze", s(&t), "--format", "json", "-o", s(&base)]);
    assert!(out.status.success());
    let mut saved = diff_json(&base, &t, &[]);
    assert_eq!(saved["before"]["kind"], "report");
    let mut traced = c.clone();
    // a saved report carries the workload (first layer, batch, input, dtypes): the parity is
    // the trace's, check for check
    assert_eq!(saved["parity"], traced["parity"]);
    let batch = saved["parity"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["what"] == "batch")
        .unwrap()
        .clone();
    assert_eq!(
        (&batch["before"], &batch["status"]),
        (&json_str("32"), &json_str("same"))
    );
    for v in [&mut saved, &mut traced] {
        v["before"] = Value::Null;
    }
    assert_eq!(saved, traced);
    let out = run(&[
        "check",
        s(&t),
        "--baseline",
        s(&base),
        "--max-regression",
        "5%",
    ]);
    assert_eq!(out.status.code(), Some(0));
    // every format renders; the terminal fits 100 columns
    for fmt in ["table", "md", "html"] {
        let out = run(&["diff", s(&base), s(&t), "--format", fmt]);
        assert!(out.status.success(), "{fmt}");
        let text = String::from_utf8(out.stdout).unwrap();
        if fmt == "table" {
            for l in text.lines() {
                assert!(l.chars().count() <= 100, "over 100 columns: {l:?}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A monotone time map that stretches every event of `kernel` by 20 % and shifts what follows
/// (events that span a stretched kernel stretch with it): the trace stays consistent.
fn stretch(src: &Path, kernel: &str, dst: &Path) -> f64 {
    let mut gz = flate2::read::GzDecoder::new(std::fs::File::open(src).unwrap());
    let mut text = String::new();
    std::io::Read::read_to_string(&mut gz, &mut text).unwrap();
    let mut d: Value = serde_json::from_str(&text).unwrap();
    let events = d["traceEvents"].as_array_mut().unwrap();
    let mut ks: Vec<(f64, f64)> = events
        .iter()
        .filter(|e| e["cat"] == "kernel" && e["name"] == kernel)
        .map(|e| (f(&e["ts"]), f(&e["dur"])))
        .collect();
    ks.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut cum = vec![0.0];
    for (_, du) in &ks {
        cum.push(cum.last().unwrap() + 0.2 * du);
    }
    let map = |t: f64| -> f64 {
        let i = ks.partition_point(|k| k.0 <= t);
        if i == 0 {
            return t;
        }
        let (s0, du) = ks[i - 1];
        if t < s0 + du {
            t + cum[i - 1] + 0.2 * (t - s0)
        } else {
            t + cum[i]
        }
    };
    for e in events.iter_mut() {
        let Some(ts) = e.get("ts").and_then(|v| v.as_f64()) else {
            continue;
        };
        let nt = map(ts);
        if let Some(du) = e.get("dur").and_then(|v| v.as_f64()) {
            let end = map(ts + du);
            e["dur"] = Value::from(((end - nt) * 1000.0).round() / 1000.0);
        }
        e["ts"] = Value::from((nt * 1000.0).round() / 1000.0);
    }
    std::fs::write(dst, serde_json::to_vec(&d).unwrap()).unwrap();
    ks.iter().map(|k| 0.2 * k.1).sum()
}

#[test]
fn one_kernel_stretched_by_20_percent_is_the_first_contributor() {
    let Some(t) = common::corpus_file("hta/tests__data__trace_diff__control__control.json.gz")
    else {
        return;
    };
    let kernel = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)";
    let dir = scratch("stretch");
    let after = dir.join("stretched.json");
    stretch(&t, kernel, &after);
    let c = diff_json(&t, &after, &[]);
    assert_sums(&c);
    let first = &c["contributors"][0];
    assert_eq!(first["name"], kernel);
    assert_eq!(first["kind"], "kernel");
    // the kernel's own change is 20 % of its time per step
    let (b, a) = (f(&first["before_us"]), f(&first["after_us"]));
    assert!((a - 1.2 * b).abs() < 1e-3 * b, "{b} → {a}");
    // the step grows by the stretch inside the steps, within 1 %
    let change = f(&c["step_time"]["change_us"]);
    let stretch_per_step = a - b;
    assert!(
        (change - stretch_per_step).abs() <= 0.01 * stretch_per_step,
        "step change {change} vs stretch {stretch_per_step}"
    );
    assert_eq!(
        c["step_time"]["noise"]["judgement"], "slower",
        "{}",
        c["summary"]
    );
    let out = run(&[
        "check",
        s(&after),
        "--baseline",
        s(&t),
        "--max-regression",
        "5%",
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("stallscope check: REGRESSION: step time +5."),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1);
    // a looser budget file passes; a kernel budget in the file catches the kernel
    let toml = dir.join("stallscope.toml");
    let kernel_budget =
        "[[budget.kernel]]\nname = \"ncclKernel_SendRecv\"\nmax_regression = \"10%\"\n";
    for (budget, code) in [("", 0), (kernel_budget, 1)] {
        std::fs::write(&toml, format!("[budget]\nstep_time = \"10%\"\n{budget}")).unwrap();
        let out = run(&[
            "check",
            s(&after),
            "--baseline",
            s(&t),
            "--budget",
            s(&toml),
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{budget}: {err}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn tensorboard_resnet_num_workers_0_vs_4() {
    let (Some(b), Some(a)) = (
        common::corpus_file(
            "tbprof/tb_plugin__samples__resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz",
        ),
        common::corpus_file(
            "tbprof/tb_plugin__samples__resnet50_num_workers_4__worker0.1623212756351.pt.trace.json.gz",
        ),
    ) else {
        return;
    };
    let c = diff_json(&b, &a, &[]);
    assert_sums(&c);
    // the sides read one after the other: the same comparison
    assert_eq!(diff_json(&b, &a, &["--sequential"]), c);
    // expected-values.md §2.1/§2.2: DataLoader 59262 → 1186 µs per step (plugin, ±1 µs each)
    let dl = c["breakdown"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "dataloader")
        .unwrap();
    assert!((f(&dl["before_us"]) - 59262.0).abs() <= 1.0, "{dl}");
    assert!((f(&dl["after_us"]) - 1186.0).abs() <= 1.0, "{dl}");
    assert!((f(&dl["change_us"]) + 58076.0).abs() <= 2.0, "{dl}");
    // step 177592 → 141068
    assert!((f(&c["step_time"]["before"]["mean_us"]) - 177592.0).abs() <= 1.0);
    assert!((f(&c["step_time"]["after"]["mean_us"]) - 141068.0).abs() <= 1.0);
    assert_eq!(c["contributors"][0]["name"], "DataLoader");
    let stall = c["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "dataloader-stall")
        .expect("dataloader-stall listed");
    assert_eq!(stall["status"], "resolved");
    assert_eq!(c["step_time"]["noise"]["judgement"], "faster");
}

#[test]
fn nsys_before_after_kernels_agree_with_sql() {
    let dir = "nsys/sqlite/";
    let (Some(b), Some(a)) = (
        common::corpus_file(&format!("{dir}nsysai_mfu_2xh100_before_nsys2026.2.sqlite")),
        common::corpus_file(&format!("{dir}nsysai_mfu_2xh100_after_nsys2026.2.sqlite")),
    ) else {
        return;
    };
    let c = diff_json(&b, &a, &[]);
    assert_sums(&c);
    // one window without steps on each side: too few steps, said as such
    assert_eq!(c["step_time"]["noise"]["judgement"], "too_few_steps");
    let sql = |p: &Path| -> Vec<(String, i64, f64)> {
        let db =
            rusqlite::Connection::open_with_flags(p, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .unwrap();
        let mut st = db
            .prepare(
                "SELECT s.value, count(*), sum(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k \
                 JOIN StringIds s ON s.id = k.demangledName GROUP BY s.value",
            )
            .unwrap();
        st.query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as f64 / 1000.0))
        })
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
    };
    let (kb, ka) = (sql(&b), sql(&a));
    // the five kernels with the largest change by hand agree with the comparison's rows
    let mut hand: Vec<(String, f64, i64, i64)> = kb
        .iter()
        .filter_map(|(n, cb, tb)| {
            let (_, ca, ta) = ka.iter().find(|k| &k.0 == n)?;
            Some((n.clone(), ta - tb, *cb, *ca))
        })
        .collect();
    hand.sort_by(|x, y| y.1.abs().total_cmp(&x.1.abs()));
    let rows = c["kernels"].as_array().unwrap();
    for (name, change, cb, ca) in hand.iter().take(5) {
        let r = rows
            .iter()
            .find(|r| r["name"] == name.as_str())
            .unwrap_or_else(|| panic!("{name} not in the comparison"));
        assert!(
            (f(&r["change_us"]) - change).abs() < 0.01,
            "{name}: {r} vs {change}"
        );
        assert_eq!(f(&r["before"]["calls"]) as i64, *cb);
        assert_eq!(f(&r["after"]["calls"]) as i64, *ca);
    }
    // the step (window) change is the difference of the two reports' step times
    let rb = common::analyze_json(&b, &[]);
    let ra = common::analyze_json(&a, &[]);
    let want = f(&ra["step_time_us"]) - f(&rb["step_time_us"]);
    assert!((f(&c["step_time"]["change_us"]) - want).abs() < 1e-6);
}

#[test]
fn folders_of_ranks_compare_rank_by_rank() {
    let names = [
        "et_replay__tests__inputs__dlrm_kineto.tar.gz__dlrm_kineto__worker0_step_12.1694128201545.pt.trace.json.gz",
        "et_replay__tests__inputs__dlrm_kineto.tar.gz__dlrm_kineto__worker1_step_12.1694128201556.pt.trace.json.gz",
        "et_replay__tests__inputs__dlrm_kineto.tar.gz__dlrm_kineto__worker2_step_12.1694128201554.pt.trace.json.gz",
        "et_replay__tests__inputs__dlrm_kineto.tar.gz__dlrm_kineto__worker3_step_12.1694128201557.pt.trace.json.gz",
    ];
    let mut files = Vec::new();
    for n in names {
        match common::corpus_file(&format!("param/{n}")) {
            Some(p) => files.push(p),
            None => return,
        }
    }
    let dir = scratch("ranks");
    let (before, after) = (dir.join("before"), dir.join("after"));
    std::fs::create_dir_all(&before).unwrap();
    std::fs::create_dir_all(&after).unwrap();
    for (i, p) in files.iter().enumerate() {
        std::fs::copy(p, before.join(names[i])).unwrap();
        if i != 0 {
            std::fs::copy(p, after.join(names[i])).unwrap();
        }
    }
    let c = diff_json(&before, &after, &[]);
    assert_eq!(diff_json(&before, &after, &["--sequential"]), c);
    let rb = common::analyze_json(&before, &[]);
    let ra = common::analyze_json(&after, &[]);
    let r = &c["ranks"];
    assert_eq!(r["slowest_before"], rb["ranks"]["slowest_rank"]);
    assert_eq!(r["slowest_after"], ra["ranks"]["slowest_rank"]);
    let rows = r["ranks"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    for row in rb["ranks"]["ranks"].as_array().unwrap() {
        let d = rows.iter().find(|x| x["rank"] == row["rank"]).unwrap();
        assert_eq!(f(&d["before_us"]), f(&row["step_time_us"]));
    }
    let dropped = rows.iter().filter(|x| x["after_us"].is_null()).count();
    assert_eq!(dropped, 1, "one rank only before: {rows:?}");
    for row in ra["ranks"]["ranks"].as_array().unwrap() {
        let d = rows.iter().find(|x| x["rank"] == row["rank"]).unwrap();
        assert_eq!(f(&d["after_us"]), f(&row["step_time_us"]));
        assert_eq!(
            f(&d["change_us"]),
            f(&row["step_time_us"]) - f(&d["before_us"])
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bad_input_on_either_side_names_side_and_file() {
    let t = common::sample("resnet50_v100_num_workers_0.pt.trace.json.gz");
    let dir = scratch("bad");
    let truncated = dir.join("truncated.json.gz");
    let bytes = std::fs::read(&t).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let text = dir.join("notes.txt");
    std::fs::write(&text, "this is not a profile\n").unwrap();
    let old = dir.join("old-report.json");
    let out = run(&["analyze", s(&t), "--format", "json", "-o", s(&old)]);
    assert!(out.status.success());
    let mut v: Value = serde_json::from_slice(&std::fs::read(&old).unwrap()).unwrap();
    v["schema_version"] = Value::from(99);
    std::fs::write(&old, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    for bad in [&truncated, &text, &old] {
        for (args, side) in [
            (vec!["diff", s(bad), s(&t)], "before"),
            (vec!["diff", s(&t), s(bad)], "after"),
            (vec!["check", s(bad), "--baseline", s(&t)], "after"),
            (vec!["check", s(&t), "--baseline", s(bad)], "before"),
        ] {
            let out = run(&args);
            assert_eq!(out.status.code(), Some(2), "{args:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(err.contains(&format!("{side} side")), "{args:?}: {err}");
            assert!(err.contains(s(bad)), "{args:?}: {err}");
        }
    }
    let err = String::from_utf8_lossy(&run(&["diff", s(&old), s(&t)]).stderr).to_string();
    assert!(err.contains("schema version 99"), "{err}");
    // a bad budget file is an argument error
    let toml = dir.join("b.toml");
    std::fs::write(&toml, "[budget]\nstep_tme = 5\n").unwrap();
    let out = run(&["check", s(&t), "--baseline", s(&t), "--budget", s(&toml)]);
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(dir);
}

/// HolisticTraceAnalysis `tests/test_trace_diff.py` (`test_ops_diff`) compares the CPU events of
/// iteration 1010 of `trace_compare/base` and `trace_compare/test`: added `AddmmBackward0`,
/// `All2All_Pooled_Req`, `CatBackward0`; deleted `nccl:all_reduce`; unchanged
/// `aten::as_strided`, `aten::empty` (and `ProfilerStep#1010`, `cudaEventQuery`,
/// `cudaLaunchKernel`, which stallscope counts as the step and runtime calls, not as ops).
/// ProfilerStep#1010 spans 100398..222547 µs from the start in both traces; stallscope leaves
/// it out of the automatic window of `test` (no device work), so the window is that range.
#[test]
fn hta_trace_compare_ops_added_removed_unchanged() {
    let (Some(b), Some(a)) = (
        common::corpus_file("hta/tests__data__trace_compare__base__base.json.gz"),
        common::corpus_file("hta/tests__data__trace_compare__test__test.json.gz"),
    ) else {
        return;
    };
    let c = diff_json(&b, &a, &["--time", "100398..222547"]);
    let with = |key: &str, status: &str| -> Vec<String> {
        let mut v: Vec<String> = c[key]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["status"] == status)
            .map(|r| r["name"].as_str().unwrap().to_string())
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        with("ops", "added"),
        ["AddmmBackward0", "All2All_Pooled_Req", "CatBackward0"]
    );
    assert_eq!(
        with("ops", "unchanged"),
        ["aten::as_strided", "aten::empty"]
    );
    assert!(with("ops", "removed").is_empty());
    assert_eq!(with("phases", "removed"), ["nccl:all_reduce"]);
    assert!(with("phases", "added").is_empty());
    assert_sums(&c);
}

/// The raw events of a Kineto trace (gzipped).
fn raw_trace(path: &Path) -> Value {
    use std::io::Read;
    let mut s = String::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut s)
        .unwrap();
    serde_json::from_str(&s).unwrap()
}

/// A host-side change on real captures (torch 2.15 on the CPU, samples/
/// make_torch_cpu_loss_loop.py): a per-sample Python loop loss replaced by the vectorized loss.
/// The steps are host-bound, so operators and phases are compared and ranked on host time:
/// calls and host time per step of `aten::cross_entropy_loss` equal a sum over the raw events of
/// the window's steps; `aten::mm` (no device time) is decreased, not unchanged; no changed row
/// is a row of zeros; the operator contributors leave the Python between operators, not the
/// whole change, to the catch-all row.
#[test]
fn host_side_change_on_real_cpu_captures() {
    let before = common::sample("torch_cpu_loss_loop.json.gz");
    let after = common::sample("torch_cpu_loss_vector.json.gz");
    let c = diff_json(&before, &after, &[]);
    assert_sums(&c);
    assert_eq!(c["ranked_by"]["basis"], "host", "{}", c["ranked_by"]);
    let row = |name: &str| -> &Value {
        c["ops"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == name)
            .unwrap()
    };
    for (path, side, calls) in [(&before, "before", 32.0), (&after, "after", 1.0)] {
        // by hand: the steps the operator table covers (the window's first to last step, a
        // step left out between them included: the table takes one interval), the loss calls
        // starting inside them
        let rep = common::analyze_json(path, &[]);
        let num = |s: &str| s.rsplit_once('#').unwrap().1.parse::<i64>().unwrap();
        let nums: Vec<i64> = rep["window"]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| num(s.as_str().unwrap()))
            .collect();
        let (lo, hi) = (*nums.iter().min().unwrap(), *nums.iter().max().unwrap());
        let names: Vec<String> = (lo..=hi).map(|n| format!("ProfilerStep#{n}")).collect();
        let steps: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
        let raw = raw_trace(path);
        let ev = raw["traceEvents"].as_array().unwrap();
        let spans: Vec<(f64, f64)> = ev
            .iter()
            .filter(|e| e["ph"] == "X" && steps.iter().any(|s| e["name"] == *s))
            .map(|e| (f(&e["ts"]), f(&e["ts"]) + f(&e["dur"])))
            .collect();
        assert_eq!(spans.len(), steps.len());
        let (mut n, mut host) = (0.0, 0.0);
        for e in ev {
            if e["name"] == "aten::cross_entropy_loss" && e["cat"] == "cpu_op" {
                let t = f(&e["ts"]);
                if spans.iter().any(|&(a, b)| t >= a && t < b) {
                    n += 1.0;
                    host += f(&e["dur"]);
                }
            }
        }
        let k = steps.len() as f64;
        let r = &row("aten::cross_entropy_loss")[side];
        assert_eq!(n / k, calls, "{side}");
        assert_eq!(f(&r["calls"]), calls, "{side}");
        assert!(
            (f(&r["host_us"]) - host / k).abs() < 1e-6,
            "{side}: {r} vs {}",
            host / k
        );
    }
    // aten::mm: 0 device time on both sides, host self 722.9 → 548.2 µs per step
    let mm = row("aten::mm");
    assert_eq!(f(&mm["change_us"]), 0.0);
    assert!(f(&mm["host_change_us"]) < -100.0, "{mm}");
    assert_eq!(mm["status"], "decreased");
    // ranked by the host change, largest first
    let ops = c["ops"].as_array().unwrap();
    let h: Vec<f64> = ops
        .iter()
        .map(|o| o["host_change_us"].as_f64().unwrap_or(0.0).abs())
        .collect();
    assert!(h.windows(2).all(|w| w[0] >= w[1]), "{h:?}");
    // a changed row has a change on one of its measures, or a change of calls
    for o in ops.iter().filter(|o| o["status"] != "unchanged") {
        let moved = f(&o["change_us"]) != 0.0
            || o["host_change_us"].as_f64().unwrap_or(0.0) != 0.0
            || o["before"]["calls"] != o["after"]["calls"];
        assert!(moved, "{o}");
    }
    // the catch-all row keeps only what no operator explains (the Python of the loop)
    let residual = c["op_contributors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "residual")
        .unwrap();
    let share = f(&residual["share_of_change"]);
    assert!(share > 0.0 && share < 0.5, "{residual}");
    // the table says which time it ranks by
    let out = run(&["diff", s(&before), s(&after)]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("host-bound step, ranked by host time"),
        "{text}"
    );
    assert!(text.contains("Operators (host self time"), "{text}");
    // CPU memory is compared: the loop and the vectorized loss peak at the same bytes
    let m = &c["memory"][0];
    assert_eq!(m["device"], -1);
    assert_eq!(m["peak_change"], 0);
}

/// `check`'s exit code tells the three outcomes apart (docs/diff.md): 0 pass, 1 regression,
/// 3 inconclusive (nothing failed, but the step-time verdict could not tell), each with its
/// stderr line and the JSON's `check.outcome`. Real CPU captures: a per-sample Python loss
/// loop and its vectorized replacement (samples/make_torch_cpu_loss_loop.py).
#[test]
fn check_exit_codes_tell_pass_regression_and_inconclusive_apart() {
    let (lp, vec) = (
        common::sample("torch_cpu_loss_loop.json.gz"),
        common::sample("torch_cpu_loss_vector.json.gz"),
    );
    let check = |new: &Path, base: &Path, extra: &[&str]| -> (i32, String, Value) {
        let mut args = vec!["check", s(new), "--baseline", s(base), "--format", "json"];
        args.extend_from_slice(extra);
        let out = run(&args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let json: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (out.status.code().unwrap_or(-1), err, json)
    };
    // the same capture, 6 steps a side: no change beyond noise → pass, 0
    let (code, err, j) = check(&lp, &lp, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.starts_with("stallscope check: ok"), "{err}");
    assert_eq!(j["check"]["outcome"], "pass");
    // the loop back in place of the vectorized loss: +241 % → regression, 1
    let (code, err, j) = check(&lp, &vec, &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with("stallscope check: REGRESSION"), "{err}");
    assert_eq!(j["check"]["outcome"], "regression");
    // two steps a side: the noise cannot be judged; the same capture (+0 %) and the
    // vectorized loss (−71 %) are inconclusive, 3; the loop back in place (+241 %) still fails
    for (new, base) in [(&lp, &lp), (&vec, &lp)] {
        let (code, err, j) = check(new, base, &["--steps", "3..4"]);
        assert_eq!(code, 3, "{err}");
        assert!(err.starts_with("stallscope check: INCONCLUSIVE"), "{err}");
        assert!(err.contains("too few steps"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert_eq!(j["check"]["outcome"], "inconclusive");
        assert_eq!(j["verdict"]["kind"], "inconclusive");
        assert_eq!(j["check"]["failed"], false);
    }
    let (code, err, j) = check(&lp, &vec, &["--steps", "3..4"]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(j["check"]["outcome"], "regression");
    // a budget without a step-time limit does not judge the step time: pass
    let dir = scratch("exit3");
    let toml = dir.join("b.toml");
    std::fs::write(&toml, "[budget]\ngpu_idle_share = 100.0\n").unwrap();
    let (code, err, _) = check(&lp, &lp, &["--steps", "3..4", "--budget", s(&toml)]);
    assert_eq!(code, 0, "{err}");
    // the help says it
    let help = String::from_utf8(run(&["check", "--help"]).stdout).unwrap();
    assert!(help.contains("3 inconclusive"), "{help}");
    let _ = std::fs::remove_dir_all(dir);
}

/// Saved reports carry the workload facts (the report's `workload`, docs/json-report.md), so
/// `diff saved_a.json saved_b.json` checks parity as the traces do: a three-layer MLP at batch
/// 64 against the loss-loop model at batch 32 (real CPU captures) is `not the same workload`
/// from the saved reports too. A report saved before `workload` was added (the key removed)
/// still reads, its shape checks `unknown`.
#[test]
fn saved_reports_carry_the_workload_and_diff_checks_their_parity() {
    let (a, b) = (
        common::sample("torch_cpu_mlp_two_phases.pt.trace.json.gz"),
        common::sample("torch_cpu_loss_loop.json.gz"),
    );
    let dir = scratch("workload");
    let (ja, jb) = (dir.join("a.json"), dir.join("b.json"));
    for (t, j) in [(&a, &ja), (&b, &jb)] {
        common::ok_run(&["analyze", s(t), "--format", "json", "-o", s(j)]);
    }
    let report: Value = serde_json::from_slice(&std::fs::read(&ja).unwrap()).unwrap();
    let w = &report["workload"];
    assert_eq!(w["first_input"], serde_json::json!([64, 64]), "{w}");
    assert!(
        w["first_layer"].as_str().unwrap().starts_with("aten::"),
        "{w}"
    );
    let traced = diff_json(&a, &b, &[]);
    let saved = diff_json(&ja, &jb, &[]);
    assert_eq!(saved["before"]["kind"], "report");
    assert_eq!(saved["parity"], traced["parity"]);
    assert_eq!(saved["parity"]["same_workload"], false);
    assert_eq!(saved["caveats"][0], traced["caveats"][0]);
    assert!(
        saved["caveats"][0]
            .as_str()
            .unwrap()
            .starts_with("not the same workload: batch 64 → 32"),
        "{}",
        saved["caveats"]
    );
    assert_eq!(saved["verdict"], traced["verdict"]);
    // an older report, without `workload`: read as before, its shape checks unknown
    let mut old = report.clone();
    old.as_object_mut().unwrap().remove("workload");
    let jo = dir.join("old.json");
    std::fs::write(&jo, serde_json::to_vec(&old).unwrap()).unwrap();
    let c = diff_json(&jo, &jb, &[]);
    for ch in c["parity"]["checks"].as_array().unwrap() {
        if ["first layer", "batch", "first-layer input", "dtype mix"]
            .contains(&ch["what"].as_str().unwrap())
        {
            assert_eq!(ch["status"], "unknown", "{ch}");
        }
    }
    assert_eq!(c["step_time"], saved["step_time"]);
    let _ = std::fs::remove_dir_all(dir);
}
