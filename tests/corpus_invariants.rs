//! The report's invariants (`tests/common/invariants.rs`) on every corpus file and sample: each
//! file `bench/snap.sh` analyzes (`.json`, `.gz`, `.sqlite`, `.csv` under `../shared/corpus`
//! and `samples/`) is analyzed as `stallscope analyze --threads 1` would; files that are not
//! an input stallscope reads (a one-line error) are counted and skipped.
//!
//! `tests/expert/known_invariant_violations.toml` lists what real files break today, each
//! entry a file, a check id and one line why. The test fails on a violation not listed, and on
//! a listed one that no longer occurs (the list only shrinks). With
//! `STALLSCOPE_REQUIRE_CORPUS=1` a missing corpus is a failure.
//!
//! Also here: every threshold `docs/rules.md` names in bold is the constant the code applies.

mod common;

use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[derive(Debug, Deserialize)]
struct Known {
    path: String,
    check: String,
    why: String,
}

#[derive(Debug, Deserialize)]
struct KnownList {
    #[serde(default)]
    violation: Vec<Known>,
}

fn known() -> BTreeMap<(String, String), String> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/expert/known_invariant_violations.toml");
    let text = std::fs::read_to_string(p).expect("known_invariant_violations.toml");
    toml::from_str::<KnownList>(&text)
        .expect("known_invariant_violations.toml parses")
        .violation
        .into_iter()
        .map(|k| {
            assert!(
                !k.why.trim().is_empty(),
                "{}: a known violation needs its why",
                k.path
            );
            ((k.path, k.check), k.why)
        })
        .collect()
}

fn inputs(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            inputs(&p, out);
        } else if let Some(n) = p.file_name().and_then(|n| n.to_str()) {
            if [".json", ".gz", ".sqlite", ".csv"]
                .iter()
                .any(|x| n.ends_with(x))
            {
                out.push(p);
            }
        }
    }
}

/// The key of a file in the lists: relative to the corpus, or `samples/…`.
fn key(p: &Path, corpus: Option<&Path>) -> String {
    if let Some(c) = corpus {
        if let Ok(r) = p.strip_prefix(c) {
            return r.to_string_lossy().into_owned();
        }
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    p.strip_prefix(&root)
        .unwrap_or(p)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn every_corpus_file_and_sample_keeps_the_report_consistent() {
    let corpus = common::corpus_dir();
    if corpus.is_none() {
        // says so, or fails under STALLSCOPE_REQUIRE_CORPUS=1
        let _ = common::corpus_file("CATALOGUE.md");
    }
    let mut files = Vec::new();
    inputs(&common::sample(""), &mut files);
    if let Some(c) = &corpus {
        inputs(c, &mut files);
    }
    files.sort();
    let known = known();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let out = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(p) = files.get(i) else { break };
                let req = stallscope::api::AnalyzeRequest {
                    trace: p.clone(),
                    load: stallscope::api::LoadSettings {
                        threads: Some(1),
                        ..Default::default()
                    },
                    ..Default::default()
                };
                let mut t = stallscope::timings::Timings::from_env();
                let res = stallscope::api::analyze(&req, &mut t)
                    .map(|a| serde_json::to_value(&a.report).expect("report serializes"));
                out.lock()
                    .unwrap()
                    .push((key(p, corpus.as_deref()), res.map_err(|e| e.to_string())));
            });
        }
    });
    let mut results = out.into_inner().unwrap();
    results.sort_by(|a, b| a.0.cmp(&b.0));
    let mut analyzed = 0;
    let mut refused = 0;
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    let mut unexpected = Vec::new();
    for (k, res) in &results {
        let r = match res {
            Ok(r) => r,
            Err(_) => {
                refused += 1;
                continue;
            }
        };
        analyzed += 1;
        for v in common::invariants::violations(r, None) {
            let check = common::invariants::check_id(&v).to_string();
            let entry = (k.clone(), check);
            if known.contains_key(&entry) {
                seen.insert(entry);
            } else {
                unexpected.push(format!("{k}: {v}"));
            }
        }
    }
    println!(
        "corpus invariants: {analyzed} reports checked, {refused} inputs refused (not traces), \
         {} known violations",
        seen.len()
    );
    if corpus.is_some() {
        for (entry, why) in &known {
            if !seen.contains(entry) {
                unexpected.push(format!(
                    "{} / {}: listed ({why}) but no longer violated; remove it",
                    entry.0, entry.1
                ));
            }
        }
    }
    assert!(
        unexpected.is_empty(),
        "{} unexpected:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
}

/// The section of `docs/rules.md` headed `### \`id\``… up to the next heading.
fn section<'a>(rules: &'a str, id: &str) -> &'a str {
    let head = format!("### `{id}`");
    let start = rules
        .find(&head)
        .unwrap_or_else(|| panic!("docs/rules.md has no section {head}"));
    let rest = &rules[start + head.len()..];
    let end = rest.find("\n#").unwrap_or(rest.len());
    &rest[..end]
}

fn pct(x: f64) -> String {
    let v = x * 100.0;
    if v.fract() == 0.0 {
        format!("**{v:.0} %**")
    } else {
        format!("**{v} %**")
    }
}

