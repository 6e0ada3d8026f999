//! GitHub-flavoured Markdown, to paste into a pull request or an issue: the verdict and the
//! findings, the capture check, CUDA graphs and compiled code, the headline numbers, the
//! window, where the average step (or server iteration) goes, the GPU split, the phases and
//! the top kernel and operator tables; for a folder, the ranks and the spans of one process
//! first.
//!
//! Every string that comes from the trace (file, step, kernel and operator names) goes through
//! [`escape`], so a name can neither break a table nor inject HTML, links or formatting.

use std::io::{self, Write};

use super::units::{self, fmt_bytes, fmt_count, fmt_pct, fmt_us};
use super::{layout, RenderOptions, Renderer, Report};
use crate::text::shorten_middle;
use crate::text::{code_parts, Part};

/// Markdown for a pull request or an issue.
pub struct Markdown;

/// Kernel, operator and phase names longer than this are shortened in the middle (the JSON
/// and CSV reports keep them whole).
const NAME_WIDTH: usize = 90;

/// Escapes text for GitHub-flavoured Markdown, in a paragraph, a list item or a table cell:
/// Markdown punctuation is backslash-escaped (`|` included, so a table keeps its columns),
/// `<`, `>` and `&` become entities (no raw HTML), line breaks and other control characters
/// become spaces, and a leading block marker (`#`, `-`, `+`, `=`, `1.`, spaces) is neutralised.
pub fn escape(s: &str) -> String {
    escape_at(s, true)
}

