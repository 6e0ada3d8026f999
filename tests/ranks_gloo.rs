//! Real multi-process captures: torch on CPU with the gloo backend (`tests/gloo_ranks.py`:
//! DistributedDataParallel over a tiny MLP, 3 processes, a profiler schedule of 4 active
//! steps, every forward sleeping 20 ms of equal "work"). One rank sleeps 30 ms more in its
//! forward at every step; one rank's dataset sleeps 30 ms before every batch; a balanced
//! control. The folder report must name the culprit with its recurrence, measure the victims'
//! waits within 15 % of the injected delay, count the host-side all-reduces as exposed
//! communication, and raise no high-severity finding on the control.
//!
//! The captures are committed (`tests/data/gloo/{sleep,dataset,balanced,hiccup}/`, made by
//! that script with torch 2.15 on this project's 2-core machine; `hiccup`: rank 1 sleeps
//! 120 ms once, which each rank's window leaves out at a different step), so the figures are
//! checked whatever the machine's load; one more test makes a fresh capture of the sleeping rank at
//! test time and checks the culprit and its recurrence there.
//!
//! Needs a Python that imports torch: `$STALLSCOPE_TORCH_PYTHON`, else `python3` with
//! `$STALLSCOPE_PY_DEPS` on its path (scripts/test sets it), else `python3` (with its
//! `PYTHONPATH`), else `python3` with the first `~/.cache/stallscope-python/deps-*` that holds
//! torch (where `scripts/test` installs it). Without one the tests say SKIPPED, unless
//! `STALLSCOPE_REQUIRE_TORCH=1`, which makes that a failure.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The injected delay, ms (`DELAY_MS` of the script).
const DELAY_MS: f64 = 30.0;

