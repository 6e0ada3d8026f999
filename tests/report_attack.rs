//! Reports under attack: names from a trace are untrusted wherever they are written. A trace
//! built here names its kernels and operators with terminal escape sequences, spreadsheet
//! formulas, Markdown table breakers and an invalid UTF-8 byte; each output format must carry
//! them as inert text (HTML has its own test in report_formats.rs).

use std::path::PathBuf;
use std::process::Command;

/// Names as they appear in the JSON file (JSON escapes), and as the reader decodes them.
const HOSTILE: [(&str, &str); 7] = [
    (
        r"\u001b[31mred\u001b[0m\u0007",
        "\u{1b}[31mred\u{1b}[0m\u{7}",
    ),
    (r"=cmd|' /C calc'!A0", "=cmd|' /C calc'!A0"),
    ("+SUM(A1:A9)", "+SUM(A1:A9)"),
    ("-2+3+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0"),
    ("@evil(1)", "@evil(1)"),
    (
        r"pipe|back`tick`\n| new row |",
        "pipe|back`tick`\n| new row |",
    ),
    (r"bidi\u202eevil", "bidi\u{202e}evil"),
];

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One step; per hostile name an operator of that name launching a kernel of that name
/// (distinct durations, so every one is in the top tables), and one kernel whose name holds a
/// raw 0xFF byte (invalid UTF-8).
fn hostile_trace(tag: &str) -> (Dir, String) {
    let dir = std::env::temp_dir().join(format!("stallscope-attack-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut ev: Vec<Vec<u8>> = vec![
        br#"{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":20000}"#.to_vec(),
    ];
    let mut names: Vec<Vec<u8>> = HOSTILE.iter().map(|(j, _)| j.as_bytes().to_vec()).collect();
    names.push(b"bad\xffbyte".to_vec());
    for (i, name) in names.iter().enumerate() {
        let t = 100 + i as u64 * 2000;
        let corr = 100 + i;
        let dur = 1000 - i as u64 * 50;
        let named = |pre: String, post: String| {
            let mut e = pre.into_bytes();
            e.extend_from_slice(name);
            e.extend_from_slice(post.as_bytes());
            e
        };
        ev.push(named(
            r#"{"ph":"X","cat":"cpu_op","name":""#.into(),
            format!(r#"","pid":1,"tid":1,"ts":{t},"dur":100,"args":{{"External id":{corr}}}}}"#),
        ));
        ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"correlation":{corr},"External id":{corr}}}}}"#, t + 10).into_bytes());
        ev.push(
            format!(
                r#"{{"ph":"s","cat":"ac2g","id":{corr},"pid":1,"tid":1,"ts":{},"name":"ac2g"}}"#,
                t + 10
            )
            .into_bytes(),
        );
        ev.push(named(
            r#"{"ph":"X","cat":"kernel","name":""#.into(),
            format!(
                r#"","pid":0,"tid":7,"ts":{},"dur":{dur},"args":{{"correlation":{corr},"External id":{corr},"device":0,"stream":7}}}}"#,
                t + 20
            ),
        ));
        ev.push(format!(r#"{{"ph":"f","bp":"e","cat":"ac2g","id":{corr},"pid":0,"tid":7,"ts":{},"name":"ac2g"}}"#, t + 20).into_bytes());
    }
    let mut doc = b"{\"traceEvents\": [\n".to_vec();
    doc.extend_from_slice(&ev.join(&b",\n"[..]));
    doc.extend_from_slice(b"\n]}\n");
    let path = dir.join("hostile.json");
    std::fs::write(&path, doc).unwrap();
    (Dir(dir), path.to_string_lossy().into_owned())
}