/// [`escape`], with the leading-block-marker rules only when `s` starts a line.
fn escape_at(s: &str, line_start: bool) -> String {
    let lead = if line_start {
        s.len() - s.trim_start_matches(' ').len()
    } else {
        0
    };
    let rest = &s[lead..];
    // an ordered-list marker: 1-9 digits, then `.` or `)`, then a space or the end
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let list_dot = line_start
        && (1..=9).contains(&digits)
        && matches!(rest.as_bytes().get(digits), Some(b'.' | b')'))
        && matches!(rest.as_bytes().get(digits + 1), None | Some(b' ' | b'\t'));
    let mut out = String::with_capacity(s.len() + 16);
    out.push_str(&"&#32;".repeat(lead));
    for (i, c) in rest.char_indices() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '$' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '#' | '-' | '+' | '=' | '!' if i == 0 && line_start => {
                out.push('\\');
                out.push(c);
            }
            '.' | ')' if list_dot && i == digits => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Escapes a stallscope-written sentence (a finding's title, facts, advice) in which
/// `` `code` `` marks code: text parts go through [`escape`]; code parts become code spans
/// (no backtick can be inside them, since they are split on backticks; control characters
/// become spaces). An unmatched backtick is escaped as text.
pub fn rich(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 32);
    code_parts(s, |part| match part {
        Part::Code(c) => {
            let code: String = c
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            out.push('`');
            out.push_str(&code);
            out.push('`');
        }
        Part::Tick => out.push_str("\\`"),
        Part::Text { text, first } => out.push_str(&escape_at(text, first)),
    });
    out
}

fn table(
    out: &mut dyn Write,
    headers: &[&str],
    right: &[bool],
    rows: &[Vec<String>],
) -> io::Result<()> {
    writeln!(out, "| {} |", headers.join(" | "))?;
    let seps: Vec<&str> = right
        .iter()
        .map(|r| if *r { "---:" } else { "---" })
        .collect();
    writeln!(out, "|{}|", seps.join("|"))?;
    for r in rows {
        writeln!(out, "| {} |", r.join(" | "))?;
    }
    Ok(())
}

/// Operators and phases ranked by time lost against their roofline, per step (the terminal's
/// Efficiency section).
fn efficiency_section(r: &Report, top: usize, out: &mut dyn Write) -> io::Result<()> {
    use layout::efficiency;
    let Some(e) = &r.efficiency else {
        return Ok(());
    };
    if e.ops.is_empty() && e.phases.is_empty() {
        return Ok(());
    }
    writeln!(out, "### Efficiency")?;
    writeln!(out)?;
    writeln!(out, "{}.", escape(&efficiency::efficiency_subtitle(e)))?;
    writeln!(out)?;
    let row = |name: String, x: &crate::report::mirrors::EfficiencyRowInfo| {
        let mut v = vec![escape(&shorten_middle(&name, NAME_WIDTH))];
        v.extend(efficiency::efficiency_cells(x));
        v
    };
    let rows: Vec<Vec<String>> = e
        .ops
        .iter()
        .take(top.min(10))
        .map(|o| row(o.name.clone(), o))
        .chain(
            e.phases
                .iter()
                .take(top.min(5))
                .map(|p| row(format!("phase {}", p.name), p)),
        )
        .collect();
    let right: Vec<bool> = (0..efficiency::EFFICIENCY_COLUMNS.len())
        .map(|i| i > 0)
        .collect();
    table(out, &efficiency::EFFICIENCY_COLUMNS, &right, &rows)?;
    writeln!(out)?;
    figure_notes(r, &["efficiency"], out)
}

/// Per device: the memory peak, the allocator's share, churn per step and what is live at
/// the peak (the terminal's memory section).
fn memory_section(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    use layout::memory;
    let Some(m) = &r.memory else {
        return Ok(());
    };
    for d in &m.devices {
        writeln!(out, "### {} memory", memory::memory_device_label(d.device))?;
        writeln!(out)?;
        writeln!(out, "{}.", rich(&memory::memory_summary(d)))?;
        writeln!(out)?;
        let live = memory::live_at_peak(d);
        if live.is_empty() {
            continue;
        }
        let rows: Vec<Vec<String>> = live
            .into_iter()
            .map(|g| {
                vec![
                    escape(&shorten_middle(g.op, NAME_WIDTH)),
                    escape(&shorten_middle(g.phase, 40)),
                    g.blocks,
                    g.bytes,
                    g.share,
                ]
            })
            .collect();
        table(
            out,
            &[
                "live at the peak: operator",
                "phase",
                "blocks",
                "bytes",
                "share",
            ],
            &[false, false, true, true, true],
            &rows,
        )?;
        writeln!(out)?;
    }
    Ok(())
}

/// A folder of ranks: the verdict over the ranks, the per-rank table and the cross-rank
/// findings, before the shown rank's report.
fn ranks_section(sec: &super::ranks::RanksSection, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "## stallscope: {} ranks in {}",
        sec.ranks.len(),
        escape(&sec.folder)
    )?;
    writeln!(out)?;
    writeln!(out, "> **Ranks:** {}", rich(&sec.verdict))?;
    writeln!(out)?;
    writeln!(
        out,
        "Per step, GPU split of each rank's main device; median step {}, slowest/median {:.2}×.",
        fmt_us(sec.median_step_time_us),
        sec.spread
    )?;
    writeln!(out)?;
    let rows: Vec<Vec<String>> = layout::ranks::lines(sec)
        .into_iter()
        .map(|line| {
            let row = line.row;
            let mut cells = vec![
                if line.slowest {
                    format!("**{}** (slowest)", row.rank)
                } else {
                    row.rank.to_string()
                },
                escape(&shorten_middle(&line.name, NAME_WIDTH)),
                fmt_count(row.steps as u64),
                line.step,
                fmt_pct(row.utilization),
            ];
            cells.extend(line.per_step);
            cells.push(
                row.top_finding
                    .as_ref()
                    .map(|f| format!("`{}` {}", f.id, fmt_us(f.recoverable_us)))
                    .unwrap_or_else(|| "-".into()),
            );
            cells
        })
        .collect();
    table(
        out,
        &[
            "rank",
            "file",
            "steps",
            "step",
            "kernel util.",
            "computation",
            "exposed comm",
            "overlapped comm",
            "idle",
            "top finding",
        ],
        &[
            false, false, true, true, true, true, true, true, true, false,
        ],
        &rows,
    )?;
    writeln!(out)?;
    if let Some((what, rows)) = sec.arrival_table() {
        writeln!(out, "**Arrivals:** {}.", escape(&what))?;
        writeln!(out)?;
        let rows: Vec<Vec<String>> = rows
            .iter()
            .map(|r| r.iter().map(|c| rich(c)).collect())
            .collect();
        table(
            out,
            &super::ranks::ARRIVAL_COLUMNS,
            &[false, true, true, true, false],
            &rows,
        )?;
        writeln!(out)?;
    }
    for n in &sec.notes {
        writeln!(out, "> note: {}", rich(n))?;
    }
    for k in &sec.skipped {
        writeln!(out, "> skipped: {}", escape(&k.error))?;
    }
    for d in &sec.duplicates {
        writeln!(
            out,
            "> rank {} appears in {} files: {}",
            d.rank,
            d.files.len(),
            escape(&d.files.join(", "))
        )?;
    }
    if !sec.skipped.is_empty() || !sec.duplicates.is_empty() || !sec.notes.is_empty() {
        writeln!(out)?;
    }
    spans_section(sec, out)?;
    finding_items(&layout::findings::items(None, &sec.findings), out)?;
    if !sec.findings.is_empty() {
        writeln!(out)?;
    }
    writeln!(
        out,
        "The full report of rank {} ({}) follows.{}",
        sec.shown.rank,
        if sec.shown.why == "requested" {
            "`--rank`"
        } else {
            "the slowest"
        },
        sec.shown.story.as_ref().map_or(String::new(), |x| format!(
            " Across the ranks: {}.",
            rich(x)
        ))
    )?;
    writeln!(out)?;
    Ok(())
}

