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
