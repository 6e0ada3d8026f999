//! Renderers of a comparison ([`crate::diff::Comparison`]): terminal (fits 100 columns), JSON,
//! Markdown for a pull-request comment, and one self-contained HTML page with side-by-side
//! bars. They format, never compute. Names come from traces and are escaped for each format
//! with the report renderers' own escaping.

use std::io::{self, Write};

use super::check::CheckResult;
use super::{Comparison, Contributor, FindingChange, ItemChange, Status, TimeBasis};
use crate::report::html::escape as html_escape;
use crate::report::markdown::escape as md_escape;
use crate::report::terminal::sanitize;
use crate::report::units::{fmt_bytes, fmt_us};
use crate::text::{shorten_middle, wrap};

/// Output format of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffFormat {
    /// Terminal tables.
    Table,
    /// Versioned JSON.
    Json,
    /// GitHub-flavoured Markdown.
    Md,
    /// Self-contained HTML.
    Html,
}

/// Writes the comparison in `format`; `top` rows per table (0 = all).
pub fn render(
    c: &Comparison,
    format: DiffFormat,
    top: usize,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        DiffFormat::Json => {
            let mut buf = serde_json::to_vec_pretty(c)?;
            buf.push(b'\n');
            out.write_all(&buf)
        }
        DiffFormat::Table => terminal(c, top, out),
        DiffFormat::Md => markdown(c, top, out),
        DiffFormat::Html => html(c, top, out),
    }
}

/// `stallscope check`'s output: the budget table alone in `Table` format, else the full
/// comparison (which includes the budget).
pub fn render_check(c: &Comparison, format: DiffFormat, out: &mut dyn Write) -> io::Result<()> {
    match (format, &c.check) {
        (DiffFormat::Table, Some(r)) => {
            writeln!(out, "{}", sanitize(&c.summary))?;
            write_budget_lines(r, out)
        }
        (f, _) => render(c, f, if f == DiffFormat::Json { 0 } else { 10 }, out),
    }
}

use crate::report::units::signed_percent as signed_pct;
pub use crate::report::units::signed_us as signed;

/// A contributor's share of the change as a whole percentage, `-` without one.
fn share(c: &Contributor) -> String {
    c.share_of_change
        .map(crate::report::units::ratio_whole)
        .unwrap_or_else(|| "-".into())
}

fn take(top: usize, n: usize) -> usize {
    if top == 0 {
        n
    } else {
        top.min(n)
    }
}

/// Rows that changed (not `unchanged`), at most `top`.
fn changed(v: &[ItemChange], top: usize) -> Vec<&ItemChange> {
    let rows: Vec<&ItemChange> = v.iter().filter(|r| r.status != Status::Unchanged).collect();
    let n = take(top, rows.len());
    rows.into_iter().take(n).collect()
}

fn per_calls(p: Option<crate::diff::Per>) -> String {
    match p {
        Some(p) if (p.calls - p.calls.round()).abs() < 1e-9 => format!("{}", p.calls as u64),
        Some(p) => format!("{:.1}", p.calls),
        None => "-".into(),
    }
}

fn per_time(p: Option<crate::diff::Per>) -> String {
    p.map(|p| fmt_us(p.time_us)).unwrap_or_else(|| "-".into())
}

/// A row's time per step on `basis` (`-` when the side lacks the row or the measure).
fn per_time_on(p: Option<crate::diff::Per>, basis: TimeBasis) -> String {
    match basis {
        TimeBasis::Device => per_time(p),
        TimeBasis::Host => p
            .and_then(|p| p.host_time())
            .map(fmt_us)
            .unwrap_or_else(|| "-".into()),
    }
}

/// The other basis.
fn other(basis: TimeBasis) -> TimeBasis {
    match basis {
        TimeBasis::Host => TimeBasis::Device,
        TimeBasis::Device => TimeBasis::Host,
    }
}

/// A row's change on `basis`.
fn change_on(r: &ItemChange, basis: TimeBasis) -> String {
    match basis {
        TimeBasis::Device => signed(r.change_us),
        TimeBasis::Host => r.host_change_us.map(signed).unwrap_or_else(|| "-".into()),
    }
}

/// `host` or `device`.
fn basis_word(basis: TimeBasis) -> &'static str {
    match basis {
        TimeBasis::Host => "host",
        TimeBasis::Device => "device",
    }
}

