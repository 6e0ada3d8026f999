//! Sections laid out once: the rows, shares and sentences of a report section, built from the
//! [`Report`] here, so that the terminal, Markdown and HTML renderers only supply primitives
//! (a table, a heading, a bar, escaping, emphasis) and never compute a share or write a
//! sentence of their own.
//!
//! Every text here is raw: names from the trace are neither escaped nor shortened (each
//! renderer does both for its format), and numbers are already formatted with
//! [`super::units`]. Which columns a renderer shows, and their titles, stay its own choice
//! (the terminal abbreviates to fit 100 columns); the cells are the same in every format.
//!
//! The small sections are here; each larger one has its file: [`steps`], [`findings`],
//! [`phases`], [`memory`], [`efficiency`] (MFU and roofline), [`ranks`]. The window's lines
//! are [`super::WindowInfo::lines`].

pub mod efficiency;
pub mod findings;
pub mod memory;
pub mod phases;
pub mod ranks;
pub mod steps;

use super::units::{self, fmt_count, fmt_us};
use super::{KernelInfo, OpInfo, Report, TimelineInfo};

/// A section of labelled lines under a heading, such as the capture check or the CUDA graphs
/// and compiled code.
#[derive(Debug, Clone, PartialEq)]
pub struct Notes {
    /// The heading: `Capture check (2)`.
    pub title: String,
    /// What the section shows, in a few words (the terminal's dimmed text beside the heading).
    pub subtitle: &'static str,
    /// The sentence under the heading in Markdown and HTML (no final full stop).
    pub lead: Option<String>,
    /// The lines, in order.
    pub items: Vec<NoteItem>,
}

/// One line of [`Notes`]: a label, a stallscope-written sentence (`` `code` `` marks code)
/// and, for the capture check, its effect on the numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct NoteItem {
    /// The label, capitalised (`Graphs`) or an id (`clock_offset`).
    pub label: &'static str,
    /// The sentence.
    pub text: String,
    /// What it does to the numbers (the capture check), shown after an arrow.
    pub effect: Option<String>,
    /// A caveat rather than a fact (the HTML marks it, the others label it `Note`).
    pub warn: bool,
}

/// The capture check: what in this capture limits what the numbers mean, each issue with its
/// effect, or the one line that nothing does.
pub fn capture_check(r: &Report) -> Notes {
    let t = &r.trust;
    if t.issues.is_empty() {
        return Notes {
            title: "Capture check".into(),
            subtitle: super::CAPTURE_CHECK_OK,
            lead: Some(super::CAPTURE_CHECK_OK.into()),
            items: Vec::new(),
        };
    }
    Notes {
        title: format!("Capture check ({})", t.issues.len()),
        subtitle: if t.ok {
            super::CAPTURE_CHECK_VERDICT_STANDS
        } else {
            super::CAPTURE_CHECK_SUBTITLE
        },
        lead: Some(if t.ok {
            format!(
                "{}; {}: what the capture shows, then what it does to the numbers",
                super::CAPTURE_CHECK_VERDICT_STANDS,
                super::CAPTURE_CHECK_SUBTITLE
            )
        } else {
            format!(
                "{}: what the capture shows, then what it does to the numbers",
                super::CAPTURE_CHECK_SUBTITLE
            )
        }),
        items: t
            .issues
            .iter()
            .map(|i| NoteItem {
                label: i.id,
                text: i.finding.clone(),
                effect: Some(if i.level == crate::analysis::capture::LEVEL_FIGURES {
                    format!("{} ({})", i.effect, super::CAPTURE_CHECK_FIGURES_ONLY)
                } else {
                    i.effect.clone()
                }),
                warn: false,
            })
            .collect(),
    }
}

/// The note printed beside a figure that capture-check issues limit (`figure` as in
/// [`crate::analysis::capture::FIGURE_LIMITS`]), `None` when nothing limits it.
pub fn figure_note<'a>(r: &'a Report, figure: &str) -> Option<&'a str> {
    r.trust
        .figures
        .iter()
        .find(|f| f.figure == figure)
        .map(|f| f.note.as_str())
}

