//! The three front doors of the library give one answer: for every corpus file and sample
//! (and every folder of ranks among them), the command's `analyze --format json`, the MCP
//! server's `analyze` tool (`detail: true`, called in-process through
//! `stallscope::mcp::Server::analyze_now`, the same function the stdio tool runs; the stdio
//! client is covered by `tests/mcp.rs`) and the library's `api::analyze` (what the Python
//! module's `analyze` calls; its `to_dict()` is compared with the command by
//! `python/tests/test_front_doors.py`) are the same report, or the same one-line error.
//! The MCP answer leaves out `step_timeline` by design (`mcp::tools::detail`); every other
//! field must be equal.
#![cfg(feature = "mcp")]

mod common;

use std::path::{Path, PathBuf};

use serde_json::Value;
use stallscope::api::{self, AnalyzeRequest, LoadSettings};
use stallscope::mcp::tools::AnalyzeInput;

/// Every input `bench/same_output.sh` runs: the corpus' and the samples' files, then their
/// folders of two or more traces.
fn inputs() -> Vec<PathBuf> {
    let mut roots = vec![PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples")];
    roots.extend(common::corpus_dir());
    let mut files = Vec::new();
    let mut folders = Vec::new();
    let mut stack = roots.clone();
    while let Some(d) = stack.pop() {
        let mut traces = 0;
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_lowercase();
            if p.is_dir() {
                stack.push(p);
            } else if [".json", ".gz", ".sqlite", ".csv"]
                .iter()
                .any(|x| name.ends_with(x))
            {
                if name.ends_with(".json") || name.ends_with(".json.gz") {
                    traces += 1;
                }
                files.push(p);
            }
        }
        if traces >= 2 {
            folders.push(d);
        }
    }
    files.sort();
    folders.sort();
    files.extend(folders);
    files
        .into_iter()
        .map(|p| p.canonicalize().unwrap())
        .collect()
}

/// The command's answer: the report (JSON) or the last line of standard error on exit 2.
fn command(path: &Path) -> Result<Value, String> {
    let out = common::stallscope(&[
        "analyze",
        &path.to_string_lossy(),
        "--format",
        "json",
        "--threads",
        "1",
        "--quiet",
    ]);
    match out.status.code() {
        Some(0) => Ok(serde_json::from_slice(&out.stdout).unwrap()),
        Some(2) => {
            let err = String::from_utf8_lossy(&out.stderr);
            Err(err.lines().last().unwrap_or_default().to_string())
        }
        c => panic!("{}: exit {c:?}", path.display()),
    }
}

#[test]
fn the_command_the_mcp_tool_and_the_api_agree_on_every_input() {
    let inputs = inputs();
    assert!(inputs.len() > 10, "{} inputs", inputs.len());
    let roots: Vec<PathBuf> = vec![PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .canonicalize()
        .unwrap()]
    .into_iter()
    .chain(common::corpus_dir().map(|d| d.canonicalize().unwrap()))
    .collect();
    let server = stallscope::mcp::Server::new(&stallscope::mcp::ServeOptions {
        roots,
        cache_entries: 0,
        cache_bytes: 0,
        load: LoadSettings {
            threads: Some(1),
            ..LoadSettings::from_env()
        },
    });
    let (mut reports, mut errors) = (0, 0);
    for path in &inputs {
        let shown = path.display();
        let cmd = command(path);
        let tool = server
            .analyze_now(&AnalyzeInput {
                path: path.to_string_lossy().into_owned(),
                window: Default::default(),
                detail: true,
            })
            .map(|mut v| {
                v.as_object_mut().unwrap().remove("cached");
                v
            });
        let req = AnalyzeRequest {
            trace: path.clone(),
            load: LoadSettings {
                threads: Some(1),
                ..LoadSettings::from_env()
            },
            ..AnalyzeRequest::default()
        };
        let mut timings = stallscope::timings::Timings::nested();
        let lib = api::analyze(&req, &mut timings).map(|mut a| {
            api::sort_ops(&mut a.report, api::OpSort::DeviceSelf);
            serde_json::to_value(&a.report).unwrap()
        });
        match (cmd, tool, lib) {
            (Ok(mut cmd), Ok(tool), Ok(lib)) => {
                assert_eq!(cmd, lib, "{shown}: the api's report is not the command's");
                cmd.as_object_mut().unwrap().remove("step_timeline");
                assert_eq!(
                    cmd, tool,
                    "{shown}: the MCP analyze tool's report is not the command's"
                );
                reports += 1;
            }
            (Err(cmd), Err(tool), Err(lib)) => {
                let said = |m: &str| format!("error: {}", stallscope::text::printable(m));
                assert_eq!(cmd, said(&lib.to_string()), "{shown}: api error");
                assert_eq!(cmd, said(&tool), "{shown}: MCP error");
                errors += 1;
            }
            (c, t, l) => panic!(
                "{shown}: the doors disagree on success: command {:?}, MCP {:?}, api {:?}",
                c.err(),
                t.err(),
                l.err().map(|e| e.to_string())
            ),
        }
    }
    eprintln!("front doors agree on {reports} reports and {errors} errors");
}

