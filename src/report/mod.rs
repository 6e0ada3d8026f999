//! Renderers: they turn an [`crate::analysis::Analysis`] into text, and never compute.
//!
//! Stage 6 of the pipeline (ARCHITECTURE.md): it may use the diagnosis, the analyses and the
//! stages below them; never the runners (`multirank`, `slice`) or the CLI.
//!
//! [`Report`] is the versioned, serializable shape of the results (JSON schema version
//! [`SCHEMA_VERSION`], documented in `docs/json-report.md`); every renderer formats a `Report`.
//! Building it only converts units (ns → µs, fractions) and resolves names.

pub mod compiled;
pub mod csv;
pub mod html;
pub mod json;
pub mod layout;
pub mod markdown;
pub mod mirrors;
pub mod nvidia;
#[cfg(feature = "parquet")]
pub mod parquet;
pub mod ranks;
pub mod terminal;
pub mod units;

// the efficiency and memory sentences under their old paths (they live in `layout` now)
pub use layout::efficiency::{
    efficiency_cells, efficiency_headline, efficiency_subtitle, precision_label, si,
    EFFICIENCY_COLUMNS,
};
pub use layout::memory::{memory_device_label, memory_summary, share_of_peak};

/// µs as the reports write them (`1.23 ms`), for the renderers beside the terminal's.
pub(crate) use units::fmt_us;

use serde::Serialize;

use crate::analysis::{self, Analysis};
use crate::model::{Ns, Trace};

/// Version of the JSON report. Bumped only on incompatible changes; fields may be added.
pub const SCHEMA_VERSION: u32 = 1;

fn us(ns: Ns) -> f64 {
    ns as f64 / 1000.0
}

fn usf(ns: f64) -> f64 {
    ns / 1000.0
}

/// Input description.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct SourceInfo {
    /// Path as given.
    pub path: String,
    /// Input format.
    pub format: crate::model::SourceFormat,
    /// Uncompressed bytes.
    pub bytes: u64,
    /// Compressed bytes on disk, when gzip.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compressed_bytes: Option<u64>,
    /// Trace events read.
    pub events: u64,
    /// Timestamp (µs, the trace's own clock) that all `start_us` values are relative to.
    pub trace_start_us: f64,
    /// The trace's `distributedInfo` (backend, rank, world size), when recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distributed: Option<DistributedInfo>,
}

/// The trace's `distributedInfo` ([`crate::model::Distributed`], field for field).
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct DistributedInfo {
    /// Backend (`nccl`, `gloo`, ...).
    pub backend: Option<String>,
    /// This file's rank.
    pub rank: Option<i64>,
    /// World size.
    pub world_size: Option<i64>,
}

impl DistributedInfo {
    fn new(d: &crate::model::Distributed) -> Self {
        DistributedInfo {
            backend: d.backend.clone(),
            rank: d.rank,
            world_size: d.world_size,
        }
    }
}

/// One device. Field for field [`analysis::gpu::GpuSummary`] (`device` → `id`), kept apart on
/// purpose: this is the versioned JSON shape, that is the analysis' own.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct DeviceInfo {
    /// Device id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// SMs / CUs.
    pub sm_count: Option<u32>,
    /// Bytes.
    pub memory_bytes: Option<u64>,
    /// "major.minor".
    pub compute_capability: Option<String>,
    /// 0..1.
    pub utilization: Option<f64>,
    /// 0..1.
    pub sm_efficiency: Option<f64>,
    /// 0..1.
    pub achieved_occupancy: Option<f64>,
    /// 0..1.
    pub tensor_core_ratio: Option<f64>,
}

/// Breakdown in µs: the roles of [`crate::window::steps::Breakdown`] (integer ns) and
/// [`crate::window::steps::AverageBreakdown`] (fractional ns) in the report's unit.
#[derive(Debug, Clone, Copy, Serialize, serde::Deserialize, Default)]
pub struct BreakdownUs {
    /// Kernels.
    pub kernel: f64,
    /// Copies.
    pub memcpy: f64,
    /// Fills.
    pub memset: f64,
    /// Collectives.
    pub communication: f64,
    /// Runtime API.
    pub runtime: f64,
    /// DataLoader.
    pub dataloader: f64,
    /// Other host work.
    pub cpu_exec: f64,
    /// Remainder.
    pub other: f64,
}

impl BreakdownUs {
    /// Sum of all roles.
    pub fn total(&self) -> f64 {
        self.kernel
            + self.memcpy
            + self.memset
            + self.communication
            + self.runtime
            + self.dataloader
            + self.cpu_exec
            + self.other
    }
    /// (label, value) pairs in display order.
    pub fn parts(&self) -> [(&'static str, f64); 8] {
        [
            ("kernel", self.kernel),
            ("memcpy", self.memcpy),
            ("memset", self.memset),
            ("communication", self.communication),
            ("runtime", self.runtime),
            ("dataloader", self.dataloader),
            ("cpu_exec", self.cpu_exec),
            ("other", self.other),
        ]
    }
}

/// One step.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct StepInfo {
    /// `ProfilerStep#N`.
    pub name: String,
    /// Start, µs since `source.trace_start_us`.
    pub start_us: f64,
    /// Duration, µs.
    pub duration_us: f64,
    /// Where the time went.
    pub breakdown_us: BreakdownUs,
    /// `prefill`, `decode` or `mixed` for a server iteration whose annotation says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<crate::window::iterations::IterationPhase>,
}

impl StepInfo {
    /// `name` followed by the iteration's kind when known (`Iteration#3 decode`); the
    /// terminal passes a shortened name (`#3`), the other renderers [`StepInfo::name`].
    pub fn labelled(&self, name: &str) -> String {
        match self.phase {
            Some(p) => format!("{name} {}", p.as_str()),
            None => name.to_string(),
        }
    }
}

/// How the steps were found and, for server iterations, their kinds and the gaps between
/// them ([`crate::analysis::iterations::IterationSummary`] in µs).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct StepsFoundInfo {
    /// `profiler_step`, `vllm_execute`, `sglang_step`, `graph_launch` or `whole_trace`.
    pub rule: crate::window::iterations::StepRule,
    /// What the rule looks for, in words.
    pub description: String,
    /// Per kind of iteration (server iterations only).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub phases: Vec<IterationPhaseInfo>,
    /// Consecutive counted iterations (server iterations only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gaps: Option<IterationGapsInfo>,
}

