//! Nsight Compute facts: each profiled launch joined to the trace's kernels, and the time its
//! kernel takes in the analyzed window, so that per-launch metrics can be weighted by what the
//! kernel costs in the real run.
//!
//! * **Beside a trace** (`--ncu`): launches are joined by name and order
//!   ([`crate::ingest::ncu::join`]); the launches joined to kernels of one trace name form a
//!   [`NcuKernelTime`] with that name's in-window time and calls. Each launch stands for a
//!   share of that time: its ncu duration over the summed ncu durations of the launches of its
//!   kernel (equal shares when ncu has no duration).
//! * **Alone**: no timeline; a launch weighs its own ncu duration (`gpu__time_duration.sum`,
//!   else `sm__cycles_elapsed.avg` ÷ `sm__cycles_elapsed.avg.per_second`, the elapsed cycles at
//!   the measured clock — older `--metrics` runs have only those).

use std::collections::HashMap;

use serde::Serialize;

use crate::ingest::ncu::{self, NcuReport};
use crate::model::{GpuKind, NameId, Ns, Trace};
use crate::window::Window;

/// Where a launch's ncu duration comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DurationBasis {
    /// `gpu__time_duration.sum`.
    Duration,
    /// `sm__cycles_elapsed.avg` ÷ `sm__cycles_elapsed.avg.per_second`.
    Cycles,
}

/// The trace kernel a launch was joined to.
#[derive(Clone, Debug, PartialEq)]
pub struct JoinedKernel {
    /// Index in [`Trace::gpu`].
    pub gpu: u32,
    /// Start, ns (trace clock).
    pub start: Ns,
    /// Duration in the trace, ns.
    pub dur: Ns,
    /// Device.
    pub device: i64,
    /// Stream.
    pub stream: i64,
}

/// One ncu launch (same order as [`NcuReport::kernels`]).
#[derive(Clone, Debug, PartialEq)]
pub struct NcuLaunch {
    /// The trace kernel it was joined to (beside a trace only).
    pub trace_kernel: Option<JoinedKernel>,
    /// Index in [`NcuAnalysis::kernels`] of its kernel name in the trace.
    pub kernel: Option<usize>,
    /// Its duration under ncu, ns.
    pub ncu_ns: Option<f64>,
    /// Where [`NcuLaunch::ncu_ns`] comes from.
    pub ncu_ns_basis: Option<DurationBasis>,
    /// The share of its trace kernel's time it stands for (0..1; 0 when not joined).
    pub share_of_kernel: f64,
}

/// A trace kernel name that ncu launches were joined to, over the analyzed window.
#[derive(Clone, Debug, PartialEq)]
pub struct NcuKernelTime {
    /// Name in the trace.
    pub name: String,
    /// Its id.
    pub name_id: NameId,
    /// Total device time of the name's kernels counted in the window, ns.
    pub window_time: Ns,
    /// Their number.
    pub calls: u64,
    /// The ncu launches joined to it (indices in [`NcuReport::kernels`]).
    pub launches: Vec<usize>,
}

/// Nsight Compute facts.
#[derive(Clone, Debug)]
pub struct NcuAnalysis {
    /// The CSV as read.
    pub report: NcuReport,
    /// True beside a trace (`--ncu`), false for a CSV alone.
    pub joined: bool,
    /// Per launch, in file order.
    pub launches: Vec<NcuLaunch>,
    /// Per trace kernel name joined (empty for a CSV alone).
    pub kernels: Vec<NcuKernelTime>,
    /// Number of trace steps in the window (at least 1; 1 for a CSV alone).
    pub n_steps: usize,
}

impl NcuAnalysis {
    /// Launches joined to a trace kernel.
    pub fn matched(&self) -> usize {
        self.launches
            .iter()
            .filter(|l| l.trace_kernel.is_some())
            .count()
    }
}

/// A launch's duration under ncu, ns, and its basis.
pub fn ncu_duration(k: &ncu::NcuKernel) -> Option<(f64, DurationBasis)> {
    if let Some(d) = k.duration_ns.filter(|&d| d > 0) {
        return Some((d as f64, DurationBasis::Duration));
    }
    let cycles = k.metrics.get("sm__cycles_elapsed.avg")?;
    let rate = k.metrics.get("sm__cycles_elapsed.avg.per_second")?;
    (*cycles > 0.0 && *rate > 0.0).then(|| (cycles / rate * 1e9, DurationBasis::Cycles))
}

/// False for a join by base name that names no function (an empty base, or one ending in
/// `::`, as a namespace spelt with `<` would give before [`ncu::join_key`] rewrote it): such a
/// base would join unrelated kernels of that namespace.
fn trusted_match(ncu_name: &str, trace_name: &str) -> bool {
    ncu_name == trace_name || {
        let key = ncu::join_key(ncu_name);
        let b = ncu::base_name(&key);
        !b.is_empty() && !b.ends_with("::")
    }
}

/// Facts of a CSV alone: each launch weighs its own ncu duration.
pub fn standalone(report: &NcuReport) -> NcuAnalysis {
    let launches = report
        .kernels
        .iter()
        .map(|k| {
            let d = ncu_duration(k);
            NcuLaunch {
                trace_kernel: None,
                kernel: None,
                ncu_ns: d.map(|x| x.0),
                ncu_ns_basis: d.map(|x| x.1),
                share_of_kernel: 0.0,
            }
        })
        .collect();
    NcuAnalysis {
        report: report.clone(),
        joined: false,
        launches,
        kernels: Vec::new(),
        n_steps: 1,
    }
}

