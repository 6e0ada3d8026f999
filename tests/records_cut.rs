//! Where a capture's device records stop, the window ends (issue 30, "Complete records"):
//! real captures whose device records were made to stop part-way the way the torch 2.12
//! export defect writes them (pytorch #188481: later events with `ts 0, dur 0`; here two of
//! every three device activities from a moment on) are judged on the part before, exactly as
//! the intact capture's same steps are, instead of "Device records incomplete".

mod common;

use serde_json::Value;

/// The trace of `src` with two of every three device activities that start at or after
/// `at` (µs) written with `ts 0, dur 0`; returns it and how many were.
fn lossy(src: &std::path::Path, at: impl Fn(&[Value]) -> f64) -> (Vec<u8>, usize) {
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::MultiGzDecoder::new(std::fs::File::open(src).unwrap()),
        &mut text,
    )
    .unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    let events = doc["traceEvents"].as_array_mut().unwrap();
    let t = at(events);
    let (mut n, mut zeroed) = (0, 0);
    for e in events.iter_mut() {
        let device = e["ph"] == "X"
            && e["cat"].as_str().is_some_and(|c| {
                ["kernel", "memcpy", "memset", "gpu_memcpy", "gpu_memset"]
                    .contains(&c.to_ascii_lowercase().as_str())
            });
        if device && e["ts"].as_f64().unwrap() >= t {
            n += 1;
            if n % 3 != 0 {
                e["ts"] = 0.into();
                e["dur"] = 0.into();
                zeroed += 1;
            }
        }
    }
    (serde_json::to_vec(&doc).unwrap(), zeroed)
}

fn issue<'a>(r: &'a Value, id: &str) -> Option<&'a Value> {
    r["trust"]["issues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == id)
}

