//! Hostile inputs are read in bounded memory or refused by a named limit: long runs of
//! whitespace, one enormous string or number, deep nesting, an event array without newlines,
//! many distinct names, flows without ends, a huge `deviceProperties`, gzip bombs, concatenated
//! gzip members and gzip inside gzip. Every input is a small version built here; the limits are
//! lowered so that a reader which held what it should skip would trip them (a whitespace run
//! 64 times the value limit loads only if the whitespace is never kept). The large versions are
//! measured in docs/performance.md.

mod common;

use std::process::Command;

use stallscope::ingest::limits::Limits;
use stallscope::ingest::{load, LoadError, LoadOptions};
use stallscope::model::Trace;

use common::{gzip, TempDir as Dir};

/// Small blocks, so that a value or a run of whitespace spans many of them.
fn opts(threads: usize, limits: Limits) -> LoadOptions {
    let mut o = LoadOptions::default();
    o.kineto.threads = threads;
    o.kineto.block_size = 4096;
    o.kineto.limits = limits;
    o
}

/// Loads with one and two threads, through the memory map and through reads (they must
/// agree), never panicking.
fn try_load(path: &str, limits: Limits) -> Result<Trace, LoadError> {
    let mut results = Vec::new();
    for (threads, no_mmap) in [(1, false), (2, false), (2, true)] {
        let mut o = opts(threads, limits);
        o.no_mmap = no_mmap;
        let r = std::panic::catch_unwind(|| load(path, &o))
            .unwrap_or_else(|_| panic!("load panicked on {path}"));
        results.push(r);
    }
    let first = results.remove(0);
    for r in &results {
        match (&first, r) {
            (Ok(x), Ok(y)) => {
                assert_eq!(x.source.events, y.source.events);
                assert_eq!(x.cpu.len(), y.cpu.len());
                assert_eq!(format!("{:?}", x.warnings), format!("{:?}", y.warnings));
            }
            (Err(x), Err(y)) => assert_eq!(x.to_string(), y.to_string()),
            _ => panic!("threads or memory map change the outcome on {path}"),
        }
    }
    first
}

/// The one-line error naming the file, the byte offset and the limit.
fn expect_limit(path: &str, limits: Limits, offset: u64, says: &str) {
    let e = match try_load(path, limits) {
        Ok(t) => panic!("{path}: expected an error, got {} events", t.source.events),
        Err(e) => e,
    };
    let text = e.to_string();
    assert!(!text.contains('\n'), "not one line: {text:?}");
    assert!(text.starts_with(path), "does not name the file: {text}");
    assert!(text.contains(says), "{text:?} does not say {says:?}");
    assert_eq!(e.offset, Some(offset), "{text}");
    assert!(text.contains(&format!("byte {offset}:")), "{text}");
    assert!(text.contains("raise it with"), "{text}");
}

const EVENT: &str =
    r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 2}"#;

/// Limits far below the defaults: 64 KiB values, 16 KiB parsed headers, 1000 names.
fn small() -> Limits {
    Limits {
        value_bytes: 64 << 10,
        header_bytes: 16 << 10,
        names: 1000,
        ..Limits::default()
    }
}

#[test]
fn whitespace_runs_are_never_held() {
    let d = Dir::new("hostile-ws");
    let run = vec![b' '; 4 << 20]; // 64 × the value limit
    let mut doc = b"{\"traceEvents\": [".to_vec();
    doc.extend_from_slice(&run);
    doc.extend_from_slice(EVENT.as_bytes());
    doc.extend_from_slice(b",");
    doc.extend_from_slice(&run);
    doc.extend_from_slice(b"\n\t\r");
    doc.extend_from_slice(EVENT.as_bytes());
    doc.extend_from_slice(&run);
    doc.extend_from_slice(b"], ");
    doc.extend_from_slice(&run);
    doc.extend_from_slice(b"\"traceName\": \"t\"}");
    doc.extend_from_slice(&run);
    for p in [d.file("ws.json", &doc), d.gz("ws.json.gz", &doc)] {
        let t = try_load(&p, small()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.source.events, 2, "{p}");
        assert!(t.warnings.is_empty(), "{p}: {:?}", t.warnings);
    }
}