/// The captures of one rank by one process (a repeating profiler schedule): the per-span
/// table and how the spans differ (the terminal's `Spans of rank …`).
fn spans_section(sec: &super::ranks::RanksSection, out: &mut dyn Write) -> io::Result<()> {
    for g in &sec.spans {
        writeln!(out, "### {}", escape(&g.title()))?;
        writeln!(out)?;
        let rows: Vec<Vec<String>> = g
            .spans
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let file = crate::text::file_name(&p.path);
                let mut row = vec![(i + 1).to_string(), escape(&shorten_middle(&file, 36))];
                row.extend(p.cells().iter().map(|c| escape_at(c, false)));
                row
            })
            .collect();
        table(
            out,
            &super::ranks::SPAN_COLUMNS,
            &[true, false, true, false, true, true],
            &rows,
        )?;
        writeln!(out)?;
        for n in &g.notes {
            writeln!(out, "- note: {}", rich(n))?;
        }
        if !g.notes.is_empty() {
            writeln!(out)?;
        }
    }
    Ok(())
}

/// The capture check: what limits the numbers, each issue with its effect, or the one line
/// that nothing does (the terminal's `Capture check`).
fn capture_check(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let c = layout::capture_check(r);
    writeln!(out, "### {}", c.title)?;
    writeln!(out)?;
    if let Some(lead) = &c.lead {
        writeln!(out, "{lead}.")?;
        writeln!(out)?;
    }
    for i in &c.items {
        writeln!(out, "- **`{}`** {}", i.label, rich(&i.text))?;
        if let Some(e) = &i.effect {
            writeln!(out, "  → {}", rich(e))?;
        }
    }
    if !c.items.is_empty() {
        writeln!(out)?;
    }
    Ok(())
}

/// The window: how it was chosen, what was left out and why, compile work, notes (the
/// terminal's `Window`).
fn window_section(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "### Window")?;
    writeln!(out)?;
    writeln!(out, "{}", escape(&r.window.summary()))?;
    writeln!(out)?;
    for (label, text) in r.window.lines() {
        if label.is_empty() {
            writeln!(out, "- {}", escape(&text))?;
        } else {
            writeln!(out, "- {label}: {}", escape(&text))?;
        }
    }
    writeln!(out)
}

/// Under the heading of the steps, for server iterations: the rule that found them, their
/// kinds and the time between them.
fn iterations_found(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let found = &r.steps_found;
    if !found.rule.is_iteration() {
        return Ok(());
    }
    writeln!(
        out,
        "Found by: {} (rule `{}`).",
        escape(&found.description),
        found.rule.as_str()
    )?;
    writeln!(out)?;
    if let Some(k) = found.kinds_line() {
        writeln!(out, "Kinds: {}.", escape(&k))?;
        writeln!(out)?;
    }
    if let Some(g) = found.gaps_line() {
        writeln!(out, "Between iterations: {}.", escape(&g))?;
        writeln!(out)?;
    }
    Ok(())
}

impl Renderer for Markdown {
    fn render(&self, r: &Report, opts: &RenderOptions, out: &mut dyn Write) -> io::Result<()> {
        if let Some(sec) = &r.ranks {
            ranks_section(sec, out)?;
        }
        title(r, out)?;
        headline(r, out)?;
        diagnosis(r, out)?;
        capture_check(r, out)?;
        compiled(r, out)?;
        window_section(r, out)?;
        steps_section(r, out)?;
        gpu_section(r, out)?;
        let top = layout::rows_shown(opts.top);
        efficiency_section(r, top, out)?;
        memory_section(r, out)?;
        phases_section(r, top, out)?;
        kernels_section(r, top, out)?;
        ops_section(r, top, out)
    }
}

