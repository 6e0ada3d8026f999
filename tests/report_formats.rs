//! The HTML, Markdown and CSV reports, end to end through the binary: hostile names from the
//! trace are escaped everywhere, Markdown tables keep their columns, CSV round-trips, and the
//! command line rejects `--format csv` without `--view`.

mod common;

use common::{ok_stdout, stallscope};

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("stallscope-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

const SCRIPT: &str = "<script>alert(1)</script>";
const IMG: &str = "\"><img src=x onerror=alert(1)>";
const PIPE: &str = "a|b";
/// More names that break naive renderers: CSV quoting, Markdown blocks and code spans, terminal
/// escapes, and a name far wider than a terminal.
const OTHERS: [&str; 5] = [
    "say \"hi\", then\nnew line",
    "# `tick` *bold*",
    "- [x](y) $m$",
    "\u{1b}[31mred\u{1b}[0m",
    LONG,
];
const LONG: &str = "void very_long_kernel<float, float, float, float, float, float, float, float, \
    float, float, float, float, float, float, float, float, float, float, float>(int, int, int)";

fn hostile() -> Vec<String> {
    let mut v = vec![SCRIPT.to_string(), IMG.to_string(), PIPE.to_string()];
    v.extend(OTHERS.iter().map(|s| s.to_string()));
    v
}

/// A small Kineto trace: two steps; in each, one operator per hostile name launches one
/// kernel with the same hostile name.
fn hostile_trace(dir: &Path) -> PathBuf {
    let mut ev: Vec<Value> = Vec::new();
    let mut ext = 100u64;
    let mut corr = 1000u64;
    for step in 0..2u64 {
        let t0 = 1_000.0 + step as f64 * 1_000.0;
        ext += 1;
        ev.push(
            json!({"ph": "X", "cat": "user_annotation", "name": format!("ProfilerStep#{step}"),
            "pid": 1, "tid": 1, "ts": t0, "dur": 900.0, "args": {"External id": ext}}),
        );
        for (i, name) in hostile().iter().enumerate() {
            ext += 1;
            corr += 1;
            let ts = t0 + 10.0 + i as f64 * 100.0;
            ev.push(
                json!({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1,
                "ts": ts, "dur": 50.0, "args": {"External id": ext}}),
            );
            ev.push(
                json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                "pid": 1, "tid": 1, "ts": ts + 5.0, "dur": 10.0,
                "args": {"External id": ext, "correlation": corr}}),
            );
            ev.push(
                json!({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7,
                "ts": ts + 30.0, "dur": 40.0 + i as f64,
                "args": {"External id": ext, "correlation": corr, "device": 0, "stream": 7,
                    "grid": [80, 1, 1], "block": [256, 1, 1]}}),
            );
            ev.push(
                json!({"ph": "s", "id": corr, "pid": 1, "tid": 1, "ts": ts + 5.0,
                "cat": "ac2g", "name": "ac2g"}),
            );
            ev.push(
                json!({"ph": "f", "id": corr, "pid": 0, "tid": 7, "ts": ts + 30.0,
                "cat": "ac2g", "name": "ac2g", "bp": "e"}),
            );
        }
    }
    let trace = json!({
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-40GB",
            "totalGlobalMem": 42949672960u64, "computeMajor": 8, "computeMinor": 0,
            "numSms": 108, "warpSize": 32, "maxThreadsPerMultiprocessor": 2048}],
        "traceEvents": ev,
    });
    let p = dir.join("hostile.json");
    std::fs::write(&p, serde_json::to_vec(&trace).unwrap()).unwrap();
    p
}

