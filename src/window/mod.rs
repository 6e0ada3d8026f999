//! The analyzed window: which part of a trace the analyses look at, and why.
//!
//! Data flows `ingest → model → window → analysis → diagnose → report`: a [`WindowSpec`] (what
//! the user asked for) and the steps of [`steps`] give a [`Window`] (what is counted), which
//! every analysis then takes. This stage holds the facts of the trace that choosing a window
//! needs: its steps ([`steps`]) and its annotation tree ([`annotations`]). It may use the
//! model (and the ingest's time conversion), never the analyses above it.
//!
//! # Specs
//!
//! | spec | CLI | counted |
//! |---|---|---|
//! | [`WindowSpec::Auto`] (default) | — | the steady state: every step except warm-up steps that contain compile or autotune work and outlier steps (see below) |
//! | [`WindowSpec::All`] | `--all` | every step |
//! | [`WindowSpec::Steps`] | `--steps 3..6`, `--steps 5`, `--steps 3..` | the steps whose `ProfilerStep#N` (or server `Iteration#N`) number is in the range (inclusive) |
//! | [`WindowSpec::Time`] | `--time 1000..2500` | the time range (µs from the trace start, [`Trace::start`]) |
//! | [`WindowSpec::Focus`] | `--focus NAME` | inside another window, only the time of the annotations named `NAME` (see *Focus*) |
//!
//! Steps dropped by the tail rule of [`steps`], or because the device records stop before
//! they end ([`records`], *Steps* 6 of [`steps`]), are never counted (they are listed in
//! [`Window::excluded`] with that rule's reason).
//!
//! # What a window counts
//!
//! * [`Window::mask`]: the counted time, an [`IntervalSet`]. For steps: the included steps'
//!   spans (device-extended, as in `steps`), each run of consecutive included steps from its
//!   first start to its last end (so the all-steps span when nothing is excluded in between).
//!   For a time range: the range, clipped to the trace. For a focus: see below.
//! * [`Window::host`]: the host-side time in which a launch counts. For steps: the union of
//!   the included steps' host spans (the `ProfilerStep#N` spans). For a time range: the range.
//! * [`Window::span`]: the hull of the mask (what analyses that take one interval use).
//! * A device activity (kernel, copy, fill) **belongs to the window** when its launching
//!   runtime/driver call lies inside one host span (starts at or after its start, ends at or
//!   before its end — the rule `steps` uses for a step's device work), or, for activities
//!   whose launch is not in the trace, when it starts inside the mask
//!   ([`Window::counts_activity`]).
//!
//! # The automatic steady state
//!
//! 1. **Compile work** is found on every host thread ([`CompileWork`]): spans whose name says
//!    they are TorchDynamo tracing, AOTAutograd/Inductor compilation, Triton/Inductor autotune
//!    benchmarking or cuDNN algorithm search (see [`compile_kind`] for the exact names,
//!    including `python_function` frames of those modules), plus the **first run of a compiled
//!    region** (`Torch-Compiled Region: …`, `## Call CompiledFxGraph … ##`) when it took more
//!    than 1.5× the median of that region's later runs and at least 1 ms more (lazy
//!    compilation, CUDA-graph recording or autotuning happened inside it). Its time is the
//!    union of those spans; its count the number of spans not nested in another one on the
//!    same thread.
//! 2. A step is a **warm-up step** when its span (host ∪ device-extended) overlaps compile
//!    work: it is excluded with the compile time it contains.
//! 3. Of the remaining steps, a step is an **outlier** when its duration is over 1.5× the
//!    median of those of its kind (server iterations: prefill, decode, mixed, unmarked;
//!    `ProfilerStep`s are all of one kind) (`2 × duration > 3 × median`, integer ns; the median of an even count is the
//!    mean of the two middle values; steps left empty by the device extension do not count in
//!    the median): it is excluded with its ratio to the median.
//! 4. When every step has compile work, nothing is excluded for it (a note says so): a window
//!    must keep at least one step.
//! 5. **Warm-up candidates** (before the outlier rule, [`leading_warmup`]): the first steps after
//!    the profiler started are warm-up whether or not they hold compile work: walking from the
//!    first remaining step, a step over 1.5× the median of the *later* remaining steps of its
//!    kind is excluded, and the walk stops at the first step that is not (a step whose kind
//!    has no later step is passed over); at most half of the steps are left out this way. (The
//!    outlier rule's median includes the step itself, so of two steps it never drops the slow
//!    first one.)
//! 6. **Serving captures** (server iterations of several kinds, [`dominant_run`]): the window
//!    is the longest run of the dominant kind — the kind with the most remaining iterations
//!    (on a tie, the most time): decode-only, prefill+decode (mixed) or prefill. A run ends at
//!    an iteration of another kind (a left-out iteration of the same kind does not end it).
//!    The other kinds are left out with `other kind (…)` and reported per kind, with their mean
//!    duration over the judged kind's ([`Window::judged_kind`]); a kind seen once or twice is
//!    thus compared, never judged alone, and two captures of one workload are judged on the
//!    same kind whether or not a lone prefill landed in one of them.
//!
//! # No steady state
//!
//! A window is a steady state only when something repeats. [`one_pass`] says what the one
//! pass is when nothing does (for the `auto`, `--all` and `--steps` windows;
//! [`Window::one_pass`]), and the verdict then says "No steady state" instead of a bound:
//!
//! * `ProfilerStep` steps: a single step holding compile or module-load work (a cold call).
//!   A single step without it may be warm (`ProfilerStep#N` with N ≥ 1 follows N unrecorded
//!   steps of the profiler's schedule; a `ProfilerStep#0` may follow runs before the
//!   profiler started): it is judged, and a note says nothing repeats to show it is typical.
//! * Server iterations: a single iteration, or a judged kind with one iteration beside
//!   iterations of other kinds.
//! * No step marks: every launch of device work lies inside one top-level host span (an
//!   operator or annotation not nested in another on its thread) — one cold call, one graph
//!   replay. A launch outside every top-level span, or in a second one, is a repetition (or
//!   unknown: nothing is said).
//!
//! Compile work is measured over the whole trace and reported whatever the spec (time, count,
//! steps that contain it), never silently dropped.
//!
//! # Focus
//!
//! `Focus { name, within }` first selects `within`, then keeps the annotation calls (the
//! instances of [`annotations`], any thread) whose name equals `name` — or, when
//! no annotation has exactly that name, contains it — and that overlap `within`'s host time.
//! Each call counts from its start to the later of its end and the end of the last device
//! activity launched inside it (its device tail); the mask is the union of those intervals
//! within `within`'s mask, the host time the union of the calls within `within`'s host time.
//! The steps of `within` are kept (the step table still describes whole steps).

pub mod annotations;
pub mod compile;
pub mod iterations;
pub mod records;
pub mod repeats;
pub mod steps;

use compile::step_extent;
pub use compile::{
    compile_kind, compile_work, startup_call, CompileKind, CompileKindWork, CompileStep,
    CompileWork, StartupCall,
};

use crate::model::fast::{HashMap, NameMemo};
use std::fmt;

use crate::model::{CpuEvent, CpuKind, GpuEvent, Interval, IntervalSet, Ns, Trace, NONE};
use annotations::Annotations;
use iterations::IterationPhase;
use steps::{Step, StepAnalysis};

