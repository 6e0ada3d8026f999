//! Cross-rank rules over the per-rank facts of a folder ([`crate::analysis::ranks`]):
//! `rank-straggler` and `comm-imbalance`, and a one-line verdict for the ranks.
//!
//! Thresholds and bounds are documented in `docs/rules.md` ("Across ranks"). Both rules compare
//! ranks' means per step; severity compares `recoverable_us` with the median step time over
//! the ranks. The two never claim the same time: `comm-imbalance` subtracts what
//! `rank-straggler` claims.

use std::collections::BTreeMap;

use super::{fmt_ns, rank, round3, Evidence, Finding, Severity};
use crate::analysis::ranks::{arrivals, Arrivals, Matching, RankFacts, RankSummary};
use crate::model::Ns;

/// `rank-straggler` fires when the slowest rank's step is this much over the median.
pub const STRAGGLER_OVER_MEDIAN: f64 = 0.10;

/// `comm-imbalance` fires when the exposed communication per step of the most- and
/// least-exposed ranks differs by this share of the median step.
pub const COMM_SPREAD_OF_STEP: f64 = 0.10;

/// The cross-rank diagnosis.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RanksDiagnosis {
    /// One line.
    pub verdict: String,
    /// Findings by recoverable time, descending.
    pub findings: Vec<Finding>,
    /// What the reader should know about the comparison itself (windows over different
    /// steps).
    pub notes: Vec<String>,
    /// The collectives matched across the ranks ([`arrivals`]).
    pub arrivals: Arrivals,
    /// Per rank (index in the summary's ranks): what it did more than the others per step
    /// before the collectives, for the ranks that arrived last at some matched collective
    /// (`None` for the others, or when nothing exceeds the others by 1 % of its step).
    pub own_causes: Vec<Option<String>>,
}

fn who(r: &RankFacts) -> String {
    format!("rank {}", r.rank)
}

/// A culprit takes part in the story when it caused at least this share of the wait.
pub const CULPRIT_SHARE: f64 = 0.20;

/// One culprit leads alone when it caused at least this share of the wait; below it the
/// culprits alternate.
pub const SOLE_CULPRIT_SHARE: f64 = 0.60;

/// A collective's name as people say it: `gloo:all_reduce` → `all_reduce`,
/// `ncclDevKernel_AllReduce_Sum_f32_RING_LL` → `AllReduce`.
fn collective_word(name: &str) -> String {
    if name.is_empty() {
        return "matched".into();
    }
    if let Some((_, op)) = name.split_once(':') {
        return op.to_string();
    }
    for pre in ["ncclDevKernel_", "ncclKernel_", "rcclKernel_"] {
        if let Some(rest) = name.strip_prefix(pre) {
            return rest.split('_').next().unwrap_or(rest).to_string();
        }
    }
    name.to_string()
}

/// What rank `i` did more than the others in its steps: the step-breakdown part with the
/// largest excess per step over the median of the other ranks (at least 1 % of its step).
fn own_cause(s: &RankSummary, i: usize) -> Option<Cause> {
    let r = &s.ranks[i];
    let mine = r.parts.named();
    let mut best: Option<(&str, f64, f64)> = None;
    for (k, (name, ns)) in mine.iter().enumerate() {
        let own = *ns as f64 / r.step_divisor();
        let mut others: Vec<f64> = s
            .ranks
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, o)| o.parts.named()[k].1 as f64 / o.step_divisor())
            .collect();
        others.sort_by(f64::total_cmp);
        let med = others.get(others.len() / 2).copied().unwrap_or(0.0);
        let excess = own - med;
        if excess > 0.01 * r.step_time && best.is_none_or(|b| excess > b.1 - b.2) {
            best = Some((name, own, med));
        }
    }
    // the annotation (record_function range, module forward, DataLoader) that grew most
    let mut span: Option<(&str, f64, f64)> = None;
    for (name, ns) in &r.annotations {
        let own = *ns as f64 / r.annotation_divisor();
        let mut others: Vec<f64> = s
            .ranks
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, o)| {
                o.annotations
                    .iter()
                    .find(|x| x.0 == *name)
                    .map_or(0.0, |x| x.1 as f64 / o.annotation_divisor())
            })
            .collect();
        others.sort_by(f64::total_cmp);
        let med = others.get(others.len() / 2).copied().unwrap_or(0.0);
        if own - med > 0.01 * r.step_time && span.is_none_or(|b| own - med > b.1 - b.2) {
            span = Some((name, own, med));
        }
    }
    let part = best.map(|(name, own, med)| {
        (
            name.to_string(),
            format!(
                "{name}: {} per step against a median {} on the other ranks",
                fmt_ns(own),
                fmt_ns(med)
            ),
        )
    });
    let span_x = span;
    let span = span.map(|(name, own, med)| {
        (
            format!("`{name}`"),
            format!(
                "`{name}`: {} per step against a median {}",
                fmt_ns(own),
                fmt_ns(med)
            ),
        )
    });
    let lead = span.as_ref().or(part.as_ref())?.0.clone();
    let excess = match (span_x, best) {
        (Some((_, own, med)), _) | (None, Some((_, own, med))) => own - med,
        (None, None) => 0.0,
    };
    let long = match (span, part) {
        (Some(sp), Some(pa)) => format!("{}; {}", sp.1, pa.1),
        (Some(x), None) | (None, Some(x)) => x.1,
        (None, None) => return None,
    };
    Some(Cause {
        short: format!("rank {} spent the time in {lead}", r.rank),
        long: format!("rank {} spent the time in {long}", r.rank),
        cell: format!("{lead} +{}/step", fmt_ns(excess)),
    })
}

/// A culprit's own cause: a short form for the verdict and the long one with the figures.
struct Cause {
    short: String,
    long: String,
    /// What it did more than the median of the others, per step, for a table cell.
    cell: String,
}

