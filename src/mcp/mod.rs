//! `stallscope mcp`: a Model Context Protocol server over standard input and output, so that a
//! coding agent (Claude Code, Cursor, VS Code, any MCP client) can ask stallscope why a
//! workload is slow and get the same deterministic answer as the command line.
//!
//! A front end beside [`crate::cli`]: it runs the same pipeline (ingest → analysis →
//! [`crate::report::Report`]) and formats the report's data; nothing below imports it. Built
//! with the `mcp` cargo feature (on by default; it brings the `rmcp` SDK and tokio).
//!
//! * [`server`]: the tools (`analyze`, `kernels`, `ops`, `phases`, `steps`,
//!   `explain_finding`, `slice`, `diff`) on the official Rust SDK.
//! * [`tools`]: their JSON-schema'd inputs and the answers cut from a report.
//! * [`cache`]: reports kept per (canonical path, size, modification time, window), bounded in
//!   entries and estimated bytes, least recently used first out.
//! * [`paths`]: reads only under the allowed roots, writes only to a temporary folder or a
//!   named `.json`/`.json.gz` under them.
//!
//! Every failure of a call (a path outside the roots, a missing or truncated file, a bad
//! window) is a tool error (`isError: true`) whose text is the command line's one-line error,
//! byte offset included; the server keeps running. A panic inside a call is caught by its
//! blocking task and reported the same way. Tools and schemas: `docs/mcp.md`.

pub mod cache;
pub mod paths;
pub mod server;
pub mod tools;

pub use server::{ServeOptions, Server};

/// Serves MCP on standard input and output until the client closes them; returns the exit
/// code (1 when the runtime or the transport failed).
pub fn serve(opts: ServeOptions) -> i32 {
    use rmcp::ServiceExt;
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: starting the MCP server: {e}");
            return 1;
        }
    };
    let server = Server::new(&opts);
    rt.block_on(async move {
        let running = match server.serve(rmcp::transport::stdio()).await {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: MCP handshake: {e}");
                return 1;
            }
        };
        match running.waiting().await {
            Ok(_) => 0,
            Err(e) => {
                eprintln!("error: MCP server: {e}");
                1
            }
        }
    })
}
