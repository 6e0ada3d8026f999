//! Phase times on stderr when `STALLSCOPE_TIMINGS` is set, for profiling (reports are
//! unchanged): `timing: load 2.104 s`, `timing:   kineto finalize 0.031 s`, ...

use std::time::Instant;

/// A stopwatch that prints each lap when `STALLSCOPE_TIMINGS` is set and does nothing
/// otherwise.
pub struct Timings {
    last: Option<Instant>,
    indent: &'static str,
}

impl Timings {
    /// A top-level stopwatch (the CLI's phases).
    pub fn from_env() -> Self {
        Self::with_indent("")
    }

    /// A stopwatch for the steps inside a phase, printed indented under it.
    pub fn nested() -> Self {
        Self::with_indent("  ")
    }

    fn with_indent(indent: &'static str) -> Self {
        Timings {
            last: std::env::var_os("STALLSCOPE_TIMINGS").map(|_| Instant::now()),
            indent,
        }
    }

    /// Prints the time since the previous lap (or the start) under `phase`.
    pub fn lap(&mut self, phase: &str) {
        if let Some(t) = &mut self.last {
            eprintln!(
                "timing: {}{phase} {:.3} s",
                self.indent,
                t.elapsed().as_secs_f64()
            );
            *t = Instant::now();
        }
    }
}