/// The ranks that caused at least [`CULPRIT_SHARE`] of the wait, by wait caused.
fn culprits(a: &Arrivals) -> Vec<usize> {
    let total: Ns = a.caused.iter().sum();
    if total <= 0 {
        return Vec::new();
    }
    let mut v: Vec<usize> = (0..a.caused.len())
        .filter(|&i| a.caused[i] as f64 >= CULPRIT_SHARE * total as f64)
        .collect();
    v.sort_by(|&x, &y| a.caused[y].cmp(&a.caused[x]).then(x.cmp(&y)));
    if v.first()
        .is_some_and(|&c| a.caused[c] as f64 >= SOLE_CULPRIT_SHARE * total as f64)
    {
        v.truncate(1);
    }
    v
}

/// How the clocks were handled, in words.
fn clocks(a: &Arrivals) -> String {
    let res = fmt_ns(a.residual.unwrap_or(0) as f64);
    if a.shared_clock {
        format!(
            "trace clocks consistent as they are (no matched collective ends on one rank \
             before it starts on another; the ends spread by {res}, median)"
        )
    } else if a.aligned {
        let max_off = a.offsets.iter().map(|o| o.abs()).max().unwrap_or(0);
        format!(
            "clocks aligned on the collectives' ends (largest offset {}, residual {res})",
            fmt_ns(max_off as f64)
        )
    } else {
        format!(
            "clocks not aligned: the collectives' ends do not coincide after the best offset \
             (residual {res}); arrivals compared by duration (the last to arrive waits least)"
        )
    }
}

/// The rank-straggler finding from measured arrivals ([`arrivals`]): the culprits, the
/// victims' waits, the culprits' own causes.
fn measured_straggler(s: &RankSummary, a: &Arrivals) -> Option<Finding> {
    let n = s.ranks.len();
    let cs = culprits(a);
    let &c0 = cs.first()?;
    let steps = s.ranks[c0].step_divisor();
    // the wait the culprits caused, per other rank and step
    let caused: Ns = cs.iter().map(|&c| a.caused[c]).sum();
    let per_victim = caused as f64 / (n - 1) as f64 / steps;
    if per_victim < STRAGGLER_OVER_MEDIAN * s.median_step {
        return None;
    }
    let word = collective_word(&a.name);
    let where_ = if a.host { "host" } else { "device" };
    let mut facts = Vec::new();
    let mut names = Vec::new();
    for &c in &cs {
        let r = &s.ranks[c];
        names.push(format!(
            "rank {} arrived last at {} of {} {word} collectives ({:.0}%)",
            r.rank,
            a.last[c],
            a.matched,
            100.0 * a.last[c] as f64 / a.matched as f64
        ));
        let mut f = format!(
            "culprit: rank {} arrived last at {} of {} {word} collectives ({where_} side) over {} \
             step{}; the others waited {} per step for it",
            r.rank,
            a.last[c],
            a.matched,
            a.steps,
            if a.steps == 1 { "" } else { "s" },
            fmt_ns(a.caused[c] as f64 / (n - 1) as f64 / steps)
        );
        if let Some(why) = own_cause(s, c) {
            f.push_str("; ");
            f.push_str(&why.long);
        }
        facts.push(f);
        if let Some(t) = top_of(r) {
            facts.push(t);
        }
    }
    let mut victims: Vec<usize> = (0..n).filter(|i| !cs.contains(i)).collect();
    victims.sort_by(|&x, &y| a.waited[y].cmp(&a.waited[x]).then(x.cmp(&y)));
    let list: Vec<String> = victims
        .iter()
        .take(6)
        .map(|&i| {
            format!(
                "rank {} {}",
                s.ranks[i].rank,
                fmt_ns(a.waited[i] as f64 / s.ranks[i].step_divisor())
            )
        })
        .collect();
    if !list.is_empty() {
        facts.push(format!(
            "victims: time waited per step inside the matched collectives: {}{}",
            list.join(", "),
            if victims.len() > 6 { ", …" } else { "" }
        ));
    }
    facts.push(format!(
        "matched by {}{}; {}",
        matching_words(a.matching),
        if a.matching == Matching::Mixed {
            format!(" ({})", matching_counts(a))
        } else {
            String::new()
        },
        clocks(a)
    ));
    if a.steps <= 1 {
        facts.push(
            "one step only: which rank arrives last can change from step to step; profile \
             several steps (a schedule with active ≥ 5) before acting on it"
                .into(),
        );
    }
    let mut metrics = BTreeMap::new();
    metrics.insert("culprit_rank".into(), s.ranks[c0].rank as f64);
    metrics.insert("culprit_last_arrivals".into(), a.last[c0] as f64);
    metrics.insert("culprits".into(), cs.len() as f64);
    metrics.insert("matched_collectives".into(), a.matched as f64);
    metrics.insert("matched_steps".into(), a.steps as f64);
    metrics.insert("victims_wait_us".into(), round3(per_victim / 1000.0));
    metrics.insert(
        "clock_residual_us".into(),
        round3(a.residual.unwrap_or(0) as f64 / 1000.0),
    );
    metrics.insert("clocks_aligned".into(), if a.aligned { 1.0 } else { 0.0 });
    metrics.insert("median_step_us".into(), s.median_step / 1000.0);
    metrics.insert("ranks".into(), n as f64);
    let who_list = cs
        .iter()
        .map(|&c| format!("rank {}", s.ranks[c].rank))
        .collect::<Vec<_>>()
        .join(", ");
    Some(Finding {
        id: "rank-straggler",
        severity: Severity::of_share(per_victim / s.median_step.max(1.0)),
        title: format!(
            "Straggler: {}; the others waited {} per step for {}",
            names.join(", "),
            fmt_ns(per_victim),
            if cs.len() == 1 { "it" } else { "them" }
        ),
        recoverable_us: per_victim / 1000.0,
        recoverable_basis: "the time the other ranks waited per step (mean over them) inside \
                            the collectives at which the culprits arrived last: what the job \
                            gains per step if they arrived with the others"
            .into(),
        evidence: Evidence {
            facts,
            metrics,
            locations: vec![],
        },
        advice: vec![
            format!(
                "Fix what {who_list} does before the collectives (`--rank N` shows its full \
                 report): in synchronous data-parallel training every rank waits for the last \
                 one at each collective."
            ),
            "If the extra time is host work, balance it: enough DataLoader workers per rank, \
             logging and checkpointing on rank 0 moved off the step, CPU affinity (`numactl`, \
             `taskset`) so that ranks do not share cores."
                .into(),
            "If it is device time, compare the kernel tables of the ranks: uneven batch or \
             sequence lengths per rank (bucket by length, balance tokens per rank), or a slower \
             or throttled GPU (`nvidia-smi -q -d CLOCK,PERFORMANCE`)."
                .into(),
        ],
    })
}

