//! One side of a comparison: the parts of a report ([`crate::report::Report`], JSON schema
//! version [`crate::report::SCHEMA_VERSION`]) that the comparison reads, and how a side is
//! loaded from a path.
//!
//! A side is read from a saved JSON report (`stallscope analyze TRACE --format json`), or made
//! from the report of a trace, an Nsight Systems export or a folder of ranks (the library's
//! front door, `crate::api::diff`, runs the pipeline and hands the report here).
//! Both go through the same deserialization (an in-memory report is converted with serde), so
//! a saved report and its trace give the same comparison by construction. Fields the
//! comparison does not use are ignored; fields added by later versions of the same schema are
//! too.

use std::path::Path;

use serde::Deserialize;

use crate::report::{BreakdownUs, Report, SCHEMA_VERSION};

/// The report data a comparison reads (a subset of the JSON report; names as in the report).
#[derive(Debug, Clone, Deserialize)]
pub struct Side {
    /// JSON schema version of the report.
    pub schema_version: u32,
    /// `stallscope x.y.z` that wrote it.
    pub generator: String,
    /// Input.
    pub source: SideSource,
    /// One-line diagnosis.
    pub verdict: String,
    /// Findings.
    #[serde(default)]
    pub findings: Vec<SideFinding>,
    /// Analyzed window.
    pub window: SideWindow,
    /// Devices.
    #[serde(default)]
    pub devices: Vec<SideDevice>,
    /// Steps of the window.
    #[serde(default)]
    pub steps: Vec<SideStep>,
    /// How the steps were found.
    #[serde(default)]
    pub steps_found: Option<SideStepsFound>,
    /// The average step.
    pub breakdown_us: BreakdownUs,
    /// Mean step duration, µs.
    pub step_time_us: f64,
    /// Per-device split of the window.
    #[serde(default)]
    pub gpu_timeline: Vec<SideTimeline>,
    /// Kernel table of the window: its kernel rows (the copy and fill rows, which carry
    /// `copy`, are left out: copies are compared as the breakdown's and the timeline's copy
    /// time).
    #[serde(default, deserialize_with = "kernel_rows")]
    pub kernels: Vec<SideKernel>,
    /// Operator table of the window.
    #[serde(default)]
    pub ops: Vec<SideOp>,
    /// Annotation phases of the window.
    #[serde(default)]
    pub phases: Vec<SidePhase>,
    /// A folder of ranks: the per-rank table.
    #[serde(default)]
    pub ranks: Option<SideRanks>,
    /// The memory timeline (`profile_memory=True`).
    #[serde(default)]
    pub memory: Option<SideMemory>,
    /// What the trace says about the workload (first-layer input, dtype mix), from the
    /// report's `workload` (absent in reports saved by versions before it was added).
    #[serde(default)]
    pub workload: Option<super::workload::Workload>,
}

/// The `memory` section of the report.
#[derive(Debug, Clone, Deserialize)]
pub struct SideMemory {
    /// Per device (the CPU is [`crate::model::memory::CPU_DEVICE`]).
    #[serde(default)]
    pub devices: Vec<SideDeviceMemory>,
}

/// One device's memory timeline.
#[derive(Debug, Clone, Deserialize)]
pub struct SideDeviceMemory {
    /// Device id.
    pub device: i64,
    /// Peak allocated in the window, bytes.
    pub peak_allocated: i64,
    /// Step of the peak.
    #[serde(default)]
    pub peak_step: Option<String>,
    /// Live at the peak by operator and phase.
    #[serde(default)]
    pub live_at_peak: Vec<crate::report::mirrors::LiveGroupInfo>,
    /// Live at the peak by phase.
    #[serde(default)]
    pub live_by_phase: Vec<(String, u64)>,
    /// Whether blocks could be paired (frees with allocations).
    #[serde(default)]
    pub blocks_known: bool,
}

/// `source` of the report.
#[derive(Debug, Clone, Deserialize)]
pub struct SideSource {
    /// Path as given when the report was made.
    pub path: String,
    /// Input format (`kineto`, `nsys`, …).
    pub format: serde_json::Value,
}

/// A finding.
#[derive(Debug, Clone, Deserialize)]
pub struct SideFinding {
    /// Rule id.
    pub id: String,
    /// `high`, `medium`, `low`, `info`.
    pub severity: String,
    /// Title.
    pub title: String,
    /// µs per step.
    pub recoverable_us: f64,
}

