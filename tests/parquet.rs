//! `analyze --format parquet`.
//!
//! * End to end with DuckDB's Python package (`tests/parquet_e2e/duckdb_queries.py`): the
//!   eight DLRM ranks of the corpus and a copy with one rank's all-reduces made longer are
//!   written as two jobs, then a platform team's queries run over the files (the ten slowest
//!   ranks, the kernels whose time grew most between the jobs) and every figure is compared
//!   with the JSON reports. The Python is `$STALLSCOPE_DUCKDB_PYTHON`, else `python3` when it
//!   imports `duckdb`; without one the test prints a loud SKIPPED line and passes, unless
//!   `STALLSCOPE_REQUIRE_DUCKDB=1` (set by `.ci/run`).
//! * docs/parquet.md lists exactly the columns and types the writer writes.
//! * Usage errors: no `-o`, `-o` naming a file, `--job` with another format.
#![cfg(feature = "parquet")]

mod common;

use std::path::PathBuf;

use stallscope::report::parquet::TABLES;

fn python_with_duckdb() -> Option<PathBuf> {
    common::python_with(
        "duckdb",
        "STALLSCOPE_DUCKDB_PYTHON",
        "STALLSCOPE_REQUIRE_DUCKDB",
        "parquet end-to-end",
    )
}

#[test]
fn duckdb_reads_the_tables_back_and_they_equal_the_reports() {
    let Some(param) = common::corpus_file("param") else {
        return;
    };
    let Some(py) = python_with_duckdb() else {
        return;
    };
    let bin = std::ffi::OsStr::new(env!("CARGO_BIN_EXE_stallscope"));
    let args = [
        "--bin".as_ref(),
        bin,
        "--corpus".as_ref(),
        param.as_os_str(),
    ];
    common::run_python_e2e(
        &py,
        "tests/parquet_e2e/duckdb_queries.py",
        &args,
        "PARQUET DUCKDB OK",
    );
}

/// The column tables of docs/parquet.md: `### \`TABLE\`` then rows `| \`column\` | type | …`.
fn documented() -> Vec<(String, Vec<(String, String)>)> {
    let doc =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/parquet.md"))
            .unwrap();
    let mut out: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for line in doc.lines() {
        if let Some(t) = line.strip_prefix("### `") {
            out.push((t.trim_end_matches('`').to_string(), Vec::new()));
        } else if let (Some(cell), Some(last)) = (line.strip_prefix("| `"), out.last_mut()) {
            let cells: Vec<&str> = cell.split('|').map(str::trim).collect();
            let name = cells[0].trim_end_matches('`').to_string();
            last.1.push((name, cells[1].trim_matches('`').to_string()));
        }
    }
    out
}

#[test]
fn docs_list_every_column_with_its_type() {
    let docs = documented();
    let code: Vec<(String, Vec<(String, String)>)> = TABLES
        .iter()
        .map(|t| {
            (
                t.name.to_string(),
                t.columns
                    .iter()
                    .map(|(c, k)| (c.to_string(), k.as_str().to_string()))
                    .collect(),
            )
        })
        .collect();
    assert_eq!(docs, code);
}

#[test]
fn parquet_needs_a_folder_and_job_needs_parquet() {
    let sample = common::sample("resnet50_v100_num_workers_0.pt.trace.json.gz");
    let s = sample.to_str().unwrap();
    let out = common::stallscope(&["analyze", s, "--format", "parquet"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("give -o DIR"));
    assert!(out.stdout.is_empty());
    let out = common::stallscope(&["analyze", s, "--format", "parquet", "-o", s]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("this is a file"));
    let out = common::stallscope(&["analyze", s, "--job", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--job applies only"));
}
