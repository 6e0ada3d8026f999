//! Steps (`ProfilerStep#N`) and the per-step time breakdown, as the TensorBoard profiler
//! plugin (torch-tb-profiler, last source: pytorch/kineto `tb_plugin/`, commit 041e7ce99f15)
//! defines them. On the plugin's own ResNet-50 samples every step duration and every role
//! agrees with the plugin to the nanosecond (see `tests/tbprof.rs`).
//!
//! # Definitions
//!
//! All times are integer nanoseconds; nothing is rounded.
//!
//! ## Which events play which part
//!
//! | our kind | plugin type |
//! |---|---|
//! | [`CpuKind::Op`] (`cpu_op` / `Operator`) | Operator |
//! | [`CpuKind::UserAnnotation`] (`user_annotation`) | UserAnnotation |
//! | [`CpuKind::Python`] (legacy `python` category) | Python |
//! | [`CpuKind::Runtime`], [`CpuKind::OtherRuntime`] | Runtime |
//! | [`CpuKind::Driver`] (`cuda_driver`) | ignored by the plugin (see *Driver calls*) |
//! | [`CpuKind::PythonFunction`] (`python_function`), [`CpuKind::Other`] | not used for steps or roles, as in the plugin |
//! | [`GpuKind::Kernel`] / [`GpuKind::Memcpy`] / [`GpuKind::Memset`] ("device activities") | Kernel / Memcpy / Memset |
//! | [`GpuKind::Sync`], [`GpuKind::Annotation`] | not used (see *Differences*) |
//!
//! ## Steps
//!
//! 1. **Host steps**: every [`CpuKind::Op`] or [`CpuKind::UserAnnotation`] whose name starts
//!    with `ProfilerStep#`, in start order; the number after `#` is [`Step::number`].
//!    When there is none, the iterations of an inference server are the steps when their
//!    annotations (or graph launches) mark them, named `Iteration#1`, `Iteration#2`, … (see
//!    [`crate::window::iterations`] for the rules; [`StepAnalysis::rule`] says which one
//!    matched). When there is none either, one step named `"0"` covers `[min start, max end]` of the
//!    [`CpuKind::Op`] and [`CpuKind::Python`] events (the plugin's rule); a trace without
//!    such events falls back to the hull of all host events and device activities, and a
//!    trace without any event gets no step at all. An Nsight Systems capture (no operators;
//!    its threads start with the process) gets one step over its device activities and the
//!    host calls that launched them, so process start-up before the first launch (e.g.
//!    hundreds of ms of `cudaMalloc`) is not counted as idle GPU time. Any other trace
//!    without step marks that has device work gets the same cut: its step "0" runs from the
//!    first device activity or launching call to the last, within the operators' hull; the
//!    set-up before and the idle tail after are listed in [`StepAnalysis::left_out`] (the
//!    report's window section says what was left out and how long) instead of being judged
//!    as the steady state.
//! 2. **Launches inside a step**: the host calls that launch device work (runtime calls,
//!    plus driver calls, see below) are walked in start order against the steps. A call
//!    belongs to step *i* when it starts at or after the host step start and *ends* at or
//!    before the host step end; calls straddling a step boundary belong to no step. The
//!    device activities (kernels, copies, fills, linked by correlation) of the calls that
//!    belong to a step are that step's *device work*; their count is
//!    [`Step::device_activities`].
//! 3. **Device extension** (only when at least one step has device work): walking the steps
//!    in order, `start = max(previous step's new end, host start)` and
//!    `end = max(host end, last end of the step's device work)` (`end = max(host end, start)`
//!    for a step without device work, never before `start`). The "previous end" of the first
//!    step is its own host start; with `ProfilerStep`s it is pushed to the end of the latest
//!    device activity that was launched by no step and ended before the first step's first
//!    device activity started (the same for server iterations) (stale work from before the profiled window; a single step "0"
//!    covers the whole capture, so nothing in it is stale). Steps therefore never overlap.
//! 4. **Tail trimming** (only when at least one step has device work and there are ≥ 2
//!    steps): trailing steps without device work are dropped, and the last step with device
//!    work is dropped too when it has fewer than 80 % of the previous step's device
//!    activities (`prev × 0.8 > last`, done in integers; iterations only against one of the
//!    same kind): the profiler probably stopped
//!    before capturing all its kernels. Dropped steps are listed in
//!    [`StepAnalysis::dropped`] with the reason.
//! 5. **All-steps span** ([`StepAnalysis::span`]) = first kept step start .. last kept step
//!    end. Gaps between steps (there are none after extension) would be inside the span.
//! 6. **Where device records stop** ([`super::records`]: from some launch on, most launches
//!    have no device record while at most 1 % before it lack one): with step marks, the
//!    kept steps whose host span ends after that launch began are dropped with the reason
//!    when at least [`records::STOP_MIN_STEPS`] steps end before it; a trace without step
//!    marks has its one step end there when at least [`records::STOP_MIN_LAUNCHES`]
//!    launches with their records come before it, the rest listed in
//!    [`StepAnalysis::left_out`] ([`AFTER_RECORDS_STOP`]). Either way
//!    [`StepAnalysis::records_cut`] says where, and the capture check names the cut
//!    (`records-cut`). With fewer complete steps or launches before the stop nothing is cut
//!    and the capture check marks the device records incomplete.
//!
//! ## Breakdown
//!
//! For each role, the intervals of its events over the whole trace (all threads, all
//! devices) are merged ([`IntervalSet`]). Within each step, the roles take time in strict
//! priority order **Kernel > Memcpy > Memset > Communication > Runtime > DataLoader >
//! CPU Exec**, each getting only the part of the step not already taken by a higher role;
//! **Other** is what is left. The eight parts therefore sum exactly to the step duration.
//!
//! | role | events |
//! |---|---|
//! | kernel | kernels that are not communication |
//! | memcpy / memset | copies / fills |
//! | communication | kernels that are communication — name passes [`classify::is_communication`], or the kernel (or its launching runtime call) carries the `External id` of a host collective — plus the host collectives themselves: Op / UserAnnotation / Python events named `nccl:*` or `gloo:*` |
//! | runtime | [`CpuKind::Runtime`] and [`CpuKind::OtherRuntime`] calls, any thread |
//! | dataloader | Op / UserAnnotation named `enumerate(DataLoader)#…` ending in `.__next__`, or starting with `enumerate(DataPipe)#` |
//! | cpu_exec | every other Op / UserAnnotation / Python event except the `ProfilerStep#` spans themselves, any thread |
//! | other | the remainder of the step |
//!
//! [`StepAnalysis::average`] is the arithmetic mean of each part (and of the duration) over
//! the kept steps; it is what the plugin shows as "Average Step Time".
//!
//! ## Driver calls
//!
//! The plugin ignores the `cuda_driver` category entirely. We follow it for the **runtime
//! role**: driver calls (`cuLaunchKernel`, `cuLaunchKernelEx`, … from Triton or cuBLASLt)
//! are not Runtime time; their host time falls to whatever covers them (normally the
//! enclosing operator, i.e. CPU Exec). We deliberately differ for **device work**: a kernel
//! launched by a driver call inside a step extends that step and counts for tail trimming,
//! exactly like one launched by `cudaLaunchKernel` (the plugin would treat it as unlaunched
//! work, so Triton-only steps would never be extended).
//!
//! # Differences from the plugin (deliberate)
//!
//! * `gpu_user_annotation` twins of `ProfilerStep#N` ([`GpuKind::Annotation`]) are not steps
//!   (the plugin counts them too and gets duplicate zero-length steps that dilute the
//!   average), and GPU annotation spans are not CPU Exec time (the plugin counts them as
//!   host user annotations).
//! * Exact duplicates of a host step (same name, start and duration, e.g. an `Operator` and a
//!   `user_annotation` copy) count once.
//! * Any `nccl:*` / `gloo:*` host span is communication (the plugin lists only
//!   broadcast/reduce/all_reduce/all_gather/reduce_scatter), and kernels are also recognised
//!   as communication by name and by their launching call's `External id` (the plugin uses
//!   only the kernel's own `External id`).
//! * Driver calls launch device work (see above).
//! * [`CpuKind::OtherRuntime`] also holds `xpu_driver` / `privateuse1_driver` calls, which the
//!   plugin would ignore.
//! * The plugin applies the priority rule over the merged steps and rebuilds its "free
//!   slots" when a role has used up every step completely, which can then count time twice;
//!   we keep the strict priority in every case, so parts always sum to the step duration.
//! * A trace without any `Operator`/`Python` event and without steps gets a step "0" over
//!   the hull of its events instead of an invalid one; an empty trace gets no step.
//! * A trace without steps that has device work gets its step "0" cut to that work (first
//!   device activity or launching call to the last), not the operators' whole hull: set-up
//!   before it and an idle tail after it are listed apart ([`StepAnalysis::left_out`]).
//! * Device work linked to its launch by a correlation id shared by several runtime calls
//!   belongs to the first such call (the plugin keeps the last one parsed).

