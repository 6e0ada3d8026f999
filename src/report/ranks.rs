//! The `ranks` section of a folder's report: the per-rank table, the cross-rank verdict and
//! findings, and which rank's full report surrounds it. Built from
//! [`crate::analysis::ranks::RankSummary`]; it only converts units (ns → µs) and names.

use std::collections::BTreeMap;

use serde::Serialize;

use super::mirrors::FindingInfo;
use super::us;
use crate::analysis::ranks::{Matching, RankFacts, RankSource, RankSummary};
use crate::diagnose::ranks::RanksDiagnosis;

/// The multi-rank part of a folder's report (docs/json-report.md, `ranks`).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct RanksSection {
    /// The folder as given.
    pub folder: String,
    /// Rank files analysed.
    pub count: usize,
    /// Files loaded and analysed at once.
    pub jobs: usize,
    /// Whose full report this is.
    pub shown: ShownRank,
    /// Rank with the largest step time (ties: the lower rank).
    pub slowest_rank: i64,
    /// Rank with the smallest step time.
    pub fastest_rank: i64,
    /// Median of the ranks' step times, µs.
    pub median_step_time_us: f64,
    /// Slowest step time ÷ median.
    pub spread: f64,
    /// Median exposed communication per step over the ranks, µs.
    pub median_exposed_comm_us: f64,
    /// One line about the ranks.
    pub verdict: String,
    /// Cross-rank findings (`rank-straggler`, `comm-imbalance`), by recoverable time.
    pub findings: Vec<FindingInfo>,
    /// One row per rank file, by rank then path.
    pub ranks: Vec<RankRow>,
    /// Files that could not be analysed.
    pub skipped: Vec<SkippedFile>,
    /// Ranks found in more than one file (not spans of one process).
    pub duplicates: Vec<DuplicateRank>,
    /// Ranks captured several times by one process (a repeating profiler schedule): each is
    /// one row of `ranks`, its captures listed here.
    pub spans: Vec<RankSpansInfo>,
    /// Folder entries that are not trace files (other extensions, hidden files, folders).
    pub ignored_files: usize,
    /// Collectives matched across the ranks and who arrived last (`null` with fewer than two
    /// ranks or no collective on some rank).
    #[serde(default)]
    pub arrivals: Option<ArrivalsInfo>,
    /// What the reader should know about the comparison (windows over different steps).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// Collectives matched across the ranks (see `analysis::ranks::Arrivals`).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ArrivalsInfo {
    /// Collectives found on every rank.
    pub matched: usize,
    /// Distinct steps among them.
    pub steps: usize,
    /// `group_seq`, `comms_id`, `step_name_order` or `name_order`; `mixed` when collectives
    /// were matched by several (each by the strongest key it has on every rank).
    #[serde(deserialize_with = "crate::text::static_words::one")]
    pub matching: crate::text::static_words::Word,
    /// Collectives matched by each key (`group_seq`, `comms_id`, `step_name_order`,
    /// `name_order`; the keys that matched none left out).
    #[serde(default)]
    pub matched_by: BTreeMap<String, usize>,
    /// `device` (collective kernels) or `host` (gloo/MPI/UCC spans).
    #[serde(deserialize_with = "crate::text::static_words::one")]
    pub side: crate::text::static_words::Word,
    /// The collectives' name when they all have the same one, else `""`.
    pub name: String,
    /// True when the clocks were aligned on the collectives' ends; else durations compared.
    pub clocks_aligned: bool,
    /// True when the trace clocks were consistent as they are (no offset estimated).
    pub shared_clock: bool,
    /// Median spread of the aligned ends, µs.
    pub clock_residual_us: f64,
    /// Per rank, in the order of `ranks`.
    pub ranks: Vec<ArrivalRow>,
}

/// One rank's arrivals.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ArrivalRow {
    /// Rank.
    pub rank: i64,
    /// Its clock offset from the first rank's, µs (0 when not aligned).
    pub clock_offset_us: f64,
    /// Collectives at which it arrived last.
    pub last: usize,
    /// Time it waited in the matched collectives, µs (window total).
    pub waited_us: f64,
    /// The other ranks' wait at the collectives where it arrived last, µs (window total).
    pub caused_us: f64,
    /// Its own time before the matched collectives, µs (window total).
    pub before_us: f64,
    /// What it did more than the other ranks per step before the collectives, when it
    /// arrived last at some (`` `DistributedDataParallel.forward` +29.73 ms/step ``).
    #[serde(default)]
    pub own_cause: Option<String>,
}

