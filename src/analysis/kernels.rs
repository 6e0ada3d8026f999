//! Kernel table: one row per kernel name, like the TensorBoard plugin's kernel view.
//!
//! # Definition
//!
//! * Rows: device events of kind [`GpuKind::Kernel`] (copies and fills are not kernels) that
//!   **start inside the window** (`window.start <= start < window.end`), grouped by full name.
//!   All devices are pooled, as in the plugin.
//! * `calls`, `total`, `mean` (= total / calls), `min`, `max`: durations in ns.
//! * `blocks_per_sm`, `occupancy_pct`: means weighted by call duration over the calls that
//!   carry the value (`blocks per SM`, `est. achieved occupancy %`); `None` when no call has it.
//!   When every call carrying it lasted 0 ns, the plain mean of those calls. The plugin instead
//!   counts a missing value as 0; [`KernelRow::blocks_per_sm_tb`] and
//!   [`KernelRow::occupancy_pct_tb`] give its figures.
//! * `tensor_core`: [`crate::model::classify::uses_tensor_cores`]; `category`:
//!   [`crate::model::classify::categorize`] (through [`Trace::kernel_class`]).
//! * `share`: total ÷ the sum of all rows' totals (0 when that is 0).
//! * Order: total descending, then name (deterministic where the plugin's sort is not).
//!
//! # Copies and fills
//!
//! [`copy_table`] gives the same rows for device events of kind [`GpuKind::Memcpy`] and
//! [`GpuKind::Memset`] (peer-to-peer transfers are copies, direction `PtoP`), grouped by full
//! name (`Memcpy HtoD (Pageable -> Device)`, `Memset (Device)`: the name carries the direction
//! and the memory kinds on Kineto and Nsight Systems input alike), each with [`CopyStats`]:
//! direction, host memory kind, bytes per call and bandwidth. Their `share` is of the copy and
//! fill time (the kernel rows' `share` stays the share of kernel time, as in the peers' kernel
//! views, which leave copies out). Launch details (blocks per SM, occupancy, tensor cores) do
//! not apply: `None`, 0 and `false`.
//!
//! Which window reproduces the plugin: the plugin's kernel view covers every kernel of the
//! trace. On its ResNet-50 samples every kernel starts inside the all-steps span, so the span
//! and the whole trace give the same table (checked in `tests/tables.rs`).

use crate::model::fast::HashMap;

use crate::model::classify::KernelCategory;
use crate::model::{GpuKind, Interval, NameId, Ns, Trace};

/// One kernel name's statistics.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelRow {
    /// Full kernel name.
    pub name: String,
    /// Category.
    pub category: KernelCategory,
    /// Calls.
    pub calls: u64,
    /// Total time, ns.
    pub total: Ns,
    /// Mean, ns.
    pub mean: f64,
    /// Min, ns.
    pub min: Ns,
    /// Max, ns.
    pub max: Ns,
    /// Duration-weighted mean blocks per SM (calls without the value skipped).
    pub blocks_per_sm: Option<f64>,
    /// Duration-weighted mean estimated achieved occupancy, percent (calls without the value
    /// skipped).
    pub occupancy_pct: Option<f64>,
    /// The plugin's "Mean Blocks Per SM": duration-weighted, a missing value counted as 0
    /// (0 when all calls lasted 0 ns).
    pub blocks_per_sm_tb: f64,
    /// The plugin's "Mean Est. Achieved Occupancy (%)", same rules.
    pub occupancy_pct_tb: f64,
    /// Runs on tensor cores.
    pub tensor_core: bool,
    /// Share of all kernel time in the window (0..1); for a copy or fill row, of all copy and
    /// fill time.
    pub share: f64,
    /// Copy and fill rows only ([`copy_table`]): what they moved.
    pub copy: Option<CopyStats>,
}