/// The title (the file) and what was read.
fn title(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let file = crate::text::file_name(&r.source.path);
    writeln!(out, "## stallscope: {}", escape(&file))?;
    writeln!(out)?;
    writeln!(
        out,
        "{} read {} ({} events).",
        escape(&r.generator),
        fmt_bytes(r.source.bytes),
        fmt_count(r.source.events)
    )?;
    writeln!(out)
}

/// The headline (average step, kernel utilization and idle share per device) and the reading
/// warnings.
fn headline(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let (average, over) = layout::average_step(r);
    let mut head = vec![format!("**{average}: {}** {over}", fmt_us(r.step_time_us))];
    for d in &r.devices {
        if let Some(u) = d.utilization {
            head.push(format!(
                "GPU {} kernel utilization {}",
                d.id,
                fmt_pct(Some(u))
            ));
        }
    }
    for g in &r.gpu_timeline {
        if g.total_us > 0.0 {
            head.push(format!(
                "GPU {} idle {}{}",
                g.device,
                layout::gpu_split(g)[3].share,
                if layout::timeline_spans_window(r, g) {
                    ""
                } else {
                    " of its first to last activity"
                }
            ));
        }
    }
    writeln!(out, "{}", head.join(" · "))?;
    writeln!(out)?;
    for w in &r.warnings {
        writeln!(out, "> warning: {} ×{}", escape(&w.message), w.count)?;
    }
    if !r.warnings.is_empty() {
        writeln!(out)?;
    }
    Ok(())
}

/// The verdict, the efficiency headline and the findings above `info` (at most eight, each
/// with its first facts and advice).
fn diagnosis(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    if !r.verdict.is_empty() {
        writeln!(out, "> **Verdict:** {}", rich(&r.verdict))?;
        writeln!(out)?;
    }
    if let Some(e) = &r.efficiency {
        writeln!(
            out,
            "> **Efficiency:** {}",
            rich(&layout::efficiency::efficiency_headline(e))
        )?;
        writeln!(out)?;
    }
    let (shown, more) = layout::findings::above_info(r, 8);
    if shown.is_empty() {
        return Ok(());
    }
    writeln!(out, "### Findings")?;
    writeln!(out)?;
    finding_items(&shown, out)?;
    if more > 0 {
        writeln!(out)?;
        writeln!(out, "{}.", layout::findings::more_sentence(more))?;
    }
    writeln!(out)
}

/// Findings as a numbered list, each with its first four facts and three pieces of advice;
/// `(12.5% of the step)` after the time when the share is known.
fn finding_items(items: &[layout::findings::FindingItem], out: &mut dyn Write) -> io::Result<()> {
    for item in items {
        let f = item.finding;
        let share = item
            .share_of_step
            .map(|x| format!(" ({} of the step)", units::ratio(x)))
            .unwrap_or_default();
        writeln!(
            out,
            "{}. **{}** · {} — up to {} per step{}",
            item.number,
            f.severity.as_str(),
            rich(&f.title),
            item.recoverable,
            share
        )?;
        for fact in f.evidence.facts.iter().take(4) {
            writeln!(out, "   - {}", rich(fact.trim()))?;
        }
        for a in f.advice.iter().take(3) {
            writeln!(out, "   - *Do:* {}", rich(a))?;
        }
    }
    Ok(())
}

/// CUDA graphs and compiled code, when the capture has them.
fn compiled(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let Some(c) = layout::compiled(r) else {
        return Ok(());
    };
    writeln!(out, "### {}", c.title)?;
    writeln!(out)?;
    for i in &c.items {
        writeln!(out, "- **{}:** {}", i.label, rich(&i.text))?;
    }
    writeln!(out)
}

