//! The memory timeline against a hand computation over the raw `[memory]` events of corpus
//! traces, and torch's memory-timeline export.

mod common;

use stallscope::analysis::memory::BEFORE;
use std::collections::HashMap;

struct Raw {
    ts_ns: i64,
    addr: u64,
    bytes: i64,
    total: i64,
    reserved: i64,
}

/// The GPU (`Device Type` 1 or 6) or, with `cpu`, the CPU (`Device Type` 0) `[memory]` events
/// of a Kineto trace (gzipped or not), in file order.
fn raw_events(path: &std::path::Path, cpu: bool) -> Vec<Raw> {
    let text = {
        use std::io::Read;
        let f = std::fs::File::open(path).unwrap();
        let mut s = String::new();
        if path.extension().is_some_and(|e| e == "gz") {
            flate2::read::MultiGzDecoder::new(f)
                .read_to_string(&mut s)
                .unwrap();
        } else {
            std::io::BufReader::new(f).read_to_string(&mut s).unwrap();
        }
        s
    };
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            let t = &e["args"]["Device Type"];
            e["name"] == "[memory]" && if cpu { *t == 0 } else { *t == 1 || *t == 6 }
        })
        .map(|e| {
            let a = &e["args"];
            Raw {
                // integer µs exactly (×1000 as f64 would round epoch nanoseconds)
                ts_ns: e["ts"].as_i64().map_or_else(
                    || (e["ts"].as_f64().unwrap() * 1000.0).round() as i64,
                    |us| us * 1000,
                ),
                addr: a["Addr"].as_u64().unwrap(),
                bytes: a["Bytes"].as_i64().unwrap(),
                total: a["Total Allocated"].as_i64().unwrap(),
                reserved: a["Total Reserved"].as_i64().unwrap(),
            }
        })
        .collect()
}

fn check_peak(rel: &str) {
    let Some(p) = common::corpus_file(rel) else {
        return;
    };
    check_peak_of(rel, &p, false);
    // the host's allocations, recorded beside the GPU's, have their own timeline
    if !raw_events(&p, true).is_empty() {
        check_peak_of(rel, &p, true);
    }
}