#[test]
fn hostile_names_are_escaped_in_html() {
    let dir = temp_dir("hostile-html");
    let trace = hostile_trace(&dir);
    let out = dir.join("report.html");
    ok_stdout(&[
        "analyze",
        trace.to_str().unwrap(),
        "--format",
        "html",
        "-o",
        out.to_str().unwrap(),
    ]);
    let html = std::fs::read_to_string(&out).unwrap();
    // the payloads never appear raw, only escaped
    assert!(!html.contains(SCRIPT), "raw <script> payload in HTML");
    assert!(!html.contains("<img"), "raw <img> payload in HTML");
    assert_eq!(
        html.matches("<script").count(),
        1,
        "only the page's own script"
    );
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(html.contains("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"));
    // the names are there, as text: in the kernel and op tables and in the timeline name list
    let escaped = "&lt;script&gt;alert(1)&lt;/script&gt;";
    assert!(
        html.matches(escaped).count() >= 5,
        "expected the name in the kernel and op tables (text and title) and the name list"
    );
    // every element of the timeline refers to a listed name
    let names = html.split(r#"<ol id="names" hidden>"#).nth(1).unwrap();
    let listed = names.split("</ol>").next().unwrap().matches("<li>").count();
    assert!(listed >= hostile().len(), "{listed} names listed");
    for part in html.split("data-n=\"").skip(1) {
        let idx: usize = part[..part.find('"').unwrap()].parse().unwrap();
        assert!(
            idx < listed,
            "data-n={idx} out of the {listed} listed names"
        );
    }
    // the page can fetch nothing and run nothing else
    assert!(html.contains("default-src &#39;none&#39;"));
    std::fs::remove_dir_all(&dir).ok();
}

/// Splits a Markdown table row into cells on the pipes that are not backslash-escaped.
fn md_cells(line: &str) -> usize {
    let b = line.as_bytes();
    let mut pipes = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] == b'|' {
            pipes += 1;
        }
        i += 1;
    }
    pipes - 1
}

#[test]
fn hostile_names_are_escaped_in_markdown_and_tables_keep_their_columns() {
    let dir = temp_dir("hostile-md");
    let trace = hostile_trace(&dir);
    let md = ok_stdout(&[
        "analyze",
        trace.to_str().unwrap(),
        "--format",
        "md",
        "--top",
        "20",
    ]);
    assert!(!md.contains("<script"), "{md}");
    assert!(!md.contains("<img"), "{md}");
    assert!(md.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{md}");
    assert!(md.contains("a\\|b"), "{md}");
    // tables: every row has as many cells as its header
    let mut tables = 0;
    let mut header: Option<usize> = None;
    for line in md.lines() {
        if line.starts_with('|') {
            let n = md_cells(line);
            match header {
                None => {
                    header = Some(n);
                    tables += 1;
                }
                Some(h) => assert_eq!(n, h, "row with {n} cells under a {h}-column header: {line}"),
            }
        } else {
            header = None;
        }
    }
    assert!(
        tables >= 4,
        "expected breakdown, steps, GPU, kernel and op tables:\n{md}"
    );
    // a name's line break or block marker never starts a new block
    for line in md.lines() {
        assert!(
            !line.starts_with("new line"),
            "a line break in a name leaked: {line}"
        );
        assert!(!line.starts_with("# `tick`"), "a heading leaked: {line}");
    }
    // each hostile kernel is in the kernel table, one row each
    let kernels = md.split("### Top kernels").nth(1).expect("kernel table");
    let rows = kernels
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .count();
    assert_eq!(
        rows,
        2 + hostile().len(),
        "header, separator and one row per kernel:\n{md}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A strict RFC 4180 parser (CRLF records, quoted fields with doubled quotes).
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    let mut at_field_start = true;
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    field.push('"');
                } else {
                    quoted = false;
                }
            } else {
                field.push(c);
            }
            continue;
        }
        match c {
            '"' if at_field_start => {
                quoted = true;
                at_field_start = false;
            }
            '"' => panic!("quote inside an unquoted field: {field:?}"),
            ',' => {
                row.push(std::mem::take(&mut field));
                at_field_start = true;
            }
            '\r' => {
                assert_eq!(chars.next(), Some('\n'), "CR without LF");
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
                at_field_start = true;
            }
            '\n' => panic!("bare LF outside quotes"),
            c => {
                field.push(c);
                at_field_start = false;
            }
        }
    }
    assert!(!quoted, "unterminated quoted field");
    assert!(
        field.is_empty() && row.is_empty(),
        "last record without CRLF"
    );
    rows
}

