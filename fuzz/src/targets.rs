//! The fuzz targets: one function per reader, each taking the fuzzer's bytes and driving the
//! library through the entry points the command line uses. None may panic, whatever the bytes;
//! an error (`Err`) is a fine outcome, a panic or an abort is a bug. Each returns whether the
//! reader accepted the input (the replay test checks that every seed is a valid input).
//!
//! This file is compiled twice: by the `stallscope-fuzz` crate (`fuzz/`, one AFL binary per
//! target in `src/bin/`) and by the main crate's `tests/fuzz_regressions.rs`, which replays
//! every committed seed and minimized crash through these same functions without AFL, so a
//! plain `cargo test` catches a regression. It may therefore only use what both crates depend
//! on: `stallscope`, `rusqlite`, `flate2` and `serde_json`.
//!
//! Readers that need a file (the memory-mapped Kineto path, SQLite, the ncu and report readers,
//! `slice`) get one: the bytes are written to a fresh file under `$TMPDIR` (`fuzz/run.sh` points
//! it at `/dev/shm` when there is one), removed when the call returns.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use stallscope::analysis::{self, AnalyzeOptions};
use stallscope::ingest::{self, LoadOptions};
use stallscope::report::{self, Renderer};
use stallscope::window::WindowSpec;

/// The names of the targets, as `fuzz/src/bin/` and `fuzz/seeds/` spell them.
pub const TARGETS: [&str; 5] = ["kineto", "nsys", "ncu", "report", "slice"];

/// Runs target `name` on `data` (for the replay test); true when the reader accepted it.
pub fn run(name: &str, data: &[u8]) -> bool {
    match name {
        "kineto" => kineto(data),
        "nsys" => nsys(data),
        "ncu" => ncu(data),
        "report" => report(data),
        "slice" => slice(data),
        other => panic!("no fuzz target {other}"),
    }
}

/// A scratch file holding some bytes, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    /// A fresh path (unique in this process and across processes) ending in `ext`.
    fn path(ext: &str) -> Scratch {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        Scratch(
            std::env::temp_dir().join(format!("stallscope-fuzz-{}-{n}{ext}", std::process::id())),
        )
    }
    /// A fresh file holding `bytes`.
    fn with(bytes: &[u8], ext: &str) -> Scratch {
        let s = Scratch::path(ext);
        std::fs::write(&s.0, bytes).expect("writing a scratch file");
        s
    }
    fn str(&self) -> &str {
        self.0.to_str().expect("temporary paths are UTF-8")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        // `slice` writes OUTPUT.partial before renaming it
        let mut partial = self.0.clone().into_os_string();
        partial.push(".partial");
        let _ = std::fs::remove_file(partial);
    }
}

/// gzip of `bytes` (fast level: the fuzzer mutates the JSON, the reader inflates it).
fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).expect("gzip into memory");
    e.finish().expect("gzip into memory")
}

/// How the Kineto target reads its input, from the first byte (the rest is the file).
#[derive(Debug, Clone, Copy)]
struct KinetoMode {
    /// 0: memory map with chain blocks (the default path for a plain file); 1: memory map,
    /// scanned blocks (`STALLSCOPE_NO_CHAIN`); 2: `read` into buffers, scanned
    /// (`STALLSCOPE_NO_MMAP`, standard input); 3: the bytes gzip-compressed first (the gzip
    /// path: decoder then scanned blocks).
    path: u8,
    /// `--allow-truncated`.
    allow_truncated: bool,
    /// Parser threads (1 or 2).
    threads: usize,
    /// Block size: 4 KiB (many blocks, events carried over between them) or the default.
    small_blocks: bool,
}

impl KinetoMode {
    fn from(byte: u8) -> Self {
        KinetoMode {
            path: byte & 3,
            allow_truncated: byte & 4 != 0,
            threads: if byte & 8 != 0 { 2 } else { 1 },
            small_blocks: byte & 16 == 0,
        }
    }
    fn options(self) -> LoadOptions {
        let mut o = LoadOptions {
            no_mmap: self.path == 2,
            ..LoadOptions::default()
        };
        o.kineto.chain = self.path == 0;
        o.kineto.threads = self.threads;
        o.kineto.allow_truncated = self.allow_truncated;
        if self.small_blocks {
            o.kineto.block_size = 4096;
        }
        o
    }
}

/// The Kineto reader (`ingest::load`, chained and scanned, plain and gzip), then what
/// `analyze` does with a trace that loads: the analysis of the steady-state window (or of
/// every step when that window is empty), the report, and its JSON.
pub fn kineto(data: &[u8]) -> bool {
    let Some((&mode, body)) = data.split_first() else {
        return false;
    };
    let mode = KinetoMode::from(mode);
    let bytes;
    let body = if mode.path == 3 {
        bytes = gzip(body);
        &bytes[..]
    } else {
        body
    };
    let file = Scratch::with(body, ".json");
    match ingest::load(file.str(), &mode.options()) {
        Ok(trace) => {
            analyze(&trace);
            true
        }
        Err(_) => false,
    }
}