/// What the user asked to analyze.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum WindowSpec {
    /// Steady state: every step except warm-up (compile) and outlier steps.
    #[default]
    Auto,
    /// Every step.
    All,
    /// `ProfilerStep#N` numbers, inclusive; `None` = open end.
    Steps {
        /// First step number.
        first: Option<i64>,
        /// Last step number.
        last: Option<i64>,
    },
    /// A time range in ns from [`Trace::start`]; `None` = open end.
    Time {
        /// Start offset.
        start: Option<Ns>,
        /// End offset.
        end: Option<Ns>,
    },
    /// Only the time inside annotations named `name`, within another window.
    Focus {
        /// Annotation name (exact, else substring).
        name: String,
        /// The window to focus inside.
        within: Box<WindowSpec>,
    },
}

impl WindowSpec {
    /// The window of the front ends' options (the command, the Python API, the MCP server):
    /// `all`, else `steps`, else `time`, else the steady state; inside annotations named `focus`
    /// when given. `all`, `steps` and `time` exclude each other: giving two is an error.
    pub fn compose(
        all: bool,
        steps: Option<WindowSpec>,
        time: Option<WindowSpec>,
        focus: Option<String>,
    ) -> Result<WindowSpec, String> {
        let base = match (all, steps, time) {
            (true, Some(_), _) => {
                return Err("all steps and a range of steps exclude each other".into())
            }
            (true, _, Some(_)) => {
                return Err("all steps and a time range exclude each other".into())
            }
            (_, Some(_), Some(_)) => {
                return Err("a range of steps and a time range exclude each other".into())
            }
            (true, None, None) => WindowSpec::All,
            (false, Some(s), None) => s,
            (false, None, Some(t)) => t,
            (false, None, None) => WindowSpec::Auto,
        };
        Ok(match focus {
            Some(name) => WindowSpec::Focus {
                name,
                within: Box::new(base),
            },
            None => base,
        })
    }
}

fn fmt_us_arg(ns: Ns) -> String {
    if ns % 1000 == 0 {
        format!("{}", ns / 1000)
    } else {
        format!("{}", ns as f64 / 1000.0)
    }
}

impl fmt::Display for WindowSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let opt = |v: Option<String>| v.unwrap_or_default();
        match self {
            WindowSpec::Auto => write!(f, "auto"),
            WindowSpec::All => write!(f, "--all"),
            WindowSpec::Steps { first, last } if first == last && first.is_some() => {
                write!(f, "--steps {}", first.unwrap_or_default())
            }
            WindowSpec::Steps { first, last } => write!(
                f,
                "--steps {}..{}",
                opt(first.map(|v| v.to_string())),
                opt(last.map(|v| v.to_string()))
            ),
            WindowSpec::Time { start, end } => write!(
                f,
                "--time {}..{}",
                opt(start.map(fmt_us_arg)),
                opt(end.map(fmt_us_arg))
            ),
            WindowSpec::Focus { name, within } => match **within {
                WindowSpec::Auto => write!(f, "--focus {name}"),
                ref w => write!(f, "{w} --focus {name}"),
            },
        }
    }
}

/// Parses `3..6`, `5`, `3..`, `..6` (inclusive `ProfilerStep#N` numbers).
pub fn parse_steps(s: &str) -> Result<WindowSpec, String> {
    let s = s.trim();
    let num = |t: &str| -> Result<Option<i64>, String> {
        let t = t.trim();
        if t.is_empty() {
            return Ok(None);
        }
        t.parse::<i64>()
            .map(Some)
            .map_err(|_| format!("`{t}` is not a step number (expected e.g. 3..6 or 5)"))
    };
    let (first, last) = match s.split_once("..") {
        Some((a, b)) => (num(a)?, num(b.strip_prefix('=').unwrap_or(b))?),
        None => {
            let n = num(s)?;
            if n.is_none() {
                return Err("empty step range (expected e.g. 3..6 or 5)".into());
            }
            (n, n)
        }
    };
    if let (Some(a), Some(b)) = (first, last) {
        if a > b {
            return Err(format!("step range {a}..{b} is empty (first > last)"));
        }
    }
    Ok(WindowSpec::Steps { first, last })
}

/// Parses `START..END` in µs from the trace start (decimals allowed, either end may be open).
pub fn parse_time(s: &str) -> Result<WindowSpec, String> {
    let s = s.trim();
    let Some((a, b)) = s.split_once("..") else {
        return Err(format!(
            "`{s}` is not a time range (expected START..END in µs, e.g. 1000..2500)"
        ));
    };
    let num = |t: &str| -> Result<Option<Ns>, String> {
        let t = t
            .trim()
            .trim_end_matches("us")
            .trim_end_matches("µs")
            .trim();
        if t.is_empty() {
            return Ok(None);
        }
        crate::ingest::kineto::event::micros_to_ns(t)
            .map(Some)
            .ok_or_else(|| match t.parse::<f64>() {
                Ok(_) => format!("`{t}` µs is outside the trace (past the largest time, 2^62 ns)"),
                Err(_) => format!("`{t}` is not a number of µs"),
            })
    };
    let (start, end) = (num(a)?, num(b)?);
    if let (Some(x), Some(y)) = (start, end) {
        if x >= y {
            return Err(format!("time range {s} is empty (start ≥ end)"));
        }
    }
    Ok(WindowSpec::Time { start, end })
}

/// Why a window could not be selected (the CLI exits with code 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowError(pub String);

impl fmt::Display for WindowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WindowError {}

/// A step left out of the window, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exclusion {
    /// Step name (`ProfilerStep#N`).
    pub step: String,
    /// Why.
    pub reason: String,
    /// Left out because the profiler stopped before its device work was all captured
    /// ([`steps::DroppedStep::at_stop`]).
    pub at_stop: bool,
}

/// Median of integer values (mean of the two middle ones for an even count; 0 when empty).
pub fn median(v: &[Ns]) -> Ns {
    if v.is_empty() {
        return 0;
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        // (a + b) / 2 without overflow
        let (a, b) = (s[n / 2 - 1], s[n / 2]);
        a / 2 + b / 2 + (a % 2 + b % 2) / 2
    }
}

/// Matched annotation calls of a focus window.
#[derive(Clone, Debug, PartialEq)]
pub struct FocusInfo {
    /// The name asked for.
    pub name: String,
    /// Distinct annotation names that matched.
    pub matched: Vec<String>,
    /// Calls counted.
    pub calls: u64,
}