/// The capture check ([`analysis::capture`]).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct TrustInfo {
    /// True when no issue limits the verdict (`level` `verdict`): issues that limit only
    /// the figures named beside them (`figures`), or nothing (`none`), leave it true
    /// ([`analysis::capture::CaptureCheck::ok`]).
    pub ok: bool,
    /// Device clock offset found, µs (0 when none).
    pub clock_offset_us: f64,
    /// What limits the numbers: `id`, `finding`, `effect`, `unreliable`.
    pub issues: Vec<TrustIssueInfo>,
    /// Device clocks shifted before the analysis (`clock-offset-corrected`; empty when none,
    /// and always with `--no-clock-correction`).
    #[serde(default)]
    pub clock_corrections: Vec<ClockCorrectionInfo>,
    /// The printed figures the issues limit, each with the note printed beside it
    /// ([`analysis::capture::FIGURE_LIMITS`]; empty when none is limited).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub figures: Vec<FigureLimitInfo>,
}

/// A printed figure limited by capture-check issues ([`analysis::capture::FigureLimit`],
/// field for field).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct FigureLimitInfo {
    /// The figure (`gpu_summary`, `gpu_timeline`, `steps`, `kernels`, `efficiency`).
    #[serde(deserialize_with = "crate::text::static_words::one")]
    pub figure: crate::text::static_words::Word,
    /// The ids of the issues that limit it.
    #[serde(deserialize_with = "crate::text::static_words::vec")]
    pub issues: Vec<&'static str>,
    /// The note printed beside it: `limited by the capture check (ids): what they do`.
    pub note: String,
}

impl FigureLimitInfo {
    fn new(f: analysis::capture::FigureLimit) -> Self {
        FigureLimitInfo {
            figure: f.figure,
            issues: f.issues,
            note: f.note,
        }
    }
}

/// One property of the capture that limits its numbers ([`analysis::capture::TrustIssue`],
/// field for field).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct TrustIssueInfo {
    /// Stable id (see [`analysis::capture`]).
    #[serde(deserialize_with = "crate::text::static_words::one")]
    pub id: crate::text::static_words::Word,
    /// What was found, with figures.
    pub finding: String,
    /// What it does to the numbers.
    pub effect: String,
    /// Classes of numbers it makes unreliable (`host_device_timing`, `device_busy`, …).
    #[serde(deserialize_with = "crate::text::static_words::vec")]
    pub unreliable: Vec<&'static str>,
    /// What it limits ([`analysis::capture::TrustIssue::level`]): `verdict`, `figures` (only
    /// the figures named in `figures`) or `none`; a report saved before the field reads
    /// `verdict` (every issue then made `ok` false).
    #[serde(
        default = "level_verdict",
        deserialize_with = "crate::text::static_words::one"
    )]
    pub level: crate::text::static_words::Word,
}

fn level_verdict() -> crate::text::static_words::Word {
    analysis::capture::LEVEL_VERDICT
}

impl TrustIssueInfo {
    fn new(i: analysis::capture::TrustIssue) -> Self {
        TrustIssueInfo {
            level: i.level(),
            id: i.id,
            finding: i.finding,
            effect: i.effect,
            unreliable: i.unreliable,
        }
    }
}

/// One device clock correction ([`crate::model::clock::ClockCorrection`]), in µs.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct ClockCorrectionInfo {
    /// Device id.
    pub device: i32,
    /// Subtracted from every timestamp of the device, µs: positive when its clock was ahead
    /// of the host's (activities seemed to start late), negative when behind.
    pub offset_us: f64,
    /// Launches that reached an idle device and agree on the offset within 50 µs.
    pub anchors: u32,
    /// Activities of the device linked to their launch call.
    pub activities: u64,
}

impl TrustInfo {
    fn new(trace: &Trace, a: &Analysis) -> Self {
        let c = analysis::capture::check_window(trace, &a.capture, &a.selection);
        TrustInfo {
            ok: c.ok(),
            clock_offset_us: us(c.clock_offset),
            figures: c
                .figure_limits()
                .into_iter()
                .map(FigureLimitInfo::new)
                .collect(),
            issues: c.issues.into_iter().map(TrustIssueInfo::new).collect(),
            clock_corrections: trace
                .clock_corrections
                .iter()
                .map(|c| ClockCorrectionInfo {
                    device: c.device,
                    offset_us: us(c.offset),
                    anchors: c.anchors,
                    activities: c.activities,
                })
                .collect(),
        }
    }
}

impl StepsFoundInfo {
    fn new(
        steps: &crate::window::steps::StepAnalysis,
        kinds: &[crate::analysis::iterations::PhaseStats],
    ) -> Self {
        let summary = crate::analysis::iterations::summarize(steps.rule, &steps.steps);
        StepsFoundInfo {
            rule: steps.rule,
            description: steps.rule.describe().to_string(),
            phases: kinds
                .iter()
                .map(|p| IterationPhaseInfo {
                    phase: p.phase,
                    count: p.count,
                    in_window: p.in_window,
                    mean_us: usf(p.mean),
                    mean_kernel_us: usf(p.mean_kernel),
                    judged: p.judged,
                    vs_judged: p.vs_judged,
                })
                .collect(),
            gaps: summary
                .as_ref()
                .filter(|s| s.gaps > 0)
                .map(|s| IterationGapsInfo {
                    count: s.gaps,
                    mean_host_us: usf(s.mean_host_gap),
                    mean_idle_us: usf(s.mean_idle_gap),
                    idle_total_us: us(s.idle_gap_total),
                }),
        }
    }
}