/// The notes of `figures` ([`figure_note`]) that some issue limits, each once, in order: what
/// a section printing those figures prints beside them.
pub fn figure_notes<'a>(r: &'a Report, figures: &[&str]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for n in figures.iter().filter_map(|f| figure_note(r, f)) {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// CUDA/HIP graph replays and compiled code, when the capture has them.
pub fn compiled(r: &Report) -> Option<Notes> {
    if r.graphs.is_none() && r.compiled.is_none() {
        return None;
    }
    let mut items = Vec::new();
    let item = |label, text: &str, warn| NoteItem {
        label,
        text: text.to_string(),
        effect: None,
        warn,
    };
    if let Some(g) = &r.graphs {
        items.push(item("Graphs", &g.summary, false));
    }
    if let Some(c) = &r.compiled {
        items.push(item("Compiled", &c.summary, false));
        if let Some(h) = &c.hides_detail {
            items.push(item("Note", h, true));
        }
    }
    Some(Notes {
        title: "CUDA graphs and compiled code".into(),
        subtitle: "",
        lead: None,
        items,
    })
}

/// One device of the GPU summary, its cells formatted.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceRow<'a> {
    /// Device id.
    pub id: i64,
    /// Its name from the trace (raw), `(unnamed)` without one.
    pub name: &'a str,
    /// SMs, `-` when unknown.
    pub sms: String,
    /// Memory, `-` when unknown.
    pub memory: String,
    /// Compute capability from the trace (raw), `-` when unknown.
    pub compute_capability: &'a str,
    /// Kernel utilization.
    pub utilization: String,
    /// Estimated SM efficiency.
    pub sm_efficiency: String,
    /// Estimated achieved occupancy.
    pub occupancy: String,
    /// Tensor-core share of kernel time.
    pub tensor_cores: String,
}

/// The devices that ran work.
pub fn devices(r: &Report) -> Vec<DeviceRow<'_>> {
    r.devices
        .iter()
        .map(|d| DeviceRow {
            id: d.id,
            name: if d.name.is_empty() {
                "(unnamed)"
            } else {
                &d.name
            },
            sms: d.sm_count.map(|v| v.to_string()).unwrap_or("-".into()),
            memory: d.memory_bytes.map(units::fmt_bytes).unwrap_or("-".into()),
            compute_capability: d.compute_capability.as_deref().unwrap_or("-"),
            utilization: units::fmt_pct(d.utilization),
            sm_efficiency: units::fmt_pct(d.sm_efficiency),
            occupancy: units::fmt_pct(d.achieved_occupancy),
            tensor_cores: units::fmt_pct(d.tensor_core_ratio),
        })
        .collect()
}

/// How many rows a table shows: `top`, 0 for all.
pub fn rows_shown(top: usize) -> usize {
    if top == 0 {
        usize::MAX
    } else {
        top
    }
}

/// One row of the kernel table, its cells formatted.
#[derive(Debug, Clone)]
pub struct KernelRow<'a> {
    /// Rank in the table, from 1.
    pub rank: usize,
    /// The kernel, with its raw values (for sorting and bars).
    pub kernel: &'a KernelInfo,
    /// Its category.
    pub category: &'static str,
    /// Calls.
    pub calls: String,
    /// Total time.
    pub total: String,
    /// Mean time per call.
    pub mean: String,
    /// Shortest call.
    pub min: String,
    /// Longest call.
    pub max: String,
    /// Share of all kernel time.
    pub share: String,
    /// Estimated achieved occupancy (`62%`, `-` without one).
    pub occupancy: String,
    /// `yes` when it ran on tensor cores, else `no`.
    pub tensor_core: &'static str,
}

/// The kernel rows of the report's kernel table (the copy and fill rows left out).
pub fn kernel_rows(r: &Report) -> impl Iterator<Item = &KernelInfo> {
    r.kernels.iter().filter(|k| k.copy.is_none())
}

/// The copy and fill rows of the report's kernel table.
pub fn copy_rows(r: &Report) -> impl Iterator<Item = &KernelInfo> {
    r.kernels.iter().filter(|k| k.copy.is_some())
}

