//! Where a capture's device records stop: the launch calls in start order, each with or
//! without a device record, and the moment after which most of them have none.
//!
//! Profilers lose device records (nsys/CUPTI buffers full, roctracer's event cap, the torch
//! 2.12 `ts 0, dur 0` export defect): the launch calls are in the trace, their kernels are
//! not. When this happens from some moment on, the part before it is a complete capture and
//! the part after it is not. [`stop_of`] finds that moment:
//!
//! * the launches counted are kernel, copy and fill launch calls (runtime or driver), outside
//!   a CUDA/HIP graph capture (whose launches run nothing), that take at least [`NOOP_CALL`]
//!   (shorter calls enqueue nothing);
//! * scoring each launch +1 with a device record and −1 without, the stop is the first
//!   launch after the last maximum of the running sum: before it the records are as complete
//!   as they get, from it on they are missing at least as often as present;
//! * it is a stop only when at least [`STOP_MIN_UNRECORDED`] launches from it on, and most
//!   of them (over half), have no record, while at most 1 % of the launches before it lack
//!   one.
//!
//! [`crate::window::steps`] cuts the steps there when enough complete steps remain before
//! it (see its *Steps* rules), and the capture check names the cut.

use crate::model::fast::NameMemo;
use crate::model::{CpuKind, Ns, Trace};

/// Launch calls shorter than this (ns) enqueued nothing: they are not expected to have a
/// device record.
pub const NOOP_CALL: Ns = 1_000;

/// Launches without a device record from the stop on needed to call it a stop.
pub const STOP_MIN_UNRECORDED: u64 = 10;

/// Complete `ProfilerStep`s (or server iterations) needed before the stop to cut the steps
/// there (fewer: nothing is cut and the capture check marks the device records incomplete).
pub const STOP_MIN_STEPS: usize = 2;

/// Launches with their records needed before the stop to cut a trace without step marks
/// there (its one step).
pub const STOP_MIN_LAUNCHES: u64 = 100;

/// What a host call launches on the device: 0 nothing, 1 a kernel, 2 a copy, 3 a fill;
/// 4 and 5 open and close a graph capture (its launches run nothing).
pub fn launch_class(name: &str) -> u8 {
    if name.contains("StreamBeginCapture") {
        4
    } else if name.contains("StreamEndCapture") {
        5
    } else if name.contains("LaunchKernel") || name.contains("LaunchCooperativeKernel") {
        1
    } else if name.contains("Memcpy") {
        2
    } else if name.contains("Memset") {
        3
    } else {
        0
    }
}

/// One kernel, copy or fill launch call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    /// Start of the call.
    pub start: Ns,
    /// What it launches: 1 a kernel, 2 a copy, 3 a fill ([`launch_class`]).
    pub class: u8,
    /// Whether a device activity of the trace links to it.
    pub recorded: bool,
}

/// The kernel, copy and fill launch calls of a trace (see the module docs for which count),
/// in start order.
pub fn launches(trace: &Trace) -> Vec<Launch> {
    let mut recorded = vec![false; trace.cpu.len()];
    for g in trace.gpu.iter().filter(|g| g.is_activity()) {
        if let Some(r) = recorded.get_mut(g.launch as usize) {
            *r = true;
        }
    }
    let mut memo = NameMemo::new(trace, launch_class);
    let mut capturing: Vec<u32> = Vec::new();
    let mut out = Vec::new();
    for (i, e) in trace.cpu.iter().enumerate() {
        if !matches!(
            e.kind,
            CpuKind::Runtime | CpuKind::Driver | CpuKind::OtherRuntime
        ) {
            continue;
        }
        match memo.get(e.name) {
            0 => {}
            4 => {
                if !capturing.contains(&e.thread) {
                    capturing.push(e.thread);
                }
            }
            5 => capturing.retain(|t| *t != e.thread),
            _ if capturing.contains(&e.thread) => {}
            // a call that returns in under 1 µs enqueued nothing (zero-size copies and fills
            // return at once: 22 `cudaMemsetAsync` of 0.1-0.3 µs in samples/h100_bert_small)
            _ if e.dur < NOOP_CALL => {}
            c => out.push(Launch {
                start: e.start,
                class: c,
                recorded: recorded[i],
            }),
        }
    }
    if !out.is_sorted_by_key(|l| l.start) {
        out.sort_by_key(|l| l.start);
    }
    out
}

