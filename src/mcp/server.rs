//! The MCP server: tools on top of the cached reports (see the module docs of [`super`]).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{tool, tool_handler, tool_router, Peer, RoleServer, ServerHandler};
use serde_json::{json, Value};

use super::cache::{json_size, Key, Lru};
use super::paths::{paths_of_uris, Roots};
use super::tools::{
    self, AnalyzeInput, DiffInput, ExplainInput, SliceInput, Table, TableInput, WindowInput,
};
use crate::api::{self, AnalyzeRequest, Input, LoadSettings, TraceRequest};
use crate::report::Report;

/// How long the server waits for the client's `roots/list` answer.
const ROOTS_TIMEOUT: Duration = Duration::from_secs(10);

/// Settings of `stallscope mcp`.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Allowed folders (`--root`); empty: the client's roots, else the working directory.
    pub roots: Vec<PathBuf>,
    /// Reports kept at most.
    pub cache_entries: usize,
    /// Estimated bytes of reports kept at most.
    pub cache_bytes: usize,
    /// How every trace is read: the command's settings (`--threads`, `--limit`,
    /// `--max-inflate`, the environment), without a progress bar.
    pub load: LoadSettings,
}

/// What every tool call shares.
struct State {
    cache: Mutex<Lru<Report>>,
    /// `--root`: fixed, the client's roots are not asked for.
    fixed_roots: Option<Roots>,
    /// The working directory, when the client has no roots.
    cwd_roots: Option<Roots>,
    /// Where `slice` writes when no output is named (created on first use, left for the
    /// client to open after the server has gone).
    out_dir: PathBuf,
    /// Slices written there.
    slices: AtomicU64,
    /// How every trace is read (the same value as the command's).
    load: LoadSettings,
}

impl State {
    fn cache(&self) -> MutexGuard<'_, Lru<Report>> {
        // a panic while holding the lock leaves a consistent cache (every update is one
        // push or pop): keep serving
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The report of `path` over `window`, from the cache or analyzed now (and kept); true
    /// when it came from the cache. The analysis is the command's: the same request
    /// ([`api::analyze`]) with the same load settings.
    fn report(
        &self,
        roots: &Roots,
        path: &str,
        window: &WindowInput,
    ) -> Result<(Arc<Report>, bool), String> {
        let spec = window.spec()?;
        let canon = roots.readable(path)?;
        let p = canon.to_string_lossy().into_owned();
        let key = Key::of(&canon, spec.to_string()).map_err(|e| format!("{p}: {e}"))?;
        if let Some(r) = self.cache().get(&key) {
            return Ok((r, true));
        }
        if let Ok(Input::RankFolder(listing) | Input::SummaryFolder(listing)) = api::guess(&canon) {
            // every file of a folder must lie under the roots too (a symlink in the folder
            // pointing outside is refused)
            for f in &listing.files {
                roots.readable(&f.path.to_string_lossy())?;
            }
        }
        let req = AnalyzeRequest {
            trace: canon,
            window: spec,
            load: self.load.clone(),
            ..AnalyzeRequest::default()
        };
        let mut timings = crate::timings::Timings::nested();
        let mut out = api::analyze(&req, &mut timings).map_err(|e| e.to_string())?;
        api::sort_ops(&mut out.report, api::OpSort::DeviceSelf);
        let rep = Arc::new(out.report);
        let bytes = json_size(&*rep);
        self.cache().insert(key, rep.clone(), bytes);
        Ok((rep, false))
    }

    /// One side of `diff`: a trace through [`State::report`] (cached), a folder of ranks or a
    /// saved JSON report through the api's side loader (not cached: a saved report is read as
    /// it is, a folder's per-rank reports are not kept); true when it came from the cache.
    /// Errors name the side.
    fn side(
        &self,
        roots: &Roots,
        path: &str,
        window: &WindowInput,
        which: crate::diff::Which,
    ) -> Result<(crate::diff::Loaded, bool), String> {
        let name = which.as_str();
        let canon = roots
            .readable(path)
            .map_err(|e| format!("{name} side: {e}"))?;
        if canon.is_dir() || api::input::is_saved_report(&canon) {
            let req = api::DiffRequest {
                window: window.spec()?,
                load: self.load.clone(),
                ..api::DiffRequest::default()
            };
            let l =
                api::load_side(&canon, which, &req.side_options()).map_err(|e| e.to_string())?;
            return Ok((l, false));
        }
        let (rep, cached) = self
            .report(roots, path, window)
            .map_err(|e| format!("{name} side: {e}"))?;
        let loaded = api::report_side(&rep, which).map_err(|e| e.0)?;
        Ok((loaded, cached))
    }

