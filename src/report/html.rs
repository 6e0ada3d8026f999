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

use std::fmt::Write as _;
use std::io::{self, Write};

use super::terminal::{fmt_bytes, fmt_count, fmt_pct, fmt_us, shorten_middle};
use super::{BreakdownUs, RenderOptions, Renderer, Report, StepDeviceInfo, StepTimelineInfo};
use crate::model::classify::KernelCategory;
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

/// Kernel categories in display order; `k{index}` is the CSS class of each.
const CATEGORIES: [KernelCategory; 11] = [
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

fn cat_index(c: KernelCategory) -> usize {
    CATEGORIES.iter().position(|x| *x == c).unwrap_or(10)
}

const CAT_COLORS: [&str; 11] = [
    "#4e79a7", "#59a14f", "#9c6ade", "#a0cbe8", "#f1ce63", "#b6992d", "#f28e2b", "#ffbe7d",
    "#d37295", "#499894", "#bab0ac",
];

/// Colours of the step breakdown roles, in [`BreakdownUs::parts`] order.
const ROLE_COLORS: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#ffbe7d", "#b07aa1", "#9c755f", "#edc948", "#59a14f", "#bab0ac",
];

const SPLIT_COLORS: [&str; 4] = ["#4e79a7", "#b07aa1", "#f28e2b", "#e15759"];

