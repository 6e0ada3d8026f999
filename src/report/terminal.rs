//! The terminal report: tables that fit the width (100 columns by default), colour only when
//! asked (the CLI asks on a TTY without `NO_COLOR`), long names shortened in the middle.

use std::io::{self, Write};

use super::{layout, units, RenderOptions, Renderer, Report};

/// Human-readable tables.
pub struct Terminal;

pub use super::units::{fmt_bytes, fmt_count, fmt_pct, fmt_us};
pub use crate::text::shorten_middle;

/// Names from a trace as text that cannot drive the terminal: escape sequences and other
/// control characters are shown as visible escapes ([`crate::text::printable`]).
pub fn sanitize(s: &str) -> String {
    crate::text::printable(s)
}

struct Style {
    color: bool,
}

impl Style {
    fn bold(&self, s: &str) -> String {
        if self.color {
            format!("\x1b[1m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn dim(&self, s: &str) -> String {
        if self.color {
            format!("\x1b[2m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn heading(&self, s: &str) -> String {
        if self.color {
            format!("\x1b[1;36m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
}

/// A simple table: the first column (or `flex`) takes the width left over and is shortened in
/// the middle; the first column (and those in `left`) are left-aligned, the others right.
struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    flex: usize,
    left: Vec<usize>,
}

impl Table {
    fn new(headers: &[&str]) -> Self {
        Table {
            headers: headers.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
            flex: 0,
            left: vec![0],
        }
    }
    fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
    fn write(&self, out: &mut dyn Write, width: usize, style: &Style) -> io::Result<()> {
        let n = self.headers.len();
        let mut w: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let f = self.flex;
        let others: usize = w.iter().sum::<usize>() - w[f] + 2 * (n - 1);
        let flex_max = width.saturating_sub(others).max(6);
        w[f] = w[f].min(flex_max);
        let line = |cells: &[String]| -> String {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate() {
                if i > 0 {
                    s.push_str("  ");
                }
                let c = if i == f {
                    shorten_middle(c, w[i])
                } else {
                    c.clone()
                };
                if self.left.contains(&i) {
                    s.push_str(&format!("{:<width$}", c, width = w[i]));
                } else {
                    s.push_str(&format!("{:>width$}", c, width = w[i]));
                }
            }
            s.trim_end().to_string()
        };
        writeln!(out, "{}", style.dim(&line(&self.headers)))?;
        for r in &self.rows {
            writeln!(out, "{}", line(r))?;
        }
        Ok(())
    }
}

impl Renderer for Terminal {
    fn render(&self, r: &Report, opts: &RenderOptions, out: &mut dyn Write) -> io::Result<()> {
        let st = Style { color: opts.color };
        let width = opts.width.max(60);
        if let Some(sec) = &r.ranks {
            write_ranks(sec, width, &st, out)?;
        }
        write_source(r, width, &st, out)?;
        write_diagnosis(r, width, &st, out)?;
        write_capture_check(r, width, &st, out)?;
        write_compiled(r, width, &st, out)?;
        write_devices(r, width, &st, out)?;
        writeln!(out)?;
        write_window(r, width, &st, out)?;
        write_steps(r, width, &st, out)?;
        write_phases_section(r, opts.top, width, &st, out)?;
        write_efficiency_section(r, opts.top, width, &st, out)?;
        write_memory_section(r, width, &st, out)?;
        write_gpu_timeline(r, width, &st, out)?;
        write_kernels(r, opts.top, width, &st, out)?;
        write_ops(r, opts.top, width, &st, out)?;
        let top = layout::rows_shown(opts.top);
        if let Some(m) = &r.gpu_metrics {
            super::nvidia::write_gpu_metrics(m, top, width, out)?;
        }
        if let Some(n) = &r.ncu {
            super::nvidia::write_ncu(n, top, width, out)?;
        }
        Ok(())
    }
}

/// The first line (generator, file, size, events) and the reading warnings.
fn write_source(r: &Report, width: usize, st: &Style, out: &mut dyn Write) -> io::Result<()> {
    let file = crate::text::file_name(&r.source.path);
    writeln!(
        out,
        "{}",
        st.bold(&shorten_middle(
            &format!(
                "{} — {} ({}, {} events)",
                r.generator,
                sanitize(&file),
                fmt_bytes(r.source.bytes),
                fmt_count(r.source.events)
            ),
            width
        ))
    )?;
    for w in &r.warnings {
        let at = w
            .first_offset
            .map(|o| format!(" (first at byte {o})"))
            .unwrap_or_default();
        writeln!(
            out,
            "warning: {} ×{}{}",
            shorten_middle(&sanitize(&w.message), width.saturating_sub(30)),
            w.count,
            at
        )?;
    }
    Ok(())
}

/// The GPU summary: one row per device that ran work.
fn write_devices(r: &Report, width: usize, st: &Style, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out)?;
    writeln!(out, "{}", st.heading("GPU summary"))?;
    if r.devices.is_empty() {
        return writeln!(
            out,
            "  no GPU activity in this trace (CPU-only or kernels not traced)"
        );
    }
    let mut t = Table::new(&[
        "device",
        "SMs",
        "memory",
        "CC",
        "kernel util.",
        "SM eff.",
        "occupancy",
        "tensor cores",
    ]);
    for d in layout::devices(r) {
        t.row(vec![
            sanitize(&format!("{} {}", d.id, d.name)),
            d.sms,
            d.memory,
            d.compute_capability.to_string(),
            d.utilization,
            d.sm_efficiency,
            d.occupancy,
            d.tensor_cores,
        ]);
    }
    t.write(out, width, st)?;
    write_figure_notes(r, &["gpu_summary"], width, out)
}

/// The steps (or iterations): the first six and the last five of a long run, the average and
/// each part's share of it, then the kinds of iterations.
fn write_steps(r: &Report, width: usize, st: &Style, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out)?;
    let n = r.steps.len();
    let iterations = r.steps_found.rule.is_iteration();
    let (what, unit) = (r.steps_found.title(), r.steps_found.unit());
    writeln!(
        out,
        "{}  {}",
        st.heading(&format!("{what} ({n})")),
        st.dim(&format!("average {unit} {}", fmt_us(r.step_time_us)))
    )?;
    if iterations {
        let found = &r.steps_found;
        let by = format!("{} (rule {})", found.description, found.rule.as_str());
        write_wrapped(out, "  found by: ", &by, 4, width)?;
    }
    let mut t = Table::new(&[
        unit, "total", "kernel", "memcpy", "memset", "comm", "runtime", "dataldr", "cpu", "other",
    ]);
    // `ProfilerStep#101` → `#101`: the column stays narrow enough for 100 columns
    for row in layout::steps::rows(r, |s| sanitize(&s.short_label), "average") {
        t.row(row);
    }
    if r.step_time_us > 0.0 {
        let mut pct = vec!["share".to_string(), "100%".to_string()];
        pct.extend(layout::step_parts(r).into_iter().map(|p| p.share));
        t.row(pct);
    }
    t.write(out, width, st)?;
    write_figure_notes(r, &["steps"], width, out)?;
    write_iteration_kinds(r, width, out)
}

/// The GPU timeline: per device, the split of its time and the idle share.
fn write_gpu_timeline(r: &Report, width: usize, st: &Style, out: &mut dyn Write) -> io::Result<()> {
    if r.gpu_timeline.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "{}",
        st.heading("GPU timeline (device-level union of all streams)")
    )?;
    let mut t = Table::new(&[
        "device",
        "total",
        "computation",
        "exposed comm",
        "exposed memcpy",
        "idle",
        "idle %",
    ]);
    for g in &r.gpu_timeline {
        let split = layout::gpu_split(g);
        let mut row = vec![g.device.to_string(), fmt_us(g.total_us)];
        row.extend(split.iter().map(|p| fmt_us(p.us)));
        row.push(split[3].share.clone());
        t.row(row);
    }
    t.write(out, width, st)?;
    if let Some(n) = layout::timeline_span_note(r) {
        write_wrapped(out, "  note: ", &n, 4, width)?;
    }
    write_figure_notes(r, &["gpu_timeline"], width, out)
}

/// A table of the top rows: a blank line, the heading with its note (how many distinct rows
/// there are), then the table.
fn write_top_table(
    heading: &str,
    note: &str,
    columns: &[&str],
    rows: Vec<Vec<String>>,
    width: usize,
    st: &Style,
    out: &mut dyn Write,
) -> io::Result<()> {
    writeln!(out)?;
    writeln!(out, "{}  {}", st.heading(heading), st.dim(note))?;
    let mut t = Table::new(columns);
    for row in rows {
        t.row(row);
    }
    t.write(out, width, st)
}

/// The top kernels by total time.
fn write_kernels(
    r: &Report,
    top: usize,
    width: usize,
    st: &Style,
    out: &mut dyn Write,
) -> io::Result<()> {
    let n = layout::kernel_rows(r).count();
    if n == 0 {
        return write_copies(r, top, width, st, out);
    }
    let rows = layout::kernels(r, top)
        .into_iter()
        .map(|k| {
            vec![
                sanitize(&k.kernel.name),
                k.category.to_string(),
                k.calls,
                k.total,
                k.mean,
                k.share,
                k.occupancy,
                k.tensor_core.into(),
            ]
        })
        .collect();
    let columns = [
        "kernel", "category", "calls", "total", "mean", "share", "occ.", "TC",
    ];
    let heading = "Top kernels by total time";
    write_top_table(
        heading,
        &format!("{n} distinct"),
        &columns,
        rows,
        width,
        st,
        out,
    )?;
    write_figure_notes(r, &["kernels"], width, out)?;
    write_copies(r, top, width, st, out)
}

/// The top copies and fills by total time (rows of the kernel table).
fn write_copies(
    r: &Report,
    top: usize,
    width: usize,
    st: &Style,
    out: &mut dyn Write,
) -> io::Result<()> {
    let n = layout::copy_rows(r).count();
    if n == 0 {
        return Ok(());
    }
    let rows = layout::copies(r, top)
        .into_iter()
        .map(|c| {
            vec![
                sanitize(&c.row.name),
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
    let columns = [
        "copy or fill",
        "direction",
        "calls",
        "total",
        "mean",
        "bytes/call",
        "bandwidth",
        "share",
    ];
    let heading = "Copies and fills by total time";
    let note = format!("{n} distinct; share of copy and fill time");
    write_top_table(heading, &note, &columns, rows, width, st, out)
}

/// The top operators by device time.
fn write_ops(
    r: &Report,
    top: usize,
    width: usize,
    st: &Style,
    out: &mut dyn Write,
) -> io::Result<()> {
    if r.ops.is_empty() {
        return Ok(());
    }
    let rows = layout::ops(r, top)
        .into_iter()
        .map(|o| {
            vec![
                sanitize(&o.op.name),
                o.calls,
                o.host_self,
                o.host_total,
                o.device_self,
                o.device_total,
            ]
        })
        .collect();
    let columns = [
        "operator",
        "calls",
        "host self",
        "host total",
        "device self",
        "device total",
    ];
    let note = format!("{} distinct", r.ops.len());
    write_top_table("Top operators", &note, &columns, rows, width, st, out)
}

/// The verdict and the ranked findings alone (for inputs without a timeline, such as an
/// Nsight Compute CSV).
pub fn write_findings(
    r: &Report,
    width: usize,
    color: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    write_diagnosis(r, width, &Style { color }, out)
}

/// A blank line, then `Verdict: …` wrapped to `width` under its label.
fn write_verdict(verdict: &str, width: usize, st: &Style, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out)?;
    write_wrapped(
        out,
        &st.bold("Verdict: "),
        &sanitize(verdict),
        9,
        width + st.bold("").len(),
    )
}

/// The verdict and the ranked findings (details of findings above `info`: their first facts,
/// where to look, the first advice; everything is in the JSON report).
fn write_diagnosis(r: &Report, width: usize, st: &Style, out: &mut dyn Write) -> io::Result<()> {
    write_verdict(&r.verdict, width, st, out)?;
    if let Some(e) = &r.efficiency {
        write_wrapped(
            out,
            &st.bold("Efficiency: "),
            &sanitize(&layout::efficiency::efficiency_headline(e)),
            12,
            width + st.bold("").len(),
        )?;
    }
    if r.findings.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "{}  {}",
        st.heading(&format!("Findings ({})", r.findings.len())),
        st.dim(
            "ranked by time recoverable per step (upper bounds; --format json for all evidence)"
        )
    )?;
    write_finding_items(
        &layout::findings::items(Some(r), &r.findings),
        width,
        st,
        out,
    )
}

/// Findings, one numbered block each.
fn write_finding_items(
    items: &[layout::findings::FindingItem],
    width: usize,
    st: &Style,
    out: &mut dyn Write,
) -> io::Result<()> {
    for item in items {
        let f = item.finding;
        let head = format!(
            "{:>2}. {:<6} {:<21} {:>13}  ",
            item.number,
            f.severity.as_str(),
            f.id,
            item.per_step
        );
        let title = sanitize(&f.title);
        if f.severity == crate::diagnose::Severity::Info {
            let room = width.saturating_sub(head.chars().count()).max(10);
            let t = if title.chars().count() > room {
                let cut: String = title.chars().take(room - 1).collect();
                format!("{cut}…")
            } else {
                title
            };
            writeln!(out, "{}", st.dim(&format!("{head}{t}")))?;
            continue;
        }
        let mut lines = Vec::new();
        write_wrapped(&mut lines, &head, &title, head.chars().count(), width)?;
        for l in String::from_utf8_lossy(&lines).lines() {
            writeln!(out, "{}", st.bold(l))?;
        }
        for fact in f.evidence.facts.iter().take(3) {
            write_wrapped(out, "      ", &sanitize(fact.trim_start()), 8, width)?;
        }
        if let Some(at) = item.first_location() {
            let at = sanitize(&at);
            writeln!(
                out,
                "      {}",
                st.dim(&shorten_middle(&at, width.saturating_sub(6)))
            )?;
        }
        for a in f.advice.iter().take(2) {
            write_wrapped(out, "      → ", &sanitize(a), 8, width)?;
        }
    }
    Ok(())
}

/// A folder of ranks: the verdict over the ranks, the per-rank table, the cross-rank findings,
/// then a rule before the full report of the shown rank.
fn write_ranks(
    sec: &super::ranks::RanksSection,
    width: usize,
    st: &Style,
    out: &mut dyn Write,
) -> io::Result<()> {
    writeln!(
        out,
        "{}",
        st.bold(&shorten_middle(
            &format!(
                "stallscope {} — {} rank{} in {} ({} file{} at once)",
                env!("CARGO_PKG_VERSION"),
                sec.ranks.len(),
                if sec.ranks.len() == 1 { "" } else { "s" },
                sanitize(&sec.folder),
                sec.jobs,
                if sec.jobs == 1 { "" } else { "s" }
            ),
            width
        ))
    )?;
    write_verdict(&sec.verdict, width, st, out)?;
    // one unit for the table: ms unless the median step is under 1 ms
    let (unit, scale) = layout::ranks::table_unit(sec.median_step_time_us);
    let num = |v: f64| layout::ranks::in_unit(v, scale);
    writeln!(out)?;
    writeln!(
        out,
        "{}  {}",
        st.heading(&format!("Ranks ({})", sec.ranks.len())),
        st.dim(&format!(
            "{unit} per step, main GPU of each rank; * slowest; median step {}, spread {:.2}×",
            fmt_us(sec.median_step_time_us),
            sec.spread
        ))
    )?;
    let mut t = Table::new(&[
        "rank",
        "file",
        "steps",
        "step",
        "util",
        "compute",
        "comm exp",
        "comm ovl",
        "idle",
        "top finding",
    ]);
    t.flex = 1;
    t.left = vec![0, 1, 9];
    for line in layout::ranks::lines(sec) {
        let row = line.row;
        let mark = if line.slowest { "*" } else { "" };
        let mut cells = vec![
            format!("{}{mark}", row.rank),
            sanitize(&line.name),
            fmt_count(row.steps as u64),
            num(row.step_time_us),
            row.utilization
                .map(units::ratio)
                .unwrap_or_else(|| "-".into()),
        ];
        cells.extend(line.per_step_us.map(num));
        cells.push(
            row.top_finding
                .as_ref()
                .map(|f| f.id.clone())
                .unwrap_or_else(|| "-".into()),
        );
        t.row(cells);
    }
    t.write(out, width, st)?;
    if let Some((what, rows)) = sec.arrival_table() {
        writeln!(out)?;
        writeln!(
            out,
            "{}  {}",
            st.heading("Arrivals"),
            st.dim(&sanitize(&what))
        )?;
        let mut t = Table::new(&super::ranks::ARRIVAL_COLUMNS);
        t.left = vec![0, 4];
        rows.into_iter()
            .for_each(|r| t.row(r.iter().map(|c| sanitize(c)).collect()));
        t.write(out, width, st)?;
    }
    for n in &sec.notes {
        write_wrapped(out, "note: ", &sanitize(n), 6, width)?;
    }
    for k in &sec.skipped {
        write_wrapped(out, "skipped: ", &sanitize(&k.error), 9, width)?;
    }
    for d in &sec.duplicates {
        let files: Vec<String> = d.files.iter().map(|f| sanitize(f)).collect();
        write_wrapped(
            out,
            "",
            &format!(
                "rank {} appears in {} files: {}",
                d.rank,
                files.len(),
                files.join(", ")
            ),
            2,
            width,
        )?;
    }
    for g in &sec.spans {
        writeln!(out)?;
        writeln!(out, "{}", st.heading(&g.title()))?;
        let mut t = Table::new(&super::ranks::SPAN_COLUMNS);
        for (i, p) in g.spans.iter().enumerate() {
            let file = crate::text::file_name(&p.path);
            let mut row = vec![(i + 1).to_string(), sanitize(&shorten_middle(&file, 36))];
            row.extend(p.cells().iter().map(|c| sanitize(c)));
            t.row(row);
        }
        t.write(out, width, st)?;
        for n in &g.notes {
            write_wrapped(out, "  note: ", &sanitize(n), 4, width)?;
        }
    }
    if !sec.findings.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "{}  {}",
            st.heading(&format!("Across ranks ({})", sec.findings.len())),
            st.dim("ranked by time recoverable per step (upper bounds)")
        )?;
        let items = layout::findings::items(None, &sec.findings);
        write_finding_items(&items, width, st, out)?;
    }
    writeln!(out)?;
    let what = if sec.shown.why == "requested" {
        format!("Rank {} (--rank)", sec.shown.rank)
    } else {
        format!(
            "Rank {}, the slowest (--rank N for another)",
            sec.shown.rank
        )
    };
    let head = format!("══ {what} ");
    let fill = width.saturating_sub(head.chars().count());
    writeln!(
        out,
        "{}",
        st.heading(&format!("{head}{}", "═".repeat(fill)))
    )?;
    if let Some(story) = &sec.shown.story {
        write_wrapped(out, "Across the ranks: ", &sanitize(story), 18, width)?;
    }
    Ok(())
}

/// Splits `text` into lines of at most `width` characters at spaces (long words are cut).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(10);
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ') {
        let w = word.chars().count();
        let c = cur.chars().count();
        if c > 0 && c + 1 + w > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
        while cur.chars().count() > width {
            let head: String = cur.chars().take(width).collect();
            let tail: String = cur.chars().skip(width).collect();
            lines.push(head);
            cur = tail;
        }
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    lines
}

/// The capture-check notes of the figures a section prints ([`layout::figure_notes`]), one
/// wrapped line each under its table.
fn write_figure_notes(
    r: &Report,
    figures: &[&str],
    width: usize,
    out: &mut dyn Write,
) -> io::Result<()> {
    for n in layout::figure_notes(r, figures) {
        write_wrapped(out, "  note: ", &sanitize(n), 4, width)?;
    }
    Ok(())
}

/// Writes `prefix` + `text` wrapped to `width`, continuation lines indented by `indent`.
fn write_wrapped(
    out: &mut dyn Write,
    prefix: &str,
    text: &str,
    indent: usize,
    width: usize,
) -> io::Result<()> {
    let first = width.saturating_sub(prefix.chars().count());
    let lines = wrap(text, first.min(width.saturating_sub(indent)));
    for (i, l) in lines.iter().enumerate() {
        if i == 0 {
            writeln!(out, "{prefix}{l}")?;
        } else {
            writeln!(out, "{}{l}", " ".repeat(indent))?;
        }
    }
    Ok(())
}

/// The "Window" section: how the window was chosen, what was left out and why, compile work.
fn write_window(r: &Report, width: usize, st: &Style, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "{}  {}",
        st.heading("Window"),
        shorten_middle(&sanitize(&r.window.summary()), width.saturating_sub(8))
    )?;
    for (label, text) in r.window.lines() {
        let text = sanitize(&text);
        match label {
            "" => writeln!(out, "  {text}")?,
            "excluded" => {
                write_wrapped(out, &format!("  {} ", st.dim("excluded")), &text, 4, width)?
            }
            l => write_wrapped(out, &format!("  {l}: "), &text, 4, width)?,
        }
    }
    Ok(())
}

