//! Collective message sizes and algorithmic bandwidth per collective kernel name.
//!
//! Kineto copies a collective's arguments from its `record_param_comms` onto the collective
//! kernel (`In msg nelems`, `Out msg nelems`, `dtype`; [`crate::model::CommArgs`]); a kernel
//! without them takes those of its `record_param_comms` by External id. Per collective
//! kernel name over the window:
//!
//! * **Bytes per call**: the message size of a call is the larger of its input and output
//!   element counts times the dtype's size (an all-reduce's buffer; an all-gather's gathered
//!   output; a reduce-scatter's input: the size nccl-tests calls `size`); the mean over the
//!   calls that record it.
//! * **Algorithmic bandwidth**: the recorded bytes of those calls ÷ their kernel time (GB/s,
//!   10^9 bytes/s; nccl-tests' `algbw`). The kernel time includes any wait for the last rank
//!   to arrive, so on a rank that waits it is below the link's rate.
//! * Calls without a size (Kineto before April 2026 wrote none on GPU collective kernels,
//!   kineto #1354; a `dtype` stallscope does not know) are counted apart: with none
//!   recorded, bytes and bandwidth are unknown, and the capture check's
//!   `nccl-sizes-unrecorded` says so beside the figure.

use serde::Serialize;

use crate::model::{classify, fast::NameMemo, CommArgs, GpuKind, Trace};
use crate::window::Window;

/// One collective kernel name's calls, size and bandwidth over the window.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct CollectiveSize {
    /// Kernel name.
    pub name: String,
    /// Calls in the window.
    pub calls: u64,
    /// Their kernel time, ns.
    pub time: i64,
    /// Calls that record a message size.
    pub sized_calls: u64,
    /// Mean message bytes per sized call (`None` without one).
    pub bytes_per_call: Option<f64>,
    /// Recorded bytes ÷ kernel time of the sized calls, GB/s (`None` without one).
    pub algbw_gbps: Option<f64>,
}

/// The message bytes a collective's arguments record, if they do.
pub fn message_bytes(trace: &Trace, c: &CommArgs) -> Option<u64> {
    let n = c.in_nelems.max(c.out_nelems)?;
    let size = CommArgs::dtype_bytes(trace.name(c.dtype?))?;
    Some(n.saturating_mul(size))
}

/// The arguments of a collective kernel: its own, else its `record_param_comms`'s.
pub fn args_of<'t>(trace: &'t Trace, g: &crate::model::GpuEvent) -> Option<&'t CommArgs> {
    trace
        .kernel_comms
        .get(&g.correlation)
        .or_else(|| trace.op_comms.get(&g.external_id))
}

/// Calls, sizes and bandwidth per collective kernel name in the window (by time, longest
/// first; empty without collective kernels).
pub fn collective_sizes(trace: &Trace, w: &Window) -> Vec<CollectiveSize> {
    let mut memo = NameMemo::new(trace, classify::is_collective_kernel);
    // (name, calls, time, sized calls, sized bytes, sized time): few names, a short list
    let mut rows: Vec<(crate::model::NameId, u64, i64, u64, u64, i64)> = Vec::new();
    for g in &trace.gpu {
        if g.kind != GpuKind::Kernel
            || !memo.get(g.name)
            || w.mask.covered_within(g.interval()) == 0
        {
            continue;
        }
        let i = match rows.iter().position(|r| r.0 == g.name) {
            Some(i) => i,
            None => {
                rows.push((g.name, 0, 0, 0, 0, 0));
                rows.len() - 1
            }
        };
        let r = &mut rows[i];
        r.1 += 1;
        r.2 += g.dur;
        if let Some(b) = args_of(trace, g).and_then(|c| message_bytes(trace, c)) {
            r.3 += 1;
            r.4 = r.4.saturating_add(b);
            r.5 += g.dur;
        }
    }
    let mut out: Vec<CollectiveSize> = rows
        .into_iter()
        .map(
            |(n, calls, time, sized, bytes, sized_time)| CollectiveSize {
                name: trace.name(n).to_string(),
                calls,
                time,
                sized_calls: sized,
                bytes_per_call: (sized > 0).then(|| bytes as f64 / sized as f64),
                algbw_gbps: (sized > 0 && sized_time > 0).then(|| bytes as f64 / sized_time as f64),
            },
        )
        .collect();
    out.sort_by(|a, b| b.time.cmp(&a.time).then(a.name.cmp(&b.name)));
    out
}
