//! Nsight Compute rules: what ncu measured inside the kernels (occupancy and its limiter,
//! register spills, shared-memory bank conflicts, L2 hit rate, warp stalls, ncu's own
//! warnings), weighted by the time those kernels take in the real run.
//!
//! Facts come from [`crate::analysis::ncu`]. Each rule looks at every launch ([`Issue`] per
//! launch, pure functions of [`NcuKernel`]) and reports one finding over all launches that
//! qualify.
//!
//! # Weight and recoverable time
//!
//! * Beside a trace, a launch weighs the in-window time of the trace kernels it was joined to
//!   (by name and order) that no earlier device-side rule claimed, times its share of that
//!   name ([`crate::analysis::ncu::NcuLaunch::share_of_kernel`]), per step. The rules run after
//!   every other device-side rule and take the kernels they cover; time already claimed counts
//!   0 here (the finding says how much). A launch not found in the trace weighs 0. Bounds are
//!   capped by the host's wait, like every device-side bound.
//! * Alone (a CSV without a trace), a launch weighs its own ncu duration; totals are over the
//!   CSV (one "step").
//!
//! A launch's fraction is ncu's `Estimated Speedup` of the matching rule when ncu gives one,
//! else the rule's documented model, else 0 (the finding is then `info`: a lead with its
//! numbers, no claimed time). The findings of one launch compose: each takes its fraction of
//! what the previous ones left, in [`ORDER`], so together they never exceed the launch's time.

use std::collections::HashMap;

use super::claims::{cap, CAP_BASIS};
use super::{
    count, fmt_us_sentence, metric, pct, short, Diagnosis, Evidence, Facts, Finding, Severity,
};
use crate::analysis::ncu::NcuAnalysis;
use crate::ingest::ncu::{Bound, NcuKernel, NcuRule};
use crate::model::{NameId, Ns};

/// ncu's AchievedOccupancy rule: theoretical − achieved occupancy above this (points).
pub const ACHIEVED_GAP_PTS: f64 = 10.0;
/// ncu's TheoreticalOccupancy rule: theoretical occupancy below this (%).
pub const THEORETICAL_LOW_PCT: f64 = 80.0;
/// ncu's SharedMemoryConflicts rule: bank conflicts ÷ shared wavefronts at or above this (%).
pub const BANK_CONFLICT_PCT: f64 = 10.0;
/// L2 hit rate under this (%) on a memory-bound kernel.
pub const L2_HIT_LOW_PCT: f64 = 50.0;
/// ncu's CPIStall rule: a stall reason's share of the cycles between issues above this.
pub const STALL_SHARE: f64 = 0.3;
/// ncu's CPIStall rule: only when the schedulers issue less than this per cycle.
pub const ISSUE_ACTIVE_MAX: f64 = 0.8;

/// Rule ids in composition order: work-removing fixes first, then latency hiding.
pub const ORDER: [&str; 6] = [
    "ncu-register-spills",
    "ncu-bank-conflicts",
    "ncu-l2-hit-rate",
    "ncu-occupancy",
    "ncu-warp-stalls",
    "ncu-other-rules",
];

/// What a rule found in one launch.
#[derive(Clone, Debug, PartialEq)]
pub struct Issue {
    /// Share of the launch's time the fix could save (0..1), before composition.
    pub fraction: f64,
    /// ncu's estimated speedup (%) when the fraction is ncu's.
    pub ncu_speedup_pct: Option<f64>,
    /// True when `fraction` comes from the rule's model (no ncu estimate).
    pub modelled: bool,
    /// The numbers, for the evidence.
    pub detail: String,
    /// Sub-cause used for advice (`registers`, `small_grid`, a stall reason, ...).
    pub causes: Vec<String>,
    /// ncu's WRN/OPT rules behind it (indices in [`NcuKernel::rules`]).
    pub rules: Vec<usize>,
}

fn is_warning(r: &NcuRule) -> bool {
    r.kind == "WRN" || r.kind == "OPT"
}

fn family(r: &NcuRule) -> Option<&'static str> {
    let name = r.name.to_ascii_lowercase();
    let msg = r.message.to_ascii_lowercase();
    let sec = r.section.to_ascii_lowercase();
    if name.contains("spill") || msg.contains("spill") || msg.contains("local memory") {
        Some("ncu-register-spills")
    } else if name.contains("bankconflict")
        || name.contains("sharedmemoryconflict")
        || msg.contains("bank conflict")
    {
        Some("ncu-bank-conflicts")
    } else if name.contains("l2") {
        Some("ncu-l2-hit-rate")
    } else if sec == "occupancy" || sec == "launchstats" || name.contains("occupancy") {
        Some("ncu-occupancy")
    } else if sec.contains("warpstate") || name.contains("stall") || name.contains("cpi") {
        Some("ncu-warp-stalls")
    } else {
        None
    }
}

/// ncu's WRN/OPT rules of a family (`None` = none of the named families) and their largest
/// estimated speedup.
fn rules_of(k: &NcuKernel, fam: Option<&str>) -> (Vec<usize>, Option<f64>) {
    let idx: Vec<usize> = k
        .rules
        .iter()
        .enumerate()
        .filter(|(_, r)| is_warning(r) && family(r) == fam)
        .map(|(i, _)| i)
        .collect();
    let sp = idx
        .iter()
        .filter_map(|&i| k.rules[i].speedup_pct)
        .filter(|s| s.is_finite() && *s > 0.0)
        .fold(None, |m: Option<f64>, s| Some(m.map_or(s, |m| m.max(s))));
    (idx, sp)
}

/// The speed-of-light headroom: 1 − max(SM%, Mem%) ÷ 100. The same work cannot finish faster
/// than its busiest unit allows.
pub fn headroom(k: &NcuKernel) -> Option<f64> {
    let m = k.sm_pct?.max(k.memory_pct?);
    Some((1.0 - m / 100.0).clamp(0.0, 1.0))
}

fn sol(k: &NcuKernel) -> String {
    match (k.sm_pct, k.memory_pct) {
        (Some(s), Some(m)) => format!(", SM {s:.1}% / Mem {m:.1}% of peak"),
        _ => String::new(),
    }
}

fn issue(
    fraction: Option<f64>,
    sp: Option<f64>,
    detail: String,
    causes: Vec<String>,
    rules: Vec<usize>,
) -> Issue {
    Issue {
        fraction: fraction.unwrap_or(0.0).clamp(0.0, 1.0),
        ncu_speedup_pct: sp,
        modelled: sp.is_none() && fraction.is_some_and(|f| f > 0.0),
        detail,
        causes,
        rules,
    }
}