#[test]
fn one_enormous_string_or_number_trips_value_bytes() {
    let d = Dir::new("hostile-value");
    let head = b"{\"traceEvents\": [\n".to_vec();
    let first = format!("{EVENT},\n");
    let at = (head.len() + first.len()) as u64;
    let long_name = format!(
        r#"{{"ph": "X", "name": "{}", "pid": 1, "tid": 1, "ts": 1, "dur": 1}}"#,
        "n".repeat(200 << 10)
    );
    let long_number = format!(
        r#"{{"ph": "X", "name": "x", "pid": 1, "tid": 1, "ts": 1{}, "dur": 1}}"#,
        "0".repeat(200 << 10)
    );
    for (tag, event) in [("string", long_name), ("number", long_number)] {
        let mut doc = head.clone();
        doc.extend_from_slice(first.as_bytes());
        doc.extend_from_slice(event.as_bytes());
        doc.extend_from_slice(b"\n]}");
        for p in [
            d.file(&format!("{tag}.json"), &doc),
            d.gz(&format!("{tag}.json.gz"), &doc),
        ] {
            expect_limit(&p, small(), at, "over the limit value-bytes=65536");
            // raised, the value is read
            let raised = Limits {
                value_bytes: 1 << 20,
                ..small()
            };
            let t = try_load(&p, raised).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(t.source.events, 2, "{p}");
        }
    }
    // a top-level member is a value too
    let mut doc = b"{\"traceEvents\": [\n".to_vec();
    doc.extend_from_slice(EVENT.as_bytes());
    doc.extend_from_slice(b"\n], \"blob\": \"");
    let at = doc.len() as u64 - 1;
    doc.extend_from_slice(&vec![b'b'; 200 << 10]);
    doc.extend_from_slice(b"\"}");
    let p = d.file("blob.json", &doc);
    expect_limit(&p, small(), at, "over the limit value-bytes=65536");
}

/// Nesting needs no limit of its own: it is bounded by the value's size, the hand parser
/// skips it with a heap stack of a bit per level, and serde's recursion limit refuses it with
/// a warning, never a stack overflow.
#[test]
fn deep_nesting_is_bounded_by_the_value_limit() {
    let d = Dir::new("hostile-nest");
    for (open, close) in [("[", "]"), ("{\"a\":", "}")] {
        let depth = 40_000;
        let nested = format!("{}1{}", open.repeat(depth), close.repeat(depth));
        let event = format!(
            r#"{{"ph": "X", "name": "deep", "pid": 1, "tid": 1, "ts": 5, "dur": 1, "args": {{"x": {nested}}}}}"#
        );
        let mut doc = b"{\"traceEvents\": [\n".to_vec();
        doc.extend_from_slice(EVENT.as_bytes());
        doc.extend_from_slice(b",\n");
        doc.extend_from_slice(event.as_bytes());
        doc.extend_from_slice(b",\n");
        doc.extend_from_slice(EVENT.as_bytes());
        doc.extend_from_slice(b"\n]}");
        let p = d.file("deep.json", &doc);
        let raised = Limits {
            value_bytes: 1 << 20,
            ..small()
        };
        let t = try_load(&p, raised).unwrap_or_else(|e| panic!("{e}"));
        // the events around it are read; the deep one is read or skipped with a warning
        assert!(t.cpu.len() >= 2, "{open}: {} events", t.cpu.len());
        if t.cpu.len() == 2 {
            assert!(!t.warnings.is_empty(), "{open}: skipped without a warning");
        }
        // under the default-shaped small limit it is refused by size
        assert!(try_load(&p, small()).is_err());
    }
}

#[test]
fn an_event_array_without_newlines_reads_like_one_with_them() {
    let d = Dir::new("hostile-oneline");
    let events: Vec<String> = (0..3000)
        .map(|i| {
            format!(
                r#"{{"ph":"X","cat":"cpu_op","name":"op{}","pid":1,"tid":{},"ts":{},"dur":3}}"#,
                i % 50,
                i % 4,
                i * 10
            )
        })
        .collect();
    let flat = format!("{{\"traceEvents\":[{}]}}", events.join(","));
    let lines = format!("{{\"traceEvents\":[\n{}\n]}}", events.join(",\n"));
    let a = try_load(&d.file("flat.json", flat.as_bytes()), small()).unwrap();
    let b = try_load(&d.file("lines.json", lines.as_bytes()), small()).unwrap();
    assert_eq!(a.source.events, 3000);
    assert_eq!(a.cpu.len(), b.cpu.len());
    assert_eq!(a.names.len(), b.names.len());
}

