//! Phase times on stderr when `STALLSCOPE_TIMINGS` is set, for profiling (reports are
//! unchanged): `timing: load 2.104 s`, `timing:   kineto finalize 0.031 s`, ...

use std::time::Instant;

/// A stopwatch that prints each lap when `STALLSCOPE_TIMINGS` is set and does nothing
/// otherwise.
pub struct Timings {
    last: Option<Instant>,
    /// Process CPU time (user + system, all threads) at the previous lap.
    cpu: Option<(f64, f64, i64)>,
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
        let last = std::env::var_os("STALLSCOPE_TIMINGS").map(|_| Instant::now());
        Timings {
            cpu: last.and_then(|_| process_cpu_seconds()),
            last,
            indent,
        }
    }

    /// Prints the time since the previous lap (or the start) under `phase`.
    /// Top-level laps also print the CPU time of all threads in the lap, so that a phase's
    /// use of the cores shows (`timing: load 0.205 s (cpu 0.372 s)`).
    pub fn lap(&mut self, phase: &str) {
        if let Some(t) = &mut self.last {
            let wall = t.elapsed().as_secs_f64();
            let cpu = match (self.indent.is_empty(), self.cpu, process_cpu_seconds()) {
                (true, Some(before), Some(now)) => {
                    self.cpu = Some(now);
                    format!(
                        " (cpu {:.3} s, sys {:.3} s, {} faults{})",
                        now.0 - before.0,
                        now.1 - before.1,
                        now.2 - before.2,
                        memory()
                    )
                }
                _ => String::new(),
            };
            eprintln!("timing: {}{phase} {wall:.3} s{cpu}", self.indent);
            *t = Instant::now();
        }
    }
}

/// User + system time and system time of the whole process so far, in seconds, and its page
/// faults (Linux; `None` elsewhere).
fn process_cpu_seconds() -> Option<(f64, f64, i64)> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: getrusage writes into the zeroed struct it is given.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
            return None;
        }
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        let faults = u.ru_minflt + u.ru_majflt;
        Some((
            secs(u.ru_utime) + secs(u.ru_stime),
            secs(u.ru_stime),
            faults,
        ))
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// `, rss N MB, peak N MB` from `/proc/self/status` (Linux; empty elsewhere).
fn memory() -> String {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return String::new();
    };
    let kb = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    match (kb("VmRSS:"), kb("VmHWM:")) {
        (Some(rss), Some(hwm)) => format!(", rss {} MB, peak {} MB", rss / 1024, hwm / 1024),
        _ => String::new(),
    }
}