/// `ncu-occupancy`: achieved occupancy more than 10 points under theoretical (ncu's
/// AchievedOccupancy), or theoretical under 80 % with its limiter (TheoreticalOccupancy).
/// Fraction: ncu's estimate (Occupancy and LaunchStats rules), else
/// max(1 − achieved ÷ theoretical, 1 − theoretical ÷ 100); either capped at the SOL headroom.
pub fn occupancy_issue(k: &NcuKernel) -> Option<Issue> {
    let th = k.theoretical_occupancy_pct?;
    let ach = k.achieved_occupancy_pct;
    let gap = ach.filter(|a| th - a > ACHIEVED_GAP_PTS);
    let low = th < THEORETICAL_LOW_PCT;
    if gap.is_none() && !low {
        return None;
    }
    let mut causes = Vec::new();
    let mut model: f64 = 0.0;
    if let Some(a) = gap {
        model = model.max(1.0 - a / th.max(1e-9));
        if k.waves_per_sm.is_some_and(|w| w < 1.0) {
            causes.push("small_grid".to_string());
        } else {
            causes.push("achieved_gap".to_string());
        }
    }
    if low {
        model = model.max(1.0 - th / 100.0);
        for l in k.occupancy_limiter.as_deref().unwrap_or("").split('+') {
            if !l.is_empty() {
                causes.push(l.to_string());
            }
        }
    }
    let (rules, sp) = rules_of(k, Some("ncu-occupancy"));
    let room = headroom(k);
    let fraction = match (sp, room) {
        (Some(s), Some(r)) => Some((s / 100.0).min(r)),
        (Some(s), None) => Some(s / 100.0),
        (None, Some(r)) => Some(model.min(r)),
        (None, None) => None,
    };
    let limit = k
        .occupancy_limiter
        .as_deref()
        .filter(|_| low)
        .map(|l| {
            let blocks = match l {
                "registers" => k.metrics.get("launch__occupancy_limit_registers"),
                "shared_mem" => k.metrics.get("launch__occupancy_limit_shared_mem"),
                "warps" => k.metrics.get("launch__occupancy_limit_warps"),
                "blocks" => k.metrics.get("launch__occupancy_limit_blocks"),
                _ => None,
            };
            match blocks {
                Some(b) => format!(" limited by {l} ({b:.0} blocks/SM)"),
                None => format!(" limited by {l}"),
            }
        })
        .unwrap_or_default();
    let detail = format!(
        "theoretical occupancy {th:.1}%{limit}, achieved {}{}{}{}{}",
        ach.map(|a| format!("{a:.1}%"))
            .unwrap_or_else(|| "-".into()),
        k.waves_per_sm
            .map(|w| format!(", {w:.2} waves/SM"))
            .unwrap_or_default(),
        k.registers_per_thread
            .map(|r| format!(", {r:.0} registers/thread"))
            .unwrap_or_default(),
        sol(k),
        room.map(|r| format!(" (headroom {})", pct(r)))
            .unwrap_or_default(),
    );
    Some(issue(fraction, sp, detail, causes, rules))
}

/// `ncu-register-spills`: any local-memory (spill) operation. Fraction: ncu's estimate only.
pub fn spill_issue(k: &NcuKernel) -> Option<Issue> {
    let ops = k.local_memory_ops.filter(|&v| v > 0.0)?;
    let (rules, sp) = rules_of(k, Some("ncu-register-spills"));
    let detail = format!(
        "{} local-memory (spill) operations{}",
        count(ops.round() as u64),
        k.registers_per_thread
            .map(|r| format!(", {r:.0} registers/thread"))
            .unwrap_or_default()
    );
    Some(issue(sp.map(|s| s / 100.0), sp, detail, vec![], rules))
}

/// `ncu-bank-conflicts`: conflicts ≥ 10 % of shared-memory wavefronts. Fraction: ncu's
/// estimate, else the conflicted share of the wavefronts (the shared-memory work the fix
/// removes; the kernel saves at most that share of its time).
pub fn bank_conflict_issue(k: &NcuKernel) -> Option<Issue> {
    let p = k.bank_conflict_pct.filter(|&p| p >= BANK_CONFLICT_PCT)?;
    let (rules, sp) = rules_of(k, Some("ncu-bank-conflicts"));
    let detail = format!(
        "shared-memory bank conflicts {p:.1}% of shared wavefronts ({} conflicts){}",
        count(k.bank_conflicts.unwrap_or(0.0).round() as u64),
        sol(k)
    );
    let fraction = Some(sp.map_or(p / 100.0, |s| s / 100.0));
    Some(issue(fraction, sp, detail, vec![], rules))
}

/// `ncu-l2-hit-rate`: L2 hit rate under 50 % on a memory-bound kernel (SOL rule). Fraction:
/// ncu's estimate only.
pub fn l2_issue(k: &NcuKernel) -> Option<Issue> {
    let h = k.l2_hit_rate_pct.filter(|&h| h < L2_HIT_LOW_PCT)?;
    if k.bound != Some(Bound::Memory) {
        return None;
    }
    let (rules, sp) = rules_of(k, Some("ncu-l2-hit-rate"));
    let detail = format!(
        "L2 hit rate {h:.1}% on a memory-bound kernel{}{}",
        k.dram_pct
            .map(|d| format!(", DRAM {d:.1}% of peak"))
            .unwrap_or_default(),
        sol(k)
    );
    Some(issue(sp.map(|s| s / 100.0), sp, detail, vec![], rules))
}

/// Stall reasons with their share of the cycles between two issued instructions (per-issue
/// ratios over `smsp__average_warp_latency_per_inst_issued.ratio`, else over their sum; PC
/// sampling shares as they are), largest first.
pub fn stall_shares(k: &NcuKernel) -> Vec<(String, f64)> {
    let per_issue: Vec<(&str, f64)> = k
        .metrics
        .iter()
        .filter_map(|(m, &v)| {
            let r = m
                .strip_prefix("smsp__average_warps_issue_stalled_")?
                .strip_suffix("_per_issue_active.ratio")?;
            Some((r, v))
        })
        .collect();
    let total = if per_issue.is_empty() {
        None
    } else {
        k.metrics
            .get("smsp__average_warp_latency_per_inst_issued.ratio")
            .copied()
            .or_else(|| Some(per_issue.iter().map(|x| x.1).sum()))
    };
    let mut out: Vec<(String, f64)> = k
        .warp_stalls
        .iter()
        .map(|w| {
            let share = match total {
                Some(t) if t > 0.0 => w.value / t,
                Some(_) => 0.0,
                None => w.value,
            };
            (w.reason.clone(), share)
        })
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out
}

