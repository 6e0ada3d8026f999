//! The report's invariants, shared by the random built traces (`tests/report_invariants.rs`)
//! and every corpus file and sample (`tests/corpus_invariants.rs`). Each violation starts with
//! the id of the check it breaks (`check: what`), so a known-violation list can name it:
//!
//! - `step-parts`: each step's breakdown parts sum to the step's duration;
//! - `timeline-parts`: each device's GPU timeline parts (computation, exposed communication,
//!   exposed copies, idle) sum to its total;
//! - `share-range`: no share above 1 or below 0, no `_pct` above 100, no percentage above 100 %
//!   printed in the verdict or a finding's title;
//! - `window`: the window lies inside the trace (when the trace's span is known);
//! - `recoverable`: no finding's recoverable time exceeds the longest step (when there are
//!   steps);
//! - `verdict-idle`: the verdict's `GPU idle X%` is the `gpu-idle-gaps` finding's `GPU idle X%
//!   of the window` (one figure, one source);
//! - `verdict-dataloader`: the verdict's `DataLoader X% of the step` is the steps' mean
//!   DataLoader share (`breakdown_us.dataloader / step_time_us`);
//! - `busy-utilization`: the busiest device's `utilization` (kernels only, labelled "kernel
//!   utilization" by the renderers) is not above the verdict's busy share (`X% busy`, or
//!   100 − `GPU idle X%`; kernels, copies and fills): the two carry different labels and may
//!   differ (fastvideo: 99.3 % busy, 97.7 % of it copies, 2.3 % kernel utilization), but
//!   kernels are part of busy (checked when the window is one interval);
//! - `count-integral`: a count printed in the verdict or a title (`2.5 syncs`) is an integer
//!   unless labelled an average (`per step`, `per call`, `on average`, `mean`);
//! - `class-sentence`: `verdict_class` matches the sentence's opening words;
//! - `class-carried`: an idle-cause verdict (DataLoader, sync, compile, launch, host, graph
//!   breaks, device stalls, communication, start-up dominates) is carried by a finding above
//!   `info` that names the same cause;
//! - `class-vs-first`: the first finding above `info`, when it names a host-side idle cause,
//!   names the verdict's (an idle-cause verdict);
//! - `sync-evidence`: a Sync-bound verdict has a `host-sync` finding with host time in syncs;
//! - `figure-note`: every printed figure a capture-check issue limits carries a note naming
//!   the issue (`trust.figures`, which every renderer prints beside the figure): an issue
//!   whose `unreliable` classes include one the figure rests on ([`FIGURES`]), and a figure
//!   printed when its section is not empty;
//! - `verdict-comm`: the verdict's `exposed communication X% of the step` is the GPU
//!   timeline's largest `exposed_comm_us` over the window's time (`window.duration_us`: the
//!   mean step is the window over its steps) and the `exposed-communication` finding's share
//!   (one figure, one source);
//! - `verdict-busy`: the verdict's `X% busy` is 100 − the `gpu-idle-gaps` finding's `GPU idle
//!   X% of the window`, when that finding is there (both over the window);
//! - `timeline-window`: where the GPU timeline's idle share (over each device's first to last
//!   activity, TraceLens's hull) differs from the verdict's idle or busy share (over the
//!   window), the timeline's `total_us` says its own span: it is not the window's (one
//!   device);
//! - `trust-level`: `trust.ok` is true exactly when no capture-check issue is of level
//!   `verdict`, and an issue of level `figures` is named in a figure note (`trust.figures`):
//!   it limits the figures printed beside it, not the verdict.
#![allow(dead_code)]

use serde_json::Value;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

/// Every number under a key naming a share (≤ 1) or a percentage (≤ 100), anywhere.
fn check_shares(v: &Value, path: &str, bad: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{path}.{k}");
                if let Some(n) = x.as_f64() {
                    let share = k.contains("share") || k.contains("fraction");
                    let pct = k.ends_with("_pct") || k.ends_with("percent");
                    if (share && !(0.0..=1.0 + 1e-9).contains(&n))
                        || (pct && !(0.0..=100.0 + 1e-6).contains(&n))
                    {
                        bad.push(format!("share-range: {p} = {n}"));
                    }
                }
                check_shares(x, &p, bad);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                check_shares(x, &format!("{path}[{i}]"), bad);
            }
        }
        _ => {}
    }
}

