//! Sampled GPU metrics (Nsight Systems `--gpu-metrics-devices`) per NVTX range and per idle
//! gap: is the device compute-bound, memory-bound or starved by launches?
//!
//! # Definitions
//!
//! Per device, the **SM activity** is the `SMs Active` series (`SM Active` before nsys 2023)
//! and the **DRAM bandwidth** the sum of `DRAM Read` and `DRAM Write` `Bandwidth`
//! (`Throughput` before 2023), both in percent of peak; names are matched on the part before
//! ` [`. Over an interval, a metric is the mean of the samples whose timestamp lies in it
//! (`start ≤ t < end`); an interval without samples is **unsampled**, never 0 %.
//!
//! Classes (the thresholds of the Denoise profiling guide):
//!
//! | class | SM | DRAM |
//! |---|---|---|
//! | `compute-bound` | > 60 % | < 50 % |
//! | `memory-bound` | < 30 % | > 80 % |
//! | `launch-bound` | < 30 % | < 50 % |
//! | `mixed` | anything else | |
//!
//! **Ranges**: every user annotation (NVTX range) is measured over its **GPU projection** —
//! from the first start to the last end of the device activities (kernels, copies, fills)
//! whose launching runtime call lies inside the range on the same thread (nsys
//! `nvtx_gpu_proj_sum`; a child's work counts for every enclosing range) — on each device
//! that ran such work; a range that launched nothing is measured over its host interval on
//! every device with metrics. Instances are grouped by path (names of the enclosing ranges
//! on the thread, joined by `/`), the mean weighted by samples.
//!
//! **Gaps**: per device, the idle intervals between consecutive spans of the union of all
//! device activities inside the window, at least `min_gap` long.

use std::collections::HashMap;

use serde::Serialize;

use crate::model::{CpuKind, GpuMetricSeries, Interval, IntervalSet, Ns, Trace, NONE};

/// Gaps listed in [`GpuMetricsAnalysis::gaps`] (the longest).
pub const MAX_GAPS: usize = 20;

/// What the samples say about an interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Boundness {
    /// SM > 60 %, DRAM < 50 %.
    ComputeBound,
    /// SM < 30 %, DRAM > 80 %.
    MemoryBound,
    /// SM < 30 %, DRAM < 50 %: the device waits for work.
    LaunchBound,
    /// None of the above.
    Mixed,
    /// No sample in the interval.
    Unsampled,
}

impl Boundness {
    /// Label as in the JSON report.
    pub fn as_str(&self) -> &'static str {
        match self {
            Boundness::ComputeBound => "compute-bound",
            Boundness::MemoryBound => "memory-bound",
            Boundness::LaunchBound => "launch-bound",
            Boundness::Mixed => "mixed",
            Boundness::Unsampled => "unsampled",
        }
    }
}

/// Class of an SM activity and DRAM bandwidth pair (percent of peak).
pub fn classify(sm: f64, dram: f64) -> Boundness {
    if sm > 60.0 && dram < 50.0 {
        Boundness::ComputeBound
    } else if sm < 30.0 && dram > 80.0 {
        Boundness::MemoryBound
    } else if sm < 30.0 && dram < 50.0 {
        Boundness::LaunchBound
    } else {
        Boundness::Mixed
    }
}

/// Mean metrics over some time.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Sampled {
    /// Samples inside the measured time (of the SM series).
    pub samples: u64,
    /// Mean SM activity, %.
    pub sm_pct: Option<f64>,
    /// Mean DRAM read + write bandwidth, % of peak.
    pub dram_pct: Option<f64>,
    /// Class.
    pub class: Boundness,
}

/// Running sums for a [`Sampled`].
#[derive(Clone, Copy, Debug, Default)]
struct Acc {
    sm: (f64, u64),
    read: (f64, u64),
    write: (f64, u64),
}

impl Acc {
    fn add(&mut self, o: &Acc) {
        self.sm.0 += o.sm.0;
        self.sm.1 += o.sm.1;
        self.read.0 += o.read.0;
        self.read.1 += o.read.1;
        self.write.0 += o.write.0;
        self.write.1 += o.write.1;
    }