/// What the calls of one copy or fill row moved.
#[derive(Clone, Debug, PartialEq)]
pub struct CopyStats {
    /// [`GpuKind::Memcpy`] or [`GpuKind::Memset`].
    pub kind: GpuKind,
    /// `HtoD`, `DtoH`, `DtoD`, `PtoP` (peer to peer), `HtoH` ([`copy_direction`]); `None`
    /// for fills and for copies whose name does not say.
    pub direction: Option<&'static str>,
    /// The host side's memory: `pageable`, `pinned` or `managed`, when the name says
    /// ([`host_memory`]).
    pub host_memory: Option<&'static str>,
    /// Bytes moved by all calls (Kineto `args.bytes`, Nsight Systems `bytes`).
    pub bytes: u64,
    /// Bytes per call over the calls that recorded a byte count (`bytes ÷` those calls: some
    /// Kineto copies carry no `bytes`, and 0 is read as not recorded); `None` when none did.
    pub bytes_per_call: Option<f64>,
    /// GB/s (10⁹ bytes per second): the bytes of the calls that recorded bytes and lasted
    /// over 0 ns ÷ their time; `None` without such calls.
    pub bandwidth_gbps: Option<f64>,
}

/// Direction of a copy from its name: `HtoD`, `DtoH`, `DtoD`, `PtoP`, `HtoH` as Kineto and
/// Nsight Systems write them (`Memcpy HtoD (Pinned -> Device)`), or spelled out
/// (`host_to_device`, `HostToDevice`); `None` otherwise.
pub fn copy_direction(name: &str) -> Option<&'static str> {
    for k in ["HtoD", "DtoH", "DtoD", "PtoP", "HtoH"] {
        if name.contains(k) {
            return Some(k);
        }
    }
    let l = name.to_ascii_lowercase();
    [
        ("host_to_device", "HtoD"),
        ("hosttodevice", "HtoD"),
        ("device_to_host", "DtoH"),
        ("devicetohost", "DtoH"),
        ("device_to_device", "DtoD"),
        ("devicetodevice", "DtoD"),
        ("peer", "PtoP"),
    ]
    .iter()
    .find(|(k, _)| l.contains(k))
    .map(|&(_, d)| d)
}

/// The host memory of a copy from the memory kinds in its name (`(Pageable -> Device)`,
/// `(Device -> Pinned)`): `pageable`, `pinned` or `managed`; `None` when the name has no
/// kinds or only device memory.
pub fn host_memory(name: &str) -> Option<&'static str> {
    let kinds = &name[name.rfind('(')?..];
    ["Pageable", "Pinned", "Managed"]
        .iter()
        .zip(["pageable", "pinned", "managed"])
        .find(|(k, _)| kinds.contains(*k))
        .map(|(_, v)| v)
}

/// Duration-weighted mean accumulator that remembers whether any value was present.
#[derive(Clone, Copy, Default)]
struct WeightedMean {
    /// Σ value × duration over calls with the value.
    sum: f64,
    /// Σ duration over calls with the value.
    weight: f64,
    /// Σ value and count, for the all-zero-duration fallback.
    plain_sum: f64,
    present: u64,
}

impl WeightedMean {
    fn add(&mut self, value: f32, dur: Ns) {
        if value.is_finite() {
            let v = value as f64;
            self.sum += v * dur as f64;
            self.weight += dur as f64;
            self.plain_sum += v;
            self.present += 1;
        }
    }

    /// Mean over the calls that had the value.
    fn mean(&self) -> Option<f64> {
        if self.present == 0 {
            None
        } else if self.weight > 0.0 {
            Some(self.sum / self.weight)
        } else {
            Some(self.plain_sum / self.present as f64)
        }
    }

    /// The plugin's mean: missing counted as 0, weights = all calls' durations.
    fn mean_missing_as_zero(&self, total: Ns) -> f64 {
        if total > 0 {
            self.sum / total as f64
        } else {
            0.0
        }
    }
}