/// The first `top` kernels by total time (0 = all); copies and fills are in [`copies`].
pub fn kernels(r: &Report, top: usize) -> Vec<KernelRow<'_>> {
    kernel_rows(r)
        .take(rows_shown(top))
        .enumerate()
        .map(|(i, k)| KernelRow {
            rank: i + 1,
            kernel: k,
            category: k.category.as_str(),
            calls: fmt_count(k.calls),
            total: fmt_us(k.total_us),
            mean: fmt_us(k.mean_us),
            min: fmt_us(k.min_us),
            max: fmt_us(k.max_us),
            share: units::ratio(k.share),
            occupancy: match k.occupancy_pct {
                Some(o) if o.is_finite() => units::percent_whole(o),
                _ => "-".into(),
            },
            tensor_core: if k.tensor_core { "yes" } else { "no" },
        })
        .collect()
}

/// One copy or fill row of the kernel table, its cells formatted.
#[derive(Debug, Clone)]
pub struct CopyRow<'a> {
    /// Rank among the copy and fill rows, from 1.
    pub rank: usize,
    /// The row, with its raw values.
    pub row: &'a KernelInfo,
    /// `HtoD pageable`, `DtoD`, `PtoP`, `fill`, `copy` (direction unknown).
    pub direction: String,
    /// Calls.
    pub calls: String,
    /// Total time.
    pub total: String,
    /// Mean time per call.
    pub mean: String,
    /// Bytes per call (`-` when not recorded).
    pub bytes_per_call: String,
    /// Bandwidth, `12.3 GB/s` (`-` without bytes or time).
    pub bandwidth: String,
    /// Share of all copy and fill time.
    pub share: String,
}

/// The first `top` copy and fill rows by total time (0 = all).
pub fn copies(r: &Report, top: usize) -> Vec<CopyRow<'_>> {
    copy_rows(r)
        .take(rows_shown(top))
        .enumerate()
        .filter_map(|(i, k)| {
            let c = k.copy.as_ref()?;
            let direction = match (&c.direction, &c.host_memory) {
                _ if c.kind == "memset" => "fill".to_string(),
                (Some(d), Some(m)) => format!("{d} {m}"),
                (Some(d), None) => d.clone(),
                (None, _) => "copy".into(),
            };
            Some(CopyRow {
                rank: i + 1,
                row: k,
                direction,
                calls: fmt_count(k.calls),
                total: fmt_us(k.total_us),
                mean: fmt_us(k.mean_us),
                bytes_per_call: match c.bytes_per_call {
                    Some(b) => crate::text::fmt_bytes(b.round() as u64),
                    None => "-".into(),
                },
                bandwidth: match c.bandwidth_gbps {
                    Some(g) => fmt_gbps(g),
                    None => "-".into(),
                },
                share: units::ratio(k.share),
            })
        })
        .collect()
}

/// A bandwidth in GB/s: three significant digits up to 100, whole numbers above.
pub fn fmt_gbps(g: f64) -> String {
    if g >= 100.0 {
        format!("{g:.0} GB/s")
    } else if g >= 10.0 {
        format!("{g:.1} GB/s")
    } else if g >= 0.01 {
        format!("{g:.2} GB/s")
    } else {
        format!("{:.1} MB/s", g * 1000.0)
    }
}

/// One row of the operator table, its cells formatted.
#[derive(Debug, Clone)]
pub struct OpRow<'a> {
    /// Rank in the table, from 1.
    pub rank: usize,
    /// The operator, with its raw values.
    pub op: &'a OpInfo,
    /// Calls.
    pub calls: String,
    /// Host time in the operator itself.
    pub host_self: String,
    /// Host time with its children.
    pub host_total: String,
    /// Device time of the kernels it launched itself.
    pub device_self: String,
    /// Device time with its children's kernels.
    pub device_total: String,
}

/// The first `top` operators (0 = all).
pub fn ops(r: &Report, top: usize) -> Vec<OpRow<'_>> {
    r.ops
        .iter()
        .take(rows_shown(top))
        .enumerate()
        .map(|(i, o)| OpRow {
            rank: i + 1,
            op: o,
            calls: fmt_count(o.calls),
            host_self: fmt_us(o.host_self_us),
            host_total: fmt_us(o.host_total_us),
            device_self: fmt_us(o.device_self_us),
            device_total: fmt_us(o.device_total_us),
        })
        .collect()
}

