//! Multi-rank facts: what one rank's analysis is reduced to before its model is dropped
//! ([`RankFacts::new`]), and the cross-rank summary over those facts ([`summarize`]: slowest
//! rank, median step, straggler spread, exposed-communication spread).
//!
//! A folder of per-rank traces is analysed one rank at a time (a few at once, see
//! `crate::folder`); nothing here holds a trace. Everything is a pure function of the facts.
//!
//! # Definitions
//!
//! * **Step time** of a rank: the mean duration of the steps in its analysed window (the
//!   single-file report's `step_time_us`).
//! * **Main device** of a rank: the device of its GPU timeline with the most busy time (ties:
//!   the lower id). Per-rank traces normally have one. Its GPU-timeline split (computation,
//!   exposed communication, exposed memcpy, idle; `analysis::timeline`) over the window is
//!   kept, plus the communication hidden under computation (`overlapped_comm` = union of
//!   communication − exposed communication). GPU busy is that device's utilization over the
//!   window (the single-file GPU summary's `utilization`).
//! * **Median step**: the median of the ranks' step times (the mean of the two middle values
//!   for an even count). **Spread**: slowest step time ÷ median.
//! * **Slowest rank**: the largest step time; ties go to the lower rank, then the path
//!   ([`is_slower`], also used to pick the rank whose full report is kept while streaming).
//! * **Own time** of a rank: its step time minus its exposed communication per step — the
//!   step without the time spent in collectives not hidden by compute, which in synchronous
//!   training is mostly waiting for the other ranks. The **straggler candidate** is the rank
//!   with the largest own time (ties: the lower rank); a rank whose step is long only because
//!   it waits in collectives is a victim, not a straggler. Without communication, own time is
//!   the step time.
//! * **Spans of one rank**: `tensorboard_trace_handler` with a repeating schedule writes one
//!   file per active cycle of the *same* worker. Files with the same rank whose main process
//!   (the process of most operators) has the same pid, and that start at different times,
//!   are spans of one rank, not duplicate ranks ([`RankSummary::spans`]): they are merged
//!   into one rank entry (steps, window and GPU-timeline parts summed, step time the mean over
//!   all their steps, utilization weighted by window) and listed per span. Kineto traces
//!   record no host name, so the host is not compared. Files with the same rank and another
//!   or unknown process stay [`RankSummary::duplicates`].

use super::Analysis;
use crate::model::{Ns, Trace};

/// Where a rank number came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RankSource {
    /// `distributedInfo.rank` in the trace.
    DistributedInfo,
    /// The file name (`rank3`, `rank-3`, `rank_3`, `worker3`).
    FileName,
    /// The file's position in the folder listing (sorted by name).
    Order,
}

impl RankSource {
    /// The JSON spelling (`distributed_info`, `file_name`, `order`).
    pub fn as_str(&self) -> &'static str {
        match self {
            RankSource::DistributedInfo => "distributed_info",
            RankSource::FileName => "file_name",
            RankSource::Order => "order",
        }
    }
}

/// The headline finding of one rank's own diagnosis.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TopFinding {
    /// Rule id.
    pub id: String,
    /// Severity name.
    #[serde(deserialize_with = "crate::text::static_words::one")]
    pub severity: crate::text::static_words::Word,
    /// Its recoverable time, µs per step.
    pub recoverable_us: f64,
    /// Its title.
    pub title: String,
}

/// What a multi-rank report keeps of one rank.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RankFacts {
    /// Rank number.
    pub rank: i64,
    /// Where it came from.
    pub rank_source: RankSource,
    /// The file, as found in the folder.
    pub path: String,
    /// `distributedInfo.world_size`, if recorded.
    pub world_size: Option<i64>,
    /// Steps in the analysed window.
    pub steps: usize,
    /// Mean step duration in the window, ns.
    pub step_time: f64,
    /// Counted time of the window, ns.
    pub window: Ns,
    /// Main device (none without device work).
    pub device: Option<i64>,
    /// Its utilization over the window (0..1).
    pub utilization: Option<f64>,
    /// Its GPU-timeline span over the window, ns.
    pub timeline_total: Ns,
    /// Computation, ns.
    pub computation: Ns,
    /// Communication not overlapped by computation, ns.
    pub exposed_comm: Ns,
    /// Communication overlapped by computation, ns.
    pub overlapped_comm: Ns,
    /// Copies not overlapped by computation or communication, ns.
    pub exposed_memcpy: Ns,
    /// Idle, ns.
    pub idle: Ns,
    /// The first finding of the rank's own diagnosis.
    pub top_finding: Option<TopFinding>,
    /// Pid of the main process (the one with the most operators), when the trace has
    /// operators.
    pub pid: Option<i64>,
    /// Trace start, ns (absolute, as in the trace).
    pub start: Ns,
    /// First and last step of the window (`""` without steps).
    pub first_step: String,
    /// Last step of the window.
    pub last_step: String,
    /// torch.compile/autotune work in the trace, ns.
    pub compile: Ns,
    /// Captures merged into this entry (1 for a plain rank file; see *Spans of one rank*).
    pub spans: usize,
    /// Collectives in the window, in start order (see [`Collective`] and [`arrivals`]).
    pub collectives: Vec<Collective>,
    /// Their names ([`Collective::name`] indexes it).
    #[serde(default)]
    pub collective_names: Vec<String>,
    /// True when [`RankFacts::collectives`] are host spans (the main device runs no collective
    /// kernel): their time is also the rank's `exposed_comm` when it has no device.
    #[serde(default)]
    pub host_collectives: bool,
    /// The steps' time split by role, summed over the window's steps (the single-file report's
    /// step breakdown): what the rank did, to compare with the others.
    #[serde(default)]
    pub parts: StepParts,
    /// The longest `user_annotation` spans of the window by name (record_function ranges,
    /// `DistributedDataParallel.forward`, the DataLoader's `__next__`, optimizer steps; not
    /// `ProfilerStep#` nor collectives): name and total time, ns, the
    /// [`ANNOTATIONS_KEPT`] longest.
    #[serde(default)]
    pub annotations: Vec<(String, Ns)>,
    /// The window's steps one by one (number, duration, breakdown), so that the ranks of a
    /// folder can be compared over the steps they have in common ([`common_window`]).
    #[serde(default)]
    pub step_facts: Vec<StepFact>,
    /// The input shapes of the operators with the most time in the window
    /// (`record_shapes=True`; empty without): per operator, its input dims with the most time
    /// ([`OpShapes`]), the [`SHAPES_KEPT`] operators with the most time, by time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shapes: Vec<OpShapes>,
    /// Steps over which [`RankFacts::annotations`] were summed (their own window; a common
    /// window may count fewer steps). 0: [`RankFacts::steps`].
    #[serde(default)]
    pub annotation_steps: usize,
}

/// One step of a rank's window ([`RankFacts::step_facts`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StepFact {
    /// Its number (`ProfilerStep#N`, `Iteration#N`); -1 when the name carries none.
    pub number: i64,
    /// Its start, ns (its span, device-extended, on the rank's clock).
    pub start: Ns,
    /// Its duration, ns (its span, device-extended; the parts sum to it).
    pub dur: Ns,
    /// Its breakdown.
    pub parts: StepParts,
    /// The main device's GPU-timeline split over the step (a rank with device work), so that
    /// a common window can reduce the device figures too; `None` without device work (and in
    /// summaries written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<StepDevice>,
}

/// The input shapes of one operator of a rank ([`RankFacts::shapes`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OpShapes {
    /// The operator (`aten::addmm`).
    pub name: String,
    /// Its `Input Dims` with the most time (`[[96, 64], [64, 128]]`).
    pub dims: String,
    /// Its time with those dims in the window, ns.
    pub time: Ns,
    /// Its time with any dims in the window, ns.
    pub total: Ns,
    /// Every distinct `Input Dims` it ran with in the window, sorted by text, at most
    /// [`DISTINCT_DIMS_KEPT`] (empty in summaries of older versions). Two ranks run the same
    /// work in this operator when these agree, whichever dims took the most time: an
    /// operator called with several shapes (a reducer over gradient buckets) has a mode that
    /// timing noise can move.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub distinct: Vec<String>,
    /// How many distinct dims it ran with (0 in summaries of older versions).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub distinct_count: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Operators whose shapes are kept per rank ([`RankFacts::shapes`]).
pub const SHAPES_KEPT: usize = 8;

/// Distinct dims kept per operator ([`OpShapes::distinct`]).
pub const DISTINCT_DIMS_KEPT: usize = 32;

/// The number of input elements in an `Input Dims` text (`[[96, 64], [64]]`: 96×64 + 64);
/// 0 when it lists no dims.
pub fn input_elements(dims: &str) -> u64 {
    let mut total = 0u64;
    let mut depth = 0;
    // the product of the current inner list's numbers, and whether it has any
    let (mut prod, mut any, mut num): (u64, bool, Option<u64>) = (1, false, None);
    let end_num = |prod: &mut u64, any: &mut bool, num: &mut Option<u64>| {
        if let Some(n) = num.take() {
            *prod = prod.saturating_mul(n);
            *any = true;
        }
    };
    for ch in dims.chars() {
        match ch {
            '[' => {
                depth += 1;
                if depth == 2 {
                    (prod, any, num) = (1, false, None);
                }
            }
            ']' => {
                end_num(&mut prod, &mut any, &mut num);
                if depth == 2 && any {
                    total = total.saturating_add(prod);
                }
                depth -= 1;
            }
            '0'..='9' if depth == 2 => {
                num = Some(num.unwrap_or(0).saturating_mul(10) + (ch as u64 - '0' as u64));
            }
            ',' => end_num(&mut prod, &mut any, &mut num),
            _ => {}
        }
    }
    total
}

/// The main device's GPU-timeline split over one step's segment ([`StepFact::device`]), ns,
/// with the rules of `analysis::timeline` (the same events counted as the rank's own split).
/// A step's segment runs from its start to the next step's start when the next step is the
/// next number (so a run of consecutive steps tiles the hull of the run, as the window of
/// `--steps` over them does), else to its own end; clipped to the rank's window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StepDevice {
    /// Union of computation.
    pub computation: Ns,
    /// Communication not overlapped by computation.
    pub exposed_comm: Ns,
    /// Communication overlapped by computation.
    pub overlapped_comm: Ns,
    /// Copies not overlapped by computation or communication.
    pub exposed_memcpy: Ns,
    /// Union of all counted work.
    pub busy: Ns,
    /// First start of the counted work in the segment (0 with none).
    pub first: Ns,
    /// Last end of the counted work in the segment (0 with none).
    pub last: Ns,
    /// Union of the device's kernels (the utilization's numerator, `analysis::gpu`).
    pub kernels: Ns,
}

/// The step breakdown of a rank summed over its window's steps, ns (see
/// `window::steps`: the parts sum to the steps' durations).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StepParts {
    /// Kernels (not communication).
    pub kernel: Ns,
    /// Copies and fills.
    pub memcpy: Ns,
    /// Communication (kernels and host collectives).
    pub communication: Ns,
    /// Runtime calls.
    pub runtime: Ns,
    /// DataLoader.
    pub dataloader: Ns,
    /// Other host operators, annotations, Python.
    pub cpu_exec: Ns,
    /// Time covered by nothing recorded (Python code between operators, sleeps, waits).
    pub other: Ns,
}

impl StepParts {
    /// Sums the breakdown of `steps`.
    pub fn of(steps: &[crate::window::steps::Step]) -> StepParts {
        let mut p = StepParts::default();
        for s in steps {
            p.add(&StepParts::of_step(s));
        }
        p
    }

    /// The breakdown of one step.
    pub fn of_step(s: &crate::window::steps::Step) -> StepParts {
        let b = &s.breakdown;
        StepParts {
            kernel: b.kernel,
            memcpy: b.memcpy + b.memset,
            communication: b.communication,
            runtime: b.runtime,
            dataloader: b.dataloader,
            cpu_exec: b.cpu_exec,
            other: b.other,
        }
    }