/// Title of the operator or phase table on `basis`.
fn table_title(kind: &str, basis: TimeBasis) -> String {
    let time = match (kind, basis) {
        ("Operators", TimeBasis::Host) => "host self time",
        ("Operators", TimeBasis::Device) => "device self time",
        (_, TimeBasis::Host) => "host wall time",
        (_, TimeBasis::Device) => "device time",
    };
    format!(
        "{kind} ({time}; Δ {}: the {} change)",
        basis_word(other(basis)),
        basis_word(other(basis))
    )
}

/// The budget's metrics, one terminal line each (status, metric, change, limit, note).
/// The cells of a finding's row, as text (each renderer escapes them): status, rule,
/// severity before → after, recoverable time per step before → after, title.
fn finding_cells(f: &FindingChange) -> [String; 5] {
    let us = |v: Option<f64>| v.map(fmt_us).unwrap_or_else(|| "-".into());
    [
        f.status.to_string(),
        f.id.to_string(),
        format!(
            "{} → {}",
            f.severity_before.as_deref().unwrap_or("-"),
            f.severity_after.as_deref().unwrap_or("-")
        ),
        format!(
            "{} → {}",
            us(f.recoverable_before_us),
            us(f.recoverable_after_us)
        ),
        f.title.clone(),
    ]
}

/// The figures of a changed kernel, operator or phase, as text: calls per step before →
/// after, time per step before, after, and the change.
fn item_figures(r: &ItemChange) -> [String; 4] {
    [
        format!("{} → {}", per_calls(r.before), per_calls(r.after)),
        per_time(r.before),
        per_time(r.after),
        signed(r.change_us),
    ]
}

/// [`item_figures`] on `basis`, then the change on the other basis.
fn item_figures_on(r: &ItemChange, basis: TimeBasis) -> [String; 5] {
    [
        format!("{} → {}", per_calls(r.before), per_calls(r.after)),
        per_time_on(r.before, basis),
        per_time_on(r.after, basis),
        change_on(r, basis),
        change_on(r, other(basis)),
    ]
}

/// Signed bytes (`+1.5 MiB`, `-512 B`, `0 B`).
fn signed_bytes(v: i64) -> String {
    let m = fmt_bytes(v.unsigned_abs());
    match v.signum() {
        1 => format!("+{m}"),
        -1 => format!("-{m}"),
        _ => m,
    }
}

/// Bytes (negative values, "not recorded", print as `-`).
fn bytes(v: i64) -> String {
    if v < 0 {
        "-".into()
    } else {
        fmt_bytes(v as u64)
    }
}

/// The heading line of a device's memory change.
fn memory_heading(m: &super::MemoryChange) -> String {
    format!(
        "{} memory peak {} → {} ({})",
        crate::report::layout::memory::memory_device_label(m.device),
        bytes(m.peak_before),
        bytes(m.peak_after),
        signed_bytes(m.peak_change)
    )
}

fn write_budget_lines(r: &CheckResult, out: &mut dyn Write) -> io::Result<()> {
    for (st, m, ch, lim, note) in check_lines(r) {
        writeln!(
            out,
            "  {:<4} {:<30} {:>9} limit {:>8}  {}",
            st,
            shorten_middle(&sanitize(&m), 30),
            ch,
            lim,
            shorten_middle(&sanitize(&note), 34)
        )?;
    }
    Ok(())
}

fn check_lines(r: &CheckResult) -> Vec<(String, String, String, String, String)> {
    r.metrics
        .iter()
        .map(|m| {
            let unit = if m.unit == "%" { "%" } else { m.unit };
            (
                if m.failed { "FAIL" } else { "ok" }.to_string(),
                m.metric.clone(),
                format!("{:+.1}{unit}", m.change),
                format!("{:.1}{unit}", m.limit),
                m.note.clone(),
            )
        })
        .collect()
}

fn terminal(c: &Comparison, top: usize, out: &mut dyn Write) -> io::Result<()> {
    term_sides(c, out)?;
    term_contributors(c, top, out)?;
    term_items(c, top, out)?;
    term_memory(c, top, out)?;
    term_findings(c, top, out)
}

