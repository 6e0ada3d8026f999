//! `stallscope mcp`: starts the MCP server with the command's load settings.

use std::path::PathBuf;

use super::args::parse_threads;
use crate::api::LoadSettings;

pub(super) const MCP_HELP: &str = "\
Configure it in your MCP client (it starts the server itself):
  claude mcp add stallscope -- stallscope mcp          # Claude Code
  {\"mcpServers\": {\"stallscope\": {\"command\": \"stallscope\", \"args\": [\"mcp\"]}}}
                                                       # Cursor (.cursor/mcp.json) and others

The server reads only trace files under the client's MCP roots (when the client offers roots),
else under its working directory, or under the --root folders when given; it writes only into
a temporary folder, or to a .json/.json.gz output the client names under those folders.
Analyses are cached per file (path, size, modification time) and window. Tools and their
input schemas: docs/mcp.md. Standard output carries the protocol; messages go to stderr.";

/// `stallscope mcp` options.
#[derive(clap::Args, Debug)]
pub(super) struct McpArgs {
    /// Allow reading traces under DIR (repeatable). Default: the client's roots, else the
    /// working directory.
    #[arg(long, value_name = "DIR")]
    pub(super) root: Vec<PathBuf>,

    /// Reports kept in memory at most.
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub(super) cache_entries: usize,

    /// Estimated memory of the kept reports at most, MB (0 keeps none).
    #[arg(long, value_name = "MB", default_value_t = 512)]
    pub(super) cache_mb: usize,

    /// Parser and analysis threads per call (default: all cores).
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    pub(super) threads: Option<usize>,
}

/// `mcp`: the server, reading every trace with the command's load settings.
pub(super) fn mcp(args: McpArgs, load: LoadSettings) -> i32 {
    for r in &args.root {
        if !r.is_dir() {
            eprintln!("error: --root {}: not a folder", r.display());
            return 2;
        }
    }
    crate::mcp::serve(crate::mcp::ServeOptions {
        roots: args.root,
        cache_entries: args.cache_entries,
        cache_bytes: args.cache_mb.saturating_mul(1 << 20),
        load: LoadSettings {
            threads: args.threads,
            ..load
        },
    })
}
