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

/// The device-0 `[memory]` events of a Kineto trace, in file order.
fn raw_events(path: &std::path::Path) -> Vec<Raw> {
    let text = {
        use std::io::Read;
        let f = std::fs::File::open(path).unwrap();
        let mut s = String::new();
        flate2::read::MultiGzDecoder::new(f)
            .read_to_string(&mut s)
            .unwrap();
        s
    };
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["name"] == "[memory]"
                && (e["args"]["Device Type"] == 1 || e["args"]["Device Type"] == 6)
        })
        .map(|e| {
            let a = &e["args"];
            Raw {
                ts_ns: (e["ts"].as_f64().unwrap() * 1000.0).round() as i64,
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
    let t = common::load(&p);
    let a = stallscope::analysis::analyze(&t, &Default::default());
    let m = a.memory.as_ref().expect("memory events");
    assert_eq!(m.devices.len(), 1, "{rel}");
    let d = &m.devices[0];
    let raw = raw_events(&p);
    assert_eq!(m.events as usize, raw.len(), "{rel}");
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
    assert_eq!(d.held_at_peak, raw[pi].reserved - peak);
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
