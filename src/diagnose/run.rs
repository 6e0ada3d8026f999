//! The rule runner: builds the [`Facts`] once, calls every rule family in a fixed order, and
//! ranks what they found into a [`Diagnosis`] with its verdict. The top of the diagnosis:
//! nothing in `diagnose/` imports it.

use crate::analysis::Analysis;
use crate::model::Trace;
use crate::par::join;

use super::facts::Facts;
use super::finding::{rank, round3, Diagnosis};
use super::{claims, compiled, device, host, memory, ncu, patterns, roofline, transfer, verdict};

/// Runs every rule and ranks the findings.
pub fn diagnose(trace: &Trace, a: &Analysis) -> Diagnosis {
    if let Some(n) = a.ncu.as_ref().filter(|n| !n.joined) {
        return ncu::standalone(n);
    }
    let f = Facts::new(trace, a);
    diagnose_facts(&f)
}

/// Runs every rule over precomputed facts.
pub fn diagnose_facts(f: &Facts) -> Diagnosis {
    // the host rules beside the device rules (which share the kernel claims); findings keep
    // the order of a serial run (host first), so ranking ties break the same way
    let (mut findings, device) = join(
        f.a.parallel,
        || {
            let mut out = host::rules(f);
            out.extend(compiled::rules(f));
            out
        },
        || {
            let mut claims = claims::Claims::new(f);
            let mut out = device::rules(f, &mut claims);
            out.extend(roofline::rules(f, &mut claims));
            out.extend(device::late_rules(f, &mut claims));
            out.extend(ncu::rules(f, &mut claims));
            out
        },
    );
    findings.extend(device);
    findings.extend(transfer::rules(f));
    findings.extend(memory::rules(f));
    findings.extend(patterns::rules(f));
    for x in &mut findings {
        x.recoverable_us = round3(x.recoverable_us.max(0.0));
    }
    rank(&mut findings);
    let (verdict_class, verdict) = verdict::classified(f, &findings);
    Diagnosis {
        verdict,
        verdict_class,
        findings,
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{find, run};
    use super::*;
    use crate::diagnose::finding::Severity;
    use crate::model::build::TraceBuilder;
    use crate::model::GpuKind;

    /// Kernels with 5 ms holes where the host does nothing traced; with `lost`, a stream sync
    /// in the last hole waits 4 ms while the device shows nothing (device work the trace does
    /// not hold: `unrecorded-device-work`).
    fn holes(lost: bool) -> Trace {
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100-SXM4-80GB", 108, 80 << 30);
        let mut t = 0.0;
        for _ in 0..4 {
            let c = b.runtime("cudaLaunchKernel", 0, t, 3.0);
            b.gpu(GpuKind::Kernel, "gemm_bf16", 0, 7, t + 4.0, 1000.0, c);
            t += 6000.0;
        }
        if lost {
            b.runtime("cudaStreamSynchronize", 0, t - 4500.0, 4000.0);
        }
        b.annotation("ProfilerStep#0", 0.0, t);
        b.build()
    }

    #[test]
    fn idle_gaps_not_claimed_when_device_records_are_missing() {
        let d = run(&holes(false));
        let g = find(&d, "gpu-idle-gaps").expect("gpu-idle-gaps");
        assert!(g.severity < Severity::Info, "{:?}", g.severity);
        assert!(g.recoverable_us > 10_000.0, "{}", g.recoverable_us);
        let d = run(&holes(true));
        assert_eq!(
            d.verdict_class.id(),
            "device_records_incomplete",
            "{}",
            d.verdict
        );
        let g = find(&d, "gpu-idle-gaps").expect("gpu-idle-gaps");
        assert_eq!((g.severity, g.recoverable_us), (Severity::Info, 0.0));
        let why = g.evidence.facts.last().unwrap();
        assert!(
            why.starts_with(
                "not counted as recoverable: the capture check found unrecorded-device-work"
            ),
            "{why}"
        );
    }
}