impl StepsFoundInfo {
    /// The reports' word for one step: `iteration` for server iterations, else `step`.
    pub fn unit(&self) -> &'static str {
        if self.rule.is_iteration() {
            "iteration"
        } else {
            "step"
        }
    }

    /// The steps' heading: `Iterations` or `Steps`.
    pub fn title(&self) -> &'static str {
        if self.rule.is_iteration() {
            "Iterations"
        } else {
            "Steps"
        }
    }

    /// The kinds of iterations, `1 prefill × 2.50 ms (kernels 2.00 ms); 5 decode × …`, when
    /// the annotations say any (every renderer prints this line under the iterations).
    pub fn kinds_line(&self) -> Option<String> {
        let known =
            self.phases.len() > 1 || self.phases.first().is_some_and(|p| p.phase != "unknown");
        if !known {
            return None;
        }
        let judged = match self.phases.iter().filter(|p| p.judged).collect::<Vec<_>>()[..] {
            [j] if self.phases.len() > 1 => Some(j.phase),
            _ => None,
        };
        let kinds: Vec<String> = self
            .phases
            .iter()
            .map(|p| {
                let mut k = format!(
                    "{} {} × {} (kernels {})",
                    p.count,
                    p.phase,
                    units::fmt_us(p.mean_us),
                    units::fmt_us(p.mean_kernel_us)
                );
                if let (Some(r), Some(j)) = (p.vs_judged, judged) {
                    k.push_str(&format!(", {r:.1}× a {j}, not judged"));
                }
                k
            })
            .collect();
        Some(kinds.join("; "))
    }

    /// The time between consecutive iterations in one sentence, when there are gaps.
    pub fn gaps_line(&self) -> Option<String> {
        use units::fmt_us;
        self.gaps.as_ref().map(|g| {
            format!(
                "{} on the host (the scheduler) on average over {} gap(s); the GPU had no \
                 iteration's work for {} of it ({} in all)",
                fmt_us(g.mean_host_us),
                g.count,
                fmt_us(g.mean_idle_us),
                fmt_us(g.idle_total_us)
            )
        })
    }
}

/// The capture check's line when it found nothing (every renderer).
pub const CAPTURE_CHECK_OK: &str = "nothing in this capture limits the numbers";

/// The capture check's lead when it found issues but none limits the verdict (`trust.ok`).
pub const CAPTURE_CHECK_VERDICT_STANDS: &str = "nothing in this capture limits the verdict";

/// Said after the effect of an issue that limits only the figures named beside them (level
/// `figures`).
pub const CAPTURE_CHECK_FIGURES_ONLY: &str =
    "it limits only the figures noted beside them; the verdict stands";

/// The capture check's subtitle when it found something.
pub const CAPTURE_CHECK_SUBTITLE: &str = "what limits the numbers";

/// Iterations of one kind.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct IterationPhaseInfo {
    /// `prefill`, `mixed`, `decode` or `unknown`.
    #[serde(deserialize_with = "crate::text::static_words::one")]
    pub phase: crate::text::static_words::Word,
    /// Iterations of this kind found in the trace.
    pub count: u64,
    /// Of them, in the window.
    #[serde(default)]
    pub in_window: u64,
    /// Mean duration, µs.
    pub mean_us: f64,
    /// Mean kernel time, µs.
    pub mean_kernel_us: f64,
    /// True for the kind the window (and the verdict) judges.
    #[serde(default)]
    pub judged: bool,
    /// For a kind not judged: its mean duration over the judged kind's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_judged: Option<f64>,
}

/// Time between consecutive iterations.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct IterationGapsInfo {
    /// Pairs of consecutive counted iterations.
    pub count: u64,
    /// Mean host time between one iteration's mark and the next (the scheduler), µs.
    pub mean_host_us: f64,
    /// Mean time no iteration covers (its device work included): the GPU has nothing of an
    /// iteration to run, µs.
    pub mean_idle_us: f64,
    /// Sum of that idle time, µs.
    pub idle_total_us: f64,
}

/// Per-device busy/idle split.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct TimelineInfo {
    /// Device id.
    pub device: i64,
    /// First to last counted device activity, µs.
    pub total_us: f64,
    /// Computation, µs.
    pub computation_us: f64,
    /// Communication not hidden by computation, µs.
    pub exposed_comm_us: f64,
    /// Copies not hidden by computation or communication, µs.
    pub exposed_memcpy_us: f64,
    /// Idle, µs.
    pub idle_us: f64,
}

/// Kernel table row.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct KernelInfo {
    /// Full name.
    pub name: String,
    /// Category.
    pub category: crate::model::classify::KernelCategory,
    /// Calls.
    pub calls: u64,
    /// µs.
    pub total_us: f64,
    /// µs.
    pub mean_us: f64,
    /// µs.
    pub min_us: f64,
    /// µs.
    pub max_us: f64,
    /// Share of kernel time, 0..1.
    pub share: f64,
    /// Duration-weighted blocks per SM.
    pub blocks_per_sm: Option<f64>,
    /// Duration-weighted est. achieved occupancy, percent.
    pub occupancy_pct: Option<f64>,
    /// Uses tensor cores.
    pub tensor_core: bool,
    /// Copy and fill rows only (after the kernel rows): what they moved; their `share` is of
    /// copy and fill time.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub copy: Option<CopyInfo>,
}

/// What a copy or fill row of the kernel table moved ([`crate::analysis::kernels::CopyStats`]).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct CopyInfo {
    /// `memcpy` or `memset`.
    pub kind: String,
    /// `HtoD`, `DtoH`, `DtoD`, `PtoP`, `HtoH`; null for fills and unnamed directions.
    pub direction: Option<String>,
    /// Host memory of a copy: `pageable`, `pinned`, `managed`; null when the name does not say.
    pub host_memory: Option<String>,
    /// Bytes moved by all calls.
    pub bytes: u64,
    /// Bytes per call; null when no call recorded a byte count.
    pub bytes_per_call: Option<f64>,
    /// GB/s over the calls with a duration; null without bytes or time.
    pub bandwidth_gbps: Option<f64>,
}

impl KernelInfo {
    fn new(k: &crate::analysis::kernels::KernelRow) -> Self {
        KernelInfo {
            name: k.name.clone(),
            category: k.category,
            calls: k.calls,
            total_us: us(k.total),
            mean_us: usf(k.mean),
            min_us: us(k.min),
            max_us: us(k.max),
            share: k.share,
            blocks_per_sm: k.blocks_per_sm,
            occupancy_pct: k.occupancy_pct,
            tensor_core: k.tensor_core,
            copy: k.copy.as_ref().map(|c| CopyInfo {
                kind: match c.kind {
                    crate::model::GpuKind::Memset => "memset",
                    _ => "memcpy",
                }
                .into(),
                direction: c.direction.map(str::to_string),
                host_memory: c.host_memory.map(str::to_string),
                bytes: c.bytes,
                bytes_per_call: c.bytes_per_call,
                bandwidth_gbps: c.bandwidth_gbps,
            }),
        }
    }
}