/// Whose full report surrounds the `ranks` section.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ShownRank {
    /// Rank.
    pub rank: i64,
    /// Its file.
    pub path: String,
    /// `slowest`, or `requested` (`--rank`).
    #[serde(deserialize_with = "crate::text::static_words::one")]
    pub why: crate::text::static_words::Word,
    /// Its part in the measured arrivals, when it has one: whom it waited for, or that the
    /// others waited for it (`crate::diagnose::ranks::rank_story`). Its own report, around
    /// the section, stays that of the rank alone.
    #[serde(default)]
    pub story: Option<String>,
}

/// One rank of the table. Time fields are window totals of the rank's main device, the same
/// numbers as that rank's own report (`gpu_timeline`); divide by `steps` for per-step values.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct RankRow {
    /// Rank.
    pub rank: i64,
    /// `distributed_info`, `file_name` or `order`.
    pub rank_source: RankSource,
    /// The file.
    pub path: String,
    /// `distributedInfo.world_size`, if recorded.
    pub world_size: Option<i64>,
    /// Steps in the analysed window.
    pub steps: usize,
    /// Mean step duration, µs (the rank's `step_time_us`).
    pub step_time_us: f64,
    /// Counted time of the window, µs (the rank's `window.duration_us`).
    pub window_us: f64,
    /// Main device (the one with the most busy time), null without device work.
    pub device: Option<i64>,
    /// Its utilization over the window, 0..1.
    pub utilization: Option<f64>,
    /// GPU-timeline span, µs.
    pub total_us: f64,
    /// Computation, µs.
    pub computation_us: f64,
    /// Communication not overlapped by computation, µs.
    pub exposed_comm_us: f64,
    /// Communication overlapped by computation, µs.
    pub overlapped_comm_us: f64,
    /// Copies not overlapped, µs.
    pub exposed_memcpy_us: f64,
    /// Idle, µs.
    pub idle_us: f64,
    /// The first finding of the rank's own report.
    pub top_finding: Option<TopFindingInfo>,
    /// Captures merged into this row (1 for one file; more for spans of one process, see
    /// `spans`).
    pub spans: usize,
}

/// The captures of one rank by one process.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct RankSpansInfo {
    /// Rank.
    pub rank: i64,
    /// Process id.
    pub pid: i64,
    /// Captures by start.
    pub spans: Vec<SpanInfo>,
    /// What differs between them.
    pub notes: Vec<String>,
}

/// One capture of a rank.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct SpanInfo {
    /// The file.
    pub path: String,
    /// Start, µs after the first span's start.
    pub offset_us: f64,
    /// Steps in its window.
    pub steps: usize,
    /// First step of its window.
    pub first_step: String,
    /// Last step of its window.
    pub last_step: String,
    /// Mean step time, µs.
    pub step_time_us: f64,
    /// torch.compile/autotune work in it, µs.
    pub compile_us: f64,
}

impl RankSpansInfo {
    /// The heading of the per-span table: `Spans of rank 0 (2 captures of process 25738, one
    /// row above)`.
    pub fn title(&self) -> String {
        format!(
            "Spans of rank {} ({} captures of process {}, one row above)",
            self.rank,
            self.spans.len(),
            self.pid
        )
    }
}

impl SpanInfo {
    /// The cells of the per-span table after the span's number and file, as every renderer
    /// shows them: start after the first span (`+470.04 s`), steps (`6 (ProfilerStep#5 …
    /// ProfilerStep#10)`), mean step time, compile work (`-` without). Names are raw.
    pub fn cells(&self) -> [String; 4] {
        use super::fmt_us;
        let steps = if self.first_step == self.last_step {
            self.first_step.clone()
        } else {
            format!("{} … {}", self.first_step, self.last_step)
        };
        [
            format!("+{}", fmt_us(self.offset_us)),
            format!("{} ({steps})", self.steps),
            fmt_us(self.step_time_us),
            if self.compile_us > 0.0 {
                fmt_us(self.compile_us)
            } else {
                "-".into()
            },
        ]
    }
}

/// Columns of the arrivals table ([`RanksSection::arrival_table`]).
pub const ARRIVAL_COLUMNS: [&str; 5] = ["rank", "last", "wait caused", "waited", "own cause"];

/// Columns of the per-span table.
pub const SPAN_COLUMNS: [&str; 6] = ["span", "file", "starts", "steps", "step time", "compile"];

impl RankRow {
    /// A window total as a per-step value (÷ steps, at least 1).
    pub fn per_step(&self, total_us: f64) -> f64 {
        total_us / self.steps.max(1) as f64
    }
}

