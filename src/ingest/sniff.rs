//! Tells input formats apart from their first bytes.

/// Formats stallscope recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON (a Kineto trace, or another JSON the Kineto reader will name).
    Json,
    /// Nsight Systems SQLite export.
    NsysSqlite,
    /// Nsight Systems report (`.nsys-rep`/`.qdrep`).
    NsysRep,
    /// Nsight Compute report (`.ncu-rep`).
    NcuRep,
    /// Nsight Compute CSV.
    NcuCsv,
    /// `nsys stats` CSV.
    NsysStatsCsv,
    /// Nothing but whitespace.
    Empty,
    /// Not recognised.
    Unknown,
}

impl Format {
    /// A one-line explanation for formats this build cannot analyse.
    pub fn unsupported_message(&self) -> String {
        match self {
            Format::NsysSqlite => "an Nsight Systems SQLite export: not supported yet by this \
                                  version of stallscope (Kineto JSON only)"
                .into(),
            Format::NsysRep => "an Nsight Systems report (.nsys-rep): not supported yet; export \
                               it with `nsys export --type sqlite REPORT.nsys-rep`"
                .into(),
            Format::NcuRep => "an Nsight Compute report (.ncu-rep): not supported yet; export it \
                              with `ncu --import REPORT.ncu-rep --csv --page raw`"
                .into(),
            Format::NcuCsv => "an Nsight Compute CSV: per-kernel metrics, not a timeline; run \
                              `stallscope analyze KERNELS.csv` for its kernel table, or \
                              `stallscope analyze TRACE --ncu KERNELS.csv` to join it to a trace"
                .into(),
            Format::NsysStatsCsv => "an `nsys stats` CSV report, not a trace".into(),
            Format::Empty => "empty file".into(),
            Format::Unknown | Format::Json => {
                "not a recognised profile (expected Kineto JSON, optionally gzip-compressed)".into()
            }
        }
    }
}

/// True for the gzip magic bytes.
pub fn is_gzip(head: &[u8]) -> bool {
    head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b
}

/// [`sniff`] for the first read of a stream: a head of at least 4 KiB that is all whitespace
/// may be followed by a document (a run of whitespace of any length is valid JSON before it),
/// so it goes to the JSON reader, which skips whitespace as it streams and says "empty file" at
/// the end of a stream of nothing else. A shorter one is the whole input: empty.
pub fn sniff_stream(head: &[u8]) -> Format {
    match sniff(head) {
        Format::Empty if head.len() >= 4096 => Format::Json,
        f => f,
    }
}

/// Guesses the format of (decompressed) content from its first bytes.
pub fn sniff(head: &[u8]) -> Format {
    if head.starts_with(b"SQLite format 3\0") {
        return Format::NsysSqlite;
    }
    if head.starts_with(b"NVIDIA Tegra Profiler Report") {
        return Format::NsysRep;
    }
    // .nsys-rep / .qdrep are binary reports; ncu-rep too. Look for telltale strings.
    let start = head.iter().position(|c| !c.is_ascii_whitespace());
    let Some(start) = start else {
        return Format::Empty;
    };
    let t = &head[start..];
    let t = t.strip_prefix(&[0xEF, 0xBB, 0xBF][..]).unwrap_or(t);
    if t.first() == Some(&b'{') || t.first() == Some(&b'[') {
        return Format::Json;
    }
    let text = String::from_utf8_lossy(&t[..t.len().min(4096)]);
    if text.starts_with("==PROF==")
        || text.starts_with("\"ID\",")
        || text.contains("\"Kernel Name\"")
    {
        return Format::NcuCsv;
    }
    if text.starts_with("Start (ns)") || text.contains("(ns)\",") || text.contains(" (ns),") {
        return Format::NsysStatsCsv;
    }
    let bin = &head[..head.len().min(65536)];
    if memchr::memmem::find(bin, b"NVIDIA Nsight Compute").is_some()
        || memchr::memmem::find(bin, b"ncu-rep").is_some()
    {
        return Format::NcuRep;
    }
    if memchr::memmem::find(bin, b"nsys").is_some()
        || memchr::memmem::find(bin, b"Nsight").is_some()
    {
        return Format::NsysRep;
    }
    Format::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_formats() {
        assert_eq!(sniff(b"  {\"traceEvents\": []}"), Format::Json);
        assert_eq!(sniff(b"SQLite format 3\0rest"), Format::NsysSqlite);
        assert_eq!(
            sniff(b"==PROF== Connected\n\"ID\",\"Process ID\""),
            Format::NcuCsv
        );
        assert_eq!(sniff(b"   \n"), Format::Empty);
        assert_eq!(sniff(b"hello"), Format::Unknown);
        assert!(is_gzip(&[0x1f, 0x8b, 8]));
    }
}
