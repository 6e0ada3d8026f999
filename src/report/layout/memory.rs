//! The memory sections laid out once: per device the label, the summary sentence and the
//! groups live at the peak with their share; for torch's memory-timeline export the peak and
//! the bytes per category at it.

use crate::ingest::torch_memory::{CategoryTimeline, CATEGORIES};
use crate::report::mirrors::DeviceMemoryInfo as DeviceMemory;
use crate::report::units;

/// The name of a memory timeline's device as the renderers print it: `CPU` for host memory
/// ([`crate::model::memory::CPU_DEVICE`]), `GPU N` otherwise.
pub fn memory_device_label(device: i64) -> String {
    if device == crate::model::memory::CPU_DEVICE as i64 {
        "CPU".to_string()
    } else {
        format!("GPU {device}")
    }
}

/// The one-paragraph summary of a device's memory over the window (terminal and Markdown):
/// the peak and when, the allocator's share, allocations per step.
pub fn memory_summary(d: &DeviceMemory) -> String {
    use units::{fmt_bytes, fmt_bytes_signed as b, fmt_count, fmt_us};
    let n = d.churn.len().max(1) as f64;
    let allocs: u64 = d.churn.iter().map(|c| c.allocs).sum();
    let bytes: u64 = d.churn.iter().map(|c| c.alloc_bytes).sum();
    let mut line = format!(
        "peak allocated {}{} at {} ({}); at the window start {}",
        b(d.peak_allocated),
        d.capacity
            .map(|c| format!(" of {}", fmt_bytes(c)))
            .unwrap_or_default(),
        fmt_us(d.peak_at_us),
        d.peak_step.as_deref().unwrap_or("outside the steps"),
        b(d.start_allocated)
    );
    if d.reserved_at_peak >= 0 {
        line.push_str(&format!(
            "; reserved {} ({} held by the caching allocator)",
            b(d.reserved_at_peak),
            b(d.held_at_peak)
        ));
    }
    if !d.churn.is_empty() {
        line.push_str(&format!(
            "; {} allocations ({}) per step",
            fmt_count((allocs as f64 / n).round() as u64),
            fmt_bytes((bytes as f64 / n) as u64)
        ));
    }
    if d.recorded_peak < 0 {
        line.push_str("; the trace has no `Total Allocated`: totals count from the first event");
    }
    line
}

/// Share of the peak a live group holds, `12.3%`.
pub fn share_of_peak(bytes: u64, d: &DeviceMemory) -> String {
    units::ratio(bytes as f64 / d.peak_allocated.max(1) as f64)
}

/// One group live at a device's memory peak, its cells formatted (names raw).
#[derive(Debug, Clone, PartialEq)]
pub struct LiveRow<'a> {
    /// The operator that allocated the blocks.
    pub op: &'a str,
    /// The phase it ran in.
    pub phase: &'a str,
    /// Blocks.
    pub blocks: String,
    /// Bytes.
    pub bytes: String,
    /// Share of the peak.
    pub share: String,
}

/// The first six groups live at the peak, or none when the blocks are not known.
pub fn live_at_peak(d: &DeviceMemory) -> Vec<LiveRow<'_>> {
    if !d.blocks_known {
        return Vec::new();
    }
    d.live_at_peak
        .iter()
        .take(6)
        .map(|g| LiveRow {
            op: &g.op,
            phase: &g.phase,
            blocks: units::fmt_count(g.blocks),
            bytes: units::fmt_bytes(g.bytes),
            share: share_of_peak(g.bytes, d),
        })
        .collect()
}

/// The peak of torch's memory-timeline export and the bytes per category at it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportPeak {
    /// The peak's timestamp index.
    pub index: usize,
    /// Bytes at the peak, formatted.
    pub bytes: String,
    /// Time from the first timed entry to the peak, formatted.
    pub after_first: String,
    /// Time from the peak to the last entry, formatted.
    pub before_last: String,
    /// Per category, largest first (ties in category order): name, bytes at the peak, share
    /// of the peak, bytes at the end.
    pub rows: Vec<[String; 4]>,
}

/// The peak of the export, `None` without entries.
pub fn export_peak(t: &CategoryTimeline) -> Option<ExportPeak> {
    let i = t.peak()?;
    let total: i64 = t.sizes[i].iter().sum();
    let last = t.times.last().copied().unwrap_or(0);
    let first = t.times.iter().copied().find(|&x| x >= 0).unwrap_or(0);
    let end = t.sizes[t.sizes.len() - 1];
    let mut order: Vec<(usize, i64)> = t.sizes[i].iter().copied().enumerate().collect();
    order.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Some(ExportPeak {
        index: i,
        bytes: units::fmt_bytes(total.max(0) as u64),
        after_first: units::fmt_us((t.times[i].max(first) - first) as f64 / 1000.0),
        before_last: units::fmt_us((last - t.times[i].max(first)) as f64 / 1000.0),
        rows: order
            .into_iter()
            .map(|(c, v)| {
                [
                    CATEGORIES[c].to_string(),
                    units::fmt_bytes_signed(v),
                    units::ratio(v as f64 / total.max(1) as f64),
                    units::fmt_bytes_signed(end[c]),
                ]
            })
            .collect(),
    })
}