/// Operator table row.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct OpInfo {
    /// Name.
    pub name: String,
    /// Calls.
    pub calls: u64,
    /// µs.
    pub host_self_us: f64,
    /// µs.
    pub host_total_us: f64,
    /// µs.
    pub device_self_us: f64,
    /// µs.
    pub device_total_us: f64,
}

/// Analyzed window.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct WindowInfo {
    /// Start, µs since `source.trace_start_us`.
    pub start_us: f64,
    /// End, µs since `source.trace_start_us`.
    pub end_us: f64,
    /// Steps in the window.
    pub steps: Vec<String>,
    /// Steps left out, with the reason.
    pub excluded: Vec<ExcludedStep>,
    /// How the window was chosen: `auto`, `--all`, `--steps 3..6`, `--time …`, `--focus …`.
    pub spec: String,
    /// Counted time (the union of the included steps, the range, or the focused calls), µs.
    pub duration_us: f64,
    /// Compile/autotune work in the whole trace (union of its spans), µs.
    pub compile_us: f64,
    /// Where that compile work was.
    pub compile: CompileInfo,
    /// For `--focus`: what matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub focus: Option<FocusInfo>,
    /// Remarks (e.g. why no warm-up step could be excluded).
    pub notes: Vec<String>,
    /// A trace without step marks: parts left out of its one step (set-up before the first
    /// device work, an idle tail after the last).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOutInfo>,
    /// One-time start-up work of the trace (`analysis::startup::Startup`); absent when the
    /// trace has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup: Option<StartupInfo>,
}

/// One-time start-up work, each figure a wall-clock union across threads
/// ([`crate::analysis::startup::Startup`]).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct StartupInfo {
    /// All categories, µs.
    pub total_us: f64,
    /// The part before the window's start, µs.
    pub before_window_us: f64,
    /// The part inside the window's counted time, µs.
    pub in_window_us: f64,
    /// The part of the window's counted time that is start-up (module loads, and in a cold
    /// window allocation and compile work too), µs.
    pub judged_us: f64,
    /// Whether the window holds the capture's first device activity.
    pub cold_window: bool,
    /// Per category (`context_module`, `allocation`, `jit_compile`, `other_one_time`).
    pub parts: Vec<StartupPartInfo>,
}

/// One category of start-up work ([`crate::analysis::startup::StartupPart`]).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct StartupPartInfo {
    /// Category.
    pub kind: crate::analysis::startup::StartupKind,
    /// Wall-clock union across threads, µs.
    pub us: f64,
    /// Calls or spans.
    pub calls: u64,
    /// Before the window's start, µs.
    pub before_window_us: f64,
    /// Inside the window's counted time, µs.
    pub in_window_us: f64,
}

impl StartupInfo {
    fn new(a: &Analysis) -> Option<StartupInfo> {
        let s = &a.startup;
        if s.parts.is_empty() {
            return None;
        }
        Some(StartupInfo {
            total_us: us(s.total),
            before_window_us: us(s.before),
            in_window_us: us(s.inside),
            judged_us: us(s.judged),
            cold_window: s.cold_window,
            parts: s
                .parts
                .iter()
                .map(|p| StartupPartInfo {
                    kind: p.kind,
                    us: us(p.total),
                    calls: p.calls,
                    before_window_us: us(p.before),
                    in_window_us: us(p.inside),
                })
                .collect(),
        })
    }
}

/// A part of the trace left out of the window ([`crate::window::steps::LeftOut`]).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct LeftOutInfo {
    /// `set-up before the first device work` or `idle tail after the last device work`.
    pub what: String,
    /// Start, µs since `source.trace_start_us`.
    pub start_us: f64,
    /// Length, µs.
    pub duration_us: f64,
}

impl WindowInfo {
    /// The window's first line in words, as every renderer prints it: how it was chosen,
    /// which steps and the time counted (`steady state (auto) — 6 of 6 steps, ProfilerStep#5
    /// … ProfilerStep#10, 1.07 s counted`). Names are raw: each renderer escapes the line.
    pub fn summary(&self) -> String {
        let mode = match self.spec.as_str() {
            "auto" => "steady state (auto)".to_string(),
            "--all" => "every step (--all)".to_string(),
            s => s.to_string(),
        };
        let total = self.steps.len() + self.excluded.len();
        let steps = match (self.steps.first(), self.steps.last()) {
            (Some(a), _) if self.steps.len() == 1 && total == 1 && a == "0" => {
                "the whole trace (no ProfilerStep#N)".to_string()
            }
            (Some(a), Some(b)) if self.steps.len() > 1 => {
                format!("{} of {total} steps, {a} … {b}", self.steps.len())
            }
            (Some(a), _) => format!("1 of {total} steps, {a}"),
            _ => "no step".to_string(),
        };
        format!(
            "{mode} — {steps}, {} counted",
            terminal::fmt_us(self.duration_us)
        )
    }

