//! `stallscope mcp`.
//!
//! * End to end with the official Python MCP client (`tests/mcp_e2e/mcp_client.py`, PyPI `mcp`): the
//!   server as a client starts it, its tools, answers equal to the command line's, tool errors
//!   for truncated files and paths outside the roots, the cache (timed, printed). The Python is
//!   `$STALLSCOPE_MCP_PYTHON`, else `python3` when it imports `mcp`; without one the test
//!   prints a loud SKIPPED line and passes, unless `STALLSCOPE_REQUIRE_MCP=1` (set by `.ci/run`).
//! * The answers cut from a report (`stallscope::mcp::tools`) against the report itself.
#![cfg(feature = "mcp")]

mod common;

use std::path::PathBuf;

use stallscope::mcp::tools::{self, Table, WindowInput};
use stallscope::report::Report;

const SAMPLE: &str = "resnet50_v100_num_workers_0.pt.trace.json.gz";

fn python_with_mcp() -> Option<PathBuf> {
    common::python_with(
        "mcp",
        "STALLSCOPE_MCP_PYTHON",
        "STALLSCOPE_REQUIRE_MCP",
        "mcp end-to-end",
    )
}

#[test]
fn python_client_end_to_end() {
    let Some(py) = python_with_mcp() else {
        return;
    };
    let sample = common::sample(SAMPLE);
    // an Nsight Compute CSV of the corpus, read alone (left out without the corpus)
    let ncu = common::corpus_file("ncu/csv/esmm_gemm_a10g_page-details.csv");
    let bin = std::ffi::OsStr::new(env!("CARGO_BIN_EXE_stallscope"));
    let mut args = vec![
        "--bin".as_ref(),
        bin,
        "--sample".as_ref(),
        sample.as_os_str(),
    ];
    if let Some(p) = &ncu {
        args.extend(["--ncu".as_ref(), p.as_os_str()]);
    }
    // the measurements (first and cached call) are printed in the output of `cargo test`
    common::run_python_e2e(
        &py,
        "tests/mcp_e2e/mcp_client.py",
        &args,
        "MCP END-TO-END OK",
    );
}

fn sample_report() -> Report {
    let trace = common::load(&common::sample(SAMPLE));
    let a = stallscope::analysis::try_analyze(&trace, &Default::default()).unwrap();
    Report::new(&trace, &a, stallscope::diagnose::diagnose(&trace, &a))
}

#[test]
fn tables_are_the_reports_rows() {
    let rep = sample_report();
    let v = tools::table(&rep, Table::Kernels, Some(5), None, None).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 5);
    assert_eq!(v["rows_total"], rep.kernels.len());
    for (r, k) in rows.iter().zip(&rep.kernels) {
        assert_eq!(r["name"], k.name.as_str());
        assert_eq!(r["total_us"].as_f64(), Some(k.total_us));
    }

    // sort by a column (numbers descending), top 0 = all
    let v = tools::table(&rep, Table::Ops, Some(0), Some("calls"), None).unwrap();
    let calls: Vec<u64> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["calls"].as_u64().unwrap())
        .collect();
    assert_eq!(calls.len(), rep.ops.len());
    let mut want: Vec<u64> = rep.ops.iter().map(|o| o.calls).collect();
    want.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(calls, want);

    // nested column, text ascending
    let v = tools::table(
        &rep,
        Table::Steps,
        Some(0),
        Some("breakdown_us.dataloader"),
        None,
    )
    .unwrap();
    let dl: Vec<f64> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["breakdown_us"]["dataloader"].as_f64().unwrap())
        .collect();
    assert!(dl.windows(2).all(|w| w[0] >= w[1]), "{dl:?}");
    let v = tools::table(&rep, Table::Kernels, Some(0), Some("name"), None).unwrap();
    let names: Vec<&str> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert!(names.windows(2).all(|w| w[0] <= w[1]));

    // filter: case-insensitive substring of the name (phases: the path)
    let v = tools::table(&rep, Table::Kernels, Some(0), None, Some("ELEMENTWISE")).unwrap();
    let want = rep
        .kernels
        .iter()
        .filter(|k| k.name.to_lowercase().contains("elementwise"))
        .count();
    assert!(want > 0);
    assert_eq!(v["rows"].as_array().unwrap().len(), want);
    assert_eq!(v["rows_matched"], want);

    let e = tools::table(&rep, Table::Kernels, None, Some("bogus"), None).unwrap_err();
    assert!(e.contains("total_us"), "{e}");
}

#[test]
fn summary_and_explanation_come_from_the_report() {
    let rep = sample_report();
    let s = tools::summary(&rep).unwrap();
    assert_eq!(s["verdict"], rep.verdict.as_str());
    assert_eq!(
        s["headline"]["step_time_us"].as_f64(),
        Some(rep.step_time_us)
    );
    let shown = s["findings"].as_array().unwrap();
    assert_eq!(shown.len(), rep.findings.len().min(tools::SUMMARY_FINDINGS));
    for (f, full) in shown.iter().zip(&rep.findings) {
        assert_eq!(f["id"], full.id);
        assert_eq!(f["recoverable_us"].as_f64(), Some(full.recoverable_us));
        let ev = f["evidence"].as_array().unwrap();
        assert_eq!(
            ev.len(),
            full.evidence.facts.len().min(tools::SUMMARY_LINES)
        );
    }
    assert!(serde_json::to_string(&s).unwrap().len() < 20_000);

    let d = tools::detail(&rep).unwrap();
    assert!(d.get("step_timeline").is_none());
    assert_eq!(d["kernels"].as_array().unwrap().len(), rep.kernels.len());

    let f = rep
        .findings
        .iter()
        .find(|f| !f.evidence.locations.is_empty())
        .expect("a finding with locations");
    let e = tools::explain(&rep, f.id).unwrap();
    let locs = e["findings"][0]["evidence"]["locations"]
        .as_array()
        .unwrap();
    assert_eq!(locs.len(), f.evidence.locations.len());
    for (l, want) in locs.iter().zip(&f.evidence.locations) {
        assert_eq!(
            l["ts_us"].as_f64(),
            Some(rep.source.trace_start_us + want.start_us)
        );
    }
    assert!(tools::explain(&rep, "no-such-rule")
        .unwrap_err()
        .contains(rep.findings[0].id));
}

#[test]
fn window_inputs_select_as_the_flags_do() {
    let w = WindowInput {
        steps: Some("6..7".into()),
        ..Default::default()
    };
    let trace = common::load(&common::sample(SAMPLE));
    let opts = stallscope::analysis::AnalyzeOptions {
        window: w.spec().unwrap(),
        ..Default::default()
    };
    let a = stallscope::analysis::try_analyze(&trace, &opts).unwrap();
    let rep = Report::new(&trace, &a, stallscope::diagnose::diagnose(&trace, &a));
    let cli = common::analyze_json(&common::sample(SAMPLE), &["--steps", "6..7"]);
    assert_eq!(rep.window.spec, cli["window"]["spec"].as_str().unwrap());
    assert_eq!(rep.verdict, cli["verdict"].as_str().unwrap());
    assert_eq!(rep.window.steps.len(), 2);
}