fn top_of(r: &RankFacts) -> Option<String> {
    r.top_finding.as_ref().map(|t| {
        format!(
            "rank {}'s own top finding: {} {}/step ({})",
            r.rank,
            t.id,
            fmt_ns(t.recoverable_us * 1000.0),
            t.title
        )
    })
}

fn rank_straggler(s: &RankSummary) -> Option<Finding> {
    if s.ranks.len() < 2 || s.median_own_time <= 0.0 {
        return None;
    }
    let c = &s.ranks[s.most_own_time];
    let over = c.own_time() / s.median_own_time - 1.0;
    if over <= STRAGGLER_OVER_MEDIAN {
        return None;
    }
    let rec_ns = c.own_time() - s.median_own_time;
    let slow = &s.ranks[s.slowest];
    let mut facts = vec![
        format!(
            "{}: {} per step over {} step{}, {} of it exposed communication: {} of its own work \
             (compute, copies, host, idle), {:.1}% over the median rank's {}",
            who(c),
            fmt_ns(c.step_time),
            c.steps,
            if c.steps == 1 { "" } else { "s" },
            fmt_ns(c.exposed_comm_per_step()),
            fmt_ns(c.own_time()),
            over * 100.0,
            fmt_ns(s.median_own_time)
        ),
        format!(
            "step times: slowest rank {} {}, median {} over {} ranks (spread {:.2}×)",
            slow.rank,
            fmt_ns(slow.step_time),
            fmt_ns(s.median_step),
            s.ranks.len(),
            s.spread
        ),
    ];
    if let Some(t) = top_of(c) {
        facts.push(t);
    }
    let mut metrics = BTreeMap::new();
    metrics.insert("straggler_rank".into(), c.rank as f64);
    metrics.insert("own_time_us".into(), c.own_time() / 1000.0);
    metrics.insert("median_own_time_us".into(), s.median_own_time / 1000.0);
    metrics.insert("step_us".into(), c.step_time / 1000.0);
    metrics.insert("exposed_comm_us".into(), c.exposed_comm_per_step() / 1000.0);
    metrics.insert("slowest_rank".into(), slow.rank as f64);
    metrics.insert("slowest_step_us".into(), slow.step_time / 1000.0);
    metrics.insert("median_step_us".into(), s.median_step / 1000.0);
    metrics.insert("spread".into(), s.spread);
    metrics.insert("ranks".into(), s.ranks.len() as f64);
    Some(Finding {
        id: "rank-straggler",
        severity: Severity::of_share(rec_ns / s.median_step.max(1.0)),
        title: format!(
            "Straggler: rank {}'s own work takes {} per step, {:.1}% over the median rank",
            c.rank,
            fmt_ns(c.own_time()),
            over * 100.0
        ),
        recoverable_us: rec_ns / 1000.0,
        recoverable_basis: "the rank's step time minus its exposed communication, minus the \
                            median of that over the ranks: what a synchronous job gains per step \
                            if that rank worked like the median one"
            .into(),
        evidence: Evidence {
            facts,
            metrics,
            locations: vec![],
        },
        advice: vec![
            format!(
                "Fix rank {}'s own top finding first (`--rank {}` shows its full report): in \
                 synchronous data-parallel training every rank waits for the slowest one at \
                 each collective.",
                c.rank, c.rank
            ),
            "If the extra time is host work, balance it: enough DataLoader workers per rank, \
             logging and checkpointing on rank 0 moved off the step, CPU affinity (`numactl`, \
             `taskset`) so that ranks do not share cores."
                .into(),
            "If it is GPU time, compare the kernel tables of the ranks: uneven batch or sequence \
             lengths per rank (bucket by length, balance tokens per rank), or a slower or \
             throttled GPU (`nvidia-smi -q -d CLOCK,PERFORMANCE`)."
                .into(),
        ],
    })
}

/// The three ranks with the least exposed communication per step.
fn fewest(s: &RankSummary) -> String {
    let mut v: Vec<&RankFacts> = s.ranks.iter().collect();
    v.sort_by(|a, b| {
        a.exposed_comm_per_step()
            .total_cmp(&b.exposed_comm_per_step())
            .then(a.rank.cmp(&b.rank))
    });
    v.iter()
        .take(3)
        .map(|r| format!("rank {} {}", r.rank, fmt_ns(r.exposed_comm_per_step())))
        .collect::<Vec<_>>()
        .join(", ")
}