#[test]
fn profiler_steps_after_the_stop_are_left_out() {
    // TensorBoard plugin's ResNet-50 sample: ProfilerStep#5..#10; records lost from the
    // start of the fifth step on
    let Some(src) = common::corpus_file(
        "tbprof/tb_plugin__samples__resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz",
    ) else {
        return;
    };
    let (doc, zeroed) = lossy(&src, |ev| {
        let mut steps: Vec<f64> = ev
            .iter()
            .filter(|e| {
                e["ph"] == "X"
                    && e["name"]
                        .as_str()
                        .is_some_and(|n| n.starts_with("ProfilerStep#"))
            })
            .map(|e| e["ts"].as_f64().unwrap())
            .collect();
        steps.sort_by(f64::total_cmp);
        steps[4]
    });
    assert_eq!(zeroed, 2371);
    let dir = common::TempDir::new("records-cut-steps");
    let p = dir.file("lossy.json", &doc);
    let r = common::analyze_json(std::path::Path::new(&p), &[]);
    let cut = issue(&r, "records-cut").expect("records-cut");
    assert!(
        cut["finding"].as_str().unwrap().starts_with(
            "device records stop 682.03 ms into the capture: 2371 of the 3556 kernel/copy/fill \
             launches from there have no device record, 0 of the 5540 before"
        ),
        "{cut}"
    );
    // the launches of ProfilerStep#8 run on the device after #9 began: the stop is in #8
    let ex: Vec<&str> = r["window"]["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["step"].as_str().unwrap())
        .collect();
    assert_eq!(ex, ["ProfilerStep#8", "ProfilerStep#9", "ProfilerStep#10"]);
    assert_eq!(r["verdict_class"], "dataloader_bound");
    // the lost records limit nothing left in the window
    for id in ["zero-timestamps", "launches-without-records"] {
        let i = issue(&r, id).unwrap();
        assert_eq!(i["unreliable"], serde_json::json!([]), "{i}");
    }
    // the figures are those of the intact capture's same steps
    let intact = common::analyze_json(&src, &["--steps", "5..7"]);
    assert_eq!(r["step_time_us"], intact["step_time_us"]);
    assert_eq!(r["breakdown_us"], intact["breakdown_us"]);
    assert_eq!(common::kernel_calls(&r), common::kernel_calls(&intact));
    assert!(
        r["verdict"]
            .as_str()
            .unwrap()
            .starts_with(intact["verdict"].as_str().unwrap()),
        "{} / {}",
        r["verdict"],
        intact["verdict"]
    );
}

#[test]
fn capture_without_steps_is_cut_at_the_stop() {
    // PARAM's linear replay (no step marks, 8,716 kernels on an RTX 2080 Ti): records lost
    // from the median device activity on
    let Some(src) = common::corpus_file("param/et_replay__tests__inputs__linear_kineto.json.gz")
    else {
        return;
    };
    let (doc, zeroed) = lossy(&src, |ev| {
        let mut dev: Vec<f64> = ev
            .iter()
            .filter(|e| {
                e["ph"] == "X"
                    && e["cat"].as_str().is_some_and(|c| {
                        ["kernel", "gpu_memcpy", "gpu_memset"]
                            .contains(&c.to_ascii_lowercase().as_str())
                    })
            })
            .map(|e| e["ts"].as_f64().unwrap())
            .collect();
        dev.sort_by(f64::total_cmp);
        dev[dev.len() / 2]
    });
    assert_eq!(zeroed, 3452);
    let dir = common::TempDir::new("records-cut-whole");
    let p = dir.file("lossy.json", &doc);
    let r = common::analyze_json(std::path::Path::new(&p), &[]);
    assert!(issue(&r, "records-cut").is_some(), "{}", r["trust"]);
    let left: Vec<&str> = r["window"]["left_out"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["what"].as_str().unwrap())
        .collect();
    assert_eq!(
        left,
        [
            "set-up before the first device work",
            "the part after the device records stop (most of its launches have no device record)"
        ]
    );
    assert_eq!(r["window"]["end_us"], 1498742.0);
    // before the cut: "Device records incomplete"; now the intact capture's class
    let intact = common::analyze_json(&src, &[]);
    assert_eq!(intact["verdict_class"], "launch_bound");
    assert_eq!(r["verdict_class"], "launch_bound");
}

#[test]
fn limited_figures_print_their_note_in_every_format() {
    // HTA's sampled rank 0: a device activity starts 64 ms after its launch with nothing
    // recorded between (unrecorded-device-work: device records are missing)
    let Some(p) = common::corpus_file("hta/tests__data__timeline_analysis__sampled_rank-0.json.gz")
    else {
        return;
    };
    let path = p.to_str().unwrap();
    let r = common::analyze_json(&p, &[]);
    let figures: Vec<&str> = r["trust"]["figures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["figure"].as_str().unwrap())
        .collect();
    // (and its NCCL kernels record no message size: the communication figure's own note)
    assert_eq!(
        figures,
        ["gpu_summary", "gpu_timeline", "steps", "communication"]
    );
    let note = "limited by the capture check (unrecorded-device-work): device records are \
                missing, so idle time is not all idle";
    assert_eq!(r["trust"]["figures"][0]["note"], note);
    for format in ["md", "html"] {
        let out = common::ok_stdout(&["analyze", path, "--format", format]);
        // the GPU summary (and the GPU timeline beside it in Markdown) and the steps
        let want = if format == "md" { 2 } else { 3 };
        assert_eq!(out.matches(note).count(), want, "{format}");
    }
    // the terminal wraps it at 100 columns: one `note:` line under each of the three sections
    let out = common::ok_stdout(&["analyze", path]);
    let head = "  note: limited by the capture check (unrecorded-device-work): device records";
    assert_eq!(out.matches(head).count(), 3, "{out}");
}

#[test]
fn idle_time_is_not_claimed_beside_a_records_incomplete_verdict() {
    // HTA's backward-thread capture and sampled ranks: device work the trace does not hold
    // (unrecorded-device-work), so the verdict does not blame the idle time; the idle-gaps
    // finding (high before: 349 ms of "nothing traced" ranked as recoverable) stays, at info
    // with nothing recoverable and the reason
    for name in [
        "hta/tests__data__call_stack__backward_thread.json",
        "hta/tests__data__timeline_analysis__sampled_rank-0.json.gz",
        "hta/tests__data__trace_filter__sampled_rank-1.json.gz",
    ] {
        let Some(p) = common::corpus_file(name) else {
            return;
        };
        let r = common::analyze_json(&p, &[]);
        assert_eq!(r["verdict_class"], "device_records_incomplete", "{name}");
        let g = r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == "gpu-idle-gaps")
            .unwrap_or_else(|| panic!("{name}: gpu-idle-gaps"));
        assert_eq!(g["severity"], "info", "{name}");
        assert_eq!(g["recoverable_us"], 0.0, "{name}");
        let facts = g["evidence"]["facts"].as_array().unwrap();
        assert!(
            facts.last().unwrap().as_str().unwrap().starts_with(
                "not counted as recoverable: the capture check found unrecorded-device-work"
            ),
            "{name}: {facts:?}"
        );
    }
}
