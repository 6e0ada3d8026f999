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

use serde::Serialize;

use crate::model::{clock, CpuKind, Ns, Trace, NONE};

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
    /// `totals`, `steady_state`, `gpu`, `host_attribution`).
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

impl CaptureCheck {
    /// True when an issue makes this class of numbers unreliable.
    pub fn unreliable(&self, class: &str) -> bool {
        self.issues.iter().any(|i| i.unreliable.contains(&class))
    }
}

fn is_graph_launch(name: &str) -> bool {
    name.contains("GraphLaunch")
}

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
    /// [`crate::window::trace_bounds`].
    bounds: (Ns, Ns),
}

impl CaptureFacts {
    /// The facts of a trace.
    pub fn of(trace: &Trace) -> CaptureFacts {
        // launches that reached a device, and device activities without a launch
        let mut launched_graph = vec![false; trace.cpu.len()];
        let (mut activities, mut unlinked) = (0usize, 0usize);
        for g in trace.gpu.iter().filter(|g| g.is_activity()) {
            activities += 1;
            if g.launch == NONE {
                unlinked += 1;
            } else {
                launched_graph[g.launch as usize] = true;
            }
        }
        // graph replays whose kernels are not in the trace
        let (mut replays, mut empty) = (0u64, 0u64);
        let mut graph_memo = crate::model::fast::NameMemo::new(trace, is_graph_launch);
        for (i, e) in trace.cpu.iter().enumerate() {
            if matches!(e.kind, CpuKind::Runtime | CpuKind::Driver) && graph_memo.get(e.name) {
                replays += 1;
                if !launched_graph[i] {
                    empty += 1;
                }
            }
        }
        CaptureFacts {
            activities,
            unlinked,
            clock: clock::estimate(trace),
            replays,
            empty,
            bounds: crate::window::trace_bounds(trace),
        }
    }
}

/// Checks a trace. `steps_cut` is the number of steps dropped by the tail rule, `compile`
/// the torch.compile/autotune time of the capture.
pub fn check(trace: &Trace, steps_cut: usize, compile: Ns) -> CaptureCheck {
    check_with(trace, &CaptureFacts::of(trace), steps_cut, compile)
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

    // clock offset: corrected by the loader, or found in the times as recorded
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
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::build::TraceBuilder;
    use crate::model::GpuKind;

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
}