fn comm_imbalance(
    s: &RankSummary,
    straggler_us: f64,
    measured: Option<&Arrivals>,
) -> Option<Finding> {
    if s.ranks.len() < 2 || s.median_step <= 0.0 {
        return None;
    }
    let most = &s.ranks[s.most_exposed_comm];
    let least = &s.ranks[s.least_exposed_comm];
    let spread_ns = most.exposed_comm_per_step() - least.exposed_comm_per_step();
    if spread_ns < COMM_SPREAD_OF_STEP * s.median_step {
        return None;
    }
    let claimed = straggler_us.min(spread_ns / 1000.0);
    let recoverable_us = spread_ns / 1000.0 - claimed;
    if recoverable_us <= 0.0 {
        // the straggler finding already claims all of it
        return None;
    }
    let mut facts = vec![
        format!(
            "exposed communication per step: {} {}, {} {} (median over {} ranks {})",
            who(most),
            fmt_ns(most.exposed_comm_per_step()),
            who(least),
            fmt_ns(least.exposed_comm_per_step()),
            s.ranks.len(),
            fmt_ns(s.median_exposed_comm)
        ),
        match measured.and_then(|a| a.culprit.map(|c| (a, c))) {
            Some((a, c)) => {
                let n = s.ranks.len();
                let worst = (0..n)
                    .map(|i| a.waited[i] as f64 / s.ranks[i].step_divisor())
                    .fold(0.0, f64::max);
                let mut f = format!(
                    "measured arrivals: rank {} arrived last at {} of {} matched collectives; \
                     no rank waited more than {} per step for the others",
                    s.ranks[c].rank,
                    a.last[c],
                    a.matched,
                    fmt_ns(worst)
                );
                if s.ranks[c].rank != least.rank {
                    f.push_str(&format!(
                        "; the rank that waits least (rank {}) is not the last to arrive: the \
                         rest of the spread is communication that overlaps less compute on \
                         some ranks, not waiting",
                        least.rank
                    ));
                }
                f
            }
            None => format!(
                "inside a collective the rank that arrives last waits least; least exposed: {}",
                fewest(s)
            ),
        },
    ];
    if let Some(t) = top_of(least) {
        facts.push(t);
    }
    if claimed > 0.0 {
        facts.push(format!(
            "{} of the spread per step is already claimed by rank-straggler",
            fmt_ns(claimed * 1000.0)
        ));
    }
    let mut metrics = BTreeMap::new();
    metrics.insert("most_exposed_rank".into(), most.rank as f64);
    metrics.insert(
        "most_exposed_comm_us".into(),
        most.exposed_comm_per_step() / 1000.0,
    );
    metrics.insert("least_exposed_rank".into(), least.rank as f64);
    metrics.insert(
        "least_exposed_comm_us".into(),
        least.exposed_comm_per_step() / 1000.0,
    );
    metrics.insert(
        "median_exposed_comm_us".into(),
        s.median_exposed_comm / 1000.0,
    );
    metrics.insert("median_step_us".into(), s.median_step / 1000.0);
    metrics.insert("spread_us".into(), spread_ns / 1000.0);
    Some(Finding {
        id: "comm-imbalance",
        severity: Severity::of_share(recoverable_us * 1000.0 / s.median_step),
        title: format!(
            "Communication imbalance: rank {} has {} of exposed communication per step, rank {} {}",
            most.rank,
            fmt_ns(most.exposed_comm_per_step()),
            least.rank,
            fmt_ns(least.exposed_comm_per_step())
        ),
        recoverable_us,
        recoverable_basis: "exposed communication per step of the most-exposed rank minus the \
                            least-exposed one (the wait for other ranks inside collectives that \
                            balanced ranks would remove), minus what rank-straggler claims"
            .into(),
        evidence: Evidence {
            facts,
            metrics,
            locations: vec![],
        },
        advice: vec![
            match measured.and_then(|a| a.culprit) {
                Some(c) => format!(
                    "Look at rank {} (`--rank {}`), which arrived last most often: its extra \
                     compute or host time before the collectives is the others' wait; then at \
                     the overlap of communication with compute on the most-exposed rank.",
                    s.ranks[c].rank, s.ranks[c].rank
                ),
                None => format!(
                    "Look at rank {} (`--rank {}`), which waits least: the other ranks likely \
                     wait for it inside the collectives, so its extra compute or host time is \
                     the time to remove.",
                    least.rank, least.rank
                ),
            },
            "Balance the work per rank: tokens rather than samples per batch for variable-length \
             inputs, the embedding-table sharding plan for recommendation models, layers per \
             pipeline stage."
                .into(),
        ],
    })
}

/// Runs the cross-rank rules and writes the verdict. With collectives matched on every rank
/// and clocks aligned, `rank-straggler` comes from the measured arrivals
/// ([`measured_straggler`]); otherwise it is inferred from own time ([`rank_straggler`]).
pub fn diagnose_ranks(s: &RankSummary) -> RanksDiagnosis {
    let a = arrivals(&s.ranks);
    let measured = (a.matched > 0 && a.aligned).then_some(&a);
    let mut findings: Vec<Finding> = Vec::new();
    let straggler = match measured {
        Some(a) => measured_straggler(s, a),
        None => rank_straggler(s),
    };
    let claimed = straggler.as_ref().map_or(0.0, |f| f.recoverable_us);
    findings.extend(straggler);
    findings.extend(comm_imbalance(s, claimed, measured));
    if measured.is_none() && a.matched > 0 {
        for f in &mut findings {
            f.evidence.facts.push(format!(
                "arrivals not measured: {} collectives matched on every rank, but {}",
                a.matched,
                clocks(&a)
                    .trim_start_matches("clocks not aligned: ")
                    .split("; arrivals")
                    .next()
                    .unwrap_or_default()
            ));
        }
    }
    for x in &mut findings {
        x.recoverable_us = round3(x.recoverable_us.max(0.0));
    }
    rank(&mut findings);
    let mut notes = window_notes(s);
    notes.extend(matching_note(s, &a));
    if let Some(line) = shapes_note(s, measured) {
        if let Some(f) = findings.iter_mut().find(|f| f.id == "rank-straggler") {
            f.evidence.facts.push(line.clone());
        }
        notes.push(line);
    }
    let own_causes = (0..s.ranks.len())
        .map(|i| {
            measured
                .filter(|a| a.last[i] > 0)
                .and_then(|_| own_cause(s, i))
                .map(|c| c.cell)
        })
        .collect();
    RanksDiagnosis {
        verdict: verdict(s, &findings, measured),
        findings,
        notes,
        arrivals: a.clone(),
        own_causes,
    }
}

