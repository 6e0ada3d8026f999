//! Shared helpers for integration tests.
//!
//! Tests over the wider corpus read `../shared/corpus` (or `$STALLSCOPE_CORPUS`). When it is
//! absent they say so loudly on stderr and return; with `STALLSCOPE_REQUIRE_CORPUS=1` (set by
//! `.ci/run`) a missing corpus is a failure instead, so CI can never pass without it.
#![allow(dead_code)]

pub mod invariants;

use std::path::PathBuf;

/// The corpus folder, if present.
pub fn corpus_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("STALLSCOPE_CORPUS") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"),
    };
    if dir.is_dir() {
        Some(dir)
    } else {
        None
    }
}

/// Path of a corpus file, or `None` (after printing why) when the corpus is absent.
/// Panics when `STALLSCOPE_REQUIRE_CORPUS=1` and the corpus or the file is missing.
pub fn corpus_file(rel: &str) -> Option<PathBuf> {
    let required = std::env::var("STALLSCOPE_REQUIRE_CORPUS").as_deref() == Ok("1");
    match corpus_dir() {
        Some(d) => {
            let p = d.join(rel);
            if p.exists() {
                Some(p)
            } else if required {
                panic!("corpus file missing: {}", p.display());
            } else {
                eprintln!("CORPUS FILE MISSING, test skipped: {}", p.display());
                None
            }
        }
        None => {
            if required {
                panic!("../shared/corpus is absent but STALLSCOPE_REQUIRE_CORPUS=1");
            }
            eprintln!(
                "CORPUS ABSENT (../shared/corpus): test skipped; set STALLSCOPE_CORPUS to run it"
            );
            None
        }
    }
}

/// Path of a sample shipped in the repository (`samples/`).
pub fn sample(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(rel)
}

/// Loads a trace with default options, panicking with the error text on failure.
pub fn load(path: &std::path::Path) -> stallscope::model::Trace {
    stallscope::ingest::load(path.to_str().unwrap(), &Default::default())
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Runs the `stallscope` binary with `args` (colours off) and returns its output.
pub fn stallscope(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_stallscope"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run stallscope")
}

/// Runs the `stallscope` binary with `args` and asserts success (the message quotes stderr).
#[allow(dead_code)]
pub fn ok_run(args: &[&str]) -> std::process::Output {
    let out = stallscope(args);
    assert!(
        out.status.success(),
        "{args:?}: exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs the `stallscope` binary with `args`, asserts success and returns its standard output.
pub fn ok_stdout(args: &[&str]) -> String {
    let out = ok_run(args);
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// The two captures of the ResNet-50 worker 0 that `tensorboard_trace_handler` wrote with a
/// repeating schedule (same pid, 470 s apart; tbprof corpus), or `None` without the corpus.
pub fn tbprof_worker0_captures() -> Option<[PathBuf; 2]> {
    let stem = "tbprof/tb_plugin__samples__resnet50_num_workers_0__worker0.";
    Some([
        corpus_file(&format!("{stem}1623143089861.pt.trace.json.gz"))?,
        corpus_file(&format!("{stem}1623143566756.pt.trace.json.gz"))?,
    ])
}

/// Runs `stallscope analyze PATH --format json [EXTRA…]`, asserts success and parses the
/// report.
pub fn analyze_json(path: &std::path::Path, extra: &[&str]) -> serde_json::Value {
    let out = stallscope(
        &[
            &["analyze", path.to_str().unwrap(), "--format", "json"][..],
            extra,
        ]
        .concat(),
    );
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("valid JSON report")
}

/// Σ calls over a JSON report's kernel table.
#[allow(dead_code)]
pub fn kernel_calls(report: &serde_json::Value) -> u64 {
    report["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["calls"].as_u64().unwrap())
        .sum()
}

/// The ids of a JSON report's findings, in rank order.
pub fn finding_ids(report: &serde_json::Value) -> Vec<&str> {
    report["findings"]
        .as_array()
        .expect("findings array")
        .iter()
        .map(|f| f["id"].as_str().expect("finding id"))
        .collect()
}

/// A temporary folder of inputs built by a test (`stallscope-TAG-PID` under the system's
/// temporary folder), removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A fresh folder for this test; `tag` keeps parallel tests apart.
    pub fn new(tag: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("stallscope-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
    /// Writes `bytes` to `name` in the folder; returns its path.
    pub fn file(&self, name: &str, bytes: &[u8]) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, bytes).unwrap();
        p.to_str().unwrap().to_string()
    }
    /// Writes `bytes` gzip-compressed to `name`; returns its path.
    pub fn gz(&self, name: &str, bytes: &[u8]) -> String {
        self.file(name, &gzip(bytes))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `bytes` as one gzip member (fast compression).
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// A Python that imports `module`, for the end-to-end tests that drive the binary from a
/// Python package (`mcp`, `duckdb`): `$<env_python>` (which must import it), else `python3`
/// when it does. None (after a loud SKIPPED line naming `hint`) when there is none, unless
/// `$<env_require>=1` (set by `.ci/run`), which makes it a failure.
pub fn python_with(
    module: &str,
    env_python: &str,
    env_require: &str,
    hint: &str,
) -> Option<PathBuf> {
    let imports = |p: &PathBuf| {
        std::process::Command::new(p)
            .args(["-c", &format!("import {module}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if let Some(p) = std::env::var_os(env_python) {
        let p = PathBuf::from(p);
        assert!(
            imports(&p),
            "{env_python}={} cannot import {module}",
            p.display()
        );
        return Some(p);
    }
    let p = PathBuf::from("python3");
    if imports(&p) {
        return Some(p);
    }
    if std::env::var(env_require).as_deref() == Ok("1") {
        panic!("no Python with the `{module}` package but {env_require}=1");
    }
    eprintln!(
        "\n*** SKIPPED {hint}: no Python with the `{module}` package (python3 -m venv v && \
         v/bin/pip install {module}; {env_python}=v/bin/python) ***\n"
    );
    None
}

/// Runs an end-to-end Python script with `args`, copies its stdout (its measurements) to the
/// test's stderr, which the harness shows, and asserts that it succeeded and printed `ok`.
pub fn run_python_e2e(py: &std::path::Path, script: &str, args: &[&std::ffi::OsStr], ok: &str) {
    let out = std::process::Command::new(py)
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(script))
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    {
        use std::io::Write;
        let _ = std::io::stderr().lock().write_all(stdout.as_bytes());
    }
    assert!(
        out.status.success() && stdout.contains(ok),
        "exit {:?}\n{stdout}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The corpus's eight DLRM ranks (`param/`): this prefix and one of [`DLRM_FILES`].
pub const DLRM: &str = "param/et_replay__tests__inputs__dlrm_kineto.tar.gz__dlrm_kineto__";
/// The DLRM rank files, rank 0 to 7.
pub const DLRM_FILES: [&str; 8] = [
    "worker0_step_12.1694128201545.pt.trace.json.gz",
    "worker1_step_12.1694128201556.pt.trace.json.gz",
    "worker2_step_12.1694128201554.pt.trace.json.gz",
    "worker3_step_12.1694128201557.pt.trace.json.gz",
    "worker4_step_12.1694128201547.pt.trace.json.gz",
    "worker5_step_12.1694128201549.pt.trace.json.gz",
    "worker6_step_12.1694128201553.pt.trace.json.gz",
    "worker7_step_12.1694128201553.pt.trace.json.gz",
];