/// The capture check: what limits the numbers, each with its effect.
fn write_capture_check(
    r: &Report,
    width: usize,
    st: &Style,
    out: &mut dyn Write,
) -> io::Result<()> {
    let c = layout::capture_check(r);
    writeln!(out)?;
    writeln!(out, "{}  {}", st.heading(&c.title), st.dim(c.subtitle))?;
    for i in &c.items {
        write_wrapped(
            out,
            &format!("  {}: ", i.label),
            &sanitize(&i.text),
            4,
            width,
        )?;
        if let Some(e) = &i.effect {
            write_wrapped(out, "    → ", &sanitize(e), 6, width)?;
        }
    }
    Ok(())
}

/// CUDA/HIP graph replays and compiled code, when the capture has them.
fn write_compiled(r: &Report, width: usize, st: &Style, out: &mut dyn Write) -> io::Result<()> {
    let Some(c) = layout::compiled(r) else {
        return Ok(());
    };
    writeln!(out)?;
    writeln!(out, "{}", st.heading(&c.title))?;
    for i in &c.items {
        let label = format!("  {}: ", i.label.to_lowercase());
        write_wrapped(out, &label, &sanitize(&i.text), 4, width)?;
    }
    Ok(())
}

/// Under the iteration table: the kinds of iterations and the time between them.
fn write_iteration_kinds(r: &Report, width: usize, out: &mut dyn Write) -> io::Result<()> {
    if let Some(k) = r.steps_found.kinds_line() {
        write_wrapped(out, "  kinds: ", &k, 4, width)?;
    }
    if let Some(g) = r.steps_found.gaps_line() {
        write_wrapped(out, "  between iterations: ", &g, 4, width)?;
    }
    Ok(())
}

