//! Nsight Compute CSV (`ncu --csv`): per-kernel metrics, no timeline.
//!
//! Both layouts are read, keyed on column and metric **names**, never positions:
//!
//! * `--page details` (long): one row per (launch, section, metric) with `Section Name`,
//!   `Metric Name`, `Metric Unit`, `Metric Value`, plus rule rows (`Rule Name`, `Rule Type`,
//!   `Rule Description`, `Estimated Speedup[ Type]`). Labels (`Duration`,
//!   `Compute (SM) Throughput`) are mapped to metric names (`gpu__time_duration.sum`, …).
//!   Older files (`Kernel Time` column, `--metrics`-only runs) are the same shape.
//! * `--page raw` (wide): one column per metric, the second row holds the units.
//!
//! Preamble lines before the header (`==PROF== Connected …`, `==WARNING== …`) are skipped;
//! numbers with thousands separators (`"4,194,688"`) are read; `n/a`, `nan`, `-nan` and empty
//! cells are "no data". Values are normalised to base units whatever `--print-units` said:
//! times to ns, sizes to bytes, rates to per second (`msecond` → ×1e6 ns, `Kbyte` → ×1000
//! bytes, `cycle/nsecond` → ×1e9 cycle/second). Nsight Compute 2025.x/2026.x (compute
//! capability 10.x and 12.x in the tests) writes short units (`ns`, `hz`, `Ghz`, `Gbyte/s`)
//! and ends metric rows after `Metric Value` with a trailing comma (fewer fields than the
//! header); both are read the same.
//!
//! Each launch gets a [`Bound`] from NVIDIA's `SOLBottleneck` rule (ncu 2024.1,
//! `../shared/reference/ncu-csv.md` §6): with SM% = `sm__throughput…elapsed` and Mem% =
//! `gpu__compute_memory_throughput…elapsed`,
//! * either ≥ 80 → "High Throughput": `compute` when SM% ≥ Mem%, else `memory`;
//! * both < 60 → `latency` ("Small Grid" when waves per SM < 1, else "Latency Issue");
//! * |SM% − Mem%| ≥ 10 → `compute` ("High Compute Throughput") or `memory`
//!   ("High Memory Throughput");
//! * otherwise `balanced` ("Balanced Throughput");
//! * no SM% or Mem% (failed launch, `--metrics` without them) → no bound ("no data").

use std::collections::BTreeMap;

use serde::Serialize;

use super::LoadError;

/// Which layout a CSV had.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// `--page details`: one row per metric.
    Details,
    /// `--page raw`: one column per metric, a units row.
    Raw,
}

/// What limits a kernel, by the SOL rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// SM throughput dominates.
    Compute,
    /// Memory throughput dominates.
    Memory,
    /// Both throughputs low: latency (or a grid too small to fill the GPU).
    Latency,
    /// Both moderate and within 10 points of each other.
    Balanced,
}

impl Bound {
    /// Lower-case label.
    pub fn as_str(&self) -> &'static str {
        match self {
            Bound::Compute => "compute",
            Bound::Memory => "memory",
            Bound::Latency => "latency",
            Bound::Balanced => "balanced",
        }
    }
}

/// The SOL rule's bound and finding name for SM% and Mem% (percent of peak).
pub fn classify(
    sm: Option<f64>,
    mem: Option<f64>,
    waves: Option<f64>,
) -> (Option<Bound>, Option<&'static str>) {
    const NO_BOUND: f64 = 80.0;
    const LATENCY: f64 = 60.0;
    const BALANCED: f64 = 10.0;
    let (Some(sm), Some(mem)) = (sm, mem) else {
        return (None, None);
    };
    if sm >= NO_BOUND || mem >= NO_BOUND {
        let b = if sm >= mem {
            Bound::Compute
        } else {
            Bound::Memory
        };
        return (Some(b), Some("High Throughput"));
    }
    if sm < LATENCY && mem < LATENCY {
        let rule = if waves.is_some_and(|w| w < 1.0) {
            "Small Grid"
        } else {
            "Latency Issue"
        };
        return (Some(Bound::Latency), Some(rule));
    }
    if (sm - mem).abs() >= BALANCED {
        if sm > mem {
            (Some(Bound::Compute), Some("High Compute Throughput"))
        } else {
            (Some(Bound::Memory), Some("High Memory Throughput"))
        }
    } else {
        (Some(Bound::Balanced), Some("Balanced Throughput"))
    }
}

/// One rule result (`Rule Name`, `Rule Type` INF/WRN/OPT/ERR, description, speedup).
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct NcuRule {
    /// Section identifier (`SpeedOfLight`, `Occupancy`, ...).
    pub section: String,
    /// Rule name (`SOLBottleneck`, ...).
    pub name: String,
    /// `INF`, `WRN`, `OPT` or `ERR`.
    pub kind: String,
    /// Rule message as ncu wrote it (first line only for ERR tracebacks).
    pub message: String,
    /// Estimated speedup, % (`Estimated Speedup`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speedup_pct: Option<f64>,
    /// `local` or `global`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speedup_type: Option<String>,
}

/// A warp-stall reason and its weight.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct WarpStall {
    /// Reason (`long_scoreboard`, `barrier`, ...).
    pub reason: String,
    /// Cycles stalled per issued instruction (`smsp__average_warps_issue_stalled_*`), or the
    /// share of PC samples (`smsp__pcsamp_warps_issue_stalled_*`, 0..1) when only those exist.
    pub value: f64,
}

