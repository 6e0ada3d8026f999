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
    /// Collective kernels of the main device in the window, in start order (see
    /// [`arrivals`]).
    pub collectives: Vec<Collective>,
}

/// One collective kernel of a rank's main device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Collective {
    /// Device time from the end of the previous collective (or the window start) to its
    /// start: the rank's own work before it, ns.
    pub before: Ns,
    /// Its duration, ns: the transfer, plus the wait for the last rank to arrive.
    pub dur: Ns,
}

/// Who arrived last at the collectives, and what the others waited.
///
/// Collectives are matched across ranks by their order on each rank's main device (the
/// first `n` of each, `n` the smallest count over the ranks). The rank that arrives last at a
/// collective does not wait in it: its kernel is the shortest, the pure transfer; every other
/// rank's kernel is longer by the time it waited for that rank. This compares durations
/// only, so it holds when the ranks' clocks are not aligned.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Arrivals {
    /// Collectives matched across the ranks.
    pub matched: usize,
    /// Per rank (index in the ranks given): collectives at which it arrived last.
    pub last: Vec<usize>,
    /// Per rank: time waited in the matched collectives (duration minus the shortest), ns.
    pub waited: Vec<Ns>,
    /// Per rank: its own device time before the matched collectives, ns.
    pub before: Vec<Ns>,
    /// The rank (index) that arrived last most often (ties: the longer time before the
    /// collectives); `None` without matched collectives.
    pub culprit: Option<usize>,
}

/// Matches the collectives of `ranks` and finds who arrived last ([`Arrivals`]).
pub fn arrivals(ranks: &[RankFacts]) -> Arrivals {
    let n = ranks.iter().map(|r| r.collectives.len()).min().unwrap_or(0);
    let mut a = Arrivals {
        matched: n,
        last: vec![0; ranks.len()],
        waited: vec![0; ranks.len()],
        before: vec![0; ranks.len()],
        culprit: None,
    };
    if n == 0 || ranks.len() < 2 {
        return a;
    }
    for k in 0..n {
        // the shortest kernel arrived last (ties: the longest time before it, then lower index)
        let (lastr, shortest) = ranks
            .iter()
            .enumerate()
            .map(|(i, r)| (i, r.collectives[k]))
            .min_by(|x, y| x.1.dur.cmp(&y.1.dur).then(y.1.before.cmp(&x.1.before)))
            .map(|(i, c)| (i, c.dur))
            .unwrap_or((0, 0));
        a.last[lastr] += 1;
        for (i, r) in ranks.iter().enumerate() {
            a.waited[i] += r.collectives[k].dur - shortest;
            a.before[i] += r.collectives[k].before;
        }
    }
    a.culprit = (0..ranks.len()).max_by(|&x, &y| {
        a.last[x]
            .cmp(&a.last[y])
            .then(a.before[x].cmp(&a.before[y]))
            .then(y.cmp(&x))
    });
    a
}

/// The collective kernels of `device` whose start is counted in the window of `a`.
fn collectives_of(trace: &Trace, a: &Analysis, device: Option<i64>) -> Vec<Collective> {
    let Some(device) = device else {
        return Vec::new();
    };
    let mut memo =
        crate::model::fast::NameMemo::new(trace, crate::model::classify::is_collective_kernel);
    let mut ks: Vec<(Ns, Ns)> = trace
        .gpu
        .iter()
        .filter(|g| g.kind == crate::model::GpuKind::Kernel && g.device as i64 == device)
        .filter(|g| a.selection.mask.covered_within(g.interval()) > 0 && memo.get(g.name))
        .map(|g| (g.start, g.end()))
        .collect();
    ks.sort_unstable();
    let mut prev = a.selection.span.start;
    ks.iter()
        .map(|&(s, e)| {
            let c = Collective {
                before: (s - prev).max(0),
                dur: e - s,
            };
            prev = prev.max(e);
            c
        })
        .collect()
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
            exposed_comm: main.map_or(0, |t| t.exposed_comm),
            overlapped_comm: main.map_or(0, |t| (t.total_comm - t.exposed_comm).max(0)),
            exposed_memcpy: main.map_or(0, |t| t.exposed_memcpy),
            idle: main.map_or(0, |t| t.idle),
            top_finding: None,
            pid: main_pid(trace),
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
            collectives: collectives_of(trace, a, device),
        }
    }

    /// Steps for per-step division (at least 1).
    pub fn step_divisor(&self) -> f64 {
        self.steps.max(1) as f64
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

/// The pid of the process with the most operators (ties: the lower pid).
fn main_pid(trace: &Trace) -> Option<i64> {
    let mut per_thread = vec![0u64; trace.threads.len()];
    for e in &trace.cpu {
        if e.kind == crate::model::CpuKind::Op {
            if let Some(c) = per_thread.get_mut(e.thread as usize) {
                *c += 1;
            }
        }
    }
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
    per_pid
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        .map(|p| p.0)
}

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
        // the spans' collectives one after the other, in span order
        collectives: group
            .iter()
            .flat_map(|r| r.collectives.iter().copied())
            .collect(),
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
    let ranks = merged;
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
            spans: 1,
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
                dur: 1_000_000
            }
        );
        let a = arrivals(&ranks);
        assert_eq!(a.matched, 3);
        assert_eq!(a.culprit, Some(2));
        assert_eq!(a.last, [0, 0, 3, 0]);
        // each other rank waited 2 ms in each collective
        assert_eq!(a.waited, [6_000_000, 6_000_000, 0, 6_000_000]);
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
