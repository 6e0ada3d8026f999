//! How an input is read: one value, [`LoadSettings`], that every front door builds and every
//! request carries. Nothing about reading is process-global: the reading limits (`--limit`,
//! `--max-inflate`) are a field, and the environment switches are read once, by
//! [`LoadSettings::from_env`], where a front door starts.

use crate::ingest::limits::Limits;
use crate::ingest::LoadOptions;

/// Inputs over this many bytes show a progress bar on stderr when it is a terminal (and the
/// request asks for one).
pub const PROGRESS_OVER: u64 = 50 << 20;

/// The settings of one read, whatever the front door: the command's flags, the MCP server's
/// options and Python's keyword arguments all become this value, and [`LoadSettings::options`]
/// turns it into the reader's [`LoadOptions`].
#[derive(Clone, Debug, Default)]
pub struct LoadSettings {
    /// What bounds a read whatever the bytes (`--limit NAME=VALUE`, `--max-inflate`).
    pub limits: Limits,
    /// Parser (and, for one file, analysis) threads (`--threads`; `None` = every core).
    pub threads: Option<usize>,
    /// Analyze what was read from a truncated file instead of failing (`--allow-truncated`).
    pub allow_truncated: bool,
    /// Show a progress bar on stderr for inputs over [`PROGRESS_OVER`] bytes when stderr is a
    /// terminal.
    pub progress: bool,
    /// Keep device timestamps as recorded (`--no-clock-correction`; see
    /// [`crate::model::clock`]).
    pub no_clock_correction: bool,
    /// Read uncompressed files with `read` instead of a memory map (`STALLSCOPE_NO_MMAP`: for
    /// benchmarks and for files that may shrink while read; the same trace either way).
    pub no_mmap: bool,
    /// Do not chain the reader's blocks (`STALLSCOPE_NO_CHAIN`: for benchmarks; the same trace
    /// either way).
    pub no_chain: bool,
}

impl LoadSettings {
    /// The defaults with the environment's switches (`STALLSCOPE_NO_MMAP`,
    /// `STALLSCOPE_NO_CHAIN`): what every front door starts from.
    pub fn from_env() -> LoadSettings {
        LoadSettings {
            no_mmap: std::env::var_os("STALLSCOPE_NO_MMAP").is_some(),
            no_chain: std::env::var_os("STALLSCOPE_NO_CHAIN").is_some(),
            ..LoadSettings::default()
        }
    }

    /// The reader's options for these settings.
    pub fn options(&self) -> LoadOptions {
        let mut o = LoadOptions {
            progress_over: self.progress.then_some(PROGRESS_OVER),
            no_mmap: self.no_mmap,
            no_clock_correction: self.no_clock_correction,
            ..LoadOptions::default()
        };
        o.kineto.chain = !self.no_chain;
        o.kineto.limits = self.limits;
        o.kineto.allow_truncated = self.allow_truncated;
        if let Some(t) = self.threads {
            o.kineto.threads = t.max(1);
        }
        o
    }

    /// The analysis threads of one file (`0` = automatic).
    pub fn analysis_threads(&self) -> usize {
        self.threads.unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The limits and the switches reach the reader's options from the value alone.
    #[test]
    fn settings_become_the_readers_options() {
        let mut s = LoadSettings {
            threads: Some(3),
            allow_truncated: true,
            progress: true,
            no_clock_correction: true,
            no_chain: true,
            ..LoadSettings::default()
        };
        s.limits.set("names=10").unwrap();
        let o = s.options();
        assert_eq!(o.kineto.limits, s.limits);
        assert_ne!(o.kineto.limits, Limits::default());
        assert_eq!(o.kineto.threads, 3);
        assert!(o.kineto.allow_truncated && o.no_clock_correction && !o.kineto.chain);
        assert_eq!(o.progress_over, Some(PROGRESS_OVER));
        let d = LoadSettings::default().options();
        assert_eq!(d.progress_over, None);
        assert_eq!(d.kineto.limits, Limits::default());
        assert!(d.kineto.chain && !d.no_mmap);
    }
}