fn phase_label(p: &super::PhaseInfo) -> String {
    format!("{}{}", "  ".repeat(p.depth as usize), sanitize(&p.name))
}

/// The phases section of `analyze`: roots and their children, by GPU time.
fn write_phases_section(
    r: &Report,
    top: usize,
    width: usize,
    st: &Style,
    out: &mut dyn Write,
) -> io::Result<()> {
    if !layout::phases::annotated(r) {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "{}  {}",
        st.heading("Phases"),
        st.dim("user annotations and the device work launched inside (`stallscope phases`)")
    )?;
    let mut t = Table::new(&[
        "phase",
        "calls",
        "cpu total",
        "kernels",
        "gpu time",
        "gpu span",
        "share",
    ]);
    let (rows, hidden) = layout::phases::roots_and_children(r, top);
    for p in &rows {
        t.row(phase_row(p, false));
    }
    t.write(out, width, st)?;
    if hidden > 0 {
        writeln!(
            out,
            "  {}",
            st.dim(&format!(
                "{hidden} more phases: `stallscope phases` prints the whole tree"
            ))
        )?;
    }
    Ok(())
}

/// Operators and phases ranked by time lost against their roofline, per step.
fn write_efficiency_section(
    r: &Report,
    top: usize,
    width: usize,
    st: &Style,
    out: &mut dyn Write,
) -> io::Result<()> {
    let Some(e) = &r.efficiency else {
        return Ok(());
    };
    let top = if top == 0 { usize::MAX } else { top.min(10) };
    writeln!(out)?;
    writeln!(
        out,
        "{}  {}",
        st.heading("Efficiency"),
        st.dim(&layout::efficiency::efficiency_subtitle(e))
    )?;
    let mut t = Table::new(&layout::efficiency::EFFICIENCY_COLUMNS);
    let row = |name: String, x: &crate::report::mirrors::EfficiencyRowInfo| {
        let mut v = vec![name];
        v.extend(layout::efficiency::efficiency_cells(x));
        v
    };
    for o in e.ops.iter().take(top) {
        t.row(row(sanitize(&shorten_middle(&o.name, 44)), o));
    }
    for p in e.phases.iter().take(top.min(5)) {
        t.row(row(
            sanitize(&shorten_middle(&format!("phase {}", p.name), 44)),
            p,
        ));
    }
    t.write(out, width, st)?;
    write_figure_notes(r, &["efficiency"], width, out)
}