/// `window` of the report.
#[derive(Debug, Clone, Deserialize)]
pub struct SideWindow {
    /// Step names in the window.
    #[serde(default)]
    pub steps: Vec<String>,
    /// How it was chosen.
    pub spec: String,
    /// Counted time, µs.
    pub duration_us: f64,
    /// Steps left out of the window, with their reasons.
    #[serde(default)]
    pub excluded: Vec<SideExcluded>,
}

/// A step left out of the window.
#[derive(Debug, Clone, Deserialize)]
pub struct SideExcluded {
    /// Its name (`ProfilerStep#6`).
    pub step: String,
}

/// The number of a step name (`ProfilerStep#6`, `Iteration#6`: 6).
fn step_number(name: &str) -> Option<i64> {
    name.rsplit_once('#').and_then(|(_, n)| n.parse().ok())
}

/// A device.
#[derive(Debug, Clone, Deserialize)]
pub struct SideDevice {
    /// Device id.
    pub id: i64,
    /// Name.
    pub name: String,
}

/// `steps_found` of the report.
#[derive(Debug, Clone, Deserialize)]
pub struct SideStepsFound {
    /// `profiler_step`, `vllm_execute`, `sglang_step`, `graph_launch` or `whole_trace`.
    pub rule: String,
}

/// A step.
#[derive(Debug, Clone, Deserialize)]
pub struct SideStep {
    /// `ProfilerStep#N`.
    pub name: String,
    /// µs.
    pub duration_us: f64,
}

/// A device's busy/idle split over the window.
#[derive(Debug, Clone, Deserialize)]
pub struct SideTimeline {
    /// Device id.
    pub device: i64,
    /// µs.
    pub total_us: f64,
    /// µs.
    pub computation_us: f64,
    /// µs.
    pub exposed_comm_us: f64,
    /// µs.
    pub exposed_memcpy_us: f64,
    /// µs.
    pub idle_us: f64,
}

/// The kernel rows of a report's `kernels` (rows without `copy`).
fn kernel_rows<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<SideKernel>, D::Error> {
    #[derive(Deserialize)]
    struct Row {
        #[serde(flatten)]
        kernel: SideKernel,
        #[serde(default)]
        copy: Option<serde::de::IgnoredAny>,
    }
    let rows: Vec<Row> = Vec::deserialize(d)?;
    Ok(rows
        .into_iter()
        .filter(|r| r.copy.is_none())
        .map(|r| r.kernel)
        .collect())
}

/// A kernel row.
#[derive(Debug, Clone, Deserialize)]
pub struct SideKernel {
    /// Full name.
    pub name: String,
    /// Category (`gemm`, `communication`, …).
    pub category: String,
    /// Calls in the window.
    pub calls: u64,
    /// µs in the window.
    pub total_us: f64,
}

/// An operator row.
#[derive(Debug, Clone, Deserialize)]
pub struct SideOp {
    /// Name.
    pub name: String,
    /// Calls in the window.
    pub calls: u64,
    /// µs.
    pub host_total_us: f64,
    /// Host time minus children and own launch calls, µs.
    #[serde(default)]
    pub host_self_us: f64,
    /// µs.
    pub device_self_us: f64,
}

/// A phase row.
#[derive(Debug, Clone, Deserialize)]
pub struct SidePhase {
    /// Path from the root.
    pub path: String,
    /// 0 for roots.
    pub depth: u32,
    /// Calls in the window.
    pub calls: u64,
    /// Wall time of the calls inside the window (host), µs.
    #[serde(default)]
    pub cpu_total_us: f64,
    /// Device activities launched inside.
    pub kernel_count: u64,
    /// Their time, µs.
    pub gpu_us: f64,
}

/// The `ranks` section of a folder's report.
#[derive(Debug, Clone, Deserialize)]
pub struct SideRanks {
    /// Slowest rank.
    pub slowest_rank: i64,
    /// Per-rank rows.
    pub ranks: Vec<SideRank>,
}

/// A rank row.
#[derive(Debug, Clone, Deserialize)]
pub struct SideRank {
    /// Rank.
    pub rank: i64,
    /// Mean step time, µs.
    pub step_time_us: f64,
}

impl Side {
    /// Steps the window's totals are divided by (at least 1).
    pub fn n_steps(&self) -> f64 {
        self.window.steps.len().max(1) as f64
    }

    /// Steps the one-interval tables (kernels, operators, GPU timeline) cover: the window's
    /// steps and the steps left out between its first and last (those tables take one interval
    /// from the first to the last counted moment, docs/json-report.md), at least 1. Dividing
    /// their totals by the window's steps alone would count an excluded step's calls in the
    /// others' mean.
    pub fn n_table_steps(&self) -> f64 {
        let nums: Vec<i64> = self
            .window
            .steps
            .iter()
            .filter_map(|s| step_number(s))
            .collect();
        let inside = match (nums.iter().min(), nums.iter().max()) {
            (Some(&lo), Some(&hi)) => self
                .window
                .excluded
                .iter()
                .filter_map(|e| step_number(&e.step))
                .filter(|n| *n > lo && *n < hi)
                .count(),
            _ => 0,
        };
        (self.window.steps.len() + inside).max(1) as f64
    }

