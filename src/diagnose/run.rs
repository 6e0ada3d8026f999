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
    let mut tt = crate::timings::Timings::nested();
    let f = Facts::new(trace, a);
    tt.lap("diagnose: facts");
    diagnose_facts(&f)
}

/// Runs every rule over precomputed facts.
pub fn diagnose_facts(f: &Facts) -> Diagnosis {
    // the host rules beside the device rules (which share the kernel claims); findings keep
    // the order of a serial run (host first), so ranking ties break the same way
    let (mut findings, device) = join(
        f.a.parallel,
        || {
            let mut tt = crate::timings::Timings::nested();
            let mut out = host::rules(f);
            out.extend(compiled::rules(f));
            tt.lap("diagnose: host rules");
            out
        },
        || {
            let mut tt = crate::timings::Timings::nested();
            let mut claims = claims::Claims::new(f);
            tt.lap("diagnose: claims");
            // (`device::rules` times each of its rules)
            let mut out = device::rules(f, &mut claims);
            out.extend(roofline::rules(f, &mut claims));
            out.extend(device::late_rules(f, &mut claims));
            out.extend(ncu::rules(f, &mut claims));
            tt.lap("diagnose: roofline, occupancy rules");
            out
        },
    );
    let mut tt = crate::timings::Timings::nested();
    findings.extend(device);
    findings.extend(transfer::rules(f));
    findings.extend(memory::rules(f));
    findings.extend(patterns::rules(f));
    for x in &mut findings {
        x.recoverable_us = round3(x.recoverable_us.max(0.0));
    }
    tt.lap("diagnose: transfer, memory, pattern rules");
    rank(&mut findings);
    let (verdict_class, verdict) = verdict::classified(f, &findings);
    tt.lap("diagnose: verdict");
    Diagnosis {
        verdict,
        verdict_class,
        findings,
    }
}