    /// The answer of the `analyze` tool.
    fn analyze(&self, roots: &Roots, a: &AnalyzeInput) -> Result<Value, String> {
        let (rep, cached) = self.report(roots, &a.path, &a.window)?;
        let mut v = if a.detail {
            tools::detail(&rep)?
        } else {
            tools::summary(&rep)?
        };
        v["cached"] = json!(cached);
        Ok(v)
    }

    /// Writes the slice of `input` and describes it.
    fn slice(&self, roots: &Roots, input: &SliceInput) -> Result<Value, String> {
        let spec = input.window.spec()?;
        let canon = roots.readable(&input.path)?;
        let p = canon.to_string_lossy().into_owned();
        let out = match &input.output {
            Some(o) => roots.writable(o)?,
            None => {
                std::fs::create_dir_all(&self.out_dir)
                    .map_err(|e| format!("{}: {e}", self.out_dir.display()))?;
                let stem = canon
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let stem = stem
                    .trim_end_matches(".gz")
                    .trim_end_matches(".json")
                    .to_string();
                let n = self.slices.fetch_add(1, Ordering::Relaxed) + 1;
                self.out_dir.join(format!("{stem}.slice{n}.json.gz"))
            }
        };
        let req = TraceRequest {
            trace: canon,
            window: spec.clone(),
            load: self.load.clone(),
        };
        let wp = api::plan_slice(&req, &mut |_| {}).map_err(|e| match e {
            api::AnalyzeError::Request(m) => format!("{p}: {m}"),
            e => e.to_string(),
        })?;
        let stats = api::write_slice(&req, &out, &wp).map_err(|e| e.to_string())?;
        Ok(json!({
            "output": out,
            "source": p,
            "window": spec.to_string(),
            "steps": wp.steps_desc,
            "excluded": wp.excluded.iter()
                .filter(|e| !e.reason.starts_with("not selected"))
                .map(|e| json!({"step": e.step, "reason": e.reason}))
                .collect::<Vec<_>>(),
            "events_in": stats.events_in,
            "events_out": stats.events_out,
            "flows_dropped": stats.flows_dropped,
            "events_skipped": stats.skipped,
            "bytes_out": stats.bytes_out,
        }))
    }
}

/// The `stallscope mcp` server.
#[derive(Clone)]
pub struct Server {
    state: Arc<State>,
    tool_router: ToolRouter<Server>,
}

fn text_error(msg: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(msg)])
}

#[tool_router]
impl Server {
    /// A server with an empty cache.
    pub fn new(opts: &ServeOptions) -> Server {
        let cwd = std::env::current_dir().ok();
        Server {
            state: Arc::new(State {
                cache: Mutex::new(Lru::new(opts.cache_entries, opts.cache_bytes)),
                fixed_roots: if opts.roots.is_empty() {
                    None
                } else {
                    Roots::new(opts.roots.iter().cloned())
                },
                cwd_roots: cwd.and_then(|d| Roots::new([d])),
                out_dir: std::env::temp_dir()
                    .join(format!("stallscope-mcp-{}", std::process::id())),
                slices: AtomicU64::new(0),
                load: LoadSettings {
                    progress: false,
                    ..opts.load.clone()
                },
            }),
            tool_router: Self::tool_router(),
        }
    }

    /// The `analyze` tool's answer, computed on this thread with the `--root` folders (else
    /// the working directory) as the allowed roots: the tool without a client, for tests and
    /// embedders. The error is the tool error's text.
    pub fn analyze_now(&self, a: &AnalyzeInput) -> Result<Value, String> {
        self.state.analyze(&self.roots_now()?, a)
    }

    /// The `diff` tool's answer, computed in this thread (as [`Server::analyze_now`]).
    pub fn diff_now(&self, d: &DiffInput) -> Result<Value, String> {
        self.state.diff(&self.roots_now()?, d)
    }

    /// The roots of a call made without a client: `--root`, else the working directory.
    fn roots_now(&self) -> Result<Roots, String> {
        self.state
            .fixed_roots
            .clone()
            .or_else(|| self.state.cwd_roots.clone())
            .ok_or_else(|| "refused: no allowed root (the working directory is unreadable)".into())
    }