/// A rank's own top finding.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct TopFindingInfo {
    /// Rule id.
    pub id: String,
    /// Severity.
    #[serde(deserialize_with = "crate::text::static_words::one")]
    pub severity: crate::text::static_words::Word,
    /// µs per step.
    pub recoverable_us: f64,
    /// Title.
    pub title: String,
}

/// A rank file that could not be analysed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct SkippedFile {
    /// The file.
    pub path: String,
    /// Why (one line, naming the file).
    pub error: String,
}

/// A rank number claimed by several files.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct DuplicateRank {
    /// Rank.
    pub rank: i64,
    /// Its files.
    pub files: Vec<String>,
}

impl RankRow {
    fn new(r: &RankFacts) -> RankRow {
        RankRow {
            rank: r.rank,
            rank_source: r.rank_source,
            path: r.path.clone(),
            world_size: r.world_size,
            steps: r.steps,
            step_time_us: r.step_time / 1000.0,
            window_us: us(r.window),
            device: r.device,
            utilization: r.utilization,
            total_us: us(r.timeline_total),
            computation_us: us(r.computation),
            exposed_comm_us: us(r.exposed_comm),
            overlapped_comm_us: us(r.overlapped_comm),
            exposed_memcpy_us: us(r.exposed_memcpy),
            idle_us: us(r.idle),
            top_finding: r.top_finding.as_ref().map(|t| TopFindingInfo {
                id: t.id.clone(),
                severity: t.severity,
                recoverable_us: t.recoverable_us,
                title: t.title.clone(),
            }),
            spans: r.spans,
        }
    }
}

