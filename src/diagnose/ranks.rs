//! Cross-rank rules over the per-rank facts of a folder ([`crate::analysis::ranks`]):
//! `rank-straggler` and `comm-imbalance`, and a one-line verdict for the ranks.
//!
//! Thresholds and bounds are documented in `docs/rules.md` ("Across ranks"). Both rules compare
//! ranks' means per step; severity compares `recoverable_us` with the median step time over
//! the ranks. The two never claim the same time: `comm-imbalance` subtracts what
//! `rank-straggler` claims.

use std::collections::BTreeMap;

use super::{fmt_ns, rank, round3, Evidence, Finding, Severity};
use crate::analysis::ranks::{arrivals, RankFacts, RankSummary};
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
}

fn who(r: &RankFacts) -> String {
    format!("rank {}", r.rank)
}

/// The culprit (the rank that arrived last at the collectives) and the victims (the time the
/// others waited in them), from [`arrivals`], as facts and metrics of `rank-straggler`.
fn culprit_and_victims(
    s: &RankSummary,
    facts: &mut Vec<String>,
    metrics: &mut BTreeMap<String, f64>,
) {
    let a = arrivals(&s.ranks);
    let Some(ci) = a.culprit else {
        return;
    };
    let c = &s.ranks[ci];
    let per_step = |ns: Ns, r: &RankFacts| ns as f64 / r.step_divisor();
    let median_before = {
        let mut v: Vec<Ns> = a.before.clone();
        v.sort_unstable();
        v[v.len() / 2]
    };
    facts.push(format!(
        "culprit: {} arrived last at {} of {} matched collectives (its collective kernels are \
         the shortest: it did not wait, the others waited for it); its own device time before \
         them {} per step (median rank {})",
        who(c),
        a.last[ci],
        a.matched,
        fmt_ns(per_step(a.before[ci], c)),
        fmt_ns(per_step(median_before, c))
    ));
    let mut victims: Vec<usize> = (0..s.ranks.len()).filter(|&i| i != ci).collect();
    victims.sort_by(|&x, &y| a.waited[y].cmp(&a.waited[x]).then(x.cmp(&y)));
    let total: f64 = victims
        .iter()
        .map(|&i| per_step(a.waited[i], &s.ranks[i]))
        .sum();
    let list: Vec<String> = victims
        .iter()
        .take(6)
        .map(|&i| {
            format!(
                "rank {} {}",
                s.ranks[i].rank,
                fmt_ns(per_step(a.waited[i], &s.ranks[i]))
            )
        })
        .collect();
    facts.push(format!(
        "victims: the other ranks waited {} per step in total inside those collectives \
         ({}{})",
        fmt_ns(total),
        list.join(", "),
        if victims.len() > 6 { ", …" } else { "" }
    ));
    metrics.insert("culprit_rank".into(), c.rank as f64);
    metrics.insert("culprit_last_arrivals".into(), a.last[ci] as f64);
    metrics.insert("matched_collectives".into(), a.matched as f64);
    metrics.insert("victims_wait_us".into(), round3(total / 1000.0));
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
    culprit_and_victims(s, &mut facts, &mut metrics);
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

fn comm_imbalance(s: &RankSummary, straggler_us: f64) -> Option<Finding> {
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
        format!(
            "inside a collective the rank that arrives last waits least; least exposed: {}",
            fewest(s)
        ),
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
            format!(
                "Look at rank {} (`--rank {}`), which waits least: the other ranks likely wait \
                 for it inside the collectives, so its extra compute or host time is the time \
                 to remove.",
                least.rank, least.rank
            ),
            "Balance the work per rank: tokens rather than samples per batch for variable-length \
             inputs, the embedding-table sharding plan for recommendation models, layers per \
             pipeline stage."
                .into(),
        ],
    })
}

/// Runs the cross-rank rules and writes the verdict.
pub fn diagnose_ranks(s: &RankSummary) -> RanksDiagnosis {
    let mut findings: Vec<Finding> = Vec::new();
    let straggler = rank_straggler(s);
    let claimed = straggler.as_ref().map_or(0.0, |f| f.recoverable_us);
    findings.extend(straggler);
    findings.extend(comm_imbalance(s, claimed));
    for x in &mut findings {
        x.recoverable_us = round3(x.recoverable_us.max(0.0));
    }
    rank(&mut findings);
    RanksDiagnosis {
        verdict: verdict(s, &findings),
        findings,
    }
}

fn verdict(s: &RankSummary, findings: &[Finding]) -> String {
    let n = s.ranks.len();
    let slow = &s.ranks[s.slowest];
    if n == 1 {
        return format!(
            "1 rank: {} per step (nothing to compare)",
            fmt_ns(slow.step_time)
        );
    }
    match findings.first().map(|f| f.id) {
        Some("rank-straggler") => {
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
        Some("comm-imbalance") => {
            let least = &s.ranks[s.least_exposed_comm];
            let most = &s.ranks[s.most_exposed_comm];
            format!(
                "{n} ranks: communication imbalance, exposed communication from {} per step \
                 (rank {}) to {} (rank {}); rank {} likely arrives last at the collectives",
                fmt_ns(least.exposed_comm_per_step()),
                least.rank,
                fmt_ns(most.exposed_comm_per_step()),
                most.rank,
                least.rank
            )
        }
        _ => format!(
            "{n} ranks balanced: slowest rank {} at {} per step, {:.1}% over the median {}",
            slow.rank,
            fmt_ns(slow.step_time),
            (s.spread - 1.0) * 100.0,
            fmt_ns(s.median_step)
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

    #[test]
    fn one_rank() {
        let s = summarize(vec![facts(0, 10.0, 1.0)]);
        let d = diagnose_ranks(&s);
        assert!(d.findings.is_empty());
        assert!(d.verdict.starts_with("1 rank"), "{}", d.verdict);
    }
}