struct Acc {
    name: NameId,
    calls: u64,
    total: Ns,
    min: Ns,
    max: Ns,
    blocks: WeightedMean,
    occupancy: WeightedMean,
}

/// Rows by total time descending (then name).
pub fn kernel_table(trace: &Trace, window: Interval) -> Vec<KernelRow> {
    let mut by_name: HashMap<NameId, Acc> = HashMap::default();
    for g in &trace.gpu {
        if g.kind != GpuKind::Kernel || g.start < window.start || g.start >= window.end {
            continue;
        }
        let acc = by_name.entry(g.name).or_insert_with(|| Acc {
            name: g.name,
            calls: 0,
            total: 0,
            min: Ns::MAX,
            max: Ns::MIN,
            blocks: WeightedMean::default(),
            occupancy: WeightedMean::default(),
        });
        acc.calls += 1;
        acc.total += g.dur;
        acc.min = acc.min.min(g.dur);
        acc.max = acc.max.max(g.dur);
        let info = trace.kernel_info(g);
        acc.blocks.add(info.blocks_per_sm, g.dur);
        acc.occupancy.add(info.occupancy_pct, g.dur);
    }
    let grand_total: Ns = by_name.values().map(|a| a.total).sum();
    let mut rows: Vec<KernelRow> = by_name
        .into_values()
        .map(|a| {
            let name = trace.name(a.name);
            let class = trace.kernel_class(a.name);
            KernelRow {
                name: name.to_string(),
                category: class.category,
                calls: a.calls,
                total: a.total,
                mean: a.total as f64 / a.calls as f64,
                min: a.min,
                max: a.max,
                blocks_per_sm: a.blocks.mean(),
                occupancy_pct: a.occupancy.mean(),
                blocks_per_sm_tb: a.blocks.mean_missing_as_zero(a.total),
                occupancy_pct_tb: a.occupancy.mean_missing_as_zero(a.total),
                tensor_core: class.tensor_cores,
                share: if grand_total > 0 {
                    a.total as f64 / grand_total as f64
                } else {
                    0.0
                },
                copy: None,
            }
        })
        .collect();
    rows.sort_by(|a, b| b.total.cmp(&a.total).then_with(|| a.name.cmp(&b.name)));
    rows
}

