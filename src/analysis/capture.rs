//! The capture check: what in a capture limits what its numbers mean, each with its effect.
//!
//! Every report carries it (JSON `trust`). Each [`TrustIssue`] names a property of the
//! capture, the evidence, and which numbers it makes unreliable. The checks:
//!
//! | id | when | effect |
//! |---|---|---|
//! | `clock-offset-corrected` | the loader shifted a device's timestamps because its launch flows anchor a clock offset ([`crate::model::clock`]: every linked activity starts over 1 ms after its call returned, or one over 1 ms before its call began, and at least 3 launches that reached an idle device agree on the delay within 50 µs) | host-device numbers use the corrected times (exact to within a launch latency); nothing is marked unreliable |
//! | `clock-offset` | on a device with at least 10 linked activities, every one of them starts more than 1 ms after that launch call returned (the smallest such delay is the offset; a GPU that ever drains its queue starts some kernel within µs of its launch), or some activity starts more than 1 ms before its launch call began, and the offset was not corrected (the launch flows do not anchor it, or `--no-clock-correction`) | host-device waits and the step spans extended to device work are unreliable (`host_device_timing`); device-only numbers stand |
//! | `graph-replays-without-kernels` | `cudaGraphLaunch`/`hipGraphLaunch` calls none of whose kernels are in the trace | busy time of those replays is unknown; per-kernel detail missing |
//! | `dropped-records` | the reader skipped events or found the file truncated | totals are lower bounds |
//! | `steps-cut` | steps dropped because the capture stopped before their device work | those steps are left out |
//! | `mostly-compile` | torch.compile/autotune work covers at least half of the capture's span | the capture shows warm-up, not the steady state |
//! | `cpu-only` | no kernel, copy or fill | nothing about the GPU can be said |
//! | `missing-launch-flows` | over 10 % of device activities have no link to a launch call | their host-side cause is unknown; they count by start time |
//! | `zero-timestamps` | the reader left out events written with `ts` 0 and `dur` 0 (torch 2.12 export defect, pytorch #188481) | every figure covers only the events with real times; totals are lower bounds; idle time is not blamed on the host or the device (`device_records`) |
//! | `zero-duration-activities` | kernels, copies or fills recorded with `dur` 0 (producer defect, e.g. a 4 MB host-to-device copy with dur 0, TraceLens #610) in a trace with sub-µs device times; with integer-µs times (where dur 0 means under 1 µs) only copies and fills of at least [`ZERO_DUR_BYTES`] | they add no time; copy bandwidth leaves them out |
//! | `launches-without-records` | at least [`UNRECORDED_MIN`] kernel/copy/fill launch calls, and over 1 % of them, have no device record although later launches have one (launches inside a CUDA/HIP graph capture, which run nothing, and calls shorter than [`NOOP_CALL`], which enqueue nothing, do not count) | device records were lost (nsys/CUPTI buffers): the device's idle time is not idle, so idle time is not blamed on the host or the device (`device_records`) |
//! | `unrecorded-device-work` | a blocking sync or copy waits at least [`UNRECORDED_WAIT`] while no device activity is recorded, or an activity starts at least that long after its launch returned on a device with nothing recorded in between (not when a clock offset explains it) | the device ran work the trace does not hold (launched before the capture, or lost): same effect (`device_records`) |
//! | `producer-lost-events` | the producer itself reports lost events (nsys `DIAGNOSTIC_EVENT`: "Some CUPTI events might be missing", "Not all CUDA events might have been collected") | same effect (`device_records`) |
//! | `duplicate-records` | the nsys reader met records written twice under one correlation id: a runtime call's versioned entry point inside the call (`cudaMemcpy_v3020` in `cudaMemcpy`, nsys 2022 exports), or copies/fills with the same stream, start and duration | each counted once (host syncs and launches are not counted twice); nothing is unreliable |
//! | `records-cut` | the steps were cut where the device records stop ([`crate::window::records`]: most launches from some moment on have no device record, at most 1 % before it) because enough complete steady state remains before it ([`crate::window::steps`], *Steps* 6) | the part after is left out of every figure and listed in the window; the issues of lost records above (`launches-without-records`, `zero-timestamps`, `producer-lost-events`, `tracer-event-cap`) then limit nothing |
//! | `nccl-sizes-unrecorded` | collective kernels of the window whose message size is recorded neither on them nor on their `record_param_comms` (`In msg nelems`/`Out msg nelems`/`dtype`; Kineto wrote none on GPU collective kernels before April 2026, kineto #1354) | NCCL sizes not recorded: bandwidth unknown (`comm_sizes`: the communication figure's bytes and bandwidth cover only the calls with a size) |
//! | `tracer-event-cap` | an AMD trace whose device activities, or HIP calls plus device activities, number exactly 1,000,000 or 5,000,000: roctracer's event cap (kineto #1081, #1114), past which events are dropped silently | the capture is truncated: totals are lower bounds (`totals`, `device_records`) |
//!
//! Each issue has a level ([`TrustIssue::level`]), from the classes it makes unreliable: an
//! issue that limits only named figures ([`FIGURE_ONLY_CLASSES`]: `nccl-sizes-unrecorded`)
//! is of level `figures` — its note prints beside those figures and the verdict stands; an
//! issue with another class is of level `verdict` — it limits the answer itself
//! ([`CaptureCheck::ok`] is false, and the verdict says so where it rests on what is
//! missing); an issue without any (`clock-offset-corrected`, `duplicate-records`,
//! `steps-cut`, `zero-duration-activities`, `records-cut`, and the lost-record issues once
//! `records-cut` left their part out) is of level `none`, listed for the record.

use serde::Serialize;

use crate::model::{clock, CpuKind, GpuKind, Ns, Trace};
use crate::window::records::{self, RecordsStop};

/// Threshold of the clock-offset check, ns ([`clock::MIN_OFFSET`]).
pub const CLOCK_OFFSET_MIN: Ns = clock::MIN_OFFSET;

/// Linked activities a device needs before the clock-offset check judges it
/// ([`clock::MIN_ACTIVITIES`]).
pub const CLOCK_OFFSET_MIN_ACTIVITIES: u64 = clock::MIN_ACTIVITIES;