/// Where the average step goes (its parts, largest first, with their shares), then every step
/// in a fold (the first six and the last five of a long run).
fn steps_section(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let n = r.steps.len();
    if n == 0 {
        return Ok(());
    }
    let unit = r.steps_found.unit();
    writeln!(out, "### Where the average {unit} goes")?;
    writeln!(out)?;
    iterations_found(r, out)?;
    let rows: Vec<Vec<String>> = layout::step_parts_ranked(r)
        .into_iter()
        .filter(|p| p.us > 0.0)
        .map(|p| vec![p.label.to_string(), p.time, p.share])
        .collect();
    table(out, &["part", "time", "share"], &[false, true, true], &rows)?;
    writeln!(out)?;
    figure_notes(r, &["steps"], out)?;

    writeln!(
        out,
        "<details><summary>{} ({n})</summary>",
        r.steps_found.title()
    )?;
    writeln!(out)?;
    let mut headers = vec![unit, "total"];
    headers.extend(r.breakdown_us.parts().iter().map(|(k, _)| *k));
    let right: Vec<bool> = headers.iter().enumerate().map(|(i, _)| i > 0).collect();
    let mut rows = layout::steps::rows(r, |s| escape(&s.label), "**average**");
    for row in &mut rows {
        // the fold: one cell, the rest empty
        row.resize(headers.len().max(row.len()), String::new());
    }
    table(out, &headers, &right, &rows)?;
    writeln!(out)?;
    writeln!(out, "</details>")?;
    writeln!(out)
}

/// The capture-check notes of the figures a section prints ([`layout::figure_notes`]), as a
/// quoted line each under its table.
fn figure_notes(r: &Report, figures: &[&str], out: &mut dyn Write) -> io::Result<()> {
    for n in layout::figure_notes(r, figures) {
        writeln!(out, "> Note: {}.", escape(n))?;
        writeln!(out)?;
    }
    Ok(())
}

/// Per device: its kernel utilization, estimated efficiency and the split of its time.
fn gpu_section(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    if r.devices.is_empty() && r.gpu_timeline.is_empty() {
        return Ok(());
    }
    writeln!(out, "### GPU")?;
    writeln!(out)?;
    let rows: Vec<Vec<String>> = layout::devices(r)
        .into_iter()
        .map(|d| {
            let mut row = vec![
                format!("{} {}", d.id, escape(d.name)),
                d.utilization,
                d.sm_efficiency,
                d.occupancy,
                d.tensor_cores,
            ];
            match r.gpu_timeline.iter().find(|t| t.device == d.id) {
                Some(t) => row.extend(layout::gpu_split(t).map(|p| p.share)),
                None => row.extend(std::iter::repeat_n("-".to_string(), 4)),
            }
            row
        })
        .collect();
    table(
        out,
        &[
            "device",
            "kernel utilization",
            "SM eff.",
            "occupancy",
            "tensor cores",
            "computation",
            "exposed comm",
            "exposed memcpy",
            "idle",
        ],
        &[false, true, true, true, true, true, true, true, true],
        &rows,
    )?;
    writeln!(out)?;
    if let Some(n) = layout::timeline_span_note(r) {
        writeln!(out, "> Note: {}.", escape(&n))?;
        writeln!(out)?;
    }
    figure_notes(r, &["gpu_summary", "gpu_timeline"], out)
}

/// The phases: roots, and children with at least 1 % of the device time.
fn phases_section(r: &Report, top: usize, out: &mut dyn Write) -> io::Result<()> {
    if r.phases.is_empty() {
        return Ok(());
    }
    let shown = layout::phases::major(r, top.min(15));
    writeln!(out, "### Phases ({} of {})", shown.len(), r.phases.len())?;
    writeln!(out)?;
    let rows: Vec<Vec<String>> = shown
        .iter()
        .map(|row| {
            let p = row.phase;
            vec![
                format!(
                    "{}{}",
                    "&emsp;".repeat(p.depth as usize),
                    escape(&shorten_middle(&p.name, NAME_WIDTH))
                ),
                row.calls.clone(),
                row.gpu.clone(),
                row.gpu_share.clone(),
                row.cpu_total.clone(),
            ]
        })
        .collect();
    table(
        out,
        &[
            "phase",
            "calls",
            "device time",
            "of all device time",
            "host time",
        ],
        &[false, true, true, true, true],
        &rows,
    )?;
    writeln!(out)
}

