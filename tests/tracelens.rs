//! `gpu_timeline` against AMD TraceLens's reference CSVs (`tracelens/*gpu_timeline.csv` in the
//! corpus), the pitfall checks and the comm-bound `resnet_act_checkpoint` trace
//! (`expected-values.md` §3).
//!
//! Every CSV beside a trace is discovered by listing the folder, so a new oracle file is
//! picked up (or makes the test fail when its trace cannot be found).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use stallscope::analysis::timeline::{gpu_timeline, gpu_timeline_with, GpuTimeline};
use stallscope::model::{GpuKind, Ns, Trace};

/// Bit-exact target for the f64 replay (see [`replay_tracelens_f64`]), ms.
const EXACT_MS: f64 = 1e-9;

/// The number of reference CSVs without recompute split in the corpus.
const EXPECTED_CASES: usize = 19;

fn ms(ns: Ns) -> f64 {
    ns as f64 / 1e6
}

/// Replays TraceLens's arithmetic on our event set: TraceLens reads `ts`/`dur` as f64 µs and
/// adds them (`t_end = ts + dur`); at ~1e12 µs an f64 step is 1/4096 µs. Every such value is
/// a multiple of one power of two, and all later steps (union, subtraction, sums of
/// differences) are exact in f64 on such values, so mapping each device event to that grid
/// and running our own integer [`gpu_timeline`] gives TraceLens's figures exactly. Returns the
/// grid step in µs, or `None` when the values do not fit one grid.
fn replay_tracelens_f64(trace: &mut Trace) -> Option<f64> {
    let exponent = |v: f64| ((v.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    let mut values = Vec::new();
    for g in trace.gpu.iter().filter(|g| g.is_activity()) {
        if g.start.unsigned_abs() >= 1 << 53 || g.dur >= 1 << 53 {
            return None;
        }
        // both conversions are correctly rounded, like Python's float(text)
        let ts = g.start as f64 / 1000.0;
        let end = ts + g.dur as f64 / 1000.0;
        values.push((ts, end));
    }
    let k = values
        .iter()
        .flat_map(|&(a, b)| [a, b])
        .filter(|v| *v > 0.0)
        .map(|v| 52 - exponent(v))
        .max()?;
    let scale = 2f64.powi(k);
    let mut grid = Vec::with_capacity(values.len());
    for (ts, end) in values {
        let (a, b) = (ts * scale, end * scale);
        if a < 0.0 || a.fract() != 0.0 || b.fract() != 0.0 || b >= 2f64.powi(53) {
            return None;
        }
        grid.push((a as i64, b as i64));
    }
    for (g, (a, b)) in trace.gpu.iter_mut().filter(|g| g.is_activity()).zip(grid) {
        g.start = a;
        g.dur = b - a;
    }
    Some(1.0 / scale)
}

/// A timeline computed on the replay grid, converted to ms as TraceLens does (µs / 1e3).
fn grid_ms(units: Ns, step_us: f64) -> f64 {
    units as f64 * step_us / 1e3
}

/// `type -> time ms` rows of a TraceLens `gpu_timeline.csv` (first block only when the file
/// has an `is_recompute` column: rows with `False`).
fn read_csv(path: &Path) -> BTreeMap<String, f64> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(
        &header[..3],
        &["type", "time ms", "percent"],
        "{}",
        path.display()
    );
    let recompute_col = header.iter().position(|h| *h == "is_recompute");
    let mut out = BTreeMap::new();
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split(',').collect();
        if let Some(c) = recompute_col {
            if cols[c] != "False" {
                continue;
            }
        }
        let v: f64 = cols[1]
            .parse()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            out.insert(cols[0].to_string(), v).is_none(),
            "duplicate row {line}"
        );
    }
    out
}