/// Standard output of `stallscope analyze PATH ARGS…` (exit 0 required), as bytes.
fn run(path: &str, args: &[&str]) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_stallscope"))
        .arg("analyze")
        .arg(path)
        .args(args)
        .args(["--all", "--top", "0"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // the reading warnings on stderr quote no raw escape either
    assert!(!out.stderr.contains(&0x1b), "ESC on stderr");
    out.stdout
}

#[test]
fn terminal_shows_escape_sequences_as_text() {
    let (_d, p) = hostile_trace("tty");
    let out = String::from_utf8(run(&p, &["-f", "table"])).expect("UTF-8");
    assert!(
        !out.contains('\u{1b}') && !out.contains('\u{7}'),
        "raw escape sent"
    );
    assert!(!out.contains('\u{202e}'), "raw bidi override sent");
    assert!(
        out.contains("\\x1b[31mred"),
        "escape not shown as text:\n{out}"
    );
    assert!(out.contains("bidi\\u{202e}evil"), "{out}");
}

#[test]
fn markdown_keeps_tables_whole() {
    let (_d, p) = hostile_trace("md");
    let out = String::from_utf8(run(&p, &["-f", "md"])).expect("UTF-8");
    assert!(!out.contains('\u{1b}'), "raw escape in Markdown");
    assert!(
        out.contains(r"pipe\|back\`tick\`"),
        "pipes/backticks not escaped"
    );
    // a table row never breaks: every line naming the hostile kernel is one whole row
    let rows: Vec<&str> = out.lines().filter(|l| l.contains("back\\`tick")).collect();
    assert!(!rows.is_empty());
    for r in rows.iter().filter(|r| r.starts_with('|')) {
        assert!(r.ends_with('|'), "row broken: {r}");
        assert!(
            r.contains(r"\| new row \|"),
            "the name's own pipes split the row: {r}"
        );
    }
}

/// A CSV cell as a spreadsheet reads it (RFC 4180 quoting undone).
fn cells(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                out.last_mut().unwrap().push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out
}

#[test]
fn csv_defuses_formulas() {
    let (_d, p) = hostile_trace("csv");
    for view in ["kernels", "ops"] {
        let out = String::from_utf8(run(&p, &["-f", "csv", "--view", view])).expect("UTF-8");
        // records: a quoted line break stays inside its record
        let mut records: Vec<String> = Vec::new();
        let mut open = false;
        for line in out.lines() {
            if open {
                let last = records.last_mut().unwrap();
                last.push('\n');
                last.push_str(line);
            } else {
                records.push(line.to_string());
            }
            open = records.last().unwrap().matches('"').count() % 2 == 1;
        }
        let all: Vec<String> = records.iter().flat_map(|r| cells(r)).collect();
        for (_, name) in &HOSTILE[1..5] {
            assert!(
                all.iter().any(|c| c == &format!("'{name}")),
                "{view}: {name} not defused:\n{out}"
            );
        }
        for c in &all {
            let formula = c.starts_with(['=', '+', '-', '@', '\t', '\r']);
            assert!(
                !formula || c.parse::<f64>().is_ok(),
                "{view}: live formula cell {c:?}"
            );
        }
        // numbers keep their sign
        assert!(!all
            .iter()
            .any(|c| c.starts_with("'-") && c[1..].parse::<f64>().is_ok()));
    }
}

#[test]
fn json_is_valid_utf8_and_keeps_the_names() {
    let (_d, p) = hostile_trace("json");
    let out = run(&p, &["-f", "json"]);
    let text = String::from_utf8(out).expect("JSON output is not UTF-8");
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let kernels: Vec<&str> = v["kernels"]
        .as_array()
        .expect("kernels")
        .iter()
        .filter_map(|k| k["name"].as_str())
        .collect();
    for (_, name) in HOSTILE {
        assert!(kernels.contains(&name), "{name:?} not kept: {kernels:?}");
    }
    assert!(
        kernels.contains(&"bad\u{fffd}byte"),
        "invalid byte not replaced: {kernels:?}"
    );
}

/// A saved summary is untrusted too: its report's fixed words (warning codes, rule and trust
/// ids) are kept for the process's life, so a file claiming thousands of distinct ones, or one
/// huge one, is refused with one line and exit 2 rather than read until memory runs out.
#[test]
fn a_summary_with_endless_fixed_words_is_refused() {
    let (dir, path) = hostile_trace("words");
    let summary = dir.0.join("good.summary.json");
    let out = Command::new(env!("CARGO_BIN_EXE_stallscope"))
        .args(["summarize", &path, "-o"])
        .arg(&summary)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    let warning = |code: String| serde_json::json!({"code": code, "count": 1, "first_offset": null, "message": "m"});
    let cases = [
        (
            "many",
            (0..5000).map(|i| warning(format!("code-{i}"))).collect(),
        ),
        ("long", vec![warning("x".repeat(100_000))]),
    ];
    let merge = |file: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_stallscope"))
            .arg("merge")
            .arg(file)
            .output()
            .unwrap()
    };
    assert_eq!(merge(&summary).status.code(), Some(0));
    for (tag, warnings) in cases {
        v["shown"]["report"]["warnings"] = serde_json::Value::Array(warnings);
        let bad = dir.0.join(format!("{tag}.summary.json"));
        std::fs::write(&bad, serde_json::to_vec(&v).unwrap()).unwrap();
        let out = merge(&bad);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{tag}: {stderr}");
        assert!(
            stderr.contains("not a stallscope report"),
            "{tag}: {stderr}"
        );
        assert_eq!(stderr.trim().lines().count(), 1, "{tag}: {stderr}");
    }
}