/// The number (possibly with `,` thousands separators and a decimal part) ending just before
/// byte `end` of `s`, with where it starts.
fn number_before(s: &str, end: usize) -> Option<(f64, usize, bool)> {
    let b = s.as_bytes();
    let mut i = end;
    while i > 0 && (b[i - 1].is_ascii_digit() || b[i - 1] == b'.' || b[i - 1] == b',') {
        i -= 1;
    }
    let t = s[i..end].trim_matches(|c| c == ',' || c == '.');
    if t.is_empty() || !t.as_bytes()[0].is_ascii_digit() {
        return None;
    }
    // a minus sign right before
    let neg = i > 0 && b[i - 1] == b'-';
    let frac = t.contains('.');
    t.replace(',', "")
        .parse::<f64>()
        .ok()
        .map(|v| (if neg { -v } else { v }, i, frac))
}

/// Every `N%` printed in `s`.
fn percents(s: &str) -> Vec<f64> {
    s.match_indices('%')
        .filter_map(|(i, _)| number_before(s, i).map(|x| x.0))
        .collect()
}

/// The number printed right before `marker` in `s` (first occurrence).
fn number_at(s: &str, marker: &str) -> Option<f64> {
    let i = s.find(marker)?;
    number_before(s, i).map(|x| x.0)
}

/// Count nouns: a number with a decimal part right before one of them is a count printed as
/// a fraction, unless labelled an average right after.
const COUNT_NOUNS: [&str; 12] = [
    " syncs",
    " host syncs",
    " launches",
    " kernels",
    " gaps",
    " breaks",
    " calls",
    " steps",
    " copies",
    " ranks",
    " graphs",
    " iterations",
];

fn fractional_counts(s: &str, bad: &mut Vec<String>, what: &str) {
    for noun in COUNT_NOUNS {
        for (i, _) in s.match_indices(noun) {
            let Some((v, _, frac)) = number_before(s, i) else {
                continue;
            };
            let after = &s[i + noun.len()..];
            let averaged = [" per ", " a step", " each", " on average", " mean", " avg"]
                .iter()
                .any(|a| after.starts_with(a));
            let before = &s[..i];
            let labelled = before.ends_with("mean") || before.contains("average");
            if frac && v.fract() != 0.0 && !averaged && !labelled {
                bad.push(format!("count-integral: {what}: `{v}{noun}`"));
            }
        }
    }
}

/// The class a verdict sentence opens with (`None`: a sentence this check does not know).
fn class_of_sentence(v: &str) -> Option<&'static str> {
    let starts = [
        ("GPU-bound", "gpu_bound"),
        ("Communication-bound", "communication_bound"),
        ("Timing unreliable", "timing_unreliable"),
        ("Graph breaks", "graph_breaks"),
        ("DataLoader-bound", "dataloader_bound"),
        ("Sync-bound", "sync_bound"),
        ("Compile in the window", "compile"),
        ("CPU launch-bound", "launch_bound"),
        ("Launch-bound (device side)", "launch_bound"),
        ("Host-bound", "host_bound"),
        ("Device-side stalls", "device_stalls"),
        ("Host-only trace", "host_only"),
        (
            "No GPU activity in the analyzed window",
            "no_device_work_in_window",
        ),
        ("Nsight Compute only", "ncu_only"),
    ];
    if v.starts_with("GPU idle") && v.contains("no dominant cause") {
        return Some("idle_unexplained");
    }
    starts
        .iter()
        .find(|(s, _)| v.starts_with(s))
        .map(|(_, c)| *c)
}

/// The finding ids that carry an idle-cause verdict class.
fn carriers(class: &str) -> Option<&'static [&'static str]> {
    Some(match class {
        "dataloader_bound" => &["dataloader-stall"],
        "sync_bound" => &["host-sync"],
        "compile" => &["compile-in-window"],
        "launch_bound" => &["launch-bound", "device-side-gaps"],
        "host_bound" => &["gpu-idle-gaps", "launch-bound", "host-compute"],
        "graph_breaks" => &["graph-breaks"],
        "device_stalls" => &["gpu-idle-gaps", "device-side-gaps"],
        "communication_bound" => &["exposed-communication", "host-communication"],
        "startup_dominates" => &["startup"],
        _ => return None,
    })
}