    /// The parts with their plain names, in a fixed order.
    pub fn named(&self) -> [(&'static str, Ns); 6] {
        [
            ("GPU kernels", self.kernel),
            ("memory copies", self.memcpy),
            ("runtime calls (launches, synchronisation)", self.runtime),
            ("the DataLoader", self.dataloader),
            ("host operators", self.cpu_exec),
            (
                "host time outside any recorded operator (Python code, sleeps)",
                self.other,
            ),
        ]
    }

    /// Adds `o`.
    pub fn add(&mut self, o: &StepParts) {
        self.kernel += o.kernel;
        self.memcpy += o.memcpy;
        self.communication += o.communication;
        self.runtime += o.runtime;
        self.dataloader += o.dataloader;
        self.cpu_exec += o.cpu_exec;
        self.other += o.other;
    }
}

/// One collective of a rank: a collective kernel of its main device, or, for a rank whose
/// device runs none (gloo, MPI, UCC), a host collective span (`gloo:*`, `nccl:*`, `mpi:*`,
/// `ucc:*`: it opens when the rank calls the collective and closes when the collective
/// completes on that rank).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Collective {
    /// Time from the end of the previous collective (or the window start) to its start: the
    /// rank's own work before it, ns.
    pub before: Ns,
    /// Its duration, ns: the transfer, plus the wait for the last rank to arrive.
    pub dur: Ns,
    /// Start, ns, on the rank's own clock (as in its trace).
    #[serde(default)]
    pub start: Ns,
    /// Its name: index in [`RankFacts::collective_names`].
    #[serde(default)]
    pub name: u32,
    /// The step it starts in: the step's number (`ProfilerStep#N`), else its index in the
    /// window; -1 outside every step.
    #[serde(default)]
    pub step: i64,
    /// `Seq`: its number in its process group, when recorded (the same on every rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// `Comms Id`, when recorded (the same on every rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comms_id: Option<u64>,
    /// Its process group (`Process Group Name`), when recorded: index in
    /// [`RankFacts::collective_names`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<u32>,
}

impl Collective {
    /// End, ns, on the rank's own clock.
    pub fn end(&self) -> Ns {
        self.start + self.dur
    }
}

/// How the collectives of the ranks were matched ([`Arrivals::matching`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Matching {
    /// Nothing matched.
    #[default]
    None,
    /// By process group and `Seq` (recorded on every collective of every rank).
    GroupSeq,
    /// By `Comms Id` (recorded on every collective of every rank; no `Seq` everywhere).
    CommsId,
    /// By step number, collective name and order within the step.
    StepNameOrder,
    /// By collective name and order within the window (the ranks' step numbers differ).
    NameOrder,
    /// Several of the above, each collective by the strongest key it has on every rank
    /// ([`Arrivals::by`] counts them).
    Mixed,
}

/// Who arrived last at the collectives, and what the others waited.
///
/// Matching ([`arrivals`]): when every collective of every rank carries a `Seq` (Kineto copies
/// it onto GPU collective kernels since 2026; `record_param_comms` carries it), a collective of
/// one rank is the same operation as a collective of another when both have the same process
/// group and `Seq` ([`Matching::GroupSeq`]); else, when every one carries a `Comms Id`, the
/// same `Comms Id` ([`Matching::CommsId`]). Several kernels of one collective share its
/// arguments: they pair in order. Otherwise, a collective of one rank is the same operation as
/// a collective of another when both carry the same step number, the same name and the same
/// place among the collectives of that name in that step ([`Matching::StepNameOrder`]); when
/// the ranks' step numbers have nothing in common, the step is left out of the key
/// ([`Matching::NameOrder`]). Only collectives found on every rank count.
///
/// Clocks: a collective cannot complete on any rank before its last rank arrives. When no
/// matched collective ends on one rank before it starts on another (within
/// [`ALIGN_RESIDUAL_FLOOR`]), the trace clocks are consistent and taken as they are (ranks of
/// one host share its clock). Otherwise they are aligned: a matched collective ends at nearly
/// the same moment on every rank (it completes when the last rank's data is in), so each
/// rank's clock offset from the first rank is the median, over the matched collectives, of
/// the difference of their ends. The *residual* is the median, over the collectives, of the
/// spread of the (aligned) ends. When the clocks are consistent, or the residual is
/// at most [`ALIGN_RESIDUAL_OF_DUR`] of the median collective duration (or
/// [`ALIGN_RESIDUAL_FLOOR`]), the clocks are aligned: a rank's arrival is its collective's
/// start on the aligned clock, the last rank is the latest arrival, and every other rank
/// waited from its own arrival to that one (at most its collective's duration). Otherwise the
/// ends do not coincide and alignment is not possible: durations are compared instead (the
/// rank that arrives last does not wait: its collective is the shortest; the others' are
/// longer by their wait).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Arrivals {
    /// Collectives matched across the ranks.
    pub matched: usize,
    /// Distinct steps among the matched collectives.
    pub steps: usize,
    /// How they were matched.
    pub matching: Matching,
    /// Collectives matched by process group and `Seq`, by `Comms Id`, by step, name and order,
    /// and by name and order in the window.
    pub by: [usize; 4],
    /// True when the matched collectives are host spans (gloo, MPI, UCC) on some rank.
    pub host: bool,
    /// The name of the matched collectives when they all have the same one, else empty.
    pub name: String,
    /// Per rank (index in the ranks given): collectives at which it arrived last.
    pub last: Vec<usize>,
    /// Per rank: time waited in the matched collectives, ns.
    pub waited: Vec<Ns>,
    /// Per rank: the wait of all the other ranks at the collectives where it arrived last, ns.
    pub caused: Vec<Ns>,
    /// Per rank: its own time before the matched collectives, ns.
    pub before: Vec<Ns>,
    /// Per rank: its clock offset from the first rank, ns (0 when not aligned).
    pub offsets: Vec<Ns>,
    /// Median spread of the aligned ends, ns; `None` without matched collectives.
    pub residual: Option<Ns>,
    /// True when the clocks were aligned (else durations were compared).
    pub aligned: bool,
    /// True when the trace clocks were consistent as they are (no offset estimated).
    pub shared_clock: bool,
    /// The rank (index) that caused the most wait (ties: the more last arrivals, then the
    /// lower index); `None` without matched collectives.
    pub culprit: Option<usize>,
}

/// Clocks are aligned when the residual is at most this share of the median collective
/// duration ([`Arrivals`]).
pub const ALIGN_RESIDUAL_OF_DUR: f64 = 0.25;

/// ... or at most this, ns (timestamps are often whole µs).
pub const ALIGN_RESIDUAL_FLOOR: Ns = 2_000;

fn median_ns(v: &mut [Ns]) -> Ns {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[v.len() / 2]
}

/// Matches the collectives of `ranks` and finds who arrived last ([`Arrivals`]).
pub fn arrivals(ranks: &[RankFacts]) -> Arrivals {
    let n = ranks.len();
    let mut a = Arrivals {
        last: vec![0; n],
        waited: vec![0; n],
        caused: vec![0; n],
        before: vec![0; n],
        offsets: vec![0; n],
        ..Arrivals::default()
    };
    if n < 2 || ranks.iter().any(|r| r.collectives.is_empty()) {
        return a;
    }
    // an id is usable when every rank records it on some collective
    let usable = |f: fn(&Collective) -> bool| ranks.iter().all(|r| r.collectives.iter().any(f));
    let (seq, ids) = (
        usable(|c| c.seq.is_some()),
        usable(|c| c.comms_id.is_some()),
    );
    let mut used: Vec<Vec<bool>> = ranks
        .iter()
        .map(|r| vec![false; r.collectives.len()])
        .collect();
    let mut rows = Vec::new();
    let take = |key: Key, used: &mut Vec<Vec<bool>>, rows: &mut Vec<Vec<usize>>| {
        let found = match_collectives(ranks, key, used, seq, ids);
        for row in &found {
            for (r, &i) in row.iter().enumerate() {
                used[r][i] = true;
            }
        }
        rows.extend(found);
        rows.len()
    };
    let mut by = [0usize; 4];
    let mut before = 0;
    for (k, key) in [Key::GroupSeq, Key::CommsId, Key::StepNameOrder]
        .into_iter()
        .enumerate()
    {
        let n = take(key, &mut used, &mut rows);
        by[k] = n - before;
        before = n;
    }
    if rows.is_empty() {
        by[3] = take(Key::NameOrder, &mut used, &mut rows);
    }
    a.by = by;
    let kinds = [
        Matching::GroupSeq,
        Matching::CommsId,
        Matching::StepNameOrder,
        Matching::NameOrder,
    ];
    a.matching = match by.iter().filter(|&&n| n > 0).count() {
        0 => return a,
        1 => kinds[by.iter().position(|&n| n > 0).unwrap_or(0)],
        _ => Matching::Mixed,
    };
    // in the first rank's order
    rows.sort_unstable_by_key(|row| row[0]);
    a.matched = rows.len();
    a.host = ranks.iter().any(|r| r.host_collectives);
    let c = |r: usize, k: usize| ranks[r].collectives[rows[k][r]];
    let mut steps: Vec<i64> = (0..rows.len()).map(|k| c(0, k).step).collect();
    steps.sort_unstable();
    steps.dedup();
    a.steps = steps.len();
    // the name when every matched collective has the same one
    let first = c(0, 0).name;
    if (0..rows.len()).all(|k| c(0, k).name == first) {
        a.name = ranks[0]
            .collective_names
            .get(first as usize)
            .cloned()
            .unwrap_or_default();
    }
    // the trace clocks are consistent when no matched collective ends on one rank before it
    // starts on another (a collective cannot complete before its last rank arrives): then
    // they are taken as they are
    a.shared_clock = (0..rows.len()).all(|k| {
        let first_end = (0..n).map(|r| c(r, k).end()).min().unwrap_or(0);
        let last_start = (0..n).map(|r| c(r, k).start).max().unwrap_or(0);
        first_end + ALIGN_RESIDUAL_FLOOR >= last_start
    });
    // else clock offsets from the ends
    for r in (1..n).filter(|_| !a.shared_clock) {
        let mut d: Vec<Ns> = (0..rows.len())
            .map(|k| c(r, k).end() - c(0, k).end())
            .collect();
        a.offsets[r] = median_ns(&mut d);
    }
    let mut spreads: Vec<Ns> = (0..rows.len())
        .map(|k| {
            let ends = (0..n).map(|r| c(r, k).end() - a.offsets[r]);
            ends.clone().max().unwrap_or(0) - ends.min().unwrap_or(0)
        })
        .collect();
    let residual = median_ns(&mut spreads);
    let mut durs: Vec<Ns> = (0..rows.len())
        .flat_map(|k| (0..n).map(move |r| (r, k)))
        .map(|(r, k)| c(r, k).dur)
        .collect();
    let median_dur = median_ns(&mut durs);
    a.residual = Some(residual);
    a.aligned = a.shared_clock
        || residual <= ALIGN_RESIDUAL_FLOOR.max((ALIGN_RESIDUAL_OF_DUR * median_dur as f64) as Ns);
    if !a.aligned {
        a.offsets = vec![0; n];
    }
    for k in 0..rows.len() {
        // the last arrival: the latest aligned start, or the shortest collective (ties: the
        // longest time before it, then the lower index)
        let lastr = (0..n)
            .max_by(|&x, &y| {
                let (cx, cy) = (c(x, k), c(y, k));
                let order = if a.aligned {
                    (cx.start - a.offsets[x]).cmp(&(cy.start - a.offsets[y]))
                } else {
                    cy.dur.cmp(&cx.dur)
                };
                order.then(cx.before.cmp(&cy.before)).then(y.cmp(&x))
            })
            .unwrap_or(0);
        a.last[lastr] += 1;
        let cl = c(lastr, k);
        for r in 0..n {
            let cr = c(r, k);
            let w = if a.aligned {
                ((cl.start - a.offsets[lastr]) - (cr.start - a.offsets[r])).clamp(0, cr.dur)
            } else {
                (cr.dur - cl.dur).max(0)
            };
            a.waited[r] += w;
            a.caused[lastr] += w;
            a.before[r] += cr.before;
        }
    }
    a.culprit = (0..n).max_by(|&x, &y| {
        a.caused[x]
            .cmp(&a.caused[y])
            .then(a.last[x].cmp(&a.last[y]))
            .then(y.cmp(&x))
    });
    a
}