impl RanksSection {
    /// Builds the section.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        folder: &str,
        s: &RankSummary,
        d: RanksDiagnosis,
        shown: &RankFacts,
        requested: bool,
        jobs: usize,
        skipped: Vec<SkippedFile>,
        ignored_files: usize,
    ) -> RanksSection {
        let story = crate::diagnose::ranks::rank_story(s, &d, shown.rank);
        let a = &d.arrivals;
        RanksSection {
            folder: folder.to_string(),
            count: s.ranks.iter().map(|r| r.spans).sum(),
            jobs,
            shown: ShownRank {
                rank: shown.rank,
                path: shown.path.clone(),
                why: if requested { "requested" } else { "slowest" },
                story,
            },
            slowest_rank: s.ranks[s.slowest].rank,
            fastest_rank: s.ranks[s.fastest].rank,
            median_step_time_us: s.median_step / 1000.0,
            spread: s.spread,
            median_exposed_comm_us: s.median_exposed_comm / 1000.0,
            verdict: d.verdict,
            findings: d.findings.iter().map(FindingInfo::from).collect(),
            ranks: s.ranks.iter().map(RankRow::new).collect(),
            skipped,
            duplicates: s
                .duplicates
                .iter()
                .map(|(rank, files)| DuplicateRank {
                    rank: *rank,
                    files: files.clone(),
                })
                .collect(),
            spans: s
                .spans
                .iter()
                .map(|g| RankSpansInfo {
                    rank: g.rank,
                    pid: g.pid,
                    spans: g
                        .spans
                        .iter()
                        .map(|p| SpanInfo {
                            path: p.path.clone(),
                            offset_us: us(p.offset),
                            steps: p.steps,
                            first_step: p.first_step.clone(),
                            last_step: p.last_step.clone(),
                            step_time_us: p.step_time / 1000.0,
                            compile_us: us(p.compile),
                        })
                        .collect(),
                    notes: g.notes.clone(),
                })
                .collect(),
            ignored_files,
            arrivals: (a.matched > 0).then(|| ArrivalsInfo {
                matched: a.matched,
                steps: a.steps,
                matching: match a.matching {
                    Matching::GroupSeq => "group_seq",
                    Matching::CommsId => "comms_id",
                    Matching::NameOrder => "name_order",
                    Matching::Mixed => "mixed",
                    _ => "step_name_order",
                },
                matched_by: ["group_seq", "comms_id", "step_name_order", "name_order"]
                    .iter()
                    .zip(a.by)
                    .filter(|(_, n)| *n > 0)
                    .map(|(k, n)| (k.to_string(), n))
                    .collect(),
                side: if a.host { "host" } else { "device" },
                name: a.name.clone(),
                clocks_aligned: a.aligned,
                shared_clock: a.shared_clock,
                clock_residual_us: us(a.residual.unwrap_or(0)),
                ranks: s
                    .ranks
                    .iter()
                    .enumerate()
                    .map(|(i, r)| ArrivalRow {
                        rank: r.rank,
                        clock_offset_us: us(a.offsets[i]),
                        last: a.last[i],
                        waited_us: us(a.waited[i]),
                        caused_us: us(a.caused[i]),
                        before_us: us(a.before[i]),
                        own_cause: d.own_causes.get(i).cloned().flatten(),
                    })
                    .collect(),
            }),
            notes: d.notes,
        }
    }

    /// The arrivals as the terminal and Markdown renderers show them (under `Arrivals`): what
    /// was matched, and one row of
    /// [`ARRIVAL_COLUMNS`] cells per rank (times last of the matched collectives, the wait it
    /// caused the others and the time it waited, per step of its window, its own cause cut to
    /// 56 characters so that the table fits in 100 columns). `None` without matched
    /// collectives.
    pub fn arrival_table(&self) -> Option<(String, Vec<[String; 5]>)> {
        let a = self.arrivals.as_ref()?;
        let per_step = |row: &ArrivalRow, v: f64| {
            let steps = self
                .ranks
                .iter()
                .find(|r| r.rank == row.rank)
                .map_or(1, |r| r.steps.max(1));
            super::fmt_us(v / steps as f64)
        };
        let rows = a
            .ranks
            .iter()
            .map(|r| {
                [
                    r.rank.to_string(),
                    format!("{} of {}", r.last, a.matched),
                    per_step(r, r.caused_us),
                    per_step(r, r.waited_us),
                    r.own_cause
                        .as_deref()
                        .map_or("-".into(), |c| crate::text::shorten_middle(c, 56)),
                ]
            })
            .collect();
        let what = if a.name.is_empty() {
            String::new()
        } else {
            format!("{} ", a.name)
        };
        let title = format!(
            "{} {what}collective{} matched on every rank ({} side); per step",
            a.matched,
            if a.matched == 1 { "" } else { "s" },
            a.side
        );
        Some((title, rows))
    }

    /// The file names of the rows without what they all share: the common prefix and suffix,
    /// each cut back to a `_`, `-` or `.` boundary (`worker3_step_12…` rather than the whole
    /// `et_replay__…__worker3_step_12.pt.trace.json.gz`). One row: the file name.
    pub fn distinct_names(&self) -> Vec<String> {
        let names: Vec<String> = self
            .ranks
            .iter()
            .map(|r| crate::text::file_name(&r.path))
            .collect();
        if names.len() < 2 {
            return names;
        }
        let chars: Vec<Vec<char>> = names.iter().map(|n| n.chars().collect()).collect();
        let min_len = chars.iter().map(|c| c.len()).min().unwrap_or(0);
        let sep = |c: char| matches!(c, '_' | '-' | '.');
        let mut pre = 0;
        while pre < min_len && chars.iter().all(|c| c[pre] == chars[0][pre]) {
            pre += 1;
        }
        // keep whole words: back to just after a separator
        while pre > 0 && !sep(chars[0][pre - 1]) {
            pre -= 1;
        }
        let mut suf = 0;
        while suf < min_len - pre
            && chars
                .iter()
                .all(|c| c[c.len() - 1 - suf] == chars[0][chars[0].len() - 1 - suf])
        {
            suf += 1;
        }
        while suf > 0 && !sep(chars[0][chars[0].len() - suf]) {
            suf -= 1;
        }
        let out: Vec<String> = chars
            .iter()
            .map(|c| c[pre..c.len() - suf].iter().collect())
            .collect();
        if out.iter().any(|s: &String| s.is_empty()) {
            names
        } else {
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::ranks::{summarize, tests::facts};

    fn section(paths: &[&str]) -> RanksSection {
        let f: Vec<RankFacts> = paths
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut x = facts(i as i64, 10.0, 1.0);
                x.path = p.to_string();
                x
            })
            .collect();
        let s = summarize(f);
        let d = crate::diagnose::ranks::diagnose_ranks(&s);
        let shown = s.ranks[0].clone();
        RanksSection::new("dir", &s, d, &shown, false, 2, vec![], 0)
    }

    #[test]
    fn distinct_names_strip_common_words() {
        let s = section(&[
            "d/et__dlrm__worker0_step_12.1694128201545.pt.trace.json.gz",
            "d/et__dlrm__worker1_step_12.1694128201556.pt.trace.json.gz",
        ]);
        assert_eq!(
            s.distinct_names(),
            [
                "worker0_step_12.1694128201545",
                "worker1_step_12.1694128201556"
            ]
        );
        let s = section(&["d/rank0.json", "d/rank1.json"]);
        assert_eq!(s.distinct_names(), ["rank0", "rank1"]);
        let s = section(&["d/only.json"]);
        assert_eq!(s.distinct_names(), ["only.json"]);
    }
}