/// `ncu-warp-stalls`: a stall reason over 30 % of the cycles between issues while the
/// schedulers issue under 0.8 instructions per cycle (ncu's CPIStall). Fraction: ncu's
/// estimate only.
pub fn stall_issue(k: &NcuKernel) -> Option<Issue> {
    let issue_active = k
        .metrics
        .get("smsp__issue_active.avg.per_cycle_active")
        .copied();
    if issue_active.is_some_and(|a| a >= ISSUE_ACTIVE_MAX) {
        return None;
    }
    let top: Vec<(String, f64)> = stall_shares(k)
        .into_iter()
        .filter(|s| s.1 > STALL_SHARE && s.0 != "selected")
        .collect();
    if top.is_empty() {
        return None;
    }
    let (rules, sp) = rules_of(k, Some("ncu-warp-stalls"));
    let detail = format!(
        "stalls: {}{}",
        top.iter()
            .map(|(r, s)| format!("{r} {}", pct(*s)))
            .collect::<Vec<_>>()
            .join(", "),
        issue_active
            .map(|a| format!("; {a:.2} instructions issued per cycle"))
            .unwrap_or_default()
    );
    let causes = top.iter().map(|s| s.0.clone()).collect();
    Some(issue(sp.map(|s| s / 100.0), sp, detail, causes, rules))
}

/// `ncu-other-rules`: ncu's WRN/OPT rules none of the rules above covers. Fraction: their
/// largest estimate.
pub fn other_rules_issue(k: &NcuKernel) -> Option<Issue> {
    let (rules, sp) = rules_of(k, None);
    if rules.is_empty() {
        return None;
    }
    let names: Vec<&str> = rules.iter().map(|&i| k.rules[i].name.as_str()).collect();
    let detail = format!("ncu rules {}", names.join(", "));
    Some(issue(sp.map(|s| s / 100.0), sp, detail, vec![], rules))
}

/// Every rule's issue for a launch, in [`ORDER`].
pub fn issues(k: &NcuKernel) -> [Option<Issue>; 6] {
    [
        spill_issue(k),
        bank_conflict_issue(k),
        l2_issue(k),
        occupancy_issue(k),
        stall_issue(k),
        other_rules_issue(k),
    ]
}

/// Per launch and rule: the share of the launch's time claimed after composition.
pub fn compose(all: &[[Option<Issue>; 6]]) -> Vec<[f64; 6]> {
    all.iter()
        .map(|is| {
            let mut left = 1.0;
            let mut out = [0.0; 6];
            for (r, i) in is.iter().enumerate() {
                if let Some(i) = i {
                    out[r] = left * i.fraction;
                    left -= out[r];
                }
            }
            out
        })
        .collect()
}

/// How launches are weighed.
struct Ctx<'a> {
    n: &'a NcuAnalysis,
    f: Option<&'a Facts<'a>>,
    /// µs per step each launch stands for (unclaimed time only).
    weight: Vec<f64>,
    /// µs per step of each joined kernel name's time already claimed by other rules.
    claimed: Vec<f64>,
    /// The mean step (trace) or the summed ncu durations (alone), µs.
    step_us: f64,
}

impl Ctx<'_> {
    fn name(&self, i: usize) -> &str {
        match self.n.launches[i].kernel {
            Some(k) => &self.n.kernels[k].name,
            None => &self.n.report.kernels[i].name,
        }
    }
    fn severity(&self, us: f64) -> Severity {
        if us > 0.0 && self.step_us > 0.0 {
            Severity::of_share(us / self.step_us)
        } else {
            Severity::Info
        }
    }
    fn per(&self) -> &'static str {
        if self.f.is_some() {
            "per step"
        } else {
            "profiled"
        }
    }
}

fn first_sentence(s: &str) -> String {
    let one: String = s
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .split(". ")
        .next()
        .unwrap_or("")
        .to_string();
    short(&one, 200)
}

#[derive(Default)]
struct Row {
    launches: u64,
    weight: f64,
    rec: f64,
    detail: String,
    first: Option<usize>,
}

/// The launches one ncu rule hit, summed: rows per kernel name, the time they stand for and
/// what the fix could recover, how each share was bounded, the causes and ncu's messages.
#[derive(Default)]
struct Hits {
    /// Per kernel name, by recoverable time (then time, then name).
    rows: Vec<(String, Row)>,
    /// Recoverable time before the cap, µs.
    raw: f64,
    /// Time the launches stand for, µs.
    time: f64,
    /// Time of their kernels already claimed by earlier device-side rules, µs.
    taken: f64,
    /// Launches joined to no trace kernel (with `--ncu`).
    unjoined: u64,
    /// Launches whose share is ncu's estimate.
    by_ncu: u64,
    /// Launches whose share is the rule's model.
    by_model: u64,
    /// Launches without a bound.
    unbounded: u64,
    /// Causes named by the issues, first seen first.
    causes: Vec<String>,
    /// ncu's rule messages, first seen first.
    messages: Vec<String>,
}