/// One property of the capture that limits its numbers.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct TrustIssue {
    /// Stable id (see the module docs).
    #[serde(deserialize_with = "crate::text::static_words::one")]
    pub id: crate::text::static_words::Word,
    /// What was found, with figures.
    pub finding: String,
    /// What it does to the numbers.
    pub effect: String,
    /// Classes of numbers it makes unreliable (`host_device_timing`, `device_busy`,
    /// `totals`, `steady_state`, `gpu`, `host_attribution`, `device_records`).
    #[serde(deserialize_with = "crate::text::static_words::vec")]
    pub unreliable: Vec<&'static str>,
}

/// The capture check of one trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct CaptureCheck {
    /// The issues found (none: nothing limits the numbers).
    pub issues: Vec<TrustIssue>,
    /// Device clock offset found by `clock-offset` (left in the times) or corrected
    /// (`clock-offset-corrected`), ns, the largest in size, never negative (0 when none).
    pub clock_offset: Ns,
}

/// The classes of numbers ([`TrustIssue::unreliable`]) that limit only the figures resting on
/// them ([`FIGURE_LIMITS`]), never the verdict: an issue whose classes are all among these is
/// of level [`LEVEL_FIGURES`].
pub const FIGURE_ONLY_CLASSES: [&str; 1] = ["comm_sizes"];

/// Level of an issue that limits the verdict itself (device records missing, truncation, a
/// clock offset, warm-up, no device work, …): `trust.ok` is false and the verdict says so
/// where it rests on what the issue limits.
pub const LEVEL_VERDICT: &str = "verdict";

/// Level of an issue that limits only the figures named beside it ([`FIGURE_LIMITS`]: e.g.
/// `nccl-sizes-unrecorded`, the communication bandwidth): the verdict stands.
pub const LEVEL_FIGURES: &str = "figures";

/// Level of an issue that limits no number: it is listed for the record (a corrected clock,
/// duplicates counted once, steps or a tail left out of the window).
pub const LEVEL_NONE: &str = "none";

impl TrustIssue {
    /// What the issue limits: [`LEVEL_VERDICT`] when one of its unreliable classes is not in
    /// [`FIGURE_ONLY_CLASSES`], [`LEVEL_FIGURES`] when all are, [`LEVEL_NONE`] without any.
    pub fn level(&self) -> &'static str {
        if self.unreliable.is_empty() {
            LEVEL_NONE
        } else if self
            .unreliable
            .iter()
            .all(|c| FIGURE_ONLY_CLASSES.contains(c))
        {
            LEVEL_FIGURES
        } else {
            LEVEL_VERDICT
        }
    }
}

impl CaptureCheck {
    /// True when no issue limits the verdict ([`TrustIssue::level`]): issues that limit only
    /// named figures, or nothing, leave the answer standing (JSON `trust.ok`).
    pub fn ok(&self) -> bool {
        self.issues.iter().all(|i| i.level() != LEVEL_VERDICT)
    }

    /// True when an issue makes this class of numbers unreliable.
    pub fn unreliable(&self, class: &str) -> bool {
        self.issues.iter().any(|i| i.unreliable.contains(&class))
    }

    /// The limits of each printed figure ([`FIGURE_LIMITS`]): for every figure some issue
    /// limits, the issues and what they do to it.
    pub fn figure_limits(&self) -> Vec<FigureLimit> {
        FIGURE_LIMITS
            .iter()
            .filter_map(|(figure, classes)| {
                let hit = |i: &&TrustIssue| i.unreliable.iter().any(|c| classes.contains(c));
                let issues: Vec<&TrustIssue> = self.issues.iter().filter(hit).collect();
                if issues.is_empty() {
                    return None;
                }
                let mut what: Vec<&str> = Vec::new();
                for i in &issues {
                    for c in i.unreliable.iter().filter(|c| classes.contains(c)) {
                        let w = class_effect(c);
                        if !what.contains(&w) {
                            what.push(w);
                        }
                    }
                }
                let ids: Vec<&'static str> = issues.iter().map(|i| i.id).collect();
                Some(FigureLimit {
                    figure,
                    note: format!(
                        "limited by the capture check ({}): {}",
                        ids.join(", "),
                        what.join("; ")
                    ),
                    issues: ids,
                })
            })
            .collect()
    }
}

/// The printed figures, by report section, and the classes of numbers
/// ([`TrustIssue::unreliable`]) each one rests on: an issue that makes one of them unreliable
/// is named beside the figure wherever it prints ([`CaptureCheck::figure_limits`]).
///
/// | figure | section | classes |
/// |---|---|---|
/// | `gpu_summary` | the GPU summary's kernel utilization | `device_busy`, `totals`, `device_records`, `gpu` |
/// | `gpu_timeline` | the GPU timeline's busy and idle split | `device_busy`, `totals`, `device_records`, `gpu` |
/// | `steps` | the step breakdown and step times | `device_busy`, `totals`, `device_records`, `host_device_timing`, `steady_state` |
/// | `kernels` | the kernel table's totals and shares | `device_busy`, `totals`, `gpu` |
/// | `efficiency` | MFU, TFLOP/s and GB/s | `device_busy`, `totals`, `steady_state` |
/// | `communication` | the collectives' bytes per call and bandwidth | `comm_sizes` |
pub const FIGURE_LIMITS: [(&str, &[&str]); 6] = [
    (
        "gpu_summary",
        &["device_busy", "totals", "device_records", "gpu"],
    ),
    (
        "gpu_timeline",
        &["device_busy", "totals", "device_records", "gpu"],
    ),
    (
        "steps",
        &[
            "device_busy",
            "totals",
            "device_records",
            "host_device_timing",
            "steady_state",
        ],
    ),
    ("kernels", &["device_busy", "totals", "gpu"]),
    ("efficiency", &["device_busy", "totals", "steady_state"]),
    ("communication", &["comm_sizes"]),
];

/// What an unreliable class of numbers does to what rests on it (a printed figure, the
/// verdict, a finding's recoverable time), in a few words.
pub fn class_effect(class: &str) -> &'static str {
    match class {
        "device_busy" => "graph replays without kernels are missing from busy time",
        "totals" => "totals are lower bounds",
        "device_records" => "device records are missing, so idle time is not all idle",
        "host_device_timing" => "host and device times do not line up (device clock offset)",
        "host_attribution" => "device work without a launch link has no known host cause",
        "steady_state" => "the capture shows warm-up, not the steady state",
        "gpu" => "no device activity was recorded",
        "comm_sizes" => "NCCL sizes not recorded: bandwidth unknown",
        _ => "see the capture check",
    }
}