/// What identifies a collective across ranks ([`match_collectives`]).
#[derive(Clone, Copy, PartialEq)]
enum Key {
    /// Process group and `Seq`.
    GroupSeq,
    /// `Comms Id`.
    CommsId,
    /// Step number, name and order within the step.
    StepNameOrder,
    /// Name and order within the window.
    NameOrder,
}

/// The matched collectives: per match, the index of the collective on every rank, in the
/// first rank's order, by `key` (and the order among collectives with equal keys), among the
/// collectives not `used` yet. By `Seq` (`Comms Id`), only the collectives that carry it; by
/// order, only those that carry no usable id (`seq`, `ids`: recorded on every rank): a
/// collective with an id whose partner is missing on some rank stays unmatched, as it would
/// pair with another collective by order.
fn match_collectives(
    ranks: &[RankFacts],
    key: Key,
    used: &[Vec<bool>],
    seq: bool,
    ids: bool,
) -> Vec<Vec<usize>> {
    use std::collections::HashMap;
    // key: (step or -1, name or group, Seq or Comms Id or 0) and its occurrence
    type Occ = ((i64, String, u64), usize);
    let keys = |r: &RankFacts| -> Vec<Option<Occ>> {
        let text = |i: Option<u32>| {
            i.and_then(|i| r.collective_names.get(i as usize))
                .cloned()
                .unwrap_or_default()
        };
        let mut seen: HashMap<(i64, String, u64), usize> = HashMap::new();
        r.collectives
            .iter()
            .map(|c| {
                let k = match key {
                    Key::GroupSeq => (-1, text(c.group), c.seq?),
                    Key::CommsId => (-1, String::new(), c.comms_id?),
                    _ if (seq && c.seq.is_some()) || (ids && c.comms_id.is_some()) => return None,
                    Key::StepNameOrder => (c.step, text(Some(c.name)), 0),
                    Key::NameOrder => (0, text(Some(c.name)), 0),
                };
                let occ = seen.entry(k.clone()).or_insert(0);
                *occ += 1;
                Some((k, *occ))
            })
            .collect::<Vec<Option<Occ>>>()
    };
    let free = |r: usize, i: usize, k: &Option<Occ>| k.is_some() && !used[r][i];
    let maps: Vec<HashMap<Occ, usize>> = ranks[1..]
        .iter()
        .enumerate()
        .map(|(r, rf)| {
            keys(rf)
                .into_iter()
                .enumerate()
                .filter(|(i, k)| free(r + 1, *i, k))
                .filter_map(|(i, k)| Some((k?, i)))
                .collect()
        })
        .collect();
    keys(&ranks[0])
        .into_iter()
        .enumerate()
        .filter(|(i, k)| free(0, *i, k))
        .filter_map(|(i, k)| {
            let k = k?;
            let mut row = Vec::with_capacity(ranks.len());
            row.push(i);
            for m in &maps {
                row.push(*m.get(&k)?);
            }
            Some(row)
        })
        .collect()
}

/// A collective span before it becomes a [`Collective`]: start, end, name, and what the trace
/// recorded of it (`Seq`, `Comms Id`, process group).
type Span = (
    Ns,
    Ns,
    crate::model::NameId,
    Option<u64>,
    Option<u64>,
    Option<crate::model::NameId>,
);

/// A span of `(start, end, name)` with the collective arguments `c` (if any).
fn span(s: Ns, e: Ns, n: crate::model::NameId, c: Option<&crate::model::CommArgs>) -> Span {
    (
        s,
        e,
        n,
        c.and_then(|c| c.seq),
        c.and_then(|c| c.comms_id),
        c.and_then(|c| c.group),
    )
}

/// The collective kernels of `device` counted in the window of `a`, with their arguments
/// (the kernel's own, else those of its `record_param_comms` by External id).
fn collective_kernels(trace: &Trace, a: &Analysis, device: Option<i64>) -> Vec<Span> {
    let Some(device) = device else {
        return Vec::new();
    };
    let classes = trace.kernel_classes();
    trace
        .gpu
        .iter()
        .filter(|g| g.kind == crate::model::GpuKind::Kernel && g.device as i64 == device)
        .filter(|g| {
            a.selection.mask.covered_within(g.interval()) > 0 && classes.get(g.name).communication
        })
        .map(|g| {
            let c = trace
                .kernel_comms
                .get(&g.correlation)
                .or_else(|| trace.op_comms.get(&g.external_id));
            span(g.start, g.end(), g.name, c)
        })
        .collect()
}

/// The rank's collectives in start order (see [`Collective`]), with their names.
fn collectives_of(
    trace: &Trace,
    a: &Analysis,
    mut spans: Vec<Span>,
) -> (Vec<Collective>, Vec<String>) {
    spans.sort_unstable();
    // an `Operator` and a `user_annotation` copy of one host span count once (the one with
    // arguments sorts last and is kept)
    spans.dedup_by(|next, kept| {
        let same = (next.0, next.1, next.2) == (kept.0, kept.1, kept.2);
        if same {
            *kept = *next;
        }
        same
    });
    let steps = &a.steps.steps;
    let mut names: Vec<crate::model::NameId> = Vec::new();
    let mut prev = a.selection.span.start;
    let out = spans
        .iter()
        .map(|&(s, e, id, seq, comms_id, group)| {
            let mut index = |id: crate::model::NameId| {
                (match names.iter().position(|&n| n == id) {
                    Some(i) => i,
                    None => {
                        names.push(id);
                        names.len() - 1
                    }
                }) as u32
            };
            let name = index(id);
            let group = group.map(&mut index);
            let i = steps.partition_point(|st| st.span.start <= s);
            let step = match i.checked_sub(1).map(|i| (i, &steps[i])) {
                Some((i, st)) if s < st.span.end => st.number.unwrap_or(i as i64),
                _ => -1,
            };
            let c = Collective {
                before: (s - prev).max(0),
                dur: e - s,
                start: s,
                name,
                step,
                seq,
                comms_id,
                group,
            };
            prev = prev.max(e);
            c
        })
        .collect();
    let names = names.iter().map(|&n| trace.name(n).to_string()).collect();
    (out, names)
}

impl RankFacts {
    /// Reduces one rank's analysis to its facts (`top_finding` is left empty: the caller
    /// fills it from the rank's diagnosis).
    pub fn new(
        trace: &Trace,
        a: &Analysis,
        path: &str,
        rank: i64,
        rank_source: RankSource,
    ) -> RankFacts {
        let main = a
            .timeline
            .iter()
            .max_by(|x, y| x.busy.cmp(&y.busy).then(y.device.cmp(&x.device)));
        let device = main.map(|t| t.device);
        let (pid, host, annotations, shapes) = host_pass(trace, a);
        let kernels = collective_kernels(trace, a, device);
        let host_collectives = kernels.is_empty() && !host.is_empty();
        let (collectives, collective_names) =
            collectives_of(trace, a, if host_collectives { host } else { kernels });
        // without device work, the communication of the steps' breakdown (host collectives)
        // is all exposed: nothing on a device runs beside it
        let host_comm: Ns = if main.is_none() {
            a.steps
                .steps
                .iter()
                .map(|s| s.breakdown.communication)
                .sum()
        } else {
            0
        };
        let utilization = device.and_then(|d| {
            a.devices
                .iter()
                .find(|g| g.device == d)
                .and_then(|g| g.utilization)
        });
        RankFacts {
            rank,
            rank_source,
            path: path.to_string(),
            world_size: trace.distributed.as_ref().and_then(|d| d.world_size),
            steps: a.steps.steps.len(),
            step_time: a.steps.average.total,
            window: a.selection.duration(),
            device,
            utilization,
            timeline_total: main.map_or(0, |t| t.total),
            computation: main.map_or(0, |t| t.computation),
            exposed_comm: main.map_or(host_comm, |t| t.exposed_comm),
            overlapped_comm: main.map_or(0, |t| (t.total_comm - t.exposed_comm).max(0)),
            exposed_memcpy: main.map_or(0, |t| t.exposed_memcpy),
            idle: main.map_or(0, |t| t.idle),
            top_finding: None,
            pid,
            start: trace.start(),
            first_step: a
                .steps
                .steps
                .first()
                .map(|s| s.name.clone())
                .unwrap_or_default(),
            last_step: a
                .steps
                .steps
                .last()
                .map(|s| s.name.clone())
                .unwrap_or_default(),
            compile: a.selection.compile.total,
            spans: 1,
            collectives,
            collective_names,
            host_collectives,
            parts: StepParts::of(&a.steps.steps),
            annotations,
            step_facts: {
                let split = main.map(|m| step_devices(trace, a, m));
                a.steps
                    .steps
                    .iter()
                    .enumerate()
                    .map(|(i, st)| StepFact {
                        number: st.number.unwrap_or(-1),
                        start: st.span.start,
                        dur: st.span.len(),
                        parts: StepParts::of_step(st),
                        device: split.as_ref().map(|v| v[i]),
                    })
                    .collect()
            },
            shapes,
            annotation_steps: 0,
        }
    }

    /// Steps for per-step division (at least 1).
    pub fn step_divisor(&self) -> f64 {
        self.steps.max(1) as f64
    }

    /// Steps for per-step division of [`RankFacts::annotations`] (at least 1): those of the
    /// rank's own window, which a common window may have reduced.
    pub fn annotation_divisor(&self) -> f64 {
        if self.annotation_steps > 0 {
            self.annotation_steps as f64
        } else {
            self.step_divisor()
        }
    }

    /// Exposed communication per step, ns.
    pub fn exposed_comm_per_step(&self) -> f64 {
        self.exposed_comm as f64 / self.step_divisor()
    }

    /// Step time minus exposed communication per step, ns (at least 0).
    pub fn own_time(&self) -> f64 {
        (self.step_time - self.exposed_comm_per_step()).max(0.0)
    }
}

/// The main device's split over each step's segment ([`StepDevice`]): the counted events of
/// `main` (launch-linked only when the rank's own split left unlinked ones out), clipped to the
/// window, then to each segment.
fn step_devices(
    trace: &Trace,
    a: &Analysis,
    main: &crate::analysis::timeline::GpuTimeline,
) -> Vec<StepDevice> {
    use crate::analysis::timeline::{timeline_class, TimelineClass};
    use crate::model::{GpuKind, Interval, IntervalSet, UnionBuilder};
    let window = a.selection.span;
    let (mut comp, mut comm, mut memcpy, mut kernels) = (
        UnionBuilder::new(),
        UnionBuilder::new(),
        UnionBuilder::new(),
        UnionBuilder::new(),
    );
    // with no unlinked event left out, every event counts (the same as the linked ones)
    let linked_only = main.unlinked > 0;
    for g in trace.gpu.iter().filter(|g| g.device as i64 == main.device) {
        let iv = g.interval();
        if iv.overlap(&window) == 0 {
            continue;
        }
        let iv = Interval::new(iv.start.max(window.start), iv.end.min(window.end));
        if g.kind == GpuKind::Kernel {
            kernels.push(iv);
        }
        if linked_only && !g.flow_linked {
            continue;
        }
        match timeline_class(trace, g) {
            Some(TimelineClass::Computation) => comp.push(iv),
            Some(TimelineClass::Communication) => comm.push(iv),
            Some(TimelineClass::Memcpy) => memcpy.push(iv),
            None => {}
        }
    }
    let (comp, comm, memcpy, kernels) = (
        comp.finish(),
        comm.finish(),
        memcpy.finish(),
        kernels.finish(),
    );
    let steps = &a.steps.steps;
    steps
        .iter()
        .enumerate()
        .map(|(i, st)| {
            let end = match steps.get(i + 1) {
                Some(n) if n.number.is_some() && n.number == st.number.map(|k| k + 1) => {
                    n.span.start.max(st.span.start)
                }
                _ => st.span.end,
            };
            let seg = Interval::new(
                st.span.start.max(window.start),
                end.min(window.end).max(st.span.start.max(window.start)),
            );
            let (cp, cm, mc) = (comp.clip(seg), comm.clip(seg), memcpy.clip(seg));
            let comp_comm = cp.union(&cm);
            let memcpy_covered = mc.overlap_total(&comp_comm);
            let all: IntervalSet = comp_comm.union(&mc);
            let hull = all.hull();
            StepDevice {
                computation: cp.total(),
                exposed_comm: cm.total() - cm.overlap_total(&cp),
                overlapped_comm: cm.overlap_total(&cp),
                exposed_memcpy: mc.total() - memcpy_covered,
                busy: comp_comm.total() + mc.total() - memcpy_covered,
                first: hull.map_or(0, |h| h.start),
                last: hull.map_or(0, |h| h.end),
                kernels: kernels.covered_within(seg),
            }
        })
        .collect()
}