/// The analyzed window.
#[derive(Clone, Debug)]
pub struct Window {
    /// What was asked.
    pub spec: WindowSpec,
    /// Hull of [`Window::mask`] (empty at 0 when nothing is counted).
    pub span: Interval,
    /// Counted time.
    pub mask: IntervalSet,
    /// Host time in which launches count.
    pub host: IntervalSet,
    /// Included steps: indices into the `StepAnalysis::steps` given to [`select`].
    pub steps: Vec<usize>,
    /// Steps left out, with the reason (tail-dropped steps first, then in step order).
    pub excluded: Vec<Exclusion>,
    /// Compile work over the whole trace.
    pub compile: CompileWork,
    /// For focus windows: what matched.
    pub focus: Option<FocusInfo>,
    /// Remarks for the reader (e.g. why nothing could be excluded).
    pub notes: Vec<String>,
    /// When nothing in the capture repeats (see *No steady state* in the module docs): what
    /// the one pass is (`one iteration (Iteration#1 decode)`); `None` when something repeats
    /// or the window was given by time or focus.
    pub one_pass: Option<String>,
    /// The kind of server iteration the window judges (the dominant kind, see the module
    /// docs); `None` for other steps or when the iterations have one kind only.
    pub judged_kind: Option<Option<IterationPhase>>,
    /// [`Window::counts_activity`] of every device event of the trace, as bits, found on
    /// first use by [`Window::counts_activity_at`] (several analyses and rules ask it of
    /// every device event; each answer costs a look-up of the launching call).
    pub counted: std::sync::OnceLock<Vec<u64>>,
}

impl Window {
    /// True when a launching call lies inside one host span of the window.
    pub fn contains_launch(&self, call: &CpuEvent) -> bool {
        let spans = self.host.spans();
        // last span starting at or before the call
        let i = spans.partition_point(|h| h.start <= call.start);
        i > 0 && call.end() <= spans[i - 1].end
    }

    /// True when a device activity belongs to the window (see the module docs).
    pub fn counts_activity(&self, trace: &Trace, g: &GpuEvent) -> bool {
        self.counts_launched(g, trace.cpu.get(g.launch as usize))
    }

    /// [`Window::counts_activity`] of `g` with its launch call (`None`: not linked) in hand.
    fn counts_launched(&self, g: &GpuEvent, call: Option<&crate::model::CpuEvent>) -> bool {
        if let Some(call) = call {
            self.contains_launch(call)
        } else {
            let spans = self.mask.spans();
            let i = spans.partition_point(|h| h.start <= g.start);
            i > 0 && g.start < spans[i - 1].end
        }
    }

    /// [`Window::counts_activity`] of `trace.gpu[i]`, from bits found once per window (the
    /// window must be one selected from `trace`).
    pub fn counts_activity_at(&self, trace: &Trace, i: usize) -> bool {
        let bits = self.counted.get_or_init(|| {
            let mut bits = vec![0u64; trace.gpu.len().div_ceil(64)];
            for (i, (g, call)) in trace.gpu_with_launches().enumerate() {
                if self.counts_launched(g, call) {
                    bits[i / 64] |= 1 << (i % 64);
                }
            }
            bits
        });
        bits[i / 64] >> (i % 64) & 1 != 0
    }

    /// Steps at the end left out because the profiler stopped before their device work was
    /// all captured ([`Exclusion::at_stop`]: the capture check's `steps-cut`).
    pub fn steps_cut_at_stop(&self) -> usize {
        self.excluded.iter().filter(|e| e.at_stop).count()
    }

    /// Counted time in ns.
    pub fn duration(&self) -> Ns {
        self.mask.total()
    }

    /// A copy of the step analysis restricted to the window's steps, its average and span
    /// recomputed over them (dropped steps and the window's exclusions are listed in
    /// `dropped`).
    pub fn restrict_steps(&self, all: &StepAnalysis) -> StepAnalysis {
        let steps: Vec<Step> = self
            .steps
            .iter()
            .filter_map(|&i| all.steps.get(i).cloned())
            .collect();
        let dropped = self
            .excluded
            .iter()
            .map(|e| steps::DroppedStep {
                name: e.step.clone(),
                reason: e.reason.clone(),
                at_stop: e.at_stop,
            })
            .collect();
        let mut a = StepAnalysis::of(steps, all.from_profiler_steps, all.rule, dropped);
        a.left_out = all.left_out.clone();
        a.records_cut = all.records_cut;
        a
    }
}

fn fmt_ms(ns: Ns) -> String {
    let ms = ns as f64 / 1e6;
    if ms >= 1000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else if ms >= 1.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{:.1} µs", ns as f64 / 1e3)
    }
}

fn step_label(s: &Step) -> String {
    s.name.clone()
}

/// Selects the window for `spec`. `steps` is the full step analysis of the trace and
/// `annotations` its annotation tree (used by focus windows).
pub fn select(
    trace: &Trace,
    steps: &StepAnalysis,
    annotations: &Annotations,
    spec: &WindowSpec,
) -> Result<Window, WindowError> {
    let compile = compile_work(trace, &steps.steps);
    select_with(trace, steps, annotations, spec, compile)
}

/// [`select`] with the compile work of `steps` found already ([`compile_work`]).
pub fn select_with(
    trace: &Trace,
    steps: &StepAnalysis,
    annotations: &Annotations,
    spec: &WindowSpec,
    compile: CompileWork,
) -> Result<Window, WindowError> {
    let mut w = select_inner(trace, steps, annotations, spec, &compile)?;
    w.compile = compile;
    if matches!(spec, WindowSpec::All | WindowSpec::Steps { .. }) {
        w.one_pass = one_pass(trace, steps, &w.compile, None);
    }
    if w.mask.spans().len() > 1 {
        let what = match w.spec {
            WindowSpec::Focus { .. } => "the time between the focused calls".to_string(),
            _ => "the excluded steps in between".to_string(),
        };
        w.notes.push(format!(
            "the GPU summary, GPU timeline, kernel and operator tables take one interval: they \
             cover {} from the first to the last counted moment, {what} included; the steps \
             and phases count only the window",
            fmt_ms(w.span.len())
        ));
    }
    Ok(w)
}

/// Every step ([`WindowSpec::All`]); never fails.
pub fn select_all(trace: &Trace, steps: &StepAnalysis) -> Window {
    let mut w = from_steps(
        &WindowSpec::All,
        steps,
        (0..steps.steps.len()).collect(),
        vec![],
        vec![],
    );
    w.compile = compile_work(trace, &steps.steps);
    w
}

fn tail_exclusions(steps: &StepAnalysis) -> Vec<Exclusion> {
    steps
        .dropped
        .iter()
        .map(|d| Exclusion {
            step: d.name.clone(),
            reason: d.reason.clone(),
            at_stop: d.at_stop,
        })
        .collect()
}

fn from_steps(
    spec: &WindowSpec,
    all: &StepAnalysis,
    included: Vec<usize>,
    mut excluded: Vec<Exclusion>,
    notes: Vec<String>,
) -> Window {
    let mut ex = tail_exclusions(all);
    ex.append(&mut excluded);
    // runs of consecutive included steps count from the first start to the last end, gaps
    // between them included (as the all-steps span of `steps` does)
    let mut runs: Vec<Interval> = Vec::new();
    let mut prev: Option<usize> = None;
    for &i in &included {
        let sp = all.steps[i].span;
        match (prev, runs.last_mut()) {
            (Some(p), Some(r)) if p + 1 == i => *r = Interval::new(r.start, r.end.max(sp.end)),
            _ => runs.push(sp),
        }
        prev = Some(i);
    }
    let mask = IntervalSet::from_intervals(runs);
    let host = IntervalSet::from_intervals(included.iter().map(|&i| all.steps[i].host_span));
    Window {
        spec: spec.clone(),
        span: mask.hull().unwrap_or_default(),
        mask,
        host,
        steps: included,
        excluded: ex,
        compile: CompileWork::default(),
        focus: None,
        notes,
        one_pass: None,
        judged_kind: None,
        counted: Default::default(),
    }
}