/// One story for one rank of a folder: whom it waited for, or who waited for it, from the
/// measured arrivals behind `rank-straggler` (`None` when that finding is not measured, or
/// the rank takes no part in it: it neither caused nor waited 10 % of its step). Shown with
/// the full report of that rank in a folder's report, so that its own verdict
/// (communication-bound on a victim) and the folder's tell one story.
pub fn rank_story(s: &RankSummary, d: &RanksDiagnosis, rank: i64) -> Option<String> {
    let a = &d.arrivals;
    let fired = d
        .findings
        .iter()
        .any(|f| f.id == "rank-straggler" && f.evidence.metrics.contains_key("culprits"));
    if !fired || !a.aligned || a.matched == 0 {
        return None;
    }
    let i = s.ranks.iter().position(|r| r.rank == rank)?;
    let cs = culprits(a);
    let word = collective_word(&a.name);
    let n = s.ranks.len();
    let steps = s.ranks[i].step_divisor();
    let last = |c: usize| {
        format!(
            "rank {} (last at {} of {} {word} collectives)",
            s.ranks[c].rank, a.last[c], a.matched
        )
    };
    if cs.contains(&i) {
        let per = a.caused[i] as f64 / (n - 1) as f64 / steps;
        return Some(format!(
            "rank {} is the one the others waited for: it arrived last at {} of {} {word} \
             collectives, and they waited {} per step for it",
            s.ranks[i].rank,
            a.last[i],
            a.matched,
            fmt_ns(per)
        ));
    }
    let waited = a.waited[i] as f64 / steps;
    if waited < STRAGGLER_OVER_MEDIAN * s.ranks[i].step_time {
        return None;
    }
    let whom: Vec<String> = cs.iter().map(|&c| last(c)).collect();
    Some(format!(
        "rank {} waited {} per step inside the collectives for {}",
        s.ranks[i].rank,
        fmt_ns(waited),
        whom.join(" and ")
    ))
}

/// Load imbalance from the input shapes ([`shape_imbalance`]): the operator whose input dims
/// differ across ranks, the ranks by dims, and whether the measured arrivals agree (the rank
/// with the largest inputs is a culprit) or not.
///
/// [`shape_imbalance`]: crate::analysis::ranks::shape_imbalance
fn shapes_note(s: &RankSummary, measured: Option<&Arrivals>) -> Option<String> {
    let imb = crate::analysis::ranks::shape_imbalance(&s.ranks)?;
    let short = |d: &str| {
        if d.chars().count() > 60 {
            format!("{}…", d.chars().take(60).collect::<String>())
        } else {
            d.to_string()
        }
    };
    // ranks grouped by dims, the largest first
    let mut groups: Vec<(&str, Vec<i64>)> = Vec::new();
    let order =
        std::iter::once(imb.largest).chain((0..s.ranks.len()).filter(|&i| i != imb.largest));
    for i in order {
        match groups.iter_mut().find(|g| g.0 == imb.dims[i]) {
            Some(g) => g.1.push(s.ranks[i].rank),
            None => groups.push((&imb.dims[i], vec![s.ranks[i].rank])),
        }
    }
    let list: Vec<String> = groups
        .iter()
        .map(|(d, r)| {
            let who = r
                .iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            format!(
                "rank{} {who} {}",
                if r.len() > 1 { "s" } else { "" },
                short(d)
            )
        })
        .collect();
    let big = s.ranks[imb.largest].rank;
    let story = match measured.map(culprits) {
        Some(c) if c.contains(&imb.largest) => format!(
            "rank {big}, with the largest inputs, is the rank the others waited for: the \
             measured arrivals agree"
        ),
        Some(c) if !c.is_empty() => format!(
            "the measured arrivals name {} instead of rank {big}: the larger inputs do not \
             explain the wait",
            c.iter()
                .map(|&i| format!("rank {}", s.ranks[i].rank))
                .collect::<Vec<_>>()
                .join(" and ")
        ),
        Some(_) => {
            format!("yet no rank made the others wait: rank {big}'s larger inputs cost little time")
        }
        None => "arrivals not measured: the imbalance is not checked against them".to_string(),
    };
    Some(format!(
        "load imbalance: the ranks run different work — `{}` has different input shapes \
         across ranks ({}; rank {big} has {:.2}× the median rank's input elements), as from \
         uneven batches or sequence lengths; {story}",
        imb.name,
        list.join("; "),
        imb.ratio
    ))
}

/// How the collectives were matched across ranks, in words.
fn matching_words(m: Matching) -> &'static str {
    match m {
        Matching::GroupSeq => "process group and `Seq` (recorded on every collective)",
        Matching::CommsId => "`Comms Id` (recorded on every collective)",
        Matching::NameOrder => {
            "collective name and order in the window (the ranks' step numbers differ)"
        }
        Matching::Mixed => "the strongest key each collective has on every rank",
        _ => "step number, collective name and order within the step",
    }
}

/// The count of each key used, in words ("2 by process group and `Seq`, 3 by step, name and
/// order").
fn matching_counts(a: &crate::analysis::ranks::Arrivals) -> String {
    [
        "process group and `Seq`",
        "`Comms Id`",
        "step, name and order",
        "name and order in the window",
    ]
    .iter()
    .zip(a.by)
    .filter(|(_, n)| *n > 0)
    .map(|(k, n)| format!("{n} by {k}"))
    .collect::<Vec<_>>()
    .join(", ")
}

/// The note on the matching when the trace recorded collective ids: which ones were used, or
/// why they were not (some collectives lack them: the order rule is used instead).
fn matching_note(s: &RankSummary, a: &crate::analysis::ranks::Arrivals) -> Option<String> {
    if a.matched == 0 {
        return None;
    }
    let (mut with, mut all) = (0usize, 0usize);
    for r in &s.ranks {
        all += r.collectives.len();
        with += r
            .collectives
            .iter()
            .filter(|c| c.seq.is_some() || c.comms_id.is_some())
            .count();
    }
    match a.matching {
        Matching::Mixed => Some(format!(
            "collectives matched across ranks by {}: {} ({} matched); `Seq`/`Comms Id` recorded \
             on {with} of {all} collectives, a collective with an id missing on some rank left \
             unmatched",
            matching_words(a.matching),
            matching_counts(a),
            a.matched
        )),
        Matching::GroupSeq | Matching::CommsId => Some(format!(
            "collectives matched across ranks by {}: {} matched",
            matching_words(a.matching),
            a.matched
        )),
        _ if with > 0 => Some(format!(
            "collectives matched across ranks by {}: `Seq`/`Comms Id` recorded on {with} of \
             {all} collectives only",
            matching_words(a.matching)
        )),
        _ => None,
    }
}