/// A printed figure limited by capture-check issues (see [`FIGURE_LIMITS`]).
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct FigureLimit {
    /// The figure ([`FIGURE_LIMITS`]: `gpu_summary`, `gpu_timeline`, `steps`, `kernels`,
    /// `efficiency`).
    #[serde(deserialize_with = "crate::text::static_words::one")]
    pub figure: crate::text::static_words::Word,
    /// The ids of the issues that limit it.
    #[serde(deserialize_with = "crate::text::static_words::vec")]
    pub issues: Vec<&'static str>,
    /// The note printed beside it: `limited by the capture check (ids): what they do`.
    pub note: String,
}

fn is_graph_launch(name: &str) -> bool {
    name.contains("GraphLaunch")
}

/// Launch calls without a device record, before the last launch that has one, from which
/// `launches-without-records` is raised (and over 1 % of the launch calls).
pub const UNRECORDED_MIN: u64 = 10;

/// In a trace with integer-µs device times, a copy or fill of at least this many bytes
/// recorded with `dur` 0 is a defect (8 MiB take over 1.6 µs at 5 TB/s); smaller ones may
/// just have lasted under 1 µs.
pub const ZERO_DUR_BYTES: u64 = 8 << 20;

/// Launch calls shorter than this (ns) enqueued nothing: they are not expected to have a
/// device record ([`records::NOOP_CALL`]).
pub const NOOP_CALL: Ns = records::NOOP_CALL;

/// The wait from which a blocking call, or an activity's start after its launch, proves
/// device work the trace does not hold when nothing is recorded on the device (ns, 1 ms).
pub const UNRECORDED_WAIT: Ns = 1_000_000;

/// roctracer's event caps (kineto #1081: 1 M by default, #1114: raised to 5 M).
pub const TRACER_CAPS: [u64; 2] = [1_000_000, 5_000_000];

fn ms(ns: Ns) -> String {
    format!("{:.2} ms", ns as f64 / 1e6)
}

/// What the capture check reads of a trace's events, found once by the analysis
/// ([`crate::analysis::Analysis::capture`]) so that the report and the verdict check the
/// capture from facts, not events.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CaptureFacts {
    /// Device activities (kernels, copies, fills).
    activities: usize,
    /// Activities without a launch call.
    unlinked: usize,
    /// What the launch flows say about each device's clock ([`clock::estimate`]).
    clock: Vec<clock::ClockEstimate>,
    /// CUDA/HIP graph launch calls, and those none of whose kernels is in the trace.
    replays: u64,
    empty: u64,
    /// [`Trace::bounds`].
    bounds: (Ns, Ns),
    /// Activities of no duration by kind (kernel, copy, fill) and the bytes they move (on a
    /// trace with integer-µs device times, only copies and fills of [`ZERO_DUR_BYTES`] and
    /// more).
    zero: [u64; 3],
    zero_bytes: u64,
    /// Activities that start [`UNRECORDED_WAIT`] or more after their launch returned on a
    /// device with nothing recorded in between, and their total delay.
    late: u64,
    late_wait: Ns,
    /// Kernel, copy and fill launch calls (outside graph captures, not no-ops).
    launches: [u64; 3],
    /// Of those, the ones without a device record before the last launch that has one, and
    /// the start of the first of them.
    unrecorded: [u64; 3],
    first_unrecorded: Ns,
    /// Blocking sync or copy calls that wait [`UNRECORDED_WAIT`] or more while no device
    /// activity is recorded, and their total wait.
    waits: u64,
    waited: Ns,
    /// Runtime and driver calls.
    calls: u64,
    /// Collective kernels of the window, and those whose message size is not recorded
    /// ([`crate::analysis::comms`]), set by the analysis.
    pub collectives: u64,
    /// See [`CaptureFacts::collectives`].
    pub unsized_collectives: u64,
    /// Where the steps were cut because the device records stop there
    /// ([`crate::window::steps::StepAnalysis::records_cut`]), set by the analysis.
    pub records_cut: Option<RecordsStop>,
}

impl CaptureFacts {
    /// The facts of a trace.
    pub fn of(trace: &Trace) -> CaptureFacts {
        Self::of_with(trace, &records::launches(trace).calls)
    }