/// The memory section alone (`stallscope memory`), without colours.
pub fn write_memory(r: &Report, width: usize, out: &mut dyn Write) -> io::Result<()> {
    write_memory_section(r, width, &Style { color: false }, out)
}

/// torch's memory-timeline export: the peak and the bytes per category at it.
pub fn write_memory_export(
    path: &str,
    t: &crate::ingest::torch_memory::CategoryTimeline,
    width: usize,
    out: &mut dyn Write,
) -> io::Result<()> {
    writeln!(
        out,
        "{}",
        shorten_middle(
            &format!(
                "torch memory timeline — {} ({} entries, {} timestamps)",
                sanitize(path),
                fmt_count(t.entries),
                fmt_count(t.times.len() as u64)
            ),
            width
        )
    )?;
    let Some(p) = layout::memory::export_peak(t) else {
        return writeln!(out, "  no entries");
    };
    writeln!(
        out,
        "  peak {} at timestamp #{} ({} after the first timed entry, {} before the last)",
        p.bytes, p.index, p.after_first, p.before_last
    )?;
    let mut tb = Table::new(&["category", "at the peak", "share", "at the end"]);
    for row in p.rows {
        tb.row(row.to_vec());
    }
    tb.write(out, width, &Style { color: false })
}

/// Per device: the memory peak of the window, the allocator's share, churn per step and what
/// is live at the peak.
fn write_memory_section(
    r: &Report,
    width: usize,
    st: &Style,
    out: &mut dyn Write,
) -> io::Result<()> {
    use layout::memory;
    let Some(m) = &r.memory else {
        return Ok(());
    };
    for d in &m.devices {
        writeln!(out)?;
        writeln!(
            out,
            "{}  {}",
            st.heading(&format!("{} memory", memory::memory_device_label(d.device))),
            st.dim("from profile_memory events; `stallscope memory --format csv` for the timeline")
        )?;
        let line = memory::memory_summary(d);
        write_wrapped(out, "  ", &sanitize(&line), 2, width)?;
        let live = memory::live_at_peak(d);
        if live.is_empty() {
            continue;
        }
        let mut t = Table::new(&[
            "live at the peak: operator",
            "phase",
            "blocks",
            "bytes",
            "share",
        ]);
        for g in live {
            t.row(vec![
                sanitize(&shorten_middle(g.op, 40)),
                sanitize(&shorten_middle(g.phase, 28)),
                g.blocks,
                g.bytes,
                g.share,
            ]);
        }
        t.write(out, width, st)?;
    }
    Ok(())
}