/// `n` operators named `n0`, `n1`, …: the events, and the trace (one event a line).
fn distinct_names(n: usize) -> (Vec<String>, String) {
    let events: Vec<String> = (0..n)
        .map(|i| {
            format!(r#"{{"ph":"X","cat":"cpu_op","name":"n{i}","pid":1,"tid":1,"ts":{i},"dur":1}}"#)
        })
        .collect();
    let doc = format!("{{\"traceEvents\":[\n{}\n]}}", events.join(",\n"));
    (events, doc)
}

#[test]
fn too_many_distinct_names_trip_names() {
    let d = Dir::new("hostile-names");
    let (events, doc) = distinct_names(5000);
    let p = d.file("names.json", doc.as_bytes());
    // the event that brings the 1001st name (the 1000th event: id 0 is the empty name)
    let at =
        "{\"traceEvents\":[\n".len() + events[..999].iter().map(|e| e.len() + 2).sum::<usize>();
    let err = try_load(&p, small()).unwrap_err();
    assert_eq!(err.offset, Some(at as u64), "{err}");
    let e = err.to_string();
    assert!(!e.contains('\n'), "{e}");
    assert!(e.starts_with(&p), "{e}");
    assert!(e.contains("over the limit names=1000"), "{e}");
    assert!(e.contains("--limit names="), "{e}");
    let raised = Limits {
        names: 10_000,
        ..small()
    };
    assert_eq!(try_load(&p, raised).unwrap().source.events, 5000);
}

#[test]
fn flows_without_ends_link_nothing() {
    let d = Dir::new("hostile-flows");
    let mut events: Vec<String> = (0..20_000)
        .map(|i| {
            format!(r#"{{"ph":"s","cat":"ac2g","id":{i},"pid":1,"tid":1,"ts":{i},"name":"f"}}"#)
        })
        .collect();
    events.push(
        r#"{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":2,"args":{"correlation":5,"device":0,"stream":7}}"#
            .into(),
    );
    let doc = format!("{{\"traceEvents\":[\n{}\n]}}", events.join(",\n"));
    let t = try_load(&d.file("flows.json", doc.as_bytes()), small()).unwrap();
    assert_eq!(t.gpu.len(), 1);
    assert!(!t.gpu[0].flow_linked, "a flow without an end links nothing");
}

#[test]
fn a_huge_device_properties_is_ignored_with_a_warning() {
    let d = Dir::new("hostile-props");
    let one =
        r#"{"id": 0, "name": "NVIDIA H100", "computeMajor": 9, "computeMinor": 0, "numSms": 132}"#;
    let many = vec![one; 400].join(", "); // ~35 kB, over header-bytes=16K
    let doc = format!("{{\"deviceProperties\": [{many}], \"traceEvents\": [\n{EVENT}\n]}}");
    let p = d.file("props.json", doc.as_bytes());
    let t = try_load(&p, small()).unwrap();
    assert!(
        t.devices.iter().all(|d| d.sm_count.is_none()),
        "parsed anyway"
    );
    let w = t
        .warnings
        .iter()
        .find(|w| w.code == "header-too-large")
        .expect("a warning");
    assert!(w.message.contains("deviceProperties"), "{}", w.message);
    assert!(w.message.contains("header-bytes=16384"), "{}", w.message);
    // within the limit it is read
    let small_doc = format!("{{\"deviceProperties\": [{one}], \"traceEvents\": [\n{EVENT}\n]}}");
    let t = try_load(&d.file("one.json", small_doc.as_bytes()), small()).unwrap();
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
}

#[test]
fn gzip_bombs_trip_max_inflate() {
    let d = Dir::new("hostile-bomb");
    let mut doc = b"{\"traceEvents\": [\n".to_vec();
    doc.extend_from_slice(EVENT.as_bytes());
    doc.extend_from_slice(b",");
    doc.extend_from_slice(&vec![b' '; 8 << 20]);
    doc.extend_from_slice(EVENT.as_bytes());
    doc.extend_from_slice(b"\n]}");
    let p = d.gz("bomb.json.gz", &doc);
    // the ratio, past its floor (8 MiB of spaces compress about 1000 times)
    let ratio = Limits {
        inflate_floor: 1 << 20,
        ..Limits::default()
    };
    let e = try_load(&p, ratio).unwrap_err();
    let text = e.to_string();
    assert!(!text.contains('\n') && text.starts_with(&p), "{text}");
    assert!(text.contains("over the limit inflate-ratio=100"), "{text}");
    assert!(text.contains("--max-inflate"), "{text}");
    assert!(e.offset.is_some_and(|o| o > 1 << 20), "{text}");
    // the absolute cap
    let cap = Limits {
        inflate_bytes: 1 << 20,
        ..Limits::default()
    };
    let text = try_load(&p, cap).unwrap_err().to_string();
    assert!(
        text.contains("over the limit inflate-bytes=1048576"),
        "{text}"
    );
    // the defaults read it (under the 1 GiB floor)
    assert_eq!(try_load(&p, Limits::default()).unwrap().source.events, 2);
}

#[test]
fn concatenated_gzip_members_are_one_stream() {
    let d = Dir::new("hostile-members");
    let doc = format!("{{\"traceEvents\": [\n{EVENT},\n{EVENT}\n]}}");
    let (a, b) = doc.as_bytes().split_at(doc.len() / 2);
    let mut two = gzip(a);
    two.extend_from_slice(&gzip(b));
    let t = try_load(&d.file("two.json.gz", &two), small()).unwrap();
    assert_eq!(t.source.events, 2);
}

#[test]
fn gzip_inside_gzip_is_refused() {
    let d = Dir::new("hostile-nested");
    let doc = format!("{{\"traceEvents\": [\n{EVENT}\n]}}");
    let p = d.file("twice.json.gz", &gzip(&gzip(doc.as_bytes())));
    let e = try_load(&p, small()).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("gzip file inside a gzip file"), "{text}");
    assert_eq!(e.offset, Some(0));
}

/// The command line: `--limit` and `--max-inflate` reach the reader, a tripped limit is exit 2
/// and one line on stderr, and a bad `--limit` is exit 2 naming the limits.
#[test]
fn limits_on_the_command_line() {
    let d = Dir::new("hostile-cli");
    let (_, doc) = distinct_names(50);
    let p = d.file("t.json", doc.as_bytes());
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_stallscope"))
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = run(&["analyze", &p, "--limit", "names=10", "-f", "json"]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("over the limit names=10"), "{err}");
    let (code, err) = run(&["analyze", &p, "--limit", "names=100", "-f", "json"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = run(&["analyze", &p, "--limit", "depth=3"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("unknown limit `depth`") && err.contains("value-bytes"),
        "{err}"
    );
    let (code, err) = run(&["analyze", &p, "--max-inflate", "zero"]);
    assert_eq!(code, Some(2), "{err}");
    let (code, help) = {
        let out = Command::new(env!("CARGO_BIN_EXE_stallscope"))
            .args(["analyze", "--help"])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    assert_eq!(code, Some(0));
    assert!(
        help.contains("--limit") && help.contains("--max-inflate"),
        "{help}"
    );
}

/// No silent wrong numbers: a timestamp hours away from the rest (a clock read as 0), an
/// occupancy over 100 %, a device with 0 SMs and a negative duration are each warned about
/// with a count (and the first offset where the event has one) and left out of the figures:
/// the window stays the 20 ms the trace spans.
#[test]
fn figures_that_cannot_be_right_are_left_out_with_a_warning() {
    let d = Dir::new("hostile-wrong");
    let t0: u64 = 3_605_054_728_338; // µs, the MTIA trace's clock
    let mut ev: Vec<String> = vec![format!(
        r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":{t0},"dur":20000}}"#
    )];
    for i in 0..1500u64 {
        let t = t0 + 10 + i * 13;
        ev.push(format!(
            r#"{{"ph":"X","cat":"kernel","name":"k{}","pid":0,"tid":7,"ts":{t},"dur":8,"args":{{"device":0,"stream":7,"correlation":{i},"est. achieved occupancy %":{}}}}}"#,
            i % 7,
            if i == 700 { 250 } else { 50 }
        ));
    }
    ev.push(r#"{"ph":"X","cat":"cpu_op","name":"corrupt","pid":1,"tid":1,"ts":0,"dur":3}"#.into());
    ev.push(format!(
        r#"{{"ph":"X","cat":"cpu_op","name":"negative","pid":1,"tid":1,"ts":{},"dur":-5}}"#,
        t0 + 100
    ));
    let props =
        r#"[{"id": 0, "name": "NVIDIA H100", "computeMajor": 9, "computeMinor": 0, "numSms": 0}]"#;
    let doc = format!(
        "{{\"deviceProperties\": {props}, \"traceEvents\": [\n{}\n]}}",
        ev.join(",\n")
    );
    let bad_occupancy = doc.find(r#""est. achieved occupancy %":250"#).unwrap();
    let bad_occupancy = doc[..bad_occupancy].rfind(r#"{"ph""#).unwrap() as u64;
    let p = d.file("wrong.json", doc.as_bytes());
    let t = try_load(&p, Limits::default()).unwrap();
    let w = |code: &str| {
        t.warnings
            .iter()
            .find(|w| w.code == code)
            .unwrap_or_else(|| panic!("no {code} warning: {:?}", t.warnings))
    };
    assert_eq!(w("ts-outlier").count, 1);
    assert!(w("ts-outlier").message.contains("`corrupt` starting at 0"));
    let corrupt = doc
        .find(r#"{"ph":"X","cat":"cpu_op","name":"corrupt""#)
        .unwrap() as u64;
    assert_eq!(w("ts-outlier").first_offset, Some(corrupt));
    assert_eq!(w("kernel-stat-out-of-range").count, 1);
    assert_eq!(
        w("kernel-stat-out-of-range").first_offset,
        Some(bad_occupancy)
    );
    assert_eq!(w("zero-sms").count, 1);
    assert_eq!(w("negative-dur").count, 1);
    assert!(t.cpu.iter().all(|c| t.names.resolve(c.name) != "corrupt"));
    assert_eq!(t.devices[0].sm_count, None);
    let occupancies: Vec<f32> = t.kernel_infos.iter().map(|k| k.occupancy_pct).collect();
    assert!(occupancies.iter().all(|o| o.is_nan() || *o <= 100.0));

    // the report: the window is the trace's 20 ms, and the warnings are in the JSON
    let out = Command::new(env!("CARGO_BIN_EXE_stallscope"))
        .args(["analyze", &p, "--all", "-f", "json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let dur = v["window"]["duration_us"].as_f64().unwrap();
    assert!(dur <= 20_000.0, "window stretched to {dur} µs");
    let codes: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["code"].as_str())
        .collect();
    for c in [
        "ts-outlier",
        "kernel-stat-out-of-range",
        "zero-sms",
        "negative-dur",
    ] {
        assert!(codes.contains(&c), "{c} not in the report: {codes:?}");
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("far outside the trace's span"), "{stderr}");
}

/// Whitespace before the document longer than the first read: still a trace, never "empty".
#[test]
fn whitespace_before_the_document_is_skipped() {
    let d = Dir::new("hostile-lead");
    let mut doc = vec![b'\n'; 1 << 20];
    doc.extend_from_slice(format!("{{\"traceEvents\": [\n{EVENT}\n]}}").as_bytes());
    for p in [d.file("lead.json", &doc), d.gz("lead.json.gz", &doc)] {
        let t = try_load(&p, small()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.source.events, 1, "{p}");
    }
    // nothing but whitespace is still an empty file
    let blank = vec![b' '; 1 << 20];
    for p in [d.file("blank.json", &blank), d.gz("blank.json.gz", &blank)] {
        let e = try_load(&p, small()).unwrap_err().to_string();
        assert!(e.contains("empty file"), "{e}");
    }
}

/// Kernels longer than their step: a kernel whose `dur` runs past the start of the next
/// kernel on its stream cannot be right (a stream runs its work in order). It is cut at that
/// start with a `stream-overrun` warning, so it does not stretch its step; kernels of a CUDA
/// graph (which run side by side on one stream) are left alone.
#[test]
fn a_kernel_longer_than_its_step_is_cut_with_a_warning() {
    let d = Dir::new("hostile-overrun");
    let mut ev: Vec<String> = Vec::new();
    for s in 0..3u64 {
        let t0 = 1_000_000 + s * 10_000;
        ev.push(format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{s}","pid":1,"tid":1,"ts":{t0},"dur":9000}}"#
        ));
        for k in 0..10u64 {
            let c = s * 100 + k + 1;
            let t = t0 + 100 + k * 500;
            ev.push(format!(
                r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{t},"dur":5,"args":{{"correlation":{c}}}}}"#
            ));
            // step 1's fourth kernel claims to last 30 s; the graph kernels overlap by design
            let dur = if s == 1 && k == 3 { 30_000_000 } else { 300 };
            let graph = if s == 2 && k < 2 {
                r#","graph id":5"#
            } else {
                ""
            };
            let start = if s == 2 && k == 1 {
                t - 500 + 20
            } else {
                t + 20
            };
            ev.push(format!(
                r#"{{"ph":"X","cat":"kernel","name":"k{k}","pid":0,"tid":7,"ts":{start},"dur":{dur},"args":{{"device":0,"stream":7,"correlation":{c}{graph}}}}}"#
            ));
            ev.push(format!(
                r#"{{"ph":"f","id":{c},"pid":0,"tid":7,"ts":{start},"cat":"ac2g","name":"ac2g","bp":"e"}}"#
            ));
            ev.push(format!(
                r#"{{"ph":"s","id":{c},"pid":1,"tid":1,"ts":{t},"cat":"ac2g","name":"ac2g"}}"#
            ));
        }
    }
    let doc = format!("{{\"traceEvents\": [\n{}\n]}}", ev.join(",\n"));
    let p = d.file("overrun.json", doc.as_bytes());
    let t = try_load(&p, Limits::default()).unwrap();
    let w = t
        .warnings
        .iter()
        .find(|w| w.code == "stream-overrun")
        .unwrap_or_else(|| panic!("no stream-overrun warning: {:?}", t.warnings));
    assert_eq!(w.count, 1, "{w:?}");
    assert!(
        w.message.contains("`k3`") && w.message.contains("correlation 104"),
        "{w:?}"
    );
    // cut at the next kernel's start: 500 µs after its own
    let k3 = t.gpu.iter().find(|g| g.correlation == 104).unwrap();
    assert_eq!(k3.dur, 500_000);
    // the graph kernels keep their durations
    assert!(t
        .gpu
        .iter()
        .filter(|g| g.in_graph)
        .all(|g| g.dur == 300_000));

    let out = Command::new(env!("CARGO_BIN_EXE_stallscope"))
        .args(["analyze", &p, "--all", "-f", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3);
    for s in steps {
        let dur = s["duration_us"].as_f64().unwrap();
        assert!(dur <= 10_000.0, "a step stretched to {dur} µs: {s}");
    }
}

/// Durations that sum past 2^61 ns (73 years) are no profile: each is within a reader's bound
/// (2^62 ns), but their sums would overflow the analysis's totals. One line, exit 2.
#[test]
fn durations_summing_past_73_years_are_refused() {
    let d = Dir::new("hostile-totals");
    let ev: Vec<String> = (0..3)
        .map(|i| {
            format!(
                r#"{{"ph":"X","cat":"cpu_op","name":"op{i}","pid":1,"tid":1,"ts":{},"dur":1000000000000000}}"#,
                1000 + i
            )
        })
        .collect();
    let p = d.file(
        "totals.json",
        format!("{{\"traceEvents\": [{}]}}", ev.join(",")).as_bytes(),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_stallscope"))
        .args(["analyze", &p])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("past 2^61 ns"), "{stderr}");
    assert!(stderr.contains("totals.json"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    // two of them load
    let p = d.file(
        "two.json",
        format!("{{\"traceEvents\": [{}]}}", ev[..2].join(",")).as_bytes(),
    );
    assert!(try_load(&p, Limits::default()).is_ok());
}