use crate::model::fast::{HashSet, NameMemo};

use super::iterations::{self, IterationPhase, StepRule};
use super::records::{self, RecordsStop};
use crate::model::{
    CpuKind, GpuKind, Interval, IntervalSet, Ns, Remainder, SourceFormat, Trace, UnionBuilder, NONE,
};
use serde::Serialize;

/// Time of one step split by role; the parts sum to the step duration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Breakdown {
    /// Kernels (not communication).
    pub kernel: Ns,
    /// Memory copies.
    pub memcpy: Ns,
    /// Memory fills.
    pub memset: Ns,
    /// Communication kernels and host collectives.
    pub communication: Ns,
    /// Runtime API calls.
    pub runtime: Ns,
    /// DataLoader.
    pub dataloader: Ns,
    /// Other host work (operators, annotations, Python).
    pub cpu_exec: Ns,
    /// The remainder.
    pub other: Ns,
}

impl Breakdown {
    /// Sum of the parts (equals the step duration).
    pub fn total(&self) -> Ns {
        self.kernel
            + self.memcpy
            + self.memset
            + self.communication
            + self.runtime
            + self.dataloader
            + self.cpu_exec
            + self.other
    }
}

/// One step.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// `ProfilerStep#N` (or `"0"` for the whole trace when there are no steps).
    pub name: String,
    /// N, when the name carries it.
    pub number: Option<i64>,
    /// Span after extension to the end of the device work it launched.
    pub span: Interval,
    /// Where the time went.
    pub breakdown: Breakdown,
    /// Span of the host-side event, before device extension.
    pub host_span: Interval,
    /// Device activities (kernels, copies, fills) launched from inside the host step.
    pub device_activities: u64,
    /// Prefill / decode / mixed, for a server iteration whose mark says
    /// ([`crate::window::iterations`]).
    pub phase: Option<IterationPhase>,
}

/// A step that was left out, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct DroppedStep {
    /// Step name.
    pub name: String,
    /// Why.
    pub reason: String,
    /// Left out by the tail rule: the profiler stopped before the step's device work was all
    /// captured (the capture check's `steps-cut`); false for the steps after the device
    /// records stop (*Steps* 6).
    pub at_stop: bool,
}

/// Result of step analysis.
#[derive(Clone, Debug, Default)]
pub struct StepAnalysis {
    /// Steps in time order.
    pub steps: Vec<Step>,
    /// Per-role mean over the steps (ns, fractional).
    pub average: AverageBreakdown,
    /// First step start to last step end.
    pub span: Interval,
    /// True when the steps came from `ProfilerStep#N` annotations.
    pub from_profiler_steps: bool,
    /// The rule that found the steps ([`StepRule::ProfilerStep`] when
    /// `from_profiler_steps`; server iterations or the whole trace otherwise).
    pub rule: StepRule,
    /// Steps dropped by the tail rule.
    pub dropped: Vec<DroppedStep>,
    /// Parts of a trace without step marks left out of its one step: set-up before the first
    /// device work, an idle tail after the last, the part after its device records stop (see
    /// *Steps* 1 and 6).
    pub left_out: Vec<LeftOut>,
    /// Where the steps were cut because the device records stop there (*Steps* 6); `None`
    /// when they were not.
    pub records_cut: Option<RecordsStop>,
}

/// A part of the trace left out of every step, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct LeftOut {
    /// What it is: [`SETUP_BEFORE_DEVICE`], [`TAIL_AFTER_DEVICE`] or
    /// [`AFTER_RECORDS_STOP`].
    pub what: &'static str,
    /// Its span.
    pub span: Interval,
}