/// One profiled kernel launch.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct NcuKernel {
    /// `ID` (launch index in the report).
    pub id: u64,
    /// `Kernel Name` (demangled as ncu printed it).
    pub name: String,
    /// `Process Name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    /// `Device`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<i64>,
    /// `CC` (compute capability).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_capability: Option<String>,
    /// `Stream`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<i64>,
    /// `Block Size` (`(32, 1, 1)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<[u32; 3]>,
    /// `Grid Size`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grid: Option<[u32; 3]>,
    /// `gpu__time_duration.sum`, ns.
    pub duration_ns: Option<i64>,
    /// `sm__throughput.avg.pct_of_peak_sustained_elapsed`.
    pub sm_pct: Option<f64>,
    /// `gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed`.
    pub memory_pct: Option<f64>,
    /// `gpu__dram_throughput…` (or `dram__throughput…`).
    pub dram_pct: Option<f64>,
    /// `l1tex__throughput.avg.pct_of_peak_sustained_active`.
    pub l1_pct: Option<f64>,
    /// `lts__throughput.avg.pct_of_peak_sustained_elapsed`.
    pub l2_pct: Option<f64>,
    /// `sm__maximum_warps_per_active_cycle_pct`.
    pub theoretical_occupancy_pct: Option<f64>,
    /// `sm__warps_active.avg.pct_of_peak_sustained_active`.
    pub achieved_occupancy_pct: Option<f64>,
    /// The `launch__occupancy_limit_*` with the fewest blocks (`registers`, `shared_mem`,
    /// `warps`, `blocks`), when theoretical occupancy is below 100 %.
    pub occupancy_limiter: Option<String>,
    /// `launch__waves_per_multiprocessor`.
    pub waves_per_sm: Option<f64>,
    /// `launch__registers_per_thread`.
    pub registers_per_thread: Option<f64>,
    /// `lts__t_sector_hit_rate.pct`.
    pub l2_hit_rate_pct: Option<f64>,
    /// Local-memory (spill) instructions: `sass__inst_executed_local_loads` + `_stores`, or
    /// `l1tex__t_sectors_pipe_lsu_mem_local_op_{ld,st}.sum` sectors.
    pub local_memory_ops: Option<f64>,
    /// Shared-memory bank conflicts (`l1tex__data_bank_conflicts_pipe_lsu_mem_shared*`).
    pub bank_conflicts: Option<f64>,
    /// Bank conflicts ÷ shared-memory wavefronts, % (ncu's rule fires at ≥ 10 %).
    pub bank_conflict_pct: Option<f64>,
    /// Top warp-stall reasons, largest first (at most 3; `selected` excluded).
    pub warp_stalls: Vec<WarpStall>,
    /// SOL classification (absent: no data).
    pub bound: Option<Bound>,
    /// The SOL rule's finding name (`High Throughput`, `Latency Issue`, ...).
    #[serde(deserialize_with = "crate::text::static_words::option")]
    pub sol: Option<crate::text::static_words::Word>,
    /// ncu's rule results for this launch.
    pub rules: Vec<NcuRule>,
    /// Every numeric metric, in base units, by metric name (labels of the details page are
    /// mapped to metric names where known).
    #[serde(skip)]
    pub metrics: BTreeMap<String, f64>,
}

/// A whole Nsight Compute CSV.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct NcuReport {
    /// The path as given.
    pub path: String,
    /// CSV layout.
    pub layout: Layout,
    /// Launches in file order.
    pub kernels: Vec<NcuKernel>,
    /// Values that cannot be right (a percentage above 100), left out of the metrics.
    #[serde(skip)]
    pub warnings: Vec<crate::model::Warning>,
}

/// Details-page labels → metric names (ncu-csv.md §2).
const LABELS: [(&str, &str); 24] = [
    (
        "Compute (SM) Throughput",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    ),
    (
        "Memory Throughput",
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    ),
    (
        "DRAM Throughput",
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    ),
    (
        "L1/TEX Cache Throughput",
        "l1tex__throughput.avg.pct_of_peak_sustained_active",
    ),
    (
        "L2 Cache Throughput",
        "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    ),
    ("Duration", "gpu__time_duration.sum"),
    ("Elapsed Cycles", "gpc__cycles_elapsed.max"),
    ("SM Active Cycles", "sm__cycles_active.avg"),
    ("SM Frequency", "gpc__cycles_elapsed.avg.per_second"),
    ("DRAM Frequency", "dram__cycles_elapsed.avg.per_second"),
    ("Registers Per Thread", "launch__registers_per_thread"),
    ("Grid Size", "launch__grid_size"),
    ("Block Size", "launch__block_size"),
    ("Threads", "launch__thread_count"),
    (
        "Static Shared Memory Per Block",
        "launch__shared_mem_per_block_static",
    ),
    (
        "Dynamic Shared Memory Per Block",
        "launch__shared_mem_per_block_dynamic",
    ),
    (
        "Driver Shared Memory Per Block",
        "launch__shared_mem_per_block_driver",
    ),
    ("Waves Per SM", "launch__waves_per_multiprocessor"),
    ("Block Limit SM", "launch__occupancy_limit_blocks"),
    ("Block Limit Registers", "launch__occupancy_limit_registers"),
    (
        "Block Limit Shared Mem",
        "launch__occupancy_limit_shared_mem",
    ),
    ("Block Limit Warps", "launch__occupancy_limit_warps"),
    (
        "Theoretical Occupancy",
        "sm__maximum_warps_per_active_cycle_pct",
    ),
    (
        "Achieved Occupancy",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
    ),
];

/// The metric a details-page row holds, from its label **and unit**: a label maps to a
/// percentage metric only when its unit is `%` (`Memory Throughput` is a percentage in
/// SpeedOfLight and a rate in bytes/second in MemoryWorkloadAnalysis); another unit keeps the
/// row apart as `label [unit]`.
fn metric_name(label: &str, unit: &str) -> String {
    match LABELS.iter().find(|(l, _)| *l == label) {
        Some((_, m)) if !m.contains("pct") || unit.is_empty() || unit == "%" => m.to_string(),
        Some(_) => format!("{label} [{unit}]"),
        None => label.to_string(),
    }
}

/// True for a metric that is a percentage (by its unit, else by its name).
fn is_percent(metric: &str, unit: &str) -> bool {
    unit == "%" || (unit.is_empty() && (metric.contains(".pct") || metric.ends_with("_pct")))
}

/// Largest percentage taken as data; above it a value is a reading error (rounding aside).
const MAX_PERCENT: f64 = 100.0;

/// Parses a metric value: `n/a`, `nan`, `-nan`, empty → `None`; thousands separators removed
/// (`4,194,688`); a lone decimal comma (`1,5`) read as a point.
pub fn parse_number(s: &str) -> Option<f64> {
    let t = s.trim();
    if t.is_empty() {
        return None;
    }
    let cleaned: String = if t.contains(',') {
        let (int, frac) = match t.split_once('.') {
            Some((i, f)) => (i, Some(f)),
            None => (t, None),
        };
        let digits = int.trim_start_matches(['-', '+']);
        let groups: Vec<&str> = digits.split(',').collect();
        let thousands = groups.len() > 1
            && !groups[0].is_empty()
            && groups[0].len() <= 3
            && groups[1..].iter().all(|g| g.len() == 3)
            && groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_digit()));
        if thousands {
            let mut c = int.replace(',', "");
            if let Some(f) = frac {
                c.push('.');
                c.push_str(f);
            }
            c
        } else if frac.is_none() && groups.len() == 2 {
            t.replace(',', ".")
        } else {
            return None;
        }
    } else {
        t.to_string()
    };
    let v: f64 = cleaned.parse().ok()?;
    v.is_finite().then_some(v)
}

