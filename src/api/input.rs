//! What is this input? One dispatch for every request, by content where the content says it
//! (as inferno's `guess` picks a collapser): standard input, an Nsight Compute CSV, a folder
//! of per-rank traces or of rank summaries, a saved JSON report, torch's memory-timeline
//! export, or a trace (Kineto JSON, an Nsight Systems export: the reader's own sniffing picks
//! among those).

use std::path::Path;

use crate::ingest::folder::{self, Listing};
use crate::ingest::{self, LoadError};

/// The kind of one input path.
#[derive(Debug)]
pub enum Input {
    /// `-`: a trace on standard input.
    Stdin,
    /// An Nsight Compute CSV (its kernel table alone, or joined to a trace with `--ncu`).
    NcuCsv,
    /// A folder of per-rank traces, listed.
    RankFolder(Listing),
    /// A folder whose trace-named files are all rank summaries (`*.summary.json`), listed.
    SummaryFolder(Listing),
    /// A JSON report saved with `analyze --format json` (its first key is `schema_version`).
    SavedReport,
    /// torch's memory-timeline export (`export_memory_timeline("x.raw.json.gz")`).
    MemoryExport,
    /// A trace file: Kineto JSON (plain or gzip) or an Nsight Systems export.
    Trace,
}

/// Why [`guess`] could not tell.
#[derive(Debug)]
pub enum GuessError {
    /// A folder that could not be listed or holds no trace file.
    Input(LoadError),
    /// A folder that mixes traces and summaries.
    Mixed(String),
}

/// The kind of `path`. A folder is listed (its trace files and summaries); a file is told by
/// its first bytes.
pub fn guess(path: &Path) -> Result<Input, GuessError> {
    let shown = path.to_string_lossy();
    if shown == "-" {
        return Ok(Input::Stdin);
    }
    if ingest::ncu::looks_like(&shown) {
        return Ok(Input::NcuCsv);
    }
    if path.is_dir() {
        let listing = folder::list(path).map_err(GuessError::Input)?;
        let summaries = listing
            .files
            .iter()
            .filter(|f| {
                crate::multirank::is_summary_name(&crate::text::file_name(
                    &f.path.to_string_lossy(),
                ))
            })
            .count();
        return match summaries {
            0 => Ok(Input::RankFolder(listing)),
            n if n == listing.files.len() => Ok(Input::SummaryFolder(listing)),
            _ => Err(GuessError::Mixed(format!(
                "{shown} holds both traces and *.summary.json files; analyze a folder of one kind"
            ))),
        };
    }
    if path.is_file() && is_saved_report(path) {
        return Ok(Input::SavedReport);
    }
    if ingest::torch_memory::is_export(&shown) {
        return Ok(Input::MemoryExport);
    }
    Ok(Input::Trace)
}

/// True when the file starts like a stallscope JSON report (its first key is
/// `"schema_version"`; Kineto traces start with other keys, such as `"schemaVersion"`).
pub fn is_saved_report(path: &Path) -> bool {
    crate::diff::side::is_saved_report(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(name: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("samples")
            .join(name)
    }

    #[test]
    fn each_kind_of_input_is_told_apart() {
        assert!(matches!(guess(Path::new("-")), Ok(Input::Stdin)));
        assert!(matches!(
            guess(&sample("h100_bert_small.json.gz")),
            Ok(Input::Trace)
        ));
        let f = crate::multirank::tests::folder("guess");
        assert!(matches!(guess(&f.0), Ok(Input::RankFolder(l)) if l.files.len() == 3));
        // a saved report: its first key is schema_version
        let saved = f.0.join("report.txt");
        std::fs::write(&saved, b"{\"schema_version\": 1}").unwrap();
        assert!(matches!(guess(&saved), Ok(Input::SavedReport)));
        // summaries beside traces: refused
        std::fs::write(f.0.join("rank9.summary.json"), b"{}").unwrap();
        assert!(matches!(guess(&f.0), Err(GuessError::Mixed(_))));
    }
}