/// [`LeftOut::what`] of the host time before the first device work of a trace without step
/// marks.
pub const SETUP_BEFORE_DEVICE: &str = "set-up before the first device work";
/// [`LeftOut::what`] of the host time after the last device work of a trace without step
/// marks.
pub const TAIL_AFTER_DEVICE: &str = "idle tail after the last device work";
/// [`LeftOut::what`] of the part of a trace without step marks after its device records
/// stop ([`super::records`]).
pub const AFTER_RECORDS_STOP: &str =
    "the part after the device records stop (most of its launches have no device record)";

impl StepAnalysis {
    /// The analysis of `steps` (in time order): their average ([`average_of`]) and their span
    /// (first start to last end; empty at 0 without steps).
    pub fn of(
        steps: Vec<Step>,
        from_profiler_steps: bool,
        rule: StepRule,
        dropped: Vec<DroppedStep>,
    ) -> Self {
        let average = average_of(&steps);
        let span = match (steps.first(), steps.last()) {
            (Some(f), Some(l)) => Interval::new(f.span.start, l.span.end),
            _ => Interval::default(),
        };
        StepAnalysis {
            steps,
            average,
            span,
            from_profiler_steps,
            rule,
            dropped,
            left_out: Vec::new(),
            records_cut: None,
        }
    }
}

/// Mean breakdown (fractional ns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct AverageBreakdown {
    /// Mean step duration.
    pub total: f64,
    /// Kernels.
    pub kernel: f64,
    /// Copies.
    pub memcpy: f64,
    /// Fills.
    pub memset: f64,
    /// Communication.
    pub communication: f64,
    /// Runtime.
    pub runtime: f64,
    /// DataLoader.
    pub dataloader: f64,
    /// Host work.
    pub cpu_exec: f64,
    /// Remainder.
    pub other: f64,
}

const STEP_PREFIX: &str = "ProfilerStep#";

/// True for the plugin's DataLoader spans.
pub fn is_dataloader(name: &str) -> bool {
    (name.starts_with("enumerate(DataLoader)#") && name.ends_with(".__next__"))
        || name.starts_with("enumerate(DataPipe)#")
}

/// Host calls whose device work belongs to the step they lie in.
fn is_launcher(kind: CpuKind) -> bool {
    matches!(
        kind,
        CpuKind::Runtime | CpuKind::OtherRuntime | CpuKind::Driver
    )
}

/// A step candidate before extension.
struct HostStep {
    name: String,
    number: Option<i64>,
    host: Interval,
    phase: Option<IterationPhase>,
}

/// Name of the `i`-th (0-based) server iteration.
pub const ITERATION_PREFIX: &str = "Iteration#";

fn host_steps(trace: &Trace) -> (Vec<HostStep>, StepRule) {
    let mut steps: Vec<HostStep> = Vec::new();
    let mut is_step = NameMemo::new(trace, |n: &str| n.starts_with(STEP_PREFIX));
    for e in &trace.cpu {
        if !matches!(e.kind, CpuKind::Op | CpuKind::UserAnnotation) || !is_step.get(e.name) {
            continue;
        }
        let name = trace.name(e.name);
        let Some(num) = name.strip_prefix(STEP_PREFIX) else {
            continue;
        };
        let host = e.interval();
        if steps
            .iter()
            .rev()
            .take(4)
            .any(|s| s.host == host && s.name == name)
        {
            continue;
        }
        steps.push(HostStep {
            name: name.to_string(),
            number: num.trim().parse().ok(),
            host,
            phase: None,
        });
    }
    if !steps.is_empty() {
        return (steps, StepRule::ProfilerStep);
    }
    // No ProfilerStep: the iterations of an inference server, when marked.
    if let Some((rule, its)) = iterations::find_iterations(trace) {
        let steps = its
            .into_iter()
            .enumerate()
            .map(|(i, it)| HostStep {
                name: format!("{ITERATION_PREFIX}{}", i + 1),
                number: Some(i as i64 + 1),
                host: it.host,
                phase: it.phase,
            })
            .collect();
        return (steps, rule);
    }
    // No ProfilerStep: one step "0" over the operators (plugin), else over everything.
    let hull = |it: &mut dyn Iterator<Item = Interval>| {
        it.fold(None, |acc: Option<Interval>, iv| {
            Some(match acc {
                None => iv,
                Some(a) => Interval::new(a.start.min(iv.start), a.end.max(iv.end)),
            })
        })
    };
    // An Nsight Systems capture has no operators and its host threads run from process
    // start-up (allocations, module loading) long before the first launch: one step over the
    // device work and the calls that launched it, so start-up is not reported as idle GPU time.
    if trace.source.format == SourceFormat::NsysSqlite {
        let device = hull(
            &mut trace.gpu.iter().filter(|g| g.is_activity()).flat_map(|g| {
                let launch = (g.launch != NONE).then(|| trace.cpu[g.launch as usize].interval());
                std::iter::once(g.interval()).chain(launch)
            }),
        );
        if let Some(host) = device {
            return (
                vec![HostStep {
                    name: "0".into(),
                    number: None,
                    host,
                    phase: None,
                }],
                StepRule::WholeTrace,
            );
        }
    }
    let ops = hull(
        &mut trace
            .cpu
            .iter()
            .filter(|e| matches!(e.kind, CpuKind::Op | CpuKind::Python))
            .map(|e| e.interval()),
    );
    let all = || {
        hull(
            &mut trace.cpu.iter().map(|e| e.interval()).chain(
                trace
                    .gpu
                    .iter()
                    .filter(|g| g.is_activity())
                    .map(|g| g.interval()),
            ),
        )
    };
    match ops.or_else(all) {
        Some(host) => (
            vec![HostStep {
                name: "0".into(),
                number: None,
                host,
                phase: None,
            }],
            StepRule::WholeTrace,
        ),
        None => (Vec::new(), StepRule::WholeTrace),
    }
}