    /// The lines under [`WindowInfo::summary`], each with its label (`focus`, `excluded`,
    /// `compile work`, `start-up`, `left out`, `note`, or none): what a focus matched, the steps left out grouped by
    /// reason, whether anything could have been left out, the compile work and the notes.
    /// Names are raw: each renderer escapes the lines.
    pub fn lines(&self) -> Vec<(&'static str, String)> {
        use units::fmt_us;
        let mut out = Vec::new();
        if let Some(f) = &self.focus {
            out.push((
                "focus",
                format!("{} call(s) of {}", f.calls, f.matched.join(", ")),
            ));
        }
        // identical reasons grouped when they are many (e.g. --steps on a long trace)
        let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
        for e in &self.excluded {
            match groups.iter_mut().find(|g| g.0 == e.reason) {
                Some(g) => g.1.push(&e.step),
                None => groups.push((&e.reason, vec![&e.step])),
            }
        }
        for (reason, steps) in groups {
            let who = if steps.len() > 3 {
                format!(
                    "{} steps ({} … {})",
                    steps.len(),
                    steps[0],
                    steps[steps.len() - 1]
                )
            } else {
                steps.join(", ")
            };
            out.push(("excluded", format!("{who}: {reason}")));
        }
        if self.spec == "auto"
            && self.excluded.is_empty()
            && self.compile_us == 0.0
            && self.steps.len() > 1
        {
            out.push((
                "",
                "nothing excluded: no torch.compile/autotune work, no step over 1.5× the median"
                    .to_string(),
            ));
        } else if self.compile_us == 0.0 && !self.steps.is_empty() {
            out.push((
                "",
                "no torch.compile/autotune work in this trace".to_string(),
            ));
        }
        if self.compile_us > 0.0 {
            let kinds: Vec<String> = self
                .compile
                .by_kind
                .iter()
                .map(|k| format!("{} {}", k.kind.as_str(), fmt_us(k.us)))
                .collect();
            let wher = if self.compile.steps.is_empty() {
                "outside every step".to_string()
            } else {
                format!("in {}", self.compile.steps.join(", "))
            };
            out.push((
                "compile work",
                format!(
                    "{} in {} span(s) ({}), {wher}",
                    fmt_us(self.compile_us),
                    self.compile.count,
                    kinds.join(", ")
                ),
            ));
        }
        if let Some(s) = &self.startup {
            let parts: Vec<String> = s
                .parts
                .iter()
                .map(|p| {
                    format!(
                        "{} {} in {} call(s)",
                        p.kind.as_str(),
                        fmt_us(p.us),
                        crate::text::count(p.calls)
                    )
                })
                .collect();
            let mut wher = Vec::new();
            if s.before_window_us > 0.0 {
                wher.push(format!("{} before the window", fmt_us(s.before_window_us)));
            }
            if s.in_window_us > 0.0 {
                wher.push(format!("{} inside it", fmt_us(s.in_window_us)));
            }
            if wher.is_empty() {
                wher.push("none in the window".to_string());
            }
            out.push((
                "start-up",
                format!(
                    "{} one-time, union across threads ({}); {}",
                    fmt_us(s.total_us),
                    parts.join(", "),
                    wher.join(", ")
                ),
            ));
        }
        for l in &self.left_out {
            out.push((
                "left out",
                format!(
                    "{} of {} (not judged as the steady state)",
                    fmt_us(l.duration_us),
                    l.what
                ),
            ));
        }
        for n in &self.notes {
            out.push(("note", n.clone()));
        }
        out
    }
}

/// A step left out of the window.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ExcludedStep {
    /// Step name.
    pub step: String,
    /// Why.
    pub reason: String,
}

/// The whole report (JSON schema version 1).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Report {
    /// Always [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `stallscope x.y.z`.
    pub generator: String,
    /// Input.
    pub source: SourceInfo,
    /// Reading warnings.
    pub warnings: Vec<mirrors::WarningInfo>,
    /// One-line diagnosis: what bounds the step (see `docs/rules.md`).
    pub verdict: String,
    /// The verdict's class, a stable id (`gpu_bound`, `launch_bound`, … see
    /// `docs/json-report.md`).
    #[serde(default)]
    pub verdict_class: crate::diagnose::verdict::VerdictClass,
    /// Findings ranked by recoverable time per step (see `docs/rules.md`).
    pub findings: Vec<mirrors::FindingInfo>,
    /// Analyzed window.
    pub window: WindowInfo,
    /// Devices that ran work.
    pub devices: Vec<DeviceInfo>,
    /// Steps.
    pub steps: Vec<StepInfo>,
    /// How the steps were found (ProfilerStep, server iterations, whole trace).
    pub steps_found: StepsFoundInfo,
    /// The capture check: what limits what the numbers mean.
    pub trust: TrustInfo,
    /// CUDA/HIP graph replays in the window and what the trace holds of them (absent without
    /// graph launches).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graphs: Option<compiled::GraphsInfo>,
    /// `torch.compile`d code in the window: graphs, breaks, kernel time no operator explains
    /// (absent without `Torch-Compiled Region` ranges).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compiled: Option<compiled::CompiledInfo>,
    /// The average step.
    pub breakdown_us: BreakdownUs,
    /// Mean step duration, µs.
    pub step_time_us: f64,
    /// Per-device split.
    pub gpu_timeline: Vec<TimelineInfo>,
    /// Kernel table (all rows; renderers cut).
    pub kernels: Vec<KernelInfo>,
    /// Operator table (all rows; renderers cut).
    pub ops: Vec<OpInfo>,
    /// Device timeline of the representative step (absent without steps or device work).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_timeline: Option<StepTimelineInfo>,
    /// Sampled GPU metrics per device, NVTX range and gap (Nsight Systems with GPU metrics).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_metrics: Option<nvidia::GpuMetricsInfo>,
    /// Nsight Compute kernels (an ncu CSV alone, or `--ncu` beside a trace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ncu: Option<nvidia::NcuSection>,
    /// Annotation phases over the window, depth-first (see `analysis::phases`).
    pub phases: Vec<PhaseInfo>,
    /// FLOPs, bytes, achieved TFLOP/s and GB/s and MFU per step, phase and operator (see
    /// `analysis::efficiency`); absent without recorded shapes or `flops`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub efficiency: Option<mirrors::EfficiencyInfo>,
    /// Device memory over the window: allocated and reserved, the peak and what is live at it,
    /// the largest allocations, churn per step (see `analysis::memory`); absent without
    /// memory events (`profile_memory=True`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<mirrors::MemoryInfo>,
    /// A folder of per-rank traces: the per-rank table and cross-rank findings (this report
    /// is then the full report of the slowest rank, or of `--rank`). Absent for one file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranks: Option<ranks::RanksSection>,
    /// What the trace says about the workload of the window (first layer and its input shape,
    /// dtype mix: `analysis::workload`), for `diff`'s same-workload check, whichever front
    /// door made the report and whether it was saved first. Absent from reports of stallscope
    /// versions before it was added (added without a version change, docs/json-report.md):
    /// such a saved report compares as "unknown" on these checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadInfo>,
    /// Per collective kernel name over the window: calls, kernel time, message bytes per call
    /// and algorithmic bandwidth (`analysis::comms`); absent without collective kernels. The
    /// capture check's `nccl-sizes-unrecorded` limits it (`trust.figures`, figure
    /// `communication`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub communication: Vec<CommunicationRow>,
}

/// One collective kernel name's communication figures (`analysis::comms::CollectiveSize`).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct CommunicationRow {
    /// Kernel name.
    pub name: String,
    /// Calls in the window.
    pub calls: u64,
    /// Their kernel time, µs.
    pub time_us: f64,
    /// Calls that record a message size.
    pub sized_calls: u64,
    /// Mean message bytes per sized call (`null`: sizes not recorded).
    pub bytes_per_call: Option<f64>,
    /// Recorded bytes ÷ kernel time of the sized calls, GB/s (`null`: sizes not recorded).
    pub algbw_gbps: Option<f64>,
}

