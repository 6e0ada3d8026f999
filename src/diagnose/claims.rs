//! What the device-side rules share: which kernels of the window a rule has already claimed
//! ([`Claims`]; each kernel instance is claimed by at most one rule) and the cap of every
//! device-side bound by the host's wait for the device ([`cap`]). Used by the rules of
//! [`super::device`], [`super::roofline`], [`super::transfer`] and [`super::ncu`].

use super::{fmt_us, metric, Evidence, Facts};
use crate::model::classify::{self, KernelCategory};
use crate::model::fast::NameMemo;
use crate::model::{GpuKind, NameId, Ns};

/// Category and tensor-core use of a kernel name.
type KernelClass = (KernelCategory, bool);

fn kernel_class(name: &str) -> KernelClass {
    (
        classify::categorize(name),
        classify::uses_tensor_cores(name),
    )
}

/// Which device activities a device-side rule has already claimed.
pub struct Claims<'t> {
    claimed: Vec<bool>,
    /// Kernels of the window (indices in `trace.gpu`), in start order.
    pub kernels: Vec<u32>,
    /// Their total duration, ns.
    pub kernel_time: Ns,
    class: NameMemo<'t, KernelClass, fn(&str) -> KernelClass>,
}

impl<'t> Claims<'t> {
    /// No claims yet; the window's kernels.
    pub fn new(f: &Facts<'t>) -> Claims<'t> {
        let kernels: Vec<u32> = f
            .trace
            .gpu
            .iter()
            .enumerate()
            .filter(|&(i, g)| {
                g.kind == GpuKind::Kernel && f.a.selection.counts_activity_at(f.trace, i)
            })
            .map(|(i, _)| i as u32)
            .collect();
        let kernel_time = kernels.iter().map(|&i| f.trace.gpu[i as usize].dur).sum();
        Claims {
            claimed: vec![false; f.trace.gpu.len()],
            kernels,
            kernel_time,
            class: NameMemo::new(f.trace, kernel_class),
        }
    }
    /// Category and tensor-core use of a kernel name.
    pub fn class(&mut self, name: NameId) -> KernelClass {
        self.class.get(name)
    }
    /// True when not claimed yet.
    pub fn free(&self, gi: u32) -> bool {
        !self.claimed[gi as usize]
    }
    /// Claims a kernel.
    pub fn take(&mut self, gi: u32) {
        self.claimed[gi as usize] = true;
    }
}

/// Caps a device-side bound by the host's wait; returns (recoverable, basis suffix).
pub fn cap(f: &Facts, raw_us: f64, e: &mut Evidence) -> f64 {
    let slack = f.device_slack_us();
    metric(e, "uncapped_us_per_step", raw_us);
    metric(e, "host_wait_us_per_step", slack);
    if raw_us > slack {
        e.facts.push(format!(
            "capped at {} per step: the host waits for the GPU only that long per step; the \
             rest of the step is host work, so a faster GPU alone cannot save more (up to {} \
             once the host-side findings are fixed)",
            fmt_us(slack),
            fmt_us(raw_us)
        ));
        slack
    } else {
        raw_us
    }
}

/// Basis text shared by device-side rules.
pub const CAP_BASIS: &str = "capped by the time per step the host waits for the device";