/// One pass over the host events: the pid of the process with the most operators (ties: the
/// lower pid), and the host collective spans ([`classify::is_host_collective`], operators and
/// annotations) counted in the window of `a`: (start, end, name).
///
/// [`classify::is_host_collective`]: crate::model::classify::is_host_collective
#[allow(clippy::type_complexity)]
fn host_pass(
    trace: &Trace,
    a: &Analysis,
) -> (Option<i64>, Vec<Span>, Vec<(String, Ns)>, Vec<OpShapes>) {
    use crate::model::CpuKind;
    let mut per_thread = vec![0u64; trace.threads.len()];
    let mut memo =
        crate::model::fast::NameMemo::new(trace, crate::model::classify::is_host_collective);
    let mut host = Vec::new();
    // annotations are few (steps, DataLoader, optimizer, module forwards): a short list
    let mut annotations: Vec<(crate::model::NameId, Ns)> = Vec::new();
    // (operator, dims) -> time, for the operators with recorded shapes in the window
    let mut shaped: crate::model::fasthash::HashMap<
        (crate::model::NameId, crate::model::NameId),
        Ns,
    > = Default::default();
    let with_shapes = !trace.op_shapes.is_empty();
    for (i, e) in trace.cpu.iter().enumerate() {
        if e.kind == CpuKind::Op {
            if let Some(c) = per_thread.get_mut(e.thread as usize) {
                *c += 1;
            }
            if with_shapes {
                if let Some(sh) = trace.op_shape_at(i) {
                    if a.selection.mask.covered_within(e.interval()) > 0 {
                        *shaped.entry((e.name, sh.dims)).or_insert(0) += e.dur;
                    }
                }
            }
        }
        if matches!(e.kind, CpuKind::Op | CpuKind::UserAnnotation) {
            let collective = memo.get(e.name);
            if (collective || e.kind == CpuKind::UserAnnotation)
                && a.selection.mask.covered_within(e.interval()) > 0
            {
                if collective {
                    let c = trace.op_comms.get(&e.external_id);
                    host.push(span(e.start, e.end(), e.name, c));
                } else {
                    match annotations.iter_mut().find(|x| x.0 == e.name) {
                        Some(x) => x.1 += e.dur,
                        None => annotations.push((e.name, e.dur)),
                    }
                }
            }
        }
    }
    // the longest annotations, without the steps themselves
    let mut annotations: Vec<(String, Ns)> = annotations
        .into_iter()
        .map(|(n, d)| (trace.name(n).to_string(), d))
        .filter(|(n, _)| !n.starts_with("ProfilerStep#"))
        .collect();
    annotations.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    annotations.truncate(ANNOTATIONS_KEPT);
    let mut per_pid: Vec<(i64, u64)> = Vec::new();
    for (t, &c) in trace.threads.iter().zip(&per_thread) {
        if c == 0 {
            continue;
        }
        match per_pid.iter_mut().find(|p| p.0 == t.pid) {
            Some(p) => p.1 += c,
            None => per_pid.push((t.pid, c)),
        }
    }
    let pid = per_pid
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        .map(|p| p.0);
    // per operator: its dims with the most time (ties: the text), and its total
    let mut ops: Vec<OpShapes> = Vec::new();
    let mut rows: Vec<(String, String, Ns)> = shaped
        .into_iter()
        .map(|((n, d), t)| (trace.name(n).to_string(), trace.name(d).to_string(), t))
        .filter(|(_, d, _)| input_elements(d) > 0)
        .collect();
    // sorted by operator, then dims: `distinct` comes out sorted by text
    rows.sort();
    for (name, dims, t) in rows {
        match ops.iter_mut().find(|o| o.name == name) {
            Some(o) => {
                o.total += t;
                o.distinct_count += 1;
                if o.distinct.len() < DISTINCT_DIMS_KEPT {
                    o.distinct.push(dims.clone());
                }
                if t > o.time {
                    (o.dims, o.time) = (dims, t);
                }
            }
            None => ops.push(OpShapes {
                name,
                distinct: vec![dims.clone()],
                distinct_count: 1,
                dims,
                time: t,
                total: t,
            }),
        }
    }
    ops.sort_by(|x, y| y.total.cmp(&x.total).then(x.name.cmp(&y.name)));
    ops.truncate(SHAPES_KEPT);
    (pid, host, annotations, ops)
}

/// Load imbalance seen in the input shapes: the same operator with different input dims
/// across the ranks ([`shape_imbalance`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ShapeImbalance {
    /// The operator: among those whose dims differ, a forward one before a backward one
    /// (`…Backward0`), then the one with the most time over the ranks.
    pub name: String,
    /// Per rank (index in the ranks given): the dims that show the difference, of one call
    /// site on every rank ([`shape_imbalance`]); ranks that ran the same set of dims show the
    /// same dims.
    pub dims: Vec<String>,
    /// The rank (index) with the most input elements (ties: the lower index).
    pub largest: usize,
    /// Its input elements ÷ the median rank's.
    pub ratio: f64,
}

/// The operator recorded with shapes on every rank whose input dims differ between ranks
/// (uneven batches or sequence lengths: the ranks run different work): a forward operator
/// before a backward one (which of `aten::addmm` and `AddmmBackward0` takes more time can
/// differ between two captures of one workload; the note must not), then the one with the
/// most time over the ranks; `None` with fewer than two ranks, without shapes on every rank,
/// or when every shared operator ran with the same dims everywhere.
///
/// The dims compared are the set each rank ran the operator with ([`OpShapes::distinct`]);
/// an operator whose sets agree runs the same work on every rank, even when timing noise
/// gives its dims with the most time to different shapes. Summaries of older versions have
/// no set: their dims with the most time are compared.
///
/// The dims shown per rank, and the ratio of input elements, come from the sets, never from
/// time (which of two layers took longer on a rank is timing noise, and must not set two ranks
/// that ran the same work apart, nor compare one rank's first layer with another's second):
/// the first rank (by index) that ran dims some rank never ran shows the first of those by
/// text; every other rank shows, of its own such dims (of all its dims when it has none), the
/// one most like it (the same nesting and list lengths, then the most numbers equal in place;
/// ties: the first by text), so that the ranks compare one call site. Uneven batches or
/// sequence lengths change a leading number and keep the rest: the same layer on every rank.
pub fn shape_imbalance(ranks: &[RankFacts]) -> Option<ShapeImbalance> {
    if ranks.len() < 2 || ranks.iter().any(|r| r.shapes.is_empty()) {
        return None;
    }
    // (forward, time): a forward operator first, then the most time
    let mut best: Option<((bool, Ns), ShapeImbalance)> = None;
    for op in &ranks[0].shapes {
        let per: Option<Vec<&OpShapes>> = ranks
            .iter()
            .map(|r| r.shapes.iter().find(|o| o.name == op.name))
            .collect();
        let Some(per) = per else { continue };
        let same = |x: &OpShapes, y: &OpShapes| {
            if x.distinct_count > 0 && y.distinct_count > 0 {
                (x.distinct_count, &x.distinct) == (y.distinct_count, &y.distinct)
            } else {
                x.dims == y.dims
            }
        };
        if per.iter().all(|o| same(o, per[0])) {
            continue;
        }
        let total: Ns = per.iter().map(|o| o.total).sum();
        let key = (!op.name.contains("Backward"), total);
        if best.as_ref().is_some_and(|(k, _)| *k >= key) {
            continue;
        }
        let dims = showing_dims(&per);
        let elems: Vec<u64> = dims.iter().map(|d| input_elements(d)).collect();
        let largest = (0..per.len())
            .max_by(|&x, &y| elems[x].cmp(&elems[y]).then(y.cmp(&x)))
            .unwrap_or(0);
        let mut sorted = elems.clone();
        sorted.sort_unstable();
        let mid = sorted[sorted.len() / 2].max(1);
        best = Some((
            key,
            ShapeImbalance {
                name: op.name.clone(),
                dims,
                largest,
                ratio: elems[largest] as f64 / mid as f64,
            },
        ));
    }
    best.map(|b| b.1)
}

/// The dims each rank shows in a [`ShapeImbalance`] (see [`shape_imbalance`]): `per` holds
/// one operator's shapes on every rank, in order.
fn showing_dims(per: &[&OpShapes]) -> Vec<String> {
    // a rank's dims, sorted by text: its set, or its dims with the most time in summaries of
    // older versions (no set)
    let set = |o: &OpShapes| -> Vec<String> {
        if o.distinct_count == 0 || o.distinct.is_empty() {
            vec![o.dims.clone()]
        } else {
            o.distinct.clone()
        }
    };
    let sets: Vec<Vec<String>> = per.iter().map(|o| set(o)).collect();
    let everywhere = |d: &String| sets.iter().all(|s| s.contains(d));
    // per rank, the dims some rank never ran with; all its dims when there are none
    let own: Vec<Vec<&String>> = sets
        .iter()
        .map(|s| {
            let apart: Vec<&String> = s.iter().filter(|d| !everywhere(d)).collect();
            if apart.is_empty() {
                s.iter().collect()
            } else {
                apart
            }
        })
        .collect();
    let Some(reference) = sets.iter().find_map(|s| s.iter().find(|d| !everywhere(d))) else {
        // the sets agree (only summaries of older versions with modes apart come here)
        return per.iter().map(|o| o.dims.clone()).collect();
    };
    let (skeleton, numbers) = dims_parts(reference);
    own.iter()
        .map(|cands| {
            // the most like the reference: (same skeleton, numbers equal in place), the
            // first by text on ties (max_by keeps the last of equals: iterate reversed)
            cands
                .iter()
                .rev()
                .max_by_key(|d| {
                    let (sk, nums) = dims_parts(d);
                    let equal = nums.iter().zip(&numbers).filter(|(a, b)| a == b).count();
                    (sk == skeleton, equal)
                })
                .map(|d| (*d).clone())
                .unwrap_or_default()
        })
        .collect()
}

/// An `Input Dims` text split into its skeleton (brackets and commas, the numbers left out:
/// the nesting and list lengths) and its numbers in order.
fn dims_parts(dims: &str) -> (String, Vec<&str>) {
    let mut skeleton = String::with_capacity(dims.len());
    let mut numbers = Vec::new();
    let mut start = None;
    for (i, c) in dims.char_indices() {
        if c.is_ascii_digit() || c == '-' {
            start.get_or_insert(i);
            continue;
        }
        if let Some(s) = start.take() {
            numbers.push(&dims[s..i]);
            skeleton.push('#');
        }
        if !c.is_whitespace() {
            skeleton.push(c);
        }
    }
    if let Some(s) = start {
        numbers.push(&dims[s..]);
        skeleton.push('#');
    }
    (skeleton, numbers)
}