/// One capture of worker 0 (pid 7) from `start` µs: three steps of 10 ms with an operator
/// and a kernel each, on a device named `device` (JSON-escaped).
fn span_capture(start: u64, device: &str) -> Vec<u8> {
    let mut ev = Vec::new();
    for i in 0..3u64 {
        let t = start + i * 10_000;
        let corr = 100 + i;
        ev.push(format!(r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{}","pid":7,"tid":1,"ts":{t},"dur":10000}}"#, start / 1_000_000 + i));
        ev.push(format!(
            r#"{{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":7,"tid":1,"ts":{},"dur":20}}"#,
            t + 5
        ));
        ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":7,"tid":1,"ts":{},"dur":2,"args":{{"correlation":{corr}}}}}"#, t + 10));
        ev.push(format!(r#"{{"ph":"X","cat":"kernel","name":"gemm_kernel","pid":0,"tid":7,"ts":{},"dur":5000,"args":{{"correlation":{corr},"device":0,"stream":7}}}}"#, t + 50));
    }
    format!(
        r#"{{"deviceProperties":[{{"id":0,"name":"{device}","totalGlobalMem":85899345920,"computeMajor":9,"computeMinor":0,"numSms":132}}],"traceEvents":[{}]}}"#,
        ev.join(",\n")
    )
    .into_bytes()
}

/// The sections of issue 19 under attack: two captures of one worker whose file names carry
/// HTML, a Markdown table breaker and a terminal escape (the per-span table), on a device
/// whose name does too (the window's note that it has no peak table).
#[test]
fn spans_and_window_carry_hostile_names_as_text() {
    let dir = std::env::temp_dir().join(format!("stallscope-attack-spans-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _d = Dir(dir.clone());
    let device = r#"<img src=x onerror=alert(2)>|dev`x`\u001b[31m"#;
    let files = [
        "worker0.1 <img src=x onerror=alert(1)>|pipe`t`.json",
        "worker0.2 \u{1b}[31mred|x.json",
    ];
    std::fs::write(dir.join(files[0]), span_capture(1_000_000, device)).unwrap();
    std::fs::write(dir.join(files[1]), span_capture(5_000_000, device)).unwrap();
    let p = dir.to_str().unwrap();

    let md = String::from_utf8(run(p, &["-f", "md"])).expect("UTF-8");
    assert!(!md.contains('\u{1b}'), "raw escape in Markdown");
    assert!(!md.contains("<img"), "raw HTML in Markdown");
    let spans = md
        .split("### Spans of rank 0")
        .nth(1)
        .expect("spans section");
    let rows: Vec<&str> = spans
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert_eq!(rows.len(), 4, "header, separator, two spans:\n{spans}");
    for r in &rows[2..] {
        // seven pipes: six cells, the names' own pipes escaped
        let unescaped = r.matches('|').count() - r.matches(r"\|").count();
        assert_eq!(unescaped, 7, "row broken: {r}");
    }
    assert!(
        spans.contains(r"&lt;img src=x onerror=alert(1)&gt;\|pipe\`t\`"),
        "{spans}"
    );
    let window = md.split("### Window").nth(1).expect("window section");
    assert!(
        window.contains(r"&lt;img src=x onerror=alert(2)&gt;\|dev\`x\`"),
        "the device name in the window's note:\n{window}"
    );

    let html = String::from_utf8(run(p, &["-f", "html"])).expect("UTF-8");
    assert!(!html.contains("<img"), "raw <img> in HTML");
    assert!(!html.contains('\u{1b}'), "raw escape in HTML");
    assert_eq!(
        html.matches("<script").count(),
        1,
        "only the page's own script"
    );
    let section = |id: &str| {
        let s = html
            .split(&format!(r#"<section id="{id}">"#))
            .nth(1)
            .unwrap_or_else(|| panic!("no {id} section"));
        s[..s.find("</section>").unwrap()].to_string()
    };
    let spans = section("spans");
    assert!(
        spans.contains("&lt;img src=x onerror=alert(1)&gt;|pipe`t`"),
        "{spans}"
    );
    assert!(
        spans.contains("worker0.2 \u{fffd}[31mred|x.json"),
        "{spans}"
    );
    assert!(section("window").contains("&lt;img src=x onerror=alert(2)&gt;|dev`x`"));

    let text = String::from_utf8(run(p, &["-f", "table"])).expect("UTF-8");
    assert!(!text.contains('\u{1b}'), "raw escape on the terminal");
    assert!(
        text.contains("Spans of rank 0 (2 captures of process 7"),
        "{text}"
    );
    assert!(
        text.contains("\\x1b[31m"),
        "escape not shown as text:\n{text}"
    );
}