/// The workload facts of the window (`analysis::workload::Workload`, mirrored: same fields in
/// the same order).
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct WorkloadInfo {
    /// The first layer operator of the window with recorded shapes.
    pub first_layer: Option<String>,
    /// Its data input's shape.
    pub first_input: Option<Vec<i64>>,
    /// Layer-operator calls in the window with a recorded dtype.
    pub layer_calls: u64,
    /// Data dtype → share of those calls, largest first.
    pub dtype_mix: Vec<(String, f64)>,
}

impl From<&analysis::workload::Workload> for WorkloadInfo {
    fn from(w: &analysis::workload::Workload) -> Self {
        WorkloadInfo {
            first_layer: w.first_layer.clone(),
            first_input: w.first_input.clone(),
            layer_calls: w.layer_calls,
            dtype_mix: w.dtype_mix.clone(),
        }
    }
}

impl Report {
    /// Builds the report from the facts and the diagnosis made from them
    /// ([`crate::diagnose::diagnose`]): the report receives the diagnosis, it does not run it.
    pub fn new(trace: &Trace, a: &Analysis, diagnosis: crate::diagnose::Diagnosis) -> Report {
        let origin = trace.start();
        let rel = |t: Ns| us(t - origin);
        let bd = |b: &crate::window::steps::Breakdown| BreakdownUs {
            kernel: us(b.kernel),
            memcpy: us(b.memcpy),
            memset: us(b.memset),
            communication: us(b.communication),
            runtime: us(b.runtime),
            dataloader: us(b.dataloader),
            cpu_exec: us(b.cpu_exec),
            other: us(b.other),
        };
        let avg = &a.steps.average;
        Report {
            workload: Some(WorkloadInfo::from(&a.workload)),
            communication: a
                .communication
                .iter()
                .map(|c| CommunicationRow {
                    name: c.name.clone(),
                    calls: c.calls,
                    time_us: us(c.time),
                    sized_calls: c.sized_calls,
                    bytes_per_call: c.bytes_per_call.map(|b| b.round()),
                    algbw_gbps: c.algbw_gbps.map(|g| (g * 1000.0).round() / 1000.0),
                })
                .collect(),
            schema_version: SCHEMA_VERSION,
            generator: format!("stallscope {}", env!("CARGO_PKG_VERSION")),
            source: SourceInfo {
                path: trace.source.path.clone(),
                format: trace.source.format,
                bytes: trace.source.bytes,
                compressed_bytes: trace.source.compressed_bytes,
                events: trace.source.events,
                trace_start_us: us(origin),
                distributed: trace.distributed.as_ref().map(DistributedInfo::new),
            },
            warnings: trace
                .warnings
                .iter()
                .map(mirrors::WarningInfo::from)
                .collect(),
            verdict: diagnosis.verdict,
            verdict_class: diagnosis.verdict_class,
            findings: diagnosis
                .findings
                .iter()
                .map(mirrors::FindingInfo::from)
                .collect(),
            window: WindowInfo {
                start_us: rel(a.window.start),
                end_us: rel(a.window.end),
                steps: a.steps.steps.iter().map(|s| s.name.clone()).collect(),
                excluded: a
                    .steps
                    .dropped
                    .iter()
                    .map(|d| ExcludedStep {
                        step: d.name.clone(),
                        reason: d.reason.clone(),
                    })
                    .collect(),
                spec: a.selection.spec.to_string(),
                duration_us: us(a.selection.duration()),
                compile_us: us(a.selection.compile.total),
                compile: CompileInfo::new(a),
                focus: a.selection.focus.as_ref().map(|f| FocusInfo {
                    name: f.name.clone(),
                    matched: f.matched.clone(),
                    calls: f.calls,
                }),
                notes: a.selection.notes.clone(),
                left_out: a
                    .steps
                    .left_out
                    .iter()
                    .map(|l| LeftOutInfo {
                        what: l.what.to_string(),
                        start_us: rel(l.span.start),
                        duration_us: us(l.span.len()),
                    })
                    .collect(),
                startup: StartupInfo::new(a),
            },
            devices: a
                .devices
                .iter()
                .map(|d| DeviceInfo {
                    id: d.device,
                    name: d.name.clone(),
                    sm_count: d.sm_count,
                    memory_bytes: d.memory_bytes,
                    compute_capability: d.compute_capability.clone(),
                    utilization: d.utilization,
                    sm_efficiency: d.sm_efficiency,
                    achieved_occupancy: d.achieved_occupancy,
                    tensor_core_ratio: d.tensor_core_ratio,
                })
                .collect(),
            steps: a
                .steps
                .steps
                .iter()
                .map(|s| StepInfo {
                    name: s.name.clone(),
                    start_us: rel(s.span.start),
                    duration_us: us(s.span.len()),
                    breakdown_us: bd(&s.breakdown),
                    phase: s.phase,
                })
                .collect(),
            steps_found: StepsFoundInfo::new(&a.steps, &a.iteration_kinds),
            trust: TrustInfo::new(trace, a),
            graphs: compiled::GraphsInfo::new(&a.graphs),
            compiled: compiled::CompiledInfo::new(&a.compiled),
            breakdown_us: BreakdownUs {
                kernel: usf(avg.kernel),
                memcpy: usf(avg.memcpy),
                memset: usf(avg.memset),
                communication: usf(avg.communication),
                runtime: usf(avg.runtime),
                dataloader: usf(avg.dataloader),
                cpu_exec: usf(avg.cpu_exec),
                other: usf(avg.other),
            },
            step_time_us: usf(avg.total),
            efficiency: a.efficiency.as_ref().map(mirrors::EfficiencyInfo::from),
            memory: a.memory.as_ref().map(mirrors::MemoryInfo::from),
            gpu_timeline: a
                .timeline
                .iter()
                .map(|t| TimelineInfo {
                    device: t.device,
                    total_us: us(t.total),
                    computation_us: us(t.computation),
                    exposed_comm_us: us(t.exposed_comm),
                    exposed_memcpy_us: us(t.exposed_memcpy),
                    idle_us: us(t.idle),
                })
                .collect(),
            kernels: a
                .kernels
                .iter()
                .chain(&a.copies)
                .map(KernelInfo::new)
                .collect(),
            ops: a
                .ops
                .iter()
                .map(|o| OpInfo {
                    name: o.name.clone(),
                    calls: o.calls,
                    host_self_us: us(o.host_self),
                    host_total_us: us(o.host_total),
                    device_self_us: us(o.device_self),
                    device_total_us: us(o.device_total),
                })
                .collect(),
            step_timeline: a
                .step_timeline
                .as_ref()
                .map(|t| StepTimelineInfo::new(trace, t, origin)),
            gpu_metrics: a
                .gpu_metrics
                .as_ref()
                .map(|m| nvidia::GpuMetricsInfo::new(m, origin)),
            ncu: a.ncu.as_ref().map(|n| nvidia::NcuSection::new(n, origin)),
            phases: a.phases.phases.iter().map(PhaseInfo::new).collect(),
            ranks: None,
        }
    }
}