    /// The folders this call may read: `--root`, else the client's roots when it has any,
    /// else the working directory. MCP roots are deprecated from protocol 2026-07-28 on
    /// (SEP-2577: the request fails there and the working directory applies); clients of the
    /// earlier versions, today's, answer it.
    #[allow(deprecated)]
    async fn roots(&self, peer: &Peer<RoleServer>) -> Result<Roots, String> {
        if let Some(r) = &self.state.fixed_roots {
            return Ok(r.clone());
        }
        let offered = peer
            .peer_info()
            .is_some_and(|i| i.capabilities.roots.is_some());
        if offered {
            let listed = tokio::time::timeout(ROOTS_TIMEOUT, peer.list_roots()).await;
            if let Ok(Ok(list)) = listed {
                if !list.roots.is_empty() {
                    let dirs = paths_of_uris(list.roots.iter().map(|r| r.uri.as_str()));
                    return Roots::new(dirs).ok_or_else(|| {
                        "refused: none of the client's roots is an existing local folder".into()
                    });
                }
            }
        }
        self.state
            .cwd_roots
            .clone()
            .ok_or_else(|| "refused: no allowed root (the working directory is unreadable)".into())
    }

    /// Runs `work` on a blocking thread with the allowed roots; its error is the tool's error.
    async fn run<F>(&self, peer: Peer<RoleServer>, work: F) -> CallToolResult
    where
        F: FnOnce(&State, &Roots) -> Result<Value, String> + Send + 'static,
    {
        let roots = match self.roots(&peer).await {
            Ok(r) => r,
            Err(e) => return text_error(e),
        };
        let state = self.state.clone();
        match tokio::task::spawn_blocking(move || work(&state, &roots)).await {
            Ok(Ok(v)) => CallToolResult::structured(v),
            Ok(Err(msg)) => text_error(msg),
            Err(e) => text_error(format!("internal error: {e}")),
        }
    }

    /// A table tool.
    async fn table(&self, peer: Peer<RoleServer>, which: Table, t: TableInput) -> CallToolResult {
        self.run(peer, move |st, roots| {
            let (rep, cached) = st.report(roots, &t.path, &t.window)?;
            let mut v = tools::table(&rep, which, t.top, t.sort.as_deref(), t.filter.as_deref())?;
            v["cached"] = json!(cached);
            Ok(v)
        })
        .await
    }

    #[tool(
        description = "Why is this PyTorch GPU workload slow? Reads a torch.profiler \
        (Kineto .json/.json.gz) or Nsight Systems (.sqlite) trace, a folder of per-rank \
        traces (adds `ranks`: the cross-rank verdict, findings and per-rank rows; the rest is \
        the slowest rank's) or an Nsight Compute CSV (adds `ncu`) and returns the one-line \
        verdict, the findings ranked by the time each fix could recover per step (id, severity, \
        title, recoverable_us, top evidence lines, advice), and the headline numbers (step \
        time, time breakdown, GPU busy/idle, top kernels). Deterministic: the same numbers as \
        `stallscope analyze --format json`. Window: the steady state unless all/steps/time/focus \
        is given. `cached` says whether the analysis was reused."
    )]
    async fn analyze(
        &self,
        peer: Peer<RoleServer>,
        Parameters(a): Parameters<AnalyzeInput>,
    ) -> CallToolResult {
        self.run(peer, move |st, roots| st.analyze(roots, &a)).await
    }

    #[tool(
        description = "The kernel table of a trace's window: name, category, calls, \
        total/mean/min/max µs, share of kernel time, occupancy, tensor cores. Default order: \
        total time."
    )]
    async fn kernels(
        &self,
        peer: Peer<RoleServer>,
        Parameters(t): Parameters<TableInput>,
    ) -> CallToolResult {
        self.table(peer, Table::Kernels, t).await
    }

    #[tool(
        description = "The operator (aten op) table of a trace's window: calls, host \
        self/total µs, device self/total µs. Default order: device self time."
    )]
    async fn ops(
        &self,
        peer: Peer<RoleServer>,
        Parameters(t): Parameters<TableInput>,
    ) -> CallToolResult {
        self.table(peer, Table::Ops, t).await
    }

    #[tool(
        description = "The annotation phases (record_function ranges, nn.Modules) of a \
        trace's window, depth-first: path, calls, CPU µs, device activities launched and their \
        GPU µs, GPU span share, backward share, top kernels. `filter` matches the path."
    )]
    async fn phases(
        &self,
        peer: Peer<RoleServer>,
        Parameters(t): Parameters<TableInput>,
    ) -> CallToolResult {
        self.table(peer, Table::Phases, t).await
    }

    #[tool(
        description = "The steps (ProfilerStep#N) of a trace's window in time order, each \
        with its start, duration and time breakdown (kernel, memcpy, memset, communication, \
        runtime, dataloader, cpu_exec, other; sort e.g. by `breakdown_us.dataloader`)."
    )]
    async fn steps(
        &self,
        peer: Peer<RoleServer>,
        Parameters(t): Parameters<TableInput>,
    ) -> CallToolResult {
        self.table(peer, Table::Steps, t).await
    }

    #[tool(
        description = "One finding of `analyze` in full: every evidence fact, the metrics \
        behind it, the basis of its recoverable time, all advice, and the locations to open \
        (gaps, kernels, syncs...) with their step, start_us (from the trace start, as \
        Perfetto shows it) and ts_us (the `ts` in the trace file)."
    )]
    async fn explain_finding(
        &self,
        peer: Peer<RoleServer>,
        Parameters(e): Parameters<ExplainInput>,
    ) -> CallToolResult {
        self.run(peer, move |st, roots| {
            let (rep, cached) = st.report(roots, &e.path, &e.window)?;
            let mut v = tools::explain(&rep, &e.id)?;
            v["cached"] = json!(cached);
            Ok(v)
        })
        .await
    }

    #[tool(
        description = "Writes a small, valid Kineto trace of one window (steps, time range \
        or focus; default the steady state) that Perfetto opens, and returns its path: a new \
        .json.gz in the server's temporary folder, or `output` under the allowed roots."
    )]
    async fn slice(
        &self,
        peer: Peer<RoleServer>,
        Parameters(s): Parameters<SliceInput>,
    ) -> CallToolResult {
        self.run(peer, move |st, roots| st.slice(roots, &s)).await
    }

    #[tool(
        description = "Compares two profiles of the same workload (before, after): traces, \
        folders of ranks or saved JSON reports. Returns both verdicts, the step-time change \
        with the noise test (Mann-Whitney U on the per-step durations: faster, slower, \
        within_noise or too_few_steps), the top contributors to the change (kernels, copies, \
        host parts; they add up to the change), and the findings resolved, new and changed. \
        Several captures per side (before_runs, after_runs: repeated runs of one program) \
        judge the change against the run-to-run spread, with a typed verdict (regression, \
        within_budget, improvement, no_change, inconclusive, with the reason); \
        max_regression=5 judges it as `stallscope check` (outcome pass, regression or \
        inconclusive). \
        The same numbers as `stallscope diff --format json`; detail=true for all of it. \
        `cached` says which sides' analyses were reused."
    )]
    async fn diff(
        &self,
        peer: Peer<RoleServer>,
        Parameters(d): Parameters<DiffInput>,
    ) -> CallToolResult {
        self.run(peer, move |st, roots| st.diff(roots, &d)).await
    }
}