/// The two sides (path, kind, steps, window, verdict), the caveats and the step time.
fn term_sides(c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    let s = |x: &str| sanitize(x);
    for (label, side) in [("before", &c.before), ("after ", &c.after)] {
        writeln!(out, "{label}: {}", shorten_middle(&s(&side.path), 92))?;
        writeln!(
            out,
            "        {}, {} steps ({}), window {}",
            s(&side.kind),
            side.steps,
            shorten_middle(&s(&side.step_range), 40),
            shorten_middle(&s(&side.window), 20)
        )?;
        writeln!(out, "        {}", shorten_middle(&s(&side.verdict), 92))?;
    }
    for cv in &c.caveats {
        writeln!(out, "caveat: {}", shorten_middle(&s(cv), 92))?;
    }
    super::render_loop::terminal(c, out)?; // verdict, parity, runs (render_loop.rs)
    let st = &c.step_time;
    writeln!(out)?;
    writeln!(
        out,
        "Step time  {} → {}  ({}, {})",
        fmt_us(st.before.mean_us),
        fmt_us(st.after.mean_us),
        signed(st.change_us),
        signed_pct(st.change_pct)
    )?;
    for line in wrap(&s(&c.summary), 96) {
        writeln!(out, "  {line}")?;
    }
    writeln!(
        out,
        "  median {} → {}, stdev {} → {}, steps {} → {}",
        fmt_us(st.before.median_us),
        fmt_us(st.after.median_us),
        fmt_us(st.before.stdev_us),
        fmt_us(st.after.stdev_us),
        st.before.steps,
        st.after.steps
    )?;
    for line in wrap(&s(&c.ranked_by.reason), 96) {
        writeln!(out, "  {line}")?;
    }
    Ok(())
}

/// What explains the change, by row and by phase, then the step breakdown and the GPU
/// timeline of each device.
fn term_contributors(c: &Comparison, top: usize, out: &mut dyn Write) -> io::Result<()> {
    let s = |x: &str| sanitize(x);
    let contrib = |out: &mut dyn Write, title: &str, v: &[Contributor]| -> io::Result<()> {
        writeln!(out)?;
        writeln!(out, "{title}")?;
        writeln!(
            out,
            "  {:>11} {:>6} {:>11} {:>11}  what",
            "change", "share", "before", "after"
        )?;
        for r in v.iter().take(take(top, v.len())) {
            writeln!(
                out,
                "  {:>11} {:>6} {:>11} {:>11}  {}",
                signed(r.change_us),
                share(r),
                fmt_us(r.before_us),
                fmt_us(r.after_us),
                shorten_middle(&format!("{} ({})", s(&r.name), r.kind), 54)
            )?;
        }
        Ok(())
    };
    contrib(
        out,
        "What explains the change (per step; the rows sum to the step-time change)",
        &c.contributors,
    )?;
    contrib(
        out,
        "By phase (top-level annotations)",
        &c.phase_contributors,
    )?;
    writeln!(out)?;
    writeln!(out, "Breakdown per step (parts sum to the step time)")?;
    writeln!(
        out,
        "  {:<15} {:>11} {:>11} {:>11}",
        "part", "before", "after", "change"
    )?;
    for b in &c.breakdown {
        term_change_row(out, b)?;
    }
    for d in &c.gpu_timeline {
        writeln!(out)?;
        writeln!(
            out,
            "GPU timeline, device {} (per step; parts sum to the span)",
            d.device
        )?;
        for p in d.parts.iter().chain(std::iter::once(&d.total)) {
            term_change_row(out, p)?;
        }
    }
    Ok(())
}

/// The kernels, operators and phases that changed.
fn term_items(c: &Comparison, top: usize, out: &mut dyn Write) -> io::Result<()> {
    let s = |x: &str| sanitize(x);
    let basis = c.ranked_by.basis;
    {
        let rows = &c.kernels;
        let ch = changed(rows, top);
        let total = rows
            .iter()
            .filter(|r| r.status != Status::Unchanged)
            .count();
        writeln!(out)?;
        writeln!(
            out,
            "Kernels: {total} changed of {} (per step: calls, time)",
            rows.len()
        )?;
        for r in ch {
            writeln!(
                out,
                "  {:<9} {:>7} {:>7} {:>10} {:>10} {:>10}  {}",
                r.status.as_str(),
                per_calls(r.before),
                per_calls(r.after),
                per_time(r.before),
                per_time(r.after),
                signed(r.change_us),
                shorten_middle(&s(&r.name), 33)
            )?;
            if let Some(n) = &r.note {
                writeln!(out, "            {}", shorten_middle(&s(n), 86))?;
            }
        }
    }
    for (kind, rows) in [("Operators", &c.ops), ("Phases", &c.phases)] {
        let total = rows
            .iter()
            .filter(|r| r.status != Status::Unchanged)
            .count();
        writeln!(out)?;
        writeln!(
            out,
            "{}: {total} changed of {} (per step)",
            table_title(kind, basis),
            rows.len()
        )?;
        for r in changed(rows, top) {
            let [_, before, after, change, other_change] = item_figures_on(r, basis);
            writeln!(
                out,
                "  {:<9} {:>6} {:>6} {:>10} {:>10} {:>10} {:>10}  {}",
                r.status.as_str(),
                per_calls(r.before),
                per_calls(r.after),
                before,
                after,
                change,
                other_change,
                shorten_middle(&s(&r.name), 26)
            )?;
        }
    }
    Ok(())
}