/// The representative step's device timeline (`analysis::step_timeline`), with names moved
/// to a table that events refer to by index.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct StepTimelineInfo {
    /// Step name.
    pub step: String,
    /// Start, µs since `source.trace_start_us`.
    pub start_us: f64,
    /// Duration, µs.
    pub duration_us: f64,
    /// Events over all devices.
    pub events: u64,
    /// Blocks listed over all devices (fewer than `events` when close events were merged).
    pub blocks: u64,
    /// Names referred to by `name` indexes below.
    pub names: Vec<String>,
    /// Devices with work in the step.
    pub devices: Vec<StepDeviceInfo>,
    /// Host synchronization calls in the step.
    pub host_syncs: Vec<SyncInfo>,
}

/// One device of [`StepTimelineInfo`].
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct StepDeviceInfo {
    /// Device id.
    pub device: i64,
    /// Events in the step.
    pub events: u64,
    /// Union of the device's work in the step, µs.
    pub busy_us: f64,
    /// Step duration minus busy, µs.
    pub idle_us: f64,
    /// Number of idle gaps.
    pub gap_count: u64,
    /// The longest idle gaps, in time order.
    pub gaps: Vec<SpanInfo>,
    /// Device-side sync records.
    pub syncs: Vec<SyncInfo>,
    /// One lane per stream.
    pub lanes: Vec<LaneInfo>,
}

/// A stream lane.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct LaneInfo {
    /// Stream id.
    pub stream: i64,
    /// Blocks in time order.
    pub events: Vec<BlockInfo>,
}

/// One event, or several consecutive events merged by the cap (`count > 1`).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct BlockInfo {
    /// Start, µs since `source.trace_start_us`.
    pub start_us: f64,
    /// Duration, µs.
    pub dur_us: f64,
    /// Index into `names` (for a merged block: its longest event).
    pub name: u32,
    /// `kernel`, `memcpy` or `memset`.
    #[serde(deserialize_with = "crate::text::static_words::one")]
    pub kind: crate::text::static_words::Word,
    /// Kernel category (for a merged block: the one with most time).
    pub category: crate::model::classify::KernelCategory,
    /// Events merged (absent for a single event).
    #[serde(skip_serializing_if = "is_one", default = "one")]
    pub count: u32,
    /// Sum of the merged events' durations, µs (absent for a single event).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_us: Option<f64>,
}

fn is_one(v: &u32) -> bool {
    *v == 1
}

/// What an absent `count` means (reading a saved report back).
fn one() -> u32 {
    1
}

/// A time span.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct SpanInfo {
    /// Start, µs since `source.trace_start_us`.
    pub start_us: f64,
    /// Duration, µs.
    pub dur_us: f64,
}

/// A synchronization record or call.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct SyncInfo {
    /// Start, µs since `source.trace_start_us`.
    pub start_us: f64,
    /// Duration, µs.
    pub dur_us: f64,
    /// Index into `names`.
    pub name: u32,
}

impl StepTimelineInfo {
    fn new(trace: &Trace, t: &analysis::step_timeline::StepTimeline, origin: Ns) -> Self {
        let mut names: Vec<String> = Vec::new();
        let mut index: std::collections::HashMap<crate::model::NameId, u32> = Default::default();
        let mut name = |id| {
            *index.entry(id).or_insert_with(|| {
                names.push(trace.name(id).to_string());
                (names.len() - 1) as u32
            })
        };
        let rel = |t: Ns| us(t - origin);
        let mut sync = |s: &analysis::step_timeline::SyncMark| SyncInfo {
            start_us: rel(s.start),
            dur_us: us(s.dur),
            name: name(s.name),
        };
        let host_syncs = t.host_syncs.iter().map(&mut sync).collect();
        let mut devices = Vec::new();
        for d in &t.devices {
            let syncs = d.syncs.iter().map(&mut sync).collect();
            devices.push((d, syncs));
        }
        let devices = devices
            .into_iter()
            .map(|(d, syncs)| StepDeviceInfo {
                device: d.device,
                events: d.events,
                busy_us: us(d.busy),
                idle_us: us(d.idle),
                gap_count: d.gap_count,
                gaps: d
                    .gaps
                    .iter()
                    .map(|g| SpanInfo {
                        start_us: rel(g.start),
                        dur_us: us(g.len()),
                    })
                    .collect(),
                syncs,
                lanes: d
                    .lanes
                    .iter()
                    .map(|l| LaneInfo {
                        stream: l.stream,
                        events: l
                            .blocks
                            .iter()
                            .map(|b| BlockInfo {
                                start_us: rel(b.start),
                                dur_us: us(b.dur),
                                name: name(b.name),
                                kind: match b.kind {
                                    crate::model::GpuKind::Memcpy => "memcpy",
                                    crate::model::GpuKind::Memset => "memset",
                                    _ => "kernel",
                                },
                                category: b.category,
                                count: b.count,
                                busy_us: (b.count > 1).then(|| us(b.busy)),
                            })
                            .collect(),
                    })
                    .collect(),
            })
            .collect();
        StepTimelineInfo {
            step: t.step.clone(),
            start_us: rel(t.span.start),
            duration_us: us(t.span.len()),
            events: t.events,
            blocks: t.blocks,
            names,
            devices,
            host_syncs,
        }
    }
}

/// Display settings shared by the renderers.
#[derive(Debug, Clone)]
pub struct RenderOptions {
    /// Rows of the kernel and op tables (0 = all).
    pub top: usize,
    /// Colour output.
    pub color: bool,
    /// Terminal width to fit.
    pub width: usize,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            top: 10,
            color: false,
            width: 100,
        }
    }
}