/// The trace a reference CSV describes.
///
/// * `<stem>_perf_report_csvs__gpu_timeline.csv` → `<stem>.json[.gz]`;
/// * `tests__traces__inference__<case>__perf_csvs__gpu_timeline.csv` → the one trace named
///   `tests__traces__inference__<case>__*` that is not a `capture_traces` file.
fn trace_for_csv(dir: &Path, csv: &str) -> Result<PathBuf, String> {
    if let Some(stem) = csv.strip_suffix("_perf_report_csvs__gpu_timeline.csv") {
        for ext in [".json.gz", ".json"] {
            let p = dir.join(format!("{stem}{ext}"));
            if p.exists() {
                return Ok(p);
            }
        }
        return Err(format!("{csv}: no {stem}.json[.gz]"));
    }
    if let Some(prefix) = csv.strip_suffix("_perf_csvs__gpu_timeline.csv") {
        let prefix = format!("{prefix}_");
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| {
                n.starts_with(&prefix)
                    && (n.ends_with(".json.gz") || n.ends_with(".json"))
                    && !n.contains("capture_traces")
            })
            .map(|n| dir.join(n))
            .collect();
        found.sort();
        return match found.len() {
            1 => Ok(found.pop().unwrap()),
            n => Err(format!("{csv}: {n} candidate traces {found:?}")),
        };
    }
    Err(format!("{csv}: unknown CSV naming"))
}

/// (trace, csv) pairs of every reference CSV without recompute split.
fn cases(dir: &Path) -> Vec<(PathBuf, PathBuf)> {
    let mut csvs: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with("gpu_timeline.csv") && !n.contains("_recompute_"))
        .collect();
    csvs.sort();
    csvs.iter()
        .map(|c| {
            (
                trace_for_csv(dir, c).unwrap_or_else(|e| panic!("{e}")),
                dir.join(c),
            )
        })
        .collect()
}

fn single_device(trace: &Trace, tl: Vec<GpuTimeline>) -> GpuTimeline {
    assert_eq!(
        tl.len(),
        1,
        "{}: expected one device, got {tl:?}",
        trace.source.path
    );
    tl.into_iter().next().unwrap()
}

