//! The phases laid out once: which phases a short section shows (the terminal's roots with
//! their first children; Markdown's and the HTML chart's roots and phases with at least 1 %
//! of the device time) and each phase's cells.

use crate::analysis::phases::UNANNOTATED;
use crate::report::units::{self, fmt_count, fmt_us};
use crate::report::{PhaseInfo, Report};

/// Children shown under each root in the terminal's phases section.
const CHILDREN_SHOWN: usize = 3;
/// A phase below the roots is major when it launched at least this share of the device time.
const MAJOR_SHARE: f64 = 0.01;

/// A phase's cells, formatted.
#[derive(Debug, Clone)]
pub struct PhaseRow<'a> {
    /// The phase (names raw).
    pub phase: &'a PhaseInfo,
    /// Calls.
    pub calls: String,
    /// Host time of the calls.
    pub cpu_total: String,
    /// Host time per call.
    pub cpu_mean: String,
    /// Device activities launched inside.
    pub kernels: String,
    /// Their time.
    pub gpu: String,
    /// The span of the device work.
    pub gpu_span: String,
    /// The span's share of the window.
    pub share: String,
    /// The device time's share of all device time.
    pub gpu_share: String,
    /// Backward share of its device time, whole percent (`-` without device time).
    pub backward: String,
}

/// The cells of one phase.
pub fn row(p: &PhaseInfo) -> PhaseRow<'_> {
    PhaseRow {
        phase: p,
        calls: fmt_count(p.calls),
        cpu_total: fmt_us(p.cpu_total_us),
        cpu_mean: fmt_us(p.cpu_mean_us),
        kernels: fmt_count(p.kernel_count),
        gpu: fmt_us(p.gpu_us),
        gpu_span: fmt_us(p.gpu_span_us),
        share: units::ratio(p.share),
        gpu_share: units::ratio(p.gpu_share),
        backward: if p.gpu_us > 0.0 {
            units::ratio_whole(p.backward_gpu_us / p.gpu_us)
        } else {
            "-".into()
        },
    }
}

/// Whether any phase is a user annotation (not only the device work outside them).
pub fn annotated(r: &Report) -> bool {
    r.phases.iter().any(|p| p.path != UNANNOTATED)
}

/// Whether any phase launched backward work.
pub fn has_backward(r: &Report) -> bool {
    r.phases.iter().any(|p| p.backward_kernel_count > 0)
}

/// The first `top` roots (0 = all; the unannotated root always) with their first three
/// children, and how many phases that leaves out.
pub fn roots_and_children(r: &Report, top: usize) -> (Vec<PhaseRow<'_>>, usize) {
    let top = super::rows_shown(top);
    let (mut roots, mut children, mut hidden) = (0usize, 0usize, 0usize);
    let mut rows = Vec::new();
    for p in &r.phases {
        if p.depth == 0 {
            roots += 1;
            children = 0;
        } else {
            children += 1;
        }
        let show = p.depth == 0 && (roots <= top || p.path == UNANNOTATED)
            || p.depth == 1 && roots <= top && children <= CHILDREN_SHOWN;
        if show {
            rows.push(row(p));
        } else {
            hidden += 1;
        }
    }
    (rows, hidden)
}

/// Every root and the phases below with at least 1 % of the device time, at most `limit`.
pub fn major(r: &Report, limit: usize) -> Vec<PhaseRow<'_>> {
    r.phases
        .iter()
        .filter(|p| p.depth == 0 || p.gpu_share >= MAJOR_SHARE)
        .take(limit)
        .map(row)
        .collect()
}

/// The phases down to `depth` levels (0 = all), and how many deeper ones are left out.
pub fn down_to(r: &Report, depth: u32) -> (Vec<PhaseRow<'_>>, usize) {
    let rows: Vec<PhaseRow<'_>> = r
        .phases
        .iter()
        .filter(|p| depth == 0 || p.depth < depth)
        .map(row)
        .collect();
    let hidden = r.phases.len() - rows.len();
    (rows, hidden)
}