fn select_inner(
    trace: &Trace,
    all: &StepAnalysis,
    annotations: &Annotations,
    spec: &WindowSpec,
    compile: &CompileWork,
) -> Result<Window, WindowError> {
    match spec {
        WindowSpec::All => Ok(from_steps(
            spec,
            all,
            (0..all.steps.len()).collect(),
            vec![],
            vec![],
        )),
        WindowSpec::Auto => Ok(select_auto(trace, all, spec, compile)),
        WindowSpec::Steps { first, last } => select_steps(all, spec, *first, *last),
        WindowSpec::Time { start, end } => select_time(trace, all, spec, *start, *end),
        WindowSpec::Focus { name, within } => {
            select_focus(trace, all, annotations, spec, name, within, compile)
        }
    }
}

/// The automatic steady state (module docs, *The automatic steady state*): compile warm-up,
/// leading warm-up, outliers, and for serving captures the dominant run.
fn select_auto(
    trace: &Trace,
    all: &StepAnalysis,
    spec: &WindowSpec,
    compile: &CompileWork,
) -> Window {
    let n = all.steps.len();
    let mut notes = Vec::new();
    let mut excluded: Vec<(usize, String)> = Vec::new();
    let compile_in: HashMap<usize, Ns> = compile.steps.iter().map(|c| (c.index, c.time)).collect();
    let mut candidates: Vec<usize> = (0..n).filter(|i| !compile_in.contains_key(i)).collect();
    if candidates.is_empty() {
        if !compile_in.is_empty() {
            notes.push(format!(
                "every step contains compile work ({} in all); none was excluded for it",
                fmt_ms(compile.total)
            ));
        }
        candidates = (0..n).collect();
    } else {
        for (&i, &t) in &compile_in {
            excluded.push((
                i,
                format!(
                    "warm-up: contains {} of torch.compile/autotune work ({})",
                    fmt_ms(t),
                    kinds_in(all, i, compile)
                ),
            ));
        }
    }
    let (keep, warm) = leading_warmup(all, &candidates);
    excluded.extend(warm);
    candidates = keep;
    candidates = exclude_outliers(all, candidates, &mut excluded);
    let mut judged_kind = None;
    if all.rule.is_iteration() {
        if let Some((kind, keep, out)) = dominant_run(all, &candidates) {
            judged_kind = Some(kind);
            excluded.extend(out);
            candidates = keep;
        }
    }
    excluded.sort_by_key(|e| e.0);
    let ex = excluded
        .into_iter()
        .map(|(i, reason)| Exclusion {
            step: step_label(&all.steps[i]),
            reason,
            at_stop: false,
        })
        .collect();
    let mut w = from_steps(spec, all, candidates, ex, notes);
    w.judged_kind = judged_kind;
    w.one_pass = one_pass(trace, all, compile, judged_kind);
    if w.one_pass.is_none() {
        if let Some(note) = lone_warm_step(all) {
            w.notes.push(note);
        }
    }
    w
}

/// Rule 3 of the automatic steady state: of the `candidates` (two or more), the steps over
/// 1.5× the median of their kind go to `excluded` with their ratio; returns the others.
fn exclude_outliers(
    all: &StepAnalysis,
    candidates: Vec<usize>,
    excluded: &mut Vec<(usize, String)>,
) -> Vec<usize> {
    if candidates.len() < 2 {
        return candidates;
    }
    let durs: Vec<Ns> = candidates
        .iter()
        .map(|&i| all.steps[i].span.len())
        .collect();
    // server iterations are compared with those of their own kind (a prefill is
    // not an outlier among decodes)
    let mut medians: Vec<(Option<IterationPhase>, Ns)> = Vec::new();
    for &i in &candidates {
        let phase = all.steps[i].phase;
        if medians.iter().all(|m| m.0 != phase) {
            // steps left empty by the device extension (the previous step's
            // device work ran past them) are no measure of a step's length
            let same: Vec<Ns> = candidates
                .iter()
                .zip(&durs)
                .filter(|(&j, &d)| all.steps[j].phase == phase && d > 0)
                .map(|(_, &d)| d)
                .collect();
            medians.push((phase, median(&same)));
        }
    }
    let mut keep = Vec::new();
    for (&i, &d) in candidates.iter().zip(&durs) {
        let phase = all.steps[i].phase;
        let med = medians.iter().find(|m| m.0 == phase).map_or(0, |m| m.1);
        if med > 0 && 2 * (d as i128) > 3 * (med as i128) {
            excluded.push((
                i,
                format!(
                    "outlier: took {}, {:.1}× the median step ({})",
                    fmt_ms(d),
                    d as f64 / med as f64,
                    fmt_ms(med)
                ),
            ));
        } else {
            keep.push(i);
        }
    }
    keep
}

