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
//!   one, and the device activities from it on that are linked to no launch number under
//!   half of the launches without a record: otherwise the records are there and only their
//!   links to the launches are missing; and the devices' recorded work leaves them idle over
//!   [`STOP_MAX_BUSY`] or more of the time from it to the end of the last activity: a device
//!   busy all along has its queue full, and the launches without a record were waiting in it
//!   when the capture stopped (an nsys export of two H100s, 753 launches pending, whose
//!   2,280 launches of its last 250 ms have no record while both devices stay 99.7 % busy,
//!   is no stop).
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

/// The devices' busy share (the union of their recorded activities) from the stop to the
/// end of the last activity at or over which the launches without a record were queued, not
/// lost: no stop.
pub const STOP_MAX_BUSY: f64 = 0.9;

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

/// The launch calls of a trace and its device activities linked to none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Launches {
    /// The kernel, copy and fill launch calls (see the module docs for which count), in
    /// start order.
    pub calls: Vec<Launch>,
    /// The starts of the device activities linked to no launch call, in order.
    pub unlinked: Vec<Ns>,
    /// The union of the device activities (any device), in order.
    pub busy: Vec<(Ns, Ns)>,
}

/// The launches of a trace.
pub fn launches(trace: &Trace) -> Launches {
    let mut recorded = crate::model::fast::Bits::new(trace.cpu.len());
    let mut unlinked = Vec::new();
    let mut busy: Vec<(Ns, Ns)> = Vec::new();
    for g in trace.gpu.iter().filter(|g| g.is_activity()) {
        match busy.last_mut() {
            Some(last) if g.start <= last.1 => last.1 = last.1.max(g.end()),
            _ => busy.push((g.start, g.end())),
        }
        if (g.launch as usize) < recorded.len() {
            recorded.set(g.launch as usize);
        } else {
            unlinked.push(g.start);
        }
    }
    if !unlinked.is_sorted() {
        unlinked.sort_unstable();
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
                recorded: recorded.get(i),
            }),
        }
    }
    if !out.is_sorted_by_key(|l| l.start) {
        out.sort_by_key(|l| l.start);
    }
    if !busy.is_sorted() {
        // (device events come in start order; a reader that breaks it costs a merge here)
        busy.sort_unstable();
        let mut merged: Vec<(Ns, Ns)> = Vec::with_capacity(busy.len());
        for (a, b) in busy {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        busy = merged;
    }
    Launches {
        calls: out,
        unlinked,
        busy,
    }
}

/// The busy share of `busy` (merged intervals) from `at` to the end of the last one.
fn busy_share_after(busy: &[(Ns, Ns)], at: Ns) -> f64 {
    let end = busy.last().map_or(at, |b| b.1);
    if end <= at {
        return 0.0;
    }
    let k = busy.partition_point(|b| b.1 <= at);
    let time: Ns = busy[k..].iter().map(|b| b.1 - b.0.max(at)).sum();
    time as f64 / (end - at) as f64
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

/// Where the device records of `l` stop, if they do.
pub fn stop_of(l: &Launches) -> Option<RecordsStop> {
    let launches = &l.calls;
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
    let unlinked_after = (l.unlinked.len() - l.unlinked.partition_point(|t| *t < s.at)) as u64;
    let stops = s.unrecorded_after >= STOP_MIN_UNRECORDED
        && 2 * s.unrecorded_after > s.after
        && s.unrecorded_before * 100 <= s.before
        && 2 * unlinked_after < s.unrecorded_after
        && busy_share_after(&l.busy, s.at) < STOP_MAX_BUSY;
    stops.then_some(s)
}

/// [`stop_of`] the launches of a trace.
pub fn stop(trace: &Trace) -> Option<RecordsStop> {
    stop_of(&launches(trace))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(pattern: &[(usize, bool)]) -> Launches {
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
        Launches {
            calls: out,
            unlinked: Vec::new(),
            busy: Vec::new(),
        }
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
        // the launches after 300 µs have no record, but as many device activities linked to
        // no launch run from there: the links are missing, not the records
        let mut l = seq(&[(300, true), (100, false)]);
        assert!(stop_of(&l).is_some());
        l.unlinked = (0..100).map(|i| 300_500 + i * 1000).collect();
        assert_eq!(stop_of(&l), None);
        // a few unlinked ones (under half) leave the stop standing
        l.unlinked.truncate(49);
        assert!(stop_of(&l).is_some());
        // the device busy from the stop to its last activity (89.9 %, then 90 %): the
        // launches without a record were queued behind its work when the capture stopped
        l.busy = vec![(0, 309_900), (320_000, 400_000)];
        assert!(stop_of(&l).is_some());
        l.busy = vec![(0, 310_000), (320_000, 400_000)];
        assert_eq!(stop_of(&l), None);
    }
}
