//! What several subcommands share: the window flags, `--threads`, colours, and writing
//! warnings and output.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::ValueEnum;

use crate::report::Report;

pub(super) const WINDOW_HELP: &str = "\
Window (all commands): by default the steady state — every ProfilerStep except warm-up steps
that contain torch.compile/autotune work and outliers over 1.5× the median step; the report
says which steps were left out and why, and how much compile work there was. Inference-server
captures (vLLM execute_*, SGLang step[…]/run_batch, one cudaGraphLaunch per decode) have no
ProfilerStep: each iteration is a step (Iteration#1, #2, …; prefill, decode, mixed compared
with their own kind), and the report names the rule that found them.
  --all               every step
  --steps 3..6        ProfilerStep#3 to #6, or Iteration#3 to #6 (inclusive); also 5, 3.., ..6
  --time 1000..2500   µs from the start of the trace (as in the report's start_us)
  --focus denoise     only the time inside annotations named `denoise` (exact name, else
                      names containing it), each up to the end of the GPU work it launched;
                      combines with --all/--steps/--time";

/// Window selection flags shared by `analyze`, `phases` and `slice`.
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = "Window", after_long_help = WINDOW_HELP)]
pub(super) struct WindowArgs {
    /// Analyze every step (default: the steady state, without compile warm-up and outliers).
    #[arg(long, conflicts_with_all = ["steps", "time"])]
    all: bool,

    /// Only these ProfilerStep numbers, inclusive: 3..6, 5, 3.. or ..6.
    #[arg(long, value_name = "A..B", value_parser = crate::window::parse_steps, conflicts_with = "time")]
    steps: Option<crate::window::WindowSpec>,

    /// Only this time range, in µs from the start of the trace: 1000..2500 (ends may be open).
    #[arg(long, value_name = "START..END", value_parser = crate::window::parse_time)]
    time: Option<crate::window::WindowSpec>,

    /// Only the time inside annotations named NAME (exact, else containing NAME), e.g. denoise.
    #[arg(long, value_name = "NAME")]
    focus: Option<String>,
}

impl WindowArgs {
    /// The window these flags ask for (exit 2 when they do not go together).
    pub(super) fn spec(&self) -> Result<crate::window::WindowSpec, (i32, String)> {
        crate::window::WindowSpec::compose(
            self.all,
            self.steps.clone(),
            self.time.clone(),
            self.focus.clone(),
        )
        .map_err(|e| (2, format!("error: {e}")))
    }
}

/// Colour choice.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub(super) enum ColorChoice {
    /// Colour when standard output is a terminal and NO_COLOR is unset or empty.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

impl ColorChoice {
    /// Whether to colour: `auto` colours a terminal (not a file, `to_file`) unless NO_COLOR
    /// is set and non-empty (no-color.org).
    pub(super) fn resolve(self, to_file: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
                !to_file && io::stdout().is_terminal() && !no_color
            }
        }
    }
}

/// `--threads N`: a positive count (0 used to mean one parser thread, unlike the analyses'
/// "automatic"; leave the flag out for all cores).
pub(super) fn parse_threads(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1 (leave --threads out to use every core)".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// A reading warning on stderr; names and keys in it come from the file and are shown as
/// text ([`crate::text::printable`]).
pub(super) fn print_warning(path: &str, w: &crate::report::mirrors::WarningInfo) {
    let at = w
        .first_offset
        .map(|o| format!(" (first at byte {o})"))
        .unwrap_or_default();
    let line = format!("warning: {}: {} ×{}{}", path, w.message, w.count, at);
    eprintln!("{}", crate::text::printable(&line));
}

/// Writes `buf` to standard output (a closed pipe is not an error).
pub(super) fn write_stdout(buf: &[u8]) -> Result<(), (i32, String)> {
    let mut out = io::stdout().lock();
    if let Err(e) = out.write_all(buf).and_then(|_| out.flush()) {
        if e.kind() != io::ErrorKind::BrokenPipe {
            return Err((1, format!("error: writing to standard output: {e}")));
        }
    }
    Ok(())
}

/// Writes `buf` to the file, or to standard output.
pub(super) fn write_output(path: Option<&Path>, buf: &[u8]) -> Result<(), (i32, String)> {
    match path {
        Some(p) => std::fs::write(p, buf).map_err(|e| (1, format!("error: {}: {e}", p.display()))),
        None => write_stdout(buf),
    }
}

/// [`write_output`] for an optional output path.
pub(super) fn write_out(output: &Option<PathBuf>, buf: &[u8]) -> Result<(), (i32, String)> {
    write_output(output.as_deref(), buf)
}

/// One section of the JSON report with the report's header fields and window (`phases`,
/// `memory`), pretty-printed into `buf`.
pub(super) fn section_json(
    rep: &Report,
    key: &str,
    value: serde_json::Value,
    buf: &mut Vec<u8>,
) -> Result<(), (i32, String)> {
    let v = serde_json::json!({
        "schema_version": rep.schema_version,
        "generator": rep.generator,
        "source": rep.source,
        "window": rep.window,
        key: value,
    });
    serde_json::to_writer_pretty(&mut *buf, &v)
        .map_err(|e| (1, format!("error: rendering: {e}")))?;
    buf.push(b'\n');
    Ok(())
}

/// An error of the api as the command says it: one line, exit 2.
pub(super) fn input_error(e: crate::api::AnalyzeError) -> (i32, String) {
    (2, format!("error: {e}"))
}