fn phase_row(p: &layout::phases::PhaseRow, mean: bool) -> Vec<String> {
    let mut v = vec![phase_label(p.phase), p.calls.clone(), p.cpu_total.clone()];
    if mean {
        v.push(p.cpu_mean.clone());
    }
    v.extend([
        p.kernels.clone(),
        p.gpu.clone(),
        p.gpu_span.clone(),
        p.share.clone(),
    ]);
    v
}

/// `stallscope phases`: the window and the phase tree down to `depth` levels (0 = all).
pub fn write_phases_tree(
    r: &Report,
    depth: u32,
    width: usize,
    out: &mut dyn Write,
) -> io::Result<()> {
    let st = Style { color: false };
    let file = crate::text::file_name(&r.source.path);
    writeln!(
        out,
        "{}",
        shorten_middle(&format!("{} — {}", r.generator, sanitize(&file)), width)
    )?;
    write_window(r, width, &st, out)?;
    writeln!(out)?;
    if r.phases.is_empty() {
        writeln!(out, "no device work and no user annotation in this window")?;
        return Ok(());
    }
    if !layout::phases::annotated(r) {
        writeln!(
            out,
            "no user annotations (record_function ranges) in this window: all device work is \
             (unannotated)"
        )?;
    }
    // backward share of the GPU time, when the window has backward work
    let bwd = layout::phases::has_backward(r);
    let mut headers = vec![
        "phase",
        "calls",
        "cpu total",
        "cpu mean",
        "kernels",
        "gpu time",
        "gpu span",
        "share",
    ];
    if bwd {
        headers.push("bwd");
    }
    let mut t = Table::new(&headers);
    let (rows, hidden) = layout::phases::down_to(r, depth);
    for p in &rows {
        let mut row = phase_row(p, true);
        if bwd {
            row.push(p.backward.clone());
        }
        t.row(row);
    }
    t.write(out, width, &st)?;
    if hidden > 0 {
        writeln!(
            out,
            "{hidden} deeper phases not shown (--depth 0 shows all)"
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortening_keeps_both_ends() {
        let s = shorten_middle(
            "void cudnn::detail::dgrad_engine<float, 512, 6>(int, float)",
            20,
        );
        assert_eq!(s.chars().count(), 20);
        assert!(s.starts_with("void cudnn") && s.ends_with("float)"));
        assert_eq!(shorten_middle("short", 20), "short");
    }

    #[test]
    fn units() {
        assert_eq!(fmt_us(0.5), "500 ns");
        assert_eq!(fmt_us(41.25), "41.2 µs");
        assert_eq!(fmt_us(177592.0), "177.59 ms");
        assert_eq!(fmt_count(1234567), "1,234,567");
        assert_eq!(sanitize("a\x1b[31mb"), "a\\x1b[31mb");
    }
}