/// The verdict classes a host-side idle-cause finding names.
fn named_by(id: &str) -> Option<&'static [&'static str]> {
    Some(match id {
        "dataloader-stall" => &["dataloader_bound"],
        "host-sync" => &["sync_bound"],
        "compile-in-window" => &["compile"],
        "launch-bound" => &["launch_bound", "host_bound"],
        "host-compute" => &["host_bound"],
        "device-side-gaps" => &["device_stalls", "launch_bound"],
        "graph-breaks" => &["graph_breaks"],
        "exposed-communication" | "host-communication" => &["communication_bound"],
        "startup" => &["startup_dominates"],
        _ => return None,
    })
}

/// The invariants of one JSON report; `span_us` is the trace's span (µs from its start) when
/// known. The list of what does not hold, each prefixed with its check id.
pub fn violations(r: &Value, span_us: Option<f64>) -> Vec<String> {
    let mut bad = Vec::new();
    // step breakdowns (µs with 3 decimals: a tolerance of a few ns per part)
    let mut longest: f64 = 0.0;
    for s in r["steps"].as_array().into_iter().flatten() {
        let d = f(&s["duration_us"]);
        longest = longest.max(d);
        let parts: f64 = s["breakdown_us"]
            .as_object()
            .map(|m| m.values().map(f).sum())
            .unwrap_or(d);
        if (parts - d).abs() > 0.01 {
            bad.push(format!(
                "step-parts: step {}: parts {parts} ≠ {d}",
                s["name"]
            ));
        }
    }
    // GPU timelines
    for g in r["gpu_timeline"].as_array().into_iter().flatten() {
        let total = f(&g["total_us"]);
        let parts = f(&g["computation_us"])
            + f(&g["exposed_comm_us"])
            + f(&g["exposed_memcpy_us"])
            + f(&g["idle_us"]);
        if (parts - total).abs() > 0.01 {
            bad.push(format!(
                "timeline-parts: gpu {}: parts {parts} ≠ total {total}",
                g["device"]
            ));
        }
    }
    // shares and percentages
    check_shares(r, "", &mut bad);
    let verdict = r["verdict"].as_str().unwrap_or("");
    let findings: Vec<&Value> = r["findings"].as_array().into_iter().flatten().collect();
    let mut texts: Vec<(String, &str)> = vec![("verdict".into(), verdict)];
    for x in &findings {
        texts.push((
            format!("finding {}", x["id"].as_str().unwrap_or("")),
            x["title"].as_str().unwrap_or(""),
        ));
    }
    for (what, s) in &texts {
        for p in percents(s) {
            if !(0.0..=100.0 + 1e-9).contains(&p) {
                bad.push(format!("share-range: {what}: {p}% printed"));
            }
        }
        fractional_counts(s, &mut bad, what);
    }
    // the window inside the trace
    if let Some(span) = span_us {
        let (ws, we) = (f(&r["window"]["start_us"]), f(&r["window"]["end_us"]));
        if ws < -0.001 || we > span + 0.001 || ws > we {
            bad.push(format!("window: {ws}..{we} outside the trace 0..{span}"));
        }
    }
    // recoverable time per step
    // (a report without steps, such as an Nsight Compute CSV alone, has none to compare with)
    for x in findings.iter().filter(|_| longest > 0.0) {
        let rec = f(&x["recoverable_us"]);
        if rec > longest + 0.01 {
            bad.push(format!(
                "recoverable: finding {}: recoverable {rec} > step {longest}",
                x["id"]
            ));
        }
    }
    // verdict figures equal their sections
    let verdict_idle = verdict.find("GPU idle ").and_then(|i| {
        let rest = &verdict[i + "GPU idle ".len()..];
        let end = rest.find('%')?;
        rest[..end].trim().parse::<f64>().ok()
    });
    let gaps = findings
        .iter()
        .find(|x| x["id"] == "gpu-idle-gaps")
        .and_then(|x| x["title"].as_str())
        .and_then(|t| number_at(t, "% of the window"));
    if let (Some(v), Some(g)) = (verdict_idle, gaps) {
        if (v - g).abs() > 0.051 {
            bad.push(format!(
                "verdict-idle: verdict GPU idle {v}% ≠ gpu-idle-gaps {g}%"
            ));
        }
    }
    if let Some(dl) = number_at(verdict, "% of the step") {
        if verdict.contains("DataLoader") && !verdict.starts_with("Host-only") {
            let step = f(&r["step_time_us"]);
            let share = f(&r["breakdown_us"]["dataloader"]) / step.max(1e-9) * 100.0;
            if step > 0.0 && (share - dl).abs() > 0.051 {
                bad.push(format!(
                    "verdict-dataloader: verdict DataLoader {dl}% ≠ steps' mean {share:.2}%"
                ));
            }
        }
    }
    let verdict_busy = number_at(verdict, "% busy").or(verdict_idle.map(|i| 100.0 - i));
    let util = r["devices"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d["utilization"].as_f64())
        .fold(None, |m: Option<f64>, u| Some(m.map_or(u, |m| m.max(u))));
    // kernel utilization (kernels only, over the all-steps span) and the verdict's busy share
    // (kernels, copies and fills over the counted window) carry different labels ("kernel
    // utilization", "busy"): they may differ, but kernels are part of busy, so utilization is
    // never above it
    // (same window only: with excluded steps inside it the summary covers the hull, the
    // verdict the counted time, and `window.notes` says so)
    let w = &r["window"];
    let one_interval = (f(&w["end_us"]) - f(&w["start_us"]) - f(&w["duration_us"])).abs() < 1.0;
    if let (Some(b), Some(u), true) = (verdict_busy, util, one_interval) {
        let u = 100.0 * u;
        if u > b + 1.0 {
            bad.push(format!(
                "busy-utilization: kernel utilization {u:.1}% above the verdict's busy {b:.1}%"
            ));
        }
    }
    // the class
    let class = r["verdict_class"].as_str().unwrap_or("");
    if let Some(c) = class_of_sentence(verdict) {
        if c != class {
            bad.push(format!(
                "class-sentence: class `{class}` for `{}`",
                verdict.chars().take(60).collect::<String>()
            ));
        }
    }
    let above_info: Vec<&&Value> = findings
        .iter()
        .filter(|x| x["severity"].as_str() != Some("info"))
        .collect();
    if let Some(ids) = carriers(class) {
        if !above_info
            .iter()
            .any(|x| ids.contains(&x["id"].as_str().unwrap_or("")))
        {
            bad.push(format!(
                "class-carried: `{class}` verdict with no finding above info among {ids:?}"
            ));
        }
        if let Some(first) = above_info.first() {
            let id = first["id"].as_str().unwrap_or("");
            if let Some(named) = named_by(id) {
                if !named.contains(&class) {
                    bad.push(format!(
                        "class-vs-first: `{class}` verdict, first finding `{id}` names {named:?}"
                    ));
                }
            }
        }
    }
    if class == "sync_bound" {
        let waited = findings
            .iter()
            .filter(|x| x["id"] == "host-sync")
            .map(|x| f(&x["evidence"]["metrics"]["host_wait_us"]))
            .fold(0.0, f64::max);
        if waited <= 0.0 {
            bad.push("sync-evidence: Sync-bound verdict without host time in syncs".into());
        }
    }
    verdict_sections(r, verdict, &findings, verdict_busy, &mut bad);
    figure_notes(r, &mut bad);
    trust_levels(r, &mut bad);
    bad
}

