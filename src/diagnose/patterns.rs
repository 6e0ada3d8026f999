//! Rules for torch.profiler's own anti-patterns (issue 19): `extra-cuda-copy`,
//! `grad-not-set-to-none`, `for-loop-indexing`, `conv-bias-before-batchnorm`,
//! `matmul-dim-not-aligned`, `optimizer-single-tensor`, over the matches of
//! [`crate::analysis::patterns`].
//!
//! Recoverable time: the first two remove whole calls, so they claim the larger of the matched
//! calls' host time, capped by the device's idle time, and their device time, capped by the
//! host's wait for the device, per step (the two overlap when the host waits for a copy; never
//! their sum). The two host patterns, `for-loop-indexing` (one vectorized op instead of a
//! Python loop) and `optimizer-single-tensor` (a few multi-tensor kernels instead of a loop
//! over the parameters), remove the loop's host work: they claim the matched calls' host
//! time, capped by the device's idle time (the device work stays, in fewer kernels). The
//! other two change how the device work is done (a fused bias, padded dims) and the trace
//! does not show the faster version's time: they report 0 µs, severity `info`, with the
//! matched calls' time as evidence.
//! None of these times is claimed by the idle-split or kernel-claim pools (see the module
//! docs of [`super`]); they are upper bounds that may overlap `launch-bound`/`memcpy-heavy`.

use crate::analysis::patterns::PatternMatch;

use super::{fmt_ns, metric, pct, Evidence, Facts, Finding, Severity};

/// What a pattern's fix recovers.
#[derive(Clone, Copy, PartialEq)]
enum Gain {
    /// The calls go: the larger of their host time (capped by the device's idle time) and
    /// device time (capped by the host's wait).
    RemovesCalls,
    /// The host loop goes: its host time, capped by the device's idle time.
    HostTime,
    /// Not shown by the trace: 0, `info`.
    Unknown,
}

