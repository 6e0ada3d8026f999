//! The HTML page's charts, drawn here as inline SVG: the steps' stacked bars, the phase tree,
//! the GPU split, the representative step's device timeline and the memory curve, with the
//! helpers they share (kernel-category colours, axes, legends). Names are escaped and, in
//! the step timeline, listed once in the page's `<ol id="names">` and referred to by index.

use std::fmt::Write as _;

use super::{escape, n1, n3};
use crate::model::classify::KernelCategory;
use crate::report::units::{self, fmt_bytes, fmt_count, fmt_us};
use crate::report::{BreakdownUs, Report, StepDeviceInfo, StepTimelineInfo};
use crate::text::shorten_middle;

/// Kernel categories in display order; `k{index}` is the CSS class of each.
pub(super) const CATEGORIES: [KernelCategory; 11] = [
    KernelCategory::Gemm,
    KernelCategory::Conv,
    KernelCategory::Attention,
    KernelCategory::Elementwise,
    KernelCategory::Reduction,
    KernelCategory::Norm,
    KernelCategory::Memcpy,
    KernelCategory::Memset,
    KernelCategory::Communication,
    KernelCategory::Triton,
    KernelCategory::Other,
];

pub(super) fn cat_index(c: KernelCategory) -> usize {
    CATEGORIES.iter().position(|x| *x == c).unwrap_or(10)
}

pub(super) const CAT_COLORS: [&str; 11] = [
    "#4e79a7", "#59a14f", "#9c6ade", "#a0cbe8", "#f1ce63", "#b6992d", "#f28e2b", "#ffbe7d",
    "#d37295", "#499894", "#bab0ac",
];

/// Colours of the step breakdown roles, in [`BreakdownUs::parts`] order.
pub(super) const ROLE_COLORS: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#ffbe7d", "#b07aa1", "#9c755f", "#edc948", "#59a14f", "#bab0ac",
];

pub(super) const SPLIT_COLORS: [&str; 4] = ["#4e79a7", "#b07aa1", "#f28e2b", "#e15759"];