/// `verdict-comm`, `verdict-busy` and `timeline-window` violations: the verdict's busy,
/// idle and communication figures against the sections they come from.
fn verdict_sections(
    r: &Value,
    verdict: &str,
    findings: &[&Value],
    verdict_busy: Option<f64>,
    bad: &mut Vec<String>,
) {
    let timeline: Vec<&Value> = r["gpu_timeline"].as_array().into_iter().flatten().collect();
    if let Some(c) = number_at(verdict, "% of the step")
        .filter(|_| verdict.contains("exposed communication") && !verdict.contains("host-only"))
    {
        // the mean step is the window's time over its steps
        let window = f(&r["window"]["duration_us"]);
        let comm = timeline
            .iter()
            .map(|g| f(&g["exposed_comm_us"]))
            .fold(0.0, f64::max);
        if window > 0.0 {
            let share = 100.0 * comm / window;
            if (share - c).abs() > 0.051 {
                bad.push(format!(
                    "verdict-comm: verdict exposed communication {c}% ≠ GPU timeline's \
                     {share:.2}% of the step"
                ));
            }
        }
        let finding = findings
            .iter()
            .find(|x| x["id"] == "exposed-communication")
            .and_then(|x| x["title"].as_str())
            .and_then(|t| number_at(t, "% of the step"));
        if let Some(x) = finding {
            if (x - c).abs() > 0.051 {
                bad.push(format!(
                    "verdict-comm: verdict exposed communication {c}% ≠ finding's {x}%"
                ));
            }
        }
    }
    let gaps_idle = findings
        .iter()
        .find(|x| x["id"] == "gpu-idle-gaps")
        .and_then(|x| x["title"].as_str())
        .and_then(|t| number_at(t, "% of the window"));
    if let (Some(b), Some(i)) = (number_at(verdict, "% busy"), gaps_idle) {
        if (100.0 - i - b).abs() > 0.051 {
            bad.push(format!(
                "verdict-busy: verdict {b}% busy ≠ 100 − gpu-idle-gaps idle {i}%"
            ));
        }
    }
    // the GPU timeline's idle share is over its own span: where it differs from the verdict's,
    // that span (its `total_us`) is not the window
    let window = f(&r["window"]["duration_us"]);
    // (one device: the verdict's is the busiest of several)
    if let (Some(b), 1) = (verdict_busy, timeline.len()) {
        for g in &timeline {
            let total = f(&g["total_us"]);
            if total <= 0.0 {
                continue;
            }
            let idle = 100.0 * f(&g["idle_us"]) / total;
            // (a difference under 1 µs in all is below what integer-µs traces resolve)
            let apart = (100.0 - b - idle).abs();
            if apart > 0.1 && apart / 100.0 * total >= 1.0 && (total - window).abs() < 0.5 {
                bad.push(format!(
                    "timeline-window: GPU timeline idle {idle:.1}% over the window's \
                     {window} µs, the verdict's busy {b}%"
                ));
            }
        }
    }
}