fn rows(t: &GpuTimeline) -> [(&'static str, Ns); 8] {
    [
        ("computation_time", t.computation),
        ("exposed_comm_time", t.exposed_comm),
        ("exposed_memcpy_time", t.exposed_memcpy),
        ("busy_time", t.busy),
        ("idle_time", t.idle),
        ("total_time", t.total),
        ("total_comm_time", t.total_comm),
        ("total_memcpy_time", t.total_memcpy),
    ]
}

fn check_invariants(t: &GpuTimeline) {
    assert_eq!(
        t.computation + t.exposed_comm + t.exposed_memcpy + t.idle,
        t.total,
        "{t:?}"
    );
    assert_eq!(t.busy + t.idle, t.total, "{t:?}");
    assert!(t.idle >= 0 && t.exposed_comm <= t.total_comm && t.exposed_memcpy <= t.total_memcpy);
}

struct Agreement {
    /// Max |ours − TraceLens| over the 8 rows, integer-ns result, ms.
    ns_diff: f64,
    /// Max |replay − TraceLens|, ms.
    replay_diff: f64,
    /// Bound on TraceLens's own f64 rounding for this file, ms.
    rounding_bound: f64,
}

/// Compares one trace's timeline with a TraceLens row set; pushes failures.
fn compare(
    trace_path: &Path,
    expected: &BTreeMap<String, f64>,
    failures: &mut Vec<String>,
) -> Agreement {
    let file = trace_path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let mut trace = common::load(trace_path);
    let t = single_device(&trace, gpu_timeline(&trace, None));
    check_invariants(&t);
    let step_us = replay_tracelens_f64(&mut trace)
        .unwrap_or_else(|| panic!("{file}: timestamps do not fit one f64 grid"));
    let r = single_device(&trace, gpu_timeline(&trace, None));
    check_invariants(&r);
    assert_eq!(
        r.events, t.events,
        "{file}: the replay must count the same events"
    );
    // Each counted event moves its two endpoints by at most one grid step in TraceLens.
    let rounding_bound = (2 * t.events + 2) as f64 * step_us / 1e3;
    let mut a = Agreement {
        ns_diff: 0.0,
        replay_diff: 0.0,
        rounding_bound,
    };
    for ((row, ns), (_, units)) in rows(&t).into_iter().zip(rows(&r)) {
        let want = *expected
            .get(row)
            .unwrap_or_else(|| panic!("{file}: no row {row}"));
        let d_ns = (ms(ns) - want).abs();
        let d_replay = (grid_ms(units, step_us) - want).abs();
        a.ns_diff = a.ns_diff.max(d_ns);
        a.replay_diff = a.replay_diff.max(d_replay);
        if d_replay > EXACT_MS {
            failures.push(format!(
                "{file}: {row}: f64 replay {:.12} ms vs TraceLens {want:.12} ms",
                grid_ms(units, step_us)
            ));
        }
        if d_ns > rounding_bound || d_ns > 0.01 * ms(t.total) {
            failures.push(format!(
                "{file}: {row}: {:.9} ms vs TraceLens {want:.9} ms (diff {d_ns:.3e} > rounding \
                 bound {rounding_bound:.3e})",
                ms(ns)
            ));
        }
    }
    a
}

#[test]
fn gpu_timeline_matches_every_tracelens_csv() {
    let Some(dir) = common::corpus_file("tracelens") else {
        return;
    };
    let cases = cases(&dir);
    assert_eq!(
        cases.len(),
        EXPECTED_CASES,
        "reference CSVs found: {cases:#?}"
    );
    let mut failures = Vec::new();
    let (mut worst_ns, mut worst_replay) = (0.0f64, 0.0f64);
    for (trace_path, csv_path) in &cases {
        let a = compare(trace_path, &read_csv(csv_path), &mut failures);
        worst_ns = worst_ns.max(a.ns_diff);
        worst_replay = worst_replay.max(a.replay_diff);
        eprintln!(
            "{:<88} ns {:.2e} ms (bound {:.1e}), f64 replay {:.1e} ms",
            trace_path.file_name().unwrap().to_string_lossy(),
            a.ns_diff,
            a.rounding_bound,
            a.replay_diff
        );
    }
    eprintln!(
        "{} files: worst |diff| {worst_ns:.3e} ms (integer ns), {worst_replay:.3e} ms (f64 replay)",
        cases.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Linked-only and all-events timelines on the f64 replay grid, and the grid step (µs).
fn replayed(path: &Path) -> (GpuTimeline, GpuTimeline, f64) {
    let mut trace = common::load(path);
    let step = replay_tracelens_f64(&mut trace).unwrap();
    let linked = single_device(&trace, gpu_timeline_with(&trace, None, false));
    let all = single_device(&trace, gpu_timeline_with(&trace, None, true));
    check_invariants(&linked);
    check_invariants(&all);
    (linked, all, step)
}

/// Including unlinked events changes the Qwen H100 figures: the linkage rule matters.
#[test]
fn pitfall_unlinked_events_change_qwen_h100() {
    let Some(p) = common::corpus_file(
        "tracelens/tests__traces__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    ) else {
        return;
    };
    let (linked, all, step) = replayed(&p);
    let near = |units: Ns, want: f64| (grid_ms(units, step) - want).abs() < 1e-6;
    assert!(near(linked.computation, 31.903115), "{linked:?}");
    assert!(near(all.computation, 45.644943), "{all:?}");
    assert!(near(all.total, 49.652832), "{all:?}");
    // 509 of the 1707 device events have no launch link
    assert_eq!(
        (linked.events, linked.unlinked, all.events),
        (1198, 509, 1707)
    );
}

/// The 5 AMD `gpu_memset` events have flow ends but no flow start: TraceLens leaves them out;
/// counted, they add 26.636 µs of computation.
#[test]
fn pitfall_amd_memsets_without_flows() {
    let Some(p) = common::corpus_file(
        "tracelens/tests__traces__perf_model__normalization__normalization_layer_test.json.gz",
    ) else {
        return;
    };
    let trace = common::load(&p);
    let unlinked_memsets = trace
        .gpu
        .iter()
        .filter(|g| g.kind == GpuKind::Memset && !g.flow_linked)
        .count();
    assert_eq!(unlinked_memsets, 5);
    let (linked, all, step) = replayed(&p);
    let near = |units: Ns, want: f64| (grid_ms(units, step) - want).abs() < 1e-6;
    assert!(near(linked.computation, 0.991991), "{linked:?}");
    assert!(near(all.computation, 1.018627), "{all:?}");
}

/// Comm-bound MI300 trace. The reference was made with `--detect_recompute`; without the
/// split, computation is the union of both rows' computation (19.234132 ms) and the totals are
/// those of the non-recompute rows (the recompute rows have no comm or memcpy).
#[test]
fn resnet_act_checkpoint_union_values() {
    let Some(p) =
        common::corpus_file("tracelens/tests__traces__mi300__resnet_act_checkpoint.json.gz")
    else {
        return;
    };
    let csv = p.with_file_name(
        "tests__traces__mi300__resnet_act_checkpoint_recompute_perf_report_csvs__gpu_timeline.csv",
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let recompute_computation: f64 = text
        .lines()
        .find(|l| l.starts_with("computation_time,") && l.ends_with(",True"))
        .and_then(|l| l.split(',').nth(1))
        .and_then(|v| v.parse().ok())
        .expect("recompute computation row");
    let non_recompute = read_csv(&csv);
    let union_computation = non_recompute["computation_time"] + recompute_computation;
    assert!((union_computation - 19.234132).abs() < 1e-6);

    let mut trace = common::load(&p);
    // Integer ns first: the same within rounding; comm-bound (exposed comm > half the total).
    let t = single_device(&trace, gpu_timeline(&trace, None));
    check_invariants(&t);
    assert!(t.exposed_comm * 2 > t.total, "{t:?}");
    // All GPU events (linked or not) span 86.6 ms: 968 of them precede the first linked one.
    let all = single_device(&trace, gpu_timeline_with(&trace, None, true));
    assert!((ms(all.total) - 86.6).abs() < 0.05, "{all:?}");
    let before = trace
        .gpu
        .iter()
        .filter(|g| g.is_activity() && g.start < t.span.start)
        .count();

    let step = replay_tracelens_f64(&mut trace).unwrap();
    let r = single_device(&trace, gpu_timeline(&trace, None));
    let exact = |units: Ns, want: f64| (grid_ms(units, step) - want).abs() <= EXACT_MS;
    assert!(exact(r.computation, union_computation), "{r:?}");
    assert!(exact(r.total, non_recompute["total_time"]), "{r:?}");
    assert!(
        exact(r.total_comm, non_recompute["total_comm_time"]),
        "{r:?}"
    );
    assert!(
        exact(r.total_memcpy, non_recompute["total_memcpy_time"]),
        "{r:?}"
    );
    // More computation can only hide more communication and memcpy.
    assert!(
        grid_ms(r.exposed_comm, step) < non_recompute["exposed_comm_time"],
        "{r:?}"
    );
    assert!(
        grid_ms(r.exposed_memcpy, step) <= non_recompute["exposed_memcpy_time"],
        "{r:?}"
    );
    let bound = (2 * t.events + 2) as f64 * step / 1e3;
    assert!(
        (ms(t.computation) - union_computation).abs() <= bound,
        "{t:?}"
    );
    assert!(
        (ms(t.total) - non_recompute["total_time"]).abs() <= bound,
        "{t:?}"
    );
    assert_eq!(before, 968);
}

/// Splits one CSV record with RFC 4180 quoting (kernel names contain commas).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// TraceLens's `kernel_summary.csv` (rows per parent op category, cpu_op, kernel name and
/// stream; all kernels, linked or not) summed per kernel name equals our kernel table over
/// the whole trace: calls, total, min, max and share of kernel time.
#[test]
fn kernel_summary_matches_kernel_table() {
    use stallscope::analysis::kernels::kernel_table;
    use stallscope::model::Interval;
    for dev in ["h100", "mi300"] {
        let stem = format!("tracelens/tests__traces__{dev}__Qwen_Qwen1.5-0.5B-Chat__1016005");
        let (Some(trace_path), Some(csv_path)) = (
            common::corpus_file(&format!("{stem}.json.gz")),
            common::corpus_file(&format!("{stem}_perf_report_csvs__kernel_summary.csv")),
        ) else {
            return;
        };
        let text = std::fs::read_to_string(&csv_path).unwrap();
        let mut lines = text.lines();
        let header = csv_fields(lines.next().unwrap());
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        let (c_name, c_sum, c_count) = (
            col("Kernel name"),
            col("Kernel duration (µs)_sum"),
            col("Kernel duration (µs)_count"),
        );
        let (c_min, c_max) = (
            col("Kernel duration (µs)_min"),
            col("Kernel duration (µs)_max"),
        );
        let c_pct = col("Percent of kernels time (%)");
        // name -> (sum µs, count, min µs, max µs, percent)
        let mut want: BTreeMap<String, (f64, u64, f64, f64, f64)> = BTreeMap::new();
        for line in lines.filter(|l| !l.is_empty()) {
            let f = csv_fields(line);
            let num = |i: usize| f[i].parse::<f64>().unwrap();
            let e = want
                .entry(f[c_name].clone())
                .or_insert((0.0, 0, f64::MAX, f64::MIN, 0.0));
            e.0 += num(c_sum);
            e.1 += num(c_count) as u64;
            e.2 = e.2.min(num(c_min));
            e.3 = e.3.max(num(c_max));
            e.4 += num(c_pct);
        }
        let trace = common::load(&trace_path);
        let rows = kernel_table(&trace, Interval::new(Ns::MIN, Ns::MAX));
        assert_eq!(rows.len(), want.len(), "{dev}: kernel names");
        let mut worst = 0.0f64;
        for r in &rows {
            let (sum, count, min, max, pct) = want
                .get(&r.name)
                .unwrap_or_else(|| panic!("{dev}: {} not in the summary", r.name));
            let us = |ns: Ns| ns as f64 / 1e3;
            assert_eq!(r.calls, *count, "{dev}: {}", r.name);
            let d = (us(r.total) - sum).abs();
            worst = worst.max(d);
            assert!(
                d < 1e-6,
                "{dev}: {} total {} µs vs {sum}",
                r.name,
                us(r.total)
            );
            assert!((us(r.min) - min).abs() < 1e-9 && (us(r.max) - max).abs() < 1e-9);
            assert!(
                (r.share * 100.0 - pct).abs() < 1e-9,
                "{dev}: {} share",
                r.name
            );
        }
        eprintln!(
            "{dev}: {} kernel names match the TraceLens kernel summary (worst total {worst:.1e} µs)",
            rows.len()
        );
    }
}

/// Copies and fills as rows of the kernel table on a ROCm Kineto capture (MI300,
/// resnet_act_checkpoint), checked in Python on the raw JSON: 550 `gpu_memcpy` events
/// `Memcpy DtoD (Device -> Device)` of 2,538,596 ns, 366 of them with `args.bytes` (70,195,152
/// bytes, 1,633,426 ns): 191,790.03 bytes per call and 42.97 GB/s (per call, bytes ÷ duration
/// agrees with Kineto's own `memory bandwidth (GB/s)` to 0.13 %); 108 `Memset (Device)` of
/// 435,650 ns without bytes. The kernel table's kernel rows are not touched (the TraceLens
/// kernel summary above).
#[test]
fn copy_rows_of_a_rocm_capture() {
    use stallscope::analysis::kernels::copy_table;
    use stallscope::model::Interval;
    let Some(p) =
        common::corpus_file("tracelens/tests__traces__mi300__resnet_act_checkpoint.json.gz")
    else {
        return;
    };
    let trace = common::load(&p);
    let rows = copy_table(&trace, Interval::new(Ns::MIN, Ns::MAX));
    assert_eq!(rows.len(), 2);
    let (c, f) = (&rows[0], &rows[1]);
    assert_eq!(c.name, "Memcpy DtoD (Device -> Device)");
    assert_eq!((c.calls, c.total), (550, 2_538_596));
    let s = c.copy.as_ref().unwrap();
    assert_eq!(
        (s.direction, s.host_memory, s.bytes),
        (Some("DtoD"), None, 70_195_152)
    );
    assert!((s.bytes_per_call.unwrap() - 70_195_152.0 / 366.0).abs() < 1e-9);
    assert!((s.bandwidth_gbps.unwrap() - 70_195_152.0 / 1_633_426.0).abs() < 1e-12);
    assert_eq!(
        (f.name.as_str(), f.calls, f.total),
        ("Memset (Device)", 108, 435_650)
    );
    let s = f.copy.as_ref().unwrap();
    assert_eq!((s.bytes_per_call, s.bandwidth_gbps), (None, None));
    assert!((c.share + f.share - 1.0).abs() < 1e-12);
}
