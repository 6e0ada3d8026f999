//! The HTML report: one self-contained page (inline CSS, inline SVG charts drawn here, one
//! small inline script for tooltips and table sorting) that works offline and makes no network
//! request.
//!
//! Safety: every string that comes from the trace goes through [`escape`], in text and in
//! attributes alike; the script only ever puts text into the page with `textContent`. Names
//! are listed once, escaped, in a hidden `<ol id="names">` that chart elements refer to by
//! index (`data-n`), which also keeps big reports small. A Content-Security-Policy allows no
//! network access at all and only the page's own script (by its SHA-256), so even a name that
//! slipped through could neither run code nor load anything.
//!
//! When the page has loaded, the script writes a summary of what rendered into
//! `<body data-selfcheck="…">` (script errors, resources fetched, shapes drawn per chart),
//! which the browser test reads.
//!
//! The page is put together here (head, header, the sections in order, footer); the
//! sections are in `sections.rs`, the SVG charts in `charts.rs`, and the stylesheet and
//! the script are the files `style.css` and `script.js` beside them, included at build time
//! (their bytes, the leading newline of `style.css` included, are the page's).

use std::fmt::Write as _;
use std::io::{self, Write};

use base64::Engine as _;
use sha2::Digest as _;

use super::units::{fmt_bytes, fmt_count};
use super::{RenderOptions, Renderer, Report};
use crate::text::{code_parts, Part};

/// The self-contained HTML page.
pub struct Html;

/// Escapes text for HTML element content and quoted attribute values (`&`, `<`, `>`, `"`,
/// `'`). Control characters other than tab and newline become U+FFFD.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' => out.push(c),
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Escapes a stallscope-written sentence (a finding's title, facts, advice) in which
/// `` `code` `` marks code: each part goes through [`escape`], code parts in `<code>`. An
/// unmatched backtick stays as text.
pub fn rich(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 32);
    code_parts(s, |part| match part {
        Part::Code(c) => {
            out.push_str("<code>");
            out.push_str(&escape(c));
            out.push_str("</code>");
        }
        Part::Tick => out.push('`'),
        Part::Text { text, .. } => out.push_str(&escape(text)),
    });
    out
}

macro_rules! w {
    ($dst:expr, $($arg:tt)*) => {{
        let _ = write!($dst, $($arg)*);
    }};
}

mod charts;
mod sections;

/// The page's stylesheet (inline in `<style>`).
const CSS: &str = include_str!("style.css");

/// The page's one script (inline; the Content-Security-Policy allows it by its hash).
const SCRIPT: &str = include_str!("script.js");

/// The Content-Security-Policy source of a script: `sha256-` and the base64 of its SHA-256.
fn script_hash(script: &str) -> String {
    let digest = sha2::Sha256::digest(script.as_bytes());
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// One decimal, without a trailing `.0`.
fn n1(v: f64) -> String {
    let s = format!("{v:.1}");
    match s.strip_suffix(".0") {
        Some(t) if t != "-0" => t.to_string(),
        Some(_) => "0".into(),
        None => s,
    }
}

/// A value for `data-v`/`data-d`: up to three decimals.
fn n3(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" || s.is_empty() {
        "0".into()
    } else {
        s.to_string()
    }
}

/// The report's input file name, without its folders.
fn file_name(r: &Report) -> String {
    crate::text::file_name(&r.source.path)
}

/// The page header: file, generator, size, events and the devices (same names grouped).
fn header(s: &mut String, r: &Report) {
    let file = file_name(r);
    w!(
        s,
        r#"<header><h1>stallscope report <span class="file">{}</span></h1><p class="meta">{} · {} · {} events"#,
        escape(&file),
        escape(&r.generator),
        fmt_bytes(r.source.bytes),
        fmt_count(r.source.events)
    );
    // devices, identical names grouped ("8× NVIDIA H100")
    let mut groups: Vec<(&str, Vec<i64>)> = Vec::new();
    for d in &r.devices {
        let name = if d.name.is_empty() {
            "(unnamed)"
        } else {
            &d.name
        };
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, ids)) => ids.push(d.id),
            None => groups.push((name, vec![d.id])),
        }
    }
    for (name, ids) in groups {
        if ids.len() == 1 {
            w!(s, " · GPU {} {}", ids[0], escape(name));
        } else {
            w!(s, " · {}× {}", ids.len(), escape(name));
        }
    }
    s.push_str("</p></header>");
}