/// [`check_peak`] of a file; `cpu`: the CPU's events (`Device Type` 0, device -1), whose
/// `Total Reserved` (always 0: the CPU allocator caches nothing) is not kept.
fn check_peak_of(rel: &str, p: &std::path::Path, cpu: bool) {
    let t = common::load(p);
    let a = stallscope::analysis::analyze(&t, &Default::default());
    let m = a.memory.as_ref().expect("memory events");
    // the GPU's timeline, or the CPU's (device -1, listed after the GPUs)
    let d = m
        .devices
        .iter()
        .find(|d| (d.device == -1) == cpu)
        .unwrap_or_else(|| panic!("{rel}: no timeline"));
    let mut raw = raw_events(p, cpu);
    let others = raw_events(p, !cpu).len();
    assert_eq!(m.events as usize, raw.len() + others, "{rel}");
    assert_eq!(m.devices.len(), 1 + usize::from(others > 0), "{rel}");
    if cpu {
        assert_eq!(d.device, -1, "{rel}: the CPU's device id");
        assert!(raw.iter().all(|e| e.reserved == 0), "{rel}");
        for e in &mut raw {
            e.reserved = -1; // not recorded
        }
    }
    // by hand: the largest `Total Allocated` recorded inside the window, its first event
    let w = a.window;
    let (pi, peak) = raw
        .iter()
        .enumerate()
        .filter(|(_, e)| e.ts_ns >= w.start && e.ts_ns <= w.end)
        .fold(None::<(usize, i64)>, |best, (i, e)| match best {
            Some((_, b)) if b >= e.total => best,
            _ => Some((i, e.total)),
        })
        .unwrap();
    assert_eq!(d.peak_allocated, peak, "{rel}: peak");
    assert_eq!(d.recorded_peak, raw.iter().map(|e| e.total).max().unwrap());
    assert_eq!(
        d.reserved_at_peak, raw[pi].reserved,
        "{rel}: reserved at the peak"
    );
    let held = if raw[pi].reserved >= 0 {
        raw[pi].reserved - peak
    } else {
        0
    };
    assert_eq!(d.held_at_peak, held);
    assert_eq!(
        (d.peak_at_us * 1000.0).round() as i64,
        raw[pi].ts_ns - t.start(),
        "{rel}: peak time"
    );
    // live at the peak by hand: replay the events up to the peak, pairing frees by address
    let mut live: HashMap<u64, i64> = HashMap::new();
    for e in &raw[..=pi] {
        if e.bytes > 0 {
            live.insert(e.addr, e.bytes);
        } else {
            live.remove(&e.addr);
        }
    }
    let live_bytes: i64 = live.values().sum();
    let groups = &d.live_at_peak;
    let traced: u64 = groups
        .iter()
        .filter(|g| g.op != BEFORE)
        .map(|g| g.bytes)
        .sum();
    let blocks: u64 = groups.iter().map(|g| g.blocks).sum();
    assert_eq!(traced as i64, live_bytes, "{rel}: live bytes");
    assert_eq!(blocks as usize, live.len(), "{rel}: live blocks");
    // the rest was allocated before the first event: Total Allocated − Bytes of that event
    let before = groups
        .iter()
        .find(|g| g.op == BEFORE)
        .map_or(0, |g| g.bytes);
    assert_eq!(
        before as i64,
        raw[0].total - raw[0].bytes,
        "{rel}: before the trace"
    );
    assert_eq!(before as i64 + live_bytes, peak);
    // groups are ordered by bytes
    assert!(groups.windows(2).all(|w| w[0].bytes >= w[1].bytes));
    // churn over the steps: every event of the steps is an allocation or a free
    let allocs: u64 = d.churn.iter().map(|c| c.allocs).sum();
    let in_steps = raw
        .iter()
        .filter(|e| {
            e.bytes > 0
                && a.steps
                    .steps
                    .iter()
                    .any(|s| e.ts_ns >= s.span.start && e.ts_ns < s.span.end)
        })
        .count();
    assert_eq!(allocs as usize, in_steps, "{rel}: allocations in the steps");
}

/// CPU memory (`profile_memory=True` on a CPU-only run): the same hand computation over the
/// `Device Type` 0 events, on a Windows CPU ResNet inference from the corpus and on a torch 2.15
/// CPU training capture shipped in samples/.
#[test]
fn peak_and_live_set_cpu() {
    let rel = "dtu_mlops/trace.json";
    if let Some(p) = common::corpus_file(rel) {
        check_peak_of(rel, &p, true);
    }
    let p = common::sample("torch_cpu_loss_loop.json.gz");
    check_peak_of("torch_cpu_loss_loop.json.gz", &p, true);
}

/// `stallscope memory` on a CPU capture prints the CPU's timeline; on a trace without memory
/// events it says what the trace has.
#[test]
fn memory_command_on_cpu_capture_and_without_events() {
    let p = common::sample("torch_cpu_loss_loop.json.gz");
    let out = common::ok_stdout(&["memory", p.to_str().unwrap()]);
    assert!(out.contains("CPU memory"), "{out}");
    let p = common::sample("cpu_only_rank34.json.gz");
    let out = common::stallscope(&["memory", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "has no memory events, on the CPU or a GPU (15 host spans, 0 device activities"
        ),
        "{err}"
    );
}

