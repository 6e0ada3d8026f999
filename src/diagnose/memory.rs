//! Device memory rules over the memory timeline ([`crate::analysis::memory`]): the evidence
//! of `gpu-memory-pressure` (what is live at the peak) and `memory-fragmentation`.

use super::{pct, Evidence, Facts, Finding, Severity};
use crate::analysis::memory::DeviceMemory;
use crate::text::fmt_bytes;

/// Share of the reserved memory held by the caching allocator (reserved − allocated) at the
/// peak from which `memory-fragmentation` fires …
pub const HELD_SHARE: f64 = 0.25;
/// … when it is also this share of the device memory (or [`HELD_BYTES`] when the trace does
/// not give the device memory).
pub const HELD_OF_DEVICE: f64 = 0.10;
/// Held bytes from which the rule fires on a device of unknown size.
pub const HELD_BYTES: i64 = 2 << 30;

/// The memory timeline of a device, when the trace has memory events.
fn timeline<'a>(f: &'a Facts, device: i64) -> Option<&'a DeviceMemory> {
    f.a.memory
        .as_ref()?
        .devices
        .iter()
        .find(|d| d.device == device)
}

/// Evidence lines on what is live at the window's memory peak of `device`: the peak and when,
/// the allocator's share, and the largest groups by allocating operator and phase.
pub fn live_at_peak_evidence(f: &Facts, device: i64, e: &mut Evidence) {
    let Some(d) = timeline(f, device) else {
        return;
    };
    e.facts.push(format!(
        "in the window: peak allocated {} at {:.2} ms{}{}",
        fmt_bytes(d.peak_allocated.max(0) as u64),
        d.peak_at_us / 1000.0,
        d.peak_step
            .as_ref()
            .map(|s| format!(" in {s}"))
            .unwrap_or_default(),
        if d.reserved_at_peak >= 0 {
            format!(
                "; reserved {} (the allocator holds {} unused)",
                fmt_bytes(d.reserved_at_peak as u64),
                fmt_bytes(d.held_at_peak.max(0) as u64)
            )
        } else {
            String::new()
        }
    ));
    if !d.blocks_known {
        return;
    }
    e.facts
        .push("live at the peak, by allocating operator (phase):".into());
    let total = d.peak_allocated.max(1) as f64;
    for g in d.live_at_peak.iter().take(6) {
        let what = if g.op == crate::analysis::memory::BEFORE {
            format!("{}: {}", g.op, fmt_bytes(g.bytes))
        } else {
            format!(
                "{} ({}): {} in {} blocks",
                g.op,
                g.phase,
                fmt_bytes(g.bytes),
                g.blocks
            )
        };
        e.facts
            .push(format!("  {what}, {}", pct(g.bytes as f64 / total)));
    }
    e.metrics.insert(
        "window_peak_allocated_bytes".into(),
        d.peak_allocated as f64,
    );
    if let Some(p) = d.live_by_phase.first() {
        e.metrics.insert("top_phase_live_bytes".into(), p.1 as f64);
    }
}

/// `memory-fragmentation`.
pub fn rules(f: &Facts) -> Vec<Finding> {
    let Some(m) = &f.a.memory else {
        return Vec::new();
    };
    let fires = |d: &&DeviceMemory| {
        let held = d.held_at_peak;
        d.reserved_at_peak > 0
            && held as f64 >= HELD_SHARE * d.reserved_at_peak as f64
            && match d.capacity {
                Some(c) if c > 0 => held as f64 >= HELD_OF_DEVICE * c as f64,
                _ => held >= HELD_BYTES,
            }
    };
    let Some(d) = m
        .devices
        .iter()
        .filter(fires)
        .max_by_key(|d| (d.held_at_peak, -d.device))
    else {
        return Vec::new();
    };
    let mut e = Evidence::default();
    let held = d.held_at_peak.max(0) as u64;
    e.facts.push(format!(
        "GPU {}: at the window's allocation peak ({} allocated at {:.2} ms) the caching \
         allocator reserves {}: {} ({}) is held but not allocated{}",
        d.device,
        fmt_bytes(d.peak_allocated.max(0) as u64),
        d.peak_at_us / 1000.0,
        fmt_bytes(d.reserved_at_peak as u64),
        fmt_bytes(held),
        pct(held as f64 / d.reserved_at_peak as f64),
        d.capacity
            .map(|c| format!(
                ", {} of the device's {}",
                pct(held as f64 / c as f64),
                fmt_bytes(c)
            ))
            .unwrap_or_default()
    ));
    if d.peak_reserved > d.reserved_at_peak {
        e.facts.push(format!(
            "reserved memory peaks at {} in the window",
            fmt_bytes(d.peak_reserved as u64)
        ));
    }
    let distinct: std::collections::BTreeSet<u64> = d.largest.iter().map(|l| l.bytes).collect();
    if distinct.len() > 1 {
        e.facts.push(format!(
            "the largest allocations come in {} sizes ({} … {}): blocks freed at one size are \
             not reused at another",
            distinct.len(),
            fmt_bytes(*distinct.first().unwrap_or(&0)),
            fmt_bytes(*distinct.last().unwrap_or(&0))
        ));
    }
    live_at_peak_evidence(f, d.device, &mut e);
    e.metrics.insert("held_bytes".into(), held as f64);
    e.metrics
        .insert("reserved_bytes".into(), d.reserved_at_peak as f64);
    e.metrics
        .insert("allocated_bytes".into(), d.peak_allocated as f64);
    let advice = vec![
        "Let the allocator grow segments instead of carving new ones: \
         `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` (PyTorch ≥ 2.1)."
            .to_string(),
        "Fewer distinct tensor shapes: pad variable sequence lengths to a few buckets, keep the \
         last partial batch the same size (`drop_last=True`) — each new size reserves new blocks."
            .into(),
        "`torch.cuda.empty_cache()` only between phases whose shapes differ (after evaluation, \
         before training resumes), never inside the step: it synchronizes and the next step \
         reserves the memory again."
            .into(),
        "If the peak itself is the problem: activation checkpointing \
         (`torch.utils.checkpoint`), a smaller micro-batch with gradient accumulation."
            .into(),
    ];
    vec![Finding {
        id: "memory-fragmentation",
        severity: Severity::Low,
        title: format!(
            "GPU memory fragmentation: the allocator holds {} reserved but unallocated at the peak",
            fmt_bytes(held)
        ),
        recoverable_us: 0.0,
        recoverable_basis: "none measured: memory the caching allocator holds (a risk of OOM \
                            and of allocator retries), not time spent"
            .into(),
        evidence: e,
        advice,
    }]
}