    /// [`CaptureFacts::of`] with the trace's kernel, copy and fill launches found already
    /// ([`records::launches`]).
    pub fn of_with(trace: &Trace, launches: &[records::Launch]) -> CaptureFacts {
        let mut f = CaptureFacts {
            clock: Vec::new(),
            bounds: trace.bounds(),
            first_unrecorded: Ns::MAX,
            ..Default::default()
        };
        // launches that reached a device, device activities without a launch, activities of
        // no duration, and activities that started long after their launch on an idle device
        // (launch calls with an activity: also the clock estimate's first activity of a call)
        let mut launched_graph = crate::model::fast::Bits::new(trace.cpu.len());
        // the clock estimate in the same pass ([`clock::estimate`]: one look at each call)
        let mut clock_est = clock::Estimator::default();
        // whether the device times are finer than 1 µs (integer-µs traces round what lasts
        // under 1 µs to 0: no defect there, but for copies and fills too large for that)
        let mut fine = false;
        let (mut zero_all, mut zero_all_bytes) = ([0u64; 3], 0u64);
        // per device: the latest end of its activities so far (few devices: a short list)
        let mut last_end: Vec<(i32, Ns)> = Vec::new();
        // the union of device activities (in start order), for the blocking calls below
        let mut busy: Vec<(Ns, Ns)> = Vec::new();
        for (g, call) in trace.gpu_with_launches().filter(|(g, _)| g.is_activity()) {
            f.activities += 1;

            match busy.last_mut() {
                Some(last) if g.start <= last.1 => last.1 = last.1.max(g.end()),
                _ => busy.push((g.start, g.end())),
            }
            fine |= g.start % 1000 != 0 || g.dur % 1000 != 0;
            if g.dur == 0 {
                let k = match g.kind {
                    GpuKind::Kernel => 0,
                    GpuKind::Memcpy => 1,
                    _ => 2,
                };
                zero_all[k] += 1;
                zero_all_bytes += g.bytes;
                if g.bytes >= ZERO_DUR_BYTES {
                    f.zero[k] += 1;
                    f.zero_bytes += g.bytes;
                }
            }
            let k = match last_end.iter().position(|(d, _)| *d == g.device) {
                Some(k) => k,
                None => {
                    last_end.push((g.device, Ns::MIN));
                    last_end.len() - 1
                }
            };
            let prev = &mut last_end[k].1;
            if let Some(call) = call {
                let first = !launched_graph.replace(g.launch as usize);
                clock_est.add(g, Some((call, first)));
                // nothing recorded on the device from the launch's return to the start: the
                // device ran something the trace does not hold (or its clock is offset)
                let returned = call.end();
                if g.start - returned >= UNRECORDED_WAIT && *prev <= returned {
                    f.late += 1;
                    f.late_wait += g.start - returned;
                }
            } else {
                f.unlinked += 1;
                clock_est.add(g, None);
            }
            *prev = (*prev).max(g.end());
        }
        if fine {
            (f.zero, f.zero_bytes) = (zero_all, zero_all_bytes);
        }
        f.clock = clock_est.finish();

        // graph replays whose kernels are not in the trace; kernel/copy/fill launches without
        // a device record (outside graph captures); blocking calls that wait while nothing is
        // recorded on any device (after the first activity: the first CUDA call may wait for
        // the context instead)
        let mut graph_memo = crate::model::fast::NameMemo::new(trace, is_graph_launch);
        let mut sync_memo = crate::model::fast::NameMemo::new(trace, |n| {
            crate::analysis::host::sync_calls::sync_kind(n).is_some()
        });
        let first_busy = busy.first().map(|b| b.0).unwrap_or(Ns::MAX);
        for (i, e) in trace.cpu.iter().enumerate() {
            if !matches!(
                e.kind,
                CpuKind::Runtime | CpuKind::Driver | CpuKind::OtherRuntime
            ) {
                continue;
            }
            if e.kind != CpuKind::OtherRuntime {
                f.calls += 1;
                if e.dur >= UNRECORDED_WAIT && e.start > first_busy && sync_memo.get(e.name) {
                    // the first busy interval ending after the call starts must start after
                    // it ends
                    let k = busy.partition_point(|b| b.1 <= e.start);
                    if busy.get(k).is_none_or(|b| b.0 >= e.end()) {
                        f.waits += 1;
                        f.waited += e.dur;
                    }
                }
            }
            if graph_memo.get(e.name) {
                f.replays += 1;
                if !launched_graph.get(i) {
                    f.empty += 1;
                }
                continue;
            }
        }
        // kernel/copy/fill launches without a device record, before the last launch that has
        // one (those after it may have been in flight when the capture stopped)
        let last_recorded = launches
            .iter()
            .rev()
            .find(|l| l.recorded)
            .map_or(Ns::MIN, |l| l.start);
        for l in launches {
            let c = l.class as usize - 1;
            f.launches[c] += 1;
            if !l.recorded && l.start < last_recorded {
                f.unrecorded[c] += 1;
                f.first_unrecorded = f.first_unrecorded.min(l.start);
            }
        }
        f
    }
}

/// Checks a trace. `steps_cut` is the number of steps dropped by the tail rule, `compile`
/// the torch.compile/autotune time of the capture.
pub fn check(trace: &Trace, steps_cut: usize, compile: Ns) -> CaptureCheck {
    check_with(trace, &CaptureFacts::of(trace), steps_cut, compile)
}

/// The capture check of an analysis: [`check_with`] over its window's steps cut at the
/// profiler's stop ([`crate::window::Window::steps_cut_at_stop`]) and the capture's compile
/// time. The one call the report and the diagnosis make, so that both read the same issues.
pub fn check_window(
    trace: &Trace,
    facts: &CaptureFacts,
    window: &crate::window::Window,
) -> CaptureCheck {
    check_with(
        trace,
        facts,
        window.steps_cut_at_stop(),
        window.compile.total,
    )
}

/// The clock offset: corrected by the loader (`trace.clock_corrections`), or found in the
/// times as recorded (`facts.clock`).
fn clock_issues(trace: &Trace, facts: &CaptureFacts, out: &mut CaptureCheck) {
    for c in &trace.clock_corrections {
        out.clock_offset = out.clock_offset.max(c.offset.abs());
        let (way, when) = if c.offset > 0 {
            ("back", "after")
        } else {
            ("forward", "before")
        };
        out.issues.push(TrustIssue {
            id: "clock-offset-corrected",
            finding: format!(
                "device {}: clock shifted {way} by {}, anchored by {} launches that reached an \
                 idle device and started that long {when} their call (of {} linked activities)",
                c.device,
                ms(c.offset.abs()),
                c.anchors,
                c.activities
            ),
            effect: "the device's times were corrected before any number was computed: \
                     host-device waits, step spans and idle time use them (exact to within a \
                     launch latency); --no-clock-correction shows the times as recorded"
                .into(),
            unreliable: vec![],
        });
    }
    for e in facts.clock.iter().filter(|e| e.suspected()) {
        let (found, why) = if e.ahead() {
            (
                e.min_delay,
                format!(
                    "device {}: every one of its {} linked activities starts at least {} after \
                     its launch call returned",
                    e.device,
                    e.activities,
                    ms(e.min_delay)
                ),
            )
        } else {
            (
                e.max_lead,
                format!(
                    "device {}: an activity starts {} before its launch call began",
                    e.device,
                    ms(e.max_lead)
                ),
            )
        };
        out.clock_offset = out.clock_offset.max(found);
        let not_corrected = match e.offset {
            Some(x) => format!(
                "; {} launches that reached an idle device anchor an offset of {} (corrected \
                 unless --no-clock-correction)",
                e.at_floor,
                ms(x.abs())
            ),
            None => format!(
                "; not corrected: {} of the {} launches that reached an idle device (after \
                 {} µs idle) agree on the delay, {} needed",
                e.at_floor,
                e.anchors,
                clock::IDLE_MIN / 1000,
                clock::ANCHORS_MIN
            ),
        };
        let effect = if e.ahead() {
            "the device clock is likely offset from the host's (or the host runs far ahead of a \
             GPU that never drains its queue): host-device waits (launch-bound, idle time \
             blamed on the host), step spans extended to device work and per-step device \
             stalls are unreliable; kernel times and GPU busy time stand"
        } else {
            "the device clock is behind the host's: host-device waits and per-step device \
             stalls are unreliable; kernel times and GPU busy time stand"
        };
        out.issues.push(TrustIssue {
            id: "clock-offset",
            finding: why + &not_corrected,
            effect: effect.into(),
            unreliable: vec!["host_device_timing"],
        });
    }
}

