//! The kind of capture in the HTML and Markdown reports (issue 19), at parity with the
//! terminal: the capture check in every report, server iterations (the rule that found them,
//! their kinds, the time between them), the spans of one process in a folder, and the window
//! (what was counted, left out, compile work, notes). Every figure is checked against the
//! JSON report of the same input, on corpus traces and on traces built here.

mod common;

use std::path::Path;

use common::{ok_stdout, TempDir};
use serde_json::{json, Value};
use stallscope::report::terminal::fmt_us;
use stallscope::report::{html, markdown};

/// The JSON, HTML and Markdown reports of `path` (a file or a folder) with `extra` options.
fn reports(path: &Path, extra: &[&str]) -> (Value, String, String) {
    let p = path.to_str().unwrap();
    let run = |format: &str| ok_stdout(&[&["analyze", p, "--format", format][..], extra].concat());
    let json: Value = serde_json::from_str(&run("json")).expect("valid JSON");
    (json, run("html"), run("md"))
}

/// The HTML section with this id, up to its end.
fn html_section<'a>(page: &'a str, id: &str) -> &'a str {
    let open = format!(r#"<section id="{id}">"#);
    let start = page
        .find(&open)
        .unwrap_or_else(|| panic!("no section {id}"));
    let end = start + page[start..].find("</section>").expect("section closed");
    &page[start..end]
}

/// The Markdown section under the `### title…` heading, up to the next heading.
fn md_section<'a>(md: &'a str, title: &str) -> &'a str {
    let start = md
        .find(&format!("### {title}"))
        .unwrap_or_else(|| panic!("no section {title}:\n{md}"));
    let rest = &md[start + 4..];
    let end = rest.find("\n##").map(|e| e + 1).unwrap_or(rest.len());
    &md[start..start + 4 + end]
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