fn prefix_scale(word: &str) -> Option<(f64, &str)> {
    const BASES: [&str; 14] = [
        "byte",
        "cycle",
        "inst",
        "warp",
        "thread",
        "block",
        "sector",
        "request",
        "wavefront",
        "register",
        "pass",
        "sample",
        "instruction",
        "transaction",
    ];
    if BASES.contains(&word) {
        return Some((1.0, word));
    }
    for (p, f) in [
        ("Ki", 1024.0),
        ("Mi", 1048576.0),
        ("Gi", 1073741824.0),
        ("Ti", 1099511627776.0),
        ("K", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
    ] {
        if let Some(rest) = word.strip_prefix(p) {
            if BASES.contains(&rest) {
                return Some((f, rest));
            }
        }
    }
    None
}

fn time_scale(word: &str) -> Option<f64> {
    match word {
        "nsecond" | "ns" => Some(1.0),
        "usecond" | "us" => Some(1e3),
        "msecond" | "ms" => Some(1e6),
        "second" | "s" => Some(1e9),
        _ => None,
    }
}

/// Frequencies as ncu 2025 and later print them (`hz`, auto-scaled `Khz`/`Mhz`/`Ghz`; the
/// same as `cycle/second`).
fn hertz_scale(word: &str) -> Option<f64> {
    match word.to_ascii_lowercase().as_str() {
        "hz" => Some(1.0),
        "khz" => Some(1e3),
        "mhz" => Some(1e6),
        "ghz" => Some(1e9),
        _ => None,
    }
}

/// Normalises a value to base units: times → ns, sizes → bytes, `x/<time>` and frequencies
/// (`hz`, `Ghz`) → per second.
/// Returns the factor and the base unit; unknown units keep factor 1.
pub fn unit_factor(unit: &str) -> (f64, String) {
    let u = unit.trim();
    if let Some(f) = hertz_scale(u) {
        return (f, "cycle/second".to_string());
    }
    let (num, den) = match u.split_once('/') {
        Some((n, d)) => (n, Some(d)),
        None => (u, None),
    };
    let (nf, nu) = if let Some(f) = time_scale(num) {
        (f, "nsecond".to_string())
    } else if let Some((f, b)) = prefix_scale(num) {
        (f, b.to_string())
    } else {
        (1.0, num.to_string())
    };
    match den {
        None => (nf, nu),
        Some(d) => match time_scale(d) {
            Some(ns) => (nf * 1e9 / ns, format!("{nu}/second")),
            None => match prefix_scale(d) {
                Some((f, b)) => (nf / f, format!("{nu}/{b}")),
                None => (nf, format!("{nu}/{d}")),
            },
        },
    }
}

fn parse_dim3(s: &str) -> Option<[u32; 3]> {
    let t = s.trim().trim_start_matches('(').trim_end_matches(')');
    let v: Vec<u32> = t
        .split(',')
        .map(|p| p.trim().parse().ok())
        .collect::<Option<_>>()?;
    (v.len() == 3).then(|| [v[0], v[1], v[2]])
}

/// Identity columns of one launch.
#[derive(Default)]
struct Launch {
    id: u64,
    name: String,
    process: Option<String>,
    device: Option<i64>,
    cc: Option<String>,
    stream: Option<i64>,
    block: Option<[u32; 3]>,
    grid: Option<[u32; 3]>,
    metrics: BTreeMap<String, f64>,
    rules: Vec<NcuRule>,
}

fn col(headers: &csv::StringRecord, name: &str) -> Option<usize> {
    headers.iter().position(|h| h.trim() == name)
}

/// The byte offset and line number of the header (the line starting with `ID`), past the
/// `==PROF==` / `==WARNING==` preamble.
fn find_header(text: &str, path: &str) -> Result<(usize, u64), LoadError> {
    let mut offset = 0usize;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if line.trim_start().starts_with("\"ID\"") || line.trim_start().starts_with("ID,") {
            return Ok((offset, i as u64 + 1));
        }
        offset += line.len();
    }
    Err(LoadError::new(
        path,
        "no Nsight Compute CSV header (a line starting with \"ID\") found".into(),
    ))
}

/// The columns of an ncu CSV, by name (`None`: absent).
struct Columns {
    id: usize,
    name: usize,
    process: Option<usize>,
    device: Option<usize>,
    cc: Option<usize>,
    stream: Option<usize>,
    block: Option<usize>,
    grid: Option<usize>,
    /// The `--page details` layout (one row per metric).
    details: bool,
    section: Option<usize>,
    metric: usize,
    unit: Option<usize>,
    value: usize,
    rule: Option<usize>,
    rule_type: Option<usize>,
    rule_desc: Option<usize>,
    speedup_type: Option<usize>,
    speedup: Option<usize>,
}

impl Columns {
    /// Finds the columns; `ID` and `Kernel Name` (and `Metric Name` and `Metric Value` in
    /// the details layout) must be there.
    fn new(headers: &csv::StringRecord, path: &str, header_line: u64) -> Result<Self, LoadError> {
        let need = |name: &str| {
            col(headers, name).ok_or_else(|| {
                LoadError::new(
                    path,
                    format!("line {header_line}: header lacks the column \"{name}\""),
                )
            })
        };
        let id = need("ID")?;
        let name = need("Kernel Name")?;
        let details =
            col(headers, "Metric Name").is_some() || col(headers, "Metric Value").is_some();
        let (section, metric, unit, value) = if details {
            (
                col(headers, "Section Name"),
                need("Metric Name")?,
                col(headers, "Metric Unit"),
                need("Metric Value")?,
            )
        } else {
            (None, 0, None, 0)
        };
        Ok(Columns {
            id,
            name,
            process: col(headers, "Process Name"),
            device: col(headers, "Device"),
            cc: col(headers, "CC"),
            stream: col(headers, "Stream"),
            block: col(headers, "Block Size"),
            grid: col(headers, "Grid Size"),
            details,
            section,
            metric,
            unit,
            value,
            rule: col(headers, "Rule Name"),
            rule_type: col(headers, "Rule Type"),
            rule_desc: col(headers, "Rule Description"),
            speedup_type: col(headers, "Estimated Speedup Type"),
            speedup: col(headers, "Estimated Speedup"),
        })
    }
}