/// [`check`] over the trace's [`CaptureFacts`] (found by [`CaptureFacts::of`]); reads only
/// the trace's warnings and clock corrections.
pub fn check_with(
    trace: &Trace,
    facts: &CaptureFacts,
    steps_cut: usize,
    compile: Ns,
) -> CaptureCheck {
    let mut out = CaptureCheck::default();
    let (activities, unlinked) = (facts.activities, facts.unlinked);

    clock_issues(trace, facts, &mut out);
    // graph replays whose kernels are not in the trace
    let (replays, empty) = (facts.replays, facts.empty);
    if empty > 0 {
        out.issues.push(TrustIssue {
            id: "graph-replays-without-kernels",
            finding: format!(
                "{empty} of {replays} CUDA/HIP graph launches have no kernel in the trace"
            ),
            effect: "the GPU time of those replays is not in the trace: busy time and the \
                     kernel table miss it (profile with graph kernels traced, e.g. nsys \
                     --cuda-graph-trace=node)"
                .into(),
            unreliable: vec!["device_busy"],
        });
    }

    // records lost while reading
    let lost: u64 = trace
        .warnings
        .iter()
        .filter(|w| matches!(w.code, "skipped-event" | "truncated" | "non-object-event"))
        .map(|w| w.count)
        .sum();
    if lost > 0 {
        out.issues.push(TrustIssue {
            id: "dropped-records",
            finding: format!("{lost} event record(s) were skipped or cut off while reading"),
            effect: "totals are lower bounds".into(),
            unreliable: vec!["totals"],
        });
    }

    if steps_cut > 0 {
        out.issues.push(TrustIssue {
            id: "steps-cut",
            finding: format!(
                "{steps_cut} step(s) at the end were cut by the capture window (device work \
                 missing)"
            ),
            effect: "those steps are left out of every number".into(),
            unreliable: vec![],
        });
    }

    let (lo, hi) = facts.bounds;
    if compile > 0 && hi > lo && 2 * compile >= hi - lo {
        out.issues.push(TrustIssue {
            id: "mostly-compile",
            finding: format!(
                "torch.compile/autotune work takes {} of the capture's {}",
                ms(compile),
                ms(hi - lo)
            ),
            effect: "the capture shows warm-up more than the steady state: profile later steps \
                     (torch.profiler.schedule(wait=…, warmup=…))"
                .into(),
            unreliable: vec!["steady_state"],
        });
    }

    records_issues(trace, facts, &mut out);
    let interior: u64 = facts.unrecorded.iter().sum();
    let all_launches: u64 = facts.launches.iter().sum();
    if interior >= UNRECORDED_MIN && interior * 100 > all_launches {
        let what: Vec<String> = ["kernel", "copy", "fill"]
            .iter()
            .zip(facts.unrecorded.iter().zip(facts.launches.iter()))
            .filter(|(_, (n, _))| **n > 0)
            .map(|(w, (n, of))| format!("{n} of {of} {w} launches"))
            .collect();
        out.issues.push(TrustIssue {
            id: "launches-without-records",
            finding: format!(
                "{} have no device record although later launches have one; records are \
                 complete until {} into the capture (its first launch without a record)",
                what.join(", "),
                ms(facts.first_unrecorded - lo)
            ),
            effect: "device records were lost (profiler buffers full or events dropped): the \
                     device's idle time there is not idle, so it is not blamed on the host or \
                     the device, and busy time and kernel totals are lower bounds"
                .into(),
            unreliable: vec!["device_records", "totals"],
        });
    }

    if activities == 0 {
        out.issues.push(TrustIssue {
            id: "cpu-only",
            finding: "no kernel, copy or fill in the trace".into(),
            effect: "nothing about the GPU can be said; only host time is measured (was \
                     ProfilerActivity.CUDA on?)"
                .into(),
            unreliable: vec!["gpu"],
        });
    } else if unlinked * 10 > activities {
        out.issues.push(TrustIssue {
            id: "missing-launch-flows",
            finding: format!(
                "{unlinked} of {activities} device activities ({:.0}%) have no link to a launch \
                 call",
                unlinked as f64 * 100.0 / activities as f64
            ),
            effect: "their host-side cause is unknown; they count in a window by start time".into(),
            unreliable: vec!["host_attribution"],
        });
    }
    if facts.unsized_collectives > 0 {
        out.issues.push(TrustIssue {
            id: "nccl-sizes-unrecorded",
            finding: format!(
                "{} of {} collective kernels of the window record no message size (`In msg nelems`, \
                 `Out msg nelems`, `dtype`, on the kernel or its `record_param_comms`; Kineto \
                 wrote none on GPU collective kernels before April 2026, kineto #1354)",
                facts.unsized_collectives, facts.collectives
            ),
            effect: "NCCL sizes not recorded: bandwidth unknown (bytes per call and \
                     algorithmic bandwidth cover only the calls that record a size)"
                .into(),
            unreliable: vec!["comm_sizes"],
        });
    }
    if let Some(cut) = &facts.records_cut {
        records_cut_issue(cut, lo, &mut out);
    }
    out
}

/// The steps were cut where the device records stop ([`crate::window::records`]): the
/// issues of lost records no longer limit the figures, which cover only the part before.
fn records_cut_issue(cut: &RecordsStop, lo: Ns, out: &mut CaptureCheck) {
    for i in out.issues.iter_mut() {
        if matches!(
            i.id,
            "launches-without-records"
                | "zero-timestamps"
                | "producer-lost-events"
                | "tracer-event-cap"
        ) {
            i.unreliable.clear();
            i.effect.push_str(
                " — the window was cut where the device records stop (records-cut): every \
                 figure covers only the part before it",
            );
        }
    }
    out.issues.push(TrustIssue {
        id: "records-cut",
        finding: format!(
            "device records stop {} into the capture: {} of the {} kernel/copy/fill launches \
             from there have no device record, {} of the {} before",
            ms(cut.at.saturating_sub(lo)),
            cut.unrecorded_after,
            cut.after,
            cut.unrecorded_before,
            cut.before
        ),
        effect: "the window ends there: the steps or time after it are left out (listed in the \
                 window) and the steady state before it is judged on complete records"
            .into(),
        unreliable: vec![],
    });
}

