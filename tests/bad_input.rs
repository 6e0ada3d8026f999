//! Broken inputs give the documented result and never panic: either a one-line error naming
//! the file and the byte offset, or a warning and a best-effort model. Every input is built
//! here, as small byte strings in a temporary folder, plain and gzip-compressed.

mod common;

use stallscope::ingest::{load, LoadError, LoadOptions};
use stallscope::model::Trace;

use common::TempDir as Dir;

fn opts(threads: usize, allow_truncated: bool) -> LoadOptions {
    let mut o = LoadOptions::default();
    o.kineto.threads = threads;
    o.kineto.block_size = 4096;
    o.kineto.allow_truncated = allow_truncated;
    o
}

/// Loads with one and two threads (they must agree) and never panics.
fn try_load(path: &str, allow_truncated: bool) -> Result<Trace, LoadError> {
    let a = std::panic::catch_unwind(|| load(path, &opts(1, allow_truncated)))
        .unwrap_or_else(|_| panic!("load panicked on {path}"));
    let b = std::panic::catch_unwind(|| load(path, &opts(2, allow_truncated)))
        .unwrap_or_else(|_| panic!("load panicked on {path} (2 threads)"));
    match (&a, &b) {
        (Ok(x), Ok(y)) => {
            assert_eq!(x.source.events, y.source.events);
            assert_eq!(x.cpu.len(), y.cpu.len());
            assert_eq!(format!("{:?}", x.warnings), format!("{:?}", y.warnings));
        }
        (Err(x), Err(y)) => assert_eq!(x.to_string(), y.to_string()),
        _ => panic!("1 and 2 threads disagree on {path}"),
    }
    a
}

/// The error for `path`: one line, naming the file and (when `offset` is given) the byte.
fn expect_error(path: &str, allow_truncated: bool, offset: Option<u64>, says: &str) -> LoadError {
    let e = match try_load(path, allow_truncated) {
        Ok(t) => panic!(
            "{path}: expected an error, got a model with {} events",
            t.source.events
        ),
        Err(e) => e,
    };
    let text = e.to_string();
    assert!(!text.contains('\n'), "not one line: {text:?}");
    assert!(text.starts_with(path), "does not name the file: {text}");
    assert!(text.contains(says), "{text:?} does not say {says:?}");
    if let Some(o) = offset {
        assert_eq!(e.offset, Some(o), "{text}");
        assert!(text.contains(&format!("byte {o}")), "{text}");
    }
    e
}

fn warning_codes(t: &Trace) -> Vec<&'static str> {
    t.warnings.iter().map(|w| w.code).collect()
}

const GOOD_EVENT: &str = r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10.5, "dur": 2, "args": {"External id": 7}}"#;

fn trace_of(events: &[&[u8]]) -> Vec<u8> {
    let mut d = b"{\"schemaVersion\": 1, \"traceEvents\": [\n".to_vec();
    for (i, e) in events.iter().enumerate() {
        if i > 0 {
            d.extend_from_slice(b",\n");
        }
        d.extend_from_slice(e);
    }
    d.extend_from_slice(b"\n], \"traceName\": \"t\"}\n");
    d
}

#[test]
fn empty_file_is_an_error_at_byte_0() {
    let d = Dir::new("bad-empty");
    for (name, bytes) in [("empty.json", &b""[..]), ("blank.json", &b"  \n\t \n"[..])] {
        let p = d.file(name, bytes);
        expect_error(&p, false, Some(0), "empty file");
        let p = d.gz(&format!("{name}.gz"), bytes);
        expect_error(&p, false, Some(0), "empty file");
    }
}

#[test]
fn garbage_is_an_error_at_byte_0() {
    let d = Dir::new("bad-garbage");
    let mut noise = Vec::new();
    let mut x: u32 = 12345;
    for _ in 0..20_000 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        noise.push((x >> 16) as u8);
    }
    noise[0] = b'#'; // neither JSON nor gzip
    let p = d.file("noise.bin", &noise);
    expect_error(&p, false, Some(0), "not a recognised profile");
    let p = d.file("words.txt", b"hello, this is not a trace\n");
    expect_error(&p, false, Some(0), "not a recognised profile");
    let p = d.gz("noise.bin.gz", &noise);
    expect_error(&p, false, Some(0), "not a recognised profile");
}