/// Facts of a CSV beside a trace: the join, and each joined name's time in the window.
pub fn joined(trace: &Trace, window: &Window, n_steps: usize, report: &NcuReport) -> NcuAnalysis {
    let m = ncu::join(trace, report);
    let mut base = standalone(report);
    base.joined = true;
    base.n_steps = n_steps.max(1);
    let mut by_name: HashMap<NameId, usize> = HashMap::new();
    let mut kernels: Vec<NcuKernelTime> = Vec::new();
    for (i, gi) in m.iter().enumerate() {
        let Some(gi) = *gi else { continue };
        let g = &trace.gpu[gi as usize];
        if !trusted_match(&report.kernels[i].name, trace.name(g.name)) {
            continue;
        }
        let k = *by_name.entry(g.name).or_insert_with(|| {
            kernels.push(NcuKernelTime {
                name: trace.name(g.name).to_string(),
                name_id: g.name,
                window_time: 0,
                calls: 0,
                launches: Vec::new(),
            });
            kernels.len() - 1
        });
        kernels[k].launches.push(i);
        let l = &mut base.launches[i];
        l.kernel = Some(k);
        l.trace_kernel = Some(JoinedKernel {
            gpu: gi,
            start: g.start,
            dur: g.dur,
            device: g.device as i64,
            stream: g.stream as i64,
        });
    }
    if !kernels.is_empty() {
        for (gi, g) in trace.gpu.iter().enumerate() {
            if g.kind != GpuKind::Kernel {
                continue;
            }
            if let Some(&k) = by_name.get(&g.name) {
                if window.counts_activity_at(trace, gi) {
                    kernels[k].window_time += g.dur;
                    kernels[k].calls += 1;
                }
            }
        }
    }
    // each launch's share of its kernel: by ncu duration, equal shares without one
    for k in &kernels {
        let durs: Vec<Option<f64>> = k
            .launches
            .iter()
            .map(|&i| base.launches[i].ncu_ns)
            .collect();
        let all = durs.iter().all(|d| d.is_some());
        let total: f64 = durs.iter().map(|d| d.unwrap_or(0.0)).sum();
        for (j, &i) in k.launches.iter().enumerate() {
            base.launches[i].share_of_kernel = if all && total > 0.0 {
                durs[j].unwrap_or(0.0) / total
            } else {
                1.0 / k.launches.len() as f64
            };
        }
    }
    base.kernels = kernels;
    base
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{analyze, AnalyzeOptions};
    use crate::model::build::TraceBuilder;

    #[test]
    fn weights_by_window_time_and_ncu_duration() {
        let mut b = TraceBuilder::new().device(0, "NVIDIA A10G", 80, 24 << 30);
        for i in 0..4 {
            let corr = b.runtime("cudaLaunchKernel", 0, i as f64 * 100.0, 5.0);
            b.gpu(
                GpuKind::Kernel,
                "void gemm<64>(float *)",
                0,
                7,
                i as f64 * 100.0 + 10.0,
                40.0,
                corr,
            );
        }
        let t = b.build();
        let a = analyze(
            &t,
            &AnalyzeOptions {
                all_steps: true,
                ..AnalyzeOptions::default()
            },
        );
        let csv = "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"\",\"\",\"usecond\"\n\
\"0\",\"void gemm<64>(float *)\",\"30\"\n\"1\",\"void gemm<64>(float *)\",\"10\"\n\
\"2\",\"other\",\"5\"\n";
        let r = ncu::parse(csv, "k.csv").unwrap();
        let n = joined(&t, &a.selection, 1, &r);
        assert!(n.joined);
        assert_eq!(n.matched(), 2);
        assert_eq!(n.kernels.len(), 1);
        assert_eq!(n.kernels[0].calls, 4);
        assert_eq!(n.kernels[0].window_time, 160_000);
        assert_eq!(n.kernels[0].launches, vec![0, 1]);
        assert!((n.launches[0].share_of_kernel - 0.75).abs() < 1e-9);
        assert!((n.launches[1].share_of_kernel - 0.25).abs() < 1e-9);
        assert_eq!(n.launches[2].kernel, None);
        assert_eq!(n.launches[2].share_of_kernel, 0.0);
        assert_eq!(n.launches[1].trace_kernel.as_ref().unwrap().start, 110_000);

        let s = standalone(&r);
        assert!(!s.joined);
        assert_eq!(s.launches[0].ncu_ns, Some(30_000.0));
        assert_eq!(s.launches[0].ncu_ns_basis, Some(DurationBasis::Duration));
    }

    #[test]
    fn duration_from_cycles() {
        let csv = "\"ID\",\"Kernel Name\",\"sm__cycles_elapsed.avg\",\"sm__cycles_elapsed.avg.per_second\"\n\
\"\",\"\",\"cycle\",\"cycle/second\"\n\"0\",\"k\",\"12000\",\"1000000000\"\n";
        let r = ncu::parse(csv, "k.csv").unwrap();
        let d = ncu_duration(&r.kernels[0]).unwrap();
        assert!((d.0 - 12_000.0).abs() < 1e-6);
        assert_eq!(d.1, DurationBasis::Cycles);
    }
}
