//! What the operating system recorded of the host threads, beside the profiler's own spans:
//! when each thread was off a CPU (Nsight Systems' context-switch trace, `SCHED_EVENTS`,
//! `--cpuctxsw=process-tree`) and the OS runtime calls it made (`OSRT_API`, `--trace=osrt`:
//! `poll`, `pthread_cond_wait`, `sem_timedwait`, `read`, `fopen`, …), and the CPU samples
//! of each thread (`COMPOSITE_EVENTS` with the leaf frame of `SAMPLING_CALLCHAINS`,
//! `--sample=process-tree`). Kineto records none of them, so a Kineto trace has an empty
//! [`OsActivity`].
//!
//! These only *describe* host time the profiler's spans leave unexplained (a device gap
//! "with nothing traced on the host"): a thread on a CPU there ran work nobody traced; a
//! thread off a CPU was blocked (I/O, a lock, a condition, another thread or process) or
//! preempted; its CPU samples name the functions it ran. They never explain time a span
//! already explains.

use super::{Interval, IntervalSet, NameId, Ns};

/// One OS runtime call (`OSRT_API` row) of a host thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OsCall {
    /// Start, ns.
    pub start: Ns,
    /// Duration, ns.
    pub dur: Ns,
    /// Function name (`poll`, `pthread_cond_wait`, …).
    pub name: NameId,
    /// Index into [`super::Trace::threads`].
    pub thread: u32,
}

impl OsCall {
    /// `start..start + dur`.
    pub fn interval(&self) -> Interval {
        Interval::new(self.start, self.start + self.dur)
    }
}

/// One CPU sample of a host thread: when, and the function it was in (the leaf frame of
/// the sampled call stack).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuSample {
    /// Time, ns.
    pub time: Ns,
    /// Index into [`super::Trace::threads`].
    pub thread: u32,
    /// The sampled function (`main`, `std::abs(double)`, `MPIR_Wait_impl`, …).
    pub function: NameId,
}

/// The OS's record of the host threads (see the module docs); empty when the capture has none.
#[derive(Clone, Debug, Default)]
pub struct OsActivity {
    /// Per thread (index into [`super::Trace::threads`]): when it was off a CPU, sorted and
    /// disjoint; `None` for a thread whose scheduling was not recorded (and for every thread
    /// past the end of the vector).
    pub off_cpu: Vec<Option<IntervalSet>>,
    /// The outermost OS runtime calls (nesting level 0: a call made inside another, such as
    /// `open64` inside `fopen`, is left out), sorted by thread, then start.
    pub calls: Vec<OsCall>,
    /// CPU samples, sorted by thread, then time.
    pub samples: Vec<CpuSample>,
}

/// What the OS recorded of one host thread ([`OsActivity::thread`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct ThreadRecord<'a> {
    /// When it was off a CPU, if its scheduling was recorded.
    pub off_cpu: Option<&'a IntervalSet>,
    /// Its outermost OS calls, by start.
    pub calls: &'a [OsCall],
    /// Its CPU samples, by time.
    pub samples: &'a [CpuSample],
}

impl<'a> ThreadRecord<'a> {
    /// The calls that overlap `iv`: one thread's outermost calls do not overlap each other,
    /// but a long one (a `poll` of half a second) can start well before `iv`. `cursor` is
    /// where the search starts ([`crate::model::intervals::seek`]: any value is correct, a
    /// kept one is fast for intervals that move forward).
    pub fn calls_in(&self, iv: Interval, cursor: &mut usize) -> &'a [OsCall] {
        let calls = self.calls;
        let hi = crate::model::intervals::seek(calls, cursor, |c| c.start < iv.end);
        let mut lo = hi;
        while lo > 0 && calls[lo - 1].start + calls[lo - 1].dur > iv.start {
            lo -= 1;
        }
        &calls[lo..hi]
    }

    /// The samples inside `iv` (`cursor` as for [`ThreadRecord::calls_in`]).
    pub fn samples_in(&self, iv: Interval, cursor: &mut usize) -> &'a [CpuSample] {
        let samples = self.samples;
        let lo = crate::model::intervals::seek(samples, cursor, |s| s.time < iv.start);
        let hi = crate::model::intervals::gallop(samples, lo, |s| s.time < iv.end);
        *cursor = hi;
        &samples[lo..hi]
    }
}

