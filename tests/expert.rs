//! The expert-labelled evaluation set (docs/expert-labels.md): every real capture of the corpus
//! and `samples/` carries a label in `tests/expert/labels.toml` — the verdict classes an expert
//! accepts, the finding ids allowed first (first finding above `info`), the ids forbidden
//! anywhere, and the evidence behind them. This test analyzes each labelled capture through the
//! library (one thread, default window, like `stallscope analyze --threads 1`) and prints
//! `expert labels: P passed / N labelled` with every failing label and why.
//!
//! `tests/expert/known_failures.toml` lists the labels today's diagnosis does not meet, each
//! with one line why. The test fails when a label outside that list fails, and when a listed
//! label now passes (remove it: the list only shrinks).

mod common;

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One label.
#[derive(Debug, Deserialize, Clone)]
struct Label {
    path: String,
    classes: Vec<String>,
    first: Vec<String>,
    forbidden: Vec<String>,
    why: String,
}

#[derive(Debug, Deserialize)]
struct Labels {
    capture: Vec<Label>,
}

/// A label today's diagnosis does not meet.
#[derive(Debug, Deserialize)]
struct Known {
    path: String,
    why: String,
}

#[derive(Debug, Deserialize)]
struct KnownFailures {
    #[serde(default)]
    failure: Vec<Known>,
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/expert")
}

fn labels() -> Vec<Label> {
    let text = std::fs::read_to_string(dir().join("labels.toml")).expect("labels.toml");
    toml::from_str::<Labels>(&text)
        .expect("labels.toml parses")
        .capture
}

fn known_failures() -> BTreeMap<String, String> {
    let text =
        std::fs::read_to_string(dir().join("known_failures.toml")).expect("known_failures.toml");
    toml::from_str::<KnownFailures>(&text)
        .expect("known_failures.toml parses")
        .failure
        .into_iter()
        .map(|k| (k.path, k.why))
        .collect()
}

/// The report of one capture as `stallscope analyze --format json --threads 1` gives it.
fn report(path: &std::path::Path) -> Result<Value, String> {
    let req = stallscope::api::AnalyzeRequest {
        trace: path.to_path_buf(),
        load: stallscope::api::LoadSettings {
            threads: Some(1),
            ..Default::default()
        },
        ..Default::default()
    };
    let mut t = stallscope::timings::Timings::from_env();
    let out = stallscope::api::analyze(&req, &mut t).map_err(|e| e.to_string())?;
    serde_json::to_value(&out.report).map_err(|e| e.to_string())
}

/// What in `r` the label does not accept (empty: the label passes).
fn judge(label: &Label, r: &Value) -> Vec<String> {
    let mut bad = Vec::new();
    let class = r["verdict_class"].as_str().unwrap_or("(none)");
    let any = |v: &[String]| v.iter().any(|x| x == "any");
    if !any(&label.classes) && !label.classes.iter().any(|c| c == class) {
        bad.push(format!(
            "verdict class `{class}` not in {:?} (verdict: {})",
            label.classes,
            r["verdict"].as_str().unwrap_or("")
        ));
    }
    let findings: Vec<(&str, &str)> = r["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            (
                f["id"].as_str().unwrap_or(""),
                f["severity"].as_str().unwrap_or(""),
            )
        })
        .collect();
    if !any(&label.first) {
        let first = findings
            .iter()
            .find(|(_, s)| !s.eq_ignore_ascii_case("info"))
            .map(|(id, _)| *id)
            .unwrap_or("none");
        if !label.first.iter().any(|x| x == first) {
            bad.push(format!(
                "first finding above info `{first}` not in {:?}",
                label.first
            ));
        }
    }
    for (id, sev) in &findings {
        if label.forbidden.iter().any(|x| x == id) {
            bad.push(format!("forbidden finding `{id}` ({sev})"));
        }
    }
    bad
}

/// Resolves a label's path: `samples/…` in the repository, anything else in the corpus.
fn resolve(rel: &str) -> Option<PathBuf> {
    match rel.strip_prefix("samples/") {
        Some(s) => Some(common::sample(s)),
        None => common::corpus_file(rel),
    }
}

#[test]
fn expert_labels_hold_or_are_known_failures() {
    let labels = labels();
    let known = known_failures();
    for k in known.keys() {
        assert!(
            labels.iter().any(|l| &l.path == k),
            "known_failures.toml names {k}, which has no label"
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    for l in &labels {
        assert!(seen.insert(&l.path), "{} is labelled twice", l.path);
        assert!(
            !l.why.trim().is_empty(),
            "{}: a label needs its why",
            l.path
        );
        assert!(!l.classes.is_empty() && !l.first.is_empty(), "{}", l.path);
    }
    let todo: Vec<(Label, PathBuf)> = labels
        .iter()
        .filter_map(|l| resolve(&l.path).map(|p| (l.clone(), p)))
        .collect();
    if todo.len() < labels.len() {
        eprintln!(
            "expert labels: {} of {} captures absent (corpus missing), scored on the rest",
            labels.len() - todo.len(),
            labels.len()
        );
    }
    // two workers: the machine is shared; each analysis runs on one thread
    let results: Vec<(Label, Vec<String>)> = {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let out = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((l, p)) = todo.get(i) else { break };
                    let bad = match report(p) {
                        Ok(r) => judge(l, &r),
                        Err(e) => vec![format!("no report: {e}")],
                    };
                    out.lock().unwrap().push((l.clone(), bad));
                });
            }
        });
        let mut v = out.into_inner().unwrap();
        v.sort_by(|a, b| a.0.path.cmp(&b.0.path));
        v
    };
    let passed = results.iter().filter(|(_, b)| b.is_empty()).count();
    println!(
        "expert labels: {passed} passed / {} labelled",
        results.len()
    );
    let mut unexpected = Vec::new();
    for (l, bad) in &results {
        if bad.is_empty() {
            if known.contains_key(&l.path) {
                unexpected.push(format!(
                    "{}: now passes; remove it from known_failures.toml",
                    l.path
                ));
            }
            continue;
        }
        println!("FAIL {}\n     label: {}", l.path, l.why);
        for b in bad {
            println!("     - {b}");
        }
        match known.get(&l.path) {
            Some(why) => println!("     (known failure: {why})"),
            None => unexpected.push(format!("{}: {}", l.path, bad.join("; "))),
        }
    }
    assert!(
        unexpected.is_empty(),
        "expert labels: {passed} passed / {}; unexpected:\n{}",
        results.len(),
        unexpected.join("\n")
    );
}

/// The judge rejects what a label forbids (so the score cannot pass vacuously).
#[test]
fn the_judge_sees_a_wrong_class_a_wrong_first_and_a_forbidden_finding() {
    let l = Label {
        path: "x".into(),
        classes: vec!["gpu_bound".into()],
        first: vec!["queue-full".into()],
        forbidden: vec!["fp32-matmul".into()],
        why: "test".into(),
    };
    let good = serde_json::json!({"verdict_class": "gpu_bound", "verdict": "",
        "findings": [{"id": "small-kernels", "severity": "info"},
                     {"id": "queue-full", "severity": "high"}]});
    assert!(judge(&l, &good).is_empty(), "{:?}", judge(&l, &good));
    let bad = serde_json::json!({"verdict_class": "sync_bound", "verdict": "",
        "findings": [{"id": "host-sync", "severity": "medium"},
                     {"id": "fp32-matmul", "severity": "low"}]});
    assert_eq!(judge(&l, &bad).len(), 3, "{:?}", judge(&l, &bad));
}