/// The memory peak of each device, and what is live at it by operator and phase.
fn term_memory(c: &Comparison, top: usize, out: &mut dyn Write) -> io::Result<()> {
    let s = |x: &str| sanitize(x);
    for m in &c.memory {
        writeln!(out)?;
        writeln!(out, "{}", memory_heading(m))?;
        if !m.composition_known {
            writeln!(
                out,
                "  live at the peak: unknown (a side's events have no Addr to pair frees)"
            )?;
            continue;
        }
        for (what, rows) in [("operator", &m.live_by_op), ("phase", &m.live_by_phase)] {
            let rows: Vec<_> = rows.iter().filter(|r| r.change != 0).collect();
            if rows.is_empty() {
                continue;
            }
            writeln!(out, "  live at the peak by {what}: change, before, after")?;
            // at most 6 groups (fewer with a smaller --top; --top 0 means the 6)
            let n = if top == 0 { 6 } else { top.min(6) };
            for r in rows.iter().take(n) {
                writeln!(
                    out,
                    "    {:>11} {:>11} {:>11}  {}",
                    signed_bytes(r.change),
                    fmt_bytes(r.before),
                    fmt_bytes(r.after),
                    shorten_middle(&s(&r.name), 56)
                )?;
            }
        }
    }
    Ok(())
}

/// The findings of both sides, the ranks and the budget.
fn term_findings(c: &Comparison, top: usize, out: &mut dyn Write) -> io::Result<()> {
    let s = |x: &str| sanitize(x);
    writeln!(out)?;
    writeln!(out, "Findings")?;
    if c.findings.is_empty() {
        writeln!(out, "  none on either side")?;
    }
    for f in &c.findings {
        writeln!(
            out,
            "  {:<9} {:<22} {:>6} → {:<6} {:>10} → {}",
            f.status,
            shorten_middle(&s(&f.id), 22),
            f.severity_before.as_deref().unwrap_or("-"),
            f.severity_after.as_deref().unwrap_or("-"),
            f.recoverable_before_us
                .map(fmt_us)
                .unwrap_or_else(|| "-".into()),
            f.recoverable_after_us
                .map(fmt_us)
                .unwrap_or_else(|| "-".into()),
        )?;
    }
    if let Some(r) = &c.ranks {
        writeln!(out)?;
        writeln!(
            out,
            "Ranks: slowest before {}, after {} (step time)",
            r.slowest_before, r.slowest_after
        )?;
        for k in r.ranks.iter().take(take(top.max(16), r.ranks.len())) {
            writeln!(
                out,
                "  rank {:<5} {:>11} {:>11} {:>11}",
                k.rank,
                k.before_us.map(fmt_us).unwrap_or_else(|| "-".into()),
                k.after_us.map(fmt_us).unwrap_or_else(|| "-".into()),
                k.change_us.map(signed).unwrap_or_else(|| "-".into())
            )?;
        }
    }
    if let Some(r) = &c.check {
        writeln!(out)?;
        writeln!(out, "Budget")?;
        write_budget_lines(r, out)?;
    }
    Ok(())
}

/// One before → after row of the terminal tables.
fn term_change_row(out: &mut dyn Write, c: &crate::diff::Change) -> io::Result<()> {
    writeln!(
        out,
        "  {:<15} {:>11} {:>11} {:>11}",
        c.name,
        fmt_us(c.before_us),
        fmt_us(c.after_us),
        signed(c.change_us)
    )
}

/// One before → after row of the Markdown tables.
fn md_change_row(out: &mut dyn Write, c: &crate::diff::Change) -> io::Result<()> {
    writeln!(
        out,
        "| {} | {} | {} | {} |",
        c.name,
        fmt_us(c.before_us),
        fmt_us(c.after_us),
        signed(c.change_us)
    )
}

fn markdown(c: &Comparison, top: usize, out: &mut dyn Write) -> io::Result<()> {
    md_sides(c, out)?;
    md_contributors(c, top, out)?;
    md_items(c, top, out)?;
    md_memory(c, top, out)?;
    md_findings(c, out)
}