/// `trust-level` violations of a report.
fn trust_levels(r: &Value, bad: &mut Vec<String>) {
    let t = &r["trust"];
    let Some(issues) = t["issues"].as_array() else {
        return;
    };
    let limiting: Vec<&str> = issues
        .iter()
        .filter(|i| i["level"] == "verdict")
        .filter_map(|i| i["id"].as_str())
        .collect();
    if t["ok"].as_bool() != Some(limiting.is_empty()) {
        bad.push(format!(
            "trust-level: ok is {} with issues {limiting:?} limiting the verdict",
            t["ok"]
        ));
    }
    for i in issues.iter().filter(|i| i["level"] == "figures") {
        let id = i["id"].as_str().unwrap_or("");
        let named = t["figures"].as_array().into_iter().flatten().any(|n| {
            n["issues"]
                .as_array()
                .is_some_and(|x| x.iter().any(|x| x == id))
        });
        if !named {
            bad.push(format!(
                "trust-level: `{id}` limits figures but no figure note names it"
            ));
        }
    }
}

/// The printed figures (their JSON section) and the classes of numbers each rests on (the
/// rule of docs/rules.md, stated here independently of the code that applies it).
pub const FIGURES: [(&str, &str, &[&str]); 6] = [
    (
        "gpu_summary",
        "devices",
        &["device_busy", "totals", "device_records", "gpu"],
    ),
    (
        "gpu_timeline",
        "gpu_timeline",
        &["device_busy", "totals", "device_records", "gpu"],
    ),
    (
        "steps",
        "steps",
        &[
            "device_busy",
            "totals",
            "device_records",
            "host_device_timing",
            "steady_state",
        ],
    ),
    ("kernels", "kernels", &["device_busy", "totals", "gpu"]),
    (
        "efficiency",
        "efficiency",
        &["device_busy", "totals", "steady_state"],
    ),
    ("communication", "communication", &["comm_sizes"]),
];

/// `figure-note` violations of a report.
fn figure_notes(r: &Value, bad: &mut Vec<String>) {
    let notes = r["trust"]["figures"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for issue in r["trust"]["issues"].as_array().into_iter().flatten() {
        let id = issue["id"].as_str().unwrap_or("");
        let classes: Vec<&str> = issue["unreliable"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c.as_str())
            .collect();
        for (figure, section, rests_on) in FIGURES {
            let printed = match &r[section] {
                Value::Array(a) => !a.is_empty(),
                Value::Object(_) => true,
                _ => false,
            };
            if !printed || !classes.iter().any(|c| rests_on.contains(c)) {
                continue;
            }
            let noted = notes.iter().any(|n| {
                n["figure"] == figure
                    && n["issues"]
                        .as_array()
                        .is_some_and(|i| i.iter().any(|x| x == id))
                    && n["note"].as_str().is_some_and(|t| t.contains(id))
            });
            if !noted {
                bad.push(format!(
                    "figure-note: `{figure}` prints without a note naming `{id}` ({classes:?})"
                ));
            }
        }
    }
}

/// The check id of a violation (`check: …`).
pub fn check_id(v: &str) -> &str {
    v.split(':').next().unwrap_or(v)
}