/// The capture check of both formats holds each issue of the JSON `trust` (id, finding and
/// effect) or, without any, the one line that nothing limits the numbers; it comes right
/// after the diagnosis.
fn assert_capture_check(j: &Value, page: &str, md: &str) {
    let issues = j["trust"]["issues"].as_array().unwrap();
    // `ok` follows the issues that limit the verdict only (level `verdict`)
    let limiting = issues.iter().filter(|i| i["level"] == "verdict").count();
    assert_eq!(j["trust"]["ok"], limiting == 0);
    let h = html_section(page, "capture-check");
    let m = md_section(md, "Capture check");
    let diag = page.find(r#"<section id="diagnosis">"#).unwrap();
    let at = page.find(r#"<section id="capture-check">"#).unwrap();
    assert!(diag < at && at < page.find(r#"<div class="cards">"#).unwrap());
    assert!(md.find("### Capture check").unwrap() < md.find("### Where the average").unwrap());
    if issues.is_empty() {
        assert!(
            h.contains("nothing in this capture limits the numbers"),
            "{h}"
        );
        assert!(
            m.contains("nothing in this capture limits the numbers"),
            "{m}"
        );
        assert!(!h.contains("<li"), "{h}");
        return;
    }
    assert!(
        h.contains(&format!("<h2>Capture check ({})</h2>", issues.len())),
        "{h}"
    );
    assert!(
        m.starts_with(&format!("### Capture check ({})", issues.len())),
        "{m}"
    );
    assert_eq!(h.matches("<li>").count(), issues.len(), "{h}");
    for i in issues {
        let (id, finding, effect) = (s(&i["id"]), s(&i["finding"]), s(&i["effect"]));
        assert!(
            h.contains(&format!(
                "<li><strong><code>{id}</code></strong> {}<br>→ {}</li>",
                html::rich(finding),
                html::rich(effect)
            )),
            "{id} in HTML:\n{h}"
        );
        assert!(
            m.contains(&format!(
                "- **`{id}`** {}\n  → {}\n",
                markdown::rich(finding),
                markdown::rich(effect)
            )),
            "{id} in Markdown:\n{m}"
        );
    }
}

/// mi300 resnet_act_checkpoint: a device clock offset and launches without flows.
#[test]
fn capture_check_with_issues() {
    let Some(p) =
        common::corpus_file("tracelens/tests__traces__mi300__resnet_act_checkpoint.json.gz")
    else {
        return;
    };
    let (j, page, md) = reports(&p, &[]);
    let ids: Vec<&str> = j["trust"]["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| s(&i["id"]))
        .collect();
    assert!(ids.contains(&"clock-offset"), "{ids:?}");
    assert!(ids.contains(&"missing-launch-flows"), "{ids:?}");
    assert_capture_check(&j, &page, &md);
    // ProfilerStep#N: steps, not iterations, and no rule named
    assert_eq!(j["steps_found"]["rule"], "profiler_step");
    assert!(page.contains("<h2>Where each step's time goes</h2>"));
    assert!(!page.contains("found by"));
    assert!(md.contains("<details><summary>Steps (3)</summary>"), "{md}");
    assert!(!md.contains("found by"));
}

/// H100 BERT: nothing limits the numbers.
#[test]
fn capture_check_without_issues() {
    let Some(p) = common::corpus_file(
        "tracelens/tests__traces__h100__gaunernst_bert-small-uncased__1016001.json.gz",
    ) else {
        return;
    };
    let (j, page, md) = reports(&p, &[]);
    assert_eq!(j["trust"]["ok"], true);
    assert_capture_check(&j, &page, &md);
}

/// The iteration parts of both formats: the word, the rule, the kinds and the gaps, each
/// figure as in the JSON report.
fn assert_iterations(j: &Value, page: &str, md: &str) {
    let found = &j["steps_found"];
    let n = j["steps"].as_array().unwrap().len();
    let rule = s(&found["rule"]);
    let found_by = format!(
        "{} (rule <code>{rule}</code>)",
        html::escape(s(&found["description"]))
    );
    let h = html_section(page, "steps");
    assert!(h.starts_with(r#"<section id="steps"><h2>Where each iteration's time goes</h2>"#));
    assert!(h.contains(&format!("Found by: {found_by}.")), "{h}");
    let m = md_section(md, "Where the average iteration goes");
    assert!(
        m.contains(&format!(
            "Found by: {} (rule `{rule}`).",
            markdown::escape(s(&found["description"]))
        )),
        "{m}"
    );
    assert!(m.contains(&format!("<details><summary>Iterations ({n})</summary>")));
    assert!(m.contains("| iteration | total |"), "{m}");
    assert!(page.contains(r#"<div class="k">Average iteration</div>"#));
    assert!(md.contains(&format!(
        "**Average iteration: {}**",
        fmt_us(f(&j["step_time_us"]))
    )));
    // each kind: count, mean duration and mean kernel time
    for p in found["phases"].as_array().unwrap() {
        let kind = format!(
            "{} {} × {} (kernels {})",
            p["count"],
            s(&p["phase"]),
            fmt_us(f(&p["mean_us"])),
            fmt_us(f(&p["mean_kernel_us"]))
        );
        assert!(h.contains(&kind), "{kind}:\n{h}");
        assert!(m.contains(&kind), "{kind}:\n{m}");
    }
    // every iteration's row names its kind
    for st in j["steps"].as_array().unwrap().iter().take(6) {
        if let Some(phase) = st["phase"].as_str() {
            let label = format!("{} {phase}", s(&st["name"]));
            assert!(h.contains(&format!(">{label}</text>")), "{label}:\n{h}");
            assert!(
                m.contains(&format!("| {} |", markdown::escape(&label))),
                "{label}:\n{m}"
            );
        }
    }
    if let Some(g) = found.get("gaps") {
        let gaps = format!(
            "{} on the host (the scheduler) on average over {} gap(s); the GPU had no \
             iteration's work for {} of it ({} in all)",
            fmt_us(f(&g["mean_host_us"])),
            g["count"],
            fmt_us(f(&g["mean_idle_us"])),
            fmt_us(f(&g["idle_total_us"]))
        );
        assert!(h.contains(&html::escape(&gaps)), "{h}");
        assert!(m.contains(&gaps), "{m}");
    }
}

/// Corpus vLLM trace: one mixed iteration found by `vllm_execute`, with a clock offset.
#[test]
fn vllm_corpus_trace_is_iterations_in_every_format() {
    let Some(p) = common::corpus_file(
        "tracelens/tests__traces__inference__vllm_prefilldecode_piecewise__graph_execution.json.gz",
    ) else {
        return;
    };
    let (j, page, md) = reports(&p, &[]);
    assert_eq!(j["steps_found"]["rule"], "vllm_execute");
    assert_eq!(j["steps_found"]["phases"][0]["phase"], "mixed");
    assert_iterations(&j, &page, &md);
    assert_capture_check(&j, &page, &md);
    // the graph replays and compiled code come with the capture check, before the steps
    let at = |needle: &str| page.find(needle).unwrap_or(usize::MAX);
    assert!(at(r#"<section id="capture-check">"#) < at(r#"<section id="compiled">"#));
    assert!(at(r#"<section id="compiled">"#) < at(r#"<section id="steps">"#));
}

/// A kernel of `dur` µs at `ts` launched at `launch` by `cudaLaunchKernel` (with its flow).
fn launched_kernel(ev: &mut Vec<Value>, corr: u64, launch: f64, ts: f64, dur: f64) {
    ev.push(
        json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7,
        "tid": 1, "ts": launch, "dur": 2.0, "args": {"correlation": corr}}),
    );
    ev.push(
        json!({"ph": "s", "id": corr, "pid": 7, "tid": 1, "ts": launch, "cat": "ac2g",
        "name": "ac2g"}),
    );
    ev.push(
        json!({"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7,
        "ts": ts, "dur": dur, "args": {"correlation": corr, "device": 0, "stream": 7}}),
    );
    ev.push(
        json!({"ph": "f", "id": corr, "pid": 0, "tid": 7, "ts": ts, "cat": "ac2g",
        "name": "ac2g", "bp": "e"}),
    );
}

fn kineto(ev: Vec<Value>, device: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": device, "totalGlobalMem": 85899345920u64,
            "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
        "traceEvents": ev,
    }))
    .unwrap()
}

/// A vLLM server: a prefill mark of 2.5 ms with 20 kernels of 100 µs, then five decode marks
/// of 500 µs with 4 kernels each; the scheduler takes 300 µs between marks.
fn vllm_server() -> Vec<u8> {
    let mut ev = Vec::new();
    let mut corr = 1;
    let mut at = 1000.0;
    for i in 0..6 {
        let (mark, host, kernels) = if i == 0 {
            ("execute_context_2(512)_generation_0(0)", 2500.0, 20)
        } else {
            ("execute_context_0(0)_generation_8(8)", 500.0, 4)
        };
        ev.push(
            json!({"ph": "X", "cat": "user_annotation", "name": mark, "pid": 7, "tid": 1,
            "ts": at, "dur": host}),
        );
        for k in 0..kernels {
            let launch = at + 5.0 + 5.0 * k as f64;
            launched_kernel(&mut ev, corr, launch, at + 20.0 + 100.0 * k as f64, 100.0);
            corr += 1;
        }
        at += host + 300.0;
    }
    kineto(ev, "NVIDIA H100 80GB HBM3")
}

/// Server iterations built here: kinds and the scheduler's gaps, by hand and as rendered.
#[test]
fn server_iterations_kinds_and_gaps_in_every_format() {
    let dir = TempDir::new("kinds-vllm");
    let p = dir.file("server.json", &vllm_server());
    let (j, page, md) = reports(Path::new(&p), &[]);
    let found = &j["steps_found"];
    assert_eq!(found["rule"], "vllm_execute");
    // by hand: one prefill (2.5 ms, 2 ms of kernels), five decodes (500 µs, 400 µs of
    // kernels), 300 µs between marks with no iteration's work on the GPU
    let kinds: Vec<(String, u64, f64, f64)> = found["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                s(&p["phase"]).to_string(),
                p["count"].as_u64().unwrap(),
                f(&p["mean_us"]),
                f(&p["mean_kernel_us"]),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("prefill".into(), 1, 2500.0, 2000.0),
            ("decode".into(), 5, 500.0, 400.0)
        ]
    );
    // the window judges the five decodes (the dominant kind, issue 30): four gaps between
    // them; the prefill is compared with them
    let g = &found["gaps"];
    assert_eq!(
        (g["count"].as_u64(), f(&g["mean_host_us"])),
        (Some(4), 300.0)
    );
    assert_eq!(
        (f(&g["mean_idle_us"]), f(&g["idle_total_us"])),
        (300.0, 1200.0)
    );
    assert_eq!(found["phases"][0]["judged"], false);
    assert_eq!(found["phases"][0]["in_window"], 0);
    assert_eq!(f(&found["phases"][0]["vs_judged"]), 5.0);
    assert_eq!(found["phases"][1]["judged"], true);
    assert!(page.contains("1 prefill × 2.50 ms (kernels 2.00 ms), 5.0× a decode, not judged"));
    assert_iterations(&j, &page, &md);
    assert!(page.contains("1 prefill × 2.50 ms (kernels 2.00 ms)"));
    assert!(md.contains("300.0 µs on the host (the scheduler) on average over 4 gap(s)"));
    // --steps selects iterations: the window section says which
    let (j, page, md) = reports(Path::new(&p), &["--steps", "2..4"]);
    assert_eq!(
        j["window"]["steps"],
        json!(["Iteration#2", "Iteration#3", "Iteration#4"])
    );
    let w = html_section(&page, "window");
    assert!(
        w.contains("--steps 2..4 — 3 of 6 steps, Iteration#2 … Iteration#4"),
        "{w}"
    );
    let w = md_section(&md, "Window");
    assert!(
        w.contains("--steps 2..4 — 3 of 6 steps, Iteration#2 … Iteration#4"),
        "{w}"
    );
}

/// One rank's capture: three steps of `step_ms` from `start` µs, one kernel each.
fn capture(start: f64, step_ms: f64) -> Vec<u8> {
    let mut ev = Vec::new();
    for i in 0..3u64 {
        let t = start + i as f64 * step_ms * 1000.0;
        ev.push(json!({"ph": "X", "cat": "user_annotation",
            "name": format!("ProfilerStep#{}", start as u64 / 1_000_000 + i), "pid": 7,
            "tid": 1, "ts": t, "dur": step_ms * 1000.0}));
        ev.push(
            json!({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 1,
            "ts": t + 5.0, "dur": 20.0}),
        );
        launched_kernel(&mut ev, 100 + i, t + 10.0, t + 50.0, step_ms * 500.0);
    }
    kineto(ev, "NVIDIA H100 80GB HBM3")
}

/// The per-span table and the notes of a folder's report, in both formats.
fn assert_spans(j: &Value, page: &str, md: &str) {
    let groups = j["ranks"]["spans"].as_array().unwrap();
    assert!(!groups.is_empty());
    let h = html_section(page, "spans");
    for g in groups {
        let title = format!(
            "Spans of rank {} ({} captures of process {}, one row above)",
            g["rank"],
            g["spans"].as_array().unwrap().len(),
            g["pid"]
        );
        assert!(h.contains(&format!("<h2>{title}</h2>")), "{h}");
        let m = md_section(md, &title);
        let spans = g["spans"].as_array().unwrap();
        assert_eq!(h.matches("<tr><td data-v=").count(), spans.len(), "{h}");
        for (i, sp) in spans.iter().enumerate() {
            let file = stallscope::text::file_name(s(&sp["path"]));
            let steps = if sp["first_step"] == sp["last_step"] {
                s(&sp["first_step"]).to_string()
            } else {
                format!("{} … {}", s(&sp["first_step"]), s(&sp["last_step"]))
            };
            let compile = if f(&sp["compile_us"]) > 0.0 {
                fmt_us(f(&sp["compile_us"]))
            } else {
                "-".into()
            };
            let cells = [
                (i + 1).to_string(),
                format!("+{}", fmt_us(f(&sp["offset_us"]))),
                format!("{} ({steps})", sp["steps"]),
                fmt_us(f(&sp["step_time_us"])),
                compile,
            ];
            assert!(h.contains(&html::escape(&file)), "{file}:\n{h}");
            let file = stallscope::text::shorten_middle(&file, 36);
            let row = m
                .lines()
                .find(|l| l.starts_with(&format!("| {} | ", i + 1)))
                .unwrap_or_else(|| panic!("span {}:\n{m}", i + 1));
            assert!(row.contains(&markdown::escape(&file)), "{row}");
            for c in &cells {
                assert!(row.contains(&format!("| {c} |")), "{c}: {row}");
                assert!(
                    h.contains(&format!(">{}</td>", html::escape(c))),
                    "{c}:\n{h}"
                );
            }
        }
        for n in g["notes"].as_array().unwrap() {
            assert!(h.contains(&html::rich(s(n))), "{n}:\n{h}");
            assert!(
                m.contains(&format!("- note: {}", markdown::rich(s(n)))),
                "{n}:\n{m}"
            );
        }
    }
}

/// Two captures of worker 0 by one process (pid 7), the second with steps 1.5× as long:
/// one rank with two spans and a note saying how they differ.
#[test]
fn spans_of_one_process_that_differ() {
    let dir = TempDir::new("kinds-spans");
    dir.file("worker0.1.pt.trace.json", &capture(1_000_000.0, 10.0));
    dir.file("worker0.2.pt.trace.json", &capture(5_000_000.0, 15.0));
    let (j, page, md) = reports(&dir.0, &[]);
    let g = &j["ranks"]["spans"][0];
    assert_eq!((g["rank"].as_i64(), g["pid"].as_i64()), (Some(0), Some(7)));
    assert_eq!(f(&g["spans"][1]["offset_us"]), 4_000_000.0);
    let notes = g["notes"].as_array().unwrap();
    assert!(notes.iter().any(|n| s(n).contains("1.50×")), "{notes:?}");
    assert_spans(&j, &page, &md);
    // the spans come with the ranks, before the shown rank's own report
    assert!(page.find(r#"<section id="spans">"#) < page.find(r#"<section id="diagnosis">"#));
    let text = ok_stdout(&["analyze", dir.0.to_str().unwrap()]);
    for n in notes {
        assert!(text.contains(&s(n)[..20]), "terminal: {n}");
    }
}

/// tensorboard_trace_handler's two captures of the ResNet-50 worker (corpus): alike, no note.
#[test]
fn spans_of_the_tbprof_worker() {
    let Some([a, b]) = common::tbprof_worker0_captures() else {
        return;
    };
    let dir = TempDir::new("kinds-tbprof");
    std::os::unix::fs::symlink(&a, dir.0.join("worker0.1623143089861.pt.trace.json.gz")).unwrap();
    std::os::unix::fs::symlink(&b, dir.0.join("worker0.1623143566756.pt.trace.json.gz")).unwrap();
    let (j, page, md) = reports(&dir.0, &[]);
    let g = &j["ranks"]["spans"][0];
    assert_eq!(g["spans"].as_array().unwrap().len(), 2);
    assert_eq!(g["notes"].as_array().unwrap().len(), 0);
    assert_spans(&j, &page, &md);
    let row =
        "| 1 | worker0.1623143089….pt.trace.json.gz | +0 | 6 (ProfilerStep#5 … ProfilerStep#10) | \
               177.59 ms | - |";
    assert!(md.contains(row), "{md}");
}

/// The window section of both formats: how it was chosen, what was left out and why, compile
/// work and the notes, as in the JSON report.
fn assert_window(j: &Value, page: &str, md: &str) {
    let w = &j["window"];
    let h = html_section(page, "window");
    let m = md_section(md, "Window");
    assert!(h.contains(&fmt_us(f(&w["duration_us"]))), "{h}");
    assert!(m.contains(&fmt_us(f(&w["duration_us"]))), "{m}");
    for e in w["excluded"].as_array().unwrap() {
        let line = format!("{}: {}", s(&e["step"]), s(&e["reason"]));
        assert!(h.contains(&html::escape(&line)), "{line}:\n{h}");
        assert!(m.contains(&markdown::escape(&line)), "{line}:\n{m}");
    }
    for n in w["notes"].as_array().unwrap() {
        assert!(h.contains(&html::escape(s(n))), "{n}:\n{h}");
        assert!(m.contains(&markdown::escape(s(n))), "{n}:\n{m}");
    }
    if f(&w["compile_us"]) > 0.0 {
        let c = format!(
            "{} in {} span(s)",
            fmt_us(f(&w["compile_us"])),
            w["compile"]["count"]
        );
        assert!(h.contains(&c), "{c}:\n{h}");
        assert!(m.contains(&c), "{c}:\n{m}");
        for k in w["compile"]["by_kind"].as_array().unwrap() {
            let kind = format!(" {}", fmt_us(f(&k["us"])));
            assert!(h.contains(&kind), "{kind}:\n{h}");
            assert!(m.contains(&kind), "{kind}:\n{m}");
        }
    } else {
        assert!(h.contains("torch.compile/autotune work"), "{h}");
    }
}

#[test]
fn window_with_a_step_left_out_and_a_note() {
    let Some(p) = common::corpus_file(
        "hta/tests__data__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    ) else {
        return;
    };
    let (j, page, md) = reports(&p, &[]);
    assert_eq!(j["window"]["excluded"].as_array().unwrap().len(), 1);
    // the missing peak table, and that the one step kept is the only one (issue 30)
    let notes = j["window"]["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        s(&notes[0]).starts_with("ProfilerStep#1 is the only step"),
        "{notes:?}"
    );
    assert_window(&j, &page, &md);
    assert!(page.contains("excluded</strong> ProfilerStep#2: trailing step without device work"));
}

#[test]
fn window_with_compile_work() {
    let Some(p) = common::corpus_file(
        "tracelens/tests__traces__perf_model__normalization__normalization_layer_test.json.gz",
    ) else {
        return;
    };
    let (j, page, md) = reports(&p, &[]);
    assert!(f(&j["window"]["compile_us"]) > 3000.0);
    assert_window(&j, &page, &md);
}

#[test]
fn window_of_the_resnet_sample() {
    let p = common::sample("resnet50_v100_num_workers_0.pt.trace.json.gz");
    let (j, page, md) = reports(&p, &[]);
    assert_window(&j, &page, &md);
    let line =
        "steady state (auto) — 6 of 6 steps, ProfilerStep#5 … ProfilerStep#10, 1.07 s counted";
    assert!(html_section(&page, "window").contains(line));
    assert!(md_section(&md, "Window").contains(line));
    assert!(md.contains(
        "nothing excluded: no torch.compile/autotune work, no step over 1.5× the median"
    ));
}