#[test]
fn thresholds_in_the_rules_are_the_codes() {
    use stallscope::diagnose::{compiled, device, host, memory, transfer, verdict};
    let rules =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/rules.md"))
            .unwrap();
    let cases: Vec<(&str, String)> = vec![
        ("startup", pct(host::STARTUP_SHARE)),
        ("dataloader-stall", pct(host::DATALOADER_SHARE)),
        ("host-sync", pct(host::SYNC_SHARE)),
        ("compile-in-window", pct(host::COMPILE_SHARE)),
        ("launch-bound", pct(host::LAUNCH_SHARE)),
        ("gpu-idle-gaps", pct(host::IDLE_SHARE)),
        ("device-side-gaps", pct(host::QUEUED_SHARE)),
        (
            "device-side-gaps",
            format!("**{} µs**", host::DISPATCH_FLOOR / 1000),
        ),
        ("graph-breaks", pct(compiled::BREAK_SHARE)),
        ("fallback-kernel", pct(device::FALLBACK_SHARE)),
        ("fp32-matmul", pct(device::FP32_SHARE)),
        (
            "small-kernels",
            format!("**{} µs**", device::SMALL_KERNEL / 1000),
        ),
        ("small-kernels", format!("**{}**", device::SMALL_PER_STEP)),
        ("low-occupancy", pct(device::LOW_OCCUPANCY_PCT / 100.0)),
        ("low-occupancy", pct(device::LOW_OCCUPANCY_SHARE)),
        ("exposed-communication", pct(transfer::COMM_SHARE)),
        ("pageable-memcpy", pct(transfer::PAGEABLE_SHARE)),
        ("memcpy-heavy", pct(transfer::MEMCPY_SHARE)),
        ("gpu-memory-pressure", pct(transfer::MEMORY_SHARE)),
        ("memory-fragmentation", pct(memory::HELD_SHARE)),
        (
            "memory-fragmentation",
            format!("**{} GiB**", memory::HELD_BYTES >> 30),
        ),
    ];
    let mut bad = Vec::new();
    for (id, want) in &cases {
        if !section(&rules, id).contains(want.as_str()) {
            bad.push(format!("`{id}`: docs/rules.md does not say {want}"));
        }
    }
    // the verdict's thresholds
    let v = &rules[rules.find("## Verdict").unwrap()..];
    let v = &v[..v[3..].find("\n## ").map_or(v.len(), |i| i + 3)];
    for (name, x) in [
        ("GPU_BOUND_BUSY", verdict::GPU_BOUND_BUSY),
        ("COMM_BOUND_SHARE", verdict::COMM_BOUND_SHARE),
        ("STARTUP_DOMINATES", verdict::STARTUP_DOMINATES),
    ] {
        let want = format!("≥ {:.0} %", x * 100.0);
        if !v.contains(&want) {
            bad.push(format!(
                "verdict {name}: docs/rules.md does not say `{want}`"
            ));
        }
    }
    // the one-cold-pass cap (common ground) applies the start-up-dominates threshold
    let c = &rules[rules.find("**One cold pass").unwrap()..];
    let c = &c[..c.find("\n\n").unwrap_or(c.len())];
    let want = format!("≥ {:.0} %", verdict::STARTUP_DOMINATES * 100.0);
    if !c.contains(&want) {
        bad.push(format!(
            "one cold pass STARTUP_DOMINATES: docs/rules.md does not say `{want}`"
        ));
    }
    let want = format!("more than {} ms", verdict::CLOCK_OFFSET_HINT / 1_000_000);
    if !v.contains(&want) {
        bad.push(format!(
            "verdict CLOCK_OFFSET_HINT: docs/rules.md does not say `{want}`"
        ));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Each added check sees what it is for (so the corpus test cannot pass vacuously).
#[test]
fn the_checks_see_contradictions() {
    let r = serde_json::json!({
        "verdict": "Sync-bound: GPU idle 40.0%, 2.5 syncs, 120.0% of the step",
        "verdict_class": "dataloader_bound",
        "steps": [{"name": "s", "duration_us": 100.0, "breakdown_us": {"kernel": 100.0}}],
        "gpu_timeline": [],
        "window": {"start_us": 0.0, "end_us": 100.0, "duration_us": 100.0},
        "devices": [{"id": 0, "utilization": 0.95}],
        "step_time_us": 100.0,
        "breakdown_us": {"dataloader": 10.0},
        "findings": [
            {"id": "host-sync", "severity": "medium", "title": "t", "recoverable_us": 5.0,
             "evidence": {"metrics": {}}},
            {"id": "gpu-idle-gaps", "severity": "info", "recoverable_us": 0.0,
             "title": "GPU idle 30.0% of the window in 9 gaps"}
        ]
    });
    let v = common::invariants::violations(&r, None);
    let ids: BTreeSet<&str> = v.iter().map(|x| common::invariants::check_id(x)).collect();
    for want in [
        "class-sentence",
        "class-carried",
        "class-vs-first",
        "verdict-idle",
        "count-integral",
        "share-range",
        "busy-utilization",
    ] {
        assert!(ids.contains(want), "{want} not seen: {v:#?}");
    }
    // a GPU summary limited by lost device records, printed without a note; with it, none
    let mut t = r.clone();
    t["trust"] = serde_json::json!({"issues": [{"id": "launches-without-records",
        "unreliable": ["device_records", "totals"]}]});
    let v = common::invariants::violations(&t, None);
    let notes: Vec<&String> = v.iter().filter(|x| x.starts_with("figure-note")).collect();
    assert_eq!(notes.len(), 2, "{v:#?}"); // the GPU summary and the steps
    t["trust"]["figures"] = serde_json::json!([
        {"figure": "gpu_summary", "issues": ["launches-without-records"],
         "note": "limited by the capture check (launches-without-records): …"},
        {"figure": "steps", "issues": ["launches-without-records"],
         "note": "limited by the capture check (launches-without-records): …"}
    ]);
    let v = common::invariants::violations(&t, None);
    assert!(!v.iter().any(|x| x.starts_with("figure-note")), "{v:#?}");
    // a Sync-bound verdict without host time in syncs
    let mut s = r.clone();
    s["verdict_class"] = "sync_bound".into();
    let v = common::invariants::violations(&s, None);
    assert!(v.iter().any(|x| x.starts_with("sync-evidence")), "{v:#?}");
    // trust.ok false with only a figure-level issue, and that issue in no figure note
    let mut t = r.clone();
    t["trust"] = serde_json::json!({"ok": false, "issues": [{"id": "nccl-sizes-unrecorded",
        "unreliable": ["comm_sizes"], "level": "figures"}]});
    let v = common::invariants::violations(&t, None);
    let n = v.iter().filter(|x| x.starts_with("trust-level")).count();
    assert_eq!(n, 2, "{v:#?}");
    // a communication verdict whose share is not the GPU timeline's nor the finding's; a
    // busy share that is not 100 − the gaps' idle; a timeline over the window with another
    // idle share
    let c = serde_json::json!({
        "verdict": "Communication-bound: exposed communication 40.0% of the step, 95.0% busy",
        "verdict_class": "communication_bound",
        "steps": [{"name": "s", "duration_us": 100.0, "breakdown_us": {"kernel": 100.0}}],
        "step_time_us": 100.0,
        "window": {"start_us": 0.0, "end_us": 100.0, "duration_us": 100.0},
        "gpu_timeline": [{"device": 0, "total_us": 100.0, "computation_us": 60.0,
            "exposed_comm_us": 30.0, "exposed_memcpy_us": 0.0, "idle_us": 10.0}],
        "findings": [
            {"id": "exposed-communication", "severity": "high", "recoverable_us": 30.0,
             "title": "Exposed communication: 30.0% of the step not overlapped with compute"},
            {"id": "gpu-idle-gaps", "severity": "info", "recoverable_us": 0.0,
             "title": "GPU idle 20.0% of the window in 9 gaps"}
        ]
    });
    let v = common::invariants::violations(&c, None);
    let ids: Vec<&str> = v.iter().map(|x| common::invariants::check_id(x)).collect();
    assert_eq!(
        ids.iter().filter(|x| **x == "verdict-comm").count(),
        2,
        "{v:#?}"
    );
    assert!(ids.contains(&"verdict-busy"), "{v:#?}");
    assert!(ids.contains(&"timeline-window"), "{v:#?}");
    // the same timeline over its own span (shorter than the window): labelled, no violation
    let mut c2 = c.clone();
    c2["window"]["duration_us"] = 120.0.into();
    let v = common::invariants::violations(&c2, None);
    assert!(
        !v.iter().any(|x| x.starts_with("timeline-window")),
        "{v:#?}"
    );
}

/// The GPU timeline splits each device's first to last activity, not the analyzed window: where
/// the two differ, every format says over which window its split is, and the markdown headline
/// labels its idle share (DLRM rank 0 of PARAM's et_replay inputs: the verdict's GPU idle 54.4%
/// is over the 14.46 ms window, the timeline's 49.3% over the device's 13.01 ms).
#[test]
fn gpu_timeline_says_its_window() {
    let Some(p) = common::corpus_file(
        "param/et_replay__tests__inputs__dlrm_kineto.tar.gz__dlrm_kineto__worker0_step_12.1694128201545.pt.trace.json.gz",
    ) else {
        return;
    };
    let p = p.to_str().unwrap();
    let note = "this split is over each device's span from its first to its last activity \
                (GPU 0 13.01 ms), not over the analyzed window (14.46 ms) of the verdict's busy \
                and idle shares";
    for fmt in ["table", "md", "html"] {
        let out = common::ok_stdout(&["analyze", p, "--format", fmt]);
        let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
        let flat = flat.replace("&#39;", "'").replace("&#x27;", "'");
        assert!(flat.contains(note), "{fmt}: no window note");
        if fmt == "md" {
            assert!(
                flat.contains("GPU 0 idle 49.3% of its first to last activity"),
                "md headline"
            );
        }
    }
}