/// `--steps FIRST..LAST`: the steps whose number is in the range.
fn select_steps(
    all: &StepAnalysis,
    spec: &WindowSpec,
    first: Option<i64>,
    last: Option<i64>,
) -> Result<Window, WindowError> {
    let n = all.steps.len();
    if all.rule == crate::window::iterations::StepRule::WholeTrace {
        return Err(WindowError(
            "--steps: this trace has no ProfilerStep#N annotations and no marked server \
             iterations (use --time or --all)"
                .into(),
        ));
    }
    let inside = |num: Option<i64>| match num {
        Some(v) => first.is_none_or(|f| v >= f) && last.is_none_or(|l| v <= l),
        None => false,
    };
    let (inc, out): (Vec<usize>, Vec<usize>) = (0..n).partition(|&i| inside(all.steps[i].number));
    if inc.is_empty() {
        let avail = match (all.steps.first(), all.steps.last()) {
            (Some(a), Some(b)) => format!("the trace has {} … {}", a.name, b.name),
            _ => "the trace has no usable step".into(),
        };
        let dropped = if all.dropped.is_empty() {
            String::new()
        } else {
            format!(
                " ({} dropped: {})",
                all.dropped
                    .iter()
                    .map(|d| d.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                all.dropped[0].reason
            )
        };
        return Err(WindowError(format!(
            "{spec} selects no step: {avail}{dropped}"
        )));
    }
    let ex = out
        .into_iter()
        .map(|i| Exclusion {
            step: step_label(&all.steps[i]),
            reason: format!("not selected ({spec})"),
            at_stop: false,
        })
        .collect();
    Ok(from_steps(spec, all, inc, ex, vec![]))
}

/// `--time START..END`: the time range, clipped to the trace; the steps entirely inside it.
fn select_time(
    trace: &Trace,
    all: &StepAnalysis,
    spec: &WindowSpec,
    start: Option<Ns>,
    end: Option<Ns>,
) -> Result<Window, WindowError> {
    let n = all.steps.len();
    let origin = trace.start();
    let (lo, hi) = trace.bounds();
    let s = start
        .map(|v| origin.saturating_add(v))
        .unwrap_or(lo)
        .max(lo);
    let e = end.map(|v| origin.saturating_add(v)).unwrap_or(hi).min(hi);
    if s >= e {
        return Err(WindowError(format!(
            "{spec} is outside the trace (it spans 0..{} µs)",
            fmt_us_arg(hi - origin)
        )));
    }
    let iv = Interval::new(s, e);
    let (inc, out): (Vec<usize>, Vec<usize>) = (0..n).partition(|&i| {
        let sp = all.steps[i].span;
        sp.start >= s && sp.end <= e
    });
    let mut ex = tail_exclusions(all);
    ex.extend(out.into_iter().map(|i| Exclusion {
        step: step_label(&all.steps[i]),
        reason: format!("not entirely inside {spec}"),
        at_stop: false,
    }));
    let mask = IntervalSet::from_intervals([iv]);
    Ok(Window {
        spec: spec.clone(),
        span: iv,
        host: mask.clone(),
        mask,
        steps: inc,
        excluded: ex,
        compile: CompileWork::default(),
        focus: None,
        notes: vec![],
        one_pass: None,
        judged_kind: None,
        counted: Default::default(),
    })
}

/// `--focus NAME`: inside the window `within`, the time of the annotation calls named `NAME`
/// (module docs, *Focus*).
fn select_focus(
    trace: &Trace,
    all: &StepAnalysis,
    annotations: &Annotations,
    spec: &WindowSpec,
    name: &str,
    within: &WindowSpec,
    compile: &CompileWork,
) -> Result<Window, WindowError> {
    let base = select_inner(trace, all, annotations, within, compile)?;
    let matched = annotations.matching(trace, name);
    if matched.is_empty() {
        let mut names = annotations.top_level_names(trace);
        names.truncate(8);
        return Err(WindowError(format!(
            "--focus {name}: no annotation has this name{}",
            if names.is_empty() {
                " (the trace has no user annotations)".to_string()
            } else {
                format!("; annotations include: {}", names.join(", "))
            }
        )));
    }
    let mut calls = 0u64;
    let mut ext = Vec::new();
    let mut hosts = Vec::new();
    let mut matched_names: Vec<String> = Vec::new();
    for &inst in &matched {
        let e = &trace.cpu[annotations.instances[inst as usize].cpu as usize];
        let iv = e.interval();
        if base.host.covered_within(iv) == 0
            && !(iv.is_empty()
                && base
                    .host
                    .spans()
                    .iter()
                    .any(|h| h.start <= iv.start && iv.start < h.end))
        {
            continue;
        }
        calls += 1;
        let tail = annotations.device_end(inst).unwrap_or(iv.end);
        ext.push(Interval::new(iv.start, iv.end.max(tail)));
        hosts.push(iv);
        let nm = trace.name(e.name).to_string();
        if !matched_names.contains(&nm) {
            matched_names.push(nm);
        }
    }
    let mask = IntervalSet::from_intervals(ext).intersect(&base.mask);
    let host = IntervalSet::from_intervals(hosts).intersect(&base.host);
    if calls == 0 {
        return Err(WindowError(format!(
            "--focus {name}: the matching annotations lie outside the window ({within})"
        )));
    }
    matched_names.sort();
    Ok(Window {
        spec: spec.clone(),
        span: mask.hull().unwrap_or_default(),
        mask,
        host,
        steps: base.steps,
        excluded: base.excluded,
        compile: CompileWork::default(),
        focus: Some(FocusInfo {
            name: name.to_string(),
            matched: matched_names,
            calls,
        }),
        notes: base.notes,
        one_pass: None,
        judged_kind: None,
        counted: Default::default(),
    })
}

/// The kind of a server iteration, in words (`unmarked` when its annotation does not say).
fn kind_word(k: Option<IterationPhase>) -> &'static str {
    k.map_or("unmarked", |p| p.as_str())
}

/// The first steps after the profiler started that took over 1.5× the median of the later
/// candidates of their kind (`2 × duration > 3 × median`, integer ns), walking from the start
/// and stopping at the first step that is not slow; a step whose kind has no later candidate
/// is passed over (it is compared by [`dominant_run`]). At most half of the candidates are
/// left out. Returns the candidates kept and the warm-up exclusions.
fn leading_warmup(all: &StepAnalysis, candidates: &[usize]) -> (Vec<usize>, Vec<(usize, String)>) {
    let unit = if all.rule.is_iteration() {
        "iteration"
    } else {
        "step"
    };
    let mut out = Vec::new();
    let mut warm: Vec<usize> = Vec::new();
    for (k, &i) in candidates.iter().enumerate() {
        if 2 * (warm.len() + 1) > candidates.len() {
            break;
        }
        let phase = all.steps[i].phase;
        let later: Vec<Ns> = candidates[k + 1..]
            .iter()
            .filter(|&&j| all.steps[j].phase == phase)
            .map(|&j| all.steps[j].span.len())
            .filter(|&d| d > 0)
            .collect();
        if later.is_empty() {
            continue;
        }
        let med = median(&later);
        let d = all.steps[i].span.len();
        if med > 0 && 2 * (d as i128) > 3 * (med as i128) {
            warm.push(i);
            out.push((
                i,
                format!(
                    "warm-up: among the first {unit}s after the profiler started, took {}, \
                     {:.1}× the median of the later ones ({})",
                    fmt_ms(d),
                    d as f64 / med as f64,
                    fmt_ms(med)
                ),
            ));
        } else {
            break;
        }
    }
    let keep = candidates
        .iter()
        .copied()
        .filter(|i| !warm.contains(i))
        .collect();
    (keep, out)
}

/// Server iterations of several kinds: the dominant kind (most candidates; on a tie, the
/// most time) and its longest run of consecutive candidates (a step of another kind ends a
/// run; a left-out step of the same kind does not). Returns the kind, the run and the
/// exclusions of every other candidate; `None` when the candidates have one kind only.
#[allow(clippy::type_complexity)]
fn dominant_run(
    all: &StepAnalysis,
    candidates: &[usize],
) -> Option<(Option<IterationPhase>, Vec<usize>, Vec<(usize, String)>)> {
    let mut kinds: Vec<(Option<IterationPhase>, usize, Ns)> = Vec::new();
    for &i in candidates {
        let s = &all.steps[i];
        match kinds.iter_mut().find(|k| k.0 == s.phase) {
            Some(k) => {
                k.1 += 1;
                k.2 += s.span.len();
            }
            None => kinds.push((s.phase, 1, s.span.len())),
        }
    }
    if kinds.len() < 2 {
        return None;
    }
    let dom = kinds.iter().max_by_key(|k| (k.1, k.2))?.0;
    let is_cand: crate::model::fast::HashSet<usize> = candidates.iter().copied().collect();
    let mut best: Vec<usize> = Vec::new();
    let mut cur: Vec<usize> = Vec::new();
    for (i, s) in all.steps.iter().enumerate() {
        if s.phase != dom {
            if cur.len() > best.len() {
                best = std::mem::take(&mut cur);
            }
            cur.clear();
        } else if is_cand.contains(&i) {
            cur.push(i);
        }
    }
    if cur.len() > best.len() {
        best = cur;
    }
    let (first, last) = (best.first()?, best.last()?);
    let run = format!("{} … {}", all.steps[*first].name, all.steps[*last].name);
    let dw = kind_word(dom);
    let out = candidates
        .iter()
        .filter(|i| !best.contains(i))
        .map(|&i| {
            let k = all.steps[i].phase;
            let reason = if k != dom {
                format!(
                    "other kind ({}): compared with the {dw} iterations, not judged with \
                     them (see the kinds of iterations)",
                    kind_word(k)
                )
            } else {
                format!("outside the longest run of {dw} iterations ({run})")
            };
            (i, reason)
        })
        .collect();
    Some((dom, best, out))
}