impl OsActivity {
    /// True when the OS recorded nothing (every Kineto trace).
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty() && self.samples.is_empty() && self.off_cpu.iter().all(|s| s.is_none())
    }

    /// The OS calls of `thread`, by start.
    pub fn calls_of(&self, thread: u32) -> &[OsCall] {
        let lo = self.calls.partition_point(|c| c.thread < thread);
        let hi = self.calls.partition_point(|c| c.thread <= thread);
        &self.calls[lo..hi]
    }

    /// The CPU samples of `thread`, by time.
    pub fn samples_of(&self, thread: u32) -> &[CpuSample] {
        let lo = self.samples.partition_point(|s| s.thread < thread);
        let hi = self.samples.partition_point(|s| s.thread <= thread);
        &self.samples[lo..hi]
    }

    /// What the OS recorded of `thread`, found once for a caller that asks about it many
    /// times (two binary searches over every thread's calls and samples each).
    pub fn thread(&self, thread: u32) -> ThreadRecord<'_> {
        ThreadRecord {
            off_cpu: self.off_cpu(thread),
            calls: self.calls_of(thread),
            samples: self.samples_of(thread),
        }
    }

    /// The calls of `thread` that overlap `iv` ([`ThreadRecord::calls_in`]).
    pub fn calls_in(&self, thread: u32, iv: Interval) -> &[OsCall] {
        self.thread(thread).calls_in(iv, &mut 0)
    }

    /// The samples of `thread` inside `iv` ([`ThreadRecord::samples_in`]).
    pub fn samples_in(&self, thread: u32, iv: Interval) -> &[CpuSample] {
        self.thread(thread).samples_in(iv, &mut 0)
    }

    /// When `thread` was off a CPU, if its scheduling was recorded.
    pub fn off_cpu(&self, thread: u32) -> Option<&IntervalSet> {
        self.off_cpu.get(thread as usize)?.as_ref()
    }

    /// Off-CPU intervals from one thread's scheduling events `(time, scheduled in)`, in time
    /// order: from each switch out to the next switch in; after the last switch out, until
    /// `end` (the thread blocked, or ended, for the rest of the capture). Before the first
    /// event nothing is known, so nothing is off.
    pub fn off_cpu_from_switches(switches: &[(Ns, bool)], end: Ns) -> IntervalSet {
        let mut out = Vec::new();
        let mut out_since: Option<Ns> = None;
        for &(t, sched_in) in switches {
            match (sched_in, out_since) {
                (true, Some(s)) => {
                    if t > s {
                        out.push(Interval::new(s, t));
                    }
                    out_since = None;
                }
                (false, None) => out_since = Some(t),
                // a repeated switch (in after in, out after out) keeps the first
                _ => {}
            }
        }
        if let Some(s) = out_since {
            if end > s {
                out.push(Interval::new(s, end));
            }
        }
        IntervalSet::from_intervals(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switches_to_off_cpu_intervals() {
        // in at 10, out at 20, in at 35, out at 50 (never back): off 20..35 and 50..100
        let s = [(10, true), (20, false), (35, true), (50, false)];
        let off = OsActivity::off_cpu_from_switches(&s, 100);
        assert_eq!(
            off.spans(),
            &[Interval::new(20, 35), Interval::new(50, 100)][..]
        );
        // before the first event nothing is known; a repeated switch keeps the first
        let s = [(5, false), (8, false), (12, true), (13, true)];
        let off = OsActivity::off_cpu_from_switches(&s, 100);
        assert_eq!(off.spans(), &[Interval::new(5, 12)][..]);
        assert!(OsActivity::default().is_empty());
        let a = OsActivity {
            off_cpu: vec![None, Some(off)],
            ..OsActivity::default()
        };
        assert!(!a.is_empty());
        assert!(a.off_cpu(0).is_none() && a.off_cpu(1).is_some() && a.off_cpu(7).is_none());
    }
}
