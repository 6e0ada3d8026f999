//! Report sections for NVIDIA tool inputs: the Nsight Compute kernel table (alone, or joined
//! to a trace with `--ncu`) and sampled GPU metrics (Nsight Systems) per NVTX range and gap.

use std::io::{self, Write};

use serde::Serialize;

use crate::analysis::gpu_metrics::{Basis, Boundness, GpuMetricsAnalysis, Sampled};
use crate::analysis::ncu::NcuAnalysis;
use crate::ingest::ncu::Layout;

use super::mirrors::NcuKernelInfo;
use crate::model::Ns;

fn us(ns: Ns) -> f64 {
    ns as f64 / 1000.0
}

/// The trace kernel an ncu launch was joined to.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct TraceMatch {
    /// Start, µs since `source.trace_start_us`.
    pub start_us: f64,
    /// Duration in the trace, µs.
    pub dur_us: f64,
    /// Device.
    pub device: i64,
    /// Stream.
    pub stream: i64,
    /// Device time of every kernel of that name in the analyzed window, µs.
    pub window_us: f64,
    /// Their number.
    pub window_calls: u64,
    /// The share of that time this launch stands for in the diagnosis (its ncu duration over
    /// the summed ncu durations of the launches joined to the same name; 0..1).
    pub share_of_kernel: f64,
}

/// One ncu launch in the report.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct NcuLaunchInfo {
    /// The launch's metrics, classification and rules.
    #[serde(flatten)]
    pub kernel: NcuKernelInfo,
    /// The trace kernel it was joined to (with `--ncu` only; absent when none matched).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_kernel: Option<TraceMatch>,
}

/// The `ncu` section of the JSON report.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct NcuSection {
    /// The CSV path.
    pub path: String,
    /// `details` or `raw`.
    pub layout: Layout,
    /// True when the launches were joined to the analyzed trace (`--ncu`).
    pub joined: bool,
    /// Launches joined to a trace kernel (by name, in order).
    pub matched: u64,
    /// Launches in file order.
    pub launches: Vec<NcuLaunchInfo>,
}

impl NcuSection {
    /// The section for the Nsight Compute facts (`analysis::ncu`); `origin` is the trace start
    /// that `start_us` values are relative to.
    pub fn new(n: &NcuAnalysis, origin: Ns) -> NcuSection {
        let launches: Vec<NcuLaunchInfo> = n
            .report
            .kernels
            .iter()
            .zip(&n.launches)
            .map(|(k, l)| NcuLaunchInfo {
                kernel: NcuKernelInfo::from(k),
                trace_kernel: l.trace_kernel.as_ref().map(|g| {
                    let kt = l.kernel.map(|i| &n.kernels[i]);
                    TraceMatch {
                        start_us: us(g.start - origin),
                        dur_us: us(g.dur),
                        device: g.device,
                        stream: g.stream,
                        window_us: kt.map(|k| us(k.window_time)).unwrap_or(0.0),
                        window_calls: kt.map(|k| k.calls).unwrap_or(0),
                        share_of_kernel: l.share_of_kernel,
                    }
                }),
            })
            .collect();
        NcuSection {
            path: n.report.path.clone(),
            layout: n.report.layout,
            joined: n.joined,
            matched: n.matched() as u64,
            launches,
        }
    }
}

/// Means over some time, as in the report.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct SampledInfo {
    /// SM-activity samples inside.
    pub samples: u64,
    /// Mean SM activity, %.
    pub sm_pct: Option<f64>,
    /// Mean DRAM read + write bandwidth, % of peak.
    pub dram_pct: Option<f64>,
    /// `compute-bound`, `memory-bound`, `launch-bound`, `mixed` or `unsampled`.
    pub class: Boundness,
}

impl From<&Sampled> for SampledInfo {
    fn from(s: &Sampled) -> Self {
        SampledInfo {
            samples: s.samples,
            sm_pct: s.sm_pct,
            dram_pct: s.dram_pct,
            class: s.class,
        }
    }
}

/// GPU metrics of one device.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct MetricsDeviceInfo {
    /// Device id.
    pub device: i64,
    /// Series used.
    pub series: Vec<String>,
    /// Over the window.
    pub window: SampledInfo,
    /// Over the device's busy time.
    pub busy: SampledInfo,
    /// Gaps of at least `min_gap_us`.
    pub gap_count: u64,
    /// Their total, µs.
    pub gap_us: f64,
}