#[test]
fn peak_and_live_set_llm() {
    check_peak("tracelens/tests__traces__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
}

#[test]
fn peak_and_live_set_bert() {
    check_peak("tracelens/tests__traces__h100__gaunernst_bert-small-uncased__1016001.json.gz");
}

#[test]
fn peak_and_live_set_vit_amd() {
    check_peak("tracelens/tests__traces__mi300__Falconsai_nsfw_image_detection__1016002.json.gz");
}

/// torch's `export_memory_timeline` raw format: HTA's test states the bytes per category after
/// the 745th distinct timestamp; the peak is checked against a fold of the entries in Python
/// (7,721 timestamps; the largest total, 3,082,832,104 bytes, after timestamp #762).
#[test]
fn torch_memory_timeline_export() {
    let Some(p) = common::corpus_file("hta/tests__data__memory_analysis__memory_timeline.raw.gz")
    else {
        return;
    };
    let path = p.to_str().unwrap();
    assert!(stallscope::ingest::torch_memory::is_export(path));
    let t = stallscope::ingest::torch_memory::load(path).unwrap();
    assert_eq!(t.entries, 16_845);
    assert_eq!(t.times.len(), 7_721);
    assert_eq!(
        t.sizes[744],
        [102440608, 102228128, 19395584, 0, 2618160128, 58417152, 41811968, 25494440]
    );
    let i = t.peak().unwrap();
    assert_eq!(i, 762);
    assert_eq!(t.sizes[i].iter().sum::<i64>(), 3_082_832_104);
    assert_eq!(t.times[i], 1_696_966_047_194_486_198);
    // the CLI: `memory` reads it, `analyze` says to use `memory`
    let bin = env!("CARGO_BIN_EXE_stallscope");
    let out = std::process::Command::new(bin)
        .args(["memory", path, "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["peak_bytes"], 3_082_832_104i64);
    assert_eq!(v["categories_at_peak"]["activation"], 2_592_465_920i64);
    let out = std::process::Command::new(bin)
        .args(["analyze", path])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("stallscope memory"));
}

#[test]
fn memory_command_without_memory_events_exits_2() {
    let Some(p) = common::corpus_file("hta/tests__data__call_stack__backward_thread.json") else {
        return;
    };
    let bin = env!("CARGO_BIN_EXE_stallscope");
    for args in [
        vec!["memory", p.to_str().unwrap()],
        vec![
            "analyze",
            p.to_str().unwrap(),
            "--format",
            "csv",
            "--view",
            "memory",
        ],
    ] {
        let out = std::process::Command::new(bin)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("profile_memory=True"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

/// A bad export: one line naming the file and the byte, exit 2.
#[test]
fn torch_memory_export_bad_input() {
    let dir = std::env::temp_dir().join(format!("stallscope-mem-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.raw.json");
    std::fs::write(&f, "[[1, 2, 100, 4],\n [2, 7, 5, 4]]").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_stallscope"))
        .args(["memory", f.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.raw.json: byte ") && err.contains("action 7"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The Markdown report has the efficiency line and table and the memory section the terminal
/// and HTML reports have, with the numbers of the JSON report.
#[test]
fn markdown_report_has_efficiency_and_memory() {
    let Some(p) = common::corpus_file(
        "tracelens/tests__traces__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    ) else {
        return;
    };
    let j = common::analyze_json(&p, &[]);
    let out = common::stallscope(&["analyze", p.to_str().unwrap(), "--format", "md"]);
    assert!(out.status.success());
    let md = String::from_utf8(out.stdout).unwrap();
    let e = &j["efficiency"];
    let mfu = e["mfu"].as_f64().expect("an MFU on H100");
    let line = md
        .lines()
        .find(|l| l.starts_with("> **Efficiency:** "))
        .expect("efficiency line");
    assert!(line.contains(&format!("MFU {:.1}%", mfu * 100.0)), "{line}");
    assert!(md.contains("### Efficiency"), "{md}");
    assert!(md.contains("| operator / phase | calls | device | TFLOP/s | GB/s | roofline | lost |"));
    let first_op = e["ops"][0]["name"].as_str().unwrap();
    assert!(md.contains(first_op), "{first_op}");
    let d = &j["memory"]["devices"][0];
    let peak = stallscope::report::terminal::fmt_bytes(d["peak_allocated"].as_u64().unwrap());
    assert!(
        md.contains(&format!("### GPU {} memory", d["device"])),
        "{md}"
    );
    assert!(md.contains(&format!("peak allocated {peak}")), "{peak}");
    let top = d["live_at_peak"][0]["op"].as_str().unwrap();
    assert!(
        md.lines()
            .any(|l| l.starts_with("| ") && l.contains(&stallscope::report::markdown::escape(top))),
        "{top}"
    );
}