/// One window for a synchronous job: the ranks whose first or last step differs from the most
/// common one.
fn window_notes(s: &RankSummary) -> Vec<String> {
    if let Some(c) = &s.common {
        let steps = |v: &[i64]| {
            v.iter()
                .map(|n| format!("{}{n}", c.prefix))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut notes = Vec::new();
        if !c.trimmed.is_empty() {
            let who: Vec<String> = c
                .trimmed
                .iter()
                .map(|(r, d)| format!("rank {r} without {}", steps(d)))
                .collect();
            notes.push(format!(
                "one window for the ranks: their own windows left out different steps (a step \
                 one rank leaves out, an outlier or warm-up, is still counted on the others); \
                 the comparison counts the {} step{} every window has ({}): {} (their rows and \
                 the rules across ranks; their own reports keep their own windows)",
                c.steps.len(),
                if c.steps.len() == 1 { "" } else { "s" },
                steps(&c.steps),
                who.join(", ")
            ));
        }
        for (r, d, why) in &c.kept {
            notes.push(format!(
                "rank {r}'s window also counts {}, which another rank's window leaves out: it is \
                 kept whole, because {why} (give every rank the same `--steps`)",
                steps(d)
            ));
        }
        return notes;
    }
    let mut count: Vec<((&str, &str), usize)> = Vec::new();
    for r in &s.ranks {
        let k = (r.first_step.as_str(), r.last_step.as_str());
        match count.iter_mut().find(|x| x.0 == k) {
            Some(x) => x.1 += 1,
            None => count.push((k, 1)),
        }
    }
    if count.len() < 2 {
        return Vec::new();
    }
    let common = count
        .iter()
        .max_by_key(|x| x.1)
        .map(|x| x.0)
        .unwrap_or_default();
    // a window as the reader says it: a whole trace without step marks is one step "0"
    let label = |first: &str, last: &str, steps: usize| {
        if first.is_empty() || first == "0" {
            "the whole trace, no step marks".to_string()
        } else if first == last {
            first.to_string()
        } else {
            format!("{first} … {last} ({steps} steps)")
        }
    };
    let common_steps = s
        .ranks
        .iter()
        .find(|r| (r.first_step.as_str(), r.last_step.as_str()) == common)
        .map_or(0, |r| r.steps);
    let most = label(common.0, common.1, common_steps);
    let odd: Vec<&RankFacts> = s
        .ranks
        .iter()
        .filter(|r| (r.first_step.as_str(), r.last_step.as_str()) != common)
        .collect();
    // the other windows, alike ones once: "ranks 9 and 10: the whole trace, no step marks"
    let mut groups: Vec<(String, Vec<i64>)> = Vec::new();
    for r in &odd {
        let l = label(&r.first_step, &r.last_step, r.steps);
        match groups.iter_mut().find(|g| g.0 == l) {
            Some(g) => g.1.push(r.rank),
            None => groups.push((l, vec![r.rank])),
        }
    }
    let why = "their means are over different steps (give every rank the same `--steps`)";
    if groups.len() > 3 || !s.duplicates.is_empty() {
        // a folder of unrelated captures: say it once, short
        return vec![format!(
            "the ranks' windows cover different steps: {} of {} captures differ from the most \
             common window ({most}); {why}",
            odd.len(),
            s.ranks.len()
        )];
    }
    let who: Vec<String> = groups
        .iter()
        .map(|(l, rs)| {
            let names: Vec<String> = rs.iter().map(|r| r.to_string()).collect();
            let ranks = match names.len() {
                1 => format!("rank {}", names[0]),
                n => format!("ranks {} and {}", names[..n - 1].join(", "), names[n - 1]),
            };
            format!("{ranks}: {l}")
        })
        .collect();
    vec![format!(
        "the ranks' windows cover different steps: most ranks {most}, but {}; a step one rank \
         leaves out (an outlier, a step the profiler cut) is still counted on the others, so {why}",
        who.join("; ")
    )]
}

fn verdict(s: &RankSummary, findings: &[Finding], measured: Option<&Arrivals>) -> String {
    let n = s.ranks.len();
    let slow = &s.ranks[s.slowest];
    if n == 1 {
        return format!(
            "1 rank: {} per step (nothing to compare)",
            fmt_ns(slow.step_time)
        );
    }
    match (findings.first().map(|f| f.id), measured) {
        (Some("rank-straggler"), Some(a)) => {
            let cs = culprits(a);
            let word = collective_word(&a.name);
            let steps = s.ranks[cs[0]].step_divisor();
            let caused: Ns = cs.iter().map(|&c| a.caused[c]).sum();
            let per_victim = caused as f64 / (n - 1) as f64 / steps;
            let who: Vec<String> = cs
                .iter()
                .map(|&c| {
                    format!(
                        "rank {} arrived last at {} of {} {word} collectives",
                        s.ranks[c].rank, a.last[c], a.matched
                    )
                })
                .collect();
            let mut v = format!(
                "{n} ranks: {}{}; the others waited {} per step for {}",
                if cs.len() > 1 {
                    "stragglers alternate: "
                } else {
                    ""
                },
                who.join(", "),
                fmt_ns(per_victim),
                if cs.len() == 1 { "it" } else { "them" }
            );
            if cs.len() == 1 {
                if let Some(why) = own_cause(s, cs[0]) {
                    v.push_str("; ");
                    v.push_str(&why.short);
                }
            }
            if a.steps <= 1 {
                v.push_str(" (one step only: thin evidence)");
            }
            v
        }
        (Some("rank-straggler"), None) => {
            let c = &s.ranks[s.most_own_time];
            format!(
                "{n} ranks: rank {} is the straggler, its own work takes {} per step, {:.1}% over \
                 the median rank (slowest step: rank {}, {})",
                c.rank,
                fmt_ns(c.own_time()),
                (c.own_time() / s.median_own_time - 1.0) * 100.0,
                slow.rank,
                fmt_ns(slow.step_time)
            )
        }
        (Some("comm-imbalance"), m) => {
            let least = &s.ranks[s.least_exposed_comm];
            let most = &s.ranks[s.most_exposed_comm];
            let who = match m.and_then(|a| a.culprit.map(|c| (a, c))) {
                Some((a, c)) => format!(
                    "rank {} arrived last at {} of {} matched collectives (measured)",
                    s.ranks[c].rank, a.last[c], a.matched
                ),
                None => format!("rank {} likely arrives last at the collectives", least.rank),
            };
            format!(
                "{n} ranks: communication imbalance, exposed communication from {} per step \
                 (rank {}) to {} (rank {}); {who}",
                fmt_ns(least.exposed_comm_per_step()),
                least.rank,
                fmt_ns(most.exposed_comm_per_step()),
                most.rank,
            )
        }
        _ => format!(
            "{n} ranks balanced: slowest rank {} at {} per step, {:.1}% over the median {}{}",
            slow.rank,
            fmt_ns(slow.step_time),
            (s.spread - 1.0) * 100.0,
            fmt_ns(s.median_step),
            match measured {
                Some(a) => format!(
                    "; measured at {} collectives, no rank waited more than {} per step for \
                     the others",
                    a.matched,
                    fmt_ns(
                        (0..n)
                            .map(|i| a.waited[i] as f64 / s.ranks[i].step_divisor())
                            .fold(0.0, f64::max)
                    )
                ),
                None => String::new(),
            }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::ranks::summarize;
    use crate::analysis::ranks::tests::facts;

    #[test]
    fn straggler_fires_over_ten_percent() {
        // own times 9, 9, 11 ms
        let s = summarize(vec![
            facts(0, 10.0, 1.0),
            facts(1, 10.0, 1.0),
            facts(2, 12.0, 1.0),
        ]);
        let d = diagnose_ranks(&s);
        assert_eq!(d.findings.len(), 1);
        let f = &d.findings[0];
        assert_eq!(f.id, "rank-straggler");
        assert!((f.recoverable_us - 2000.0).abs() < 1e-9);
        assert_eq!(f.severity, Severity::High);
        assert!(
            d.verdict.contains("rank 2 is the straggler"),
            "{}",
            d.verdict
        );
        // 8.9 % over the median: nothing
        let s = summarize(vec![
            facts(0, 10.0, 1.0),
            facts(1, 10.0, 1.0),
            facts(2, 10.8, 1.0),
        ]);
        let d = diagnose_ranks(&s);
        assert!(d.findings.is_empty(), "{:?}", d.findings);
        assert!(d.verdict.contains("balanced"), "{}", d.verdict);
    }

    #[test]
    fn waiting_in_collectives_is_not_straggling() {
        // rank 2's step is 40 % longer, all of it exposed communication: a victim
        let s = summarize(vec![
            facts(0, 10.0, 1.0),
            facts(1, 10.0, 1.0),
            facts(2, 14.0, 5.0),
        ]);
        let d = diagnose_ranks(&s);
        assert!(
            d.findings.iter().all(|f| f.id != "rank-straggler"),
            "{:?}",
            d.findings
        );
        assert_eq!(d.findings[0].id, "comm-imbalance");
        assert_eq!(s.ranks[s.slowest].rank, 2, "still the slowest step");
    }

    #[test]
    fn comm_imbalance_names_the_least_exposed_rank() {
        // equal steps: rank 1 has 4 ms more exposed communication (waiting for rank 0)
        let s = summarize(vec![facts(0, 20.0, 1.0), facts(1, 20.0, 5.0)]);
        let d = diagnose_ranks(&s);
        let st = d
            .findings
            .iter()
            .find(|f| f.id == "rank-straggler")
            .unwrap();
        let ci = d
            .findings
            .iter()
            .find(|f| f.id == "comm-imbalance")
            .unwrap();
        // own times 19 and 15 ms, median 17: the straggler claims 2 ms of the 4 ms spread
        assert_eq!(st.evidence.metrics["straggler_rank"], 0.0);
        assert!((st.recoverable_us - 2000.0).abs() < 1e-9);
        assert!((ci.recoverable_us - 2000.0).abs() < 1e-9);
        assert_eq!(ci.evidence.metrics["least_exposed_rank"], 0.0);
        assert!(d.verdict.contains("rank 0"), "{}", d.verdict);
        // below 10 % of the step: nothing
        let s = summarize(vec![facts(0, 20.0, 1.0), facts(1, 20.0, 2.9)]);
        assert!(diagnose_ranks(&s).findings.is_empty());
    }

    #[test]
    fn no_double_claim() {
        // own times 3, 5, 9 ms: rank 2 claims 4 ms; the 6 ms spread of exposed
        // communication keeps 2 ms
        let s = summarize(vec![
            facts(0, 10.0, 7.0),
            facts(1, 10.0, 5.0),
            facts(2, 10.0, 1.0),
        ]);
        let d = diagnose_ranks(&s);
        assert_eq!(d.findings[0].id, "rank-straggler");
        assert!((d.findings[0].recoverable_us - 4000.0).abs() < 1e-9);
        assert_eq!(d.findings[1].id, "comm-imbalance");
        assert!((d.findings[1].recoverable_us - 2000.0).abs() < 1e-9);
        // fully claimed: no comm-imbalance
        let s = summarize(vec![
            facts(0, 10.0, 5.0),
            facts(1, 10.0, 5.0),
            facts(2, 10.0, 1.0),
        ]);
        let d = diagnose_ranks(&s);
        assert_eq!(d.findings.len(), 1, "{:?}", d.findings);
    }

    /// Three gloo ranks, two steps of 10 ms: at step 1 rank 1 arrives 5 ms after the others,
    /// at step 2 rank 2 does.
    fn alternating() -> RankSummary {
        use crate::analysis::ranks::Collective;
        let ms = 1_000_000;
        let ranks = (0..3)
            .map(|r| {
                let mut x = facts(r, 10.0, 5.0);
                x.collective_names = vec!["gloo:all_reduce".into()];
                x.host_collectives = true;
                x.collectives = (1..=2)
                    .map(|step| {
                        let late = r == step;
                        let start = (step - 1) * 10 * ms + if late { 8 } else { 3 } * ms;
                        Collective {
                            before: 3 * ms,
                            dur: (step - 1) * 10 * ms + 9 * ms - start,
                            start,
                            name: 0,
                            step,
                            ..Default::default()
                        }
                    })
                    .collect();
                x
            })
            .collect();
        summarize(ranks)
    }

    #[test]
    fn alternating_stragglers_are_each_named() {
        let s = alternating();
        let d = diagnose_ranks(&s);
        assert_eq!(d.arrivals.last, [0, 1, 1]);
        assert_eq!(d.arrivals.caused, [0, 10_000_000, 10_000_000]);
        let f = &d.findings[0];
        assert_eq!(f.id, "rank-straggler");
        assert_eq!(f.evidence.metrics["culprits"], 2.0);
        // 20 ms of wait over 2 other ranks and 2 steps
        assert!((f.recoverable_us - 5000.0).abs() < 1e-9);
        assert_eq!(f.severity, Severity::High);
        assert!(
            d.verdict.starts_with(
                "3 ranks: stragglers alternate: rank 1 arrived last at 1 of 2 all_reduce \
                 collectives, rank 2 arrived last at 1 of 2 all_reduce collectives; the others \
                 waited 5.00 ms per step for them"
            ),
            "{}",
            d.verdict
        );
        // never "balanced", never one rank for all of them
        assert!(!d.verdict.contains("balanced"));
    }

    #[test]
    fn different_step_windows_are_noted() {
        let mut s = alternating();
        for r in &mut s.ranks {
            r.first_step = "ProfilerStep#1".into();
            r.last_step = "ProfilerStep#2".into();
        }
        assert!(diagnose_ranks(&s).notes.is_empty());
        s.ranks[2].first_step = "ProfilerStep#2".into();
        let notes = diagnose_ranks(&s).notes;
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].contains(
                "most ranks ProfilerStep#1 … ProfilerStep#2 (2 steps), but rank 2: ProfilerStep#2;"
            ),
            "{notes:?}"
        );
    }

    /// A whole trace without step marks is said so, not `0 … 0`; alike windows once.
    #[test]
    fn whole_trace_windows_are_said_so() {
        let mut s = alternating();
        for r in &mut s.ranks {
            r.first_step = "ProfilerStep#10".into();
            r.last_step = "ProfilerStep#10".into();
            r.steps = 1;
        }
        for r in &mut s.ranks[1..] {
            r.first_step = "0".into();
            r.last_step = "0".into();
        }
        let notes = diagnose_ranks(&s).notes;
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].starts_with(
                "the ranks' windows cover different steps: most ranks the whole trace, no step \
                 marks, but rank 0: ProfilerStep#10;"
            ),
            "{notes:?}"
        );
        assert!(!notes[0].contains("0 … 0"), "{notes:?}");
    }

    /// A folder of unrelated captures (many different windows, or one rank in several files):
    /// one short note, not a list of every window.
    #[test]
    fn unrelated_captures_get_one_short_note() {
        let s = summarize(
            (0..6)
                .map(|r| {
                    let mut x = facts(r, 10.0, 1.0);
                    x.first_step = format!("ProfilerStep#{}", r.min(4));
                    x.last_step = x.first_step.clone();
                    x.steps = 1;
                    x
                })
                .collect(),
        );
        let notes = diagnose_ranks(&s).notes;
        assert_eq!(
            notes,
            [
                "the ranks' windows cover different steps: 4 of 6 captures differ from the most \
              common window (ProfilerStep#4); their means are over different steps (give every \
              rank the same `--steps`)"
            ]
        );
    }

    #[test]
    fn one_rank() {
        let s = summarize(vec![facts(0, 10.0, 1.0)]);
        let d = diagnose_ranks(&s);
        assert!(d.findings.is_empty());
        assert!(d.verdict.starts_with("1 rank"), "{}", d.verdict);
    }

    /// Three CPU-only gloo ranks (three steps of 10 ms): rank 1 computes 9 ms before each
    /// all-reduce, the others 4 ms and then wait 5 ms inside it.
    #[test]
    fn a_waiting_host_only_rank_is_communication_bound_and_says_for_whom() {
        use crate::analysis::ranks::{tests::gloo_rank, RankSource};
        let mut facts = Vec::new();
        let mut reports = Vec::new();
        for (r, own) in [4.0, 9.0, 4.0].into_iter().enumerate() {
            let t = gloo_rank(own, &[9.0; 3]);
            let a = crate::analysis::analyze(&t, &Default::default());
            facts.push(RankFacts::new(
                &t,
                &a,
                "r.json",
                r as i64,
                RankSource::Order,
            ));
            reports.push(crate::diagnose::diagnose(&t, &a));
        }
        // a victim: 6 ms of the 10 ms step inside `gloo:all_reduce`, nothing overlaps it
        let v = &reports[0];
        assert!(
            v.verdict.starts_with(
                "Communication-bound (host-only trace, no GPU activity): 60.0% of the step \
                 inside host collectives, mostly `gloo:all_reduce`"
            ),
            "{}",
            v.verdict
        );
        assert_eq!(v.findings[0].id, "exposed-communication");
        assert!((v.findings[0].recoverable_us - 6000.0).abs() < 1e-6);
        // the culprit: 1 ms of 10 (10 %): host-only, the finding low
        assert!(
            reports[1].verdict.starts_with("Host-only trace"),
            "{}",
            reports[1].verdict
        );
        // in the folder: each says whom it waited for, or who waited for it
        let s = summarize(facts);
        let d = diagnose_ranks(&s);
        assert_eq!(d.findings[0].id, "rank-straggler");
        assert_eq!(
            rank_story(&s, &d, 0).unwrap(),
            "rank 0 waited 5.00 ms per step inside the collectives for rank 1 (last at 3 of 3 \
             all_reduce collectives)"
        );
        assert_eq!(
            rank_story(&s, &d, 1).unwrap(),
            "rank 1 is the one the others waited for: it arrived last at 3 of 3 all_reduce \
             collectives, and they waited 5.00 ms per step for it"
        );
        // balanced ranks: no story
        let even: Vec<RankFacts> = (0..3)
            .map(|r| {
                let t = gloo_rank(4.0, &[4.0; 3]);
                let a = crate::analysis::analyze(&t, &Default::default());
                RankFacts::new(&t, &a, "r.json", r, RankSource::Order)
            })
            .collect();
        let s = summarize(even);
        assert_eq!(rank_story(&s, &diagnose_ranks(&s), 0), None);
    }
}