/// One NVTX range path on one device.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct MetricsRangeInfo {
    /// Range path.
    pub path: String,
    /// Device.
    pub device: i64,
    /// Instances.
    pub calls: u64,
    /// Measured time, µs.
    pub time_us: f64,
    /// `gpu_projection` or `host_range`.
    pub basis: Basis,
    /// Means.
    #[serde(flatten)]
    pub sampled: SampledInfo,
}

/// One gap.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct MetricsGapInfo {
    /// Device.
    pub device: i64,
    /// Start, µs since `source.trace_start_us`.
    pub start_us: f64,
    /// Length, µs.
    pub dur_us: f64,
    /// Means.
    #[serde(flatten)]
    pub sampled: SampledInfo,
}

/// The `gpu_metrics` section of the JSON report.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct GpuMetricsInfo {
    /// Shortest gap counted, µs.
    pub min_gap_us: f64,
    /// Per device.
    pub devices: Vec<MetricsDeviceInfo>,
    /// Per NVTX range path and device, by measured time.
    pub ranges: Vec<MetricsRangeInfo>,
    /// The longest gaps, in time order.
    pub gaps: Vec<MetricsGapInfo>,
}

impl GpuMetricsInfo {
    /// Converts the analysis (ns) to report units (µs from `origin`).
    pub fn new(m: &GpuMetricsAnalysis, origin: Ns) -> GpuMetricsInfo {
        GpuMetricsInfo {
            min_gap_us: us(m.min_gap),
            devices: m
                .devices
                .iter()
                .map(|d| MetricsDeviceInfo {
                    device: d.device,
                    series: d.series.clone(),
                    window: (&d.window).into(),
                    busy: (&d.busy).into(),
                    gap_count: d.gap_count,
                    gap_us: us(d.gap_time),
                })
                .collect(),
            ranges: m
                .ranges
                .iter()
                .map(|r| MetricsRangeInfo {
                    path: r.path.clone(),
                    device: r.device,
                    calls: r.calls,
                    time_us: us(r.time),
                    basis: r.basis,
                    sampled: (&r.sampled).into(),
                })
                .collect(),
            gaps: m
                .gaps
                .iter()
                .map(|g| MetricsGapInfo {
                    device: g.device,
                    start_us: us(g.start - origin),
                    dur_us: us(g.dur),
                    sampled: (&g.sampled).into(),
                })
                .collect(),
        }
    }
}

use super::units::percent as pct;

fn dur_ns(v: Option<i64>) -> String {
    match v {
        None => "-".into(),
        Some(n) if n >= 1_000_000 => format!("{:.2} ms", n as f64 / 1e6),
        Some(n) => format!("{:.1} µs", n as f64 / 1e3),
    }
}

fn cut(s: &str, max: usize) -> String {
    let s: String = s.chars().filter(|c| !c.is_control()).collect();
    if s.chars().count() <= max {
        return s;
    }
    let head: String = s.chars().take(max.saturating_sub(1)).collect();
    format!("{head}…")
}