/// Device extension and tail trimming. Returns the kept steps (span, device activity
/// count) and the dropped ones.
fn extend_and_trim(
    trace: &Trace,
    hosts: &[HostStep],
    stale_rule: bool,
) -> (Vec<(Interval, u64)>, Vec<DroppedStep>) {
    let n = hosts.len();
    // Device activities per launching call: (launch index, gpu index), sorted by launch.
    let mut children: Vec<(u32, u32)> = trace
        .gpu_with_launches()
        .enumerate()
        .filter(|(_, (g, l))| g.is_activity() && l.is_some_and(|l| is_launcher(l.kind)))
        .map(|(i, (g, _))| (g.launch, i as u32))
        .collect();
    children.sort_unstable();

    let mut device: Vec<Option<Interval>> = vec![None; n];
    let mut count: Vec<u64> = vec![0; n];
    let mut matched = vec![false; trace.gpu.len()];
    let mut any_matched = false;

    // Two-way merge of launching calls (in start order) against the host steps.
    let mut i_step = 0;
    let mut child = 0;
    let mut cur: Option<Interval> = None;
    let mut launches = trace
        .cpu
        .iter()
        .enumerate()
        .filter(|(_, e)| is_launcher(e.kind))
        .peekable();
    while i_step < n {
        let Some(&(ci, rt)) = launches.peek() else {
            break;
        };
        let step = hosts[i_step].host;
        if rt.start < step.start || (rt.end() > step.end && rt.start < step.end) {
            // Before this step, or straddling its end: belongs to no step.
            launches.next();
        } else if rt.end() <= step.end {
            // launching calls come in index order: a cursor finds their children
            let ci = ci as u32;
            while children.get(child).is_some_and(|&(l, _)| l < ci) {
                child += 1;
            }
            for &(_, gi) in children[child..].iter().take_while(|&&(l, _)| l == ci) {
                let g = &trace.gpu[gi as usize];
                let iv = g.interval();
                cur = Some(match cur {
                    None => iv,
                    Some(c) => Interval::new(c.start.min(iv.start), c.end.max(iv.end)),
                });
                matched[gi as usize] = true;
                any_matched = true;
                count[i_step] += 1;
            }
            launches.next();
        } else {
            // Starts at or after this step's end: close the step.
            device[i_step] = cur.take();
            i_step += 1;
        }
    }
    if i_step < n {
        device[i_step] = cur.take();
    }

    let mut spans: Vec<Interval> = hosts.iter().map(|h| h.host).collect();
    if any_matched {
        let mut prev_end = hosts[0].host.start;
        if let (true, Some(first_dev)) = (stale_rule, device[0]) {
            for (gi, g) in trace.gpu.iter().enumerate() {
                if g.is_activity() && !matched[gi] && g.end() < first_dev.start {
                    prev_end = prev_end.max(g.end());
                }
            }
        }
        for (i, span) in spans.iter_mut().enumerate() {
            let start = prev_end.max(span.start);
            let end = match device[i] {
                None => span.end.max(start),
                Some(d) => span.end.max(d.end).max(start),
            };
            *span = Interval::new(start, end);
            prev_end = end;
        }
    }

    let mut keep = n;
    let mut dropped = Vec::new();
    if any_matched && n > 1 {
        if let Some(last) = (0..n).rev().find(|&i| count[i] > 0) {
            keep = last + 1;
            // prev × 0.8 > last, in integers
            // (iterations of different kinds, e.g. a decode after a prefill, launch different
            // work: the rule compares only steps of one kind)
            let short = last > 0
                && hosts[last - 1].phase == hosts[last].phase
                && count[last - 1] * 4 > count[last] * 5;
            if short {
                keep = last;
            }
            for (i, h) in hosts.iter().enumerate().skip(keep) {
                let reason = if i == last {
                    format!(
                        "last step with device work launched {} device activities, fewer than \
                         80% of the previous step's {}: the profiler probably missed some of \
                         its kernels",
                        count[i],
                        count[i - 1]
                    )
                } else {
                    "trailing step without device work: the profiler probably stopped before \
                     its kernels were captured"
                        .to_string()
                };
                dropped.push(DroppedStep {
                    name: h.name.clone(),
                    reason,
                    at_stop: true,
                });
            }
        }
    }
    let kept = spans.into_iter().zip(count).take(keep).collect::<Vec<_>>();
    (kept, dropped)
}

/// Merged intervals of each role over the whole trace, in priority order
/// (kernel, memcpy, memset, communication, runtime, dataloader, cpu_exec).
fn role_sets(trace: &Trace) -> [IntervalSet; 7] {
    // unions built as events come (in start order), not vectors of every event
    let mut roles: [UnionBuilder; 7] = std::array::from_fn(|_| UnionBuilder::new());
    let (kernel, memcpy, memset, comm, runtime, dataloader, cpu_exec) = (0, 1, 2, 3, 4, 5, 6);

    // what a host span's name says: (DataLoader, ProfilerStep, host collective)
    let mut name_class = NameMemo::new(trace, |name: &str| {
        (
            is_dataloader(name),
            name.starts_with(STEP_PREFIX),
            crate::model::classify::is_host_collective(name),
        )
    });
    let mut comm_ext: HashSet<u64> = HashSet::default();
    for e in &trace.cpu {
        match e.kind {
            CpuKind::Op | CpuKind::UserAnnotation | CpuKind::Python => {
                let (is_dl, is_step, is_collective) = name_class.get(e.name);
                let role = if e.kind != CpuKind::Python && is_dl {
                    dataloader
                } else if e.kind != CpuKind::Python && is_step {
                    continue;
                } else if is_collective {
                    if e.external_id != 0 {
                        comm_ext.insert(e.external_id);
                    }
                    comm
                } else {
                    cpu_exec
                };
                roles[role].push(e.interval());
            }
            CpuKind::Runtime | CpuKind::OtherRuntime => roles[runtime].push(e.interval()),
            CpuKind::Driver | CpuKind::PythonFunction | CpuKind::Other => {}
        }
    }

    let classes = trace.kernel_classes();
    for g in &trace.gpu {
        let role = match g.kind {
            GpuKind::Kernel => {
                let by_name = classes.get(g.name).communication;
                let by_op = !comm_ext.is_empty() && {
                    let launch_ext = if g.launch != NONE {
                        trace.cpu[g.launch as usize].external_id
                    } else {
                        0
                    };
                    (g.external_id != 0 && comm_ext.contains(&g.external_id))
                        || (launch_ext != 0 && comm_ext.contains(&launch_ext))
                };
                if by_name || by_op {
                    comm
                } else {
                    kernel
                }
            }
            GpuKind::Memcpy => memcpy,
            GpuKind::Memset => memset,
            GpuKind::Sync | GpuKind::Annotation => continue,
        };
        roles[role].push(g.interval());
    }
    roles.map(UnionBuilder::finish)
}

/// Splits one step by the priority rule.
fn breakdown(roles: &[IntervalSet; 7], span: Interval) -> Breakdown {
    let mut free = Remainder::new(span);
    let parts: [Ns; 7] = std::array::from_fn(|k| free.take(&roles[k]));
    Breakdown {
        kernel: parts[0],
        memcpy: parts[1],
        memset: parts[2],
        communication: parts[3],
        runtime: parts[4],
        dataloader: parts[5],
        cpu_exec: parts[6],
        other: free.total(),
    }
}