/// A command that runs Python with torch importable, or `None` (after a loud SKIPPED line).
fn torch_python() -> Option<Command> {
    let imports = |c: &mut Command| {
        c.args(["-c", "import torch"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if let Some(p) = std::env::var_os("STALLSCOPE_TORCH_PYTHON") {
        assert!(
            imports(&mut Command::new(&p)),
            "STALLSCOPE_TORCH_PYTHON cannot import torch"
        );
        return Some(Command::new(p));
    }
    // scripts/test installs torch first and names the folder
    if let Some(d) = std::env::var_os("STALLSCOPE_PY_DEPS") {
        let mut c = Command::new("python3");
        c.env("PYTHONPATH", &d);
        if imports(&mut c) {
            let mut c = Command::new("python3");
            c.env("PYTHONPATH", &d);
            return Some(c);
        }
    }
    if imports(&mut Command::new("python3")) {
        return Some(Command::new("python3"));
    }
    let cache = std::env::var_os("STALLSCOPE_PY_CACHE")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/stallscope-python"))
        });
    if let Some(Ok(dirs)) = cache.map(std::fs::read_dir) {
        let mut dirs: Vec<PathBuf> = dirs.flatten().map(|d| d.path()).collect();
        dirs.sort();
        for d in dirs {
            let name = d
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            if name.starts_with("deps-") && d.join("torch").is_dir() {
                let with = |c: &mut Command| {
                    c.env("PYTHONPATH", &d);
                };
                let mut c = Command::new("python3");
                with(&mut c);
                if imports(&mut c) {
                    let mut c = Command::new("python3");
                    with(&mut c);
                    return Some(c);
                }
            }
        }
    }
    if std::env::var("STALLSCOPE_REQUIRE_TORCH").as_deref() == Ok("1") {
        panic!("no Python with torch but STALLSCOPE_REQUIRE_TORCH=1");
    }
    eprintln!(
        "\n*** SKIPPED gloo multi-rank captures: no Python with torch (pip install torch; \
         STALLSCOPE_TORCH_PYTHON=that python) ***\n"
    );
    None
}

/// Runs the capture script for `scenario` into a fresh folder and analyses the folder.
fn capture(scenario: &str) -> Option<(Value, PathBuf)> {
    let mut py = torch_python()?;
    let dir =
        std::env::temp_dir().join(format!("stallscope-gloo-{scenario}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = py
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/gloo_ranks.py"))
        .arg(&dir)
        .arg(scenario)
        .env("OMP_NUM_THREADS", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("ok"),
        "capture {scenario}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let run = common::ok_run(&["analyze", dir.to_str().unwrap(), "-f", "json"]);
    let j: Value = serde_json::from_slice(&run.stdout).expect("valid JSON");
    Some((j["ranks"].clone(), dir))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The rank-straggler finding of a folder report.
fn straggler(r: &Value) -> &Value {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == "rank-straggler")
        .unwrap_or_else(|| panic!("no rank-straggler: {r:#}"))
}

/// The culprit arrived last at every matched all-reduce; the others waited the injected delay
/// (±15 %) per step for it; the host all-reduces are exposed communication on every rank.
fn check_culprit(r: &Value, culprit: i64, cause: &str) {
    let a = &r["arrivals"];
    assert_eq!(a["side"], "host", "{a:#}");
    assert_eq!(a["name"], "gloo:all_reduce");
    assert_eq!(a["clocks_aligned"], true, "{a:#}");
    let matched = a["matched"].as_u64().unwrap();
    assert!(
        matched >= 4,
        "one all-reduce per profiled step at least: {a:#}"
    );
    let rows = a["ranks"].as_array().unwrap();
    let c = rows.iter().find(|x| x["rank"] == culprit).unwrap();
    assert_eq!(c["last"].as_u64().unwrap(), matched, "{a:#}");
    let st = straggler(r);
    assert_eq!(st["evidence"]["metrics"]["culprit_rank"], culprit as f64);
    let title = st["title"].as_str().unwrap();
    assert!(
        title.contains(&format!(
            "rank {culprit} arrived last at {matched} of {matched}"
        )),
        "{title}"
    );
    let verdict = r["verdict"].as_str().unwrap();
    assert!(
        verdict.contains(&format!(
            "rank {culprit} arrived last at {matched} of {matched}"
        )),
        "{verdict}"
    );
    assert!(verdict.contains(cause), "{verdict}");
    // each victim waited the delay per step, within 15 %
    for (row, arr) in r["ranks"].as_array().unwrap().iter().zip(rows) {
        let steps = f(&row["steps"]).max(1.0);
        // the host all-reduces count as exposed communication (not 0.00)
        assert!(f(&row["exposed_comm_us"]) > 0.0, "{row:#}");
        if arr["rank"] == culprit {
            continue;
        }
        let waited_ms = f(&arr["waited_us"]) / steps / 1000.0;
        assert!(
            (waited_ms - DELAY_MS).abs() <= 0.15 * DELAY_MS,
            "rank {} waited {waited_ms:.2} ms per step, injected {DELAY_MS} ms",
            arr["rank"]
        );
    }
    let per_victim = f(&st["evidence"]["metrics"]["victims_wait_us"]) / 1000.0;
    assert!(
        (per_victim - DELAY_MS).abs() <= 0.15 * DELAY_MS,
        "{per_victim}"
    );
    assert_eq!(st["severity"], "high");
}

/// The committed capture of `scenario`, analysed as a folder.
fn committed(scenario: &str) -> Value {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/gloo")
        .join(scenario);
    let run = common::ok_run(&["analyze", dir.to_str().unwrap(), "-f", "json"]);
    let j: Value = serde_json::from_slice(&run.stdout).expect("valid JSON");
    j["ranks"].clone()
}

#[test]
fn a_rank_sleeping_in_forward_is_the_culprit() {
    let r = committed("sleep");
    check_culprit(
        &r,
        1,
        "rank 1 spent the time in `DistributedDataParallel.forward`",
    );
    // Python over the three files: ranks 0 and 2 waited 29.990 and 29.178 ms per step
    let rows = r["arrivals"]["ranks"].as_array().unwrap();
    for (i, want) in [(0, 29.990), (2, 29.178)] {
        let got = f(&rows[i]["waited_us"]) / 4.0 / 1000.0;
        assert!((got - want).abs() < 0.001, "rank {i}: {got}");
    }
}

#[test]
fn a_rank_with_a_slow_dataset_is_the_culprit() {
    let r = committed("dataset");
    check_culprit(
        &r,
        2,
        "rank 2 spent the time in `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`",
    );
    // Python over the three files (latest `gloo:all_reduce` start minus each rank's, per
    // step): ranks 0 and 1 waited 31.118 and 31.117 ms per step
    let rows = r["arrivals"]["ranks"].as_array().unwrap();
    for (i, want) in [(0, 31.118), (1, 31.117)] {
        let got = f(&rows[i]["waited_us"]) / 4.0 / 1000.0;
        assert!((got - want).abs() < 0.001, "rank {i}: {got}");
    }
}

#[test]
fn balanced_ranks_raise_nothing_high() {
    let r = committed("balanced");
    let a = &r["arrivals"];
    assert_eq!(a["side"], "host", "{a:#}");
    for x in r["findings"].as_array().unwrap() {
        assert_ne!(x["severity"], "high", "{x:#}");
    }
    assert!(
        !r["verdict"].as_str().unwrap().contains("arrived last at"),
        "{r:#}"
    );
}

/// A fresh capture made now (torch needed): the sleeping rank is the culprit at every
/// all-reduce. The waits are printed, not bounded: on a loaded machine the ranks compete for
/// the cores.
#[test]
fn a_fresh_capture_names_the_sleeping_rank() {
    let Some((r, dir)) = capture("sleep") else {
        return;
    };
    let a = &r["arrivals"];
    assert_eq!(a["side"], "host", "{a:#}");
    let matched = a["matched"].as_u64().unwrap();
    // 4 profiled steps; on a loaded machine one of them can run long enough (1.6x the median,
    // seen once) for the steady-state window to leave it out as an outlier: 3 then match
    assert!(matched >= 3, "{a:#}");
    let st = straggler(&r);
    assert_eq!(st["evidence"]["metrics"]["culprit_rank"], 1.0);
    assert_eq!(
        st["evidence"]["metrics"]["culprit_last_arrivals"],
        matched as f64
    );
    eprintln!("fresh capture: {}", r["verdict"]);
    let _ = std::fs::remove_dir_all(dir);
}

/// The JSON report of `args` (`analyze …`).
fn json_of(args: &[&str]) -> Value {
    let run = common::ok_run(args);
    serde_json::from_slice(&run.stdout).expect("valid JSON")
}

fn gloo_dir(scenario: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/gloo")
        .join(scenario)
}

/// A rank that waits most of its step inside the host all-reduce is communication-bound on
/// its own, with an exposed-communication finding; in the folder its verdict says for whom it
/// waited, and the culprit's that the others waited for it (one story with the folder's).
#[test]
fn a_waiting_rank_is_communication_bound_and_says_for_whom() {
    let dir = gloo_dir("sleep");
    for victim in ["rank0", "rank2"] {
        let file = dir.join(format!("{victim}.pt.trace.json.gz"));
        let one = json_of(&["analyze", file.to_str().unwrap(), "-f", "json"]);
        assert_eq!(
            one["verdict_class"], "communication_bound",
            "{}",
            one["verdict"]
        );
        let verdict = one["verdict"].as_str().unwrap();
        assert!(
            verdict.contains("of the step inside host collectives, mostly `gloo:all_reduce`"),
            "{verdict}"
        );
        let comm = &one["findings"][0];
        assert_eq!(comm["id"], "exposed-communication", "{:#}", one["findings"]);
        // the finding's time is the steps' communication (their breakdown), per step
        let per_step = f(&one["breakdown_us"]["communication"]);
        assert!(
            (f(&comm["recoverable_us"]) - per_step).abs() < 0.01,
            "{comm:#}"
        );
        assert!(per_step > 0.3 * f(&one["step_time_us"]));
    }
    // the culprit works more than it waits: still host-only on its own
    let one = json_of(&[
        "analyze",
        dir.join("rank1.pt.trace.json.gz").to_str().unwrap(),
        "-f",
        "json",
    ]);
    assert_eq!(one["verdict_class"], "host_only", "{}", one["verdict"]);
    // in the folder: the shown rank's own report (communication-bound), and for whom it waited
    let shown = json_of(&[
        "analyze",
        dir.to_str().unwrap(),
        "-f",
        "json",
        "--rank",
        "0",
    ]);
    assert!(shown["verdict"]
        .as_str()
        .unwrap()
        .starts_with("Communication-bound"));
    assert_eq!(
        shown["ranks"]["shown"]["story"],
        "rank 0 waited 29.99 ms per step inside the collectives for rank 1 (last at 4 of 4 \
         all_reduce collectives)"
    );
    let text = common::ok_run(&["analyze", dir.to_str().unwrap(), "--rank", "0"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("══\nAcross the ranks: rank 0 waited 29.99 ms per step"),
        "{text}"
    );
    let shown = json_of(&[
        "analyze",
        dir.to_str().unwrap(),
        "-f",
        "json",
        "--rank",
        "1",
    ]);
    assert_eq!(
        shown["ranks"]["shown"]["story"],
        "rank 1 is the one the others waited for: it arrived last at 4 of 4 all_reduce \
         collectives, and they waited 29.58 ms per step for it"
    );
    // the balanced control: nobody waited for anyone
    let dir = gloo_dir("balanced");
    let shown = json_of(&[
        "analyze",
        dir.to_str().unwrap(),
        "-f",
        "json",
        "--rank",
        "0",
    ]);
    assert_eq!(shown["ranks"]["shown"]["story"], Value::Null);
}

/// `hiccup` (tests/gloo_ranks.py): rank 1 slept 120 ms once after its optimizer step in
/// ProfilerStep#4, so its own window leaves out step 4 and the others', which waited for it in
/// step 5's all-reduce, leave out step 5. The folder compares the ranks over steps 2 and 3
/// only: each row is then that rank's own report with `--steps 2..3` (step time, window,
/// exposed communication), and a note says which steps were left out where.
#[test]
fn one_window_for_the_ranks() {
    let dir = gloo_dir("hiccup");
    let folder = json_of(&["analyze", dir.to_str().unwrap(), "-f", "json"]);
    let r = &folder["ranks"];
    let rows = r["ranks"].as_array().unwrap();
    for (i, row) in rows.iter().enumerate() {
        let file = dir.join(format!("rank{i}.pt.trace.json.gz"));
        let own = json_of(&["analyze", file.to_str().unwrap(), "-f", "json"]);
        assert_eq!(
            own["steps"].as_array().unwrap().len(),
            3,
            "own window of rank {i}"
        );
        let common = json_of(&[
            "analyze",
            file.to_str().unwrap(),
            "-f",
            "json",
            "--steps",
            "2..3",
        ]);
        assert_eq!(row["steps"], 2, "{row:#}");
        assert!(
            (f(&row["step_time_us"]) - f(&common["step_time_us"])).abs() < 0.001,
            "rank {i}: {} against {}",
            row["step_time_us"],
            common["step_time_us"]
        );
        assert!((f(&row["window_us"]) - f(&common["window"]["duration_us"])).abs() < 0.001);
        let comm = f(&common["breakdown_us"]["communication"]) * 2.0;
        assert!(
            (f(&row["exposed_comm_us"]) - comm).abs() < 0.01,
            "rank {i}: {} against {comm}",
            row["exposed_comm_us"]
        );
    }
    let notes: Vec<&str> = r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains(
            "the comparison counts the 2 steps every window has (ProfilerStep#2, \
             ProfilerStep#3): rank 0 without ProfilerStep#4, rank 1 without ProfilerStep#5, \
             rank 2 without ProfilerStep#4"
        ),
        "{}",
        notes[0]
    );
    // the collectives of the left-out steps are not matched either
    assert_eq!(r["arrivals"]["matched"], 2, "{:#}", r["arrivals"]);
}

/// `hiccup`: over its own window rank 0 is the slowest (its step 5 waited in the all-reduce
/// for rank 1's sleep); over the common steps 2 and 3 rank 2 is. The full report shown is the
/// slowest rank's over the common window, as the table marks it (one story), and `merge` of
/// the ranks' summaries, each keeping its own report, shows the same one: byte for byte the
/// report of `analyze DIR`.
#[test]
fn the_shown_rank_is_the_slowest_over_the_common_window() {
    let dir = gloo_dir("hiccup");
    let d = dir.to_str().unwrap();
    let folder = json_of(&["analyze", d, "-f", "json"]);
    let r = &folder["ranks"];
    assert_eq!(r["slowest_rank"], 2, "{:#}", r["shown"]);
    assert_eq!(r["shown"]["rank"], r["slowest_rank"], "{:#}", r["shown"]);
    assert_eq!(r["shown"]["why"], "slowest");
    // rank 0 is the slowest over its own window: the kept report was another rank's
    let own: Vec<f64> = (0..3)
        .map(|i| {
            let file = dir.join(format!("rank{i}.pt.trace.json.gz"));
            f(&json_of(&["analyze", file.to_str().unwrap(), "-f", "json"])["step_time_us"])
        })
        .collect();
    assert!(own[0] > own[1] && own[0] > own[2], "{own:?}");
    let text = common::ok_run(&["analyze", d, "--color", "never"]);
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(text.contains("══ Rank 2, the slowest"), "{text}");
    // merge of the summaries: the same report
    let sums = std::env::temp_dir().join(format!("stallscope-hiccup-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&sums);
    std::fs::create_dir_all(&sums).unwrap();
    let mut args = vec!["merge".to_string()];
    for i in 0..3 {
        let file = dir.join(format!("rank{i}.pt.trace.json.gz"));
        let out = sums.join(format!("rank{i}.summary.json"));
        common::ok_run(&[
            "summarize",
            file.to_str().unwrap(),
            "-q",
            "-o",
            out.to_str().unwrap(),
        ]);
        args.push(out.to_string_lossy().into_owned());
    }
    args.extend(["-f", "json", "-j", "2"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let merged = common::ok_run(&args).stdout;
    let want = common::ok_run(&["analyze", d, "-f", "json", "-j", "2"]).stdout;
    assert_eq!(
        String::from_utf8_lossy(&merged),
        String::from_utf8_lossy(&want)
    );
    let _ = std::fs::remove_dir_all(&sums);
}

/// The arrivals table (terminal and Markdown): one row per rank with its last arrivals, the
/// wait it caused and waited per step, and the culprit's own cause; within 100 columns.
#[test]
fn arrivals_table_in_terminal_and_markdown() {
    let dir = gloo_dir("sleep");
    let out = common::ok_run(&["analyze", dir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    let head = text.split("══ Rank").next().unwrap();
    assert!(
        head.contains(
            "Arrivals  4 gloo:all_reduce collectives matched on every rank (host side); per step"
        ),
        "{head}"
    );
    let line = head
        .lines()
        .find(|l| l.starts_with("1 ") && l.contains("4 of 4"))
        .unwrap_or_else(|| panic!("{head}"));
    // rank 1 caused 2 × 29.58 ms per step; it waited nothing worth naming
    assert!(line.contains("59.17 ms"), "{line}");
    assert!(
        line.contains("`DistributedDataParallel.forward` +"),
        "{line}"
    );
    for l in head.lines() {
        assert!(
            l.chars().count() <= 100,
            "{} columns: {l}",
            l.chars().count()
        );
    }
    let md = common::ok_run(&["analyze", dir.to_str().unwrap(), "-f", "md"]);
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains("| rank | last | wait caused | waited | own cause |"),
        "{md}"
    );
    assert!(
        md.lines()
            .any(|l| l.starts_with("| 1 | 4 of 4 | 59.17 ms |")
                && l.contains("`DistributedDataParallel.forward` +")),
        "{md}"
    );
}

/// Uneven batches (a capture made at test time, `record_shapes=True`): rank 1's batches hold 3×
/// the samples and its forward's work grows with them. The report says it is load imbalance,
/// shows the differing input shapes, and tells one story with the measured arrivals (rank 1,
/// with the largest inputs, is the culprit).
#[test]
fn uneven_batches_are_load_imbalance_in_one_story() {
    let Some((r, dir)) = capture("uneven") else {
        return;
    };
    let st = straggler(&r);
    assert_eq!(st["evidence"]["metrics"]["culprit_rank"], 1.0, "{r:#}");
    let note = r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .find(|n| n.starts_with("load imbalance"))
        .unwrap_or_else(|| panic!("no load-imbalance note: {:#}", r["notes"]))
        .to_string();
    // the operator named is a forward one among those whose shapes differ, never its backward
    // (`AddmmBackward0` can take more time than `aten::addmm` in one capture and less in the
    // next); the batch dimension is what differs
    assert!(!note.contains("Backward"), "{note}");
    assert!(note.contains("rank 1 [[96, "), "{note}");
    assert!(note.contains("ranks 0, 2 [[32, "), "{note}");
    assert!(note.contains("the measured arrivals agree"), "{note}");
    // the straggler finding carries it too
    let facts = st["evidence"]["facts"].to_string();
    assert!(facts.contains("load imbalance"), "{facts}");
    let _ = std::fs::remove_dir_all(dir);
}