/// Writes the ncu kernel table (at most `top` launches; 0 = all) in plain text.
pub fn write_ncu(s: &NcuSection, top: usize, width: usize, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "Nsight Compute kernels  {} launches ({} page){}",
        s.launches.len(),
        match s.layout {
            Layout::Details => "details",
            Layout::Raw => "raw",
        },
        if s.joined {
            format!(", {} joined to the trace by name and order", s.matched)
        } else {
            String::new()
        }
    )?;
    let name_w = width.saturating_sub(72).max(16);
    writeln!(
        out,
        "{:>4}  {:<name_w$}  {:>10}  {:>6}  {:>6}  {:>8}  {:>13}  {:>10}",
        "id", "kernel", "duration", "SM", "memory", "bound", "occ ach/theo", "limiter"
    )?;
    let n = if top == 0 { s.launches.len() } else { top };
    for l in s.launches.iter().take(n) {
        let k = &l.kernel;
        let occ = match (k.achieved_occupancy_pct, k.theoretical_occupancy_pct) {
            (None, None) => "-".into(),
            (a, t) => format!("{}/{}", pct(a), pct(t)),
        };
        writeln!(
            out,
            "{:>4}  {:<name_w$}  {:>10}  {:>6}  {:>6}  {:>8}  {:>13}  {:>10}",
            k.id,
            cut(&k.name, name_w),
            dur_ns(k.duration_ns),
            pct(k.sm_pct),
            pct(k.memory_pct),
            k.bound.map(|b| b.as_str()).unwrap_or("no data"),
            occ,
            k.occupancy_limiter.as_deref().unwrap_or("-"),
        )?;
    }
    if n < s.launches.len() {
        writeln!(
            out,
            "      … {} more (--top 0 for all)",
            s.launches.len() - n
        )?;
    }
    // evidence: the facts a diagnosis needs, and ncu's own warnings
    let mut notes = Vec::new();
    for l in s.launches.iter().take(n) {
        let k = &l.kernel;
        let mut facts = Vec::new();
        if let Some(c) = k.bank_conflict_pct.filter(|&c| c >= 10.0) {
            facts.push(format!(
                "shared-memory bank conflicts {c:.0}% of wavefronts"
            ));
        }
        if let Some(lm) = k.local_memory_ops.filter(|&v| v > 0.0) {
            facts.push(format!("{lm:.0} local-memory (spill) operations"));
        }
        if let Some(h) = k.l2_hit_rate_pct {
            facts.push(format!("L2 hit rate {h:.0}%"));
        }
        if !k.warp_stalls.is_empty() {
            let st: Vec<String> = k
                .warp_stalls
                .iter()
                .map(|w| format!("{} {:.2}", w.reason, w.value))
                .collect();
            facts.push(format!("top stalls: {}", st.join(", ")));
        }
        for r in k
            .rules
            .iter()
            .filter(|r| r.kind == "WRN" || r.kind == "OPT")
        {
            let first = r.message.split(". ").next().unwrap_or(&r.message);
            facts.push(format!("{} {}: {}", r.kind, r.name, cut(first, 140)));
        }
        if !facts.is_empty() {
            notes.push(format!("  {:>4}  {}", k.id, facts.join("; ")));
        }
    }
    if !notes.is_empty() {
        writeln!(out, "  evidence:")?;
        for n in notes {
            writeln!(out, "{n}")?;
        }
    }
    Ok(())
}

/// Writes the GPU-metrics section in plain text.
pub fn write_gpu_metrics(
    m: &GpuMetricsInfo,
    top: usize,
    width: usize,
    out: &mut dyn Write,
) -> io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "GPU metrics  SM activity vs DRAM bandwidth (sampled; compute-bound SM>60% DRAM<50%, \
         memory-bound SM<30% DRAM>80%, launch-bound both low)"
    )?;
    for d in &m.devices {
        writeln!(
            out,
            "  device {}: window SM {} DRAM {} ({}); busy SM {} DRAM {}; {} gaps ≥ {:.0} µs, {:.1} ms",
            d.device,
            pct(d.window.sm_pct),
            pct(d.window.dram_pct),
            d.window.class.as_str(),
            pct(d.busy.sm_pct),
            pct(d.busy.dram_pct),
            d.gap_count,
            m.min_gap_us,
            d.gap_us / 1000.0
        )?;
    }
    let n = if top == 0 { m.ranges.len() } else { top };
    if !m.ranges.is_empty() {
        let name_w = width.saturating_sub(60).max(16);
        writeln!(
            out,
            "  {:<name_w$}  {:>3}  {:>6}  {:>10}  {:>6}  {:>6}  {:>13}",
            "NVTX range", "dev", "calls", "time", "SM", "DRAM", "class"
        )?;
        for r in m.ranges.iter().take(n) {
            writeln!(
                out,
                "  {:<name_w$}  {:>3}  {:>6}  {:>10}  {:>6}  {:>6}  {:>13}",
                cut(&r.path, name_w),
                r.device,
                r.calls,
                format!("{:.1} ms", r.time_us / 1000.0),
                pct(r.sampled.sm_pct),
                pct(r.sampled.dram_pct),
                r.sampled.class.as_str()
            )?;
        }
    }
    if !m.gaps.is_empty() {
        writeln!(out, "  longest gaps:")?;
        let mut gaps: Vec<&MetricsGapInfo> = m.gaps.iter().collect();
        gaps.sort_by(|a, b| b.dur_us.total_cmp(&a.dur_us));
        for g in gaps.iter().take(n.min(5)) {
            writeln!(
                out,
                "    device {} at {:.1} ms: {:.1} µs, SM {} DRAM {} → {}",
                g.device,
                g.start_us / 1000.0,
                g.dur_us,
                pct(g.sampled.sm_pct),
                pct(g.sampled.dram_pct),
                g.sampled.class.as_str()
            )?;
        }
    }
    Ok(())
}