/// Runs the six pattern rules.
pub fn rules(f: &Facts) -> Vec<Finding> {
    let p = &f.patterns;
    let mut out = Vec::new();
    let specs: [(&'static str, &PatternMatch, Gain, &str, &[&str]); 6] = [
        (
            "extra-cuda-copy",
            &p.extra_cuda_copy,
            Gain::RemovesCalls,
            "tensors filled on the CPU, then moved to the GPU by aten::to",
            &[
                "Create the tensor on the GPU directly: torch.zeros(..., device=\"cuda\") / \
                 torch.randn(..., device=\"cuda\") instead of torch.zeros(...).to(\"cuda\")",
            ],
        ),
        (
            "grad-not-set-to-none",
            &p.grad_not_set_to_none,
            Gain::RemovesCalls,
            "zero_grad() zeroes gradients (aten::zero_) instead of setting them to None",
            &[
                "optimizer.zero_grad(set_to_none=True) (the default since PyTorch 2.0) or \
                 model.zero_grad(set_to_none=True): no zero_ kernels, and the next backward \
                 writes the gradients instead of accumulating into zeros",
            ],
        ),
        (
            "for-loop-indexing",
            &p.for_loop_indexing,
            Gain::HostTime,
            "a Python loop indexes a tensor element by element (repeated aten::select)",
            &[
                "Vectorize the loop: one indexed assignment (tensor[idx] = values), \
                 torch.arange/torch.where/index_put_, instead of one select per element",
            ],
        ),
        (
            "conv-bias-before-batchnorm",
            &p.conv_bias_before_batchnorm,
            Gain::Unknown,
            "Conv2d with a bias directly followed by BatchNorm2d (the bias is cancelled)",
            &["nn.Conv2d(..., bias=False) before nn.BatchNorm2d: the BN mean removes the bias"],
        ),
        (
            "matmul-dim-not-aligned",
            &p.matmul_dim_not_aligned,
            Gain::Unknown,
            "fp16/bf16 matmuls with a dimension not a multiple of 8 (tensor cores need 8)",
            &[
                "Pad the matrix dims (hidden sizes, vocabulary, batch × sequence) to multiples \
                 of 8 (better 64) so the GEMMs use tensor-core tiles without remainder",
            ],
        ),
        (
            "optimizer-single-tensor",
            &p.optimizer_single_tensor,
            Gain::HostTime,
            "the optimizer runs its per-parameter (single-tensor) implementation",
            &[
                "torch.optim.Adam/AdamW/SGD(..., foreach=True) (or fused=True on CUDA): a few \
                 multi-tensor kernels instead of several kernels per parameter",
            ],
        ),
    ];
    for (id, m, gain, what, advice) in specs {
        if m.calls == 0 {
            continue;
        }
        out.push(finding(f, id, m, gain, what, advice));
    }
    out
}

fn finding(
    f: &Facts,
    id: &'static str,
    m: &PatternMatch,
    gain: Gain,
    what: &str,
    advice: &[&str],
) -> Finding {
    let host_us = f.per_step_us(m.host_ns);
    let device_us = f.per_step_us(m.device_ns);
    let cost_us = host_us.max(device_us);
    // host time saved only shortens the step while the device idles; device time only while
    // the host waits for the device
    let idle_us = f.gaps.primary().map_or(0.0, |p| f.per_step_us(p.idle));
    let capped_us = host_us.min(idle_us).max(device_us.min(f.device_slack_us()));
    let mut e = Evidence::default();
    let unit = if id == "for-loop-indexing" {
        format!("{} loop(s), {} iterations", m.calls, m.iterations)
    } else {
        format!("{} call(s)", m.calls)
    };
    e.facts.push(format!(
        "{unit} in the window: host {} and device {} ({} device activities) per step, {} of \
         the step",
        fmt_ns(host_us * 1000.0),
        fmt_ns(device_us * 1000.0),
        m.device_events,
        pct(f.share_of_step(cost_us))
    ));
    for x in &m.examples {
        e.facts.push(format!("e.g. {x}"));
    }
    metric(&mut e, "calls", m.calls as f64);
    metric(&mut e, "host_us_per_step", host_us);
    metric(&mut e, "device_us_per_step", device_us);
    metric(&mut e, "step_share", f.share_of_step(cost_us));
    metric(&mut e, "uncapped_us_per_step", cost_us);
    metric(&mut e, "device_idle_us_per_step", idle_us);
    if id == "for-loop-indexing" {
        metric(&mut e, "iterations", m.iterations as f64);
    }
    if let Some((name, start, dur)) = &m.first {
        e.locations.push(f.location("op", name, *start, *dur));
    }
    let (recoverable_us, severity, basis) = if gain == Gain::HostTime {
        let host_capped = host_us.min(idle_us);
        (
            host_capped,
            f.severity(host_capped),
            format!(
                "the matched calls' host time per step, capped by the device's idle time ({}): \
                 the fix replaces the host loop, the device work stays",
                fmt_ns(idle_us * 1000.0)
            ),
        )
    } else if gain == Gain::RemovesCalls {
        (
            capped_us,
            f.severity(capped_us),
            format!(
                "the larger of the matched calls' host time (capped by the device's idle time, \
                 {}) and device time (capped by the host's wait for the device, {}) per step: \
                 the fix removes the calls",
                fmt_ns(idle_us * 1000.0),
                fmt_ns(f.device_slack_us() * 1000.0)
            ),
        )
    } else {
        (
            0.0,
            Severity::Info,
            "0: the fix changes how the work runs, and the trace does not show the faster \
             version's time; the matched calls' time is in the evidence"
                .to_string(),
        )
    };
    Finding {
        id,
        severity,
        title: format!("torch.profiler pattern: {what}"),
        recoverable_us,
        recoverable_basis: basis,
        evidence: e,
        advice: advice.iter().map(|s| s.to_string()).collect(),
    }
}