/// Sums the launches `hits` of rule `r`.
fn gather(
    c: &Ctx,
    r: usize,
    all: &[[Option<Issue>; 6]],
    claimed: &[[f64; 6]],
    hits: &[usize],
) -> Hits {
    let kernels = &c.n.report.kernels;
    let mut rows: Vec<(String, Row)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut raw = 0.0;
    let mut time = 0.0;
    let mut taken = 0.0;
    let mut unjoined = 0u64;
    let (mut by_ncu, mut by_model, mut unbounded) = (0u64, 0u64, 0u64);
    let mut causes: Vec<String> = Vec::new();
    let mut messages: Vec<String> = Vec::new();
    let mut counted_kernels: Vec<usize> = Vec::new();
    for &i in hits {
        let is = all[i][r].as_ref().unwrap();
        let rec = c.weight[i] * claimed[i][r];
        raw += rec;
        time += c.weight[i];
        match c.n.launches[i].kernel {
            Some(k) if !counted_kernels.contains(&k) => {
                counted_kernels.push(k);
                taken += c.claimed[k];
            }
            Some(_) => {}
            None if c.n.joined => unjoined += 1,
            None => {}
        }
        if is.ncu_speedup_pct.is_some() {
            by_ncu += 1;
        } else if is.modelled {
            by_model += 1;
        } else {
            unbounded += 1;
        }
        for cause in &is.causes {
            if !causes.contains(cause) {
                causes.push(cause.clone());
            }
        }
        for &ri in &is.rules {
            let rule = &kernels[i].rules[ri];
            let m = format!(
                "ncu {} {}{}: {}",
                rule.kind,
                rule.name,
                rule.speedup_pct
                    .map(|s| format!(" (est. speedup {s:.1}%)"))
                    .unwrap_or_default(),
                first_sentence(&rule.message)
            );
            if !messages.contains(&m) {
                messages.push(m);
            }
        }
        let name = c.name(i).to_string();
        let ri = *index.entry(name.clone()).or_insert_with(|| {
            rows.push((name, Row::default()));
            rows.len() - 1
        });
        let row = &mut rows[ri].1;
        row.launches += 1;
        row.weight += c.weight[i];
        row.rec += rec;
        if row.first.is_none() {
            row.first = Some(i);
            row.detail = is.detail.clone();
        }
    }
    rows.sort_by(|a, b| {
        b.1.rec
            .total_cmp(&a.1.rec)
            .then(b.1.weight.total_cmp(&a.1.weight))
            .then(a.0.cmp(&b.0))
    });
    Hits {
        rows,
        raw,
        time,
        taken,
        unjoined,
        by_ncu,
        by_model,
        unbounded,
        causes,
        messages,
    }
}

/// The facts, metrics and locations of a rule's launches (before the cap).
fn hits_evidence(c: &Ctx, g: &Hits, hits: &[usize]) -> Evidence {
    let kernels = &c.n.report.kernels;
    let per = c.per();
    let (rows, messages) = (&g.rows, &g.messages);
    let (time, taken, unjoined) = (g.time, g.taken, g.unjoined);
    let (by_ncu, by_model, unbounded) = (g.by_ncu, g.by_model, g.unbounded);
    let mut e = Evidence::default();
    e.facts.push(format!(
        "{} of {} profiled launches ({} kernel{}), {} {per}{}",
        hits.len(),
        kernels.len(),
        rows.len(),
        if rows.len() == 1 { "" } else { "s" },
        fmt_us_sentence(time),
        if c.f.is_some() {
            " of trace time not claimed by an earlier rule"
        } else {
            " under ncu"
        }
    ));
    for (name, row) in rows.iter().take(6) {
        let ks = &kernels[row.first.unwrap_or(0)];
        e.facts.push(format!(
            "  {}: {} launch{}{}, {} {per}, recoverable {}; ncu #{}: {}",
            short(name, 80),
            row.launches,
            if row.launches == 1 { "" } else { "es" },
            ks.bound
                .map(|b| format!(" ({}-bound)", b.as_str()))
                .unwrap_or_default(),
            fmt_us_sentence(row.weight),
            fmt_us_sentence(row.rec),
            ks.id,
            row.detail
        ));
    }
    if rows.len() > 6 {
        e.facts.push(format!("  … {} more kernels", rows.len() - 6));
    }
    for m in messages.iter().take(4) {
        e.facts.push(m.clone());
    }
    if messages.len() > 4 {
        e.facts.push(format!(
            "… {} more ncu rule messages (JSON `ncu.launches[].rules`)",
            messages.len() - 4
        ));
    }
    e.facts.push(format!(
        "share of each launch's time: ncu's estimate for {by_ncu}, the rule's model for \
         {by_model}, no bound for {unbounded}"
    ));
    if taken > 0.0 {
        e.facts.push(format!(
            "{} {per} of these kernels' time is already claimed by an earlier device-side rule \
             and not counted again",
            fmt_us_sentence(taken)
        ));
    }
    if unjoined > 0 {
        e.facts.push(format!(
            "{unjoined} of these launches match no kernel of the trace (by name and order): \
             no time to weigh them by"
        ));
    }
    metric(&mut e, "launches", hits.len() as f64);
    metric(&mut e, "kernels", rows.len() as f64);
    metric(&mut e, "kernel_us_per_step", time);
    metric(&mut e, "claimed_elsewhere_us_per_step", taken);
    if let Some(f) = c.f {
        for (_, row) in rows.iter().take(3) {
            if let Some(g) = row
                .first
                .and_then(|i| c.n.launches[i].trace_kernel.as_ref())
            {
                let tg = &f.trace.gpu[g.gpu as usize];
                e.locations
                    .push(f.location("kernel", f.trace.name(tg.name), g.start, g.dur));
            }
        }
    }
    e
}

/// How the recoverable time of rule `id` is computed.
fn basis(c: &Ctx, id: &str) -> String {
    let model = match id {
        "ncu-occupancy" => {
            "else max(1 − achieved ÷ theoretical, 1 − theoretical ÷ 100) (time scaling with the \
             unfilled warp slots); either capped at the speed-of-light headroom \
             1 − max(SM%, Mem%) ÷ 100, since more warps cannot push the busiest unit past its \
             peak"
        }
        "ncu-bank-conflicts" => {
            "else the conflicted share of shared-memory wavefronts (the shared-memory work the \
             fix removes)"
        }
        _ => "else no bound (ncu gave no estimate: the finding is a lead)",
    };
    let weight = if c.f.is_some() {
        "the launches' kernels' device time per step in the trace (their in-window time not \
         claimed by an earlier device-side rule, split between the profiled launches of a \
         name by ncu duration)"
    } else {
        "the launches' own ncu durations (no timeline: totals over the CSV)"
    };
    let mut basis = format!(
        "{weight} × the fix's share of it: ncu's Estimated Speedup where it gives one, {model}; \
         several ncu findings on one kernel compose (each takes its share of what the previous \
         ones leave, in the order {})",
        ORDER.join(", ")
    );
    if c.f.is_some() {
        basis.push_str(&format!("; {CAP_BASIS}"));
    }
    basis
}