/// What the one pass of a capture in which nothing repeats is, or `None` when something
/// repeats (see *No steady state* in the module docs).
pub fn one_pass(
    trace: &Trace,
    all: &StepAnalysis,
    compile: &CompileWork,
    judged_kind: Option<Option<IterationPhase>>,
) -> Option<String> {
    use crate::window::iterations::StepRule;
    match all.rule {
        StepRule::ProfilerStep => {
            let s = match all.steps.as_slice() {
                [s] => s,
                _ => return None,
            };
            // a lone step holding compile or module-load work is a cold call; without it the
            // step may be warm (a schedule's warm-up, or the model ran before the profiler)
            let cold = compile.steps.iter().find(|c| c.index == 0)?;
            Some(format!(
                "one step ({}) holding {} of first-call compile/module-load work",
                s.name,
                fmt_ms(cold.time)
            ))
        }
        StepRule::VllmExecute | StepRule::SglangStep | StepRule::GraphLaunch => {
            let kind = judged_kind.unwrap_or_else(|| all.steps.first().and_then(|s| s.phase));
            let of_kind: Vec<&Step> = all.steps.iter().filter(|s| s.phase == kind).collect();
            match of_kind.as_slice() {
                [s] if all.steps.len() == 1 => Some(format!(
                    "one iteration ({}): a single server step, nothing to compare it with",
                    s.name
                )),
                [s] => Some(format!(
                    "one {} iteration ({}) beside {} of other kinds: no kind repeats",
                    kind_word(kind),
                    s.name,
                    all.steps.len() - 1
                )),
                _ => None,
            }
        }
        StepRule::WholeTrace => single_call(trace).or_else(|| nothing_repeats(trace)),
    }
}

/// A trace without step marks in which no device activity repeats: each kernel, copy and fill
/// name occurs once (a cold run of a short program, a capture of set-up with one fill). Whatever
/// launched them, no iteration ran twice.
fn nothing_repeats(trace: &Trace) -> Option<String> {
    let mut seen = vec![false; trace.names.len()];
    let mut n = 0usize;
    for g in trace.gpu.iter().filter(|g| g.is_activity()) {
        let i = g.name.0 as usize;
        if i >= seen.len() || seen[i] {
            return None;
        }
        seen[i] = true;
        n += 1;
    }
    match n {
        0 => None,
        1 => Some("one device activity, nothing repeats".to_string()),
        _ => Some(format!(
            "{n} device activities, each of a different kernel, copy or fill: nothing repeats"
        )),
    }
}

/// A trace without step marks whose device work was all launched inside one top-level host
/// span (an operator or annotation not nested in another on its thread), or replayed by a
/// single graph launch: the one call, in words.
fn single_call(trace: &Trace) -> Option<String> {
    let mut launches = crate::model::fast::Bits::new(trace.cpu.len());
    let mut any = false;
    for g in &trace.gpu {
        if g.is_activity() && g.launch != NONE {
            launches.set(g.launch as usize);
            any = true;
        }
    }
    if !any {
        return None;
    }
    let mut is_graph = NameMemo::new(trace, |n: &str| {
        matches!(
            n,
            "cudaGraphLaunch" | "hipGraphLaunch" | "cudaGraphLaunch_v10000" | "cuGraphLaunch"
        )
    });
    // per thread: the current top-level span (end, index)
    let mut top: HashMap<u32, (Ns, usize)> = HashMap::default();
    let mut caller: Option<usize> = None;
    let mut graph_launches = 0u32;
    for (ci, e) in trace.cpu.iter().enumerate() {
        match e.kind {
            CpuKind::Op | CpuKind::UserAnnotation => {
                let t = top.entry(e.thread).or_insert((Ns::MIN, usize::MAX));
                if e.start >= t.0 {
                    *t = (e.end(), ci);
                }
            }
            CpuKind::Runtime | CpuKind::Driver | CpuKind::OtherRuntime if launches.get(ci) => {
                if is_graph.get(e.name) {
                    graph_launches += 1;
                }
                let inside = top
                    .get(&e.thread)
                    .filter(|t| t.1 != usize::MAX && e.end() <= t.0)
                    .map(|t| t.1);
                match (inside, caller) {
                    (None, _) => return None,
                    (Some(c), None) => caller = Some(c),
                    (Some(c), Some(p)) if c != p => return None,
                    _ => {}
                }
            }
            _ => {}
        }
    }
    let c = &trace.cpu[caller?];
    let name = trace.name(c.name);
    let short: String = name.chars().take(60).collect();
    let ell = if short.len() < name.len() { "…" } else { "" };
    Some(if graph_launches == 1 {
        format!("one graph replay, inside one call (`{short}{ell}`)")
    } else {
        format!("one call (`{short}{ell}`) launched all the device work")
    })
}

/// The note for a capture of a single `ProfilerStep` judged as the steady state (no compile
/// work in it): nothing repeats to show that the step is typical.
fn lone_warm_step(all: &StepAnalysis) -> Option<String> {
    if all.rule != crate::window::iterations::StepRule::ProfilerStep {
        return None;
    }
    match all.steps.as_slice() {
        [s] if s.number.is_some_and(|n| n > 0) => Some(format!(
            "{} is the only step: steps before it ran unrecorded (the profiler's schedule), so \
             it is warm, but nothing in the capture repeats to show that it is typical",
            s.name
        )),
        [s] => Some(format!(
            "{} is the only step and holds no compile work: it is judged, but nothing in the \
             capture repeats to show that it is typical (if the model had not run before the \
             profiler started, it holds first-call costs)",
            s.name
        )),
        _ => None,
    }
}