/// The issues of device records that are missing or carry no time: the reader's
/// `ts 0, dur 0` events, zero-duration activities, blocking calls and late starts that wait
/// on unrecorded device work, the producer's own lost-event diagnostics, and roctracer's cap.
fn records_issues(trace: &Trace, facts: &CaptureFacts, out: &mut CaptureCheck) {
    let (zero, zero_bytes) = (facts.zero, facts.zero_bytes);
    let (waits, waited, late_wait) = (facts.waits, facts.waited, facts.late_wait);
    let warning = |code: &str| trace.warnings.iter().find(|w| w.code == code);
    if let Some(w) = warning(crate::ingest::kineto::ZERO_TIMESTAMP) {
        out.issues.push(TrustIssue {
            id: "zero-timestamps",
            finding: format!(
                "{} events were written with ts 0 and dur 0 (the torch 2.12 export defect, \
                 pytorch #188481){}",
                w.count,
                w.first_offset
                    .map(|o| format!("; the first at byte {o}"))
                    .unwrap_or_default()
            ),
            effect: "they carry no time and were left out: every figure covers only the events \
                     recorded with real times, totals are lower bounds, and the device's idle \
                     time may be work whose records lost their times, so it is not blamed on \
                     the host or the device (export the trace with another torch version to \
                     see the rest)"
                .into(),
            unreliable: vec!["totals", "device_records"],
        });
    }
    let n_zero: u64 = zero.iter().sum();
    if n_zero > 0 {
        let what: Vec<String> = ["kernels", "copies", "fills"]
            .iter()
            .zip(zero)
            .filter(|(_, n)| *n > 0)
            .map(|(w, n)| format!("{n} {w}"))
            .collect();
        out.issues.push(TrustIssue {
            id: "zero-duration-activities",
            finding: format!(
                "{} recorded with dur 0{} (a producer defect, e.g. TraceLens #610)",
                what.join(", "),
                if zero_bytes > 0 {
                    format!(", moving {zero_bytes} bytes")
                } else {
                    String::new()
                }
            ),
            effect: "they count in the activity tables but add no device time; copy bandwidth \
                     leaves them out"
                .into(),
            unreliable: vec![],
        });
    }

    let clock = out.issues.iter().any(|i| i.id == "clock-offset");
    let late = if clock { 0 } else { facts.late };
    if waits > 0 || late > 0 {
        let mut parts = Vec::new();
        if waits > 0 {
            parts.push(format!(
                "{waits} blocking sync or copy call(s) wait {} in total while no device \
                 activity is recorded",
                ms(waited)
            ));
        }
        if late > 0 {
            parts.push(format!(
                "{late} device activit{} start {} in total after their launch returned, on a \
                 device with nothing recorded in between",
                if late == 1 { "y" } else { "ies" },
                ms(late_wait)
            ));
        }
        out.issues.push(TrustIssue {
            id: "unrecorded-device-work",
            finding: parts.join("; "),
            effect: "the device ran work the trace does not hold (launched before the capture \
                     began, or its records were lost), or its clock is offset from the host's: \
                     that waiting is neither host, sync nor device-stall time, so idle time is \
                     not blamed on them"
                .into(),
            unreliable: vec!["device_records"],
        });
    }

    if let Some(w) = warning(PRODUCER_LOST_EVENTS) {
        out.issues.push(TrustIssue {
            id: "producer-lost-events",
            finding: format!(
                "the profiler reports lost events ({} message(s)): {}",
                w.count, w.message
            ),
            effect: "launches may lack their device records: idle time is not blamed on the \
                     host or the device, and totals are lower bounds"
                .into(),
            unreliable: vec!["device_records", "totals"],
        });
    }

    if let Some(w) = warning(crate::ingest::nsys::DUPLICATE_RECORDS) {
        out.issues.push(TrustIssue {
            id: "duplicate-records",
            finding: format!(
                "{} record(s) were written twice under one correlation id (runtime calls: \
                 the versioned entry point inside its call, as nsys 2022 exports write them; \
                 copies and fills: same stream, start and duration)",
                w.count
            ),
            effect: "each was counted once: no figure counts them twice".into(),
            unreliable: vec![],
        });
    }

    let amd = trace
        .devices
        .iter()
        .any(|d| d.vendor == crate::model::Vendor::Amd);
    if amd {
        let (acts, calls) = (facts.activities as u64, facts.calls);
        let hit = [
            (acts, "device activities"),
            (acts + calls, "HIP calls and device activities"),
        ]
        .into_iter()
        .find(|(n, _)| TRACER_CAPS.contains(n));
        if let Some((n, what)) = hit {
            out.issues.push(TrustIssue {
                id: "tracer-event-cap",
                finding: format!(
                    "the trace holds exactly {n} {what}: roctracer's event cap (kineto #1081, \
                     #1114), past which it drops events silently"
                ),
                effect: "the capture is truncated: totals are lower bounds and launches after \
                         the cap have no device record (raise the cap in the Kineto config or \
                         profile fewer steps)"
                    .into(),
                unreliable: vec!["totals", "device_records"],
            });
        }
    }
}

