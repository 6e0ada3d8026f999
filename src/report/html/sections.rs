//! The HTML page's sections other than the charts: the diagnosis, the headline cards, the
//! window and the capture check, CUDA graphs and compiled code, the sortable kernel, operator,
//! efficiency, device and rank tables, and the reading notes.

use std::fmt::Write as _;

use super::charts::{cat_index, CAT_COLORS};
use super::{escape, n1, n3, num_td, rich};
use crate::report::mirrors::FindingInfo;
use crate::report::units::{fmt_pct, fmt_us};
use crate::report::{layout, Report};
use crate::text::shorten_middle;

/// The verdict and the findings, ranked by the time each would recover.
pub(super) fn diagnosis(s: &mut String, r: &Report) {
    if r.verdict.is_empty() && r.findings.is_empty() {
        return;
    }
    s.push_str(r#"<section id="diagnosis">"#);
    if !r.verdict.is_empty() {
        w!(
            s,
            r#"<div class="verdict"><span class="vlabel">Verdict</span>{}</div>"#,
            rich(&r.verdict)
        );
    }
    if let Some(e) = &r.efficiency {
        w!(
            s,
            r#"<div class="verdict"><span class="vlabel">Efficiency</span>{}</div>"#,
            escape(&layout::efficiency::efficiency_headline(e))
        );
    }
    if r.findings.is_empty() {
        s.push_str(r#"<p class="note">No finding: nothing here would recover a noticeable share of the step.</p>"#);
    } else {
        w!(
            s,
            r#"<p class="note">{}, by the time each fix could recover per step (an upper bound; pools of time are never claimed twice). Open one for its evidence and what to do.</p>"#,
            layout::findings::count(r.findings.len())
        );
    }
    for item in layout::findings::items(Some(r), &r.findings) {
        let f = item.finding;
        let sev = f.severity.as_str();
        let share = item.share_clamped();
        w!(
            s,
            r#"<details class="finding sev-{sev}"{}><summary><span class="sev">{sev}</span><span class="ftitle">{}</span><span class="rec">up to {} per step{}</span><span class="recbar"><i style="width:{}%"></i></span></summary><div class="fbody">"#,
            if item.number == 1 && sev != "info" {
                " open"
            } else {
                ""
            },
            rich(&f.title),
            escape(&item.recoverable),
            layout::findings::share_phrase(" · ", share),
            n1(share.unwrap_or(0.0) * 100.0)
        );
        if !f.evidence.facts.is_empty() {
            s.push_str(r#"<ul class="facts">"#);
            list_items(s, &f.evidence.facts);
            s.push_str("</ul>");
        }
        if !f.advice.is_empty() {
            s.push_str(r#"<p class="fh">What to do</p><ul class="advice">"#);
            list_items(s, &f.advice);
            s.push_str("</ul>");
        }
        if !f.evidence.locations.is_empty() {
            s.push_str(r#"<p class="fh">Where to look</p><table class="where"><thead><tr><th class="t">what</th><th class="name">name</th><th class="t">step</th><th>at</th><th>duration</th></tr></thead><tbody>"#);
            for l in &f.evidence.locations {
                w!(
                    s,
                    r#"<tr><td class="t">{}</td><td class="name">{}</td><td class="t">{}</td><td title="trace timestamp {} µs">+{}</td><td>{}</td></tr>"#,
                    escape(&l.what),
                    escape(&shorten_middle(&l.name, 140)),
                    escape(l.step.as_deref().unwrap_or("-")),
                    n3(r.source.trace_start_us + l.start_us),
                    escape(&fmt_us(l.start_us)),
                    escape(&fmt_us(l.duration_us))
                );
            }
            s.push_str("</tbody></table>");
        }
        finding_end(s, f);
    }
    s.push_str("</section>");
}

/// One `<li>` per line, with its Markdown-like markup ([`rich`]).
fn list_items(s: &mut String, lines: &[String]) {
    for l in lines {
        w!(s, "<li>{}</li>", rich(l));
    }
}

/// The end of a finding's body: how its bound was computed and its rule, closing the
/// `<details>`.
fn finding_end(s: &mut String, f: &FindingInfo) {
    w!(
        s,
        r#"<p class="basis">Bound: {} <span class="rule">rule <code>{}</code></span></p></div></details>"#,
        rich(&f.recoverable_basis),
        escape(f.id)
    );
}

pub(super) fn cards(s: &mut String, r: &Report) {
    s.push_str(r#"<div class="cards">"#);
    let card = |s: &mut String, k: &str, v: &str, sub: &str| {
        w!(
            s,
            r#"<div class="card"><div class="k">{}</div><div class="v">{}</div><div class="s">{}</div></div>"#,
            escape(k),
            escape(v),
            escape(sub)
        );
    };
    let (average, over) = layout::average_step(r);
    card(s, &average, &fmt_us(r.step_time_us), &over);
    if r.step_time_us > 0.0 {
        let largest = &layout::step_parts_ranked(r)[0];
        card(
            s,
            "Largest part of a step",
            &format!("{} {}", largest.label, largest.share),
            &format!("{} of {}", largest.time, fmt_us(r.step_time_us)),
        );
    }
    for d in r.devices.iter().take(4) {
        if d.utilization.is_some() {
            card(
                s,
                &format!("GPU {} kernel utilization", d.id),
                &fmt_pct(d.utilization),
                &format!(
                    "SM efficiency {} · occupancy {}",
                    fmt_pct(d.sm_efficiency),
                    fmt_pct(d.achieved_occupancy)
                ),
            );
        }
    }
    for g in r.gpu_timeline.iter().take(4) {
        card(
            s,
            &format!("GPU {} idle", g.device),
            &layout::gpu_split(g)[3].share,
            &format!(
                "{} of {} (all streams{})",
                fmt_us(g.idle_us),
                fmt_us(g.total_us),
                if layout::timeline_spans_window(r, g) {
                    ""
                } else {
                    ", first to last activity"
                }
            ),
        );
    }
    s.push_str("</div>");
}

/// The capture-check notes of the figures a section prints ([`layout::figure_notes`]), a
/// caveat paragraph each, pushed before the section closes.
pub(super) fn figure_notes(s: &mut String, r: &Report, figures: &[&str]) {
    for n in layout::figure_notes(r, figures) {
        w!(s, r#"<p class="note warn">Note: {}.</p>"#, escape(n));
    }
}

pub(super) fn kernels_table(s: &mut String, r: &Report, top: usize) {
    let n = layout::kernel_rows(r).count();
    if n == 0 {
        return copies_table(s, r, top);
    }
    let rows = layout::kernels(r, top);
    w!(
        s,
        r#"<section id="kernels"><h2>Top kernels</h2><p class="note">{} of {n} distinct kernels, by total time; click a column to sort.</p>"#,
        rows.len(),
    );
    s.push_str(r#"<div class="tablewrap"><table class="sortable"><thead><tr><th data-type="num">#</th><th class="name">kernel</th><th class="t">category</th><th data-type="num">calls</th><th data-type="num" aria-sort="descending">total</th><th data-type="num">mean</th><th data-type="num">min</th><th data-type="num">max</th><th data-type="num">share</th><th data-type="num">occupancy</th><th class="t">tensor cores</th></tr></thead><tbody>"#);
    let max_share = layout::kernel_rows(r).map(|k| k.share).fold(0.0, f64::max);
    for row in &rows {
        let k = row.kernel;
        w!(s, r#"<tr><td data-v="{}">{}</td>"#, row.rank, row.rank);
        w!(
            s,
            r#"<td class="name" title="{}">{}</td>"#,
            escape(&k.name),
            escape(&shorten_middle(&k.name, 110))
        );
        w!(
            s,
            r#"<td class="t"><i class="sw" style="background:{}"></i>{}</td>"#,
            CAT_COLORS[cat_index(k.category)],
            row.category
        );
        num_td(s, k.calls as f64, &row.calls);
        num_td(s, k.total_us, &row.total);
        num_td(s, k.mean_us, &row.mean);
        num_td(s, k.min_us, &row.min);
        num_td(s, k.max_us, &row.max);
        let bar = if max_share > 0.0 {
            k.share / max_share * 60.0
        } else {
            0.0
        };
        w!(
            s,
            r#"<td data-v="{}"><span class="bar" style="width:{}px"></span>{}</td>"#,
            n3(k.share),
            n1(bar),
            row.share
        );
        match k.occupancy_pct {
            Some(o) if o.is_finite() => num_td(s, o, &row.occupancy),
            _ => s.push_str(r#"<td data-v="">-</td>"#),
        }
        w!(s, r#"<td class="t">{}</td></tr>"#, row.tensor_core);
    }
    s.push_str("</tbody></table></div>");
    figure_notes(s, r, &["kernels"]);
    s.push_str("</section>");
    copies_table(s, r, top);
}

/// The copy and fill rows of the kernel table.
fn copies_table(s: &mut String, r: &Report, top: usize) {
    let n = layout::copy_rows(r).count();
    if n == 0 {
        return;
    }
    let rows = layout::copies(r, top);
    w!(
        s,
        r#"<section id="copies"><h2>Copies and fills</h2><p class="note">{} of {n} distinct copies and fills, by total time; share of copy and fill time; bandwidth = bytes ÷ device time. Click a column to sort.</p>"#,
        rows.len(),
    );
    s.push_str(r#"<div class="tablewrap"><table class="sortable"><thead><tr><th data-type="num">#</th><th class="name">copy or fill</th><th class="t">direction</th><th data-type="num">calls</th><th data-type="num" aria-sort="descending">total</th><th data-type="num">mean</th><th data-type="num">bytes/call</th><th data-type="num">bandwidth</th><th data-type="num">share</th></tr></thead><tbody>"#);
    for row in &rows {
        let k = row.row;
        let c = k.copy.as_ref();
        w!(s, r#"<tr><td data-v="{}">{}</td>"#, row.rank, row.rank);
        w!(
            s,
            r#"<td class="name" title="{}">{}</td>"#,
            escape(&k.name),
            escape(&shorten_middle(&k.name, 110))
        );
        w!(s, r#"<td class="t">{}</td>"#, escape(&row.direction));
        num_td(s, k.calls as f64, &row.calls);
        num_td(s, k.total_us, &row.total);
        num_td(s, k.mean_us, &row.mean);
        match c.and_then(|c| c.bytes_per_call) {
            Some(b) => num_td(s, b, &row.bytes_per_call),
            None => s.push_str(r#"<td data-v="">-</td>"#),
        }
        match c.and_then(|c| c.bandwidth_gbps) {
            Some(g) => num_td(s, g, &row.bandwidth),
            None => s.push_str(r#"<td data-v="">-</td>"#),
        }
        w!(s, r#"<td data-v="{}">{}</td></tr>"#, n3(k.share), row.share);
    }
    s.push_str("</tbody></table></div></section>");
}

pub(super) fn ops_table(s: &mut String, r: &Report, top: usize) {
    if r.ops.is_empty() {
        return;
    }
    let rows = layout::ops(r, top);
    w!(
        s,
        r#"<section id="ops"><h2>Top operators</h2><p class="note">{} of {} distinct operators; host times on the CPU, device times of the kernels they launched (self: their own, total: with their children's). Click a column to sort.</p>"#,
        rows.len(),
        r.ops.len()
    );
    s.push_str(r#"<div class="tablewrap"><table class="sortable"><thead><tr><th data-type="num">#</th><th class="name">operator</th><th data-type="num">calls</th><th data-type="num">host self</th><th data-type="num">host total</th><th data-type="num">device self</th><th data-type="num">device total</th></tr></thead><tbody>"#);
    for row in &rows {
        let o = row.op;
        w!(s, r#"<tr><td data-v="{}">{}</td>"#, row.rank, row.rank);
        w!(
            s,
            r#"<td class="name" title="{}">{}</td>"#,
            escape(&o.name),
            escape(&shorten_middle(&o.name, 110))
        );
        num_td(s, o.calls as f64, &row.calls);
        num_td(s, o.host_self_us, &row.host_self);
        num_td(s, o.host_total_us, &row.host_total);
        num_td(s, o.device_self_us, &row.device_self);
        num_td(s, o.device_total_us, &row.device_total);
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table></div></section>");
}

/// Operators and phases ranked by time lost against their roofline.
pub(super) fn efficiency_table(s: &mut String, r: &Report, top: usize) {
    use layout::efficiency;
    let Some(e) = &r.efficiency else {
        return;
    };
    w!(
        s,
        r#"<section id="efficiency"><h2>Efficiency</h2><p class="note">Per step: {}FLOP and at least {}B moved by the calls with known FLOPs (recorded shapes, or <code>flops</code> from <code>with_flops=True</code>). Operators and top-level phases ranked by the time their kernels lost against the roofline max(FLOPs ÷ peak, bytes ÷ bandwidth); click a column to sort.</p>"#,
        escape(&efficiency::si(e.flops_per_step)),
        escape(&efficiency::si(e.bytes_per_step))
    );
    s.push_str(r#"<div class="tablewrap"><table class="sortable"><thead><tr><th class="t">kind</th><th class="name">name</th><th data-type="num">calls</th><th data-type="num">device / step</th><th data-type="num">FLOP / step</th><th data-type="num">TFLOP/s</th><th data-type="num">GB/s</th><th data-type="num">roofline / step</th><th data-type="num">lost / step</th><th class="t">dtype</th></tr></thead><tbody>"#);
    let rows = e
        .ops
        .iter()
        .take(top)
        .map(|o| ("operator", o))
        .chain(e.phases.iter().take(top).map(|p| ("phase", p)));
    for (kind, x) in rows {
        w!(
            s,
            r#"<tr><td class="t">{}</td><td class="name" title="{}">{}</td>"#,
            kind,
            escape(&x.name),
            escape(&shorten_middle(&x.name, 90))
        );
        let [calls, device, tflops, gbs, roofline, lost] = efficiency::efficiency_cells(x);
        num_td(s, x.calls as f64, &calls);
        num_td(s, x.device_us, &device);
        num_td(s, x.flops, &efficiency::si(x.flops));
        num_td(s, x.achieved_tflops, &tflops);
        num_td(s, x.achieved_gbs, &gbs);
        num_td(s, x.roofline_us.unwrap_or(0.0), &roofline);
        num_td(s, x.lost_us.unwrap_or(0.0), &lost);
        w!(
            s,
            r#"<td class="t">{}</td></tr>"#,
            escape(efficiency::precision_label(x.dtype))
        );
    }
    s.push_str("</tbody></table></div>");
    figure_notes(s, r, &["efficiency"]);
    s.push_str("</section>");
}

/// A folder of ranks: the verdict over the ranks, the sortable per-rank table and the
/// cross-rank findings, before the shown rank's report.
pub(super) fn ranks_section(s: &mut String, sec: &crate::report::ranks::RanksSection) {
    w!(
        s,
        r#"<section id="ranks"><h2>{} ranks <span class="file">{}</span></h2><div class="verdict"><span class="vlabel">Ranks</span>{}</div><p class="note">Per step, GPU split of each rank's main device; median step {}, slowest/median {:.2}×. Below: the full report of rank {} ({}).</p><div class="tablewrap"><table class="sortable"><thead><tr><th data-type="num" aria-sort="ascending">rank</th><th class="t">file</th><th data-type="num">steps</th><th data-type="num">step</th><th data-type="num">kernel util.</th><th data-type="num">computation</th><th data-type="num">exposed comm</th><th data-type="num">overlapped comm</th><th data-type="num">idle</th><th class="t">top finding</th></tr></thead><tbody>"#,
        sec.ranks.len(),
        escape(&sec.folder),
        rich(&sec.verdict),
        escape(&fmt_us(sec.median_step_time_us)),
        sec.spread,
        sec.shown.rank,
        if sec.shown.why == "requested" {
            "--rank"
        } else {
            "the slowest"
        }
    );
    for line in layout::ranks::lines(sec) {
        let row = line.row;
        w!(
            s,
            r#"<tr><td data-v="{}">{}</td><td class="t" title="{}">{}</td><td data-v="{}">{}</td>"#,
            row.rank,
            if line.slowest {
                format!("<strong>{}</strong> (slowest)", row.rank)
            } else {
                row.rank.to_string()
            },
            escape(&row.path),
            escape(&line.name),
            row.steps,
            row.steps
        );
        num_td(s, row.step_time_us, &line.step);
        num_td(s, row.utilization.unwrap_or(0.0), &fmt_pct(row.utilization));
        for (v, text) in line.per_step_us.iter().zip(&line.per_step) {
            num_td(s, *v, text);
        }
        w!(
            s,
            r#"<td class="t">{}</td></tr>"#,
            row.top_finding
                .as_ref()
                .map(|f| format!(
                    "<code>{}</code> {}",
                    escape(&f.id),
                    escape(&fmt_us(f.recoverable_us))
                ))
                .unwrap_or_else(|| "-".into())
        );
    }
    s.push_str("</tbody></table></div>");
    for k in &sec.skipped {
        w!(s, r#"<p class="note">skipped: {}</p>"#, escape(&k.error));
    }
    for d in &sec.duplicates {
        w!(
            s,
            r#"<p class="note">rank {} appears in {} files: {}</p>"#,
            d.rank,
            d.files.len(),
            escape(&d.files.join(", "))
        );
    }
    for f in &sec.findings {
        w!(
            s,
            r#"<details class="finding sev-{}"><summary><span class="sev">{}</span><span class="ftitle">{}</span><span class="rec">up to {} per step</span></summary><div class="fbody"><ul class="facts">"#,
            f.severity.as_str(),
            f.severity.as_str(),
            rich(&f.title),
            escape(&fmt_us(f.recoverable_us))
        );
        list_items(s, &f.evidence.facts);
        s.push_str(r#"</ul><p class="fh">What to do</p><ul class="advice">"#);
        list_items(s, &f.advice);
        s.push_str("</ul>");
        finding_end(s, f);
    }
    s.push_str("</section>");
}

pub(super) fn devices_table(s: &mut String, r: &Report) {
    if r.devices.is_empty() {
        return;
    }
    s.push_str(r#"<section id="devices"><h2>GPUs</h2><div class="tablewrap"><table><thead><tr><th class="t">device</th><th>SMs</th><th>memory</th><th>compute capability</th><th>kernel utilization</th><th>est. SM efficiency</th><th>est. achieved occupancy</th><th>tensor-core share</th></tr></thead><tbody>"#);
    for d in layout::devices(r) {
        w!(
            s,
            r#"<tr><td class="t">{} {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
            d.id,
            escape(d.name),
            d.sms,
            d.memory,
            escape(d.compute_capability),
            d.utilization,
            d.sm_efficiency,
            d.occupancy,
            d.tensor_cores
        );
    }
    s.push_str("</tbody></table></div>");
    figure_notes(s, r, &["gpu_summary"]);
    s.push_str("</section>");
}

/// CUDA/HIP graph replays and compiled code, when the capture has them.
pub(super) fn compiled_section(s: &mut String, r: &Report) {
    let Some(c) = layout::compiled(r) else {
        return;
    };
    w!(
        s,
        r#"<section id="compiled"><h2>{}</h2><ul class="plain">"#,
        c.title
    );
    for i in &c.items {
        if i.warn {
            w!(s, r#"<li class="warn">{}</li>"#, escape(&i.text));
        } else {
            w!(s, "<li><b>{}:</b> {}</li>", i.label, escape(&i.text));
        }
    }
    s.push_str("</ul></section>");
}

/// The reading warnings.
pub(super) fn notes(s: &mut String, r: &Report) {
    if r.warnings.is_empty() {
        return;
    }
    s.push_str(r#"<section id="notes"><h2>Notes</h2><ul class="plain">"#);
    for w in &r.warnings {
        w!(
            s,
            r#"<li class="warn">reading: {} (×{})</li>"#,
            escape(&w.message),
            w.count
        );
    }
    s.push_str("</ul></section>");
}

/// The capture check: what in this capture limits what the numbers mean, each issue with its
/// effect, or the one line that nothing does (the terminal's `Capture check`).
pub(super) fn capture_check(s: &mut String, r: &Report) {
    let c = layout::capture_check(r);
    w!(
        s,
        r#"<section id="capture-check"><h2>{}</h2><p class="note">{}.</p>"#,
        c.title,
        c.lead.as_deref().unwrap_or_default()
    );
    if c.items.is_empty() {
        s.push_str("</section>");
        return;
    }
    s.push_str(r#"<ul class="plain">"#);
    for i in &c.items {
        w!(
            s,
            "<li><strong><code>{}</code></strong> {}<br>→ {}</li>",
            escape(i.label),
            rich(&i.text),
            rich(i.effect.as_deref().unwrap_or_default())
        );
    }
    s.push_str("</ul></section>");
}

/// The window: how it was chosen, what was left out and why, compile work, notes (the
/// terminal's `Window`).
pub(super) fn window_section(s: &mut String, r: &Report) {
    w!(
        s,
        r#"<section id="window"><h2>Window</h2><p class="note">{}</p><ul class="plain">"#,
        escape(&r.window.summary())
    );
    for (label, text) in r.window.lines() {
        if label.is_empty() {
            w!(s, "<li>{}</li>", escape(&text));
        } else {
            w!(s, "<li><strong>{label}</strong> {}</li>", escape(&text));
        }
    }
    s.push_str("</ul></section>");
}

/// The captures of one rank by one process (a repeating profiler schedule): per span its
/// file, start, steps, step time and compile work, and how the spans differ.
pub(super) fn spans_section(s: &mut String, sec: &crate::report::ranks::RanksSection) {
    if sec.spans.is_empty() {
        return;
    }
    s.push_str(r#"<section id="spans">"#);
    for g in &sec.spans {
        w!(s, "<h2>{}</h2>", escape(&g.title()));
        s.push_str(r#"<div class="tablewrap"><table class="sortable"><thead><tr>"#);
        let [span, file, starts, steps, time, compile] = crate::report::ranks::SPAN_COLUMNS;
        w!(
            s,
            r#"<th data-type="num" aria-sort="ascending">{span}</th><th class="t">{file}</th><th data-type="num">{starts}</th><th class="t">{steps}</th><th data-type="num">{time}</th><th data-type="num">{compile}</th></tr></thead><tbody>"#
        );
        for (i, p) in g.spans.iter().enumerate() {
            let [starts, steps, time, compile] = p.cells();
            w!(
                s,
                r#"<tr><td data-v="{n}">{n}</td><td class="t" title="{}">{}</td>"#,
                escape(&p.path),
                escape(&crate::text::file_name(&p.path)),
                n = i + 1
            );
            num_td(s, p.offset_us, &starts);
            w!(s, r#"<td class="t">{}</td>"#, escape(&steps));
            num_td(s, p.step_time_us, &time);
            num_td(s, p.compile_us, &compile);
            s.push_str("</tr>");
        }
        s.push_str("</tbody></table></div>");
        for n in &g.notes {
            w!(s, r#"<p class="note">note: {}</p>"#, rich(n));
        }
    }
    s.push_str("</section>");
}
