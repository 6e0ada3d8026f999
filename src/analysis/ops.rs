//! Operator table, like `torch.profiler`'s `key_averages()`.
//!
//! SKELETON: to be implemented (see the brief).

use crate::model::{Interval, Ns, Trace};

/// One operator name's statistics.
#[derive(Clone, Debug, PartialEq)]
pub struct OpRow {
    /// Operator name.
    pub name: String,
    /// Calls.
    pub calls: u64,
    /// Host time minus children and own runtime calls, ns.
    pub host_self: Ns,
    /// Host duration, ns.
    pub host_total: Ns,
    /// Device time of kernels/copies/fills launched by the op itself, ns.
    pub device_self: Ns,
    /// Device time launched by the op and its descendants, ns.
    pub device_total: Ns,
}

/// Rows by device self time descending (then host total).
pub fn op_table(_trace: &Trace, _window: Interval) -> Vec<OpRow> {
    todo!("ops")
}