/// A numeric table cell: the value in `data-v` (for sorting), the text shown.
fn num_td(s: &mut String, v: f64, text: &str) {
    w!(s, r#"<td data-v="{}">{}</td>"#, n3(v), escape(text));
}

impl Renderer for Html {
    fn render(&self, r: &Report, opts: &RenderOptions, out: &mut dyn Write) -> io::Result<()> {
        let top = if opts.top == 0 { usize::MAX } else { opts.top };
        let mut s = String::with_capacity(256 << 10);
        let csp = format!(
            "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src '{}'; base-uri 'none'; form-action 'none'",
            script_hash(SCRIPT)
        );
        w!(
            s,
            r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="{}"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="generator" content="{}"><title>stallscope: {}</title><style>{CSS}"#,
            escape(&csp),
            escape(&r.generator),
            escape(&file_name(r))
        );
        for (i, c) in charts::CAT_COLORS.iter().enumerate() {
            w!(s, ".k{i}{{fill:{c}}}");
        }
        s.push_str("</style></head><body>");
        header(&mut s, r);
        s.push_str("<main>");
        if let Some(sec) = &r.ranks {
            sections::ranks_section(&mut s, sec);
            sections::spans_section(&mut s, sec);
        }
        sections::diagnosis(&mut s, r);
        sections::capture_check(&mut s, r);
        sections::compiled_section(&mut s, r);
        sections::cards(&mut s, r);
        sections::window_section(&mut s, r);
        charts::steps_chart(&mut s, r);
        charts::phases_chart(&mut s, r);
        charts::split_chart(&mut s, r);
        if let Some(t) = &r.step_timeline {
            charts::timeline_chart(&mut s, t);
        }
        sections::kernels_table(&mut s, r, top);
        sections::ops_table(&mut s, r, top);
        sections::efficiency_table(&mut s, r, top);
        charts::memory_chart(&mut s, r);
        sections::devices_table(&mut s, r);
        sections::notes(&mut s, r);
        w!(
            s,
            r#"<footer>Generated by {} from {}. This page is self-contained: it loads nothing from the network.</footer></main>"#,
            escape(&r.generator),
            escape(&r.source.path)
        );
        s.push_str(r#"<div id="tip" hidden></div><ol id="names" hidden>"#);
        if let Some(t) = &r.step_timeline {
            for n in &t.names {
                w!(s, "<li>{}</li>", escape(n));
            }
        }
        w!(s, "</ol><script>{SCRIPT}</script></body></html>\n");
        out.write_all(s.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_hash_is_the_base64_of_the_sha256() {
        // FIPS 180-2's "abc" vector, in base64
        assert_eq!(
            script_hash("abc"),
            "sha256-ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0="
        );
        assert_eq!(
            script_hash(""),
            "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
        );
    }

    #[test]
    fn escaping() {
        assert_eq!(
            escape(r#"<script>alert(1)</script>"#),
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        );
        assert_eq!(
            escape(r#""><img src=x onerror='a'>"#),
            "&quot;&gt;&lt;img src=x onerror=&#39;a&#39;&gt;"
        );
        assert_eq!(escape("a&b\u{1b}"), "a&amp;b\u{FFFD}");
    }

    #[test]
    fn rich_text_code_spans() {
        assert_eq!(rich("use `a<b>` now"), "use <code>a&lt;b&gt;</code> now");
        assert_eq!(rich("odd ` tick"), "odd ` tick");
        assert_eq!(rich("`<script>`"), "<code>&lt;script&gt;</code>");
        assert_eq!(rich("<img src=x>"), "&lt;img src=x&gt;");
    }

    #[test]
    fn ticks() {
        use super::charts::{nice_step, tick_label};
        assert_eq!(nice_step(177_000.0, 8.0), 50_000.0);
        assert_eq!(tick_label(100_000.0, 50_000.0), "100 ms");
        assert_eq!(tick_label(1500.0, 500.0), "1.5 ms");
        assert_eq!(tick_label(0.0, 500.0), "0");
        assert_eq!(tick_label(0.04, 0.02), "40 ns");
        assert_eq!(tick_label(2.0, 0.5), "2.0 µs");
        assert_eq!(n1(3.0), "3");
        assert_eq!(n3(0.12345), "0.123");
        assert_eq!(n3(2.5), "2.5");
    }
}