    fn finish(&self) -> Sampled {
        let mean = |(s, n): (f64, u64)| (n > 0).then(|| s / n as f64);
        let sm = mean(self.sm);
        let dram = match (mean(self.read), mean(self.write)) {
            (None, None) => None,
            (r, w) => Some(r.unwrap_or(0.0) + w.unwrap_or(0.0)),
        };
        let class = match (sm, dram) {
            (Some(s), Some(d)) => classify(s, d),
            _ => Boundness::Unsampled,
        };
        Sampled {
            samples: self.sm.1,
            sm_pct: sm,
            dram_pct: dram,
            class,
        }
    }
}

/// Where a range was measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// First start → last end of the device work launched inside the range.
    GpuProjection,
    /// The range's host interval (it launched no device work).
    HostRange,
}

/// One NVTX range path on one device.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct RangeMetrics {
    /// Path (`Denoise_Step_0/Layer_0/MLP`).
    pub path: String,
    /// Device id.
    pub device: i64,
    /// Instances measured.
    pub calls: u64,
    /// Σ measured time over instances, ns.
    pub time: Ns,
    /// Measured over the GPU projection or the host interval.
    pub basis: Basis,
    /// Means.
    pub sampled: Sampled,
}

/// One idle gap.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct GapMetrics {
    /// Device id.
    pub device: i64,
    /// Start, ns.
    pub start: Ns,
    /// Length, ns.
    pub dur: Ns,
    /// Means.
    pub sampled: Sampled,
}

/// One device's metrics over the window.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct DeviceMetrics {
    /// Device id.
    pub device: i64,
    /// Names of the series used (SM, DRAM read, DRAM write).
    pub series: Vec<String>,
    /// Over the whole window.
    pub window: Sampled,
    /// Over the device's busy time in the window.
    pub busy: Sampled,
    /// Gaps of at least `min_gap` in the window.
    pub gap_count: u64,
    /// Σ of those gaps, ns.
    pub gap_time: Ns,
    /// Gaps per class: (class, count, Σ ns).
    pub gap_classes: Vec<(Boundness, u64, Ns)>,
}

/// GPU metrics per device, per NVTX range path and per gap.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct GpuMetricsAnalysis {
    /// Shortest gap counted, ns.
    pub min_gap: Ns,
    /// Per device with SM or DRAM series.
    pub devices: Vec<DeviceMetrics>,
    /// Per (range path, device), by measured time descending.
    pub ranges: Vec<RangeMetrics>,
    /// The longest gaps (at most [`MAX_GAPS`]), in time order.
    pub gaps: Vec<GapMetrics>,
}

fn base(name: &str) -> &str {
    name.split(" [").next().unwrap_or(name).trim()
}

/// The SM, DRAM-read and DRAM-write series of one device.
struct DeviceSeries<'a> {
    sm: Option<&'a GpuMetricSeries>,
    read: Option<&'a GpuMetricSeries>,
    write: Option<&'a GpuMetricSeries>,
}

fn sum_in(s: Option<&GpuMetricSeries>, iv: Interval) -> (f64, u64) {
    let Some(s) = s else { return (0.0, 0) };
    let a = s.times.partition_point(|&t| t < iv.start);
    let b = s.times.partition_point(|&t| t < iv.end);
    (s.values[a..b].iter().sum(), (b - a) as u64)
}

impl DeviceSeries<'_> {
    fn acc(&self, iv: Interval) -> Acc {
        Acc {
            sm: sum_in(self.sm, iv),
            read: sum_in(self.read, iv),
            write: sum_in(self.write, iv),
        }
    }
}

