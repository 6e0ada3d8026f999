//! CSV tables (RFC 4180): one view of the report per file, a header row, then one row per
//! kernel, operator, step or phase. Numbers are written in full precision (µs, fractions as in the
//! JSON report), a missing value is an empty field, and every field that needs it is quoted,
//! so names from the trace (commas, quotes, line breaks) come back intact.

use std::io::{self, Write};

use super::{RenderOptions, Renderer, Report};

/// Which table to write.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum View {
    /// The kernel table.
    Kernels,
    /// The copy and fill rows of the kernel table, with what they moved (direction, host
    /// memory, bytes, bandwidth).
    Copies,
    /// The operator table.
    Ops,
    /// One row per step with its breakdown.
    Steps,
    /// One row per phase (annotation path).
    Phases,
    /// One row per rank of a folder (the `ranks` section; empty for one file).
    Ranks,
    /// The memory timeline: one row per chart point of each device (`memory.devices[].points`).
    Memory,
}

/// CSV of one view.
pub struct Csv {
    /// The table to write.
    pub view: View,
}

/// One field, quoted when it contains a comma, a quote, a line break or leading/trailing
/// spaces (quotes doubled inside), as RFC 4180 says. A text cell that a spreadsheet would run
/// as a formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage return: a name from a
/// trace such as `=cmd|' /C calc'!A0`) gets a leading `'` and is quoted, as OWASP advises
/// against CSV injection; numbers (`-1.5`) are left as they are.
pub fn field(s: &str) -> String {
    let formula = s.starts_with(['=', '+', '-', '@', '\t', '\r']) && s.parse::<f64>().is_err();
    if formula {
        return format!("\"'{}\"", s.replace('"', "\"\""));
    }
    let needs = s.contains([',', '"', '\r', '\n'])
        || s.starts_with(' ')
        || s.ends_with(' ')
        || s.starts_with('\t');
    if needs {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn num(v: f64) -> String {
    if v.is_finite() {
        v.to_string()
    } else {
        String::new()
    }
}

fn opt(v: Option<f64>) -> String {
    v.map(num).unwrap_or_default()
}

fn row(out: &mut dyn Write, cells: &[String]) -> io::Result<()> {
    let line: Vec<String> = cells.iter().map(|c| field(c)).collect();
    out.write_all(line.join(",").as_bytes())?;
    out.write_all(b"\r\n")
}

fn header(out: &mut dyn Write, cols: &[&str]) -> io::Result<()> {
    let v: Vec<String> = cols.iter().map(|s| s.to_string()).collect();
    row(out, &v)
}

impl Renderer for Csv {
    fn render(&self, r: &Report, opts: &RenderOptions, out: &mut dyn Write) -> io::Result<()> {
        let top = if opts.top == 0 { usize::MAX } else { opts.top };
        match self.view {
            View::Kernels => kernels(r, top, out),
            View::Copies => copies(r, top, out),
            View::Ops => ops(r, top, out),
            View::Phases => phases(r, out),
            View::Steps => steps(r, out),
            View::Memory => memory(r, out),
            View::Ranks => ranks(r, out),
        }
    }
}

/// The kernel table.
fn kernels(r: &Report, top: usize, out: &mut dyn Write) -> io::Result<()> {
    header(
        out,
        &[
            "name",
            "category",
            "calls",
            "total_us",
            "mean_us",
            "min_us",
            "max_us",
            "share",
            "blocks_per_sm",
            "occupancy_pct",
            "tensor_core",
        ],
    )?;
    // kernel rows only: the copy and fill rows (JSON `copy`) have columns of their own
    for k in super::layout::kernel_rows(r).take(top) {
        row(
            out,
            &[
                k.name.clone(),
                k.category.as_str().to_string(),
                k.calls.to_string(),
                num(k.total_us),
                num(k.mean_us),
                num(k.min_us),
                num(k.max_us),
                num(k.share),
                opt(k.blocks_per_sm),
                opt(k.occupancy_pct),
                k.tensor_core.to_string(),
            ],
        )?;
    }
    Ok(())
}

/// The copy and fill rows of the kernel table (JSON `kernels[]` rows with a `copy` member),
/// with their own columns: `kind` (`memcpy`, `memset`), `direction` (`HtoD`, `DtoH`, `DtoD`,
/// `PtoP`, `HtoH`; empty for fills), `host_memory` (`pageable`, `pinned`, `managed`; empty
/// when the name does not say), `bytes` of all calls, `bytes_per_call` and `bandwidth_gbps`
/// (empty without byte counts), `share` of copy and fill time.
fn copies(r: &Report, top: usize, out: &mut dyn Write) -> io::Result<()> {
    header(
        out,
        &[
            "name",
            "kind",
            "direction",
            "host_memory",
            "calls",
            "total_us",
            "mean_us",
            "min_us",
            "max_us",
            "bytes",
            "bytes_per_call",
            "bandwidth_gbps",
            "share",
        ],
    )?;
    for k in super::layout::copy_rows(r).take(top) {
        let Some(c) = &k.copy else { continue };
        row(
            out,
            &[
                k.name.clone(),
                c.kind.clone(),
                c.direction.clone().unwrap_or_default(),
                c.host_memory.clone().unwrap_or_default(),
                k.calls.to_string(),
                num(k.total_us),
                num(k.mean_us),
                num(k.min_us),
                num(k.max_us),
                c.bytes.to_string(),
                opt(c.bytes_per_call),
                opt(c.bandwidth_gbps),
                num(k.share),
            ],
        )?;
    }
    Ok(())
}

/// The operator table.
fn ops(r: &Report, top: usize, out: &mut dyn Write) -> io::Result<()> {
    header(
        out,
        &[
            "name",
            "calls",
            "host_self_us",
            "host_total_us",
            "device_self_us",
            "device_total_us",
        ],
    )?;
    for o in r.ops.iter().take(top) {
        row(
            out,
            &[
                o.name.clone(),
                o.calls.to_string(),
                num(o.host_self_us),
                num(o.host_total_us),
                num(o.device_self_us),
                num(o.device_total_us),
            ],
        )?;
    }
    Ok(())
}

/// One row per phase.
fn phases(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    header(
        out,
        &[
            "path",
            "name",
            "depth",
            "calls",
            "cpu_total_us",
            "cpu_mean_us",
            "kernel_count",
            "gpu_us",
            "self_kernel_count",
            "self_gpu_us",
            "gpu_span_us",
            "share",
            "gpu_share",
            "kernel_us",
            "communication_us",
            "memcpy_us",
            "memset_us",
            "backward_kernel_count",
            "backward_gpu_us",
        ],
    )?;
    for p in &r.phases {
        let b = &p.breakdown_us;
        row(
            out,
            &[
                p.path.clone(),
                p.name.clone(),
                p.depth.to_string(),
                p.calls.to_string(),
                num(p.cpu_total_us),
                num(p.cpu_mean_us),
                p.kernel_count.to_string(),
                num(p.gpu_us),
                p.self_kernel_count.to_string(),
                num(p.self_gpu_us),
                num(p.gpu_span_us),
                num(p.share),
                num(p.gpu_share),
                num(b.kernel),
                num(b.communication),
                num(b.memcpy),
                num(b.memset),
                p.backward_kernel_count.to_string(),
                num(p.backward_gpu_us),
            ],
        )?;
    }
    Ok(())
}

/// One row per step with its breakdown.
fn steps(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let mut cols = vec!["name".to_string(), "start_us".into(), "duration_us".into()];
    cols.extend(
        r.breakdown_us
            .parts()
            .iter()
            .map(|(label, _)| format!("{label}_us")),
    );
    row(out, &cols)?;
    for s in &r.steps {
        let mut cells = vec![s.name.clone(), num(s.start_us), num(s.duration_us)];
        cells.extend(s.breakdown_us.parts().iter().map(|(_, v)| num(*v)));
        row(out, &cells)?;
    }
    Ok(())
}

/// The memory timeline: one row per chart point of each device.
fn memory(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    header(
        out,
        &["device", "t_us", "allocated_bytes", "reserved_bytes"],
    )?;
    for d in r.memory.iter().flat_map(|m| &m.devices) {
        for p in &d.points {
            row(
                out,
                &[
                    d.device.to_string(),
                    num(p.t_us),
                    p.allocated.to_string(),
                    if p.reserved >= 0 {
                        p.reserved.to_string()
                    } else {
                        String::new()
                    },
                ],
            )?;
        }
    }
    Ok(())
}

/// One row per rank of a folder (the header alone for one file).
fn ranks(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    header(
        out,
        &[
            "rank",
            "rank_source",
            "path",
            "steps",
            "step_time_us",
            "window_us",
            "device",
            "utilization",
            "total_us",
            "computation_us",
            "exposed_comm_us",
            "overlapped_comm_us",
            "exposed_memcpy_us",
            "idle_us",
            "top_finding",
            "top_finding_us",
        ],
    )?;
    for k in r.ranks.iter().flat_map(|s| &s.ranks) {
        row(
            out,
            &[
                k.rank.to_string(),
                k.rank_source.as_str().to_string(),
                k.path.clone(),
                k.steps.to_string(),
                num(k.step_time_us),
                num(k.window_us),
                k.device.map(|d| d.to_string()).unwrap_or_default(),
                opt(k.utilization),
                num(k.total_us),
                num(k.computation_us),
                num(k.exposed_comm_us),
                num(k.overlapped_comm_us),
                num(k.exposed_memcpy_us),
                num(k.idle_us),
                k.top_finding
                    .as_ref()
                    .map(|f| f.id.clone())
                    .unwrap_or_default(),
                k.top_finding
                    .as_ref()
                    .map(|f| num(f.recoverable_us))
                    .unwrap_or_default(),
            ],
        )?;
    }
    Ok(())
}

/// torch's memory-timeline export as CSV: `t_ns` then one column of bytes per category, one
/// row per distinct timestamp.
pub fn write_memory_export(
    t: &crate::ingest::torch_memory::CategoryTimeline,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut cols = vec!["t_ns"];
    cols.extend(crate::ingest::torch_memory::CATEGORIES);
    header(out, &cols)?;
    for (ts, s) in t.times.iter().zip(&t.sizes) {
        let mut cells = vec![ts.to_string()];
        cells.extend(s.iter().map(|v| v.to_string()));
        row(out, &cells)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("two\nlines"), "\"two\nlines\"");
        assert_eq!(field(" padded"), "\" padded\"");
        assert_eq!(field("<script>"), "<script>");
        // formulas are defused (OWASP), numbers are not
        assert_eq!(field("=cmd|' /C calc'!A0"), "\"'=cmd|' /C calc'!A0\"");
        assert_eq!(field("@SUM(1)"), "\"'@SUM(1)\"");
        assert_eq!(field("-1.5"), "-1.5");
        assert_eq!(field("+3"), "+3");
        assert_eq!(num(f64::NAN), "");
        assert_eq!(num(0.1), "0.1");
    }
}