/// Analysis, report and JSON of a loaded trace: errors are fine, panics are not. First the
/// model's invariant that every event's end (`start + dur`) is a number, checked here so that
/// a build without overflow checks (`cargo test --release` replaying a crash) still fails.
fn analyze(trace: &stallscope::model::Trace) {
    let ends = trace.cpu.iter().map(|e| (e.start, e.dur));
    for (start, dur) in ends.chain(trace.gpu.iter().map(|g| (g.start, g.dur))) {
        assert!(
            start.checked_add(dur).is_some(),
            "an event at {start} ns lasting {dur} ns ends past the largest time"
        );
    }
    for window in [WindowSpec::Auto, WindowSpec::All] {
        let opts = AnalyzeOptions {
            threads: 1,
            window,
            ..AnalyzeOptions::default()
        };
        if let Ok(a) = analysis::try_analyze(trace, &opts) {
            let rep = report::Report::new(trace, &a, stallscope::diagnose::diagnose(trace, &a));
            let mut out = Vec::new();
            report::json::Json
                .render(&rep, &report::RenderOptions::default(), &mut out)
                .expect("rendering JSON into memory");
            return;
        }
    }
}

/// The columns of the Nsight Systems tables the reader looks at, as a corpus export declares
/// them (`fuzz/nsys_schema.sql`, taken from the exports in `../shared/corpus/nsys/sqlite`).
const NSYS_SCHEMA: &str = include_str!("../nsys_schema.sql");

/// One SQL value of the nsys target's row text: empty is NULL, then an integer, a real, text.
fn sql_value(field: &str) -> rusqlite::types::Value {
    use rusqlite::types::Value;
    if field.is_empty() || field == "NULL" {
        Value::Null
    } else if let Ok(i) = field.parse::<i64>() {
        Value::Integer(i)
    } else if let Ok(f) = field.parse::<f64>() {
        Value::Real(f)
    } else {
        Value::Text(field.to_string())
    }
}

/// The `CREATE TABLE` statement of `table` in [`NSYS_SCHEMA`] (one statement a line).
fn nsys_create(table: &str) -> Option<&'static str> {
    NSYS_SCHEMA.lines().find(|l| {
        l.strip_prefix("CREATE TABLE ")
            .and_then(|r| r.split([' ', '(']).next())
            .is_some_and(|n| n.trim_matches('"') == table)
    })
}

/// Builds the SQLite database the nsys target's bytes describe, at `path`. The bytes are text
/// (lossily decoded): a line `@TABLE` creates that table with the corpus schema
/// ([`NSYS_SCHEMA`]; unknown names are ignored) and makes it current; each other line is a row
/// of the current table, its tab-separated fields bound to the columns in order (missing ones
/// NULL, extra ones dropped; see [`sql_value`]). The schema's NOT NULL constraints are dropped
/// (the rows of a 2022 export have a third of a 2026 kernel table's columns); rows it still
/// refuses (a duplicate primary key) are left out. Tables that no line names do not exist, so
/// the reader's paths for missing tables are reached too.
pub fn nsys_database(data: &[u8], path: &Path) -> rusqlite::Result<()> {
    let text = String::from_utf8_lossy(data);
    let db = rusqlite::Connection::open(path)?;
    db.execute_batch("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; BEGIN;")?;
    let mut insert: Option<(String, usize)> = None;
    for line in text.lines() {
        if let Some(table) = line.strip_prefix('@') {
            insert = None;
            let Some(create) = nsys_create(table.trim()) else {
                continue;
            };
            // a table named twice keeps its first rows; NOT NULL is dropped, so that a row may
            // leave out any column (as older exports, which lack columns, do for the reader)
            let _ = db.execute_batch(&create.replace(" NOT NULL", ""));
            let cols: usize = db.query_row(
                "SELECT count(*) FROM pragma_table_info(?1)",
                [table.trim()],
                |r| r.get(0),
            )?;
            let marks = vec!["?"; cols].join(", ");
            insert = Some((
                format!("INSERT INTO \"{}\" VALUES ({marks})", table.trim()),
                cols,
            ));
        } else if let Some((sql, cols)) = &insert {
            let mut values: Vec<rusqlite::types::Value> =
                line.split('\t').take(*cols).map(sql_value).collect();
            values.resize(*cols, rusqlite::types::Value::Null);
            let _ = db.execute(sql, rusqlite::params_from_iter(values));
        }
    }
    db.execute_batch("COMMIT;")
}