/// One part of a device's time split (computation, exposed communication, exposed copies,
/// idle) with its share of the device's time.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitPart {
    /// `computation`, `exposed comm`, `exposed memcpy` or `idle`.
    pub label: &'static str,
    /// µs.
    pub us: f64,
    /// Share of the device's total (`-` without one).
    pub share: String,
}

/// True when a device's GPU timeline spans the analyzed window: its split (over the device's
/// first to last activity in the window, TraceLens's hull) is then over the window, as the
/// verdict's busy and idle shares are.
pub fn timeline_spans_window(r: &Report, t: &TimelineInfo) -> bool {
    (t.total_us - r.window.duration_us).abs() < 0.5
}

/// The note printed beside the GPU timeline's split when a device's span is not the analyzed
/// window (its idle share then differs from the verdict's, over the window): which window each
/// is over. `None` when every device spans the window.
pub fn timeline_span_note(r: &Report) -> Option<String> {
    if r.gpu_timeline.iter().all(|t| timeline_spans_window(r, t)) {
        return None;
    }
    let spans: Vec<String> = r
        .gpu_timeline
        .iter()
        .map(|t| format!("GPU {} {}", t.device, fmt_us(t.total_us)))
        .collect();
    Some(format!(
        "this split is over each device's span from its first to its last activity ({}), not \
         over the analyzed window ({}) of the verdict's busy and idle shares",
        spans.join(", "),
        fmt_us(r.window.duration_us)
    ))
}

/// A device's time split, in the order computation, exposed comm, exposed memcpy, idle.
pub fn gpu_split(t: &TimelineInfo) -> [SplitPart; 4] {
    let part = |label, us| SplitPart {
        label,
        us,
        share: units::share(us, t.total_us),
    };
    [
        part("computation", t.computation_us),
        part("exposed comm", t.exposed_comm_us),
        part("exposed memcpy", t.exposed_memcpy_us),
        part("idle", t.idle_us),
    ]
}

/// One part of the average step (kernel, memcpy, …) with its time and share of the step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepPart {
    /// The part (`kernel`, `memcpy`, … as in [`super::BreakdownUs::parts`]).
    pub label: &'static str,
    /// µs per step.
    pub us: f64,
    /// The time, formatted.
    pub time: String,
    /// Share of the step (`-` without steps).
    pub share: String,
}

/// The parts of the average step in [`super::BreakdownUs::parts`] order.
pub fn step_parts(r: &Report) -> Vec<StepPart> {
    r.breakdown_us
        .parts()
        .iter()
        .map(|&(label, us)| StepPart {
            label,
            us,
            time: fmt_us(us),
            share: units::share(us, r.step_time_us),
        })
        .collect()
}

/// The parts of the average step, largest first (ties keep their order).
pub fn step_parts_ranked(r: &Report) -> Vec<StepPart> {
    let mut parts = step_parts(r);
    parts.sort_by(|a, b| b.us.partial_cmp(&a.us).unwrap_or(std::cmp::Ordering::Equal));
    parts
}

/// A finding's recoverable time as a share of the average step (absent without steps; not
/// clamped: an upper bound may exceed the step).
pub fn share_of_step(r: &Report, recoverable_us: f64) -> Option<f64> {
    (r.step_time_us > 0.0).then(|| recoverable_us / r.step_time_us)
}

/// `Average step` and `over 12 steps` (or iterations) of the headline.
pub fn average_step(r: &Report) -> (String, String) {
    let n = r.steps.len();
    let unit = r.steps_found.unit();
    (
        format!("Average {unit}"),
        format!("over {n} {unit}{}", if n == 1 { "" } else { "s" }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_shares_and_missing_totals() {
        let t = TimelineInfo {
            device: 0,
            total_us: 200.0,
            computation_us: 150.0,
            exposed_comm_us: 0.0,
            exposed_memcpy_us: 10.0,
            idle_us: 40.0,
        };
        let s = gpu_split(&t);
        assert_eq!(s[0].share, "75.0%");
        assert_eq!(s[3].label, "idle");
        assert_eq!(s[3].share, "20.0%");
        let empty = TimelineInfo { total_us: 0.0, ..t };
        assert_eq!(gpu_split(&empty)[0].share, "-");
    }

    #[test]
    fn top_zero_shows_all() {
        assert_eq!(rows_shown(0), usize::MAX);
        assert_eq!(rows_shown(10), 10);
    }
}
