//! The per-rank table of a folder of ranks laid out once: each rank's per-step split of its
//! main device, formatted, and the terminal's single unit for the table.

use crate::report::ranks::{RankRow, RanksSection};
use crate::report::units::fmt_us;

/// One rank's cells.
#[derive(Debug, Clone)]
pub struct RankLine<'a> {
    /// The rank's row (raw values).
    pub row: &'a RankRow,
    /// Its file's name, distinct among the ranks (raw).
    pub name: String,
    /// Whether it is the slowest rank.
    pub slowest: bool,
    /// Computation, exposed comm, overlapped comm and idle per step, µs.
    pub per_step_us: [f64; 4],
    /// The same, formatted.
    pub per_step: [String; 4],
    /// Its step time, formatted.
    pub step: String,
}

/// Every rank, in the section's order.
pub fn lines(sec: &RanksSection) -> Vec<RankLine<'_>> {
    sec.ranks
        .iter()
        .zip(sec.distinct_names())
        .map(|(row, name)| {
            let per_step_us = [
                row.computation_us,
                row.exposed_comm_us,
                row.overlapped_comm_us,
                row.idle_us,
            ]
            .map(|v| row.per_step(v));
            RankLine {
                row,
                name,
                slowest: row.rank == sec.slowest_rank,
                per_step_us,
                per_step: per_step_us.map(fmt_us),
                step: fmt_us(row.step_time_us),
            }
        })
        .collect()
}

/// One unit for a whole table of step times: `ms` unless the median step is under 1 ms, with
/// the divisor from µs.
pub fn table_unit(median_step_us: f64) -> (&'static str, f64) {
    if median_step_us >= 1000.0 {
        ("ms", 1000.0)
    } else {
        ("µs", 1.0)
    }
}

/// µs in a table's unit ([`table_unit`]) with two decimals, no unit.
pub fn in_unit(us: f64, divisor: f64) -> String {
    format!("{:.2}", us / divisor)
}