fn json_report(path: &Path) -> Value {
    serde_json::from_str(&ok_stdout(&[
        "analyze",
        path.to_str().unwrap(),
        "--format",
        "json",
    ]))
    .unwrap()
}

fn csv_of(path: &Path, view: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let text = ok_stdout(&[
        "analyze",
        path.to_str().unwrap(),
        "--format",
        "csv",
        "--view",
        view,
    ]);
    let mut rows = parse_csv(&text);
    let header = rows.remove(0);
    for r in &rows {
        assert_eq!(r.len(), header.len(), "{view}: ragged row {r:?}");
    }
    (header, rows)
}

fn col(header: &[String], name: &str) -> usize {
    header
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name} in {header:?}"))
}

#[test]
fn hostile_names_round_trip_through_csv() {
    let dir = temp_dir("hostile-csv");
    let trace = hostile_trace(&dir);
    let r = json_report(&trace);
    for (view, key) in [("kernels", "kernels"), ("ops", "ops")] {
        let (h, rows) = csv_of(&trace, view);
        let names: Vec<&str> = rows.iter().map(|r| r[col(&h, "name")].as_str()).collect();
        // byte for byte, except that a spreadsheet formula gets a leading `'` (CSV injection)
        let defused = |n: &str| {
            if n.starts_with(['=', '+', '-', '@']) {
                format!("'{n}")
            } else {
                n.to_string()
            }
        };
        let expected: Vec<String> = r[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| defused(k["name"].as_str().unwrap()))
            .collect();
        assert_eq!(names, expected, "{view}: names in the JSON order");
        for n in hostile() {
            assert!(
                names.contains(&defused(&n).as_str()),
                "{view}: {n:?} missing"
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn csv_round_trips_the_resnet_sample() {
    let p = common::sample("resnet50_v100_num_workers_0.pt.trace.json.gz");
    let r = json_report(&p);
    let num = |s: &str| {
        s.parse::<f64>()
            .unwrap_or_else(|_| panic!("not a number: {s:?}"))
    };
    // CSV numbers are Rust's shortest round-trip form; serde_json (without its
    // float_roundtrip feature) may parse the JSON side one ulp off
    let same = |a: f64, b: f64| assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} != {b}");

    let (h, rows) = csv_of(&p, "kernels");
    // the kernel rows (the copy and fill rows, with `copy`, are not in the CSV view)
    let kernels: Vec<&serde_json::Value> = r["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k.get("copy").is_none())
        .collect();
    assert_eq!(rows.len(), kernels.len(), "all kernels, one row each");
    assert!(rows.len() > 10);
    for (row, k) in rows.iter().zip(kernels) {
        assert_eq!(row[col(&h, "name")], k["name"].as_str().unwrap());
        assert_eq!(row[col(&h, "category")], k["category"].as_str().unwrap());
        assert_eq!(num(&row[col(&h, "calls")]), k["calls"].as_f64().unwrap());
        same(
            num(&row[col(&h, "total_us")]),
            k["total_us"].as_f64().unwrap(),
        );
        same(num(&row[col(&h, "share")]), k["share"].as_f64().unwrap());
        match k["occupancy_pct"].as_f64() {
            Some(o) => same(num(&row[col(&h, "occupancy_pct")]), o),
            None => assert_eq!(row[col(&h, "occupancy_pct")], ""),
        }
    }
    // the top kernel, as the TensorBoard plugin shows it
    assert!(rows[0][0].contains("dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>"));
    assert_eq!(rows[0][col(&h, "calls")], "162");

    // the copy and fill rows have their own view, with what they moved: 12 pageable uploads
    // of 115,607,040 bytes in 11,492 µs (9,633,920 bytes a call, 10.06 GB/s), checked by hand
    // against the JSON rows' `copy` members
    let (h, rows) = csv_of(&p, "copies");
    assert_eq!(
        h,
        [
            "name",
            "kind",
            "direction",
            "host_memory",
            "calls",
            "total_us",
            "mean_us",
            "min_us",
            "max_us",
            "bytes",
            "bytes_per_call",
            "bandwidth_gbps",
            "share"
        ]
    );
    let copies: Vec<&serde_json::Value> = r["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k.get("copy").is_some())
        .collect();
    assert_eq!(rows.len(), copies.len());
    assert_eq!(rows.len(), 2);
    let up = &rows[0];
    assert_eq!(
        (
            up[col(&h, "name")].as_str(),
            up[col(&h, "direction")].as_str(),
            up[col(&h, "host_memory")].as_str(),
            up[col(&h, "calls")].as_str(),
            up[col(&h, "bytes")].as_str(),
            up[col(&h, "bytes_per_call")].as_str()
        ),
        (
            "Memcpy HtoD (Pageable -> Device)",
            "HtoD",
            "pageable",
            "12",
            "115607040",
            "9633920"
        )
    );
    same(
        num(&up[col(&h, "bandwidth_gbps")]),
        115_607_040.0 / 11_492.0 / 1e3,
    );
    // a fill has no direction or host memory
    assert_eq!(rows[1][col(&h, "kind")], "memset");
    assert_eq!(rows[1][col(&h, "direction")], "");

    let (h, rows) = csv_of(&p, "steps");
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(rows.len(), 6);
    for (row, s) in rows.iter().zip(steps) {
        assert_eq!(row[col(&h, "name")], s["name"].as_str().unwrap());
        let d = num(&row[col(&h, "duration_us")]);
        same(d, s["duration_us"].as_f64().unwrap());
        let parts: f64 = [
            "kernel_us",
            "memcpy_us",
            "memset_us",
            "communication_us",
            "runtime_us",
            "dataloader_us",
            "cpu_exec_us",
            "other_us",
        ]
        .iter()
        .map(|c| num(&row[col(&h, c)]))
        .sum();
        assert!((parts - d).abs() < 1e-6, "parts {parts} != duration {d}");
    }

    let (h, rows) = csv_of(&p, "ops");
    assert_eq!(rows.len(), r["ops"].as_array().unwrap().len());
    assert_eq!(
        rows[0][col(&h, "name")],
        "aten::cudnn_convolution_backward_weight"
    );
    assert_eq!(rows[0][col(&h, "calls")], "318");
}

#[test]
fn phases_in_csv_markdown_and_html() {
    // BERT traced with_modules: a tree of nn.Module phases
    let p = common::sample("h100_bert_small.json.gz");
    let r = json_report(&p);
    let phases = r["phases"].as_array().unwrap();
    assert!(phases.len() > 20);
    let (h, rows) = csv_of(&p, "phases");
    assert_eq!(rows.len(), phases.len());
    for (row, ph) in rows.iter().zip(phases) {
        assert_eq!(row[col(&h, "path")], ph["path"].as_str().unwrap());
        assert_eq!(row[col(&h, "depth")], ph["depth"].to_string());
        let gpu: f64 = row[col(&h, "gpu_us")].parse().unwrap();
        assert!((gpu - ph["gpu_us"].as_f64().unwrap()).abs() <= 1e-9 * gpu.max(1.0));
        let parts: f64 = ["kernel_us", "communication_us", "memcpy_us", "memset_us"]
            .iter()
            .map(|c| row[col(&h, c)].parse::<f64>().unwrap())
            .sum();
        assert!(
            (parts - gpu).abs() < 1e-6,
            "kinds sum to the phase's device time"
        );
    }
    let md = ok_stdout(&["analyze", p.to_str().unwrap(), "--format", "md"]);
    let table = md.split("### Phases").nth(1).expect("phases table");
    assert!(
        table.contains("| nn.Module: BertLMHeadModel\\_0 | 1 |"),
        "{table}"
    );
    assert!(
        table.contains("| &emsp;nn.Module: BertModel\\_0 |"),
        "{table}"
    );
    let html = ok_stdout(&["analyze", p.to_str().unwrap(), "--format", "html"]);
    let chart = html
        .split(r#"data-chart="phases""#)
        .nth(1)
        .expect("phases chart");
    let chart = &chart[..chart.find("</svg>").unwrap()];
    assert!(chart.contains(">nn.Module: BertLMHeadModel_0</text>"));
    // one bar per kind with time: the root launched kernels and a copy
    assert!(chart.matches("<rect").count() > 10);
}

#[test]
fn verdict_and_findings_come_first_in_html_and_markdown() {
    let p = common::sample("resnet50_v100_num_workers_0.pt.trace.json.gz");
    let r = json_report(&p);
    let verdict = r["verdict"].as_str().unwrap();
    let findings = r["findings"].as_array().unwrap();
    assert!(verdict.starts_with("DataLoader-bound"), "{verdict}");
    assert_eq!(findings[0]["id"], "dataloader-stall");

    let html = ok_stdout(&["analyze", p.to_str().unwrap(), "--format", "html"]);
    let diag = html
        .find(r#"<section id="diagnosis">"#)
        .expect("diagnosis section");
    for later in [
        r#"<div class="cards">"#,
        r#"<section id="steps">"#,
        r#"<section id="kernels">"#,
    ] {
        assert!(diag < html.find(later).unwrap(), "diagnosis before {later}");
    }
    assert!(html.contains(&format!(
        r#"<span class="vlabel">Verdict</span>{}</div>"#,
        verdict
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    )));
    assert_eq!(
        html.matches(r#"<details class="finding sev-"#).count(),
        findings.len()
    );
    // the first finding is open, with its facts, advice (code spans) and locations
    assert!(html.contains(r#"<details class="finding sev-high" open>"#));
    assert!(html.contains("<code>DataLoader(..., num_workers=N)</code>"));
    assert!(html.contains("<code>dataloader-stall</code>"));
    assert!(html.contains("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__</td>"));

    let md = ok_stdout(&["analyze", p.to_str().unwrap(), "--format", "md"]);
    let v = md
        .find("> **Verdict:** DataLoader-bound")
        .expect("verdict line");
    let f = md.find("### Findings").expect("findings");
    assert!(v < f && f < md.find("### Where the average step goes").unwrap());
    assert!(
        md.contains("1. **high** · DataLoader stalls the step"),
        "{md}"
    );
    assert!(
        md.contains("`DataLoader(..., num_workers=N)`"),
        "code spans kept"
    );
}

#[test]
fn csv_needs_a_view_and_view_needs_csv() {
    let p = common::sample("a100_triton_example.json.gz");
    let out = stallscope(&["analyze", p.to_str().unwrap(), "--format", "csv"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--view"));
    assert!(out.stdout.is_empty());
    let out = stallscope(&[
        "analyze",
        p.to_str().unwrap(),
        "--format",
        "md",
        "--view",
        "ops",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--view"));
    let out = stallscope(&[
        "analyze",
        p.to_str().unwrap(),
        "--format",
        "csv",
        "--view",
        "nope",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn every_shipped_sample_renders_in_every_format() {
    for entry in std::fs::read_dir(common::sample("")).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.ends_with(".json") || name.ends_with(".json.gz")) {
            continue;
        }
        let html = ok_stdout(&["analyze", p.to_str().unwrap(), "--format", "html"]);
        assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
        assert!(
            html.len() < 600 << 10,
            "{name}: HTML of {} bytes",
            html.len()
        );
        for attr in ["src=", "href="] {
            for part in html.split(attr).skip(1) {
                let v = part.trim_start_matches(['"', '\'']);
                assert!(
                    !v.starts_with("http:") && !v.starts_with("https:") && !v.starts_with("//"),
                    "{name}: external URL in {attr}{}",
                    &part[..part.len().min(60)]
                );
            }
        }
        let md = ok_stdout(&["analyze", p.to_str().unwrap(), "--format", "md"]);
        assert!(md.starts_with("## stallscope: "), "{name}");
        for view in ["kernels", "copies", "ops", "steps"] {
            csv_of(&p, view);
        }
    }
}

#[test]
fn html_report_of_the_resnet_sample() {
    let p = common::sample("resnet50_v100_num_workers_0.pt.trace.json.gz");
    let html = ok_stdout(&["analyze", p.to_str().unwrap(), "--format", "html"]);
    // sections and charts
    for needle in [
        r#"data-chart="steps""#,
        r#"data-chart="gpu-split""#,
        r#"data-chart="timeline-0""#,
        r#"<table class="sortable">"#,
        "ProfilerStep#6",
        "Tesla V100-DGXS-32GB",
        "177.59 ms",
    ] {
        assert!(html.contains(needle), "missing {needle}");
    }
    // per-step bars: 6 steps + the average, each with its non-zero parts
    let steps_svg = html.split(r#"data-chart="steps""#).nth(1).unwrap();
    let steps_svg = &steps_svg[..steps_svg.find("</svg>").unwrap()];
    assert!(steps_svg.matches("<rect").count() >= 7 * 6);
    // the timeline: the median step's 1,516 device events
    let tl = html.split(r#"data-chart="timeline-0""#).nth(1).unwrap();
    let tl = &tl[..tl.find("</svg>").unwrap()];
    assert!(tl.matches("data-s=").count() > 1000, "events drawn");
    assert!(tl.contains(r#"class="gap""#), "idle gaps highlighted");
    assert!(tl.contains(r#"class="hsync""#), "the host sync in the step");
    assert!(html.len() < 400 << 10, "HTML of {} bytes", html.len());
}

/// Runs `stallscope` under a pseudo-terminal (`script`), or `None` when `script` is missing.
fn on_a_tty(args: &[&str], no_color: Option<&str>) -> Option<String> {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("SKIPPED the TTY half: no `script` (util-linux) on PATH");
        return None;
    }
    let bin = env!("CARGO_BIN_EXE_stallscope");
    let cmd = std::iter::once(bin)
        .chain(args.iter().copied())
        .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
        .collect::<Vec<_>>()
        .join(" ");
    let mut c = Command::new("script");
    c.args(["-qec", &cmd, "/dev/null"]).env_remove("NO_COLOR");
    if let Some(v) = no_color {
        c.env("NO_COLOR", v);
    }
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).unwrap().replace("\r\n", "\n"))
}

#[test]
fn terminal_fits_100_columns_shortens_names_and_colours_only_on_a_tty() {
    let dir = temp_dir("terminal");
    let trace = hostile_trace(&dir);
    let t = trace.to_str().unwrap();
    let text = ok_stdout(&["analyze", t, "--top", "20"]);
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "over 100 columns: {line:?}");
        assert!(
            !line.contains('\x1b'),
            "escape code in piped output: {line:?}"
        );
        assert!(
            !line.starts_with("new line"),
            "a name's line break leaked: {line:?}"
        );
    }
    // the long kernel name: cut in the middle, both ends kept; whole in JSON
    let long = text
        .lines()
        .find(|l| l.starts_with("void very_long_kernel<"))
        .expect("the long kernel's row");
    assert!(
        long.contains('…') && long.contains(">(int, int, int)"),
        "{long}"
    );
    let json: Value =
        serde_json::from_str(&ok_stdout(&["analyze", t, "--format", "json"])).unwrap();
    assert!(json["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .any(|k| k["name"] == LONG));
    // asked for colour: colour codes, but a name's own escape sequence is defused
    let coloured = ok_stdout(&["analyze", t, "--color", "always"]);
    assert!(coloured.contains("\x1b[1m"));
    assert!(!coloured.contains("\x1b[31mred"));
    // on a terminal: colour unless NO_COLOR is set and not empty
    if let Some(tty) = on_a_tty(&["analyze", t], None) {
        assert!(tty.contains("\x1b["), "no colour on a TTY:\n{tty}");
        assert!(!tty.contains("\x1b[31mred"));
        for line in tty.lines() {
            let visible = strip_ansi(line);
            assert!(
                visible.chars().count() <= 100,
                "over 100 columns: {visible:?}"
            );
        }
        let plain = on_a_tty(&["analyze", t], Some("1")).unwrap();
        assert!(!plain.contains('\x1b'), "colour despite NO_COLOR=1");
        let empty = on_a_tty(&["analyze", t], Some("")).unwrap();
        assert!(
            empty.contains("\x1b["),
            "an empty NO_COLOR does not disable colour"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