/// The one-line title of rule `id`.
fn title(c: &Ctx, id: &str, g: &Hits) -> String {
    let per = c.per();
    let (rows, time, causes) = (&g.rows, g.time, &g.causes);
    let n_k = rows.len();
    let kern = |n: usize| if n == 1 { "kernel" } else { "kernels" };
    match id {
        "ncu-register-spills" => format!(
            "Register spills to local memory in {n_k} profiled {} ({} {per})",
            kern(n_k),
            fmt_us_sentence(time)
        ),
        "ncu-bank-conflicts" => format!(
            "Shared-memory bank conflicts ≥ {BANK_CONFLICT_PCT:.0}% in {n_k} profiled {} ({} \
             {per})",
            kern(n_k),
            fmt_us_sentence(time)
        ),
        "ncu-l2-hit-rate" => format!(
            "Low L2 hit rate on memory-bound {} ({n_k}, {} {per})",
            kern(n_k),
            fmt_us_sentence(time)
        ),
        "ncu-occupancy" => format!(
            "Occupancy below reach in {n_k} profiled {} ({} {per}; limiter: {})",
            kern(n_k),
            fmt_us_sentence(time),
            if causes.is_empty() {
                "-".to_string()
            } else {
                causes.join(", ")
            }
        ),
        "ncu-warp-stalls" => format!(
            "Warp stalls dominate in {n_k} profiled {} ({})",
            kern(n_k),
            causes
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => format!(
            "Other Nsight Compute warnings on {n_k} {} ({} {per})",
            kern(n_k),
            fmt_us_sentence(time)
        ),
    }
}

fn finding(c: &Ctx, r: usize, all: &[[Option<Issue>; 6]], claimed: &[[f64; 6]]) -> Option<Finding> {
    let id = ORDER[r];
    let hits: Vec<usize> = (0..all.len()).filter(|&i| all[i][r].is_some()).collect();
    if hits.is_empty() {
        return None;
    }
    let kernels = &c.n.report.kernels;
    let g = gather(c, r, all, claimed, &hits);
    let raw = g.raw;
    let mut e = hits_evidence(c, &g, &hits);
    let rec = match c.f {
        Some(f) if raw > 0.0 => cap(f, raw, &mut e),
        _ => {
            metric(&mut e, "uncapped_us_per_step", raw);
            raw
        }
    };
    let basis = basis(c, id);
    let title = title(c, id, &g);
    let causes = g.causes;
    Some(Finding {
        id,
        severity: c.severity(rec),
        title,
        recoverable_us: rec,
        recoverable_basis: basis,
        evidence: e,
        advice: advice(id, &causes, &hits, kernels),
    })
}

fn stall_advice(reason: &str) -> Option<&'static str> {
    Some(match reason {
        "long_scoreboard" => {
            "long_scoreboard: warps wait for global/local memory (L1TEX). Coalesce accesses \
             (consecutive threads → consecutive addresses, 128-bit vector loads), stage reused \
             data in shared memory, keep more independent loads in flight (unrolling, \
             cp.async), and remove register spills (local memory goes the same way)."
        }
        "short_scoreboard" => {
            "short_scoreboard: warps wait for shared memory or the special-function unit: \
             remove bank conflicts, use fewer transcendental calls (`__expf`, fast math)."
        }
        "barrier" => {
            "barrier: warps wait at `__syncthreads()`: even out the work between warps before \
             each barrier, use fewer barriers per tile or smaller blocks, or warp-level \
             primitives (`__shfl_sync`, cooperative groups tiles) instead of block-wide syncs."
        }
        "math_pipe_throttle" => {
            "math_pipe_throttle: a math pipe is saturated (compute-bound on it): move GEMM-like \
             work to tensor cores (TF32/FP16/BF16), use lower precision, or spread work to a \
             less used pipe."
        }
        "mio_throttle" => {
            "mio_throttle: the memory input/output queue is full (shared memory, special math, \
             dynamic branches): fewer and wider shared-memory accesses, no bank conflicts."
        }
        "lg_throttle" => {
            "lg_throttle: the local/global memory queue is full: fewer, wider (vectorized) \
             global accesses, and no spills to local memory."
        }
        "tex_throttle" => {
            "tex_throttle: the texture/L1 pipe is saturated: fewer texture or L1 requests, \
             wider accesses."
        }
        "wait" => {
            "wait: fixed-latency dependencies between instructions: more independent \
             instructions per thread (unrolling, instruction-level parallelism)."
        }
        "no_instruction" | "no_instructions" => {
            "no_instruction: instruction cache misses or branch targets: smaller unrolled \
             loops, fewer divergent branches."
        }
        "branch_resolving" => {
            "branch_resolving: waiting for branch targets: fewer (divergent) branches, \
             predication."
        }
        "membar" => "membar: waiting on memory fences: fewer `__threadfence()` calls.",
        "imc_miss" => {
            "imc_miss: immediate-constant cache misses: constant memory indexed differently \
             across a warp; use shared or global memory for such data."
        }
        "dispatch_stall" | "drain" | "misc" | "sleeping" | "not_selected" | "gmma" => return None,
        _ => return None,
    })
}