/// A cell, trimmed (`None`: no such column, or empty).
fn field(r: &csv::StringRecord, c: Option<usize>) -> Option<String> {
    c.and_then(|c| r.get(c))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The percentages above 100 left out: the first (line, message) and how many.
#[derive(Default)]
struct Over100 {
    first: Option<(u64, String)>,
    count: u64,
}

impl Over100 {
    /// Whether the value can be kept (not a percentage above 100); counts it otherwise.
    fn keep(&mut self, line: u64, id: u64, metric: &str, unit: &str, v: f64) -> bool {
        let bad = is_percent(metric, unit) && v > MAX_PERCENT;
        if bad {
            self.count += 1;
            self.first.get_or_insert_with(|| {
                (
                    line,
                    format!("line {line}: launch {id}: {metric} = {v} % is above 100 %"),
                )
            });
        }
        !bad
    }

    /// The reading warning for them (none when there were none).
    fn warnings(self) -> Vec<crate::model::Warning> {
        let count = self.count;
        self.first
            .map(|(_, first)| crate::model::Warning {
                code: "ncu-percent-over-100",
                count,
                first_offset: None,
                message: format!(
                    "{first}: a percentage cannot exceed 100, so the value is a reading error \
                     and was left out ({count} such value(s))"
                ),
            })
            .into_iter()
            .collect()
    }
}

/// One row of the details layout into its launch: a rule result, or one metric.
fn details_row(
    cols: &Columns,
    rec: &csv::StringRecord,
    l: &mut Launch,
    line: u64,
    over: &mut Over100,
) {
    if let Some(rule) = field(rec, cols.rule) {
        let kind = field(rec, cols.rule_type).unwrap_or_default();
        let desc = field(rec, cols.rule_desc).unwrap_or_default();
        // ERR rows may hold a Python traceback: keep the first line
        let message = if kind == "ERR" {
            desc.lines().next().unwrap_or("").to_string()
        } else {
            desc
        };
        if kind == "ERR"
            && message.starts_with("Traceback")
            && l.rules.last().is_some_and(|r| r.name == rule)
        {
            return;
        }
        l.rules.push(NcuRule {
            section: field(rec, cols.section).unwrap_or_default(),
            name: rule,
            kind,
            message,
            speedup_pct: field(rec, cols.speedup).and_then(|s| parse_number(&s)),
            speedup_type: field(rec, cols.speedup_type),
        });
        return;
    }
    let Some(label) = field(rec, Some(cols.metric)) else {
        return;
    };
    let unit = field(rec, cols.unit).unwrap_or_default();
    let Some(v) = rec.get(cols.value).and_then(parse_number) else {
        return;
    };
    let name = metric_name(&label, &unit);
    if !over.keep(line, l.id, &name, &unit, v) {
        return;
    }
    let (f, _) = unit_factor(&unit);
    l.metrics.insert(name, v * f);
}

/// One row of the raw layout into its launch: every metric column (`__` in its name), in the
/// unit the units row gives.
fn raw_row(
    headers: &csv::StringRecord,
    cols: &Columns,
    units: Option<&csv::StringRecord>,
    rec: &csv::StringRecord,
    l: &mut Launch,
    line: u64,
    over: &mut Over100,
) {
    for (c, h) in headers.iter().enumerate() {
        let h = h.trim();
        if c == cols.id || !h.contains("__") {
            continue;
        }
        let Some(v) = rec.get(c).and_then(parse_number) else {
            continue;
        };
        let unit = units.and_then(|u| u.get(c)).unwrap_or("").trim();
        if !over.keep(line, l.id, h, unit, v) {
            continue;
        }
        let (f, _) = unit_factor(unit);
        l.metrics.insert(h.to_string(), v * f);
    }
}

/// Reads an ncu CSV from text. `path` names the file in errors.
pub fn parse(text: &str, path: &str) -> Result<NcuReport, LoadError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // skip ==PROF== / ==WARNING== preamble lines up to the header
    let (offset, header_line) = find_header(text, path)?;
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .from_reader(&text.as_bytes()[offset..]);
    let headers = rdr
        .headers()
        .map_err(|e| LoadError::new(path, format!("line {header_line}: {e}")))?
        .clone();
    let cols = Columns::new(&headers, path, header_line)?;
    let details = cols.details;
    let mut launches: Vec<Launch> = Vec::new();
    let mut index: BTreeMap<u64, usize> = BTreeMap::new();
    let mut records = rdr.records();
    let mut units: Option<csv::StringRecord> = None;
    let mut row_no = 0u64;
    let mut over = Over100::default();
    loop {
        let rec = match records.next() {
            None => break,
            Some(Ok(r)) => r,
            Some(Err(e)) => {
                let line = e
                    .position()
                    .map(|p| p.line() + header_line - 1)
                    .unwrap_or(header_line + row_no + 1);
                return Err(LoadError::new(path, format!("line {line}: {e}")));
            }
        };
        row_no += 1;
        let line = rec
            .position()
            .map(|p| p.line() + header_line - 1)
            .unwrap_or(0);
        let id_text = rec.get(cols.id).unwrap_or("").trim();
        if id_text.is_empty() {
            // the raw page's units row (identity cells empty)
            if !details && units.is_none() && launches.is_empty() {
                units = Some(rec);
            }
            continue;
        }
        let Some(id) = parse_number(id_text).map(|v| v as u64) else {
            return Err(LoadError::new(
                path,
                format!("line {line}: ID \"{id_text}\" is not a launch number"),
            ));
        };
        let li = *index.entry(id).or_insert_with(|| {
            launches.push(Launch {
                id,
                name: field(&rec, Some(cols.name)).unwrap_or_default(),
                process: field(&rec, cols.process),
                device: field(&rec, cols.device).and_then(|s| s.parse().ok()),
                cc: field(&rec, cols.cc),
                stream: field(&rec, cols.stream).and_then(|s| s.parse().ok()),
                block: field(&rec, cols.block).and_then(|s| parse_dim3(&s)),
                grid: field(&rec, cols.grid).and_then(|s| parse_dim3(&s)),
                ..Launch::default()
            });
            launches.len() - 1
        });
        let l = &mut launches[li];
        if details {
            details_row(&cols, &rec, l, line, &mut over);
        } else {
            raw_row(&headers, &cols, units.as_ref(), &rec, l, line, &mut over);
        }
    }
    if launches.is_empty() {
        return Err(LoadError::new(
            path,
            format!("line {header_line}: an Nsight Compute CSV header but no launch rows"),
        ));
    }
    Ok(NcuReport {
        warnings: over.warnings(),
        path: path.to_string(),
        layout: if details {
            Layout::Details
        } else {
            Layout::Raw
        },
        kernels: launches.into_iter().map(kernel_of).collect(),
    })
}