/// An output format.
pub trait Renderer {
    /// Writes the report.
    fn render(
        &self,
        report: &Report,
        opts: &RenderOptions,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()>;
}

/// Compile/autotune work of the trace (`window::CompileWork`).
#[derive(Debug, Clone, Serialize, serde::Deserialize, Default)]
pub struct CompileInfo {
    /// Compile spans not nested in another one on the same thread.
    pub count: u64,
    /// Steps whose span overlaps compile work.
    pub steps: Vec<String>,
    /// Compile time outside every step, µs.
    pub outside_steps_us: f64,
    /// Per kind (`dynamo`, `inductor`, `autotune`, `cudnn_benchmark`, `first_run`, `jit`,
    /// `module_load`).
    pub by_kind: Vec<CompileKindInfo>,
}

/// Compile work of one kind.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct CompileKindInfo {
    /// Kind.
    pub kind: crate::window::CompileKind,
    /// Union of its spans, µs.
    pub us: f64,
    /// Its spans not nested in another of the same kind.
    pub count: u64,
}

impl CompileInfo {
    fn new(a: &Analysis) -> CompileInfo {
        let c = &a.selection.compile;
        CompileInfo {
            count: c.count,
            steps: c.steps.iter().map(|s| s.name.clone()).collect(),
            outside_steps_us: us(c.outside_steps),
            by_kind: c
                .by_kind
                .iter()
                .map(|k| CompileKindInfo {
                    kind: k.kind,
                    us: us(k.total),
                    count: k.count,
                })
                .collect(),
        }
    }
}

/// What a `--focus` matched.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct FocusInfo {
    /// The name asked for.
    pub name: String,
    /// Annotation names that matched.
    pub matched: Vec<String>,
    /// Calls counted.
    pub calls: u64,
}

/// Device time of a phase by kind, µs.
#[derive(Debug, Clone, Copy, Serialize, serde::Deserialize)]
pub struct PhaseBreakdownUs {
    /// Compute kernels.
    pub kernel: f64,
    /// Communication kernels.
    pub communication: f64,
    /// Copies.
    pub memcpy: f64,
    /// Fills.
    pub memset: f64,
}

/// A kernel of a phase.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct PhaseKernelInfo {
    /// Name.
    pub name: String,
    /// Activities.
    pub calls: u64,
    /// Σ duration, µs.
    pub total_us: f64,
}

/// One phase (definitions in `analysis::phases` and docs/json-report.md).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct PhaseInfo {
    /// Names from the root joined by `/`.
    pub path: String,
    /// Last name.
    pub name: String,
    /// 0 for roots.
    pub depth: u32,
    /// Calls in the window.
    pub calls: u64,
    /// Wall time of the calls inside the window, µs.
    pub cpu_total_us: f64,
    /// Per call, µs.
    pub cpu_mean_us: f64,
    /// Device activities (kernels, copies, fills) launched inside, children included.
    pub kernel_count: u64,
    /// Σ of their durations, µs.
    pub gpu_us: f64,
    /// Device activities launched directly inside (not in a child).
    pub self_kernel_count: u64,
    /// Σ of their durations, µs.
    pub self_gpu_us: f64,
    /// Union of first-to-last device activity per call, within the window, µs.
    pub gpu_span_us: f64,
    /// `gpu_span_us` ÷ the window's counted time.
    pub share: f64,
    /// `gpu_us` ÷ the device time of the window.
    pub gpu_share: f64,
    /// `gpu_us` by kind.
    pub breakdown_us: PhaseBreakdownUs,
    /// Backward device activities (autograd), children included.
    pub backward_kernel_count: u64,
    /// Their time, µs.
    pub backward_gpu_us: f64,
    /// Top 5 kernels by time.
    pub top_kernels: Vec<PhaseKernelInfo>,
}

impl PhaseInfo {
    fn new(p: &analysis::phases::Phase) -> PhaseInfo {
        PhaseInfo {
            path: p.path.clone(),
            name: p.name.clone(),
            depth: p.depth,
            calls: p.calls,
            cpu_total_us: us(p.cpu_total),
            cpu_mean_us: usf(p.cpu_mean),
            kernel_count: p.kernel_count,
            gpu_us: us(p.gpu_time),
            self_kernel_count: p.self_kernel_count,
            self_gpu_us: us(p.self_gpu_time),
            gpu_span_us: us(p.gpu_span),
            share: p.share,
            gpu_share: p.gpu_share,
            breakdown_us: PhaseBreakdownUs {
                kernel: us(p.breakdown.kernel),
                communication: us(p.breakdown.communication),
                memcpy: us(p.breakdown.memcpy),
                memset: us(p.breakdown.memset),
            },
            backward_kernel_count: p.backward_kernel_count,
            backward_gpu_us: us(p.backward_gpu_time),
            top_kernels: p
                .top_kernels
                .iter()
                .map(|k| PhaseKernelInfo {
                    name: k.name.clone(),
                    calls: k.calls,
                    total_us: us(k.total),
                })
                .collect(),
        }
    }
}

/// The JSON of `stallscope memory` on torch's memory-timeline export: the peak, when, and the
/// bytes per category at it (`ingest::torch_memory`).
pub fn memory_export_json(
    path: &str,
    t: &crate::ingest::torch_memory::CategoryTimeline,
) -> serde_json::Value {
    use crate::ingest::torch_memory::CATEGORIES;
    let peak = t.peak();
    let at = |i: usize| -> serde_json::Map<String, serde_json::Value> {
        CATEGORIES
            .iter()
            .zip(t.sizes[i])
            .map(|(k, v)| (k.to_string(), v.into()))
            .collect()
    };
    serde_json::json!({
        "schema_version": SCHEMA_VERSION,
        "generator": format!("stallscope {}", env!("CARGO_PKG_VERSION")),
        "source": {"path": path, "format": "torch_memory_timeline", "entries": t.entries},
        "timestamps": t.times.len(),
        "peak_bytes": peak.map(|i| t.sizes[i].iter().sum::<i64>()),
        "peak_at_ns": peak.map(|i| t.times[i]),
        "peak_index": peak,
        "categories_at_peak": peak.map(at),
        "categories_at_end": (!t.sizes.is_empty()).then(|| at(t.sizes.len() - 1)),
    })
}