fn advice(id: &str, causes: &[String], hits: &[usize], kernels: &[NcuKernel]) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    let has = |c: &str| causes.iter().any(|x| x == c);
    match id {
        "ncu-occupancy" => {
            if has("small_grid") {
                a.push(
                    "The grid does not fill the GPU (under one wave of blocks): give each \
                     launch more work (larger batches, fusing small ops with `torch.compile`, \
                     split-K for small GEMMs) or run independent kernels concurrently on \
                     separate streams."
                        .into(),
                );
            }
            if has("registers") {
                a.push(
                    "Registers limit the resident blocks: cap them with \
                     `__launch_bounds__(threads_per_block, min_blocks_per_sm)` or \
                     `-maxrregcount` (then check for spills with `-Xptxas -v`), keep less \
                     per-thread state; in Triton use smaller BLOCK sizes or more `num_warps`."
                        .into(),
                );
            }
            if has("shared_mem") {
                a.push(
                    "Shared memory per block limits the resident blocks: smaller tiles or fewer \
                     pipeline stages (Triton `num_stages`), or opt in to the larger carveout \
                     with `cudaFuncSetAttribute(kernel, \
                     cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)`."
                        .into(),
                );
            }
            if has("warps") {
                a.push(
                    "The block size leaves warp slots unused: pick a block size that divides \
                     the SM's warp slots (e.g. 128, 256 or 512 threads)."
                        .into(),
                );
            }
            if has("blocks") {
                a.push(
                    "The per-SM block limit is reached with small blocks: use larger blocks \
                     (at least 128 threads) so each resident block brings more warps."
                        .into(),
                );
            }
            if has("achieved_gap") {
                a.push(
                    "Achieved occupancy falls short of theoretical: workload imbalance between \
                     blocks, a partial last wave (tail effect), or warps idling at barriers: \
                     balance the work per block and launch whole waves."
                        .into(),
                );
            }
            let busy = hits
                .iter()
                .any(|&i| headroom(&kernels[i]).is_some_and(|h| h < 0.2));
            if busy {
                a.push(
                    "Some of these kernels already use over 80% of a unit's peak (SOL): more \
                     warps cannot help them much; the bound is their headroom, and the gain \
                     is in doing less work (algorithm, precision, tensor cores)."
                        .into(),
                );
            }
        }
        "ncu-register-spills" => a.push(
            "Registers spill to local memory (off-chip, through L1/L2): raise the register cap \
             (a smaller `min_blocks_per_sm` in `__launch_bounds__`, drop `-maxrregcount`), \
             keep per-thread arrays small and indexed by compile-time constants (dynamic \
             indexing forces local memory), confirm with `-Xptxas -v`; in Triton use smaller \
             BLOCK sizes or more `num_warps`."
                .into(),
        ),
        "ncu-bank-conflicts" => {
            a.push(
                "Pad or swizzle shared-memory arrays (e.g. `__shared__ float tile[32][33]`, or \
                 an XOR swizzle) so the 32 threads of a warp hit distinct banks; match 64/128-bit \
                 vector accesses to the layout."
                    .into(),
            );
            a.push(
                "For library kernels (cuBLAS `*sgemm*`, cuDNN) the layout is not yours: another \
                 dtype or shape selects another kernel (TF32/FP16/BF16 on tensor cores: \
                 `torch.set_float32_matmul_precision(\"high\")`, autocast)."
                    .into(),
            );
        }
        "ncu-l2-hit-rate" => a.push(
            "Most sectors miss L2 and go to DRAM: reuse data while it is in L2 (tile the loops \
             to the L2 size, a grouped/swizzled tile order for GEMMs), fuse producer and \
             consumer kernels so intermediates stay on chip, and on Ampere or later pin a \
             reused buffer with an L2 access-policy window (`cudaAccessPolicyWindow`)."
                .into(),
        ),
        "ncu-warp-stalls" => {
            for c in causes {
                if let Some(s) = stall_advice(c) {
                    a.push(s.into());
                }
            }
            if a.is_empty() {
                a.push(
                    "See the warp-stall reasons in Nsight Compute's profiling guide (Warp State \
                     Statistics) and the source view (`--set full`, `-lineinfo`) for the lines \
                     that stall."
                        .into(),
                );
            }
        }
        _ => a.push(
            "Open the launches in Nsight Compute (`ncu --import … --page details`) for the \
             rule's full guidance; the messages are in the evidence."
                .into(),
        ),
    }
    a
}

/// Nsight Compute findings beside a trace (after every other device-side rule).
pub fn rules(f: &Facts, claims: &mut super::claims::Claims) -> Vec<Finding> {
    let Some(n) = f.a.ncu.as_ref().filter(|n| n.joined) else {
        return Vec::new();
    };
    let by_name: HashMap<NameId, usize> = n
        .kernels
        .iter()
        .enumerate()
        .map(|(i, k)| (k.name_id, i))
        .collect();
    let mut free: Vec<Ns> = vec![0; n.kernels.len()];
    let mut taken: Vec<Ns> = vec![0; n.kernels.len()];
    let mut mine: Vec<u32> = Vec::new();
    for &gi in &claims.kernels {
        let g = &f.trace.gpu[gi as usize];
        if let Some(&k) = by_name.get(&g.name) {
            if claims.free(gi) {
                free[k] += g.dur;
                mine.push(gi);
            } else {
                taken[k] += g.dur;
            }
        }
    }
    let weight: Vec<f64> = n
        .launches
        .iter()
        .map(|l| {
            l.kernel
                .map_or(0.0, |k| f.per_step_us(free[k]) * l.share_of_kernel)
        })
        .collect();
    let claimed: Vec<f64> = taken.iter().map(|&t| f.per_step_us(t)).collect();
    let c = Ctx {
        n,
        f: Some(f),
        weight,
        claimed,
        step_us: f.step_ns() / 1000.0,
    };
    let out = run(&c);
    if !out.is_empty() {
        for gi in mine {
            claims.take(gi);
        }
    }
    out
}

fn run(c: &Ctx) -> Vec<Finding> {
    let all: Vec<[Option<Issue>; 6]> = c.n.report.kernels.iter().map(issues).collect();
    let claimed = compose(&all);
    (0..ORDER.len())
        .filter_map(|r| finding(c, r, &all, &claimed))
        .collect()
}