/// The step time, the summary, the caveats, both sides side by side and the budget.
fn md_sides(c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    let e = |x: &str| md_escape(x);
    let st = &c.step_time;
    writeln!(
        out,
        "### stallscope diff: step time {} → {} ({}, {})\n",
        fmt_us(st.before.mean_us),
        fmt_us(st.after.mean_us),
        signed(st.change_us),
        signed_pct(st.change_pct)
    )?;
    writeln!(out, "{}\n", e(&c.summary))?;
    writeln!(out, "{}\n", e(&c.ranked_by.reason))?;
    for cv in &c.caveats {
        writeln!(out, "> **Caveat:** {}\n", e(cv))?;
    }
    super::render_loop::markdown(c, out)?; // verdict, parity, runs (render_loop.rs)
    writeln!(out, "| | before | after |\n|---|---|---|")?;
    writeln!(
        out,
        "| input | {} | {} |",
        e(&c.before.path),
        e(&c.after.path)
    )?;
    writeln!(
        out,
        "| verdict | {} | {} |",
        e(&c.before.verdict),
        e(&c.after.verdict)
    )?;
    writeln!(
        out,
        "| steps | {} ({}) | {} ({}) |",
        c.before.steps,
        e(&c.before.step_range),
        c.after.steps,
        e(&c.after.step_range)
    )?;
    writeln!(
        out,
        "| mean / median / stdev | {} / {} / {} | {} / {} / {} |\n",
        fmt_us(st.before.mean_us),
        fmt_us(st.before.median_us),
        fmt_us(st.before.stdev_us),
        fmt_us(st.after.mean_us),
        fmt_us(st.after.median_us),
        fmt_us(st.after.stdev_us)
    )?;
    if let Some(r) = &c.check {
        writeln!(
            out,
            "#### Budget\n\n| | metric | change | limit | note |\n|---|---|---:|---:|---|"
        )?;
        for (s, m, ch, lim, note) in check_lines(r) {
            writeln!(out, "| {s} | {} | {ch} | {lim} | {} |", e(&m), e(&note))?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// What explains the change, then the step breakdown and the GPU timeline of each device.
fn md_contributors(c: &Comparison, top: usize, out: &mut dyn Write) -> io::Result<()> {
    // names as in the report's Markdown: longer than 90 characters shortened in the middle
    let name = |x: &str| md_escape(&shorten_middle(x, 90));
    writeln!(
        out,
        "#### What explains the change (per step, sums to the change)\n"
    )?;
    writeln!(
        out,
        "| what | kind | before | after | change | share |\n|---|---|---:|---:|---:|---:|"
    )?;
    for r in c.contributors.iter().take(take(top, c.contributors.len())) {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            name(&r.name),
            r.kind,
            fmt_us(r.before_us),
            fmt_us(r.after_us),
            signed(r.change_us),
            share(r)
        )?;
    }
    writeln!(
        out,
        "\n#### Breakdown per step\n\n| part | before | after | change |\n|---|---:|---:|---:|"
    )?;
    for b in &c.breakdown {
        md_change_row(out, b)?;
    }
    for d in &c.gpu_timeline {
        writeln!(out, "\n#### GPU timeline, device {} (per step)\n\n| part | before | after | change |\n|---|---:|---:|---:|", d.device)?;
        for p in d.parts.iter().chain(std::iter::once(&d.total)) {
            md_change_row(out, p)?;
        }
    }
    Ok(())
}

/// The kernels, operators and phases that changed.
fn md_items(c: &Comparison, top: usize, out: &mut dyn Write) -> io::Result<()> {
    let e = |x: &str| md_escape(x);
    // names as in the report's Markdown: longer than 90 characters shortened in the middle
    let name = |x: &str| md_escape(&shorten_middle(x, 90));
    let basis = c.ranked_by.basis;
    for (title, rows) in [("Kernels", &c.kernels)] {
        let ch = changed(rows, top);
        writeln!(out, "\n#### {title} that changed (per step)\n")?;
        if ch.is_empty() {
            writeln!(out, "None.")?;
            continue;
        }
        writeln!(out, "| status | name | calls | time before | time after | change |\n|---|---|---:|---:|---:|---:|")?;
        for r in ch {
            let note = r
                .note
                .as_deref()
                .map(|n| format!(" ({})", e(n)))
                .unwrap_or_default();
            let [calls, before, after, change] = item_figures(r);
            writeln!(
                out,
                "| {} | {}{note} | {calls} | {before} | {after} | {change} |",
                r.status.as_str(),
                name(&r.name),
            )?;
        }
    }
    for (kind, rows) in [("Operators", &c.ops), ("Phases", &c.phases)] {
        let ch = changed(rows, top);
        writeln!(
            out,
            "\n#### {} that changed (per step)\n",
            table_title(kind, basis)
        )?;
        if ch.is_empty() {
            writeln!(out, "None.")?;
            continue;
        }
        writeln!(
            out,
            "| status | name | calls | {b} before | {b} after | change | Δ {o} |\n|---|---|---:|---:|---:|---:|---:|",
            b = basis_word(basis),
            o = basis_word(other(basis))
        )?;
        for r in ch {
            let [calls, before, after, change, oc] = item_figures_on(r, basis);
            writeln!(
                out,
                "| {} | {} | {calls} | {before} | {after} | {change} | {oc} |",
                r.status.as_str(),
                name(&r.name),
            )?;
        }
    }
    Ok(())
}

/// The memory peak of each device, and what is live at it by operator and phase.
fn md_memory(c: &Comparison, top: usize, out: &mut dyn Write) -> io::Result<()> {
    // names as in the report's Markdown: longer than 90 characters shortened in the middle
    let name = |x: &str| md_escape(&shorten_middle(x, 90));
    for m in &c.memory {
        writeln!(out, "\n#### {}\n", memory_heading(m))?;
        if !m.composition_known {
            writeln!(
                out,
                "Live at the peak: unknown (a side's events have no `Addr`)."
            )?;
            continue;
        }
        writeln!(
            out,
            "| live at the peak | name | before | after | change |\n|---|---|---:|---:|---:|"
        )?;
        for (what, rows) in [("operator", &m.live_by_op), ("phase", &m.live_by_phase)] {
            for r in rows
                .iter()
                .filter(|r| r.change != 0)
                .take(take(top, rows.len()))
            {
                writeln!(
                    out,
                    "| {what} | {} | {} | {} | {} |",
                    name(&r.name),
                    fmt_bytes(r.before),
                    fmt_bytes(r.after),
                    signed_bytes(r.change)
                )?;
            }
        }
    }
    Ok(())
}

/// The findings of both sides and the ranks.
fn md_findings(c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    let e = |x: &str| md_escape(x);
    writeln!(out, "\n#### Findings\n")?;
    if c.findings.is_empty() {
        writeln!(out, "None on either side.")?;
    } else {
        writeln!(
            out,
            "| status | rule | severity | recoverable / step | title |\n|---|---|---|---:|---|"
        )?;
        for f in &c.findings {
            let [status, id, severity, recoverable, title] = finding_cells(f);
            writeln!(
                out,
                "| {status} | `{}` | {severity} | {recoverable} | {} |",
                e(&id),
                e(&title)
            )?;
        }
    }
    if let Some(r) = &c.ranks {
        writeln!(
            out,
            "\n#### Ranks (slowest: {} before, {} after)\n\n| rank | before | after | change |\n|---:|---:|---:|---:|",
            r.slowest_before, r.slowest_after
        )?;
        for k in &r.ranks {
            writeln!(
                out,
                "| {} | {} | {} | {} |",
                k.rank,
                k.before_us.map(fmt_us).unwrap_or_else(|| "-".into()),
                k.after_us.map(fmt_us).unwrap_or_else(|| "-".into()),
                k.change_us.map(signed).unwrap_or_else(|| "-".into())
            )?;
        }
    }
    Ok(())
}

/// Two bars (before, after) scaled to `max`.
fn bars(out: &mut String, label: &str, b: f64, a: f64, change: f64, max: f64) {
    let w = |v: f64| {
        if max > 0.0 {
            (v.max(0.0) / max * 100.0).min(100.0)
        } else {
            0.0
        }
    };
    out.push_str(&format!(
        "<tr><td>{}</td><td class=n>{}</td><td><div class='bar b' style='width:{:.1}%'></div>\
         <div class='bar a' style='width:{:.1}%'></div></td><td class=n>{}</td><td class=n>{}</td></tr>\n",
        html_escape(label),
        fmt_us(b),
        w(b),
        w(a),
        fmt_us(a),
        html_escape(&signed(change))
    ));
}

fn html(c: &Comparison, top: usize, out: &mut dyn Write) -> io::Result<()> {
    let mut h = String::new();
    html_sides(&mut h, c);
    html_bars(&mut h, c, top);
    html_items(&mut h, c, top);
    html_memory(&mut h, c, top);
    html_findings(&mut h, c);
    h.push_str("</body></html>\n");
    out.write_all(h.as_bytes())
}

/// The step time, the summary, the caveats, both sides side by side and the budget.
fn html_sides(h: &mut String, c: &Comparison) {
    let e = |x: &str| html_escape(x);
    let st = &c.step_time;
    h.push_str("<!doctype html><html><head><meta charset=utf-8><title>stallscope diff</title><style>\
        body{font:14px system-ui,sans-serif;margin:2em;max-width:1100px}\
        table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:left}\
        td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\
        .bar{height:7px;margin:1px 0}.b{background:#8aa4c8}.a{background:#e0904a}td:nth-child(3){width:40%}\
        .caveat{background:#fff4d6;padding:.4em .8em}.key span{display:inline-block;width:12px;height:8px;margin:0 4px}\
        </style>");
    h.push_str(super::render_loop::HTML_FIT_CSS);
    h.push_str("</head><body>\n");
    h.push_str(&format!(
        "<h1>Step time {} → {} ({}, {})</h1>\n<p>{}</p>\n",
        fmt_us(st.before.mean_us),
        fmt_us(st.after.mean_us),
        e(&signed(st.change_us)),
        e(&signed_pct(st.change_pct)),
        e(&c.summary)
    ));
    for cv in &c.caveats {
        h.push_str(&format!("<p class=caveat>Caveat: {}</p>\n", e(cv)));
    }
    super::render_loop::html(c, h); // verdict, parity, runs (render_loop.rs)
    h.push_str(&format!(
        "<table><tr><th></th><th>before</th><th>after</th></tr>\
         <tr><td>input</td><td>{}</td><td>{}</td></tr>\
         <tr><td>verdict</td><td>{}</td><td>{}</td></tr>\
         <tr><td>steps</td><td>{} ({})</td><td>{} ({})</td></tr></table>\n",
        super::render_loop::html_path(&c.before.path),
        super::render_loop::html_path(&c.after.path),
        e(&c.before.verdict),
        e(&c.after.verdict),
        c.before.steps,
        e(&c.before.step_range),
        c.after.steps,
        e(&c.after.step_range)
    ));
    if let Some(r) = &c.check {
        h.push_str("<h2>Budget</h2><table><tr><th></th><th>metric</th><th>change</th><th>limit</th><th>note</th></tr>\n");
        for (s, m, ch, lim, note) in check_lines(r) {
            h.push_str(&format!(
                "<tr><td>{s}</td><td>{}</td><td class=n>{}</td><td class=n>{}</td><td>{}</td></tr>\n",
                e(&m),
                e(&ch),
                e(&lim),
                e(&note)
            ));
        }
        h.push_str("</table>\n");
    }
}

/// Side-by-side bars: what explains the change, the step breakdown, the GPU timeline of each
/// device and the phases.
fn html_bars(h: &mut String, c: &Comparison, top: usize) {
    let e = |x: &str| html_escape(x);
    h.push_str(
        "<p class=key><span class=b style='background:#8aa4c8'></span>before \
                <span style='background:#e0904a'></span>after</p>\n",
    );
    h.push_str("<h2>What explains the change</h2><table><tr><th>what</th><th>before</th><th></th><th>after</th><th>change</th></tr>\n");
    let n = take(top, c.contributors.len());
    let max = c.contributors[..n]
        .iter()
        .flat_map(|r| [r.before_us, r.after_us])
        .fold(0.0, f64::max);
    for r in &c.contributors[..n] {
        bars(
            h,
            &format!("{} ({})", r.name, r.kind),
            r.before_us,
            r.after_us,
            r.change_us,
            max,
        );
    }
    h.push_str("</table>\n<h2>Breakdown per step</h2><table><tr><th>part</th><th>before</th><th></th><th>after</th><th>change</th></tr>\n");
    let max = c
        .breakdown
        .iter()
        .flat_map(|r| [r.before_us, r.after_us])
        .fold(0.0, f64::max);
    for b in &c.breakdown {
        bars(h, &b.name, b.before_us, b.after_us, b.change_us, max);
    }
    h.push_str("</table>\n");
    for d in &c.gpu_timeline {
        h.push_str(&format!(
            "<h2>GPU timeline, device {}</h2><table>\n",
            d.device
        ));
        let max = d.total.before_us.max(d.total.after_us);
        for p in d.parts.iter().chain(std::iter::once(&d.total)) {
            bars(h, &p.name, p.before_us, p.after_us, p.change_us, max);
        }
        h.push_str("</table>\n");
    }
    let basis = c.ranked_by.basis;
    h.push_str(&format!(
        "<p>{}</p><h2>{} per step</h2><table><tr><th>phase</th><th>before</th><th></th><th>after</th><th>change</th></tr>\n",
        e(&c.ranked_by.reason),
        e(&table_title("Phases", basis))
    ));
    let ph = changed(&c.phases, top);
    let t = |p: Option<crate::diff::Per>| match basis {
        TimeBasis::Device => p.map(|p| p.time_us).unwrap_or(0.0),
        TimeBasis::Host => p.and_then(|p| p.host_time()).unwrap_or(0.0),
    };
    let max = ph
        .iter()
        .flat_map(|r| [t(r.before), t(r.after)])
        .fold(0.0, f64::max);
    for r in ph {
        bars(
            h,
            &format!("{} [{}]", r.name, r.status.as_str()),
            t(r.before),
            t(r.after),
            t(r.after) - t(r.before),
            max,
        );
    }
    h.push_str("</table>\n");
}

/// The kernels and operators that changed.
fn html_items(h: &mut String, c: &Comparison, top: usize) {
    let e = |x: &str| html_escape(x);
    let basis = c.ranked_by.basis;
    for (title, rows, on) in [
        ("Kernels".to_string(), &c.kernels, None),
        (table_title("Operators", basis), &c.ops, Some(basis)),
    ] {
        let extra = on
            .map(|b| format!("<th>Δ {}</th>", basis_word(other(b))))
            .unwrap_or_default();
        h.push_str(&format!(
            "<h2>{} that changed</h2><table><tr><th>status</th><th>name</th><th>calls/step</th>\
             <th>before</th><th>after</th><th>change</th>{extra}</tr>\n",
            e(&title)
        ));
        for r in changed(rows, top) {
            let [calls, before, after, change, oc] = match on {
                Some(b) => item_figures_on(r, b),
                None => {
                    let [c1, c2, c3, c4] = item_figures(r);
                    [c1, c2, c3, c4, String::new()]
                }
            }
            .map(|x| e(&x));
            let oc = if on.is_some() {
                format!("<td class=n>{oc}</td>")
            } else {
                String::new()
            };
            h.push_str(&format!(
                "<tr><td>{}</td><td>{}{}</td><td class=n>{calls}</td><td class=n>{before}</td><td class=n>{after}</td><td class=n>{change}</td>{oc}</tr>\n",
                r.status.as_str(),
                e(&r.name),
                r.note.as_deref().map(|n| format!("<br><small>{}</small>", e(n))).unwrap_or_default(),
            ));
        }
        h.push_str("</table>\n");
    }
}

/// The memory peak of each device, and what is live at it by operator and phase.
fn html_memory(h: &mut String, c: &Comparison, top: usize) {
    let e = |x: &str| html_escape(x);
    for m in &c.memory {
        h.push_str(&format!("<h2>{}</h2>", e(&memory_heading(m))));
        if !m.composition_known {
            h.push_str("<p>Live at the peak: unknown (a side's events have no Addr).</p>\n");
            continue;
        }
        h.push_str("<table><tr><th>live at the peak</th><th>name</th><th>before</th><th>after</th><th>change</th></tr>\n");
        for (what, rows) in [("operator", &m.live_by_op), ("phase", &m.live_by_phase)] {
            for r in rows
                .iter()
                .filter(|r| r.change != 0)
                .take(take(top, rows.len()))
            {
                h.push_str(&format!(
                    "<tr><td>{what}</td><td>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td></tr>\n",
                    e(&r.name),
                    e(&fmt_bytes(r.before)),
                    e(&fmt_bytes(r.after)),
                    e(&signed_bytes(r.change))
                ));
            }
        }
        h.push_str("</table>\n");
    }
}

/// The findings of both sides and the ranks.
fn html_findings(h: &mut String, c: &Comparison) {
    let e = |x: &str| html_escape(x);
    h.push_str("<h2>Findings</h2><table><tr><th>status</th><th>rule</th><th>severity</th><th>recoverable/step</th><th>title</th></tr>\n");
    for f in &c.findings {
        let [status, id, severity, recoverable, title] = finding_cells(f).map(|x| e(&x));
        h.push_str(&format!(
            "<tr><td>{status}</td><td>{id}</td><td>{severity}</td><td class=n>{recoverable}</td><td>{title}</td></tr>\n",
        ));
    }
    h.push_str("</table>\n");
    if let Some(r) = &c.ranks {
        h.push_str(&format!(
            "<h2>Ranks (slowest: {} before, {} after)</h2><table>\n",
            r.slowest_before, r.slowest_after
        ));
        let max = r
            .ranks
            .iter()
            .flat_map(|k| [k.before_us, k.after_us])
            .flatten()
            .fold(0.0, f64::max);
        for k in &r.ranks {
            bars(
                h,
                &format!("rank {}", k.rank),
                k.before_us.unwrap_or(0.0),
                k.after_us.unwrap_or(0.0),
                k.change_us.unwrap_or(0.0),
                max,
            );
        }
        h.push_str("</table>\n");
    }
}