/// Metrics per device, NVTX range path and gap (≥ `min_gap` ns) inside `window`; `None` when
/// the trace has no SM or DRAM series.
pub fn analyze_gpu_metrics(
    trace: &Trace,
    window: Interval,
    min_gap: Ns,
) -> Option<GpuMetricsAnalysis> {
    let mut series: HashMap<i64, DeviceSeries> = HashMap::new();
    for s in &trace.gpu_metrics {
        let e = series.entry(s.device).or_insert(DeviceSeries {
            sm: None,
            read: None,
            write: None,
        });
        match base(&s.name) {
            "SMs Active" | "SM Active" => e.sm = e.sm.or(Some(s)),
            "DRAM Read Bandwidth" | "DRAM Read Throughput" => e.read = e.read.or(Some(s)),
            "DRAM Write Bandwidth" | "DRAM Write Throughput" => e.write = e.write.or(Some(s)),
            _ => {}
        }
    }
    series.retain(|_, s| s.sm.is_some() || s.read.is_some() || s.write.is_some());
    if series.is_empty() {
        return None;
    }
    let mut device_ids: Vec<i64> = series.keys().copied().collect();
    device_ids.sort_unstable();

    // busy unions and gaps per device
    let mut devices = Vec::new();
    let mut gaps = Vec::new();
    for &d in &device_ids {
        let s = &series[&d];
        let busy = IntervalSet::from_intervals(
            trace
                .gpu
                .iter()
                .filter(|g| g.is_activity() && g.device as i64 == d)
                .map(|g| g.interval()),
        )
        .clip(window);
        let mut busy_acc = Acc::default();
        for iv in busy.spans() {
            busy_acc.add(&s.acc(*iv));
        }
        let mut classes: Vec<(Boundness, u64, Ns)> = Vec::new();
        let (mut count, mut time) = (0u64, 0);
        for g in busy.gaps().filter(|g| g.len() >= min_gap) {
            let sampled = s.acc(g).finish();
            count += 1;
            time += g.len();
            match classes.iter_mut().find(|c| c.0 == sampled.class) {
                Some(c) => {
                    c.1 += 1;
                    c.2 += g.len();
                }
                None => classes.push((sampled.class, 1, g.len())),
            }
            gaps.push(GapMetrics {
                device: d,
                start: g.start,
                dur: g.len(),
                sampled,
            });
        }
        classes.sort_by_key(|c| std::cmp::Reverse(c.2));
        devices.push(DeviceMetrics {
            device: d,
            series: [s.sm, s.read, s.write]
                .iter()
                .flatten()
                .map(|x| x.name.clone())
                .collect(),
            window: s.acc(window).finish(),
            busy: busy_acc.finish(),
            gap_count: count,
            gap_time: time,
            gap_classes: classes,
        });
    }
    gaps.sort_by_key(|g| std::cmp::Reverse(g.dur));
    gaps.truncate(MAX_GAPS);
    gaps.sort_by_key(|g| (g.start, g.device));

    let ranges = range_metrics(trace, window, &series, &device_ids);
    Some(GpuMetricsAnalysis {
        min_gap,
        devices,
        ranges,
        gaps,
    })
}