/// The ResNet-50 worker 0 with `num_workers=0`, captured twice, against the same program with
/// `num_workers=4`, captured twice (the TensorBoard plugin's samples): repeated runs.
fn repeated_runs() -> Option<(Vec<PathBuf>, Vec<PathBuf>)> {
    let stem = "tbprof/tb_plugin__samples__resnet50_num_workers_";
    // canonical paths, as the analyze test's: the MCP server resolves a path inside its roots
    // (`/work/x/../shared/…` → `/work/shared/…`), the command keeps it as given
    let f = |rest: &str| {
        common::corpus_file(&format!("{stem}{rest}.pt.trace.json.gz"))?
            .canonicalize()
            .ok()
    };
    Some((
        vec![
            f("0__worker0.1623143089861")?,
            f("0__worker0.1623143566756")?,
        ],
        vec![
            f("4__worker0.1623212756351")?,
            f("4__worker0.1623213129365")?,
        ],
    ))
}

/// A repeated-run `diff` and `check` (`--before A1 A2 --after B1 B2`; `check B1 B2 --baseline
/// A1 A2 --max-regression 5%`) is one comparison through the command, the api's typed
/// requests (`api::diff`, `api::check`) and the MCP `diff` tool (`before_runs`, `after_runs`,
/// `max_regression`); `python/tests/test_diff.py` holds Python's `diff([...], [...])` and
/// `check` to the command.
#[test]
fn a_repeated_run_diff_and_check_are_one_answer_through_every_door() {
    let Some((before, after)) = repeated_runs() else {
        return;
    };
    let s = |p: &PathBuf| p.to_string_lossy().into_owned();
    let server = stallscope::mcp::Server::new(&stallscope::mcp::ServeOptions {
        roots: vec![common::corpus_dir().unwrap().canonicalize().unwrap()],
        cache_entries: 8,
        cache_bytes: 1 << 30,
        load: LoadSettings {
            threads: Some(1),
            ..LoadSettings::from_env()
        },
    });
    let req = api::DiffRequest {
        before: before[0].clone(),
        after: after[0].clone(),
        before_runs: before[1..].to_vec(),
        after_runs: after[1..].to_vec(),
        load: LoadSettings {
            threads: Some(1),
            ..LoadSettings::from_env()
        },
        ..api::DiffRequest::default()
    };
    let input = |max_regression: Option<f64>| stallscope::mcp::tools::DiffInput {
        before: s(&before[0]),
        after: s(&after[0]),
        before_runs: before[1..].iter().map(s).collect(),
        after_runs: after[1..].iter().map(s).collect(),
        max_regression,
        window: Default::default(),
        detail: true,
    };
    let mcp = |max_regression| {
        let mut v = server.diff_now(&input(max_regression)).unwrap();
        v.as_object_mut().unwrap().remove("cached");
        v
    };

    // diff
    let mut args = vec!["diff".to_string(), "--before".into()];
    args.extend(before.iter().map(s));
    args.push("--after".into());
    args.extend(after.iter().map(s));
    args.extend(["--format", "json", "--threads", "1", "-q"].map(String::from));
    let args: Vec<&str> = args.iter().map(|a| a.as_str()).collect();
    let cmd: Value = serde_json::from_slice(&common::ok_run(&args).stdout).unwrap();
    assert_eq!(cmd["verdict"]["basis"], "runs", "{}", cmd["verdict"]);
    assert_eq!(
        cmd["repeats"]["before"]["runs"].as_array().unwrap().len(),
        2
    );
    let lib = serde_json::to_value(&api::diff(&req).unwrap().comparison).unwrap();
    assert_eq!(cmd, lib, "the api's repeated-run diff is not the command's");
    assert_eq!(
        cmd,
        mcp(None),
        "the MCP tool's repeated-run diff is not the command's"
    );

    // check, 5 % budget
    let mut args = vec!["check".to_string()];
    args.extend(after.iter().map(s));
    args.push("--baseline".into());
    args.extend(before.iter().map(s));
    args.extend(
        [
            "--max-regression",
            "5%",
            "--format",
            "json",
            "--threads",
            "1",
            "-q",
        ]
        .map(String::from),
    );
    let args: Vec<&str> = args.iter().map(|a| a.as_str()).collect();
    let out = common::stallscope(&args);
    let cmd: Value = serde_json::from_slice(&out.stdout).unwrap();
    let outcome = cmd["check"]["outcome"].as_str().unwrap().to_string();
    let code = match outcome.as_str() {
        "pass" => 0,
        "regression" => 1,
        "inconclusive" => 3,
        o => panic!("outcome {o}"),
    };
    assert_eq!(out.status.code(), Some(code), "{outcome}");
    let creq = api::CheckRequest {
        diff: req.clone(),
        budget: api::budget(None, Some(5.0)),
    };
    let lib = serde_json::to_value(&api::check(&creq).unwrap().comparison).unwrap();
    assert_eq!(cmd, lib, "the api's check is not the command's");
    assert_eq!(
        cmd,
        mcp(Some(5.0)),
        "the MCP tool's check is not the command's"
    );
    eprintln!(
        "repeated runs: {} — check {outcome}",
        cmd["verdict"]["reason"]
    );
}