/// Annotations kept per rank ([`RankFacts::annotations`]).
pub const ANNOTATIONS_KEPT: usize = 8;

/// One capture of a rank that was captured several times (see *Spans of one rank*).
#[derive(Clone, Debug, PartialEq)]
pub struct SpanFacts {
    /// The file.
    pub path: String,
    /// Start, ns after the first span's start.
    pub offset: Ns,
    /// Steps in its window.
    pub steps: usize,
    /// First and last step.
    pub first_step: String,
    /// Last step.
    pub last_step: String,
    /// Mean step time, ns.
    pub step_time: f64,
    /// Compile work in it, ns.
    pub compile: Ns,
}

/// The spans of one rank, in time order, and what differs between them.
#[derive(Clone, Debug, PartialEq)]
pub struct RankSpans {
    /// The rank.
    pub rank: i64,
    /// Its process id.
    pub pid: i64,
    /// The spans, by start.
    pub spans: Vec<SpanFacts>,
    /// Why the spans are not alike (compile in some only, step times over 1.2× apart).
    pub notes: Vec<String>,
}

fn fmt_ms(ns: f64) -> String {
    format!("{:.2} ms", ns / 1e6)
}

/// Merges the files of one rank that are spans of one process (sorted by start).
fn merge_spans(mut group: Vec<RankFacts>) -> (RankFacts, RankSpans) {
    group.sort_by(|a, b| (a.start, &a.path).cmp(&(b.start, &b.path)));
    let t0 = group[0].start;
    let spans: Vec<SpanFacts> = group
        .iter()
        .map(|r| SpanFacts {
            path: r.path.clone(),
            offset: r.start - t0,
            steps: r.steps,
            first_step: r.first_step.clone(),
            last_step: r.last_step.clone(),
            step_time: r.step_time,
            compile: r.compile,
        })
        .collect();
    let mut notes = Vec::new();
    let compiling: Vec<usize> = (0..spans.len()).filter(|&i| spans[i].compile > 0).collect();
    if !compiling.is_empty() && compiling.len() < spans.len() {
        for &i in &compiling {
            notes.push(format!(
                "span {} still compiles ({} of torch.compile/autotune work); the others do not",
                i + 1,
                fmt_ms(spans[i].compile as f64)
            ));
        }
    }
    let timed: Vec<usize> = (0..spans.len()).filter(|&i| spans[i].steps > 0).collect();
    if let (Some(&lo), Some(&hi)) = (
        timed
            .iter()
            .min_by(|&&a, &&b| spans[a].step_time.total_cmp(&spans[b].step_time)),
        timed
            .iter()
            .max_by(|&&a, &&b| spans[a].step_time.total_cmp(&spans[b].step_time)),
    ) {
        if spans[lo].step_time > 0.0 && spans[hi].step_time > 1.2 * spans[lo].step_time {
            notes.push(format!(
                "span {}'s steps take {:.2}× those of span {} ({} against {})",
                hi + 1,
                spans[hi].step_time / spans[lo].step_time,
                lo + 1,
                fmt_ms(spans[hi].step_time),
                fmt_ms(spans[lo].step_time)
            ));
        }
    }
    let steps: usize = group.iter().map(|r| r.steps).sum();
    let step_sum: f64 = group.iter().map(|r| r.step_time * r.steps as f64).sum();
    let window: Ns = group.iter().map(|r| r.window).sum();
    let util_known = group.iter().all(|r| r.utilization.is_some());
    let util = util_known.then(|| {
        let w = window.max(1) as f64;
        group
            .iter()
            .map(|r| r.utilization.unwrap_or(0.0) * r.window as f64)
            .sum::<f64>()
            / w
    });
    let sum = |f: fn(&RankFacts) -> Ns| group.iter().map(f).sum::<Ns>();
    // the top finding of the slowest span
    let slowest = (0..group.len())
        .max_by(|&a, &b| group[a].step_time.total_cmp(&group[b].step_time))
        .unwrap_or(0);
    // the spans' collectives one after the other, in span order, names shared
    let mut collective_names: Vec<String> = Vec::new();
    let mut collectives = Vec::new();
    for r in &group {
        for c in &r.collectives {
            let mut id = |i: u32| {
                let name = r
                    .collective_names
                    .get(i as usize)
                    .cloned()
                    .unwrap_or_default();
                (match collective_names.iter().position(|n| *n == name) {
                    Some(i) => i,
                    None => {
                        collective_names.push(name);
                        collective_names.len() - 1
                    }
                }) as u32
            };
            collectives.push(Collective {
                name: id(c.name),
                group: c.group.map(&mut id),
                ..*c
            });
        }
    }
    let first = &group[0];
    let merged = RankFacts {
        rank: first.rank,
        rank_source: first.rank_source,
        path: first.path.clone(),
        world_size: first.world_size,
        steps,
        step_time: if steps > 0 {
            step_sum / steps as f64
        } else {
            0.0
        },
        window,
        device: first.device,
        utilization: util,
        timeline_total: sum(|r| r.timeline_total),
        computation: sum(|r| r.computation),
        exposed_comm: sum(|r| r.exposed_comm),
        overlapped_comm: sum(|r| r.overlapped_comm),
        exposed_memcpy: sum(|r| r.exposed_memcpy),
        idle: sum(|r| r.idle),
        top_finding: group[slowest].top_finding.clone(),
        pid: first.pid,
        start: first.start,
        first_step: first.first_step.clone(),
        last_step: group[group.len() - 1].last_step.clone(),
        compile: sum(|r| r.compile),
        spans: group.len(),
        collectives,
        collective_names,
        host_collectives: group.iter().any(|r| r.host_collectives),
        parts: {
            let mut p = StepParts::default();
            group.iter().for_each(|r| p.add(&r.parts));
            p
        },
        annotations: {
            let mut v: Vec<(String, Ns)> = Vec::new();
            for (n, d) in group.iter().flat_map(|r| r.annotations.iter()) {
                match v.iter_mut().find(|x| x.0 == *n) {
                    Some(x) => x.1 += d,
                    None => v.push((n.clone(), *d)),
                }
            }
            v.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
            v.truncate(ANNOTATIONS_KEPT);
            v
        },
        step_facts: group
            .iter()
            .flat_map(|r| r.step_facts.iter().copied())
            .collect(),
        // the first span's
        shapes: first.shapes.clone(),
        annotation_steps: 0,
    };
    let spans = RankSpans {
        rank: first.rank,
        pid: first.pid.unwrap_or_default(),
        spans,
        notes,
    };
    (merged, spans)
}

/// True when the files of one rank are spans of one process: one known pid, distinct starts.
fn are_spans(group: &[RankFacts]) -> bool {
    let pid = group[0].pid;
    pid.is_some()
        && group.iter().all(|r| r.pid == pid)
        && (1..group.len()).all(|i| (0..i).all(|j| group[i].start != group[j].start))
}

/// The common window of a folder's ranks ([`common_window`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CommonWindow {
    /// The step numbers every rank's window counts.
    pub steps: Vec<i64>,
    /// The name of a step without its number (`ProfilerStep#`).
    pub prefix: String,
    /// The ranks whose figures were reduced to the common steps, each with the steps of its own
    /// window left out.
    pub trimmed: Vec<(i64, Vec<i64>)>,
    /// The ranks whose windows differ from the common one but were kept whole, with why.
    pub kept: Vec<(i64, Vec<i64>, String)>,
}

/// One window for a synchronous job: when the ranks' windows count different step numbers (a
/// step one rank's window left out as an outlier or warm-up is still counted on another),
/// every rank is reduced to the steps all the windows count. A rank is reduced from its
/// [`RankFacts::step_facts`]: its steps, mean step time, window (each run of consecutive steps
/// from its first start to its last end, as the window's rule), step breakdown, its
/// collectives in the steps left out, and its exposed communication: for a rank without device
/// work the communication of its steps' breakdown, for a rank with device work its
/// GPU-timeline split summed over the common steps' segments ([`StepDevice`]; span and idle
/// per run of consecutive steps, utilization over the reduced window), which equals the
/// rank's own facts with `--steps` over a run of common steps. A rank with device work whose
/// steps carry no device split (a summary written by an older version) keeps its window
/// whole (kept, with why). `None` with fewer
/// than two ranks, a rank without numbered steps, windows that agree, or no step in common.
pub fn common_window(ranks: &mut [RankFacts]) -> Option<CommonWindow> {
    use std::collections::BTreeSet;
    if ranks.len() < 2
        || ranks
            .iter()
            .any(|r| r.step_facts.is_empty() || r.step_facts.iter().any(|s| s.number < 0))
    {
        return None;
    }
    let sets: Vec<BTreeSet<i64>> = ranks
        .iter()
        .map(|r| r.step_facts.iter().map(|s| s.number).collect())
        .collect();
    let mut common = sets[0].clone();
    for set in &sets[1..] {
        common = common.intersection(set).copied().collect();
    }
    if common.is_empty() || sets.iter().all(|x| *x == common) {
        return None;
    }
    let prefix = ranks[0]
        .first_step
        .trim_end_matches(|c: char| c.is_ascii_digit())
        .to_string();
    let mut out = CommonWindow {
        steps: common.iter().copied().collect(),
        prefix: prefix.clone(),
        ..CommonWindow::default()
    };
    for (r, set) in ranks.iter_mut().zip(&sets) {
        let dropped: Vec<i64> = set.difference(&common).copied().collect();
        if dropped.is_empty() {
            continue;
        }
        if r.device.is_some() && r.step_facts.iter().any(|s| s.device.is_none()) {
            out.kept.push((
                r.rank,
                dropped,
                "its device timeline (busy, exposed communication) is not kept step by step \
                 (a summary written by an older version)"
                    .into(),
            ));
            continue;
        }
        let keep: Vec<StepFact> = r
            .step_facts
            .iter()
            .copied()
            .filter(|s| common.contains(&s.number))
            .collect();
        if r.annotation_steps == 0 {
            r.annotation_steps = r.steps;
        }
        r.steps = keep.len();
        r.step_time = keep.iter().map(|s| s.dur as f64).sum::<f64>() / keep.len() as f64;
        // the window's rule: each run of consecutive steps from its first start to its last end
        let mut window = 0;
        let mut run: Option<(Ns, Ns, i64)> = None;
        for st in &keep {
            let end = st.start + st.dur;
            run = match run {
                Some((a, e, n)) if st.number == n + 1 => Some((a, e.max(end), st.number)),
                _ => {
                    window += run.map_or(0, |(a, e, _)| e - a);
                    Some((st.start, end, st.number))
                }
            };
        }
        r.window = window + run.map_or(0, |(a, e, _)| e - a);
        let mut parts = StepParts::default();
        keep.iter().for_each(|s| parts.add(&s.parts));
        r.parts = parts;
        if r.device.is_some() {
            reduce_device(r, &keep);
        } else {
            // a rank without device work: its exposed communication is its steps' communication
            r.exposed_comm = parts.communication;
        }
        r.collectives.retain(|c| !dropped.contains(&c.step));
        let name = |n: i64| format!("{prefix}{n}");
        r.first_step = keep.first().map(|s| name(s.number)).unwrap_or_default();
        r.last_step = keep.last().map(|s| name(s.number)).unwrap_or_default();
        r.step_facts = keep;
        out.trimmed.push((r.rank, dropped));
    }
    Some(out)
}