/// Per annotation instance: its path and, per device, the hull of the work it launched.
fn range_metrics(
    trace: &Trace,
    window: Interval,
    series: &HashMap<i64, DeviceSeries>,
    device_ids: &[i64],
) -> Vec<RangeMetrics> {
    // activities by launching call
    let mut by_launch: HashMap<u32, Vec<u32>> = HashMap::new();
    for (i, g) in trace.gpu.iter().enumerate() {
        if g.is_activity() && g.launch != NONE {
            by_launch.entry(g.launch).or_default().push(i as u32);
        }
    }
    // per thread: annotations and launching calls, in start order (longer first)
    let mut by_thread: HashMap<u32, Vec<u32>> = HashMap::new();
    for (i, e) in trace.cpu.iter().enumerate() {
        if e.kind == CpuKind::UserAnnotation || by_launch.contains_key(&(i as u32)) {
            by_thread.entry(e.thread).or_default().push(i as u32);
        }
    }
    struct Inst {
        path: u32,
        host: Interval,
        hull: HashMap<i64, Interval>,
    }
    let mut paths: Vec<String> = Vec::new();
    let mut path_ids: HashMap<String, u32> = HashMap::new();
    let mut insts: Vec<Inst> = Vec::new();
    let mut threads: Vec<_> = by_thread.into_iter().collect();
    threads.sort_by_key(|t| t.0);
    for (_, idx) in threads {
        // trace.cpu is sorted by start, longer first: idx is already in that order
        let mut stack: Vec<u32> = Vec::new(); // indexes into insts
        for i in idx {
            let e = &trace.cpu[i as usize];
            while stack
                .last()
                .is_some_and(|&k| insts[k as usize].host.end < e.end())
            {
                stack.pop();
            }
            if e.kind == CpuKind::UserAnnotation {
                let name = trace.name(e.name);
                let path = match stack.last() {
                    Some(&k) => format!("{}/{name}", paths[insts[k as usize].path as usize]),
                    None => name.to_string(),
                };
                let id = *path_ids.entry(path.clone()).or_insert_with(|| {
                    paths.push(path);
                    (paths.len() - 1) as u32
                });
                insts.push(Inst {
                    path: id,
                    host: e.interval(),
                    hull: HashMap::new(),
                });
                stack.push((insts.len() - 1) as u32);
            }
            if let Some(acts) = by_launch.get(&i) {
                for &k in &stack {
                    for &a in acts {
                        let g = &trace.gpu[a as usize];
                        let iv = g.interval();
                        insts[k as usize]
                            .hull
                            .entry(g.device as i64)
                            .and_modify(|h| {
                                h.start = h.start.min(iv.start);
                                h.end = h.end.max(iv.end);
                            })
                            .or_insert(iv);
                    }
                }
            }
        }
    }
    // aggregate by (path, device)
    let mut agg: HashMap<(u32, i64), (u64, Ns, Basis, Acc)> = HashMap::new();
    for inst in &insts {
        let measured: Vec<(i64, Interval, Basis)> = if inst.hull.is_empty() {
            device_ids
                .iter()
                .map(|&d| (d, inst.host, Basis::HostRange))
                .collect()
        } else {
            inst.hull
                .iter()
                .filter(|(d, _)| series.contains_key(d))
                .map(|(&d, &h)| (d, h, Basis::GpuProjection))
                .collect()
        };
        for (d, iv, basis) in measured {
            let iv = Interval::new(iv.start.max(window.start), iv.end.min(window.end));
            if iv.is_empty() {
                continue;
            }
            let acc = series[&d].acc(iv);
            let e = agg
                .entry((inst.path, d))
                .or_insert((0, 0, basis, Acc::default()));
            e.0 += 1;
            e.1 += iv.len();
            if basis == Basis::GpuProjection {
                e.2 = basis;
            }
            e.3.add(&acc);
        }
    }
    let mut out: Vec<RangeMetrics> = agg
        .into_iter()
        .map(|((p, d), (calls, time, basis, acc))| RangeMetrics {
            path: paths[p as usize].clone(),
            device: d,
            calls,
            time,
            basis,
            sampled: acc.finish(),
        })
        .collect();
    out.sort_by(|a, b| {
        b.time
            .cmp(&a.time)
            .then(a.path.cmp(&b.path))
            .then(a.device.cmp(&b.device))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        assert_eq!(classify(85.0, 20.0), Boundness::ComputeBound);
        assert_eq!(classify(20.0, 95.0), Boundness::MemoryBound);
        assert_eq!(classify(5.0, 3.0), Boundness::LaunchBound);
        assert_eq!(classify(45.0, 60.0), Boundness::Mixed);
        assert_eq!(classify(61.0, 50.0), Boundness::Mixed);
        assert_eq!(Acc::default().finish().class, Boundness::Unsampled);
    }

    #[test]
    fn means_use_samples_inside() {
        let s = GpuMetricSeries {
            device: 0,
            name: "SMs Active [Throughput %]".into(),
            times: vec![0, 10, 20, 30],
            values: vec![10.0, 20.0, 30.0, 40.0],
        };
        assert_eq!(sum_in(Some(&s), Interval::new(10, 30)), (50.0, 2));
        assert_eq!(sum_in(Some(&s), Interval::new(11, 19)), (0.0, 0));
        assert_eq!(base(&s.name), "SMs Active");
    }
}