/// Arithmetic mean of each part (and of the duration) over `steps` (all zero when empty), as
/// in [`StepAnalysis::average`]; the window uses it for a subset of the steps.
pub fn average_of(steps: &[Step]) -> AverageBreakdown {
    let mut average = AverageBreakdown::default();
    for s in steps {
        let b = &s.breakdown;
        average.total += s.span.len() as f64;
        average.kernel += b.kernel as f64;
        average.memcpy += b.memcpy as f64;
        average.memset += b.memset as f64;
        average.communication += b.communication as f64;
        average.runtime += b.runtime as f64;
        average.dataloader += b.dataloader as f64;
        average.cpu_exec += b.cpu_exec as f64;
        average.other += b.other as f64;
    }
    let n = steps.len().max(1) as f64;
    for v in [
        &mut average.total,
        &mut average.kernel,
        &mut average.memcpy,
        &mut average.memset,
        &mut average.communication,
        &mut average.runtime,
        &mut average.dataloader,
        &mut average.cpu_exec,
        &mut average.other,
    ] {
        *v /= n;
    }
    average
}

/// Finds the steps and splits each one's time by role.
pub fn analyze_steps(trace: &Trace) -> StepAnalysis {
    analyze_steps_with(trace, || records::stop(trace))
}

/// [`analyze_steps`] with where the trace's device records stop found by `stop`, asked for
/// once the host's steps are known (so that a caller can find it on another thread
/// meanwhile; [`records::stop`]).
pub fn analyze_steps_with(
    trace: &Trace,
    stop: impl FnOnce() -> Option<RecordsStop>,
) -> StepAnalysis {
    let (mut hosts, rule) = host_steps(trace);
    let mut left_out = trim_to_device(trace, rule, &mut hosts);
    let stop = stop();
    let stop = stop.as_ref();
    let mut records_cut = None;
    if let (Some(s), StepRule::WholeTrace) = (stop, rule) {
        if cut_whole_trace(s, &mut hosts, &mut left_out) {
            records_cut = Some(*s);
        }
    }
    let from_profiler_steps = rule == StepRule::ProfilerStep;
    if hosts.is_empty() {
        return StepAnalysis {
            from_profiler_steps: false,
            rule,
            ..StepAnalysis::default()
        };
    }
    let (mut kept, mut dropped) = extend_and_trim(trace, &hosts, rule != StepRule::WholeTrace);
    if let (Some(s), false) = (stop, rule == StepRule::WholeTrace) {
        // the steps whose host span ends after the stop hold launches without records
        let complete = hosts[..kept.len()]
            .iter()
            .take_while(|h| h.host.end <= s.at)
            .count();
        if complete >= records::STOP_MIN_STEPS && complete < kept.len() {
            let reason = format!(
                "device records stop {:.2} ms into the capture: {} of the {} launches from \
                 there have no device record (profiler buffers full or events dropped), \
                 against {} of the {} before",
                s.at.saturating_sub(trace.start()) as f64 / 1e6,
                s.unrecorded_after,
                s.after,
                s.unrecorded_before,
                s.before
            );
            let cut: Vec<DroppedStep> = hosts[complete..kept.len()]
                .iter()
                .map(|h| DroppedStep {
                    name: h.name.clone(),
                    reason: reason.clone(),
                    at_stop: false,
                })
                .collect();
            dropped.splice(0..0, cut);
            kept.truncate(complete);
            records_cut = Some(*s);
        }
    }
    let roles = role_sets(trace);
    let steps: Vec<Step> = hosts
        .into_iter()
        .zip(kept)
        .map(|(h, (span, device_activities))| Step {
            name: h.name,
            number: h.number,
            span,
            breakdown: breakdown(&roles, span),
            host_span: h.host,
            device_activities,
            phase: h.phase,
        })
        .collect();
    let mut a = StepAnalysis::of(steps, from_profiler_steps, rule, dropped);
    a.left_out = left_out;
    a.records_cut = records_cut;
    a
}

/// *Steps* 6 on a trace without step marks: its one step ends where the device records stop
/// when at least [`records::STOP_MIN_LAUNCHES`] launches with their records come before
/// (the rest is left out); true when it was cut.
fn cut_whole_trace(s: &RecordsStop, hosts: &mut [HostStep], left_out: &mut Vec<LeftOut>) -> bool {
    let [h] = hosts else {
        return false;
    };
    let complete = s.before - s.unrecorded_before;
    if complete < records::STOP_MIN_LAUNCHES || s.at <= h.host.start || s.at >= h.host.end {
        return false;
    }
    // an idle tail after the last device work begins later than the stop: the cut covers it
    left_out.retain(|l| l.what != TAIL_AFTER_DEVICE);
    left_out.push(LeftOut {
        what: AFTER_RECORDS_STOP,
        span: Interval::new(s.at, h.host.end),
    });
    h.host = Interval::new(h.host.start, s.at);
    true
}

/// Hull of the device activities and the host calls that launched them.
fn device_hull(trace: &Trace) -> Option<Interval> {
    let mut hull: Option<Interval> = None;
    for (g, l) in trace.gpu_with_launches().filter(|(g, _)| g.is_activity()) {
        let mut iv = g.interval();
        if let Some(l) = l {
            iv = Interval::new(iv.start.min(l.start), iv.end.max(l.end()));
        }
        hull = Some(match hull {
            None => iv,
            Some(h) => Interval::new(h.start.min(iv.start), h.end.max(iv.end)),
        });
    }
    hull
}

