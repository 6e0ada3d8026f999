//! Rendering of the optimisation-loop parts of a comparison: the typed verdict, the parity of
//! the sides and the repeated runs, for the terminal (inside 100 columns), Markdown and HTML.
//! Kept apart from [`super::render`]'s layout, which calls one block per format right after
//! the caveats. Renderers format, never compute; names are escaped for each format.

use std::io::{self, Write};

use super::parity::{Parity, ParityStatus};
use super::repeats::{Repeats, SideRuns, Verdict};
use super::Comparison;
use crate::report::html::escape as html_escape;
use crate::report::markdown::escape as md_escape;
use crate::report::terminal::{fmt_us, sanitize};
use crate::report::units::percent;
use crate::text::{shorten_middle, wrap};

/// `Verdict: REGRESSION` and friends, upper case for the terminal headline.
fn headline(v: &Verdict) -> String {
    v.kind.words().to_uppercase()
}

/// The parity line: `same workload: batch 32, dtype float, …` or the checks that differ.
fn parity_line(p: &Parity) -> Option<String> {
    let known: Vec<String> = p
        .checks
        .iter()
        .filter(|c| c.status != ParityStatus::Unknown)
        .filter(|c| {
            matches!(
                c.what,
                "batch" | "dtype mix" | "step definition" | "device count"
            )
        })
        .map(|c| match c.status {
            ParityStatus::Same => format!("{} {}", c.what, c.before),
            _ => format!("{} {} → {}", c.what, c.before, c.after),
        })
        .collect();
    if known.is_empty() {
        return None;
    }
    let head = if p.same_workload {
        "same workload"
    } else {
        "not the same workload"
    };
    Some(format!("{head}: {}", known.join(", ")))
}

/// One side's runs laid out once for the three formats: the mean, the run-to-run spread
/// (`4.2%`) and the spread of steps within a run (`±1.3%`).
struct RunCells {
    mean: String,
    spread: String,
    within: String,
}

impl RunCells {
    fn of(s: &SideRuns) -> Self {
        RunCells {
            mean: fmt_us(s.mean_us),
            spread: percent(Some(s.spread_pct)),
            within: format!("±{}", percent(Some(s.within_pct))),
        }
    }
}

fn runs_summary(label: &str, s: &SideRuns) -> String {
    let c = RunCells::of(s);
    format!(
        "{label} {} runs, mean {}, run-to-run spread {}, steps within a run {}",
        s.runs.len(),
        c.mean,
        c.spread,
        c.within
    )
}

fn run_means(s: &SideRuns) -> String {
    let v: Vec<String> = s
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mark = if i == s.representative { "*" } else { "" };
            format!("{}{mark}", fmt_us(r.mean_us))
        })
        .collect();
    v.join(", ")
}

fn ratio_note(r: &Repeats) -> Option<String> {
    r.between_over_within.map(|x| {
        format!(
            "run means spread {x:.1}× what their steps predict{}",
            if x > 2.0 {
                ": a gate on one capture per side flaps"
            } else {
                ""
            }
        )
    })
}

/// The terminal block: the verdict, the parity line and the runs.
pub fn terminal(c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    let s = |x: &str| sanitize(x);
    let v = &c.verdict;
    let text = format!("Verdict: {}: {}", headline(v), v.reason);
    for (i, line) in wrap(&s(&text), 98).iter().enumerate() {
        writeln!(out, "{}{line}", if i == 0 { "" } else { "  " })?;
    }
    if let Some(p) = parity_line(&c.parity) {
        writeln!(out, "  {}", shorten_middle(&s(&p), 96))?;
    }
    if let Some(r) = &c.repeats {
        for (label, side) in [("before", &r.before), ("after ", &r.after)] {
            writeln!(out, "  {}", shorten_middle(&runs_summary(label, side), 96))?;
            writeln!(
                out,
                "         {}",
                shorten_middle(&format!("run means {}", run_means(side)), 89)
            )?;
        }
        if let Some(n) = ratio_note(r) {
            writeln!(out, "  {}", shorten_middle(&n, 96))?;
        }
    }
    Ok(())
}

/// The Markdown block.
pub fn markdown(c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    let e = |x: &str| md_escape(x);
    let v = &c.verdict;
    writeln!(out, "**Verdict: {}** — {}\n", e(&headline(v)), e(&v.reason))?;
    if let Some(p) = parity_line(&c.parity) {
        writeln!(out, "{}\n", e(&p))?;
    }
    if let Some(r) = &c.repeats {
        writeln!(
            out,
            "| runs | mean | run-to-run spread | steps within a run | run means (* = in the tables) |\n|---|---|---|---|---|"
        )?;
        for (label, side) in [("before", &r.before), ("after", &r.after)] {
            let c = RunCells::of(side);
            writeln!(
                out,
                "| {label} ({}) | {} | {} | {} | {} |",
                side.runs.len(),
                c.mean,
                c.spread,
                c.within,
                e(&run_means(side))
            )?;
        }
        writeln!(out)?;
        if let Some(n) = ratio_note(r) {
            writeln!(out, "{}\n", e(&n))?;
        }
    }
    Ok(())
}

/// What keeps the diff page inside a 1280 px window (a second style element, after the
/// page's own): any word of a cell, paragraph or heading may break (kernel names, paths and
/// caveats without spaces), numbers stay on one line, a first column keeps room for its
/// label words (`verdict`, `increased`), and tables no wider than the page.
pub const HTML_FIT_CSS: &str = "<style>td,th,p,h1,h2{overflow-wrap:anywhere}\
    td:first-child{min-width:5em}table{max-width:100%}\
    .path{font-family:ui-monospace,monospace;font-size:12px}</style>";

/// Characters of a path shown in the HTML page; longer ones lose their middle.
pub const HTML_PATH_CHARS: usize = 72;

/// A path in the HTML page: shortened in the middle to [`HTML_PATH_CHARS`], the whole path
/// in its `title` (shown on hover), escaped.
pub fn html_path(p: &str) -> String {
    format!(
        "<span class=path title=\"{}\">{}</span>",
        html_escape(p),
        html_escape(&crate::text::shorten_middle(p, HTML_PATH_CHARS))
    )
}

/// The HTML block (appended to the page body by the caller).
pub fn html(c: &Comparison, h: &mut String) {
    let e = |x: &str| html_escape(x);
    let v = &c.verdict;
    h.push_str(&format!(
        "<p class=verdict><b>Verdict: {}</b> — {}</p>\n",
        e(&headline(v)),
        e(&v.reason)
    ));
    if let Some(p) = parity_line(&c.parity) {
        h.push_str(&format!("<p>{}</p>\n", e(&p)));
    }
    if let Some(r) = &c.repeats {
        h.push_str(
            "<table><tr><th>runs</th><th>mean</th><th>run-to-run spread</th>\
             <th>steps within a run</th><th>run means (* = in the tables)</th></tr>\n",
        );
        for (label, side) in [("before", &r.before), ("after", &r.after)] {
            let c = RunCells::of(side);
            h.push_str(&format!(
                "<tr><td>{label} ({})</td><td class=n>{}</td><td class=n>{}</td>\
                 <td class=n>{}</td><td>{}</td></tr>\n",
                side.runs.len(),
                e(&c.mean),
                c.spread,
                c.within,
                e(&run_means(side))
            ));
        }
        h.push_str("</table>\n");
        if let Some(n) = ratio_note(r) {
            h.push_str(&format!("<p>{}</p>\n", e(&n)));
        }
    }
}
