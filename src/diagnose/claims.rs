//! What the device-side rules share: which kernels of the window a rule has already claimed
//! ([`Claims`]; each kernel instance is claimed by at most one rule) and the cap of every
//! device-side bound by the host's wait for the device ([`cap`]). Used by the rules of
//! [`super::device`], [`super::roofline`], [`super::transfer`] and [`super::ncu`].

use super::{fmt_us_sentence, metric, Evidence, Facts, Finding};
use crate::analysis::roofline::OpPoint;
use crate::model::classify::KernelCategory;
use crate::model::fast::Bits;
use crate::model::{GpuKind, NameId, Ns};

/// Category and tensor-core use of a kernel name.
type KernelClass = (KernelCategory, bool);

/// Which device activities a device-side rule has already claimed.
pub struct Claims<'t> {
    /// One bit per device event.
    claimed: Bits,
    /// Kernels of the window (indices in `trace.gpu`), in start order.
    pub kernels: Vec<u32>,
    /// Their total duration, ns.
    pub kernel_time: Ns,
    /// The roofline points of the window's calls ([`roofline::roofline`] over `kernels`,
    /// impossible calls left out), for the rules that weigh kernels by their FLOPs.
    pub points: &'t [OpPoint],
    trace: &'t crate::model::Trace,
    /// Claimed kernels in claim order (for [`Claims::give_back`]).
    log: Vec<u32>,
}

impl<'t> Claims<'t> {
    /// No claims yet; the window's kernels.
    pub fn new(f: &Facts<'t>) -> Claims<'t> {
        let (mut kernels, mut kernel_time) = (Vec::new(), 0);
        for (i, g) in f.trace.gpu.iter().enumerate() {
            if g.kind == GpuKind::Kernel && f.a.selection.counts_activity_at(f.trace, i) {
                kernels.push(i as u32);
                kernel_time += g.dur;
            }
        }
        let claimed = Bits::new(f.trace.gpu.len());
        // the analysis' points: the same kernels (those the selection counts)
        let points = &f.a.roofline;
        Claims {
            claimed,
            kernels,
            kernel_time,
            points,
            trace: f.trace,
            log: Vec::new(),
        }
    }
    /// Category and tensor-core use of a kernel name.
    pub fn class(&mut self, name: NameId) -> KernelClass {
        let c = self.trace.kernel_class(name);
        (c.category, c.tensor_cores)
    }
    /// True when not claimed yet.
    #[inline]
    pub fn free(&self, gi: u32) -> bool {
        !self.claimed.get(gi as usize)
    }
    /// Claims a kernel.
    #[inline]
    pub fn take(&mut self, gi: u32) {
        if !self.claimed.replace(gi as usize) {
            self.log.push(gi);
        }
    }
    /// Runs a rule; when it reports nothing, or recovers nothing, the kernels it claimed are
    /// given back to the rules after it (a rule that saves no time has no claim on the time).
    pub fn give_back<F>(&mut self, rule: F) -> Option<Finding>
    where
        F: FnOnce(&mut Claims<'t>) -> Option<Finding>,
    {
        let mark = self.log.len();
        let out = rule(self);
        if out.as_ref().is_none_or(|x| x.recoverable_us <= 0.0) {
            for gi in self.log.drain(mark..) {
                self.claimed.clear(gi as usize);
            }
        }
        out
    }
}

/// Caps a device-side bound by the host's wait; returns (recoverable, basis suffix).
pub fn cap(f: &Facts, raw_us: f64, e: &mut Evidence) -> f64 {
    if f.launch.launch_calls == 0 && f.launch.graph_launches == 0 {
        // a device-only capture: how long the host waits is unknown, not zero
        e.facts.push(
            "not capped by the host's wait: the trace holds no launch call, so how long the \
             host waits for the device is unknown"
                .to_string(),
        );
        return raw_us;
    }
    let slack = f.device_slack_us();
    metric(e, "uncapped_us_per_step", raw_us);
    metric(e, "host_wait_us_per_step", slack);
    if raw_us > slack {
        e.facts.push(format!(
            "capped at {} per step: the host waits for the GPU only that long per step; the \
             rest of the step is host work, so a faster GPU alone cannot save more (up to {} \
             once the host-side findings are fixed)",
            fmt_us_sentence(slack),
            fmt_us_sentence(raw_us)
        ));
        slack
    } else {
        raw_us
    }
}

/// Basis text shared by device-side rules.
pub const CAP_BASIS: &str = "capped by the time per step the host waits for the device";