/// A trace without step marks (other than Nsight Systems', whose step is built on its device
/// work already): its one step is cut to the hull of its device work and the calls that
/// launched it, so that set-up before the first device work and an idle tail after the last
/// are not judged as the steady state; the parts cut are returned.
fn trim_to_device(trace: &Trace, rule: StepRule, hosts: &mut [HostStep]) -> Vec<LeftOut> {
    let mut out = Vec::new();
    if rule != StepRule::WholeTrace || trace.source.format == SourceFormat::NsysSqlite {
        return out;
    }
    let [h] = hosts else {
        return out;
    };
    let Some(dev) = device_hull(trace) else {
        return out;
    };
    let (start, end) = (h.host.start.max(dev.start), h.host.end.min(dev.end));
    if start >= end {
        return out;
    }
    if start > h.host.start {
        out.push(LeftOut {
            what: SETUP_BEFORE_DEVICE,
            span: Interval::new(h.host.start, start),
        });
    }
    if end < h.host.end {
        out.push(LeftOut {
            what: TAIL_AFTER_DEVICE,
            span: Interval::new(end, h.host.end),
        });
    }
    h.host = Interval::new(start, end);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::build::TraceBuilder;

    const US: Ns = 1000;

    fn iv(a: Ns, b: Ns) -> Interval {
        Interval::new(a * US, b * US)
    }

    /// A runtime call at `rt_at` (1 µs long) of op `ext` launching one device activity.
    fn launch(
        b: &mut TraceBuilder,
        kind: GpuKind,
        name: &str,
        ext: u64,
        rt_at: f64,
        start: f64,
        dur: f64,
    ) -> u64 {
        let corr = b.runtime("cudaLaunchKernel", ext, rt_at, 1.0);
        b.gpu(kind, name, 0, 7, start, dur, corr);
        corr
    }

    fn kernel(b: &mut TraceBuilder, ext: u64, rt_at: f64, start: f64, dur: f64) {
        launch(b, GpuKind::Kernel, "gemm_kernel", ext, rt_at, start, dur);
    }

    fn names(a: &StepAnalysis) -> Vec<&str> {
        a.steps.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn empty_trace_has_no_step() {
        let a = analyze_steps(&TraceBuilder::new().build());
        assert!(a.steps.is_empty());
        assert!(a.dropped.is_empty());
        assert!(!a.from_profiler_steps);
        assert_eq!(a.span, Interval::default());
        assert_eq!(a.average, AverageBreakdown::default());
    }

    #[test]
    fn priority_rule_over_overlapping_roles() {
        let mut b = TraceBuilder::new().device(0, "GPU", 80, 1 << 30);
        b.annotation("ProfilerStep#3", 0.0, 100.0);
        let mm = b.op("aten::mm", 10.0, 30.0);
        let corr = b.runtime("cudaLaunchKernel", mm, 12.0, 8.0);
        b.gpu(GpuKind::Kernel, "gemm_kernel", 0, 7, 15.0, 20.0, corr);
        b.gpu(GpuKind::Memcpy, "Memcpy HtoD", 0, 8, 30.0, 20.0, 0);
        b.gpu(GpuKind::Memset, "Memset", 0, 8, 48.0, 4.0, 0);
        b.op(
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
            60.0,
            20.0,
        );
        b.op("aten::stack", 65.0, 5.0);
        b.cpu(CpuKind::PythonFunction, "train.py(12): step", 1, 0.0, 100.0);
        let a = analyze_steps(&b.build());

        assert_eq!(names(&a), ["ProfilerStep#3"]);
        let s = &a.steps[0];
        assert_eq!(s.number, Some(3));
        assert_eq!(s.span, iv(0, 100));
        assert_eq!(s.device_activities, 1);
        assert_eq!(
            s.breakdown,
            Breakdown {
                kernel: 20 * US, // [15, 35]
                memcpy: 15 * US, // [35, 50]: the part under the kernel went to Kernel
                memset: 2 * US,  // [50, 52]
                communication: 0,
                runtime: 3 * US,     // [12, 15]
                dataloader: 20 * US, // [60, 80], aten::stack inside it included
                cpu_exec: 2 * US,    // [10, 12] of aten::mm
                other: 38 * US,      // python_function frames are not CPU Exec
            }
        );
        assert_eq!(s.breakdown.total(), s.span.len());
        assert_eq!(a.average.kernel, (20 * US) as f64);
        assert_eq!(a.average.total, (100 * US) as f64);
        assert_eq!(a.span, iv(0, 100));
        assert!(a.from_profiler_steps);
    }

    #[test]
    fn communication_by_host_collective_name_and_launching_op() {
        let mut b = TraceBuilder::new();
        b.op("ProfilerStep#1", 0.0, 100.0);
        let ar = b.op("nccl:all_reduce", 10.0, 20.0);
        let c1 = b.runtime("cudaLaunchKernel", ar, 12.0, 2.0);
        b.gpu(
            GpuKind::Kernel,
            "ncclKernel_AllReduce_RING_LL_Sum_float",
            0,
            20,
            20.0,
            30.0,
            c1,
        );
        // not a communication name, but launched by the collective
        let c2 = b.runtime("cudaLaunchKernel", ar, 15.0, 1.0);
        b.gpu(
            GpuKind::Kernel,
            "custom_reduce_kernel",
            0,
            20,
            60.0,
            10.0,
            c2,
        );
        let add = b.op("aten::add", 80.0, 10.0);
        let c3 = b.runtime("cudaLaunchKernel", add, 81.0, 1.0);
        b.gpu(GpuKind::Kernel, "elementwise_kernel", 0, 7, 85.0, 10.0, c3);
        // a legacy `python` event is CPU Exec
        b.cpu(CpuKind::Python, "python_frame", 2, 96.0, 2.0);
        let a = analyze_steps(&b.build());
        let bd = a.steps[0].breakdown;
        assert_eq!(bd.kernel, 10 * US);
        assert_eq!(bd.communication, 50 * US); // [10, 50] ∪ [60, 70]
        assert_eq!(bd.runtime, US); // [81, 82]; the others are under communication
        assert_eq!(bd.cpu_exec, 4 * US + 2 * US); // [80, 81] ∪ [82, 85] ∪ python [96, 98]
        assert_eq!(bd.other, 33 * US);
        assert_eq!(bd.total(), 100 * US);
        assert_eq!(a.steps[0].device_activities, 3);
    }

    #[test]
    fn steps_extend_to_their_device_work_and_skip_stale_work() {
        let mut b = TraceBuilder::new();
        // stale kernel launched before the first step, ends at 22
        kernel(&mut b, 0, 0.0, 5.0, 17.0);
        b.annotation("ProfilerStep#1", 10.0, 40.0);
        b.annotation("ProfilerStep#2", 50.0, 40.0);
        b.annotation("ProfilerStep#3", 90.0, 40.0);
        kernel(&mut b, 0, 20.0, 25.0, 45.0); // step 1 → [25, 70]
        kernel(&mut b, 0, 60.0, 70.0, 30.0); // step 2 → [70, 100]
        kernel(&mut b, 0, 95.0, 100.0, 10.0); // step 3 → [100, 110]
                                              // a launch straddling the end of step 1 belongs to no step
        let corr = b.runtime("cudaLaunchKernel", 0, 49.0, 3.0);
        b.gpu(GpuKind::Kernel, "late_kernel", 0, 7, 200.0, 10.0, corr);
        let a = analyze_steps(&b.build());

        let spans: Vec<Interval> = a.steps.iter().map(|s| s.span).collect();
        assert_eq!(spans, [iv(22, 70), iv(70, 100), iv(100, 130)]);
        let hosts: Vec<Interval> = a.steps.iter().map(|s| s.host_span).collect();
        assert_eq!(hosts, [iv(10, 50), iv(50, 90), iv(90, 130)]);
        assert_eq!(a.span, iv(22, 130));
        assert!(a.dropped.is_empty());
        for s in &a.steps {
            assert_eq!(s.breakdown.total(), s.span.len());
            assert_eq!(s.device_activities, 1);
        }
        assert_eq!(a.steps[0].breakdown.kernel, 45 * US);
        assert_eq!(a.average.total, (108 * US) as f64 / 3.0);
    }

    #[test]
    fn no_extension_without_device_work() {
        let mut b = TraceBuilder::new();
        b.annotation("ProfilerStep#1", 0.0, 10.0);
        b.annotation("ProfilerStep#2", 10.0, 10.0);
        b.op("aten::empty", 2.0, 1.0);
        // unlinked kernel after the steps: no extension, no trimming
        b.gpu(GpuKind::Kernel, "k", 0, 7, 30.0, 10.0, 0);
        let a = analyze_steps(&b.build());
        assert_eq!(names(&a), ["ProfilerStep#1", "ProfilerStep#2"]);
        assert_eq!(a.span, iv(0, 20));
        assert_eq!(a.steps[0].breakdown.cpu_exec, US);
    }

    #[test]
    fn tail_trimming() {
        // device activities per step: 5, 5, 3, 0 → the 3 is < 80 % of 5; the empty tail goes
        let build = |third: usize| {
            let mut b = TraceBuilder::new();
            for (i, n) in [5, 5, third, 0].into_iter().enumerate() {
                let t0 = i as f64 * 10.0;
                b.annotation(&format!("ProfilerStep#{}", i + 1), t0, 10.0);
                for j in 0..n {
                    kernel(&mut b, 0, t0 + j as f64, t0 + 1.0, 0.5);
                }
            }
            analyze_steps(&b.build())
        };
        let a = build(3);
        assert_eq!(names(&a), ["ProfilerStep#1", "ProfilerStep#2"]);
        let dropped: Vec<&str> = a.dropped.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(dropped, ["ProfilerStep#3", "ProfilerStep#4"]);
        assert!(
            a.dropped[0].reason.contains("80%"),
            "{}",
            a.dropped[0].reason
        );
        assert!(a.dropped[1].reason.contains("without device work"));
        assert_eq!(a.span, iv(0, 20));

        // exactly 80 %: kept
        let a = build(4);
        assert_eq!(
            names(&a),
            ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"]
        );
        assert_eq!(a.dropped.len(), 1);
        assert_eq!(a.steps[2].device_activities, 4);
    }

    #[test]
    fn single_step_is_never_trimmed() {
        let mut b = TraceBuilder::new();
        b.annotation("ProfilerStep#7", 0.0, 10.0);
        b.annotation("ProfilerStep#8", 10.0, 10.0);
        kernel(&mut b, 0, 1.0, 2.0, 1.0);
        let a = analyze_steps(&b.build());
        // two steps, the second without device work: dropped
        assert_eq!(names(&a), ["ProfilerStep#7"]);

        let mut b = TraceBuilder::new();
        b.annotation("ProfilerStep#7", 0.0, 10.0);
        let a = analyze_steps(&b.build());
        assert_eq!(names(&a), ["ProfilerStep#7"]);
        assert!(a.dropped.is_empty());
    }

    /// `steps` `ProfilerStep`s of 100 µs, each launching 10 kernels; from step `lossy` on,
    /// only every third launch has its kernel recorded.
    fn lossy_steps(steps: usize, lossy: usize) -> Trace {
        let mut b = TraceBuilder::new();
        for s in 0..steps {
            let t0 = 100.0 * s as f64;
            b.annotation(&format!("ProfilerStep#{s}"), t0, 100.0);
            for j in 0..10 {
                let at = t0 + 5.0 + 9.0 * j as f64;
                let corr = b.runtime("cudaLaunchKernel", 0, at, 2.0);
                if s < lossy || j % 3 == 0 {
                    b.gpu(GpuKind::Kernel, "gemm", 0, 7, at + 3.0, 5.0, corr);
                }
            }
        }
        b.build()
    }

    #[test]
    fn steps_cut_where_device_records_stop() {
        let t = lossy_steps(6, 4);
        let stop = records::stop(&t).unwrap();
        // the running sum peaks after the first (recorded) launch of step 4
        assert_eq!((stop.before, stop.unrecorded_before), (41, 0));
        assert_eq!((stop.after, stop.unrecorded_after), (19, 12));
        assert_eq!(stop.at, 414 * US);
        let a = analyze_steps(&t);
        assert_eq!(
            names(&a),
            [
                "ProfilerStep#0",
                "ProfilerStep#1",
                "ProfilerStep#2",
                "ProfilerStep#3"
            ]
        );
        assert_eq!(a.records_cut, Some(stop));
        let dropped: Vec<&str> = a.dropped.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(dropped, ["ProfilerStep#4", "ProfilerStep#5"]);
        assert!(
            a.dropped[0].reason.starts_with(
                "device records stop 0.41 ms into the capture: 12 of the 19 launches from there \
                 have no device record"
            ),
            "{}",
            a.dropped[0].reason
        );
        // one complete step before the stop: too little to judge, nothing is cut
        let a = analyze_steps(&lossy_steps(6, 1));
        assert_eq!(a.steps.len(), 6);
        assert_eq!(a.records_cut, None);
        // complete records: nothing is cut
        let a = analyze_steps(&lossy_steps(6, 6));
        assert_eq!((a.steps.len(), a.records_cut), (6, None));
    }

    #[test]
    fn step_without_marks_cut_where_device_records_stop() {
        // 150 launches with their kernels, then 60 of which only every third has one (the
        // last kernel ends at 2083 µs: the step ended there before the cut)
        let mut b = TraceBuilder::new();
        b.op("aten::mm", 0.0, 3000.0);
        for j in 0..210 {
            let at = 5.0 + 10.0 * j as f64;
            let corr = b.runtime("cudaLaunchKernel", 0, at, 2.0);
            if j < 150 || j % 3 == 0 {
                b.gpu(GpuKind::Kernel, "gemm", 0, 7, at + 3.0, 5.0, corr);
            }
        }
        let t = b.build();
        let stop = records::stop(&t).unwrap();
        assert_eq!(
            (stop.before, stop.after, stop.unrecorded_after),
            (151, 59, 40)
        );
        let a = analyze_steps(&t);
        assert_eq!(a.records_cut, Some(stop));
        assert_eq!(a.steps[0].host_span, iv(5, 1515));
        assert_eq!(
            a.left_out,
            [
                LeftOut {
                    what: SETUP_BEFORE_DEVICE,
                    span: iv(0, 5)
                },
                LeftOut {
                    what: AFTER_RECORDS_STOP,
                    span: iv(1515, 2083)
                }
            ]
        );
        // fewer than 100 complete launches before the stop: nothing is cut
        let mut b = TraceBuilder::new();
        b.op("aten::mm", 0.0, 3000.0);
        for j in 0..120 {
            let at = 5.0 + 10.0 * j as f64;
            let corr = b.runtime("cudaLaunchKernel", 0, at, 2.0);
            if j < 60 || j % 3 == 0 {
                b.gpu(GpuKind::Kernel, "gemm", 0, 7, at + 3.0, 5.0, corr);
            }
        }
        let a = analyze_steps(&b.build());
        assert_eq!(a.records_cut, None);
    }

    #[test]
    fn without_profiler_steps_one_step_over_the_operators() {
        let mut b = TraceBuilder::new();
        b.annotation("forward", 0.0, 100.0); // annotations do not set the plugin's hull
        b.op("aten::empty", 10.0, 10.0);
        let op = b.op("aten::mm", 30.0, 20.0);
        let corr = b.runtime("cudaLaunchKernel", op, 31.0, 1.0);
        b.gpu(GpuKind::Kernel, "gemm", 0, 7, 40.0, 20.0, corr);
        let a = analyze_steps(&b.build());
        assert_eq!(names(&a), ["0"]);
        assert!(!a.from_profiler_steps);
        assert_eq!(a.steps[0].number, None);
        // the plugin's hull (10..50) cut to the device work and its launch (31..60): the
        // set-up before the first launch is left out (issue 30)
        assert_eq!(a.steps[0].host_span, iv(31, 50));
        assert_eq!(a.span, iv(31, 60));
        assert_eq!(
            a.left_out,
            [LeftOut {
                what: SETUP_BEFORE_DEVICE,
                span: iv(10, 31)
            }]
        );
        let bd = a.steps[0].breakdown;
        assert_eq!(bd.kernel, 20 * US);
        assert_eq!(bd.runtime, US);
        assert_eq!(bd.cpu_exec, 8 * US); // the "forward" annotation covers the rest
        assert_eq!(bd.other, 0);
    }

    #[test]
    fn device_only_trace_uses_the_hull() {
        let mut b = TraceBuilder::new();
        b.gpu(GpuKind::Kernel, "k", 0, 7, 5.0, 10.0, 0);
        b.gpu(GpuKind::Memcpy, "m", 0, 7, 20.0, 5.0, 0);
        let a = analyze_steps(&b.build());
        assert_eq!(names(&a), ["0"]);
        assert_eq!(a.span, iv(5, 25));
        assert_eq!(a.steps[0].breakdown.kernel, 10 * US);
        assert_eq!(a.steps[0].breakdown.memcpy, 5 * US);
        assert_eq!(a.steps[0].breakdown.other, 5 * US);
    }

    #[test]
    fn gpu_annotation_twins_and_duplicates_are_not_steps() {
        let mut b = TraceBuilder::new();
        b.annotation("ProfilerStep#1", 0.0, 10.0);
        b.op("ProfilerStep#1", 0.0, 10.0); // exact duplicate
        b.gpu(GpuKind::Annotation, "ProfilerStep#1", 0, 7, 2.0, 10.0, 0);
        b.annotation("ProfilerStep#2", 10.0, 10.0);
        b.gpu(GpuKind::Annotation, "ProfilerStep#2", 0, 7, 12.0, 10.0, 0);
        let a = analyze_steps(&b.build());
        assert_eq!(names(&a), ["ProfilerStep#1", "ProfilerStep#2"]);
        // neither the steps themselves nor the GPU annotations are CPU Exec
        assert_eq!(a.steps[0].breakdown.cpu_exec, 0);
        assert_eq!(a.steps[0].breakdown.other, 10 * US);
    }

    #[test]
    fn driver_launches_extend_steps_but_are_not_runtime() {
        let mut b = TraceBuilder::new();
        b.annotation("ProfilerStep#1", 0.0, 100.0);
        let op = b.op("triton_op", 10.0, 20.0);
        let corr = b.runtime("cuLaunchKernel", op, 12.0, 2.0);
        b.gpu(
            GpuKind::Kernel,
            "triton_poi_fused_add_0",
            0,
            7,
            50.0,
            100.0,
            corr,
        );
        let mut t = b.build();
        for e in t.cpu.iter_mut().filter(|e| e.correlation == corr) {
            e.kind = CpuKind::Driver;
        }
        let a = analyze_steps(&t);
        let s = &a.steps[0];
        assert_eq!(s.span, iv(0, 150));
        assert_eq!(s.device_activities, 1);
        assert_eq!(s.breakdown.runtime, 0);
        assert_eq!(s.breakdown.kernel, 100 * US);
        assert_eq!(s.breakdown.cpu_exec, 20 * US);
        assert_eq!(s.breakdown.other, 30 * US);
    }

    #[test]
    fn odd_steps_do_not_panic() {
        let mut b = TraceBuilder::new();
        b.annotation("ProfilerStep#x", 0.0, 0.0); // no number, zero length
        b.annotation("ProfilerStep#2", 0.0, 10.0);
        kernel(&mut b, 0, 1.0, 2.0, 1.0);
        let a = analyze_steps(&b.build());
        // sorted by start, longer first; the empty one launched nothing and is trimmed
        assert_eq!(names(&a), ["ProfilerStep#2"]);
        assert_eq!(a.dropped[0].name, "ProfilerStep#x");
        assert!(a.steps.iter().all(|s| s.breakdown.total() == s.span.len()));
        for s in &a.steps {
            assert!(s.span.start >= 0);
        }
    }
}