/// Where device records stop (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordsStop {
    /// Start of the first launch of the part without records.
    pub at: Ns,
    /// Launches before it, and those of them without a record.
    pub before: u64,
    /// Launches before it without a device record.
    pub unrecorded_before: u64,
    /// Launches from it on.
    pub after: u64,
    /// Launches from it on without a device record.
    pub unrecorded_after: u64,
}

/// Where the device records of `launches` (in start order) stop, if they do.
pub fn stop_of(launches: &[Launch]) -> Option<RecordsStop> {
    // the last maximum of the running sum (+1 recorded, -1 not): the launches before it are
    // the longest prefix whose records are as complete as they get
    let (mut sum, mut best, mut cut) = (0i64, 0i64, 0usize);
    for (i, l) in launches.iter().enumerate() {
        sum += if l.recorded { 1 } else { -1 };
        if sum >= best {
            (best, cut) = (sum, i + 1);
        }
    }
    let first = launches.get(cut)?;
    let missing = |ls: &[Launch]| ls.iter().filter(|l| !l.recorded).count() as u64;
    let (head, tail) = launches.split_at(cut);
    let s = RecordsStop {
        at: first.start,
        before: head.len() as u64,
        unrecorded_before: missing(head),
        after: tail.len() as u64,
        unrecorded_after: missing(tail),
    };
    let stops = s.unrecorded_after >= STOP_MIN_UNRECORDED
        && 2 * s.unrecorded_after > s.after
        && s.unrecorded_before * 100 <= s.before;
    stops.then_some(s)
}

/// [`stop_of`] the launches of a trace.
pub fn stop(trace: &Trace) -> Option<RecordsStop> {
    stop_of(&launches(trace))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(pattern: &[(usize, bool)]) -> Vec<Launch> {
        let mut out = Vec::new();
        for &(n, recorded) in pattern {
            for _ in 0..n {
                out.push(Launch {
                    start: out.len() as Ns * 1000,
                    class: 1,
                    recorded,
                });
            }
        }
        out
    }

    #[test]
    fn stop_where_records_become_sparse() {
        // 300 complete launches, then 2 of 3 without a record
        let mut p = vec![(300, true)];
        for _ in 0..50 {
            p.extend([(1, true), (2, false)]);
        }
        let s = stop_of(&seq(&p)).unwrap();
        // the running sum peaks after the first recorded launch of the sparse part
        assert_eq!((s.before, s.unrecorded_before), (301, 0));
        assert_eq!((s.after, s.unrecorded_after), (149, 100));
        assert_eq!(s.at, 301_000);
    }

    #[test]
    fn no_stop_when_complete_scattered_or_short() {
        assert_eq!(stop_of(&seq(&[(500, true)])), None);
        // a few launches in flight at the end of the capture: under the minimum
        assert_eq!(stop_of(&seq(&[(500, true), (5, false)])), None);
        // losses scattered over the whole capture (3 %): no moment where records stop
        let mut p = Vec::new();
        for _ in 0..30 {
            p.extend([(32, true), (1, false)]);
        }
        assert_eq!(stop_of(&seq(&p)), None);
        // a stop, but 5 % missing before it too: records are not complete before it either
        let mut p = Vec::new();
        for _ in 0..10 {
            p.extend([(19, true), (1, false)]);
        }
        p.push((40, false));
        assert_eq!(stop_of(&seq(&p)), None);
    }
}