/// A "nice" tick step (1, 2 or 5 × 10^k) for about `n` ticks over `range`.
pub(super) fn nice_step(range: f64, n: f64) -> f64 {
    if range <= 0.0 || !range.is_finite() {
        return 1.0;
    }
    let raw = range / n;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// Tick label for `v` µs with ticks every `step` µs.
pub(super) fn tick_label(v: f64, step: f64) -> String {
    let (div, unit) = if step >= 1e5 {
        (1e6, "s")
    } else if step >= 100.0 {
        (1e3, "ms")
    } else if step >= 0.1 {
        (1.0, "µs")
    } else {
        (1e-3, "ns")
    };
    let x = v / div;
    let s = step / div;
    let decimals = if s >= 1.0 {
        0
    } else {
        ((-s.log10()) - 1e-9).ceil() as usize
    };
    if v == 0.0 {
        "0".into()
    } else {
        format!("{x:.decimals$} {unit}")
    }
}

/// Axis ticks and gridlines over `[0, range]` µs mapped to `[x0, x0 + width]`.
pub(super) fn axis(s: &mut String, range: f64, x0: f64, width: f64, y_text: f64, y0: f64, y1: f64) {
    let step = nice_step(range, 8.0);
    let mut v = 0.0;
    while v <= range * 1.0001 {
        let x = x0 + v / range.max(1e-9) * width;
        w!(
            s,
            r#"<line class="grid" x1="{x}" x2="{x}" y1="{y0}" y2="{y1}"/><text class="m" x="{x}" y="{y_text}" text-anchor="middle">{}</text>"#,
            escape(&tick_label(v, step)),
            x = n1(x),
        );
        v += step;
    }
}

pub(super) fn legend(s: &mut String, items: &[(&str, &str)]) {
    s.push_str(r#"<div class="legend">"#);
    for (label, color) in items {
        w!(
            s,
            r#"<span><i style="background:{color}"></i>{}</span>"#,
            escape(label)
        );
    }
    s.push_str("</div>");
}

/// Per-step stacked bars of the breakdown, plus the average.
pub(super) fn steps_chart(s: &mut String, r: &Report) {
    if r.steps.is_empty() {
        return;
    }
    let found = &r.steps_found;
    let unit = found.unit();
    w!(
        s,
        r#"<section id="steps"><h2>Where each {unit}'s time goes</h2>"#
    );
    for n in crate::report::layout::figure_notes(r, &["steps"]) {
        w!(s, r#"<p class="note warn">Note: {}.</p>"#, escape(n));
    }
    if found.rule.is_iteration() {
        w!(
            s,
            r#"<p class="note">Found by: {} (rule <code>{}</code>).</p>"#,
            escape(&found.description),
            found.rule.as_str()
        );
        if let Some(k) = found.kinds_line() {
            w!(s, r#"<p class="note">Kinds: {}.</p>"#, escape(&k));
        }
        if let Some(g) = found.gaps_line() {
            w!(
                s,
                r#"<p class="note">Between iterations: {}.</p>"#,
                escape(&g)
            );
        }
    }
    w!(
        s,
        r#"<p class="note">Each {unit} split by what the host and the device were doing, each moment counted once (priority kernel &gt; memcpy &gt; memset &gt; communication &gt; runtime &gt; dataloader &gt; cpu_exec). Hover a bar for the numbers.</p>"#
    );
    let items: Vec<(&str, &str)> = r
        .breakdown_us
        .parts()
        .iter()
        .zip(ROLE_COLORS)
        .map(|((l, _), c)| (*l, c))
        .collect();
    legend(s, &items);

    let n = r.steps.len();
    let mut rows: Vec<Option<(String, f64, &BreakdownUs)>> = Vec::new();
    const SHOW: usize = 60;
    for (i, st) in r.steps.iter().enumerate() {
        if n > SHOW && i == SHOW / 2 {
            rows.push(None);
        }
        if n > SHOW && (SHOW / 2..n - SHOW / 2).contains(&i) {
            continue;
        }
        rows.push(Some((
            st.labelled(&st.name),
            st.duration_us,
            &st.breakdown_us,
        )));
    }
    rows.push(Some(("average".into(), r.step_time_us, &r.breakdown_us)));
    let max = rows
        .iter()
        .flatten()
        .map(|r| r.1)
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let (width, label_w, value_w) = (1200.0, 170.0, 90.0);
    let plot_w = width - label_w - value_w;
    let row_h = 22.0;
    let top = 24.0;
    let height = top + row_h * rows.len() as f64 + 6.0;
    w!(
        s,
        r#"<svg class="chart" data-chart="steps" viewBox="0 0 {width} {height}" role="img" aria-label="Per-step time breakdown">"#,
        height = n1(height)
    );
    axis(s, max, label_w, plot_w, 14.0, 18.0, height - 4.0);
    for (i, row) in rows.iter().enumerate() {
        let y = top + row_h * i as f64;
        let Some((name, total, b)) = row else {
            w!(
                s,
                r#"<text class="m" x="{}" y="{}" text-anchor="end">… {} more {unit}s</text>"#,
                label_w - 8.0,
                n1(y + 15.0),
                n - SHOW
            );
            continue;
        };
        let is_avg = i == rows.len() - 1;
        w!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end"{}>{}</text>"#,
            label_w - 8.0,
            n1(y + 15.0),
            if is_avg { r#" font-weight="600""# } else { "" },
            escape(&shorten_middle(name, 24))
        );
        let mut x = label_w;
        for ((label, v), color) in b.parts().iter().zip(ROLE_COLORS) {
            if *v <= 0.0 {
                continue;
            }
            let wdt = v / max * plot_w;
            w!(
                s,
                r#"<rect x="{}" y="{}" width="{}" height="16" fill="{color}" data-tip="{}"/>"#,
                n3(x),
                n1(y + 3.0),
                n3(wdt.max(0.3)),
                escape(&format!(
                    "{name}: {label} {} ({} of {})",
                    fmt_us(*v),
                    units::share(*v, *total),
                    fmt_us(*total)
                ))
            );
            x += wdt;
        }
        w!(
            s,
            r#"<text class="m" x="{}" y="{}">{}</text>"#,
            n1(x + 6.0),
            n1(y + 15.0),
            escape(&fmt_us(*total))
        );
    }
    s.push_str("</svg></section>");
}

/// Kinds of device work in a phase's bar, with their colours.
pub(super) const PHASE_KINDS: [(&str, &str); 4] = [
    ("kernels", "#4e79a7"),
    ("communication", "#b07aa1"),
    ("memcpy", "#f28e2b"),
    ("memset", "#ffbe7d"),
];

/// The phase tree (annotations, nn.Modules) as bars of the device time each launched.
pub(super) fn phases_chart(s: &mut String, r: &Report) {
    if r.phases.is_empty() {
        return;
    }
    const MAX_ROWS: usize = 30;
    // every root, and the phases below that launched at least 1 % of the device time
    let shown = crate::report::layout::phases::major(r, MAX_ROWS);
    s.push_str(r#"<section id="phases"><h2>Phases</h2>"#);
    w!(
        s,
        r#"<p class="note">Device time launched inside each annotation (record_function range, nn.Module), children included; the share is of all device time in the window. {} of {} phases shown (roots, and phases with at least 1% of the device time).</p>"#,
        shown.len(),
        r.phases.len()
    );
    legend(s, &PHASE_KINDS);
    let max = shown
        .iter()
        .map(|p| p.phase.gpu_us)
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let (width, label_w, value_w) = (1200.0, 340.0, 300.0);
    let plot_w = width - label_w - value_w;
    let row_h = 22.0;
    let height = row_h * shown.len() as f64 + 4.0;
    w!(
        s,
        r#"<svg class="chart" data-chart="phases" viewBox="0 0 {width} {}" role="img" aria-label="Device time per phase">"#,
        n1(height)
    );
    for (i, row) in shown.iter().enumerate() {
        let p = row.phase;
        let y = row_h * i as f64 + 2.0;
        let indent = 14.0 * p.depth.min(12) as f64;
        let chars = ((label_w - 12.0 - indent) / 7.0).max(8.0) as usize;
        w!(
            s,
            r#"<text x="{}" y="{}" data-tip="{}">{}</text>"#,
            n1(indent + 4.0),
            n1(y + 14.0),
            escape(&p.path),
            escape(&shorten_middle(&p.name, chars))
        );
        let b = &p.breakdown_us;
        let mut x = label_w;
        for ((label, color), v) in
            PHASE_KINDS
                .iter()
                .zip([b.kernel, b.communication, b.memcpy, b.memset])
        {
            if v <= 0.0 {
                continue;
            }
            let wdt = v / max * plot_w;
            w!(
                s,
                r#"<rect x="{}" y="{}" width="{}" height="16" fill="{color}" data-tip="{}"/>"#,
                n3(x),
                n1(y + 1.0),
                n3(wdt.max(0.3)),
                escape(&format!("{}: {label} {}", p.path, fmt_us(v)))
            );
            x += wdt;
        }
        w!(
            s,
            r#"<text class="m" x="{}" y="{}">{} · {} · {} call{} · host {}</text>"#,
            n1(label_w + plot_w + 8.0),
            n1(y + 14.0),
            escape(&row.gpu),
            row.gpu_share,
            row.calls,
            units::plural(p.calls as usize),
            escape(&row.cpu_total)
        );
    }
    s.push_str("</svg></section>");
}

/// Per-device split of the GPU timeline as 100 % bars.
pub(super) fn split_chart(s: &mut String, r: &Report) {
    if r.gpu_timeline.is_empty() {
        return;
    }
    s.push_str(r#"<section id="gpu-split"><h2>GPU time split</h2>"#);
    s.push_str(r#"<p class="note">Over each device's first to last activity, on the union of all its streams: computation, communication not hidden by computation, copies not hidden by either, and idle time.</p>"#);
    if let Some(n) = crate::report::layout::timeline_span_note(r) {
        w!(s, r#"<p class="note">Note: {}.</p>"#, escape(&n));
    }
    for n in crate::report::layout::figure_notes(r, &["gpu_timeline"]) {
        w!(s, r#"<p class="note warn">Note: {}.</p>"#, escape(n));
    }
    let labels = [
        "computation",
        "exposed communication",
        "exposed memcpy",
        "idle",
    ];
    let items: Vec<(&str, &str)> = labels.iter().copied().zip(SPLIT_COLORS).collect();
    legend(s, &items);
    let (width, label_w) = (1200.0, 170.0);
    let plot_w = width - label_w - 10.0;
    let row_h = 30.0;
    let height = row_h * r.gpu_timeline.len() as f64 + 4.0;
    w!(
        s,
        r#"<svg class="chart" data-chart="gpu-split" viewBox="0 0 {width} {}" role="img" aria-label="GPU time split">"#,
        n1(height)
    );
    for (i, g) in r.gpu_timeline.iter().enumerate() {
        let y = row_h * i as f64 + 2.0;
        w!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">GPU {} · {}</text>"#,
            label_w - 8.0,
            n1(y + 17.0),
            g.device,
            escape(&fmt_us(g.total_us))
        );
        let vals = [
            g.computation_us,
            g.exposed_comm_us,
            g.exposed_memcpy_us,
            g.idle_us,
        ];
        let mut x = label_w;
        for ((v, label), color) in vals.iter().zip(labels).zip(SPLIT_COLORS) {
            if *v <= 0.0 || g.total_us <= 0.0 {
                continue;
            }
            let wdt = v / g.total_us * plot_w;
            w!(
                s,
                r#"<rect x="{}" y="{}" width="{}" height="24" fill="{color}" data-tip="{}"/>"#,
                n3(x),
                n1(y),
                n3(wdt.max(0.3)),
                escape(&format!(
                    "GPU {}: {label} {} ({})",
                    g.device,
                    fmt_us(*v),
                    units::share(*v, g.total_us)
                ))
            );
            if wdt > 70.0 {
                w!(
                    s,
                    r#"<text x="{}" y="{}" style="fill:#fff" pointer-events="none">{}</text>"#,
                    n1(x + 6.0),
                    n1(y + 16.0),
                    escape(&format!("{label} {}", units::share(*v, g.total_us)))
                );
            }
            x += wdt;
        }
    }
    s.push_str("</svg></section>");
}

/// The representative step, one chart per device.
pub(super) fn timeline_chart(s: &mut String, t: &StepTimelineInfo) {
    s.push_str(r#"<section id="step-timeline">"#);
    w!(
        s,
        r#"<h2>Inside one step: {} <span style="font-weight:400;color:var(--muted)">(median duration, {})</span></h2>"#,
        escape(&t.step),
        escape(&fmt_us(t.duration_us))
    );
    let merged = if t.blocks < t.events {
        format!(
            " {} device events, drawn as {} blocks: events close together on a stream are merged (hover shows how many).",
            fmt_count(t.events),
            fmt_count(t.blocks)
        )
    } else {
        format!(" {} device events.", fmt_count(t.events))
    };
    w!(
        s,
        r#"<p class="note">One lane per stream, kernels coloured by category. Red: the device is idle on all its streams; dashed lines: host synchronization calls; dark marks: device-side syncs. Hover for names and durations; drag across a timeline to zoom in, double-click to zoom out.{}</p>"#,
        escape(&merged)
    );
    let mut present = [false; 11];
    for d in &t.devices {
        for l in &d.lanes {
            for e in &l.events {
                present[cat_index(e.category)] = true;
            }
        }
    }
    let items: Vec<(&str, &str)> = CATEGORIES
        .iter()
        .enumerate()
        .filter(|(i, _)| present[*i])
        .map(|(i, c)| (c.as_str(), CAT_COLORS[i]))
        .collect();
    legend(s, &items);
    s.push_str(r#"<div class="zoombar"><span id="zoominfo" hidden><span></span><button type="button" id="zoomreset">Show the whole step</button></span></div>"#);
    for d in &t.devices {
        device_timeline(s, t, d);
    }
    s.push_str("</section>");
}

pub(super) fn device_timeline(s: &mut String, t: &StepTimelineInfo, d: &StepDeviceInfo) {
    w!(
        s,
        r#"<p class="note"><strong style="color:var(--fg)">GPU {}</strong>: busy {} of the step ({}), idle {} in {} gaps</p>"#,
        d.device,
        escape(&fmt_us(d.busy_us)),
        units::share(d.busy_us, t.duration_us),
        escape(&fmt_us(d.idle_us)),
        fmt_count(d.gap_count)
    );
    let (width, label_w) = (1200.0, 110.0);
    let plot_w = width - label_w - 12.0;
    let range = t.duration_us.max(1e-9);
    // Positions are also written as µs since the step start (`data-s`, `data-d`), from which
    // the script lays elements out again when the user zooms.
    let xs = |us: f64| label_w + (us - t.start_us) / range * plot_w;
    let ws = |us: f64| (us / range * plot_w).max(0.4);
    let rel = |us: f64| n3(us - t.start_us);
    let idle_y = 24.0;
    let has_syncs = !d.syncs.is_empty() || !t.host_syncs.is_empty();
    let sync_y = idle_y + 14.0;
    let lanes_y = if has_syncs {
        sync_y + 16.0
    } else {
        idle_y + 16.0
    };
    // few streams get taller bars
    let bar_h: f64 = if d.lanes.len() <= 3 { 26.0 } else { 16.0 };
    let lane_h = bar_h + 4.0;
    let height = lanes_y + lane_h * d.lanes.len() as f64 + 4.0;
    w!(
        s,
        r#"<svg class="chart timeline" data-chart="timeline-{dev}" data-range="{}" data-x0="{label_w}" data-pw="{}" viewBox="0 0 {width} {}" role="img" aria-label="Device timeline of one step"><defs><clipPath id="clip-{dev}"><rect x="{label_w}" y="0" width="{}" height="{}"/></clipPath></defs><g class="ticks" data-y0="18" data-y1="{}">"#,
        n3(range),
        n1(plot_w),
        n1(height),
        n1(plot_w),
        n1(height),
        n1(height - 2.0),
        dev = d.device,
    );
    axis(s, range, label_w, plot_w, 14.0, 18.0, height - 2.0);
    s.push_str("</g>");
    // lane backgrounds and labels
    w!(
        s,
        r#"<text class="m" x="{}" y="{}" text-anchor="end">idle</text>"#,
        label_w - 8.0,
        n1(idle_y + 9.0)
    );
    if has_syncs {
        w!(
            s,
            r#"<text class="m" x="{}" y="{}" text-anchor="end">syncs</text>"#,
            label_w - 8.0,
            n1(sync_y + 9.0)
        );
    }
    for (i, l) in d.lanes.iter().enumerate() {
        let y = lanes_y + lane_h * i as f64;
        w!(
            s,
            r#"<rect class="lane" x="{label_w}" y="{}" width="{}" height="{bar_h}"/><text x="{}" y="{}" text-anchor="end">stream {}</text>"#,
            n1(y),
            n1(plot_w),
            label_w - 8.0,
            n1(y + bar_h / 2.0 + 4.5),
            l.stream
        );
    }
    w!(s, r#"<g clip-path="url(#clip-{})">"#, d.device);
    // idle bands over all lanes (one path), and one hoverable mark per gap
    let lanes_h = lane_h * d.lanes.len() as f64 - 4.0;
    if !d.gaps.is_empty() {
        w!(
            s,
            r#"<path class="band" data-y="{}" data-h="{}" d=""#,
            n1(lanes_y),
            n1(lanes_h)
        );
        for g in &d.gaps {
            w!(
                s,
                "M{} {}h{}v{}h-{}z",
                n3(xs(g.start_us)),
                n1(lanes_y),
                n3(ws(g.dur_us)),
                n1(lanes_h),
                n3(ws(g.dur_us))
            );
        }
        s.push_str(r#""/>"#);
        for g in &d.gaps {
            w!(
                s,
                r#"<rect class="gap" x="{}" y="{idle_y}" width="{}" height="10" data-s="{}" data-d="{}"/>"#,
                n1(xs(g.start_us)),
                n1(ws(g.dur_us)),
                rel(g.start_us),
                n3(g.dur_us)
            );
        }
    }
    // events
    for (i, l) in d.lanes.iter().enumerate() {
        let y = lanes_y + lane_h * i as f64;
        for e in &l.events {
            w!(
                s,
                r#"<rect x="{}" y="{}" width="{}" height="{bar_h}" class="k{}" data-n="{}" data-s="{}" data-d="{}""#,
                n1(xs(e.start_us)),
                n1(y),
                n1(ws(e.dur_us)),
                cat_index(e.category),
                e.name,
                rel(e.start_us),
                n3(e.dur_us)
            );
            if e.count > 1 {
                w!(
                    s,
                    r#" data-c="{}" data-b="{}""#,
                    e.count,
                    n3(e.busy_us.unwrap_or(e.dur_us))
                );
            }
            s.push_str("/>");
        }
    }
    // syncs: device-side records in the sync row, host calls as dashed lines
    for sy in &d.syncs {
        w!(
            s,
            r#"<rect class="dsync" x="{}" y="{sync_y}" width="{}" height="10" data-n="{}" data-s="{}" data-d="{}" data-tip="device sync {} at +{}"/>"#,
            n3(xs(sy.start_us)),
            n3(ws(sy.dur_us).max(1.5)),
            sy.name,
            rel(sy.start_us),
            n3(sy.dur_us),
            escape(&fmt_us(sy.dur_us)),
            escape(&fmt_us(sy.start_us - t.start_us))
        );
    }
    for sy in &t.host_syncs {
        let x = xs(sy.start_us);
        w!(
            s,
            r#"<line class="hsync" x1="{x}" x2="{x}" y1="{sync_y}" y2="{}" data-s="{st}"/><rect class="hit" x="{}" y="{sync_y}" width="{}" height="10" data-n="{}" data-s="{st}" data-d="{}" data-tip="host sync call {} at +{}"/>"#,
            n1(height - 2.0),
            n3(x - 2.0),
            n3(ws(sy.dur_us).max(4.0)),
            sy.name,
            n3(sy.dur_us),
            escape(&fmt_us(sy.dur_us)),
            escape(&fmt_us(sy.start_us - t.start_us)),
            x = n3(x),
            st = rel(sy.start_us),
        );
    }
    s.push_str("</g></svg>");
}

/// Per device: allocated and reserved memory over the window, the peak marked (hover: what is
/// live at it), the largest allocations marked (hover: their operator).
pub(super) fn memory_chart(s: &mut String, r: &Report) {
    let Some(m) = &r.memory else {
        return;
    };
    s.push_str(r#"<section id="memory"><h2>GPU memory</h2><p class="note">Allocated (solid) and reserved by the caching allocator (dashed) over the window, from the profiler's memory events; each point is the highest allocated value of its slice of time. The circle is the peak (hover: what is live at it, by allocating operator); triangles are the largest allocations (hover: their operator).</p>"#);
    legend(s, &[("allocated", "#4e79a7"), ("reserved", "#f28e2b")]);
    for d in &m.devices {
        if d.points.is_empty() {
            continue;
        }
        let (t0, t1) = (
            d.points[0].t_us,
            d.points[d.points.len() - 1]
                .t_us
                .max(d.points[0].t_us + 1e-3),
        );
        let ymax = d
            .points
            .iter()
            .map(|p| p.allocated.max(p.reserved))
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        let (width, left, right, top, plot_h) = (1200.0, 90.0, 20.0, 16.0, 220.0);
        let plot_w = width - left - right;
        let height = top + plot_h + 34.0;
        let x = |t: f64| left + (t - t0) / (t1 - t0) * plot_w;
        let y = |v: i64| top + plot_h - v.max(0) as f64 / ymax * plot_h;
        w!(
            s,
            r#"<h3>{} <span style="font-weight:400;color:var(--muted)">peak {}{} at +{}{}</span></h3>"#,
            crate::report::layout::memory::memory_device_label(d.device),
            escape(&units::fmt_bytes_signed(d.peak_allocated)),
            d.capacity
                .map(|c| format!(" of {}", fmt_bytes(c)))
                .unwrap_or_default(),
            escape(&fmt_us(d.peak_at_us)),
            if d.reserved_at_peak >= 0 {
                format!(
                    "; reserved {} ({} held by the allocator)",
                    units::fmt_bytes_signed(d.reserved_at_peak),
                    units::fmt_bytes_signed(d.held_at_peak)
                )
            } else {
                String::new()
            }
        );
        w!(
            s,
            r#"<svg class="chart" data-chart="memory" viewBox="0 0 {width} {}" role="img" aria-label="{} memory over the window">"#,
            n1(height),
            crate::report::layout::memory::memory_device_label(d.device)
        );
        for i in 0..=4 {
            let v = ymax * i as f64 / 4.0;
            let yy = y(v as i64);
            w!(
                s,
                r##"<line x1="{left}" x2="{}" y1="{}" y2="{}" stroke="#ddd"/><text class="m" x="{}" y="{}" text-anchor="end">{}</text>"##,
                n1(left + plot_w),
                n1(yy),
                n1(yy),
                n1(left - 6.0),
                n1(yy + 4.0),
                escape(&units::fmt_bytes_signed(v as i64))
            );
        }
        w!(
            s,
            r#"<text class="m" x="{left}" y="{}">+{}</text><text class="m" x="{}" y="{}" text-anchor="end">+{}</text>"#,
            n1(top + plot_h + 16.0),
            escape(&fmt_us(t0)),
            n1(left + plot_w),
            n1(top + plot_h + 16.0),
            escape(&fmt_us(t1))
        );
        let line = |s: &mut String, pts: Vec<(f64, f64)>, style: &str| {
            if pts.is_empty() {
                return;
            }
            s.push_str(r#"<polyline fill="none" "#);
            s.push_str(style);
            s.push_str(r#" points=""#);
            for (px, py) in pts {
                w!(s, "{},{} ", n1(px), n1(py));
            }
            s.push_str(r#""/>"#);
        };
        let reserved: Vec<(f64, f64)> = d
            .points
            .iter()
            .filter(|p| p.reserved >= 0)
            .map(|p| (x(p.t_us), y(p.reserved)))
            .collect();
        line(
            s,
            reserved,
            r##"stroke="#f28e2b" stroke-width="1.5" stroke-dasharray="5 3""##,
        );
        line(
            s,
            d.points
                .iter()
                .map(|p| (x(p.t_us), y(p.allocated)))
                .collect(),
            r##"stroke="#4e79a7" stroke-width="1.5""##,
        );
        // hover strips: one per point, in one transparent group; a point drawn at the same
        // tenth of a pixel as the next is covered by the next's strip and left out
        let strip = plot_w / d.points.len().max(1) as f64;
        s.push_str(r#"<g fill="transparent">"#);
        for (i, p) in d.points.iter().enumerate() {
            let at = n1(x(p.t_us) - strip / 2.0);
            if d.points
                .get(i + 1)
                .is_some_and(|q| n1(x(q.t_us) - strip / 2.0) == at)
            {
                continue;
            }
            w!(
                s,
                r#"<rect x="{}" y="{top}" width="{}" height="{plot_h}" data-tip="{}"/>"#,
                at,
                n3(strip.max(0.5)),
                escape(&format!(
                    "+{}: allocated {}{}",
                    fmt_us(p.t_us),
                    units::fmt_bytes_signed(p.allocated),
                    if p.reserved >= 0 {
                        format!(", reserved {}", units::fmt_bytes_signed(p.reserved))
                    } else {
                        String::new()
                    }
                ))
            );
        }
        s.push_str("</g>");
        for l in &d.largest {
            let (lx, ly) = (x(l.at_us), top + plot_h + 4.0);
            w!(
                s,
                r##"<path d="M{} {}l-4 8h8z" fill="#59a14f" data-tip="{}"/>"##,
                n1(lx),
                n1(ly),
                escape(&format!(
                    "{} allocated at +{} by {} ({}){}",
                    fmt_bytes(l.bytes),
                    fmt_us(l.at_us),
                    l.op,
                    l.phase,
                    l.held_us
                        .map(|h| format!(", held {}", fmt_us(h)))
                        .unwrap_or_default()
                ))
            );
        }
        let live: Vec<String> = d
            .live_at_peak
            .iter()
            .take(5)
            .map(|g| format!("{} ({}) {}", g.op, g.phase, fmt_bytes(g.bytes)))
            .collect();
        w!(
            s,
            r##"<circle cx="{}" cy="{}" r="5" fill="#e15759" data-tip="{}"/>"##,
            n1(x(d.peak_at_us)),
            n1(y(d.peak_allocated)),
            escape(&format!(
                "peak {} at +{}{}",
                units::fmt_bytes_signed(d.peak_allocated),
                fmt_us(d.peak_at_us),
                if live.is_empty() {
                    String::new()
                } else {
                    format!("; live: {}", live.join("; "))
                }
            ))
        );
        s.push_str("</svg>");
        if d.blocks_known && !d.live_at_peak.is_empty() {
            s.push_str(r#"<div class="tablewrap"><table><thead><tr><th class="name">live at the peak: operator</th><th class="t">phase</th><th>blocks</th><th>bytes</th><th>share</th></tr></thead><tbody>"#);
            for g in d.live_at_peak.iter().take(10) {
                w!(
                    s,
                    r#"<tr><td class="name">{}</td><td class="t">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
                    escape(&shorten_middle(&g.op, 90)),
                    escape(&shorten_middle(&g.phase, 60)),
                    fmt_count(g.blocks),
                    escape(&fmt_bytes(g.bytes)),
                    units::share(g.bytes as f64, d.peak_allocated.max(1) as f64)
                );
            }
            s.push_str("</tbody></table></div>");
        }
    }
    s.push_str("</section>");
}