/// Copy and fill rows (device events of kind [`GpuKind::Memcpy`] and [`GpuKind::Memset`]
/// starting inside the window, by full name), by total time descending (then name); see the
/// module documentation.
pub fn copy_table(trace: &Trace, window: Interval) -> Vec<KernelRow> {
    struct CopyAcc {
        kind: GpuKind,
        calls: u64,
        total: Ns,
        min: Ns,
        max: Ns,
        bytes: u64,
        /// Calls that recorded bytes.
        sized: u64,
        /// Bytes and time of the calls that recorded bytes and lasted over 0 ns.
        timed_bytes: u64,
        timed: Ns,
    }
    let mut by_name: HashMap<NameId, CopyAcc> = HashMap::default();
    for g in &trace.gpu {
        if !matches!(g.kind, GpuKind::Memcpy | GpuKind::Memset)
            || g.start < window.start
            || g.start >= window.end
        {
            continue;
        }
        let acc = by_name.entry(g.name).or_insert(CopyAcc {
            kind: g.kind,
            calls: 0,
            total: 0,
            min: Ns::MAX,
            max: Ns::MIN,
            bytes: 0,
            sized: 0,
            timed_bytes: 0,
            timed: 0,
        });
        acc.calls += 1;
        acc.total += g.dur;
        acc.min = acc.min.min(g.dur);
        acc.max = acc.max.max(g.dur);
        acc.bytes += g.bytes;
        acc.sized += u64::from(g.bytes > 0);
        if g.dur > 0 && g.bytes > 0 {
            acc.timed_bytes += g.bytes;
            acc.timed += g.dur;
        }
    }
    let grand_total: Ns = by_name.values().map(|a| a.total).sum();
    let mut rows: Vec<KernelRow> = by_name
        .into_iter()
        .map(|(id, a)| {
            let name = trace.name(id);
            let copy = a.kind == GpuKind::Memcpy;
            KernelRow {
                name: name.to_string(),
                category: if copy {
                    KernelCategory::Memcpy
                } else {
                    KernelCategory::Memset
                },
                calls: a.calls,
                total: a.total,
                mean: a.total as f64 / a.calls as f64,
                min: a.min,
                max: a.max,
                blocks_per_sm: None,
                occupancy_pct: None,
                blocks_per_sm_tb: 0.0,
                occupancy_pct_tb: 0.0,
                tensor_core: false,
                share: if grand_total > 0 {
                    a.total as f64 / grand_total as f64
                } else {
                    0.0
                },
                copy: Some(CopyStats {
                    kind: a.kind,
                    direction: if copy { copy_direction(name) } else { None },
                    host_memory: if copy { host_memory(name) } else { None },
                    bytes: a.bytes,
                    bytes_per_call: (a.sized > 0).then(|| a.bytes as f64 / a.sized as f64),
                    // bytes per ns = GB/s
                    bandwidth_gbps: (a.timed_bytes > 0 && a.timed > 0)
                        .then(|| a.timed_bytes as f64 / a.timed as f64),
                }),
            }
        })
        .collect();
    rows.sort_by(|a, b| b.total.cmp(&a.total).then_with(|| a.name.cmp(&b.name)));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::build::TraceBuilder;

    const ALL: Interval = Interval::ALL;

    fn kernel(b: &mut TraceBuilder, name: &str, start: f64, dur: f64, bps: f32, occ: f32) {
        let corr = b.runtime("cudaLaunchKernel", 0, start - 5.0, 1.0);
        b.gpu(GpuKind::Kernel, name, 0, 7, start, dur, corr);
        b.kernel_info(|k| {
            k.blocks_per_sm = bps;
            k.occupancy_pct = occ;
        });
    }

    #[test]
    fn empty_trace_and_empty_window() {
        let t = TraceBuilder::new().build();
        assert!(kernel_table(&t, ALL).is_empty());
        let mut b = TraceBuilder::new();
        kernel(&mut b, "k", 10.0, 5.0, 1.0, 50.0);
        let t = b.build();
        assert!(kernel_table(&t, Interval::new(0, 10_000)).is_empty());
        assert_eq!(kernel_table(&t, Interval::new(10_000, 10_001)).len(), 1);
    }

    #[test]
    fn groups_by_name_with_stats_and_order() {
        let mut b = TraceBuilder::new();
        kernel(
            &mut b,
            "volta_h884gemm_64x128_ldg8_nn",
            10.0,
            30.0,
            2.0,
            25.0,
        );
        kernel(
            &mut b,
            "volta_h884gemm_64x128_ldg8_nn",
            50.0,
            10.0,
            4.0,
            50.0,
        );
        kernel(&mut b, "elementwise_add", 70.0, 38.0, 1.0, 100.0);
        kernel(&mut b, "b_tie", 120.0, 1.0, f32::NAN, f32::NAN);
        kernel(&mut b, "a_tie", 130.0, 1.0, f32::NAN, f32::NAN);
        // copies are not kernels
        let c = b.runtime("cudaMemcpyAsync", 0, 1.0, 1.0);
        b.gpu(GpuKind::Memcpy, "Memcpy HtoD", 0, 7, 200.0, 500.0, c);
        let t = b.build();
        let rows = kernel_table(&t, ALL);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "volta_h884gemm_64x128_ldg8_nn",
                "elementwise_add",
                "a_tie",
                "b_tie"
            ]
        );
        let g = &rows[0];
        assert_eq!(
            (g.calls, g.total, g.min, g.max),
            (2, 40_000, 10_000, 30_000)
        );
        assert_eq!(g.mean, 20_000.0);
        // weighted by duration: (2×30 + 4×10) / 40 = 2.5; (25×30 + 50×10) / 40 = 31.25
        assert!((g.blocks_per_sm.unwrap() - 2.5).abs() < 1e-9);
        assert!((g.occupancy_pct.unwrap() - 31.25).abs() < 1e-9);
        assert!(g.tensor_core);
        assert_eq!(g.category, KernelCategory::Gemm);
        assert!((g.share - 0.5).abs() < 1e-12);
        assert!((rows.iter().map(|r| r.share).sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!(rows[2].blocks_per_sm, None);
        assert_eq!(rows[2].blocks_per_sm_tb, 0.0);
    }

    #[test]
    fn missing_values_skipped_but_counted_as_zero_by_the_plugin() {
        let mut b = TraceBuilder::new();
        kernel(&mut b, "k", 10.0, 30.0, 2.0, 40.0);
        kernel(&mut b, "k", 50.0, 10.0, f32::NAN, f32::NAN);
        let t = b.build();
        let r = &kernel_table(&t, ALL)[0];
        assert_eq!(r.blocks_per_sm, Some(2.0));
        assert_eq!(r.occupancy_pct, Some(40.0));
        assert!((r.blocks_per_sm_tb - 1.5).abs() < 1e-9);
        assert!((r.occupancy_pct_tb - 30.0).abs() < 1e-9);
    }

    #[test]
    fn zero_duration_calls() {
        let mut b = TraceBuilder::new();
        kernel(&mut b, "k", 10.0, 0.0, 2.0, 40.0);
        kernel(&mut b, "k", 20.0, 0.0, 4.0, 60.0);
        let t = b.build();
        let r = &kernel_table(&t, ALL)[0];
        assert_eq!((r.calls, r.total, r.min, r.max, r.mean), (2, 0, 0, 0, 0.0));
        assert_eq!(r.blocks_per_sm, Some(3.0));
        assert_eq!(r.blocks_per_sm_tb, 0.0);
        assert_eq!(r.share, 0.0);
    }

    fn copy(b: &mut TraceBuilder, kind: GpuKind, name: &str, start: f64, dur: f64, bytes: u64) {
        let call = if kind == GpuKind::Memcpy {
            "cudaMemcpyAsync"
        } else {
            "cudaMemsetAsync"
        };
        let corr = b.runtime(call, 0, start - 5.0, 1.0);
        b.gpu(kind, name, 0, 7, start, dur, corr).bytes = bytes;
    }

    #[test]
    fn copies_and_fills_are_rows_with_direction_bytes_and_bandwidth() {
        let mut b = TraceBuilder::new();
        kernel(&mut b, "k", 10.0, 100.0, 1.0, 1.0);
        // two pageable uploads: 1 MB in 100 µs and 3 MB in 200 µs → 4 MB in 300 µs
        let up = "Memcpy HtoD (Pageable -> Device)";
        copy(&mut b, GpuKind::Memcpy, up, 200.0, 100.0, 1_000_000);
        copy(&mut b, GpuKind::Memcpy, up, 400.0, 200.0, 3_000_000);
        // a pinned download recorded with 0 ns: its bytes count per call, not in bandwidth;
        // one without bytes counts in neither
        let down = "Memcpy DtoH (Device -> Pinned)";
        copy(&mut b, GpuKind::Memcpy, down, 700.0, 0.0, 64);
        copy(&mut b, GpuKind::Memcpy, down, 710.0, 50.0, 64);
        copy(&mut b, GpuKind::Memcpy, down, 770.0, 25.0, 0);
        copy(
            &mut b,
            GpuKind::Memcpy,
            "Memcpy PtoP (Device -> Device)",
            800.0,
            10.0,
            0,
        );
        copy(
            &mut b,
            GpuKind::Memset,
            "Memset (Device)",
            900.0,
            40.0,
            4096,
        );
        let t = b.build();
        // the kernel table is unchanged: kernels only, their share of kernel time
        let k = kernel_table(&t, ALL);
        assert_eq!(k.len(), 1);
        assert_eq!((k[0].share, &k[0].copy), (1.0, &None));
        let rows = copy_table(&t, ALL);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                up,
                down,
                "Memset (Device)",
                "Memcpy PtoP (Device -> Device)"
            ]
        );
        let r = &rows[0];
        let c = r.copy.as_ref().unwrap();
        assert_eq!(r.category, KernelCategory::Memcpy);
        assert_eq!(
            (r.calls, r.total, r.min, r.max),
            (2, 300_000, 100_000, 200_000)
        );
        assert_eq!(
            (c.direction, c.host_memory),
            (Some("HtoD"), Some("pageable"))
        );
        assert_eq!((c.bytes, c.bytes_per_call), (4_000_000, Some(2_000_000.0)));
        // 4e6 B / 300e-6 s = 13.33 GB/s
        assert!((c.bandwidth_gbps.unwrap() - 4e6 / 300e-6 / 1e9).abs() < 1e-9);
        // share of copy and fill time: 300 of 300 + 75 + 40 + 10
        assert!((r.share - 300.0 / 425.0).abs() < 1e-12);
        let c = rows[1].copy.as_ref().unwrap();
        assert_eq!((c.direction, c.host_memory), (Some("DtoH"), Some("pinned")));
        assert_eq!(c.bytes_per_call, Some(64.0));
        assert!((c.bandwidth_gbps.unwrap() - 64.0 / 50_000.0).abs() < 1e-12);
        let fill = &rows[2];
        let c = fill.copy.as_ref().unwrap();
        assert_eq!(fill.category, KernelCategory::Memset);
        assert_eq!(
            (c.kind, c.direction, c.host_memory),
            (GpuKind::Memset, None, None)
        );
        assert_eq!(c.bytes_per_call, Some(4096.0));
        let p2p = rows[3].copy.as_ref().unwrap();
        assert_eq!(p2p.direction, Some("PtoP"));
        assert_eq!((p2p.bytes_per_call, p2p.bandwidth_gbps), (None, None));
        // the window: copies starting inside only
        assert_eq!(copy_table(&t, Interval::new(850_000, 1_000_000)).len(), 1);
    }

    #[test]
    fn directions_and_host_memory_from_names() {
        assert_eq!(copy_direction("Memcpy HtoD (Host -> Device)"), Some("HtoD"));
        assert_eq!(copy_direction("CopyHostToDevice"), Some("HtoD"));
        assert_eq!(copy_direction("memcpy_device_to_host"), Some("DtoH"));
        assert_eq!(copy_direction("Memcpy Unknown"), None);
        assert_eq!(host_memory("Memcpy HtoD (Host -> Device)"), None);
        assert_eq!(
            host_memory("Memcpy DtoH (Device -> Pageable)"),
            Some("pageable")
        );
        assert_eq!(
            host_memory("Memcpy HtoD (Managed -> Device)"),
            Some("managed")
        );
        assert_eq!(host_memory("Memcpy HtoD"), None);
    }

    #[test]
    fn window_keeps_kernels_starting_inside() {
        let mut b = TraceBuilder::new();
        kernel(&mut b, "k", 5.0, 10.0, 1.0, 1.0); // starts before
        kernel(&mut b, "k", 10.0, 100.0, 1.0, 1.0); // starts inside, ends after

        // starts at the end: out (on another stream, as the one before still runs)
        let corr = b.runtime("cudaLaunchKernel", 0, 15.0, 1.0);
        b.gpu(GpuKind::Kernel, "k", 0, 8, 20.0, 1.0, corr);
        let t = b.build();
        let r = &kernel_table(&t, Interval::new(10_000, 20_000))[0];
        assert_eq!((r.calls, r.total), (1, 100_000));
    }
}