impl State {
    /// The answer of the `diff` tool: each capture of each side through [`State::side`]
    /// (cached), compared by the api (several captures per side: repeated runs), judged
    /// against `max_regression` when given.
    fn diff(&self, roots: &Roots, d: &DiffInput) -> Result<Value, String> {
        use crate::diff::Which;
        let names = |first: &String, more: &[String]| -> Vec<String> {
            std::iter::once(first).chain(more).cloned().collect()
        };
        let (nb, na) = (
            names(&d.before, &d.before_runs),
            names(&d.after, &d.after_runs),
        );
        let mut cached = Vec::new();
        let mut load = |ps: &[String], which| -> Result<Vec<crate::diff::Loaded>, String> {
            ps.iter()
                .map(|p| {
                    let (l, c) = self.side(roots, p, &d.window, which)?;
                    cached.push(c);
                    Ok(l)
                })
                .collect()
        };
        if let Some(p) = d.max_regression {
            if !(p.is_finite() && p >= 0.0) {
                return Err(format!("max_regression must be a percentage ≥ 0, not {p}"));
            }
        }
        let b = load(&nb, Which::Before)?;
        let a = load(&na, Which::After)?;
        let budget = d.max_regression.map(|p| api::budget(None, Some(p)));
        let options = budget.as_ref().map(api::check_options).unwrap_or_default();
        let mut c = api::compare_loaded(&b, &a, (&nb, &na), &options);
        if let Some(budget) = &budget {
            api::judge(&mut c, budget);
        }
        let (cb, ca) = cached.split_at(nb.len());
        let all = |x: &[bool]| x.iter().all(|c| *c);
        {
            let mut v = if d.detail {
                serde_json::to_value(&c)
                    .map_err(|e| format!("internal error: serializing the comparison: {e}"))?
            } else {
                tools::diff_summary(&c)?
            };
            v["cached"] = json!({"before": all(cb), "after": all(ca)});
            Ok(v)
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("stallscope", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "stallscope answers why a PyTorch GPU workload is slow, from its profiler \
                 trace, deterministically. Start with `analyze` (verdict and ranked findings); \
                 then `explain_finding` for one finding's evidence and timestamps, the table \
                 tools (`kernels`, `ops`, `phases`, `steps`) for details, `slice` for a small \
                 trace to open in Perfetto, `diff` to compare two profiles (before, after). \
                 Paths must lie under the client's roots or the \
                 server's working directory. Reports are cached per file and window.",
            )
    }
}