/// A rank with device work reduced to the steps `keep`: its GPU-timeline split summed over
/// their segments ([`StepDevice`]); the span (`timeline_total`) of each run of consecutive
/// steps from its first counted start to its last counted end, idle the span minus busy; the
/// utilization the kernels' union over the reduced window.
fn reduce_device(r: &mut RankFacts, keep: &[StepFact]) {
    let dev: Vec<(i64, StepDevice)> = keep
        .iter()
        .filter_map(|s| s.device.map(|d| (s.number, d)))
        .collect();
    let sum = |f: fn(&StepDevice) -> Ns| dev.iter().map(|(_, d)| f(d)).sum::<Ns>();
    let busy = sum(|d| d.busy);
    let mut total = 0;
    let mut run: Option<(Ns, Ns, i64)> = None;
    for &(n, d) in &dev {
        let has = d.last > d.first || d.busy > 0;
        run = match run {
            Some((a, e, k)) if n == k + 1 => {
                if !has {
                    Some((a, e, n))
                } else if e == 0 {
                    Some((d.first, d.last, n))
                } else {
                    Some((a, e.max(d.last), n))
                }
            }
            _ => {
                total += run.map_or(0, |(a, e, _)| e - a);
                Some(if has { (d.first, d.last, n) } else { (0, 0, n) })
            }
        };
    }
    total += run.map_or(0, |(a, e, _)| e - a);
    r.computation = sum(|d| d.computation);
    r.exposed_comm = sum(|d| d.exposed_comm);
    r.overlapped_comm = sum(|d| d.overlapped_comm);
    r.exposed_memcpy = sum(|d| d.exposed_memcpy);
    r.timeline_total = total;
    r.idle = (total - busy).max(0);
    if r.utilization.is_some() && r.window > 0 {
        r.utilization = Some(sum(|d| d.kernels) as f64 / r.window as f64);
    }
}

/// True when `a` ranks as slower than `b`: larger step time, then lower rank, then path.
pub fn is_slower(a: &RankFacts, b: &RankFacts) -> bool {
    match a.step_time.total_cmp(&b.step_time) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => (a.rank, &a.path) < (b.rank, &b.path),
    }
}