/// The diagnosis of an Nsight Compute CSV alone: findings weighted by ncu's own durations, and
/// a verdict from the SOL classification.
pub fn standalone(n: &NcuAnalysis) -> Diagnosis {
    let weight: Vec<f64> = n
        .launches
        .iter()
        .map(|l| l.ncu_ns.unwrap_or(0.0) / 1000.0)
        .collect();
    let total: f64 = weight.iter().sum();
    let c = Ctx {
        n,
        f: None,
        claimed: Vec::new(),
        weight,
        step_us: total,
    };
    let mut findings = run(&c);
    for x in &mut findings {
        x.recoverable_us = super::round3(x.recoverable_us.max(0.0));
    }
    super::rank(&mut findings);
    let mut by: [f64; 5] = [0.0; 5];
    for (k, w) in n.report.kernels.iter().zip(&c.weight) {
        let i = match k.bound {
            Some(Bound::Compute) => 0,
            Some(Bound::Memory) => 1,
            Some(Bound::Latency) => 2,
            Some(Bound::Balanced) => 3,
            None => 4,
        };
        by[i] += w;
    }
    let no_data = n
        .report
        .kernels
        .iter()
        .filter(|k| k.bound.is_none())
        .count();
    let mut parts: Vec<String> = Vec::new();
    if total > 0.0 {
        for (i, label) in ["compute", "memory", "latency", "balanced"]
            .iter()
            .enumerate()
        {
            if by[i] > 0.0 {
                parts.push(format!("{} {label}-bound", pct(by[i] / total)));
            }
        }
    }
    let mut verdict = format!(
        "Nsight Compute only ({} launches, {} under ncu; no timeline, so findings weigh each \
         launch by its ncu duration)",
        n.report.kernels.len(),
        fmt_us_sentence(total)
    );
    if !parts.is_empty() {
        verdict.push_str(&format!(": by time {}", parts.join(", ")));
    }
    if no_data > 0 {
        verdict.push_str(&format!(
            "; {no_data} launch{} without data",
            if no_data == 1 { "" } else { "es" }
        ));
    }
    let measured = n.report.kernels.iter().any(|k| {
        k.theoretical_occupancy_pct.is_some()
            || k.local_memory_ops.is_some()
            || k.bank_conflict_pct.is_some()
            || k.l2_hit_rate_pct.is_some()
            || !k.warp_stalls.is_empty()
            || !k.rules.is_empty()
    });
    if !measured {
        verdict.push_str(
            "; the CSV has no occupancy, spill, bank-conflict, L2, warp-stall or rule data for \
             the ncu rules (profile with `--set full` for them)",
        );
    }
    if let Some(top) = findings.first().filter(|x| x.recoverable_us > 0.0) {
        verdict.push_str(&format!(
            "; largest lead `{}` (up to {})",
            top.id,
            fmt_us_sentence(top.recoverable_us)
        ));
    }
    Diagnosis {
        verdict,
        verdict_class: super::verdict::VerdictClass::NcuOnly,
        findings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::ncu as an;
    use crate::ingest::ncu::{self, WarpStall};

    /// A launch with the given metrics, by parsing a raw-page CSV (the way real input comes).
    fn kernel(cols: &[(&str, &str, f64)]) -> NcuKernel {
        let mut h = String::from("\"ID\",\"Kernel Name\"");
        let mut u = String::from("\"\",\"\"");
        let mut v = String::from("\"0\",\"k(int)\"");
        for (name, unit, val) in cols {
            h.push_str(&format!(",\"{name}\""));
            u.push_str(&format!(",\"{unit}\""));
            v.push_str(&format!(",\"{val}\""));
        }
        let csv = format!("{h}\n{u}\n{v}\n");
        ncu::parse(&csv, "t.csv").unwrap().kernels.remove(0)
    }

    const SM: &str = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
    const MEM: &str = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
    const THEO: &str = "sm__maximum_warps_per_active_cycle_pct";
    const ACH: &str = "sm__warps_active.avg.pct_of_peak_sustained_active";

    #[test]
    fn occupancy_thresholds_and_headroom_cap() {
        // theoretical 22.9 % limited by shared memory, achieved close: fires on the limit;
        // model 1 − 0.229 capped at the SOL headroom 1 − 0.876
        let k = kernel(&[
            (SM, "%", 87.6),
            (MEM, "%", 33.6),
            (THEO, "%", 22.92),
            (ACH, "%", 22.49),
            ("launch__occupancy_limit_shared_mem", "block", 11.0),
            ("launch__occupancy_limit_registers", "block", 36.0),
            ("launch__waves_per_multiprocessor", "", 18.6),
        ]);
        let i = occupancy_issue(&k).expect("fires");
        assert!((i.fraction - 0.124).abs() < 1e-9, "{}", i.fraction);
        assert!(i.modelled);
        assert_eq!(i.causes, vec!["shared_mem".to_string()]);
        assert!(
            i.detail.contains("limited by shared_mem (11 blocks/SM)"),
            "{}",
            i.detail
        );
        // theoretical 100 %, achieved 95 %: a 5-point gap does not fire
        let k = kernel(&[
            (SM, "%", 50.0),
            (MEM, "%", 40.0),
            (THEO, "%", 100.0),
            (ACH, "%", 95.0),
        ]);
        assert!(occupancy_issue(&k).is_none());
        // exactly 10 points: ncu's rule needs more than 10
        let k = kernel(&[
            (SM, "%", 50.0),
            (MEM, "%", 40.0),
            (THEO, "%", 100.0),
            (ACH, "%", 90.0),
        ]);
        assert!(occupancy_issue(&k).is_none());
        // a small grid: achieved 6.2 of 100, waves 0.02 → 1 − 0.062, headroom 0.98
        let k = kernel(&[
            (SM, "%", 0.7),
            (MEM, "%", 1.3),
            (THEO, "%", 100.0),
            (ACH, "%", 6.2),
            ("launch__waves_per_multiprocessor", "", 0.02),
        ]);
        let i = occupancy_issue(&k).unwrap();
        assert!((i.fraction - 0.938).abs() < 1e-9);
        assert_eq!(i.causes, vec!["small_grid".to_string()]);
        // no SOL metrics and no ncu estimate: no bound
        let k = kernel(&[(THEO, "%", 50.0), (ACH, "%", 20.0)]);
        let i = occupancy_issue(&k).unwrap();
        assert_eq!(i.fraction, 0.0);
        assert!(!i.modelled);
    }

    #[test]
    fn ncu_speedup_wins_over_the_model() {
        let mut k = kernel(&[
            (SM, "%", 30.0),
            (MEM, "%", 20.0),
            (THEO, "%", 50.0),
            (ACH, "%", 48.0),
        ]);
        k.rules.push(NcuRule {
            section: "Occupancy".into(),
            name: "Occupancy".into(),
            kind: "OPT".into(),
            message: "This kernel's theoretical occupancy (50.0%) is limited by the number of \
                      required registers. See the guide."
                .into(),
            speedup_pct: Some(25.0),
            speedup_type: Some("local".into()),
        });
        let i = occupancy_issue(&k).unwrap();
        assert_eq!(i.ncu_speedup_pct, Some(25.0));
        assert!((i.fraction - 0.25).abs() < 1e-9);
        assert_eq!(i.rules, vec![0]);
        // capped by the headroom when ncu's estimate exceeds it
        k.rules[0].speedup_pct = Some(90.0);
        assert!((occupancy_issue(&k).unwrap().fraction - 0.7).abs() < 1e-9);
        // its message goes to the occupancy family, not to "other"
        assert!(other_rules_issue(&k).is_none());
    }

    #[test]
    fn spills_conflicts_l2_thresholds() {
        let k = kernel(&[("sass__inst_executed_local_loads", "inst", 0.0)]);
        assert!(spill_issue(&k).is_none());
        let k = kernel(&[
            ("sass__inst_executed_local_loads", "inst", 120.0),
            ("sass__inst_executed_local_stores", "inst", 40.0),
            ("launch__registers_per_thread", "register/thread", 255.0),
        ]);
        let i = spill_issue(&k).unwrap();
        assert_eq!(i.fraction, 0.0, "no ncu estimate: no bound");
        assert!(i.detail.contains("160 local-memory"), "{}", i.detail);

        let conflicts = |c: f64, w: f64| {
            kernel(&[
                (
                    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                    "",
                    c,
                ),
                (
                    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                    "",
                    w,
                ),
            ])
        };
        assert!(bank_conflict_issue(&conflicts(9.0, 100.0)).is_none());
        let i = bank_conflict_issue(&conflicts(10.0, 100.0)).unwrap();
        assert!((i.fraction - 0.10).abs() < 1e-9);
        assert!(i.modelled);

        let l2 = |hit: f64, sm: f64, mem: f64| {
            kernel(&[
                (SM, "%", sm),
                (MEM, "%", mem),
                ("lts__t_sector_hit_rate.pct", "%", hit),
            ])
        };
        assert!(l2_issue(&l2(30.0, 20.0, 90.0)).is_some());
        assert!(l2_issue(&l2(60.0, 20.0, 90.0)).is_none(), "hit rate fine");
        assert!(l2_issue(&l2(30.0, 90.0, 20.0)).is_none(), "compute-bound");
    }

    #[test]
    fn warp_stalls_per_issue_shares() {
        let k = kernel(&[
            (
                "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
                "",
                6.0,
            ),
            (
                "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
                "",
                2.0,
            ),
            (
                "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio",
                "",
                1.0,
            ),
            ("smsp__average_warp_latency_per_inst_issued.ratio", "", 10.0),
            ("smsp__issue_active.avg.per_cycle_active", "", 0.3),
        ]);
        let s = stall_shares(&k);
        assert_eq!(s[0].0, "long_scoreboard");
        assert!((s[0].1 - 0.6).abs() < 1e-9);
        let i = stall_issue(&k).unwrap();
        assert_eq!(i.causes, vec!["long_scoreboard".to_string()]);
        assert_eq!(i.fraction, 0.0);
        // schedulers issuing 0.9 per cycle: stalls are not the problem
        let mut busy = k.clone();
        busy.metrics
            .insert("smsp__issue_active.avg.per_cycle_active".into(), 0.9);
        assert!(stall_issue(&busy).is_none());
        // PC-sampling shares are used as they are
        let mut s = kernel(&[]);
        s.warp_stalls = vec![WarpStall {
            reason: "barrier".into(),
            value: 0.25,
        }];
        assert!(stall_issue(&s).is_none());
        s.warp_stalls[0].value = 0.45;
        assert_eq!(stall_issue(&s).unwrap().causes, vec!["barrier".to_string()]);
    }

    #[test]
    fn findings_compose_per_launch() {
        let mk = |f: f64| {
            Some(Issue {
                fraction: f,
                ncu_speedup_pct: None,
                modelled: true,
                detail: String::new(),
                causes: vec![],
                rules: vec![],
            })
        };
        let c = compose(&[[None, mk(0.5), None, mk(0.5), None, mk(1.0)]]);
        assert_eq!(c[0], [0.0, 0.5, 0.0, 0.25, 0.0, 0.25]);
        assert!((c[0].iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn beside_a_trace_claims_only_unclaimed_kernel_time() {
        use crate::model::{build::TraceBuilder, GpuKind};
        // 3 GPU-bound steps: an FP32 GEMM (1 ms, claimed by `fp32-matmul`) and a custom kernel
        // (200 µs); each step ends with a device sync, so the host waits for the device
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        let (mut host, mut gpu) = (0.0, 50.0);
        for s in 0..3 {
            let start = host;
            for (op, k, dur) in [
                ("aten::mm", "ampere_sgemm_128x64_tn", 1000.0),
                ("aten::add", "void my_kernel<4>(float *)", 200.0),
            ] {
                let ext = b.op(op, host, 4.0);
                let c = b.runtime("cudaLaunchKernel", ext, host + 1.0, 2.0);
                b.gpu(GpuKind::Kernel, k, 0, 7, gpu, dur, c);
                host += 5.0;
                gpu += dur + 1.0;
            }
            b.runtime("cudaDeviceSynchronize", 0, host, gpu - host);
            host = gpu + 5.0;
            gpu = host + 50.0;
            b.annotation(&format!("ProfilerStep#{s}"), start, host - start);
        }
        let t = b.build();
        let csv = "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\
\"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum\",\
\"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum\"\n\"\",\"\",\"usecond\",\"\",\"\"\n\
\"0\",\"ampere_sgemm_128x64_tn\",\"1000\",\"50\",\"100\"\n\
\"1\",\"void my_kernel<4>(float *)\",\"200\",\"25\",\"100\"\n\
\"2\",\"not_in_the_trace\",\"50\",\"40\",\"100\"\n";
        let r = ncu::parse(csv, "k.csv").unwrap();
        let mut a = super::super::testutil::analysis(&t);
        a.ncu = Some(an::joined(&t, &a.selection, a.steps.steps.len(), &r));
        let d = super::super::diagnose(&t, &a);
        assert!(super::super::testutil::find(&d, "fp32-matmul").is_some());
        let x = super::super::testutil::find(&d, "ncu-bank-conflicts").expect("finding");
        // only my_kernel's 200 µs per step is unclaimed: 25 % of it
        assert!(
            (x.recoverable_us - 50.0).abs() < 0.01,
            "{}",
            x.recoverable_us
        );
        assert!((x.evidence.metrics["claimed_elsewhere_us_per_step"] - 1000.0).abs() < 0.01);
        assert!(x
            .evidence
            .facts
            .iter()
            .any(|f| f.contains("1 of these launches match no kernel")));
        assert_eq!(x.evidence.locations[0].name, "void my_kernel<4>(float *)");
    }

    #[test]
    fn standalone_weighs_ncu_durations() {
        // two launches of 100 µs and 300 µs: conflicts 20 % on the first only
        let csv = "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\
\"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum\",\
\"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum\"\n\"\",\"\",\"usecond\",\"\",\"\"\n\
\"0\",\"a\",\"100\",\"20\",\"100\"\n\"1\",\"b\",\"300\",\"0\",\"100\"\n";
        let r = ncu::parse(csv, "k.csv").unwrap();
        let d = standalone(&an::standalone(&r));
        assert_eq!(d.findings.len(), 1);
        let x = &d.findings[0];
        assert_eq!(x.id, "ncu-bank-conflicts");
        assert!(
            (x.recoverable_us - 20.0).abs() < 1e-9,
            "{}",
            x.recoverable_us
        );
        // 20 of 400 µs = 5 %
        assert_eq!(x.severity, Severity::Medium);
        assert!(d.verdict.contains("2 launches"), "{}", d.verdict);
    }
}