/// The nsys SQLite reader (`ingest::load` of the export, which sniffs it as SQLite and opens it
/// by path), on a database built by [`nsys_database`], then the analysis as for Kineto.
pub fn nsys(data: &[u8]) -> bool {
    let file = Scratch::path(".sqlite");
    nsys_database(data, &file.0).expect("building the SQLite database");
    let opts = LoadOptions::default();
    match ingest::load(file.str(), &opts) {
        Ok(trace) => {
            analyze(&trace);
            true
        }
        Err(_) => false,
    }
}

/// The ncu CSV reader (`ingest::ncu::read`, as `analyze FILE.csv` and `--ncu` call it), then
/// the facts `analyze` makes of a CSV alone and of one joined to an empty trace.
pub fn ncu(data: &[u8]) -> bool {
    let file = Scratch::with(data, ".csv");
    let _ = ingest::ncu::looks_like(file.str());
    let Ok(n) = ingest::ncu::read(file.str()) else {
        return false;
    };
    let _ = analysis::ncu::standalone(&n);
    let trace = stallscope::model::build::TraceBuilder::new().build();
    let _ = ingest::ncu::join(&trace, &n);
    true
}

/// The JSON-report reader of `diff` and `check` (`api::load_side` on a saved report), then a
/// comparison of the report with itself, a budget check and every diff renderer.
pub fn report(data: &[u8]) -> bool {
    use stallscope::diff::{self, check, render, side};
    let file = Scratch::with(data, ".json");
    // what is not a saved report goes to the trace readers (the other targets)
    if !side::is_saved_report(&file.0) {
        return false;
    }
    let opts = stallscope::api::SideOptions::default();
    let Ok(loaded) = stallscope::api::load_side(&file.0, side::Which::Before, &opts) else {
        return false;
    };
    let again = side::Loaded {
        side: loaded.side.clone(),
        saved: loaded.saved,
        warnings: Vec::new(),
    };
    let mut c = diff::compare(&loaded, &again, ("a", "b"), &diff::DiffOptions::default());
    let budget = check::Budget {
        step_time: Some(check::Percent(5.0)),
        gpu_idle_share: Some(1.0),
        no_new_high_severity: true,
        ..check::Budget::default()
    };
    c.check = Some(check::check(&c, &budget));
    for format in [
        render::DiffFormat::Json,
        render::DiffFormat::Table,
        render::DiffFormat::Md,
        render::DiffFormat::Html,
    ] {
        let mut out = Vec::new();
        render::render(&c, format, 0, &mut out).expect("rendering into memory");
        out.clear();
        render::render_check(&c, format, &mut out).expect("rendering into memory");
    }
    true
}

/// The `slice` round trip on a Kineto trace (first byte: the window and gzip, rest: the file):
/// when the input loads and the window exists, `slice_file` must succeed, the slice must load,
/// hold no more events than the input, and slicing the slice with the same plan must keep every
/// one of its events (a slice is a fixed point of its own plan).
pub fn slice(data: &[u8]) -> bool {
    use stallscope::slice::{plan_window, slice_file};
    let Some((&mode, body)) = data.split_first() else {
        return false;
    };
    let spec = match mode & 3 {
        0 => WindowSpec::Auto,
        1 => WindowSpec::All,
        2 => WindowSpec::Steps {
            first: Some(i64::from(mode >> 4)),
            last: Some(i64::from(mode >> 4) + 1),
        },
        _ => WindowSpec::Time {
            start: Some(i64::from(mode >> 4) * 1000),
            end: None,
        },
    };
    let gz = mode & 4 != 0;
    let ext = if gz { ".json.gz" } else { ".json" };
    let bytes;
    let body = if gz {
        bytes = gzip(body);
        &bytes[..]
    } else {
        body
    };
    let input = Scratch::with(body, ext);
    let mut lopts = LoadOptions::default();
    lopts.kineto.threads = 1;
    let Ok(trace) = ingest::load(input.str(), &lopts) else {
        return false;
    };
    let Ok(wp) = plan_window(&trace, &spec) else {
        return false;
    };
    let out = Scratch::path(ext);
    let stats = slice_file(&input.0, &out.0, &wp.plan)
        .unwrap_or_else(|e| panic!("slice of a trace that loads failed: {e}"));
    assert!(stats.events_out <= stats.events_in, "{stats:?}");
    let sliced =
        ingest::load(out.str(), &lopts).unwrap_or_else(|e| panic!("the slice does not load: {e}"));
    assert!(
        sliced.gpu.len() <= trace.gpu.len(),
        "the slice has more device events ({}) than its input ({})",
        sliced.gpu.len(),
        trace.gpu.len()
    );
    let again = Scratch::path(ext);
    let stats2 = slice_file(&out.0, &again.0, &wp.plan)
        .unwrap_or_else(|e| panic!("slicing the slice failed: {e}"));
    assert_eq!(
        (stats2.events_in, stats2.events_out),
        (stats.events_out, stats.events_out),
        "slicing the slice again with the same plan dropped events"
    );
    true
}