/// Warning code a reader gives to the producer's own report of lost events (nsys
/// `DIAGNOSTIC_EVENT`); the capture check turns it into `producer-lost-events`.
pub const PRODUCER_LOST_EVENTS: &str = crate::ingest::nsys::LOST_EVENTS;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::build::TraceBuilder;

    fn launches(offset_us: f64) -> Trace {
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
        for i in 0..12 {
            let at = 100.0 * i as f64;
            let c = b.runtime("cudaLaunchKernel", 0, at, 5.0);
            b.gpu(GpuKind::Kernel, "k", 0, 7, at + 6.0 + offset_us, 50.0, c);
        }
        b.build()
    }

    /// The report and the verdict check the capture from the analysis' facts
    /// ([`crate::analysis::Analysis::capture`]): the same check as one over the events.
    #[test]
    fn analysis_facts_give_the_same_check() {
        for t in [launches(0.0), launches(2500.0)] {
            let a = crate::analysis::analyze(&t, &crate::analysis::AnalyzeOptions::default());
            assert_eq!(a.capture, CaptureFacts::of(&t));
            assert_eq!(check_with(&t, &a.capture, 1, 0), check(&t, 1, 0));
        }
        let t = launches(2500.0);
        assert_eq!(CaptureFacts::of(&t).activities, 12);
        assert_eq!(check(&t, 0, 0).issues[0].id, "clock-offset");
    }

    #[test]
    fn clock_offset_only_when_every_launch_waits() {
        assert!(check(&launches(0.0), 0, 0).issues.is_empty());
        let c = check(&launches(2500.0), 0, 0);
        assert_eq!(c.issues.len(), 1);
        assert_eq!(c.issues[0].id, "clock-offset");
        // 2500 µs + the 1 µs between return and start
        assert_eq!(c.clock_offset, 2_501_000);
        assert!(c.unreliable("host_device_timing"));
        // device clock behind: kernels start before they were launched
        let c = check(&launches(-1500.0), 0, 0);
        assert_eq!(c.issues[0].id, "clock-offset");
        assert_eq!(c.clock_offset, 1_494_000);
    }

    #[test]
    fn replays_cpu_only_flows_cut_compile() {
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
        let c = b.runtime("cudaGraphLaunch", 0, 0.0, 5.0);
        b.gpu(GpuKind::Kernel, "k", 0, 7, 6.0, 50.0, c);
        b.runtime("cudaGraphLaunch", 0, 100.0, 5.0);
        // two of three activities unlinked
        b.gpu(GpuKind::Kernel, "k", 0, 7, 200.0, 50.0, 0);
        b.gpu(GpuKind::Kernel, "k", 0, 7, 300.0, 50.0, 0);
        let t = b.build();
        let c = check(&t, 2, 200_000);
        let ids: Vec<&str> = c.issues.iter().map(|i| i.id).collect();
        assert_eq!(
            ids,
            [
                "graph-replays-without-kernels",
                "steps-cut",
                "mostly-compile",
                "missing-launch-flows"
            ]
        );
        assert_eq!(
            c.issues[0].finding,
            "1 of 2 CUDA/HIP graph launches have no kernel in the trace"
        );
        let mut b = TraceBuilder::new();
        b.op("aten::add", 0.0, 10.0);
        let c = check(&b.build(), 0, 0);
        assert_eq!(c.issues.len(), 1);
        assert_eq!(c.issues[0].id, "cpu-only");
    }

    fn ids(c: &CaptureCheck) -> Vec<&'static str> {
        c.issues.iter().map(|i| i.id).collect()
    }

    /// 100 launches 100 µs apart, each with its kernel, except those `lost` says.
    fn launched(lost: impl Fn(usize) -> bool) -> Trace {
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
        for i in 0..100 {
            let at = 100.0 * i as f64;
            let c = b.runtime("cudaLaunchKernel", 0, at, 5.0);
            if !lost(i) {
                b.gpu(GpuKind::Kernel, "k", 0, 7, at + 6.0, 50.0, c);
            }
        }
        b.build()
    }

    #[test]
    fn launches_without_records_inside_not_at_the_tail() {
        assert!(check(&launched(|_| false), 0, 0).issues.is_empty());
        // every other launch after the 40th lost (records dropped), the last one recorded
        let c = check(&launched(|i| i >= 40 && i % 2 == 0 && i < 98), 0, 0);
        assert_eq!(ids(&c), ["launches-without-records"]);
        assert_eq!(
            c.issues[0].finding,
            "29 of 100 kernel launches have no device record although later launches have \
             one; records are complete until 4.00 ms into the capture (its first launch \
             without a record)"
        );
        assert!(c.unreliable("device_records"));
        // the profiler stopped: the last launches have no record, that is no loss
        assert!(check(&launched(|i| i >= 80), 0, 0).issues.is_empty());
        // calls under 1 µs enqueue nothing (zero-size fills)
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
        for i in 0..30 {
            b.runtime("cudaMemsetAsync", 0, 10.0 * i as f64, 0.2);
        }
        let c = b.runtime("cudaLaunchKernel", 0, 400.0, 5.0);
        b.gpu(GpuKind::Kernel, "k", 0, 7, 406.0, 50.0, c);
        assert!(check(&b.build(), 0, 0).issues.is_empty());
        // nine lost: under the floor
        assert!(check(&launched(|i| (10..19).contains(&i)), 0, 0)
            .issues
            .is_empty());
        // launches inside a graph capture run nothing
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
        b.runtime("cudaStreamBeginCapture", 0, 0.0, 1.0);
        for i in 0..20 {
            b.runtime("cudaLaunchKernel", 0, 2.0 + i as f64 * 10.0, 5.0);
        }
        b.runtime("cudaStreamEndCapture", 0, 300.0, 1.0);
        let c = b.runtime("cudaLaunchKernel", 0, 400.0, 5.0);
        b.gpu(GpuKind::Kernel, "k", 0, 7, 406.0, 50.0, c);
        assert!(check(&b.build(), 0, 0).issues.is_empty());
    }

    #[test]
    fn zero_duration_activities_counted() {
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
        let c = b.runtime("cudaMemcpyAsync", 0, 0.0, 5.0);
        b.gpu(
            GpuKind::Memcpy,
            "Memcpy HtoD (Pageable -> Device)",
            0,
            7,
            6.0,
            0.0,
            c,
        )
        .bytes = 4 << 20;
        let c = b.runtime("cudaLaunchKernel", 0, 10.0, 5.0);
        // ns-resolution times (a 50.5 µs kernel)
        b.gpu(GpuKind::Kernel, "k", 0, 7, 16.0, 50.5, c);
        let c = check(&b.build(), 0, 0);
        assert_eq!(ids(&c), ["zero-duration-activities"]);
        assert_eq!(
            c.issues[0].finding,
            "1 copies recorded with dur 0, moving 4194304 bytes (a producer defect, e.g. \
             TraceLens #610)"
        );
    }

    #[test]
    fn zero_duration_at_microsecond_resolution() {
        // integer-µs times: a kernel or a small copy of dur 0 lasted under 1 µs
        let mut b = TraceBuilder::new().device(0, "NVIDIA V100", 80, 16 << 30);
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 5.0);
        b.gpu(GpuKind::Kernel, "k", 0, 7, 6.0, 0.0, c);
        let c = b.runtime("cudaMemcpyAsync", 0, 10.0, 5.0);
        b.gpu(
            GpuKind::Memcpy,
            "Memcpy HtoD (Pageable -> Device)",
            0,
            7,
            16.0,
            0.0,
            c,
        )
        .bytes = 1024;
        assert!(check(&b.build(), 0, 0).issues.is_empty());
        // but 16 MiB cannot be copied in under 1 µs
        let mut b = TraceBuilder::new().device(0, "NVIDIA V100", 80, 16 << 30);
        let c = b.runtime("cudaMemcpyAsync", 0, 10.0, 5.0);
        b.gpu(
            GpuKind::Memcpy,
            "Memcpy HtoD (Pageable -> Device)",
            0,
            7,
            16.0,
            0.0,
            c,
        )
        .bytes = 16 << 20;
        let c = check(&b.build(), 0, 0);
        assert_eq!(ids(&c), ["zero-duration-activities"]);
    }

    #[test]
    fn unrecorded_device_work() {
        // a stream sync that waits 5 ms while the device shows nothing
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 5.0);
        b.gpu(GpuKind::Kernel, "k", 0, 7, 6.0, 50.0, c);
        b.runtime("cudaStreamSynchronize", 0, 100.0, 5000.0);
        let c = check(&b.build(), 0, 0);
        assert_eq!(ids(&c), ["unrecorded-device-work"]);
        assert!(c.issues[0].finding.starts_with(
            "1 blocking sync or copy call(s) wait 5.00 ms in total while no device activity"
        ));
        // the same sync while a kernel runs: nothing to say
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 5.0);
        b.gpu(GpuKind::Kernel, "k", 0, 7, 6.0, 5000.0, c);
        b.runtime("cudaStreamSynchronize", 0, 100.0, 5000.0);
        assert!(check(&b.build(), 0, 0).issues.is_empty());
        // the first kernels of an extracted iteration wait 3 ms for work cut out of it, the
        // later ones start at once (so no clock offset)
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 5.0);
        b.gpu(GpuKind::Kernel, "k", 0, 7, 3005.0, 50.0, c);
        for i in 1..20 {
            let at = 3100.0 + 100.0 * i as f64;
            let c = b.runtime("cudaLaunchKernel", 0, at, 5.0);
            b.gpu(GpuKind::Kernel, "k", 0, 7, at + 6.0, 50.0, c);
        }
        let c = check(&b.build(), 0, 0);
        assert_eq!(ids(&c), ["unrecorded-device-work"]);
        assert_eq!(
            c.issues[0].finding,
            "1 device activity start 3.00 ms in total after their launch returned, on a device \
             with nothing recorded in between"
        );
        // queued behind a recorded kernel: no proof of anything
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
        let c = b.runtime("cudaLaunchKernel", 0, 0.0, 5.0);
        b.gpu(GpuKind::Kernel, "long", 0, 7, 6.0, 3000.0, c);
        let c = b.runtime("cudaLaunchKernel", 0, 10.0, 5.0);
        b.gpu(GpuKind::Kernel, "k", 0, 7, 3006.0, 50.0, c);
        assert!(check(&b.build(), 0, 0).issues.is_empty());
    }

    /// An issue that limits only named figures (`nccl-sizes-unrecorded`: the communication
    /// bandwidth) leaves the verdict standing: `ok` stays true; one that limits the verdict
    /// (device records missing) makes it false; one that limits nothing is listed only.
    #[test]
    fn levels_figures_verdict_none() {
        let mut facts = CaptureFacts::of(&launched(|_| false));
        (facts.collectives, facts.unsized_collectives) = (6, 2);
        let t = launched(|_| false);
        let c = check_with(&t, &facts, 0, 0);
        assert_eq!(ids(&c), ["nccl-sizes-unrecorded"]);
        assert_eq!(c.issues[0].level(), LEVEL_FIGURES);
        assert!(c.ok());
        let figures: Vec<&str> = c.figure_limits().iter().map(|f| f.figure).collect();
        assert_eq!(figures, ["communication"]);
        // steps cut at the end: listed, limits nothing
        let c = check_with(&t, &facts, 1, 0);
        assert_eq!(c.issues[0].level(), LEVEL_NONE);
        assert!(c.ok());
        // with lost device records beside it: the verdict is limited
        let t = launched(|i| i >= 40 && i % 2 == 0 && i < 98);
        let mut facts = CaptureFacts::of(&t);
        (facts.collectives, facts.unsized_collectives) = (6, 2);
        let c = check_with(&t, &facts, 0, 0);
        assert_eq!(
            ids(&c),
            ["launches-without-records", "nccl-sizes-unrecorded"]
        );
        assert_eq!(c.issues[0].level(), LEVEL_VERDICT);
        assert!(!c.ok());
    }

    #[test]
    fn reader_warnings_and_tracer_cap() {
        let mut t = launched(|_| false);
        t.warnings.push(crate::model::Warning {
            code: crate::ingest::kineto::ZERO_TIMESTAMP,
            count: 700,
            first_offset: Some(1234),
            message: String::new(),
        });
        t.warnings.push(crate::model::Warning {
            code: PRODUCER_LOST_EVENTS,
            count: 1,
            first_offset: None,
            message: "nsys reports lost events".into(),
        });
        let c = check(&t, 0, 0);
        assert_eq!(ids(&c), ["zero-timestamps", "producer-lost-events"]);
        assert_eq!(
            c.issues[0].finding,
            "700 events were written with ts 0 and dur 0 (the torch 2.12 export defect, \
             pytorch #188481); the first at byte 1234"
        );
        assert!(c.unreliable("device_records") && c.unreliable("totals"));
        // AMD: exactly the roctracer cap of device activities
        let mut b = TraceBuilder::new().device(0, "AMD Instinct MI300X", 304, 192 << 30);
        for i in 0..1_000_000 {
            b.gpu(GpuKind::Kernel, "k", 0, 7, i as f64, 0.5, 0);
        }
        let mut t = b.build();
        assert!(!ids(&check(&t, 0, 0)).contains(&"tracer-event-cap"));
        t.devices[0].vendor = crate::model::Vendor::Amd;
        assert!(ids(&check(&t, 0, 0)).contains(&"tracer-event-cap"));
        t.gpu.pop();
        assert!(!ids(&check(&t, 0, 0)).contains(&"tracer-event-cap"));
    }
}