#[test]
fn json_that_is_not_a_trace_says_what_it_is() {
    let d = Dir::new("bad-notrace");
    let p = d.file("obj.json", br#"{"nodes": [], "schema": "1.0.1"}"#);
    expect_error(&p, false, Some(0), "Execution Trace");
    let p = d.file("other.json", br#"{"a": 1, "b": [1, 2]}"#);
    expect_error(&p, false, Some(0), "without a `traceEvents` array");
    // a document whose structure breaks: an error at the offending byte
    let doc = br#"{"traceEvents": [{"ph": "X"}] "x": 1}"#;
    let at = doc.iter().position(|&c| c == b']').unwrap() as u64 + 2;
    let p = d.file("broken.json", doc);
    expect_error(&p, false, Some(at), "malformed JSON: expected ',' or '}'");
    let doc = br#"{"traceEvents": [{"ph": "X"} x {"ph": "X"}]}"#;
    let at = doc.iter().position(|&c| c == b'x').unwrap() as u64;
    let p = d.file("broken2.json", doc);
    expect_error(&p, false, Some(at), "malformed JSON: expected ',' or ']'");
}

/// HTA's memory_timeline.raw.gz is a JSON array of arrays: not a trace, said so at the first
/// non-object value, not an empty report; a stray non-object among events is a warning.
#[test]
fn arrays_of_non_events_are_not_a_trace() {
    let d = Dir::new("bad-nonobjects");
    let doc = b"[[-1, 1, 37888, 7], [-1, 1, 512, 7], 3, \"x\"]";
    let p = d.file("timeline.json", doc);
    expect_error(&p, false, Some(1), "4 values that are not events");
    let p = d.gz("timeline.json.gz", doc);
    expect_error(&p, false, Some(1), "not a Kineto trace");

    let doc = trace_of(&[
        GOOD_EVENT.as_bytes(),
        b"[1, 2]",
        GOOD_EVENT.as_bytes(),
        b"7",
    ]);
    let first = doc.windows(6).position(|w| w == b"[1, 2]").unwrap() as u64;
    let p = d.file("stray.json", &doc);
    let t = try_load(&p, false).unwrap();
    assert_eq!(t.cpu.len(), 2);
    let w = t
        .warnings
        .iter()
        .find(|w| w.code == "non-object-event")
        .expect("a warning for the skipped values");
    assert_eq!((w.count, w.first_offset), (2, Some(first)));
}

#[test]
fn truncated_file_is_an_error_or_a_warning() {
    let d = Dir::new("bad-trunc");
    let events: Vec<Vec<u8>> = (0..400)
        .map(|i| {
            GOOD_EVENT
                .replace("10.5", &format!("{}.5", 10 + i))
                .into_bytes()
        })
        .collect();
    let refs: Vec<&[u8]> = events.iter().map(|e| &e[..]).collect();
    let full = trace_of(&refs);
    // cut inside the 301st event
    let first = b"{\"schemaVersion\": 1, \"traceEvents\": [\n".len();
    let start_301: usize = first + events[..300].iter().map(|e| e.len() + 2).sum::<usize>();
    let bytes = &full[..start_301 + 40];
    let start_301 = start_301 as u64;
    for p in [d.file("cut.json", bytes), d.gz("cut.json.gz", bytes)] {
        let e = expect_error(&p, false, Some(start_301), "truncated trace");
        assert!(e.to_string().contains("300 complete events"), "{e}");
        // with --allow-truncated: the complete events and a warning at the same offset
        let t = try_load(&p, true).unwrap();
        assert_eq!(t.source.events, 300);
        assert_eq!(t.cpu.len(), 300);
        let w = t.warnings.iter().find(|w| w.code == "truncated").unwrap();
        assert_eq!(w.first_offset, Some(start_301));
    }
    // a gzip stream cut short: an error at the uncompressed offset where it stopped
    let gz = std::fs::read(d.gz("whole.json.gz", &full)).unwrap();
    let p = d.file("cutgz.json.gz", &gz[..gz.len() / 2]);
    let e = expect_error(&p, false, None, "");
    assert!(e.offset.is_some(), "{e}");
}

#[test]
fn invalid_utf8_is_replaced_with_a_warning() {
    let d = Dir::new("bad-utf8");
    let bad = GOOD_EVENT.replace("aten::mm", "caf\u{1}").into_bytes();
    let bad: Vec<u8> = bad
        .into_iter()
        .map(|c| if c == 1 { 0xe9 } else { c }) // a lone Latin-1 byte: not UTF-8
        .collect();
    let doc = trace_of(&[GOOD_EVENT.as_bytes(), &bad, GOOD_EVENT.as_bytes()]);
    for p in [d.file("utf8.json", &doc), d.gz("utf8.json.gz", &doc)] {
        let t = try_load(&p, false).unwrap();
        assert_eq!(t.cpu.len(), 3);
        assert!(
            warning_codes(&t).contains(&"invalid-utf8"),
            "{:?}",
            t.warnings
        );
        assert!(t.cpu.iter().any(|e| t.name(e.name) == "caf\u{fffd}"));
    }
}

#[test]
fn raw_control_characters_are_escaped_with_a_warning() {
    let d = Dir::new("bad-ctl");
    let bad = GOOD_EVENT.replace("aten::mm", "a\tb\u{1}c\nd");
    let doc = trace_of(&[GOOD_EVENT.as_bytes(), bad.as_bytes()]);
    let p = d.file("ctl.json", &doc);
    let t = try_load(&p, false).unwrap();
    assert_eq!(t.cpu.len(), 2);
    assert!(
        warning_codes(&t).contains(&"control-chars"),
        "{:?}",
        t.warnings
    );
    assert!(t.cpu.iter().any(|e| t.name(e.name) == "a\tb\u{1}c\nd"));
}

#[test]
fn unescaped_quotes_in_names_are_kept_with_a_warning() {
    let d = Dir::new("bad-quotes");
    let bad = GOOD_EVENT.replace("aten::mm", r#"say "hi" {now}"#);
    let bad2 = GOOD_EVENT.replace("aten::mm", r#"<lambda "x">"#);
    let doc = trace_of(&[bad.as_bytes(), GOOD_EVENT.as_bytes(), bad2.as_bytes()]);
    let p = d.file("quotes.json", &doc);
    let t = try_load(&p, false).unwrap();
    assert_eq!(t.cpu.len(), 3, "{:?}", t.warnings);
    assert!(warning_codes(&t).contains(&"unescaped-quotes"));
    let names: Vec<&str> = t.cpu.iter().map(|e| t.name(e.name)).collect();
    assert!(names.contains(&r#"say "hi" {now}"#), "{names:?}");
    assert!(names.contains(&r#"<lambda "x">"#), "{names:?}");
}

#[test]
fn an_event_beyond_repair_is_skipped_with_a_warning() {
    let d = Dir::new("bad-skip");
    let doc = trace_of(&[
        GOOD_EVENT.as_bytes(),
        br#"{"ph": "X", "ts": 1, "args": {"a": 1,}}"#,
        br#"{"ph": "X", "cat": "cpu_op", "name": "n", "ts": N/A, "dur": NaN, "pid": 1, "tid": 1}"#,
        GOOD_EVENT.as_bytes(),
    ]);
    let p = d.file("skip.json", &doc);
    let t = try_load(&p, false).unwrap();
    assert_eq!(t.source.events, 4);
    let codes = warning_codes(&t);
    assert!(codes.contains(&"skipped-event"), "{codes:?}");
    assert!(codes.contains(&"bare-tokens"), "{codes:?}");
    assert!(codes.contains(&"missing-ts"), "{codes:?}");
    assert_eq!(t.cpu.len(), 2);
}

#[test]
fn odd_but_valid_values_are_read_not_rejected() {
    let d = Dir::new("bad-odd");
    let doc = trace_of(&[
        br#"{"ph": "X", "cat": "kernel", "name": "k", "pid": "0", "tid": "stream 7", "ts": "12.25", "dur": 1e1,
            "args": {"correlation": "5", "device": null, "grid": [1.0, 2, 3], "Comms Id": 123456789012345678901234567890}}"#,
        br#"[1, 2]"#,
        br#"{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 12, "dur": 1, "args": {"correlation": 5}}"#,
    ]);
    let p = d.file("odd.json", &doc);
    let t = try_load(&p, false).unwrap();
    // the array between the events is skipped with a warning; nothing else warns
    assert_eq!(warning_codes(&t), ["non-object-event"], "{:?}", t.warnings);
    assert_eq!(t.gpu.len(), 1);
    let g = &t.gpu[0];
    assert_eq!(
        (g.start, g.dur, g.stream, g.correlation),
        (12_250, 10_000, 7, 5)
    );
    assert_ne!(g.launch, u32::MAX);
}