fn kernel_of(l: Launch) -> NcuKernel {
    let m = &l.metrics;
    let g = |k: &str| m.get(k).copied();
    let any = |ks: &[&str]| ks.iter().find_map(|k| g(k));
    let sum2 = |a: &str, b: &str| match (g(a), g(b)) {
        (None, None) => None,
        (x, y) => Some(x.unwrap_or(0.0) + y.unwrap_or(0.0)),
    };
    let sm = g("sm__throughput.avg.pct_of_peak_sustained_elapsed");
    let mem = g("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed");
    let waves = g("launch__waves_per_multiprocessor");
    let (bound, sol) = classify(sm, mem, waves);
    let theoretical = g("sm__maximum_warps_per_active_cycle_pct");
    let limiter = theoretical.filter(|&t| t < 100.0).and_then(|_| {
        let limits: Vec<(&str, f64)> = [
            ("registers", "launch__occupancy_limit_registers"),
            ("shared_mem", "launch__occupancy_limit_shared_mem"),
            ("warps", "launch__occupancy_limit_warps"),
            ("blocks", "launch__occupancy_limit_blocks"),
        ]
        .iter()
        .filter_map(|(n, k)| g(k).map(|v| (*n, v)))
        .collect();
        let min = limits.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
        let names: Vec<&str> = limits.iter().filter(|x| x.1 == min).map(|x| x.0).collect();
        (!names.is_empty()).then(|| names.join("+"))
    });
    let conflicts = sum2(
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    )
    .or_else(|| g("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"));
    let wavefronts = sum2(
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    )
    .or_else(|| g("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"));
    let bank_conflict_pct = match (conflicts, wavefronts) {
        (Some(c), Some(w)) if w > 0.0 => Some(c / w * 100.0),
        _ => None,
    };
    NcuKernel {
        id: l.id,
        name: l.name,
        process: l.process,
        device: l.device,
        compute_capability: l.cc,
        stream: l.stream,
        block: l.block,
        grid: l.grid,
        duration_ns: g("gpu__time_duration.sum").map(|v| v.round() as i64),
        sm_pct: sm,
        memory_pct: mem,
        dram_pct: any(&[
            "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
            "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        ]),
        l1_pct: any(&[
            "l1tex__throughput.avg.pct_of_peak_sustained_active",
            "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
        ]),
        l2_pct: g("lts__throughput.avg.pct_of_peak_sustained_elapsed"),
        theoretical_occupancy_pct: theoretical,
        achieved_occupancy_pct: g("sm__warps_active.avg.pct_of_peak_sustained_active"),
        occupancy_limiter: limiter,
        waves_per_sm: waves,
        registers_per_thread: g("launch__registers_per_thread"),
        l2_hit_rate_pct: g("lts__t_sector_hit_rate.pct"),
        local_memory_ops: sum2(
            "sass__inst_executed_local_loads",
            "sass__inst_executed_local_stores",
        )
        .or_else(|| {
            sum2(
                "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
                "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
            )
        }),
        bank_conflicts: conflicts,
        bank_conflict_pct,
        warp_stalls: warp_stalls(m),
        bound,
        sol,
        rules: l.rules,
        metrics: l.metrics,
    }
}

fn warp_stalls(m: &BTreeMap<String, f64>) -> Vec<WarpStall> {
    let mut per_issue: Vec<WarpStall> = m
        .iter()
        .filter_map(|(k, &v)| {
            let r = k
                .strip_prefix("smsp__average_warps_issue_stalled_")?
                .strip_suffix("_per_issue_active.ratio")?;
            Some(WarpStall {
                reason: r.to_string(),
                value: v,
            })
        })
        .collect();
    if per_issue.is_empty() {
        let samples: Vec<(String, f64)> = m
            .iter()
            .filter_map(|(k, &v)| {
                let r = k.strip_prefix("smsp__pcsamp_warps_issue_stalled_")?;
                (!r.ends_with("_not_issued") && !r.contains('.')).then(|| (r.to_string(), v))
            })
            .collect();
        let total: f64 = samples.iter().map(|s| s.1).sum();
        if total > 0.0 {
            per_issue = samples
                .into_iter()
                .map(|(reason, v)| WarpStall {
                    reason,
                    value: v / total,
                })
                .collect();
        }
    }
    per_issue.retain(|s| s.reason != "selected" && s.value > 0.0);
    per_issue.sort_by(|a, b| b.value.total_cmp(&a.value));
    per_issue.truncate(3);
    per_issue
}

/// Reads an ncu CSV file.
pub fn read(path: &str) -> Result<NcuReport, LoadError> {
    let bytes = std::fs::read(path).map_err(|e| LoadError::io(path, e))?;
    let text = String::from_utf8_lossy(&bytes);
    parse(&text, path)
}

/// True when the file at `path` starts like an ncu CSV (header or `==PROF==` preamble).
pub fn looks_like(path: &str) -> bool {
    use std::io::Read;
    let mut head = [0u8; 4096];
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    let n = f.read(&mut head).unwrap_or(0);
    super::sniff::sniff(&head[..n]) == super::sniff::Format::NcuCsv
}

/// Joins ncu launches to the kernels of a trace by name and order: the i-th launch of a name
/// in the CSV (in `ID` order) is the i-th kernel of that name in the trace (by start time).
/// Names are compared exactly, else by [`join_key`] (the same demangled name as ncu, Kineto
/// and Nsight Systems spell it: `(int)4` / `4`, `(anonymous namespace)` / `<unnamed>`), else
/// by the [`base_name`] of that key (ncu and the trace may differ in template arguments or
/// parameter lists). Returns, per launch, the index in
/// [`Trace::gpu`](crate::model::Trace::gpu) of its kernel, or `None`.
pub fn join(trace: &crate::model::Trace, report: &NcuReport) -> Vec<Option<u32>> {
    use std::collections::HashMap;
    let mut exact: HashMap<&str, Vec<u32>> = HashMap::new();
    let mut keyed: HashMap<String, Vec<u32>> = HashMap::new();
    let mut based: HashMap<String, Vec<u32>> = HashMap::new();
    for (i, g) in trace.gpu.iter().enumerate() {
        if g.kind == crate::model::GpuKind::Kernel {
            let n = trace.name(g.name);
            exact.entry(n).or_default().push(i as u32);
            let key = join_key(n);
            based
                .entry(base_name(&key).to_string())
                .or_default()
                .push(i as u32);
            keyed.entry(key).or_default().push(i as u32);
        }
    }
    let mut order: Vec<usize> = (0..report.kernels.len()).collect();
    order.sort_by_key(|&i| report.kernels[i].id);
    // next unused kernel per name, per tier
    let mut used: [HashMap<String, usize>; 3] = Default::default();
    let mut take = |tier: usize, name: &str, v: &Vec<u32>| {
        let u = used[tier].entry(name.to_string()).or_insert(0);
        *u += 1;
        v.get(*u - 1).copied()
    };
    let mut out = vec![None; report.kernels.len()];
    for i in order {
        let name = report.kernels[i].name.as_str();
        let key = join_key(name);
        out[i] = if let Some(v) = exact.get(name) {
            take(0, name, v)
        } else if let Some(v) = keyed.get(&key) {
            take(1, &key, v)
        } else {
            let b = base_name(&key);
            based.get(b).and_then(|v| take(2, b, v))
        };
    }
    out
}

/// A kernel name as the join compares it: leading `void ` dropped, the anonymous namespace
/// spelt one way (`(anonymous namespace)` in ncu and Kineto, `<unnamed>` in Nsight Systems),
/// and C casts of template values removed (`(int)4` → `4`, `(bool)1` → `true`), since ncu
/// and Nsight Systems write them and Kineto does not.
pub fn join_key(name: &str) -> String {
    let n = name.trim();
    let n = n.strip_prefix("void ").unwrap_or(n);
    let n = n
        .replace("(anonymous namespace)", "{anon}")
        .replace("<unnamed>", "{anon}");
    let b = n.as_bytes();
    let mut out = String::with_capacity(n.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'(' {
            if let Some(close) = n[i..].find(')').map(|c| i + c) {
                let ty = &n[i + 1..close];
                let next = b.get(close + 1).copied();
                let is_type = !ty.is_empty()
                    && ty.bytes().all(|c| c.is_ascii_lowercase() || c == b' ')
                    && ty.split(' ').all(|w| {
                        matches!(
                            w,
                            "int" | "unsigned" | "signed" | "long" | "short" | "char" | "bool"
                        )
                    });
                if is_type && next.is_some_and(|c| c.is_ascii_digit() || c == b'-') {
                    let digits_end = n[close + 1..]
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                        .map_or(n.len(), |e| close + 1 + e);
                    let value = &n[close + 1..digits_end];
                    match (ty, value) {
                        ("bool", "0") => out.push_str("false"),
                        ("bool", "1") => out.push_str("true"),
                        // integer literals may carry suffixes (`4u`, `4l`)
                        _ => out.push_str(value.trim_end_matches(['u', 'l', 'U', 'L'])),
                    }
                    i = digits_end;
                    continue;
                }
            }
        }
        let c = n[i..].chars().next().unwrap_or(' ');
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// Base name of a kernel for joining: `void ns::kern<…>(…)` → `ns::kern`.
pub fn base_name(name: &str) -> &str {
    let n = name.trim();
    let n = n.strip_prefix("void ").unwrap_or(n);
    let end = n
        .char_indices()
        .find(|&(_, c)| c == '<' || c == '(')
        .map(|(i, _)| i)
        .unwrap_or(n.len());
    n[..end].trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(parse_number("4,194,688"), Some(4194688.0));
        assert_eq!(parse_number("1,215,000,000.00"), Some(1215000000.0));
        assert_eq!(parse_number("1,5"), Some(1.5));
        assert_eq!(parse_number("n/a"), None);
        assert_eq!(parse_number("nan"), None);
        assert_eq!(parse_number("-nan"), None);
        assert_eq!(parse_number(""), None);
        assert_eq!(parse_number("87.60"), Some(87.6));
    }

    #[test]
    fn units() {
        assert_eq!(unit_factor("msecond").0, 1e6);
        assert_eq!(unit_factor("usecond"), (1e3, "nsecond".into()));
        assert_eq!(unit_factor("Kbyte").0, 1e3);
        assert_eq!(unit_factor("Kbyte/block"), (1e3, "byte/block".into()));
        assert_eq!(unit_factor("cycle/nsecond"), (1e9, "cycle/second".into()));
        assert_eq!(unit_factor("Gbyte/second"), (1e9, "byte/second".into()));
        assert_eq!(unit_factor("Ghz"), (1e9, "cycle/second".into()));
        assert_eq!(unit_factor("hz"), (1.0, "cycle/second".into()));
        assert_eq!(unit_factor("%"), (1.0, "%".into()));
        assert_eq!(unit_factor(""), (1.0, "".into()));
    }

    #[test]
    fn sol_rule() {
        assert_eq!(
            classify(Some(87.6), Some(33.6), Some(18.6)),
            (Some(Bound::Compute), Some("High Throughput"))
        );
        assert_eq!(
            classify(Some(97.72), Some(97.72), None).0,
            Some(Bound::Compute)
        );
        assert_eq!(
            classify(Some(20.0), Some(85.0), None).0,
            Some(Bound::Memory)
        );
        assert_eq!(
            classify(Some(30.0), Some(40.0), Some(0.5)),
            (Some(Bound::Latency), Some("Small Grid"))
        );
        assert_eq!(
            classify(Some(70.0), Some(40.0), None),
            (Some(Bound::Compute), Some("High Compute Throughput"))
        );
        assert_eq!(
            classify(Some(65.0), Some(70.0), None).0,
            Some(Bound::Balanced)
        );
        assert_eq!(classify(None, Some(70.0), None), (None, None));
    }

    #[test]
    fn details_and_raw_agree() {
        let details = "==PROF== Connected to process 1\n\
\"ID\",\"Kernel Name\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\",\"Rule Name\",\"Rule Type\",\"Rule Description\"\n\
\"0\",\"k(int)\",\"GPU Speed Of Light Throughput\",\"Duration\",\"usecond\",\"1,234.50\",,,\n\
\"0\",\"k(int)\",\"GPU Speed Of Light Throughput\",\"Compute (SM) Throughput\",\"%\",\"20\",,,\n\
\"0\",\"k(int)\",\"GPU Speed Of Light Throughput\",\"Memory Throughput\",\"%\",\"90\",,,\n\
\"0\",\"k(int)\",\"SpeedOfLight\",\"\",\"\",\"\",\"SOLBottleneck\",\"INF\",\"line one\nline two\"\n";
        let r = parse(details, "d.csv").unwrap();
        assert_eq!(r.layout, Layout::Details);
        let k = &r.kernels[0];
        assert_eq!(k.duration_ns, Some(1_234_500));
        assert_eq!(k.bound, Some(Bound::Memory));
        assert_eq!(k.rules.len(), 1);
        assert_eq!(k.rules[0].message, "line one\nline two");

        let raw = "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"sm__throughput.avg.pct_of_peak_sustained_elapsed\",\"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed\"\n\
\"\",\"\",\"msecond\",\"%\",\"%\"\n\
\"0\",\"k(int)\",\"1.2345\",\"20\",\"90\"\n";
        let r = parse(raw, "r.csv").unwrap();
        assert_eq!(r.layout, Layout::Raw);
        assert_eq!(r.kernels[0].duration_ns, Some(1_234_500));
        assert_eq!(r.kernels[0].bound, Some(Bound::Memory));
    }

    /// `Memory Throughput` is a percentage in SpeedOfLight and a rate in
    /// MemoryWorkloadAnalysis; read by section and unit, the details page, the raw page and a
    /// single-section export give the same bound. A percentage above 100 is a warning.
    #[test]
    fn same_label_in_two_sections_and_percentages_over_100() {
        let head = "\"ID\",\"Kernel Name\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n";
        let sol = "\"0\",\"k(int)\",\"0\",\"12.0\",\"GPU Speed Of Light Throughput\",\"Compute (SM) Throughput\",\"%\",\"60\"\n\
\"0\",\"k(int)\",\"0\",\"12.0\",\"GPU Speed Of Light Throughput\",\"Memory Throughput\",\"%\",\"30\"\n";
        let mwa = "\"0\",\"k(int)\",\"0\",\"12.0\",\"Memory Workload Analysis\",\"Memory Throughput\",\"Gbyte/second\",\"1,530.20\"\n\
\"0\",\"k(int)\",\"0\",\"12.0\",\"Memory Workload Analysis\",\"Max Bandwidth\",\"%\",\"90\"\n";
        let full = parse(&format!("{head}{sol}{mwa}"), "full.csv").unwrap();
        let single = parse(&format!("{head}{sol}"), "sol.csv").unwrap();
        let raw = parse(
            "\"ID\",\"Kernel Name\",\"sm__throughput.avg.pct_of_peak_sustained_elapsed\",\"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed\",\"dram__bytes.sum.per_second\"\n\
\"\",\"\",\"%\",\"%\",\"Gbyte/second\"\n\
\"0\",\"k(int)\",\"60\",\"30\",\"1,530.20\"\n",
            "raw.csv",
        )
        .unwrap();
        for r in [&full, &single, &raw] {
            assert_eq!(r.kernels[0].bound, Some(Bound::Compute), "{}", r.path);
            assert!(r.warnings.is_empty(), "{}", r.path);
        }
        assert_eq!(
            full.kernels[0].metrics["Memory Throughput [Gbyte/second]"],
            1_530.2e9
        );
        // 135 % of peak is a reading error: left out, with a warning naming the line
        let bad = format!("{head}{}", sol.replace("\"30\"", "\"135\""));
        let r = parse(&bad, "bad.csv").unwrap();
        assert_eq!(r.kernels[0].bound, None);
        assert_eq!(r.warnings.len(), 1);
        assert_eq!(r.warnings[0].code, "ncu-percent-over-100");
        assert!(
            r.warnings[0].message.starts_with("line 3: launch 0"),
            "{}",
            r.warnings[0].message
        );
    }

    /// Nsight Compute 2025.x on compute capability 10.x and 12.x: the details page writes
    /// `ns` and `hz` units, metric rows end after `Metric Value` with a trailing comma (fewer
    /// fields than the header), and brings new sections (`GPU and Memory Workload
    /// Distribution`, cluster and green-context launch metrics). The layout of a cuBLASLt FP8
    /// GEMM on CC 10.0 as ncu 2025 writes it (SM 23.59 %, memory 21.68 %, 1.89 waves: latency),
    /// and the same launch as `--page raw` and as a single SpeedOfLight section, get the same
    /// bound, duration and SM frequency; a CC 12.0 launch printed with `--print-units auto`
    /// (`usecond`, `Ghz`, `Gbyte/s`) reads the same as in base units.
    #[test]
    fn ncu_2025_layouts_on_cc_10_and_12() {
        let head = "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\",\"Rule Name\",\"Rule Type\",\"Rule Description\",\"Estimated Speedup Type\",\"Estimated Speedup\"\n";
        let row = |cc: &str, section: &str, label: &str, unit: &str, value: &str| {
            format!(
                "\"0\",\"9\",\"gemm\",\"127.0.0.1\",\"cutlass3x_sm100_tensorop_gemm_f8_f8_f32\",\"1\",\"7\",\"(384, 1, 1)\",\"(9, 32, 1)\",\"0\",\"{cc}\",\"{section}\",\"{label}\",\"{unit}\",\"{value}\",\n"
            )
        };
        let sol = "GPU Speed Of Light Throughput";
        let sol_rows = |cc: &str, rows: &[(&str, &str, &str)]| -> String {
            rows.iter().map(|(l, u, v)| row(cc, sol, l, u, v)).collect()
        };
        let base = [
            ("DRAM Frequency", "hz", "3995313115.40"),
            ("SM Frequency", "hz", "1239496049.13"),
            ("Elapsed Cycles", "cycle", "508757"),
            ("Memory Throughput", "%", "21.68"),
            ("DRAM Throughput", "%", "0.74"),
            ("Duration", "ns", "406240"),
            ("Compute (SM) Throughput", "%", "23.59"),
        ];
        let mut details = format!(
            "==PROF== Connected to process 9\n{head}{}",
            sol_rows("10.0", &base)
        );
        details.push_str("\"0\",\"9\",\"gemm\",\"127.0.0.1\",\"cutlass3x_sm100_tensorop_gemm_f8_f8_f32\",\"1\",\"7\",\"(384, 1, 1)\",\"(9, 32, 1)\",\"0\",\"10.0\",\"SpeedOfLight\",\"\",\"\",\"\",\"SOLBottleneck\",\"OPT\",\"below 60.0% of peak: latency issues\",\"\",\"\"\n");
        for (sec, l, u, v) in [
            (
                "Launch Statistics",
                "Cluster Scheduling Policy",
                "",
                "PolicySpread",
            ),
            ("Launch Statistics", "# SMs", "SM", "152"),
            ("Launch Statistics", "Uses Green Context", "", "0"),
            ("Launch Statistics", "Waves Per SM", "", "1.89"),
            (
                "Launch Statistics",
                "Dynamic Shared Memory Per Block",
                "byte/block",
                "205696",
            ),
            ("Occupancy", "Theoretical Occupancy", "%", "18.75"),
            ("Occupancy", "Achieved Occupancy", "%", "15.53"),
            (
                "GPU and Memory Workload Distribution",
                "Average DRAM Active Cycles",
                "cycle",
                "12018",
            ),
        ] {
            details.push_str(&row("10.0", sec, l, u, v));
        }
        let details = parse(&details, "ncu2025-details.csv").unwrap();
        let single = parse(
            &format!("{head}{}", sol_rows("10.0", &base)),
            "ncu2025-sol.csv",
        )
        .unwrap();
        let raw = parse(
            "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"gpc__cycles_elapsed.avg.per_second\",\"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed\",\"gpu__time_duration.sum\",\"launch__cluster_scheduling_policy\",\"launch__waves_per_multiprocessor\",\"sm__throughput.avg.pct_of_peak_sustained_elapsed\"\n\
\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"hz\",\"%\",\"ns\",\"\",\"\",\"%\"\n\
\"0\",\"9\",\"gemm\",\"127.0.0.1\",\"cutlass3x_sm100_tensorop_gemm_f8_f8_f32\",\"1\",\"7\",\"(384, 1, 1)\",\"(9, 32, 1)\",\"0\",\"10.0\",\"1239496049.13\",\"21.68\",\"406240\",\"PolicySpread\",\"1.89\",\"23.59\"\n",
            "ncu2025-raw.csv",
        )
        .unwrap();
        for r in [&details, &single, &raw] {
            let k = &r.kernels[0];
            assert_eq!(k.bound, Some(Bound::Latency), "{}", r.path);
            assert_eq!(k.duration_ns, Some(406_240), "{}", r.path);
            assert_eq!(k.compute_capability.as_deref(), Some("10.0"), "{}", r.path);
            let f = k.metrics["gpc__cycles_elapsed.avg.per_second"];
            assert!((f - 1_239_496_049.13).abs() < 1e-3, "{}: {f}", r.path);
            assert!(r.warnings.is_empty(), "{}", r.path);
        }
        assert_eq!(details.kernels[0].waves_per_sm, Some(1.89));
        assert_eq!(details.kernels[0].rules.len(), 1);
        assert_eq!(details.kernels[0].achieved_occupancy_pct, Some(15.53));

        // CC 12.0, `--print-units auto`: same values in scaled units
        let auto = [
            ("SM Frequency", "Ghz", "2.41"),
            ("Memory Throughput", "%", "91.20"),
            ("Duration", "usecond", "12.35"),
            ("Compute (SM) Throughput", "%", "40.10"),
        ];
        let baseu = [
            ("SM Frequency", "hz", "2410000000"),
            ("Memory Throughput", "%", "91.20"),
            ("Duration", "ns", "12350"),
            ("Compute (SM) Throughput", "%", "40.10"),
        ];
        let mwa = row(
            "12.0",
            "Memory Workload Analysis",
            "Memory Throughput",
            "Gbyte/s",
            "1,632.40",
        );
        for rows in [&auto, &baseu] {
            let r = parse(
                &format!("{head}{}{mwa}", sol_rows("12.0", rows)),
                "cc12.csv",
            )
            .unwrap();
            let k = &r.kernels[0];
            assert_eq!(k.bound, Some(Bound::Memory));
            assert_eq!(k.duration_ns, Some(12_350));
            assert_eq!(k.memory_pct, Some(91.2));
            assert!((k.metrics["gpc__cycles_elapsed.avg.per_second"] - 2.41e9).abs() < 1.0);
            assert!((k.metrics["Memory Throughput [Gbyte/s]"] - 1_632.4e9).abs() < 1.0);
        }
    }

    #[test]
    fn bad_input_is_an_error() {
        let e = parse("hello\nworld\n", "x.csv").unwrap_err().to_string();
        assert!(e.starts_with("x.csv: "), "{e}");
        let e = parse("\"ID\",\"Process ID\"\n\"0\",\"1\"\n", "y.csv")
            .unwrap_err()
            .to_string();
        assert!(e.contains("Kernel Name"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn base_names() {
        assert_eq!(
            base_name("void vectorized_blocktiling<(int)64>(int, float *)"),
            "vectorized_blocktiling"
        );
        assert_eq!(base_name("esmm_shmem_multi(int, int)"), "esmm_shmem_multi");
        assert_eq!(base_name("sm80_xmma_gemm_cublas"), "sm80_xmma_gemm_cublas");
    }

    #[test]
    fn join_keys_agree_across_tools() {
        // ncu (and Nsight Systems) vs Kineto spellings of the same PyTorch kernel
        let ncu = "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<double, \
                   double, unsigned int, (int)1, (int)4, (bool)1>(float *)";
        let kineto = "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<double, \
                      double, unsigned int, 1, 4, true>(float *)";
        let nsys = "void at::native::<unnamed>::fused_dropout_kernel_vec<double, double, \
                    unsigned int, (int)1, (int)4, (bool)1>(float *)";
        assert_eq!(join_key(ncu), join_key(kineto));
        assert_eq!(join_key(nsys), join_key(kineto));
        assert_eq!(
            base_name(&join_key(nsys)),
            "at::native::{anon}::fused_dropout_kernel_vec"
        );
        // negative values, suffixes, and parentheses that are not casts
        assert_eq!(
            join_key("k<(long)-3, (unsigned int)7u>(int)"),
            "k<-3, 7>(int)"
        );
        assert_eq!(join_key("k<(float)1>(int)"), "k<(float)1>(int)");
        assert_eq!(join_key("f(int, float *)"), "f(int, float *)");
        assert_eq!(join_key("ünï<(int)2>"), "ünï<2>");
    }
}