/// "dynamo, autotune" for the compile work overlapping step `i`.
fn kinds_in(all: &StepAnalysis, i: usize, compile: &CompileWork) -> String {
    compile
        .kinds_within(step_extent(&all.steps[i]))
        .iter()
        .map(|k| k.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::steps::analyze_steps;
    use super::*;
    use crate::model::build::TraceBuilder;
    use crate::model::GpuKind;

    const MS: Ns = 1_000_000;

    /// Steps of `durs` µs back to back from t = 0 (1 µs gap), each with one op launching a
    /// 10 µs kernel at its start.
    fn steps(b: &mut TraceBuilder, durs: &[f64]) -> Vec<f64> {
        let mut t = 0.0;
        let mut starts = Vec::new();
        for (i, &d) in durs.iter().enumerate() {
            b.annotation(&format!("ProfilerStep#{}", i + 1), t, d);
            b.op_with_kernel("aten::mm", "gemm", t + 1.0, 5.0, t + 3.0, 10.0);
            starts.push(t);
            t += d + 1.0;
        }
        starts
    }

    fn select_spec(t: &Trace, spec: &WindowSpec) -> Result<Window, WindowError> {
        let s = analyze_steps(t);
        let a = Annotations::build(t);
        select(t, &s, &a, spec)
    }

    fn names(t: &Trace, w: &Window) -> Vec<String> {
        let s = analyze_steps(t);
        w.steps.iter().map(|&i| s.steps[i].name.clone()).collect()
    }

    #[test]
    fn auto_excludes_compile_warmup_and_outlier() {
        let mut b = TraceBuilder::new();
        let st = steps(&mut b, &[100.0, 100.0, 100.0, 400.0, 100.0, 100.0]);
        // Dynamo compile inside step 1, a python frame of it nested inside (counted once)
        b.annotation("_compile.compile_inner (dynamo_timed)", st[0] + 20.0, 50.0);
        b.cpu(
            CpuKind::PythonFunction,
            "torch/_dynamo/convert_frame.py(712): _compile",
            1,
            st[0] + 21.0,
            40.0,
        );
        // steady-state python frames that must not count
        b.cpu(
            CpuKind::PythonFunction,
            "torch/_dynamo/eval_frame.py(791): compile_wrapper",
            1,
            st[1] + 20.0,
            30.0,
        );
        let t = b.build();
        let w = select_spec(&t, &WindowSpec::Auto).unwrap();
        assert_eq!(
            names(&t, &w),
            [
                "ProfilerStep#2",
                "ProfilerStep#3",
                "ProfilerStep#5",
                "ProfilerStep#6"
            ]
        );
        assert_eq!(w.excluded.len(), 2);
        assert_eq!(w.excluded[0].step, "ProfilerStep#1");
        assert!(
            w.excluded[0].reason.starts_with("warm-up"),
            "{}",
            w.excluded[0].reason
        );
        assert!(
            w.excluded[0].reason.contains("dynamo"),
            "{}",
            w.excluded[0].reason
        );
        assert_eq!(w.excluded[1].step, "ProfilerStep#4");
        // the hull holds the excluded middle step: the one-interval tables say so
        assert_eq!(w.notes.len(), 1, "{:?}", w.notes);
        assert!(
            w.notes[0].contains("excluded steps in between"),
            "{:?}",
            w.notes
        );
        assert!(
            w.excluded[1].reason.starts_with("outlier"),
            "{}",
            w.excluded[1].reason
        );
        assert!(
            w.excluded[1].reason.contains("4.0×"),
            "{}",
            w.excluded[1].reason
        );
        // compile measured: 50 µs, one maximal span, in step 1, kind dynamo only
        assert_eq!(w.compile.total, 50_000);
        assert_eq!(w.compile.count, 1);
        assert_eq!(w.compile.steps.len(), 1);
        assert_eq!(w.compile.steps[0].name, "ProfilerStep#1");
        assert_eq!(w.compile.steps[0].time, 50_000);
        assert_eq!(w.compile.by_kind.len(), 1);
        assert_eq!(w.compile.by_kind[0].kind, CompileKind::Dynamo);
        // mask = steps 2–3 and 5–6 (gaps inside a run counted), host = their host spans
        let s = analyze_steps(&t);
        let run = |a: usize, b: usize| s.steps[b].span.end - s.steps[a].span.start;
        assert_eq!(w.duration(), run(1, 2) + run(4, 5));
        assert_eq!(w.mask.spans().len(), 2);
        assert_eq!(w.host.spans().len(), 4);
        assert_eq!(
            w.span,
            Interval::new(s.steps[1].span.start, s.steps[5].span.end)
        );
        // --all keeps every step but still measures the compile work
        let all = select_spec(&t, &WindowSpec::All).unwrap();
        assert_eq!(all.steps, vec![0, 1, 2, 3, 4, 5]);
        assert!(all.excluded.is_empty());
        assert_eq!(all.compile.total, 50_000);
    }

    #[test]
    fn slow_first_run_of_a_compiled_region_is_warmup() {
        let mut b = TraceBuilder::new();
        let st = steps(&mut b, &[3000.0, 3000.0, 3000.0, 3000.0]);
        b.cpu(
            CpuKind::Op,
            "Torch-Compiled Region: 0/0",
            1,
            st[0] + 10.0,
            2500.0,
        );
        for s in &st[1..] {
            b.cpu(
                CpuKind::Op,
                "Torch-Compiled Region: 0/0",
                1,
                s + 10.0,
                100.0,
            );
        }
        // a region whose first run is not slow enough (< 1 ms more) is not compile work
        b.cpu(
            CpuKind::Op,
            "Torch-Compiled Region: 1/0",
            1,
            st[0] + 2600.0,
            30.0,
        );
        b.cpu(
            CpuKind::Op,
            "Torch-Compiled Region: 1/0",
            1,
            st[1] + 2600.0,
            10.0,
        );
        let t = b.build();
        let w = select_spec(&t, &WindowSpec::Auto).unwrap();
        assert_eq!(
            names(&t, &w),
            ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
        );
        assert_eq!(w.compile.total, 2_500_000);
        assert_eq!(w.compile.by_kind[0].kind, CompileKind::FirstRun);
        assert!(
            w.excluded[0].reason.contains("first run"),
            "{}",
            w.excluded[0].reason
        );
    }

    #[test]
    fn compile_in_every_step_excludes_nothing_for_it() {
        let mut b = TraceBuilder::new();
        let st = steps(&mut b, &[100.0, 100.0]);
        for s in &st {
            b.annotation("CachingAutotuner.benchmark_all_configs", s + 50.0, 10.0);
        }
        let t = b.build();
        let w = select_spec(&t, &WindowSpec::Auto).unwrap();
        assert_eq!(w.steps, vec![0, 1]);
        assert!(w.excluded.is_empty());
        assert_eq!(w.notes.len(), 1, "{:?}", w.notes);
        assert_eq!(w.compile.total, 20_000);
        assert_eq!(w.compile.count, 2);
        assert_eq!(w.compile.by_kind[0].kind, CompileKind::Autotune);
    }

    #[test]
    fn steps_time_and_errors() {
        let mut b = TraceBuilder::new();
        let st = steps(&mut b, &[100.0, 100.0, 100.0, 100.0]);
        let t = b.build();
        let w = select_spec(&t, &parse_steps("2..3").unwrap()).unwrap();
        assert_eq!(names(&t, &w), ["ProfilerStep#2", "ProfilerStep#3"]);
        assert_eq!(w.excluded.len(), 2);
        assert!(w
            .excluded
            .iter()
            .all(|e| e.reason == "not selected (--steps 2..3)"));
        let w = select_spec(&t, &parse_steps("4").unwrap()).unwrap();
        assert_eq!(names(&t, &w), ["ProfilerStep#4"]);
        let w = select_spec(&t, &parse_steps("3..").unwrap()).unwrap();
        assert_eq!(names(&t, &w), ["ProfilerStep#3", "ProfilerStep#4"]);
        let e = select_spec(&t, &parse_steps("7..9").unwrap()).unwrap_err();
        assert!(e.0.contains("selects no step"), "{e}");

        // time: µs from the trace start (0 here); steps fully inside are listed
        let w = select_spec(&t, &parse_time(&format!("{}..{}", st[1], st[3])).unwrap()).unwrap();
        assert_eq!(
            w.span,
            Interval::new((st[1] * 1000.0) as Ns, (st[3] * 1000.0) as Ns)
        );
        assert_eq!(names(&t, &w), ["ProfilerStep#2", "ProfilerStep#3"]);
        assert_eq!(w.host, w.mask);
        let e = select_spec(&t, &parse_time("5000..6000").unwrap()).unwrap_err();
        assert!(e.0.contains("outside the trace"), "{e}");
        let e = parse_time("1e30..").unwrap_err();
        assert!(e.contains("outside the trace"), "{e}");
        // an open end runs to the end of the trace
        let w = select_spec(&t, &parse_time("200..").unwrap()).unwrap();
        assert_eq!(w.span.start, 200_000);
        assert_eq!(w.span.end, t.cpu.iter().map(|e| e.end()).max().unwrap());
    }

    #[test]
    fn focus_counts_calls_up_to_their_device_tail() {
        let mut b = TraceBuilder::new();
        // two steps, each: denoise [10, 40) launching a kernel that ends at 80; decode after
        for s in [0.0, 200.0] {
            b.annotation(&format!("ProfilerStep#{}", s as i64 / 200 + 1), s, 150.0);
            b.annotation("denoise", s + 10.0, 30.0);
            b.op_with_kernel("aten::mm", "gemm", s + 12.0, 10.0, s + 30.0, 50.0);
            b.annotation("vae_decode", s + 50.0, 20.0);
            b.op_with_kernel("aten::conv", "conv", s + 52.0, 10.0, s + 90.0, 10.0);
        }
        let t = b.build();
        let spec = WindowSpec::Focus {
            name: "denoise".into(),
            within: Box::new(WindowSpec::All),
        };
        let w = select_spec(&t, &spec).unwrap();
        assert_eq!(
            w.mask.spans(),
            &[
                Interval::new(10_000, 80_000),
                Interval::new(210_000, 280_000)
            ]
        );
        assert_eq!(
            w.host.spans(),
            &[
                Interval::new(10_000, 40_000),
                Interval::new(210_000, 240_000)
            ]
        );
        let f = w.focus.as_ref().unwrap();
        assert_eq!(
            (f.calls, f.matched.clone()),
            (2, vec!["denoise".to_string()])
        );
        // the gemm kernels belong to the window, the conv kernels do not
        let counted: Vec<&str> = t
            .gpu
            .iter()
            .filter(|g| w.counts_activity(&t, g))
            .map(|g| t.name(g.name))
            .collect();
        assert_eq!(counted, ["gemm", "gemm"]);
        // inside one step only
        let spec = WindowSpec::Focus {
            name: "denoise".into(),
            within: Box::new(parse_steps("2").unwrap()),
        };
        let w = select_spec(&t, &spec).unwrap();
        assert_eq!(w.mask.spans(), &[Interval::new(210_000, 280_000)]);
        // substring fallback, and the error for a missing name
        let spec = WindowSpec::Focus {
            name: "decode".into(),
            within: Box::new(WindowSpec::All),
        };
        let w = select_spec(&t, &spec).unwrap();
        assert_eq!(w.focus.unwrap().matched, vec!["vae_decode".to_string()]);
        let spec = WindowSpec::Focus {
            name: "ctx_update".into(),
            within: Box::new(WindowSpec::All),
        };
        let e = select_spec(&t, &spec).unwrap_err();
        assert!(e.0.contains("denoise") && e.0.contains("vae_decode"), "{e}");
    }

    #[test]
    fn activity_membership_follows_the_launch() {
        let mut b = TraceBuilder::new();
        b.annotation("ProfilerStep#1", 0.0, 100.0);
        b.annotation("ProfilerStep#2", 101.0, 100.0);
        // launched at the end of step 1, runs in step 2's time
        b.op_with_kernel("aten::mm", "late", 90.0, 8.0, 150.0, 10.0);
        b.op_with_kernel("aten::mm", "own", 120.0, 8.0, 170.0, 10.0);
        // a kernel whose launch is not in the trace counts by its start
        b.gpu(GpuKind::Kernel, "orphan", 0, 7, 250.0, 1.0, 0);
        let t = b.build();
        let w = select_spec(&t, &parse_steps("2").unwrap()).unwrap();
        let counted: Vec<&str> = t
            .gpu
            .iter()
            .filter(|g| w.counts_activity(&t, g))
            .map(|g| t.name(g.name))
            .collect();
        assert_eq!(counted, ["own"]);
        let same = |w: &Window| {
            (0..t.gpu.len())
                .all(|i| w.counts_activity_at(&t, i) == w.counts_activity(&t, &t.gpu[i]))
        };
        assert!(same(&w));
        let w = select_spec(&t, &parse_time("0..300").unwrap()).unwrap();
        assert_eq!(t.gpu.iter().filter(|g| w.counts_activity(&t, g)).count(), 3);
        assert!(same(&w));
    }

    #[test]
    fn no_steps_and_empty_traces() {
        let t = TraceBuilder::new().build();
        let w = select_spec(&t, &WindowSpec::Auto).unwrap();
        assert!(w.steps.is_empty() && w.mask.is_empty());
        assert!(select_spec(&t, &parse_steps("1").unwrap()).is_err());
        let mut b = TraceBuilder::new();
        b.op_with_kernel("aten::mm", "gemm", 0.0, 10.0, 5.0, 10.0);
        let t = b.build();
        let w = select_spec(&t, &WindowSpec::Auto).unwrap();
        assert_eq!(w.steps, vec![0]);
        let e = select_spec(&t, &parse_steps("1").unwrap()).unwrap_err();
        assert!(e.0.contains("no ProfilerStep"), "{e}");
    }

    #[test]
    fn parsing_and_display() {
        assert_eq!(
            parse_steps("3..6").unwrap(),
            WindowSpec::Steps {
                first: Some(3),
                last: Some(6)
            }
        );
        assert_eq!(parse_steps("3..=6").unwrap().to_string(), "--steps 3..6");
        assert_eq!(parse_steps("5").unwrap().to_string(), "--steps 5");
        assert_eq!(parse_steps("..6").unwrap().to_string(), "--steps ..6");
        assert!(parse_steps("6..3").is_err());
        assert!(parse_steps("a..b").is_err());
        assert!(parse_steps("").is_err());
        assert_eq!(
            parse_time("1000.5..2500").unwrap(),
            WindowSpec::Time {
                start: Some(1_000_500),
                end: Some(2_500_000)
            }
        );
        assert_eq!(
            parse_time("1000.5..2500").unwrap().to_string(),
            "--time 1000.5..2500"
        );
        assert!(parse_time("5..5").is_err());
        assert!(parse_time("12").is_err());
        let f = WindowSpec::Focus {
            name: "denoise".into(),
            within: Box::new(parse_steps("2..3").unwrap()),
        };
        assert_eq!(f.to_string(), "--steps 2..3 --focus denoise");
        assert_eq!(median(&[3, 1, 2]), 2);
        assert_eq!(median(&[4, 1, 3, 2]), 2);
        assert_eq!(median(&[5, 6]), 5);
        assert_eq!(median(&[]), 0);
        assert_eq!(median(&[MS, 3 * MS]), 2 * MS);
    }
}
