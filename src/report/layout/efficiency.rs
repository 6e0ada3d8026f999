//! The efficiency (MFU and roofline) section laid out once: the headline, the subtitle, the
//! table's columns and cells, FLOPs and bytes with SI prefixes, precision names.

use crate::report::units;

/// Short name of a precision as in [`crate::analysis::efficiency::precision`]: `bf16`, `fp16`,
/// `fp8`, `tf32`, `fp32`, or the dtype itself.
pub fn precision_label(dtype: &str) -> &str {
    match dtype {
        "bfloat16" => "bf16",
        "half" => "fp16",
        "float8" => "fp8",
        "float" => "fp32",
        d => d,
    }
}

/// FLOPs or bytes with an SI prefix: `5.77 T`, `51.5 G`.
pub fn si(v: f64) -> String {
    let (d, p) = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|(d, _)| v.abs() >= *d)
        .unwrap_or((1.0, ""));
    let x = v / d;
    if x >= 100.0 {
        format!("{x:.0} {p}")
    } else if x >= 10.0 {
        format!("{x:.1} {p}")
    } else {
        format!("{x:.2} {p}")
    }
}

/// The one-line efficiency summary of the terminal report and the HTML headline: "MFU 16.6%
/// of bf16 dense peak on H100 SXM (164 of 989 TFLOP/s); 100% of matrix-kernel time
/// accounted for".
pub fn efficiency_headline(e: &crate::report::mirrors::EfficiencyInfo) -> String {
    let accounted = match e.accounted_share {
        Some(a) => format!("{:.0}% of matrix-kernel time accounted for", a * 100.0),
        None => "no matrix kernel in the window".into(),
    };
    let devices = if e.devices > 1 {
        format!(" ×{}", e.devices)
    } else {
        String::new()
    };
    if let Some(why) = &e.mfu_unknown {
        return format!(
            "{}FLOP per step, {:.1} TFLOP/s where known; {why}",
            si(e.flops_per_step),
            e.achieved_tflops
        );
    }
    match (e.mfu, e.peak_tflops, &e.device) {
        (Some(m), Some(p), Some(d)) => format!(
            "MFU {:.1}% of {} dense peak on {}{} ({:.1} of {:.0} TFLOP/s); {}",
            m * 100.0,
            precision_label(e.dtype),
            d,
            devices,
            e.achieved_tflops,
            p * e.devices.max(1) as f64,
            accounted
        ),
        (_, _, Some(d)) => format!(
            "{}FLOP per step, {:.1} TFLOP/s; {} has no {} peak in the table: no MFU; {}",
            si(e.flops_per_step),
            e.achieved_tflops,
            d,
            precision_label(e.dtype),
            accounted
        ),
        _ => format!(
            "{}FLOP per step, {:.1} TFLOP/s; device not in the peak table: no MFU; {}",
            si(e.flops_per_step),
            e.achieved_tflops,
            accounted
        ),
    }
}

/// The efficiency section's subtitle: FLOPs and bytes per step, and how the rows are ranked
/// (terminal and Markdown).
pub fn efficiency_subtitle(e: &crate::report::mirrors::EfficiencyInfo) -> String {
    let lost = e.ops.first().is_some_and(|o| o.lost_us.is_some());
    format!(
        "per step: {}FLOP, {}B moved at least; {}",
        si(e.flops_per_step),
        si(e.bytes_per_step),
        if lost {
            "ranked by time lost against the roofline"
        } else {
            "ranked by device time (no peaks for this device)"
        }
    )
}

/// Columns of the efficiency table, for [`efficiency_cells`].
pub const EFFICIENCY_COLUMNS: [&str; 7] = [
    "operator / phase",
    "calls",
    "device",
    "TFLOP/s",
    "GB/s",
    "roofline",
    "lost",
];

/// One row of the efficiency table (after its name): calls, device time, achieved TFLOP/s
/// and GB/s, roofline time and time lost (`-` without peaks).
pub fn efficiency_cells(x: &crate::report::mirrors::EfficiencyRowInfo) -> [String; 6] {
    use units::{fmt_count, fmt_us, fmt_us_or_dash as dash};
    [
        fmt_count(x.calls),
        fmt_us(x.device_us),
        format!("{:.1}", x.achieved_tflops),
        format!("{:.0}", x.achieved_gbs),
        dash(x.roofline_us),
        dash(x.lost_us),
    ]
}