const CSS: &str = r#"
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--bg:#fff;--soft:#f6f8fa;--idle:#e15759}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--fg);background:var(--bg)}
header{background:#24292f;color:#fff;padding:18px 32px}
header h1{margin:0;font-size:22px;font-weight:600}
header h1 .file{font-weight:400;color:#c9d1d9;word-break:break-all}
header .meta{margin:4px 0 0;color:#c9d1d9;font-size:13px}
main{max-width:1320px;margin:0 auto;padding:8px 32px 40px}
section{margin:26px 0}
h2{font-size:18px;margin:0 0 4px;padding-bottom:4px;border-bottom:1px solid var(--line)}
p.note{margin:4px 0 10px;color:var(--muted);font-size:13px}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin-top:18px}
.card{flex:1 1 180px;border:1px solid var(--line);border-radius:8px;padding:10px 14px;background:var(--soft)}
.card .k{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.card .v{font-size:24px;font-weight:600;margin-top:2px}
.card .s{color:var(--muted);font-size:12px}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;margin:6px 0 8px;font-size:12px;color:var(--muted)}
.legend span{display:inline-flex;align-items:center;gap:5px}
.legend i{display:inline-block;width:12px;height:12px;border-radius:2px}
.legend i.line{width:3px;height:14px;border-radius:0}
svg.chart{display:block;width:100%;height:auto;font-size:12px}
svg text{fill:var(--fg)}
svg text.m{fill:var(--muted)}
svg .grid{stroke:#e6e9ed;stroke-width:1}
svg .axis{stroke:#8c959f;stroke-width:1}
svg rect[data-tip]:hover,svg rect[data-n]:hover,svg rect.gap:hover{stroke:#000;stroke-width:1}
svg .band{fill:var(--idle);opacity:.13}
svg .gap{fill:var(--idle)}
svg .hsync{stroke:#24292f;stroke-width:1.2;stroke-dasharray:3 2}
svg .hit{fill:transparent}
svg .dsync{fill:#24292f}
svg .lane{fill:#f6f8fa}
svg.timeline{cursor:crosshair;user-select:none}
svg .sel{fill:rgba(9,105,218,.12);stroke:#0969da;stroke-width:1}
.zoombar{font-size:12px;color:var(--muted);margin:2px 0 6px;min-height:22px}
.zoombar button{font:inherit;margin-left:8px;padding:1px 8px;border:1px solid var(--line);border-radius:5px;background:var(--soft);cursor:pointer}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{padding:4px 8px;border-bottom:1px solid #eaeef2;text-align:right;white-space:nowrap}
th{background:var(--soft);font-weight:600;position:sticky;top:0}
table.sortable th{cursor:pointer;user-select:none}
table.sortable th:hover{background:#eaeef2}
th[aria-sort=descending]::after{content:" ▾"}
th[aria-sort=ascending]::after{content:" ▴"}
td.name,th.name,td.t,th.t{text-align:left}
td.name{white-space:normal;overflow-wrap:anywhere;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;min-width:320px}
td .bar{display:inline-block;height:8px;background:#4e79a7;border-radius:2px;margin-right:6px;vertical-align:middle}
td i.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px;vertical-align:-1px}
.tablewrap{max-height:640px;overflow:auto;border:1px solid var(--line);border-radius:6px}
ul.plain{margin:6px 0;padding-left:20px}
.warn{color:#9a6700}
#tip{position:fixed;z-index:10;max-width:640px;background:#24292f;color:#fff;padding:6px 9px;border-radius:6px;font-size:12px;pointer-events:none;box-shadow:0 2px 8px rgba(0,0,0,.25);overflow-wrap:anywhere}
#tip .t0{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;margin-bottom:2px}
.verdict{margin-top:18px;font-size:18px;font-weight:600;padding:12px 16px;border-radius:8px;background:#fff8c5;border:1px solid #d4a72c}
.verdict .vlabel{display:inline-block;font-size:11px;text-transform:uppercase;letter-spacing:.06em;background:#24292f;color:#fff;border-radius:4px;padding:2px 7px;margin-right:10px;vertical-align:2px}
details.finding{border:1px solid var(--line);border-left:5px solid #8c959f;border-radius:6px;margin:8px 0;background:#fff}
details.finding.sev-high{border-left-color:#cf222e}
details.finding.sev-medium{border-left-color:#bf8700}
details.finding.sev-low{border-left-color:#0969da}
details.finding summary{cursor:pointer;padding:8px 12px;display:flex;flex-wrap:wrap;align-items:center;gap:4px 10px}
details.finding .sev{font-size:11px;font-weight:700;text-transform:uppercase;letter-spacing:.05em;color:#fff;background:#8c959f;border-radius:4px;padding:1px 7px}
details.finding.sev-high .sev{background:#cf222e}
details.finding.sev-medium .sev{background:#bf8700}
details.finding.sev-low .sev{background:#0969da}
details.finding .ftitle{font-weight:600;flex:1 1 420px}
details.finding .rec{color:var(--muted);font-size:13px}
details.finding .recbar{display:inline-block;width:120px;height:8px;background:#eaeef2;border-radius:4px;overflow:hidden}
details.finding .recbar i{display:block;height:100%;background:#cf222e}
details.finding.sev-medium .recbar i{background:#bf8700}
details.finding.sev-low .recbar i,details.finding.sev-info .recbar i{background:#0969da}
.fbody{padding:0 16px 10px 16px;border-top:1px solid #eaeef2}
.fbody ul{margin:6px 0;padding-left:20px}
.fbody li{white-space:pre-wrap;overflow-wrap:anywhere}
.fbody .fh{font-weight:600;margin:10px 0 2px}
.fbody .basis{color:var(--muted);font-size:12px;margin-top:10px}
.fbody .rule{margin-left:6px}
.fbody code,.verdict code,details.finding summary code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;background:#eff1f3;border-radius:4px;padding:1px 4px}
table.where{width:auto;max-width:100%}
table.where td.name{min-width:0}
footer{color:var(--muted);font-size:12px;border-top:1px solid var(--line);padding-top:10px;margin-top:30px}
"#;

const SCRIPT: &str = r#"(function () {
  "use strict";
  var errors = 0;
  window.addEventListener("error", function () { errors++; });
  window.addEventListener("unhandledrejection", function () { errors++; });
  var CATS = ["gemm", "conv", "attention", "elementwise", "reduction", "norm", "memcpy", "memset", "communication", "triton", "other"];
  var names = [];
  var list = document.getElementById("names");
  if (list) {
    for (var i = 0; i < list.children.length; i++) names.push(list.children[i].textContent);
  }
  function fmt(us) {
    var a = Math.abs(us);
    if (a === 0) return "0";
    if (a < 1) return (us * 1000).toFixed(0) + " ns";
    if (a < 1000) return us.toFixed(1) + " \u00b5s";
    if (a < 1e6) return (us / 1000).toFixed(2) + " ms";
    return (us / 1e6).toFixed(2) + " s";
  }
  function lines(el) {
    var d = el.dataset, out = [];
    var m = /(?:^| )k(\d+)(?: |$)/.exec(el.getAttribute("class") || "");
    if (d.n !== undefined) out.push((d.c ? "longest: " : "") + (names[+d.n] || ""));
    if (m && d.c) {
      out.unshift(d.c + " events merged, mostly " + CATS[+m[1]]);
      out.push("busy " + fmt(+d.b) + " of " + fmt(+d.d) + ", from +" + fmt(+d.s) + " in the step");
    } else if (m) {
      out.push(CATS[+m[1]] + " \u00b7 " + fmt(+d.d) + " \u00b7 at +" + fmt(+d.s) + " in the step");
    }
    if (el.getAttribute("class") === "gap") out.push("GPU idle " + fmt(+d.d) + " \u00b7 at +" + fmt(+d.s) + " in the step");
    if (d.tip) out.push(d.tip);
    return out;
  }
  var tip = document.getElementById("tip");
  document.addEventListener("mousemove", function (e) {
    var el = e.target && e.target.closest ? e.target.closest("[data-tip],[data-n],rect.gap") : null;
    if (!el) { tip.hidden = true; return; }
    tip.textContent = "";
    lines(el).forEach(function (t, i) {
      var div = document.createElement("div");
      if (i === 0) div.className = "t0";
      div.textContent = t;
      tip.appendChild(div);
    });
    tip.hidden = false;
    var x = e.clientX + 14, y = e.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth - 8) x = Math.max(8, e.clientX - tip.offsetWidth - 14);
    if (y + tip.offsetHeight > window.innerHeight - 8) y = Math.max(8, e.clientY - tip.offsetHeight - 14);
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  });
  document.addEventListener("mouseleave", function () { tip.hidden = true; });
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    var ths = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(ths, function (th, col) {
      th.tabIndex = 0;
      function sort() {
        var numeric = th.getAttribute("data-type") === "num";
        var cur = th.getAttribute("aria-sort");
        var asc = cur ? cur === "descending" : !numeric;
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[col], y = b.cells[col], r;
          if (numeric) {
            var vx = parseFloat(x.getAttribute("data-v")), vy = parseFloat(y.getAttribute("data-v"));
            if (isNaN(vx)) vx = -Infinity;
            if (isNaN(vy)) vy = -Infinity;
            r = vx === vy ? 0 : (vx < vy ? -1 : 1);
          } else {
            r = x.textContent.localeCompare(y.textContent);
          }
          return asc ? r : -r;
        });
        rows.forEach(function (r) { body.appendChild(r); });
        Array.prototype.forEach.call(ths, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); }
      });
    });
  });
  var SVGNS = "http://www.w3.org/2000/svg";
  var timelines = Array.prototype.slice.call(document.querySelectorAll("svg.timeline"));
  function niceStep(range) {
    var raw = range / 8, mag = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
  }
  function tickLabel(v, step) {
    var div = step >= 1e5 ? 1e6 : step >= 100 ? 1e3 : step >= 0.1 ? 1 : 1e-3;
    var unit = step >= 1e5 ? "s" : step >= 100 ? "ms" : step >= 0.1 ? "\u00b5s" : "ns";
    var s = step / div, dec = s >= 1 ? 0 : Math.ceil(-Math.log10(s) - 1e-9);
    return Math.abs(v) < step / 1e6 ? "0" : (v / div).toFixed(dec) + " " + unit;
  }
  function layout(svg, z0, z1) {
    var x0 = +svg.getAttribute("data-x0"), pw = +svg.getAttribute("data-pw");
    var k = pw / (z1 - z0);
    Array.prototype.forEach.call(svg.querySelectorAll("[data-s]"), function (el) {
      var x = x0 + (+el.getAttribute("data-s") - z0) * k;
      var d = +(el.getAttribute("data-d") || 0);
      var cls = el.getAttribute("class") || "";
      if (el.tagName === "line") {
        el.setAttribute("x1", x.toFixed(2));
        el.setAttribute("x2", x.toFixed(2));
        return;
      }
      var min = cls === "hit" ? 4 : cls === "dsync" ? 1.5 : 0.4;
      el.setAttribute("x", (cls === "hit" ? x - 2 : x).toFixed(2));
      el.setAttribute("width", Math.max(d * k, min).toFixed(2));
    });
    var band = svg.querySelector("path.band");
    if (band) {
      var y = band.getAttribute("data-y"), h = band.getAttribute("data-h"), path = "";
      Array.prototype.forEach.call(svg.querySelectorAll("rect.gap"), function (g) {
        var gx = +g.getAttribute("x"), gw = +g.getAttribute("width");
        if (gx + gw < x0 || gx > x0 + pw) return;
        path += "M" + gx.toFixed(2) + " " + y + "h" + gw.toFixed(2) + "v" + h + "h-" + gw.toFixed(2) + "z";
      });
      band.setAttribute("d", path);
    }
    var ticks = svg.querySelector("g.ticks");
    var y0 = ticks.getAttribute("data-y0"), y1 = ticks.getAttribute("data-y1");
    while (ticks.firstChild) ticks.removeChild(ticks.firstChild);
    var step = niceStep(z1 - z0);
    for (var v = Math.ceil(z0 / step) * step; v <= z1 + step * 1e-6; v += step) {
      var x = (x0 + (v - z0) * k).toFixed(2);
      var line = document.createElementNS(SVGNS, "line");
      line.setAttribute("class", "grid");
      line.setAttribute("x1", x); line.setAttribute("x2", x);
      line.setAttribute("y1", y0); line.setAttribute("y2", y1);
      var text = document.createElementNS(SVGNS, "text");
      text.setAttribute("class", "m");
      text.setAttribute("x", x); text.setAttribute("y", "14");
      text.setAttribute("text-anchor", "middle");
      text.textContent = tickLabel(v, step);
      ticks.appendChild(line);
      ticks.appendChild(text);
    }
  }
  var zoomInfo = document.getElementById("zoominfo");
  function zoom(z0, z1) {
    var range = +timelines[0].getAttribute("data-range");
    var whole = z0 <= 0 && z1 >= range;
    timelines.forEach(function (svg) { layout(svg, z0, z1); svg.setAttribute("data-z0", z0); svg.setAttribute("data-z1", z1); });
    if (zoomInfo) {
      zoomInfo.hidden = whole;
      zoomInfo.firstChild.textContent = "Showing +" + fmt(z0) + " to +" + fmt(z1) + " of the step.";
    }
  }
  function svgX(svg, e) {
    var pt = svg.createSVGPoint();
    pt.x = e.clientX; pt.y = e.clientY;
    return pt.matrixTransform(svg.getScreenCTM().inverse()).x;
  }
  var drag = null;
  timelines.forEach(function (svg) {
    svg.addEventListener("mousedown", function (e) {
      var x0 = +svg.getAttribute("data-x0"), pw = +svg.getAttribute("data-pw");
      var x = svgX(svg, e);
      if (x < x0 || x > x0 + pw || e.button !== 0) return;
      e.preventDefault();
      var sel = document.createElementNS(SVGNS, "rect");
      sel.setAttribute("class", "sel");
      sel.setAttribute("x", x); sel.setAttribute("y", "18");
      sel.setAttribute("width", "0");
      sel.setAttribute("height", Math.max(0, svg.viewBox.baseVal.height - 20));
      svg.appendChild(sel);
      drag = { svg: svg, x: x, sel: sel };
    });
    svg.addEventListener("dblclick", function () { zoom(0, +svg.getAttribute("data-range")); });
  });
  document.addEventListener("mousemove", function (e) {
    if (!drag) return;
    var x0 = +drag.svg.getAttribute("data-x0"), pw = +drag.svg.getAttribute("data-pw");
    var x = Math.min(Math.max(svgX(drag.svg, e), x0), x0 + pw);
    drag.sel.setAttribute("x", Math.min(x, drag.x));
    drag.sel.setAttribute("width", Math.abs(x - drag.x));
  });
  document.addEventListener("mouseup", function (e) {
    if (!drag) return;
    var svg = drag.svg, x0 = +svg.getAttribute("data-x0"), pw = +svg.getAttribute("data-pw");
    var x = Math.min(Math.max(svgX(svg, e), x0), x0 + pw);
    svg.removeChild(drag.sel);
    var a = Math.min(x, drag.x), b = Math.max(x, drag.x);
    drag = null;
    if (b - a < 3) return;
    var range = +svg.getAttribute("data-range");
    var z0 = svg.hasAttribute("data-z0") ? +svg.getAttribute("data-z0") : 0;
    var z1 = svg.hasAttribute("data-z1") ? +svg.getAttribute("data-z1") : range;
    var k = (z1 - z0) / pw;
    zoom(z0 + (a - x0) * k, z0 + (b - x0) * k);
  });
  var reset = document.getElementById("zoomreset");
  if (reset) reset.addEventListener("click", function () { zoom(0, +timelines[0].getAttribute("data-range")); });
  window.addEventListener("load", function () {
    var parts = [], total = 0;
    Array.prototype.forEach.call(document.querySelectorAll("svg[data-chart]"), function (svg) {
      var n = 0;
      Array.prototype.forEach.call(svg.querySelectorAll("rect"), function (r) {
        var b = r.getBoundingClientRect();
        if (b.width > 0 && b.height > 0) n++;
      });
      total += n;
      parts.push(svg.getAttribute("data-chart") + ":" + n);
    });
    var res = performance.getEntriesByType ? performance.getEntriesByType("resource").length : -1;
    document.body.setAttribute("data-selfcheck",
      "errors=" + errors + " resources=" + res + " shapes=" + total + " charts=" + parts.join(","));
  });
})();
"#;

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

fn pct(part: f64, total: f64) -> String {
    if total > 0.0 {
        format!("{:.1}%", part / total * 100.0)
    } else {
        "-".into()
    }
}

/// A "nice" tick step (1, 2 or 5 × 10^k) for about `n` ticks over `range`.
fn nice_step(range: f64, n: f64) -> f64 {
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
fn tick_label(v: f64, step: f64) -> String {
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
fn axis(s: &mut String, range: f64, x0: f64, width: f64, y_text: f64, y0: f64, y1: f64) {
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

fn legend(s: &mut String, items: &[(&str, &str)]) {
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

fn file_name(r: &Report) -> String {
    crate::text::file_name(&r.source.path)
}

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

/// The verdict and the findings, ranked by the time each would recover.
fn diagnosis(s: &mut String, r: &Report) {
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
            escape(&super::efficiency_headline(e))
        );
    }
    if r.findings.is_empty() {
        s.push_str(r#"<p class="note">No finding: nothing here would recover a noticeable share of the step.</p>"#);
    } else {
        w!(
            s,
            r#"<p class="note">{} finding{}, by the time each fix could recover per step (an upper bound; pools of time are never claimed twice). Open one for its evidence and what to do.</p>"#,
            r.findings.len(),
            if r.findings.len() == 1 { "" } else { "s" }
        );
    }
    for (i, f) in r.findings.iter().enumerate() {
        let sev = f.severity.as_str();
        let share = if r.step_time_us > 0.0 {
            (f.recoverable_us / r.step_time_us).clamp(0.0, 1.0)
        } else {
            0.0
        };
        w!(
            s,
            r#"<details class="finding sev-{sev}"{}><summary><span class="sev">{sev}</span><span class="ftitle">{}</span><span class="rec">up to {} per step{}</span><span class="recbar"><i style="width:{}%"></i></span></summary><div class="fbody">"#,
            if i == 0 && sev != "info" { " open" } else { "" },
            rich(&f.title),
            escape(&fmt_us(f.recoverable_us)),
            if r.step_time_us > 0.0 {
                format!(" · {:.1}% of the step", share * 100.0)
            } else {
                String::new()
            },
            n1(share * 100.0)
        );
        if !f.evidence.facts.is_empty() {
            s.push_str(r#"<ul class="facts">"#);
            for fact in &f.evidence.facts {
                w!(s, "<li>{}</li>", rich(fact));
            }
            s.push_str("</ul>");
        }
        if !f.advice.is_empty() {
            s.push_str(r#"<p class="fh">What to do</p><ul class="advice">"#);
            for a in &f.advice {
                w!(s, "<li>{}</li>", rich(a));
            }
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
        w!(
            s,
            r#"<p class="basis">Bound: {} <span class="rule">rule <code>{}</code></span></p></div></details>"#,
            rich(&f.recoverable_basis),
            escape(f.id)
        );
    }
    s.push_str("</section>");
}

fn cards(s: &mut String, r: &Report) {
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
    let n = r.steps.len();
    let unit = r.steps_found.unit();
    card(
        s,
        &format!("Average {unit}"),
        &fmt_us(r.step_time_us),
        &format!("over {n} {unit}{}", if n == 1 { "" } else { "s" }),
    );
    if r.step_time_us > 0.0 {
        let mut parts = r.breakdown_us.parts();
        parts.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal));
        let (label, v) = parts[0];
        card(
            s,
            "Largest part of a step",
            &format!("{label} {}", pct(v, r.step_time_us)),
            &format!("{} of {}", fmt_us(v), fmt_us(r.step_time_us)),
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
            &pct(g.idle_us, g.total_us),
            &format!(
                "{} of {} (all streams)",
                fmt_us(g.idle_us),
                fmt_us(g.total_us)
            ),
        );
    }
    s.push_str("</div>");
}

/// Per-step stacked bars of the breakdown, plus the average.
fn steps_chart(s: &mut String, r: &Report) {
    if r.steps.is_empty() {
        return;
    }
    let found = &r.steps_found;
    let unit = found.unit();
    w!(
        s,
        r#"<section id="steps"><h2>Where each {unit}'s time goes</h2>"#
    );
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
                    pct(*v, *total),
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
const PHASE_KINDS: [(&str, &str); 4] = [
    ("kernels", "#4e79a7"),
    ("communication", "#b07aa1"),
    ("memcpy", "#f28e2b"),
    ("memset", "#ffbe7d"),
];

/// The phase tree (annotations, nn.Modules) as bars of the device time each launched.
fn phases_chart(s: &mut String, r: &Report) {
    if r.phases.is_empty() {
        return;
    }
    const MAX_ROWS: usize = 30;
    // every root, and the phases below that launched at least 1 % of the device time
    let shown: Vec<&super::PhaseInfo> = r
        .phases
        .iter()
        .filter(|p| p.depth == 0 || p.gpu_share >= 0.01)
        .take(MAX_ROWS)
        .collect();
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
        .map(|p| p.gpu_us)
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
    for (i, p) in shown.iter().enumerate() {
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
            r#"<text class="m" x="{}" y="{}">{} · {:.1}% · {} call{} · host {}</text>"#,
            n1(label_w + plot_w + 8.0),
            n1(y + 14.0),
            escape(&fmt_us(p.gpu_us)),
            p.gpu_share * 100.0,
            fmt_count(p.calls),
            if p.calls == 1 { "" } else { "s" },
            escape(&fmt_us(p.cpu_total_us))
        );
    }
    s.push_str("</svg></section>");
}

/// Per-device split of the GPU timeline as 100 % bars.
fn split_chart(s: &mut String, r: &Report) {
    if r.gpu_timeline.is_empty() {
        return;
    }
    s.push_str(r#"<section id="gpu-split"><h2>GPU time split</h2>"#);
    s.push_str(r#"<p class="note">Over the analyzed window, on the union of all streams of each device: computation, communication not hidden by computation, copies not hidden by either, and idle time.</p>"#);
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
                    pct(*v, g.total_us)
                ))
            );
            if wdt > 70.0 {
                w!(
                    s,
                    r#"<text x="{}" y="{}" style="fill:#fff" pointer-events="none">{}</text>"#,
                    n1(x + 6.0),
                    n1(y + 16.0),
                    escape(&format!("{label} {}", pct(*v, g.total_us)))
                );
            }
            x += wdt;
        }
    }
    s.push_str("</svg></section>");
}

/// The representative step, one chart per device.
fn timeline_chart(s: &mut String, t: &StepTimelineInfo) {
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

fn device_timeline(s: &mut String, t: &StepTimelineInfo, d: &StepDeviceInfo) {
    w!(
        s,
        r#"<p class="note"><strong style="color:var(--fg)">GPU {}</strong>: busy {} of the step ({}), idle {} in {} gaps</p>"#,
        d.device,
        escape(&fmt_us(d.busy_us)),
        pct(d.busy_us, t.duration_us),
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

fn num_td(s: &mut String, v: f64, text: &str) {
    w!(s, r#"<td data-v="{}">{}</td>"#, n3(v), escape(text));
}

fn kernels_table(s: &mut String, r: &Report, top: usize) {
    if r.kernels.is_empty() {
        return;
    }
    let shown = r.kernels.len().min(top);
    w!(
        s,
        r#"<section id="kernels"><h2>Top kernels</h2><p class="note">{} of {} distinct kernels, by total time; click a column to sort.</p>"#,
        shown,
        r.kernels.len()
    );
    s.push_str(r#"<div class="tablewrap"><table class="sortable"><thead><tr><th data-type="num">#</th><th class="name">kernel</th><th class="t">category</th><th data-type="num">calls</th><th data-type="num" aria-sort="descending">total</th><th data-type="num">mean</th><th data-type="num">min</th><th data-type="num">max</th><th data-type="num">share</th><th data-type="num">occupancy</th><th class="t">tensor cores</th></tr></thead><tbody>"#);
    let max_share = r.kernels.iter().map(|k| k.share).fold(0.0, f64::max);
    for (i, k) in r.kernels.iter().take(top).enumerate() {
        w!(s, r#"<tr><td data-v="{}">{}</td>"#, i + 1, i + 1);
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
            k.category.as_str()
        );
        num_td(s, k.calls as f64, &fmt_count(k.calls));
        num_td(s, k.total_us, &fmt_us(k.total_us));
        num_td(s, k.mean_us, &fmt_us(k.mean_us));
        num_td(s, k.min_us, &fmt_us(k.min_us));
        num_td(s, k.max_us, &fmt_us(k.max_us));
        let bar = if max_share > 0.0 {
            k.share / max_share * 60.0
        } else {
            0.0
        };
        w!(
            s,
            r#"<td data-v="{}"><span class="bar" style="width:{}px"></span>{:.1}%</td>"#,
            n3(k.share),
            n1(bar),
            k.share * 100.0
        );
        match k.occupancy_pct {
            Some(o) if o.is_finite() => num_td(s, o, &format!("{o:.0}%")),
            _ => s.push_str(r#"<td data-v="">-</td>"#),
        }
        w!(
            s,
            r#"<td class="t">{}</td></tr>"#,
            if k.tensor_core { "yes" } else { "no" }
        );
    }
    s.push_str("</tbody></table></div></section>");
}

fn ops_table(s: &mut String, r: &Report, top: usize) {
    if r.ops.is_empty() {
        return;
    }
    let shown = r.ops.len().min(top);
    w!(
        s,
        r#"<section id="ops"><h2>Top operators</h2><p class="note">{} of {} distinct operators; host times on the CPU, device times of the kernels they launched (self: their own, total: with their children's). Click a column to sort.</p>"#,
        shown,
        r.ops.len()
    );
    s.push_str(r#"<div class="tablewrap"><table class="sortable"><thead><tr><th data-type="num">#</th><th class="name">operator</th><th data-type="num">calls</th><th data-type="num">host self</th><th data-type="num">host total</th><th data-type="num">device self</th><th data-type="num">device total</th></tr></thead><tbody>"#);
    for (i, o) in r.ops.iter().take(top).enumerate() {
        w!(s, r#"<tr><td data-v="{}">{}</td>"#, i + 1, i + 1);
        w!(
            s,
            r#"<td class="name" title="{}">{}</td>"#,
            escape(&o.name),
            escape(&shorten_middle(&o.name, 110))
        );
        num_td(s, o.calls as f64, &fmt_count(o.calls));
        num_td(s, o.host_self_us, &fmt_us(o.host_self_us));
        num_td(s, o.host_total_us, &fmt_us(o.host_total_us));
        num_td(s, o.device_self_us, &fmt_us(o.device_self_us));
        num_td(s, o.device_total_us, &fmt_us(o.device_total_us));
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table></div></section>");
}

/// Operators and phases ranked by time lost against their roofline.
fn efficiency_table(s: &mut String, r: &Report, top: usize) {
    let Some(e) = &r.efficiency else {
        return;
    };
    w!(
        s,
        r#"<section id="efficiency"><h2>Efficiency</h2><p class="note">Per step: {}FLOP and at least {}B moved by the calls with known FLOPs (recorded shapes, or <code>flops</code> from <code>with_flops=True</code>). Operators and top-level phases ranked by the time their kernels lost against the roofline max(FLOPs ÷ peak, bytes ÷ bandwidth); click a column to sort.</p>"#,
        escape(&super::si(e.flops_per_step)),
        escape(&super::si(e.bytes_per_step))
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
        num_td(s, x.calls as f64, &fmt_count(x.calls));
        num_td(s, x.device_us, &fmt_us(x.device_us));
        num_td(s, x.flops, &super::si(x.flops));
        num_td(s, x.achieved_tflops, &format!("{:.1}", x.achieved_tflops));
        num_td(s, x.achieved_gbs, &format!("{:.0}", x.achieved_gbs));
        let opt = |s: &mut String, v: Option<f64>| match v {
            Some(v) => num_td(s, v, &fmt_us(v)),
            None => num_td(s, 0.0, "-"),
        };
        opt(s, x.roofline_us);
        opt(s, x.lost_us);
        w!(
            s,
            r#"<td class="t">{}</td></tr>"#,
            escape(super::precision_label(x.dtype))
        );
    }
    s.push_str("</tbody></table></div></section>");
}

/// Bytes in binary units.
fn mib(b: i64) -> String {
    fmt_bytes(b.max(0) as u64)
}

/// Per device: allocated and reserved memory over the window, the peak marked (hover: what is
/// live at it), the largest allocations marked (hover: their operator).
fn memory_chart(s: &mut String, r: &Report) {
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
            super::memory_device_label(d.device),
            escape(&mib(d.peak_allocated)),
            d.capacity
                .map(|c| format!(" of {}", fmt_bytes(c)))
                .unwrap_or_default(),
            escape(&fmt_us(d.peak_at_us)),
            if d.reserved_at_peak >= 0 {
                format!(
                    "; reserved {} ({} held by the allocator)",
                    mib(d.reserved_at_peak),
                    mib(d.held_at_peak)
                )
            } else {
                String::new()
            }
        );
        w!(
            s,
            r#"<svg class="chart" data-chart="memory" viewBox="0 0 {width} {}" role="img" aria-label="{} memory over the window">"#,
            n1(height),
            super::memory_device_label(d.device)
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
                escape(&mib(v as i64))
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
        // hover strips: one per point
        let strip = plot_w / d.points.len().max(1) as f64;
        for p in &d.points {
            w!(
                s,
                r#"<rect x="{}" y="{top}" width="{}" height="{plot_h}" fill="transparent" data-tip="{}"/>"#,
                n1(x(p.t_us) - strip / 2.0),
                n3(strip.max(0.5)),
                escape(&format!(
                    "+{}: allocated {}{}",
                    fmt_us(p.t_us),
                    mib(p.allocated),
                    if p.reserved >= 0 {
                        format!(", reserved {}", mib(p.reserved))
                    } else {
                        String::new()
                    }
                ))
            );
        }
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
                mib(d.peak_allocated),
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
                    pct(g.bytes as f64, d.peak_allocated.max(1) as f64)
                );
            }
            s.push_str("</tbody></table></div>");
        }
    }
    s.push_str("</section>");
}

/// A folder of ranks: the verdict over the ranks, the sortable per-rank table and the
/// cross-rank findings, before the shown rank's report.
fn ranks_section(s: &mut String, sec: &super::ranks::RanksSection) {
    w!(
        s,
        r#"<section id="ranks"><h2>{} ranks <span class="file">{}</span></h2><div class="verdict"><span class="vlabel">Ranks</span>{}</div><p class="note">Per step, GPU split of each rank's main device; median step {}, slowest/median {:.2}×. Below: the full report of rank {} ({}).</p><div class="tablewrap"><table class="sortable"><thead><tr><th data-type="num" aria-sort="ascending">rank</th><th class="t">file</th><th data-type="num">steps</th><th data-type="num">step</th><th data-type="num">GPU busy</th><th data-type="num">computation</th><th data-type="num">exposed comm</th><th data-type="num">overlapped comm</th><th data-type="num">idle</th><th class="t">top finding</th></tr></thead><tbody>"#,
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
    for (row, name) in sec.ranks.iter().zip(sec.distinct_names()) {
        w!(
            s,
            r#"<tr><td data-v="{}">{}</td><td class="t" title="{}">{}</td><td data-v="{}">{}</td>"#,
            row.rank,
            if row.rank == sec.slowest_rank {
                format!("<strong>{}</strong> (slowest)", row.rank)
            } else {
                row.rank.to_string()
            },
            escape(&row.path),
            escape(&name),
            row.steps,
            row.steps
        );
        num_td(s, row.step_time_us, &fmt_us(row.step_time_us));
        num_td(s, row.utilization.unwrap_or(0.0), &fmt_pct(row.utilization));
        for v in [
            row.computation_us,
            row.exposed_comm_us,
            row.overlapped_comm_us,
            row.idle_us,
        ] {
            let v = row.per_step(v);
            num_td(s, v, &fmt_us(v));
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
        for fact in &f.evidence.facts {
            w!(s, "<li>{}</li>", rich(fact));
        }
        s.push_str(r#"</ul><p class="fh">What to do</p><ul class="advice">"#);
        for a in &f.advice {
            w!(s, "<li>{}</li>", rich(a));
        }
        w!(
            s,
            r#"</ul><p class="basis">Bound: {} <span class="rule">rule <code>{}</code></span></p></div></details>"#,
            rich(&f.recoverable_basis),
            escape(f.id)
        );
    }
    s.push_str("</section>");
}

fn devices_table(s: &mut String, r: &Report) {
    if r.devices.is_empty() {
        return;
    }
    s.push_str(r#"<section id="devices"><h2>GPUs</h2><div class="tablewrap"><table><thead><tr><th class="t">device</th><th>SMs</th><th>memory</th><th>compute capability</th><th>kernel utilization</th><th>est. SM efficiency</th><th>est. achieved occupancy</th><th>tensor-core share</th></tr></thead><tbody>"#);
    for d in &r.devices {
        w!(
            s,
            r#"<tr><td class="t">{} {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
            d.id,
            escape(if d.name.is_empty() {
                "(unnamed)"
            } else {
                &d.name
            }),
            d.sm_count.map(|v| v.to_string()).unwrap_or("-".into()),
            d.memory_bytes.map(fmt_bytes).unwrap_or("-".into()),
            escape(d.compute_capability.as_deref().unwrap_or("-")),
            fmt_pct(d.utilization),
            fmt_pct(d.sm_efficiency),
            fmt_pct(d.achieved_occupancy),
            fmt_pct(d.tensor_core_ratio)
        );
    }
    s.push_str("</tbody></table></div></section>");
}

/// CUDA/HIP graph replays and compiled code, when the capture has them.
fn compiled_section(s: &mut String, r: &Report) {
    if r.graphs.is_none() && r.compiled.is_none() {
        return;
    }
    s.push_str(
        r#"<section id="compiled"><h2>CUDA graphs and compiled code</h2><ul class="plain">"#,
    );
    if let Some(g) = &r.graphs {
        w!(s, "<li><b>Graphs:</b> {}</li>", escape(&g.summary));
    }
    if let Some(c) = &r.compiled {
        w!(s, "<li><b>Compiled:</b> {}</li>", escape(&c.summary));
        if let Some(h) = &c.hides_detail {
            w!(s, r#"<li class="warn">{}</li>"#, escape(h));
        }
    }
    s.push_str("</ul></section>");
}

fn notes(s: &mut String, r: &Report) {
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
fn capture_check(s: &mut String, r: &Report) {
    let t = &r.trust;
    if t.ok {
        w!(
            s,
            r#"<section id="capture-check"><h2>Capture check</h2><p class="note">{}.</p></section>"#,
            super::CAPTURE_CHECK_OK
        );
        return;
    }
    w!(
        s,
        r#"<section id="capture-check"><h2>Capture check ({})</h2><p class="note">{}: what the capture shows, then what it does to the numbers.</p><ul class="plain">"#,
        t.issues.len(),
        super::CAPTURE_CHECK_SUBTITLE
    );
    for i in &t.issues {
        w!(
            s,
            "<li><strong><code>{}</code></strong> {}<br>→ {}</li>",
            escape(i.id),
            rich(&i.finding),
            rich(&i.effect)
        );
    }
    s.push_str("</ul></section>");
}

/// The window: how it was chosen, what was left out and why, compile work, notes (the
/// terminal's `Window`).
fn window_section(s: &mut String, r: &Report) {
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
fn spans_section(s: &mut String, sec: &super::ranks::RanksSection) {
    if sec.spans.is_empty() {
        return;
    }
    s.push_str(r#"<section id="spans">"#);
    for g in &sec.spans {
        w!(s, "<h2>{}</h2>", escape(&g.title()));
        s.push_str(r#"<div class="tablewrap"><table class="sortable"><thead><tr>"#);
        let [span, file, starts, steps, time, compile] = super::ranks::SPAN_COLUMNS;
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

/// SHA-256 (FIPS 180-4), for the page's Content-Security-Policy script hash.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut msg = data.to_vec();
    let bits = (data.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bits.to_be_bytes());
    for chunk in msg.chunks_exact(64) {
        let mut w = [0u32; 64];
        for (i, word) in chunk.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let mut v = h;
        for i in 0..64 {
            let [a, b, c, d, e, f, g, hh] = v;
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            v = [t1.wrapping_add(t2), a, b, c, d.wrapping_add(t1), e, f, g];
        }
        for (x, y) in h.iter_mut().zip(v) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 32];
    for (i, x) in h.iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&x.to_be_bytes());
    }
    out
}

/// Standard base64 with padding.
pub fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

impl Renderer for Html {
    fn render(&self, r: &Report, opts: &RenderOptions, out: &mut dyn Write) -> io::Result<()> {
        let top = if opts.top == 0 { usize::MAX } else { opts.top };
        let mut s = String::with_capacity(256 << 10);
        let csp = format!(
            "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-{}'; base-uri 'none'; form-action 'none'",
            base64(&sha256(SCRIPT.as_bytes()))
        );
        w!(
            s,
            r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="{}"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="generator" content="{}"><title>stallscope: {}</title><style>{CSS}"#,
            escape(&csp),
            escape(&r.generator),
            escape(&file_name(r))
        );
        for (i, c) in CAT_COLORS.iter().enumerate() {
            w!(s, ".k{i}{{fill:{c}}}");
        }
        s.push_str("</style></head><body>");
        header(&mut s, r);
        s.push_str("<main>");
        if let Some(sec) = &r.ranks {
            ranks_section(&mut s, sec);
            spans_section(&mut s, sec);
        }
        diagnosis(&mut s, r);
        capture_check(&mut s, r);
        compiled_section(&mut s, r);
        cards(&mut s, r);
        window_section(&mut s, r);
        steps_chart(&mut s, r);
        phases_chart(&mut s, r);
        split_chart(&mut s, r);
        if let Some(t) = &r.step_timeline {
            timeline_chart(&mut s, t);
        }
        kernels_table(&mut s, r, top);
        ops_table(&mut s, r, top);
        efficiency_table(&mut s, r, top);
        memory_chart(&mut s, r);
        devices_table(&mut s, r);
        notes(&mut s, r);
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

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn sha256_known_vectors() {
        assert_eq!(
            hex(&sha256(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            hex(&sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        // two blocks
        assert_eq!(
            hex(&sha256(
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
            )),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
    }

    #[test]
    fn base64_padding() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
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