    /// The per-step durations, µs.
    pub fn step_durations(&self) -> Vec<f64> {
        self.steps.iter().map(|s| s.duration_us).collect()
    }

    /// The side of an in-memory report: through its JSON text, exactly as a saved report is
    /// read (so the numbers parse to the same last bit either way).
    pub fn from_report(r: &Report) -> Result<Side, String> {
        let text = serde_json::to_vec(r).map_err(|e| e.to_string())?;
        serde_json::from_slice(&text).map_err(|e| e.to_string())
    }
}

/// Which side of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// The baseline.
    Before,
    /// The new profile.
    After,
}

impl Which {
    /// `before` or `after`.
    pub fn as_str(self) -> &'static str {
        match self {
            Which::Before => "before",
            Which::After => "after",
        }
    }
}

/// A side that could not be loaded: one line naming the side and the file.
#[derive(Debug, Clone)]
pub struct SideError(pub String);

impl std::fmt::Display for SideError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SideError {}

/// A loaded side, with the reading warnings of its trace(s) (path, warning).
pub struct Loaded {
    /// The report data.
    pub side: Side,
    /// Whether it came from a saved JSON report.
    pub saved: bool,
    /// Reading warnings.
    pub warnings: Vec<(String, crate::report::mirrors::WarningInfo)>,
}

/// True when the file starts like a stallscope JSON report (its first key is
/// `"schema_version"`; Kineto traces start with other keys, such as `"schemaVersion"`).
pub fn is_saved_report(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 64];
    let n = match std::fs::File::open(path).and_then(|mut f| f.read(&mut head)) {
        Ok(n) => n,
        Err(_) => return false,
    };
    let s = &head[..n];
    let s = match s.iter().position(|b| !b.is_ascii_whitespace()) {
        Some(i) => &s[i..],
        None => return false,
    };
    if s.first() != Some(&b'{') {
        return false;
    }
    let rest = &s[1..];
    let rest = match rest.iter().position(|b| !b.is_ascii_whitespace()) {
        Some(i) => &rest[i..],
        None => return false,
    };
    rest.starts_with(b"\"schema_version\"")
}

/// Reads a saved JSON report, checking its schema version.
pub fn read_saved(path: &Path, which: Which) -> Result<Side, SideError> {
    let err = |m: String| SideError(format!("{} side: {}: {m}", which.as_str(), path.display()));
    let bytes = std::fs::read(path).map_err(|e| err(e.to_string()))?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
        err(format!(
            "not a valid JSON report (line {}, column {}): {e}",
            e.line(),
            e.column()
        ))
    })?;
    match v.get("schema_version").and_then(|s| s.as_u64()) {
        Some(n) if n == SCHEMA_VERSION as u64 => {}
        Some(n) => {
            return Err(err(format!(
                "JSON report of schema version {n}; this stallscope reads version \
                 {SCHEMA_VERSION} (make it again with this version: stallscope analyze TRACE \
                 --format json -o FILE)"
            )))
        }
        None => return Err(err("JSON report without a numeric schema_version".into())),
    }
    serde_json::from_value(v).map_err(|e| err(format!("not a stallscope report: {e}")))
}

#[cfg(test)]
mod tests {
    /// A saved report's copy and fill rows (with `copy`) are not kernels to the diff: the
    /// breakdown and the GPU timeline compare copy time, and a copy row among the kernels
    /// would count it twice.
    #[test]
    fn copy_rows_are_not_diffed_as_kernels() {
        let rows = serde_json::json!([
            {"name": "gemm", "category": "gemm", "calls": 2, "total_us": 10.0},
            {"name": "Memcpy DtoD (Device -> Device)", "category": "memcpy", "calls": 3,
             "total_us": 5.0, "copy": {"kind": "memcpy", "direction": "DtoD"}},
            {"name": "MEMORY_COPY_KERNEL", "category": "memcpy", "calls": 1, "total_us": 1.0}
        ]);
        let k = super::kernel_rows(rows).unwrap();
        let names: Vec<&str> = k.iter().map(|k| k.name.as_str()).collect();
        // a copy kernel (ROCm 7.1, recorded as a kernel) stays
        assert_eq!(names, ["gemm", "MEMORY_COPY_KERNEL"]);
    }
}