/// The top kernels by total time.
fn kernels_section(r: &Report, top: usize, out: &mut dyn Write) -> io::Result<()> {
    let n = layout::kernel_rows(r).count();
    if n == 0 {
        return copies_section(r, top, out);
    }
    let rows: Vec<Vec<String>> = layout::kernels(r, top)
        .into_iter()
        .map(|k| {
            vec![
                k.rank.to_string(),
                escape(&shorten_middle(&k.kernel.name, NAME_WIDTH)),
                k.category.to_string(),
                k.calls,
                k.total,
                k.mean,
                k.share,
                k.tensor_core.into(),
            ]
        })
        .collect();
    writeln!(out, "### Top kernels ({} of {n})", rows.len())?;
    writeln!(out)?;
    table(
        out,
        &[
            "#", "kernel", "category", "calls", "total", "mean", "share", "TC",
        ],
        &[true, false, false, true, true, true, true, false],
        &rows,
    )?;
    writeln!(out)?;
    figure_notes(r, &["kernels"], out)?;
    copies_section(r, top, out)
}

/// The top copies and fills by total time (rows of the kernel table).
fn copies_section(r: &Report, top: usize, out: &mut dyn Write) -> io::Result<()> {
    let n = layout::copy_rows(r).count();
    if n == 0 {
        return Ok(());
    }
    let rows: Vec<Vec<String>> = layout::copies(r, top)
        .into_iter()
        .map(|c| {
            vec![
                c.rank.to_string(),
                escape(&shorten_middle(&c.row.name, NAME_WIDTH)),
                c.direction,
                c.calls,
                c.total,
                c.mean,
                c.bytes_per_call,
                c.bandwidth,
                c.share,
            ]
        })
        .collect();
    writeln!(
        out,
        "### Copies and fills ({} of {n}; share of copy and fill time)",
        rows.len()
    )?;
    writeln!(out)?;
    table(
        out,
        &[
            "#",
            "copy or fill",
            "direction",
            "calls",
            "total",
            "mean",
            "bytes/call",
            "bandwidth",
            "share",
        ],
        &[true, false, false, true, true, true, true, true, true],
        &rows,
    )?;
    writeln!(out)
}

/// The top operators by device time.
fn ops_section(r: &Report, top: usize, out: &mut dyn Write) -> io::Result<()> {
    if r.ops.is_empty() {
        return Ok(());
    }
    let rows: Vec<Vec<String>> = layout::ops(r, top)
        .into_iter()
        .map(|o| {
            vec![
                o.rank.to_string(),
                escape(&shorten_middle(&o.op.name, NAME_WIDTH)),
                o.calls,
                o.host_self,
                o.host_total,
                o.device_self,
                o.device_total,
            ]
        })
        .collect();
    writeln!(out, "### Top operators ({} of {})", rows.len(), r.ops.len())?;
    writeln!(out)?;
    table(
        out,
        &[
            "#",
            "operator",
            "calls",
            "host self",
            "host total",
            "device self",
            "device total",
        ],
        &[true, false, true, true, true, true, true],
        &rows,
    )?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rich_text_keeps_code_spans_and_escapes_the_rest() {
        assert_eq!(rich("use `a_b<c>` now_"), "use `a_b<c>` now\\_");
        assert_eq!(rich("odd ` tick"), "odd \\` tick");
        assert_eq!(rich("# `x`"), "\\# `x`");
        assert_eq!(rich("`a\nb`"), "`a b`");
    }

    #[test]
    fn escapes_tables_html_and_block_markers() {
        assert_eq!(escape("a|b"), "a\\|b");
        assert_eq!(
            escape("<script>alert(1)</script>"),
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        );
        assert_eq!(escape("# title"), "\\# title");
        assert_eq!(escape("- item"), "\\- item");
        assert_eq!(escape("12. x"), "12\\. x");
        assert_eq!(escape("3) x"), "3\\) x");
        assert_eq!(escape("65.62 ms"), "65.62 ms");
        assert_eq!(escape("12 copies"), "12 copies");
        assert_eq!(escape("1."), "1\\.");
        assert_eq!(escape("a.b"), "a.b");
        assert_eq!(escape("x-y"), "x-y");
        assert_eq!(escape("two\nlines\r"), "two lines ");
        assert_eq!(
            escape("`code` *em* _u_ [l](u)"),
            "\\`code\\` \\*em\\* \\_u\\_ \\[l\\](u)"
        );
        assert_eq!(escape("$x$"), "\\$x\\$");
        assert_eq!(escape("  # x"), "&#32;&#32;\\# x");
        assert_eq!(escape("a&lt;"), "a&amp;lt;");
    }
}