/// The cross-rank summary.
#[derive(Clone, Debug, PartialEq)]
pub struct RankSummary {
    /// One entry per rank file read, by rank then path.
    pub ranks: Vec<RankFacts>,
    /// Index in `ranks` of the slowest rank.
    pub slowest: usize,
    /// Index in `ranks` of the fastest rank (smallest step time; ties: lower rank).
    pub fastest: usize,
    /// Median step time over the ranks, ns.
    pub median_step: f64,
    /// Slowest step time ÷ median (1 when the median is 0).
    pub spread: f64,
    /// Index of the rank with the most exposed communication per step.
    pub most_exposed_comm: usize,
    /// Index of the rank with the least exposed communication per step.
    pub least_exposed_comm: usize,
    /// Median exposed communication per step, ns.
    pub median_exposed_comm: f64,
    /// Index of the rank with the largest own time (the straggler candidate).
    pub most_own_time: usize,
    /// Median own time, ns.
    pub median_own_time: f64,
    /// Ranks that appear in more than one file, with those files (not spans of one process).
    pub duplicates: Vec<(i64, Vec<String>)>,
    /// Ranks captured several times by one process, merged into one entry of `ranks`.
    pub spans: Vec<RankSpans>,
    /// The common window, when the ranks' own windows counted different steps.
    pub common: Option<CommonWindow>,
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Summarizes the facts of every rank (at least one). Ranks are sorted by rank, then path.
pub fn summarize(mut ranks: Vec<RankFacts>) -> RankSummary {
    assert!(!ranks.is_empty(), "summarize needs at least one rank");
    ranks.sort_by(|a, b| (a.rank, &a.path).cmp(&(b.rank, &b.path)));
    // spans of one process become one rank entry
    let mut spans = Vec::new();
    let mut merged = Vec::with_capacity(ranks.len());
    let mut it = ranks.into_iter().peekable();
    while let Some(r) = it.next() {
        let mut group = vec![r];
        while it.peek().is_some_and(|n| n.rank == group[0].rank) {
            group.extend(it.next());
        }
        if group.len() > 1 && are_spans(&group) {
            let (m, s) = merge_spans(group);
            merged.push(m);
            spans.push(s);
        } else {
            merged.extend(group);
        }
    }
    let mut ranks = merged;
    let common = common_window(&mut ranks);
    let mut slowest = 0;
    let mut fastest = 0;
    for i in 1..ranks.len() {
        if is_slower(&ranks[i], &ranks[slowest]) {
            slowest = i;
        }
        // a strictly smaller step time; ties keep the lower rank (sorted first)
        if ranks[i].step_time < ranks[fastest].step_time {
            fastest = i;
        }
    }
    let median_step = median(ranks.iter().map(|r| r.step_time).collect());
    let spread = if median_step > 0.0 {
        ranks[slowest].step_time / median_step
    } else {
        1.0
    };
    let mut most = 0;
    let mut least = 0;
    for i in 1..ranks.len() {
        let c = ranks[i].exposed_comm_per_step();
        if c > ranks[most].exposed_comm_per_step() {
            most = i;
        }
        if c < ranks[least].exposed_comm_per_step() {
            least = i;
        }
    }
    let median_exposed_comm = median(ranks.iter().map(|r| r.exposed_comm_per_step()).collect());
    let mut most_own_time = 0;
    for i in 1..ranks.len() {
        if ranks[i].own_time() > ranks[most_own_time].own_time() {
            most_own_time = i;
        }
    }
    let median_own_time = median(ranks.iter().map(|r| r.own_time()).collect());
    let mut duplicates: Vec<(i64, Vec<String>)> = Vec::new();
    for w in ranks.chunk_by(|a, b| a.rank == b.rank) {
        if w.len() > 1 {
            duplicates.push((w[0].rank, w.iter().map(|r| r.path.clone()).collect()));
        }
    }
    RankSummary {
        ranks,
        slowest,
        fastest,
        median_step,
        spread,
        most_exposed_comm: most,
        least_exposed_comm: least,
        median_exposed_comm,
        most_own_time,
        median_own_time,
        duplicates,
        spans,
        common,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Facts of a synthetic rank: step time and exposed communication per step, ms.
    pub fn facts(rank: i64, step_ms: f64, exposed_ms: f64) -> RankFacts {
        let ms = 1_000_000.0;
        RankFacts {
            rank,
            rank_source: RankSource::DistributedInfo,
            path: format!("rank{rank}.json"),
            world_size: None,
            steps: 2,
            step_time: step_ms * ms,
            window: (2.0 * step_ms * ms) as Ns,
            device: Some(0),
            utilization: Some(0.5),
            timeline_total: (2.0 * step_ms * ms) as Ns,
            computation: (step_ms * ms) as Ns,
            exposed_comm: (2.0 * exposed_ms * ms) as Ns,
            overlapped_comm: 0,
            exposed_memcpy: 0,
            idle: 0,
            top_finding: None,
            pid: None,
            start: 0,
            first_step: String::new(),
            last_step: String::new(),
            compile: 0,
            collectives: Vec::new(),
            collective_names: Vec::new(),
            host_collectives: false,
            parts: StepParts::default(),
            annotations: Vec::new(),
            spans: 1,
            step_facts: Vec::new(),
            shapes: Vec::new(),
            annotation_steps: 0,
        }
    }

    #[test]
    fn slowest_median_spread() {
        let s = summarize(vec![
            facts(2, 10.0, 1.0),
            facts(0, 10.0, 3.0),
            facts(1, 15.0, 0.5),
        ]);
        assert_eq!(
            s.ranks.iter().map(|r| r.rank).collect::<Vec<_>>(),
            [0, 1, 2]
        );
        assert_eq!(s.ranks[s.slowest].rank, 1);
        assert_eq!(s.ranks[s.fastest].rank, 0);
        assert_eq!(s.median_step, 10_000_000.0);
        assert!((s.spread - 1.5).abs() < 1e-12);
        assert_eq!(s.ranks[s.most_exposed_comm].rank, 0);
        assert_eq!(s.ranks[s.least_exposed_comm].rank, 1);
        assert_eq!(s.median_exposed_comm, 1_000_000.0);
        // own times 7, 14.5, 9 ms
        assert_eq!(s.ranks[s.most_own_time].rank, 1);
        assert_eq!(s.median_own_time, 9_000_000.0);
        assert!(s.duplicates.is_empty());
    }

    /// A rank's trace: one step of three rounds, each `compute_ms` of compute then an
    /// all-reduce that ends when the slowest rank (compute `slowest_ms`) has sent 1 ms later.
    fn rank_trace(compute_ms: f64, slowest_ms: f64) -> Trace {
        use crate::model::build::TraceBuilder;
        use crate::model::GpuKind;
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
        let round = (slowest_ms + 1.0) * 1000.0;
        b.annotation("ProfilerStep#1", 0.0, 3.0 * round + 10.0);
        for k in 0..3 {
            let t = k as f64 * round;
            let c = b.runtime("cudaLaunchKernel", 0, t, 2.0);
            b.gpu(
                GpuKind::Kernel,
                "gemm",
                0,
                7,
                t + 5.0,
                compute_ms * 1000.0 - 5.0,
                c,
            );
            let c = b.runtime("cudaLaunchKernel", 0, t + 3.0, 2.0);
            let start = t + compute_ms * 1000.0;
            b.gpu(
                GpuKind::Kernel,
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                0,
                8,
                start,
                t + round - start,
                c,
            );
        }
        b.build()
    }

    #[test]
    fn culprit_arrives_last_and_victims_wait_for_it() {
        // rank 2 computes 2 ms longer before each of the 3 collectives
        let ranks: Vec<RankFacts> = [5.0, 5.0, 7.0, 5.0]
            .iter()
            .enumerate()
            .map(|(r, &ms)| {
                let t = rank_trace(ms, 7.0);
                let a = crate::analysis::analyze(&t, &Default::default());
                RankFacts::new(&t, &a, "r.json", r as i64, RankSource::Order)
            })
            .collect();
        assert_eq!(ranks[0].collectives.len(), 3);
        assert_eq!(
            ranks[2].collectives[1],
            Collective {
                before: 7_000_000,
                dur: 1_000_000,
                start: ranks[2].start + 15_000_000,
                name: 0,
                step: 1,
                ..Default::default()
            }
        );
        assert_eq!(
            ranks[2].collective_names,
            ["ncclDevKernel_AllReduce_Sum_f32_RING_LL"]
        );
        assert!(!ranks[2].host_collectives);
        let a = arrivals(&ranks);
        assert_eq!(a.matched, 3);
        assert_eq!((a.steps, a.matching), (1, Matching::StepNameOrder));
        assert!(a.aligned);
        assert_eq!(a.residual, Some(0));
        assert_eq!(a.culprit, Some(2));
        assert_eq!(a.last, [0, 0, 3, 0]);
        // each other rank waited 2 ms in each collective
        assert_eq!(a.waited, [6_000_000, 6_000_000, 0, 6_000_000]);
        assert_eq!(a.caused, [0, 0, 18_000_000, 0]);
        // another clock on rank 3 (5 s ahead): the same arrivals, the offset found
        let mut skewed = ranks.clone();
        for c in &mut skewed[3].collectives {
            c.start += 5_000_000_000;
        }
        let b = arrivals(&skewed);
        assert!(b.aligned);
        assert_eq!(b.offsets, [0, 0, 0, 5_000_000_000]);
        assert_eq!(
            (b.last.clone(), b.waited.clone()),
            (a.last.clone(), a.waited.clone())
        );
        // ends that do not coincide (rank 3's collectives drift by 3 ms each): not aligned
        let mut drift = ranks.clone();
        for (k, c) in drift[3].collectives.iter_mut().enumerate() {
            c.start += 3_000_000 * k as Ns;
        }
        let d = arrivals(&drift);
        assert!(!d.aligned, "{:?}", d.residual);
        assert_eq!(d.offsets, [0, 0, 0, 0]);
        // balanced ranks: nobody waits
        let even: Vec<RankFacts> = (0..3)
            .map(|r| {
                let t = rank_trace(5.0, 5.0);
                let a = crate::analysis::analyze(&t, &Default::default());
                RankFacts::new(&t, &a, "r.json", r, RankSource::Order)
            })
            .collect();
        assert_eq!(arrivals(&even).waited, [0, 0, 0]);
    }

    /// A CPU-only rank (gloo): three steps, each `compute_ms` of host work then a
    /// `gloo:all_reduce` span that ends when the slowest rank (`slowest_ms`) has sent 1 ms
    /// later; `late` gives one step's compute instead.
    pub(crate) fn gloo_rank(compute_ms: f64, slowest_ms: &[f64; 3]) -> Trace {
        use crate::model::build::TraceBuilder;
        let mut b = TraceBuilder::new();
        let mut t = 0.0;
        for (k, &slow) in slowest_ms.iter().enumerate() {
            let round = (slow + 1.0) * 1000.0;
            b.annotation(&format!("ProfilerStep#{}", k + 3), t, round);
            let own = if compute_ms < 0.0 { slow } else { compute_ms };
            b.op("aten::addmm", t, own * 1000.0);
            b.op("gloo:all_reduce", t + own * 1000.0, round - own * 1000.0);
            t += round;
        }
        b.build()
    }

    #[test]
    fn host_collectives_count_and_match() {
        // rank 1 is the slowest at steps 3 and 4, rank 2 at step 5 (-1: always the slowest)
        let slowest = [9.0, 9.0, 6.0];
        let own = [[4.0, 4.0, 4.0], [9.0, 9.0, 4.0], [4.0, 4.0, 6.0]];
        let ranks: Vec<RankFacts> = (0..3)
            .map(|r| {
                let mut b = crate::model::build::TraceBuilder::new();
                let mut t = 0.0;
                for k in 0..3 {
                    let round = (slowest[k] + 1.0) * 1000.0;
                    b.annotation(&format!("ProfilerStep#{}", k + 3), t, round);
                    b.op("aten::addmm", t, own[r][k] * 1000.0);
                    b.op(
                        "gloo:all_reduce",
                        t + own[r][k] * 1000.0,
                        round - own[r][k] * 1000.0,
                    );
                    t += round;
                }
                let tr = b.build();
                let a = crate::analysis::analyze(&tr, &Default::default());
                RankFacts::new(&tr, &a, "r.json", r as i64, RankSource::Order)
            })
            .collect();
        let r0 = &ranks[0];
        assert_eq!(r0.device, None);
        assert!(r0.host_collectives);
        assert_eq!(r0.collective_names, ["gloo:all_reduce"]);
        assert_eq!(
            r0.collectives.iter().map(|c| c.step).collect::<Vec<_>>(),
            [3, 4, 5]
        );
        // rank 0's all-reduces are exposed communication: 6 + 6 + 3 ms
        assert_eq!(r0.exposed_comm, 15_000_000);
        let a = arrivals(&ranks);
        assert!(a.host && a.aligned);
        assert_eq!(a.last, [0, 2, 1]);
        // rank 1 made ranks 0 and 2 wait 5 ms at steps 3 and 4; rank 2 made the others wait
        // 2 ms at step 5
        assert_eq!(a.caused, [0, 20_000_000, 4_000_000]);
        assert_eq!(a.waited, [12_000_000, 2_000_000, 10_000_000]);
        assert_eq!(a.culprit, Some(1));
        // summarised and merged through JSON: the same facts
        let json = serde_json::to_string(&ranks[1]).unwrap();
        let back: RankFacts = serde_json::from_str(&json).unwrap();
        assert_eq!(back, ranks[1]);
    }

    /// A gloo rank of steps given as (own work, all-reduce, work after it), ms, numbered
    /// from 1, back to back from `t0`.
    fn gloo_steps(steps: &[(f64, f64, f64)]) -> Trace {
        use crate::model::build::TraceBuilder;
        let mut b = TraceBuilder::new();
        let mut t = 0.0;
        for (k, &(own, comm, after)) in steps.iter().enumerate() {
            let (own, comm, after) = (own * 1000.0, comm * 1000.0, after * 1000.0);
            b.annotation(&format!("ProfilerStep#{}", k + 1), t, own + comm + after);
            b.op("aten::addmm", t, own);
            b.op("gloo:all_reduce", t + own, comm);
            if after > 0.0 {
                b.op("aten::add_", t + own + comm, after);
            }
            t += own + comm + after;
        }
        b.build()
    }

    #[test]
    fn one_window_for_the_ranks() {
        // six steps of 10 ms; rank 1 works 40 ms more after step 3's all-reduce (its step 3 is
        // the outlier), and arrives late at step 4's, for which the others wait 40 ms more
        // (their step 4 is the outlier); at step 4 rank 1 works 9 ms before the all-reduce
        let even = (4.0, 6.0, 0.0);
        let victim = [even, even, even, (4.0, 46.0, 0.0), even, even];
        let culprit = [even, even, (4.0, 6.0, 40.0), (9.0, 1.0, 0.0), even, even];
        let ranks: Vec<RankFacts> = [victim, culprit, victim]
            .iter()
            .enumerate()
            .map(|(r, st)| {
                let t = gloo_steps(st);
                let a = crate::analysis::analyze(&t, &Default::default());
                RankFacts::new(&t, &a, "r.json", r as i64, RankSource::Order)
            })
            .collect();
        // their own windows: each left out its outlier step
        let nums = |r: &RankFacts| r.step_facts.iter().map(|s| s.number).collect::<Vec<_>>();
        assert_eq!(nums(&ranks[0]), [1, 2, 3, 5, 6]);
        assert_eq!(nums(&ranks[1]), [1, 2, 4, 5, 6]);
        assert_eq!(ranks[1].exposed_comm, 25_000_000);
        let s = summarize(ranks.clone());
        let c = s.common.as_ref().expect("a common window");
        assert_eq!(c.steps, [1, 2, 5, 6]);
        assert_eq!(c.trimmed, [(0, vec![3]), (1, vec![4]), (2, vec![3])]);
        assert!(c.kept.is_empty());
        for r in &s.ranks {
            assert_eq!(nums(r), [1, 2, 5, 6]);
            assert_eq!((r.steps, r.step_time), (4, 10_000_000.0));
            assert_eq!(
                (r.first_step.as_str(), r.last_step.as_str()),
                ("ProfilerStep#1", "ProfilerStep#6")
            );
            // 6 ms of all-reduce in each common step
            assert_eq!(r.exposed_comm, 24_000_000, "rank {}", r.rank);
            assert_eq!(r.parts.communication, 24_000_000);
            assert_eq!(r.window, 40_000_000);
            assert!(r.collectives.iter().all(|c| [1, 2, 5, 6].contains(&c.step)));
        }
        // a rank with device work but no steps' device split keeps its window, with why
        let mut gpu = ranks.clone();
        gpu[1].device = Some(0);
        let s = summarize(gpu);
        let c = s.common.unwrap();
        assert_eq!(c.trimmed, [(0, vec![3]), (2, vec![3])]);
        assert_eq!(c.kept.len(), 1);
        assert_eq!((c.kept[0].0, c.kept[0].1.clone()), (1, vec![4]));
        assert_eq!(s.ranks[1].steps, 5);
        // windows that agree: nothing to do
        assert_eq!(
            summarize(vec![ranks[0].clone(), ranks[2].clone()]).common,
            None
        );
    }

    /// A GPU rank of steps given as (compute, all-reduce), ms, numbered from 1, back to back:
    /// each step launches a `gemm` then an NCCL all-reduce that overlaps the gemm's last ms,
    /// and a copy after it; the host step ends when the device does.
    fn gpu_steps(steps: &[(f64, f64)]) -> Trace {
        use crate::model::build::TraceBuilder;
        use crate::model::GpuKind;
        let mut b = TraceBuilder::new().device(0, "NVIDIA H100", 132, 80 << 30);
        let mut t = 0.0;
        for (k, &(own, comm)) in steps.iter().enumerate() {
            let (own, comm) = (own * 1000.0, comm * 1000.0);
            let len = own + comm + 200.0;
            b.annotation(&format!("ProfilerStep#{}", k + 1), t, len);
            let c = b.runtime("cudaLaunchKernel", 0, t, 2.0);
            b.gpu(GpuKind::Kernel, "gemm", 0, 7, t + 10.0, own - 10.0, c);
            let c = b.runtime("cudaLaunchKernel", 0, t + 3.0, 2.0);
            b.gpu(
                GpuKind::Kernel,
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                0,
                8,
                t + own - 1000.0,
                comm + 1000.0,
                c,
            );
            let c = b.runtime("cudaMemcpyAsync", 0, t + 6.0, 2.0);
            b.gpu(
                GpuKind::Memcpy,
                "Memcpy DtoH",
                0,
                9,
                t + own + comm + 50.0,
                100.0,
                c,
            );
            t += len;
        }
        b.build()
    }

    #[test]
    fn one_window_for_device_ranks() {
        // six steps of 10 ms; rank 0's step 6 and rank 1's step 5 are outliers (40 ms more of
        // compute): the common window is steps 1-4, and each reduced rank equals the rank's
        // own facts over `--steps 1..4`
        let even = (4.0, 5.8);
        let late = (44.0, 5.8);
        let plans = [
            [even, even, even, even, even, late],
            [even, even, even, even, late, even],
            [even, even, even, even, even, even],
        ];
        let facts = |plan: &[(f64, f64)], r: i64, opts: &crate::analysis::AnalyzeOptions| {
            let t = gpu_steps(plan);
            let a = crate::analysis::analyze(&t, opts);
            RankFacts::new(&t, &a, "r.json", r, RankSource::Order)
        };
        let ranks: Vec<RankFacts> = plans
            .iter()
            .enumerate()
            .map(|(r, p)| facts(p, r as i64, &Default::default()))
            .collect();
        let nums = |r: &RankFacts| r.step_facts.iter().map(|s| s.number).collect::<Vec<_>>();
        assert_eq!(nums(&ranks[0]), [1, 2, 3, 4, 5]);
        assert_eq!(nums(&ranks[1]), [1, 2, 3, 4, 6]);
        // the steps' device split sums to the window's when the window is one run (back-to-back
        // steps tile it; rank 1's window split is over its hull, outlier step 5 included)
        for r in &ranks[..1] {
            let d: Vec<StepDevice> = r.step_facts.iter().map(|s| s.device.unwrap()).collect();
            let sum = |f: fn(&StepDevice) -> Ns| d.iter().map(f).sum::<Ns>();
            assert_eq!(sum(|d| d.computation), r.computation, "rank {}", r.rank);
            assert_eq!(sum(|d| d.exposed_comm), r.exposed_comm);
            assert_eq!(sum(|d| d.overlapped_comm), r.overlapped_comm);
            assert_eq!(sum(|d| d.exposed_memcpy), r.exposed_memcpy);
        }
        let s = summarize(ranks.clone());
        let c = s.common.as_ref().expect("a common window");
        assert_eq!(c.steps, [1, 2, 3, 4]);
        assert_eq!(c.trimmed, [(0, vec![5]), (1, vec![6]), (2, vec![5, 6])]);
        assert!(c.kept.is_empty(), "{:?}", c.kept);
        let steps = crate::analysis::AnalyzeOptions {
            window: crate::window::WindowSpec::Steps {
                first: Some(1),
                last: Some(4),
            },
            ..Default::default()
        };
        for (r, plan) in s.ranks.iter().zip(&plans) {
            let own = facts(plan, r.rank, &steps);
            assert_eq!(nums(r), [1, 2, 3, 4]);
            assert_eq!((r.steps, r.step_time), (own.steps, own.step_time));
            assert_eq!(r.window, own.window, "rank {}", r.rank);
            assert_eq!(
                (r.computation, r.exposed_comm, r.overlapped_comm),
                (own.computation, own.exposed_comm, own.overlapped_comm),
                "rank {}",
                r.rank
            );
            assert_eq!(
                (r.exposed_memcpy, r.idle, r.timeline_total),
                (own.exposed_memcpy, own.idle, own.timeline_total),
                "rank {}",
                r.rank
            );
            let (u, v) = (r.utilization.unwrap(), own.utilization.unwrap());
            assert!((u - v).abs() < 1e-12, "rank {}: {u} {v}", r.rank);
            // 5.8 ms of the 6.8 ms all-reduce exposed a step (its first ms under the gemm)
            assert_eq!(r.exposed_comm, 4 * 5_800_000);
            assert_eq!(r.overlapped_comm, 4 * 1_000_000);
        }
        // a summary without the steps' device split (an older version): kept whole, with why
        let mut old = ranks.clone();
        old[1].step_facts.iter_mut().for_each(|s| s.device = None);
        let c = summarize(old).common.unwrap();
        assert_eq!(c.kept.len(), 1);
        assert_eq!((c.kept[0].0, c.kept[0].1.clone()), (1, vec![6]));
    }

    #[test]
    fn uneven_input_shapes_are_load_imbalance() {
        assert_eq!(
            input_elements("[[96, 64], [128, 64], [], [128]]"),
            96 * 64 + 128 * 64 + 128
        );
        assert_eq!(input_elements("[[], []]"), 0);
        assert_eq!(input_elements("[]"), 0);
        // rank 1 runs batches of 96 rows, ranks 0 and 2 of 32: recorded, kept and compared
        let ranks: Vec<RankFacts> = [32, 96, 32]
            .iter()
            .enumerate()
            .map(|(r, &rows)| {
                let mut b = crate::model::build::TraceBuilder::new();
                for k in 0..3 {
                    let t = k as f64 * 10_000.0;
                    b.annotation(&format!("ProfilerStep#{}", k + 1), t, 10_000.0);
                    let e = b.op("aten::addmm", t, rows as f64 * 50.0);
                    b.shapes(e, &format!("[[128], [{rows}, 64], [64, 128]]"), "", "");
                    let e = b.op("aten::relu", t + 6_000.0, 100.0);
                    b.shapes(e, &format!("[[{rows}, 128]]"), "", "");
                }
                let tr = b.build();
                let a = crate::analysis::analyze(&tr, &Default::default());
                RankFacts::new(&tr, &a, "r.json", r as i64, RankSource::Order)
            })
            .collect();
        assert_eq!(
            ranks[1].shapes[0],
            OpShapes {
                name: "aten::addmm".into(),
                dims: "[[128], [96, 64], [64, 128]]".into(),
                time: 3 * 4_800_000,
                total: 3 * 4_800_000,
                distinct: vec!["[[128], [96, 64], [64, 128]]".into()],
                distinct_count: 1,
            }
        );
        let imb = shape_imbalance(&ranks).expect("shapes differ");
        assert_eq!(imb.name, "aten::addmm");
        assert_eq!(imb.largest, 1);
        let (big, small) = (128 + 96 * 64 + 64 * 128, 128 + 32 * 64 + 64 * 128);
        assert!((imb.ratio - big as f64 / small as f64).abs() < 1e-12);
        // the same shapes everywhere, or none recorded on one rank: nothing
        assert_eq!(shape_imbalance(&[ranks[0].clone(), ranks[2].clone()]), None);
        // an operator run with the same several dims on every rank is the same work, though
        // timing noise gives each rank a different dims with the most time (a reducer over
        // gradient buckets); a summary of an older version (no set) compares that mode
        let noisy: Vec<RankFacts> = (0..3)
            .map(|r| {
                let mut b = crate::model::build::TraceBuilder::new();
                b.annotation("ProfilerStep#1", 0.0, 10_000.0);
                for (k, dims) in ["[[128, 64]]", "[[128]]", "[[10]]"].iter().enumerate() {
                    let dur = if k == r { 300.0 } else { 100.0 };
                    let e = b.op("aten::mul", k as f64 * 1_000.0, dur);
                    b.shapes(e, dims, "", "");
                }
                let tr = b.build();
                let a = crate::analysis::analyze(&tr, &Default::default());
                RankFacts::new(&tr, &a, "r.json", r as i64, RankSource::Order)
            })
            .collect();
        assert_ne!(noisy[0].shapes[0].dims, noisy[1].shapes[0].dims);
        assert_eq!(noisy[0].shapes[0].distinct_count, 3);
        assert_eq!(shape_imbalance(&noisy), None);
        let mut old = noisy.clone();
        for r in &mut old {
            r.shapes[0].distinct.clear();
            r.shapes[0].distinct_count = 0;
        }
        assert!(shape_imbalance(&old).is_some());
        // the sets differ but the modes agree: the dims some rank never ran with are shown
        let mut extra = noisy.clone();
        for r in &mut extra {
            r.shapes[0].dims = "[[128, 64]]".into();
        }
        let o = &mut extra[1].shapes[0];
        o.distinct.push("[[512, 64]]".into());
        o.distinct_count += 1;
        let imb = shape_imbalance(&extra).expect("rank 1 ran with more dims");
        assert_eq!((imb.largest, imb.dims[1].as_str()), (1, "[[512, 64]]"));
        let mut none = ranks.clone();
        none[2].shapes.clear();
        assert_eq!(shape_imbalance(&none), None);
        // a backward operator whose shapes differ too, with more time than the forward one:
        // the forward one is named (which of the two takes longer can differ between two
        // captures of one workload)
        let mut backward = ranks.clone();
        for r in &mut backward {
            let mut o = r.shapes[0].clone();
            o.name = "AddmmBackward0".into();
            o.total *= 3;
            o.time *= 3;
            r.shapes.insert(0, o);
        }
        assert_eq!(shape_imbalance(&backward).unwrap().name, "aten::addmm");
    }

    #[test]
    fn ranks_that_ran_the_same_dims_show_the_same_dims() {
        // two layers: rank 1 runs batches of 96, ranks 0 and 2 of 32; on rank 2 the second
        // layer happened to take the most time, on ranks 0 and 1 the first
        let layers = |rows: u64| {
            vec![
                format!("[[{rows}, 128], [10, 128], [10]]"),
                format!("[[{rows}, 64], [128, 64], [128]]"),
            ]
        };
        let op = |rows: u64, mode: usize| {
            let distinct = layers(rows);
            OpShapes {
                name: "aten::linear".into(),
                dims: distinct[mode].clone(),
                time: 10,
                total: 15,
                distinct_count: distinct.len(),
                distinct,
            }
        };
        let base = {
            let mut b = crate::model::build::TraceBuilder::new();
            b.annotation("ProfilerStep#1", 0.0, 10_000.0);
            let tr = b.build();
            let a = crate::analysis::analyze(&tr, &Default::default());
            RankFacts::new(&tr, &a, "r.json", 0, RankSource::Order)
        };
        let ranks: Vec<RankFacts> = [(32, 1), (96, 1), (32, 0)]
            .iter()
            .map(|&(rows, mode)| RankFacts {
                shapes: vec![op(rows, mode)],
                ..base.clone()
            })
            .collect();
        let imb = shape_imbalance(&ranks).expect("batches differ");
        // one call site on every rank (the first by text of the reference rank: the second
        // layer), whichever layer took the most time
        assert_eq!(imb.dims[0], imb.dims[2]);
        assert_eq!(imb.dims[0], layers(32)[0]);
        assert_eq!(imb.dims[1], layers(96)[0]);
        assert_eq!(imb.largest, 1);
        let (big, small) = (96 * 128 + 10 * 128 + 10, 32 * 128 + 10 * 128 + 10);
        assert!((imb.ratio - big as f64 / small as f64).abs() < 1e-12);
        // the same call site is found by its nesting and numbers, not by text order
        let mut other = ranks.clone();
        for (r, rows) in other.iter_mut().zip([32, 96, 32]) {
            let o = &mut r.shapes[0];
            o.distinct = vec![format!("[[{rows}, 5, 7]]"), format!("[[{rows}, 5]]")];
            o.distinct.sort();
            o.dims = o.distinct[1].clone();
        }
        other[1].shapes[0].distinct.push("[[96, 6, 8]]".into());
        other[1].shapes[0].distinct_count = 3;
        let imb = shape_imbalance(&other).expect("batches differ");
        assert_eq!(imb.dims, ["[[32, 5, 7]]", "[[96, 5, 7]]", "[[32, 5, 7]]"]);
        assert!((imb.ratio - 3.0).abs() < 1e-12);
        assert_eq!(
            dims_parts("[[96, 64], [], [128]]"),
            ("[[#,#],[],[#]]".to_string(), vec!["96", "64", "128"])
        );
    }

    #[test]
    fn step_numbers_that_differ_fall_back_to_order() {
        let t = |steps: [f64; 3]| {
            let tr = gloo_rank(-1.0, &steps);
            let a = crate::analysis::analyze(&tr, &Default::default());
            RankFacts::new(&tr, &a, "r.json", 0, RankSource::Order)
        };
        let mut a = t([5.0, 5.0, 5.0]);
        let mut b = t([5.0, 5.0, 5.0]);
        b.rank = 1;
        for c in &mut b.collectives {
            c.step += 10;
        }
        let x = arrivals(&[a.clone(), b.clone()]);
        assert_eq!((x.matched, x.matching), (3, Matching::NameOrder));
        a.collectives.clear();
        assert_eq!(arrivals(&[a, b]).matched, 0, "a rank without collectives");
    }

    #[test]
    fn spans_merge_and_say_how_they_differ() {
        let span = |path: &str, start: Ns, step_ms: f64, compile: Ns| RankFacts {
            pid: Some(42),
            start,
            path: path.into(),
            compile,
            ..facts(0, step_ms, 1.0)
        };
        // given out of order; the later span is 1.5x slower and the first still compiles
        let s = summarize(vec![
            span("b.json", 5_000, 15.0, 0),
            span("a.json", 1_000, 10.0, 3_000_000),
            facts(1, 11.0, 0.5),
        ]);
        assert!(s.duplicates.is_empty());
        assert_eq!(s.ranks.len(), 2);
        let r0 = &s.ranks[0];
        assert_eq!((r0.rank, r0.spans, r0.steps), (0, 2, 4));
        assert_eq!(r0.step_time, 12_500_000.0);
        assert_eq!(r0.exposed_comm, 4_000_000);
        assert_eq!(r0.path, "a.json");
        let g = &s.spans[0];
        assert_eq!(g.spans[0].path, "a.json");
        assert_eq!(g.spans[1].offset, 4_000);
        assert_eq!(
            g.notes,
            [
                "span 1 still compiles (3.00 ms of torch.compile/autotune work); the others do not",
                "span 2's steps take 1.50× those of span 1 (15.00 ms against 10.00 ms)"
            ]
        );
        // another process with the same rank: a duplicate, not a span
        let mut other = span("c.json", 9_000, 10.0, 0);
        other.pid = Some(43);
        let s = summarize(vec![span("a.json", 1_000, 10.0, 0), other]);
        assert!(s.spans.is_empty());
        assert_eq!(s.duplicates.len(), 1);
    }

    #[test]
    fn even_count_median_and_ties() {
        let s = summarize(vec![facts(1, 12.0, 1.0), facts(0, 12.0, 1.0)]);
        assert_eq!(s.median_step, 12_000_000.0);
        assert_eq!(s.ranks[s.slowest].rank, 0, "ties go to the lower rank");
        assert_eq!(s.spread, 1.0);
        let s = summarize(vec![facts(0, 10.0, 1.0), facts(1, 20.0, 1.0)]);
        assert_eq!(s.median_step, 15_000_000.0);
    }

    #[test]
    fn duplicate_ranks_listed() {
        let mut b = facts(0, 10.0, 1.0);
        b.path = "copy.json".into();
        let s = summarize(vec![facts(0, 10.0, 1.0), b, facts(1, 10.0, 1.0)]);
        assert_eq!(
            s.duplicates,
            vec![(0, vec!["copy.json".to_string(), "rank0.json".to_string()])]
        );
    }
}
