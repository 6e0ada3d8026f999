//! Nsight Systems SQLite exports (`nsys export --type sqlite`) and `.nsys-rep` reports.
//!
//! The export is read into the same [`Trace`] as a Kineto trace:
//!
//! | export table | model |
//! |---|---|
//! | `CUPTI_ACTIVITY_KIND_RUNTIME` | [`CpuKind::Runtime`] (`eventClass` 0) / [`CpuKind::Driver`] (1) with `correlation`; names as recorded (`cudaLaunchKernel_v7000`) |
//! | `CUPTI_ACTIVITY_KIND_KERNEL` | [`GpuKind::Kernel`] named by `demangledName` (else `shortName`), grid, block, registers, shared memory |
//! | `CUPTI_ACTIVITY_KIND_MEMCPY` | [`GpuKind::Memcpy`] named like Kineto: `Memcpy HtoD (Pageable -> Device)` |
//! | `CUPTI_ACTIVITY_KIND_MEMSET` | [`GpuKind::Memset`] named `Memset (Device)` |
//! | `CUPTI_ACTIVITY_KIND_SYNCHRONIZATION` | [`GpuKind::Sync`] named like Kineto (`Event Sync`, `Stream Wait Event`, `Stream Sync`, `Context Sync`) |
//! | `CUPTI_ACTIVITY_KIND_GRAPH_TRACE` | one [`GpuKind::Kernel`] per whole-graph replay, `[CUDA graph N replay]` (graph-trace mode: the graph's kernels are not in the export) |
//! | `NVTX_EVENTS` push/pop ranges (59, 70) | [`CpuKind::UserAnnotation`] on their thread, so they nest into per-thread trees by containment; PyTorch `emit_nvtx` operator ranges (`aten::mm, seq = 3, op_id = 12`) become [`CpuKind::Op`] named `aten::mm` |
//! | `NVTX_EVENTS` start/end ranges (60, 71) | [`CpuKind::UserAnnotation`] on a companion pseudo-thread of their start thread (tid negated, name suffixed `[NVTX start/end]`): they may overlap freely and are no part of the push/pop tree |
//! | `CUPTI_ACTIVITY_KIND_OVERHEAD` | [`CpuKind::Other`] (`Command Buffer Full`, ...) |
//! | `GPU_METRICS` + `TARGET_INFO_GPU_METRICS`, or `GENERIC_EVENTS` (≤ 2022) | [`Trace::gpu_metrics`] |
//! | `CUDA_GPU_MEMORY_USAGE_EVENTS` (`--cuda-memory-usage=true`) | [`Trace::memory`], the same memory timeline as Kineto's `[memory]` events (CUDA-API allocations; see `Reader::read_memory`) |
//! | `OSRT_API` (`--trace=osrt`), outermost calls | [`Trace::os`] calls (`poll`, `pthread_cond_wait`, …): they only describe host time no span explains |
//! | `SCHED_EVENTS` (`--cpuctxsw=process-tree`) | [`Trace::os`] off-CPU intervals per thread (switch out to switch in) |
//! | `COMPOSITE_EVENTS` + `SAMPLING_CALLCHAINS` depth 0 (`--sample=process-tree`) | [`Trace::os`] CPU samples with their leaf function |
//! | `TARGET_INFO_GPU`, `TARGET_INFO_CUDA_DEVICE` | [`Trace::devices`] |
//! | `ThreadNames`, `PROCESSES` | [`Trace::threads`] (`pid = globalTid >> 24 & 0xFFFFFF`, `tid = globalTid & 0xFFFFFF`) |
//!
//! Every table and column is looked up by name (`sqlite_master`, `PRAGMA table_info`): exports
//! create tables lazily, schemas 2.x to 3.x differ, and trimmed files exist. Missing tables and
//! columns become [`Warning`]s, never errors. Timestamps stay integer ns on the capture
//! timebase. Correlation ids are per process: with several processes they are made unique as
//! `process rank << 40 | correlationId` (the first process keeps its ids). Runtime calls get
//! the External id of the innermost `emit_nvtx` operator range around them on their thread,
//! so the operator table works as for Kineto.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

mod rows;
use rows::{Query, Row};

use super::LoadError;
use crate::model::fasthash::HashMap;
use crate::model::memory::{MemEvent, MemoryBuilder, MemoryEvents};
use crate::model::os::{CpuSample, OsActivity, OsCall};
use crate::model::{
    stream_id, CpuEvent, CpuKind, Device, GpuEvent, GpuKind, GpuMetricSeries, Interner,
    IntervalSet, KernelInfo, KernelInfoTable, NameId, Ns, Source, SourceFormat, Thread, Trace,
    Vendor, Warning, MAX_TIME_NS, NONE,
};

const RUNTIME: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";
const KERNEL: &str = "CUPTI_ACTIVITY_KIND_KERNEL";
const MEMCPY: &str = "CUPTI_ACTIVITY_KIND_MEMCPY";
const MEMSET: &str = "CUPTI_ACTIVITY_KIND_MEMSET";
const SYNC: &str = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
const GRAPH_TRACE: &str = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE";
const OVERHEAD: &str = "CUPTI_ACTIVITY_KIND_OVERHEAD";
const NVTX: &str = "NVTX_EVENTS";
const OSRT: &str = "OSRT_API";
const SCHED: &str = "SCHED_EVENTS";
const SAMPLES: &str = "COMPOSITE_EVENTS";
const CALLCHAINS: &str = "SAMPLING_CALLCHAINS";
/// The innermost frames of a CPU sample searched for its function ([`Reader::read_samples`]).
const SAMPLE_FRAMES: i64 = 4;
const MEMORY_USAGE: &str = "CUDA_GPU_MEMORY_USAGE_EVENTS";

/// `ENUM_CUDA_MEMCPY_OPER` (`copyKind`), fixed since schema 2.x.
const COPY_KINDS: [&str; 14] = [
    "Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP",
    "UVM HtoD", "UVM DtoH", "UVM DtoD",
];

/// `ENUM_CUDA_MEM_KIND` (`srcKind`, `dstKind`, `memKind`).
const MEM_KINDS: [&str; 8] = [
    "Pageable",
    "Pinned",
    "Device",
    "Array",
    "Managed",
    "Device Static",
    "Managed Static",
    "Unknown",
];

/// `ENUM_CUPTI_SYNC_TYPE` (`syncType`) in Kineto's names.
fn sync_name(t: Option<i64>) -> &'static str {
    match t {
        Some(1) => "Event Sync",
        Some(2) => "Stream Wait Event",
        Some(3) => "Stream Sync",
        Some(4) => "Context Sync",
        _ => "Unknown Sync",
    }
}

fn copy_kind(k: Option<i64>) -> &'static str {
    k.and_then(|k| COPY_KINDS.get(k as usize).copied())
        .unwrap_or("Unknown")
}

fn mem_kind(k: Option<i64>) -> Option<&'static str> {
    k.and_then(|k| MEM_KINDS.get(k as usize).copied())
}

/// Kineto's memcpy name: `Memcpy HtoD (Pageable -> Device)`; without kinds, `Memcpy HtoD`.
pub fn memcpy_name(copy: Option<i64>, src: Option<i64>, dst: Option<i64>) -> String {
    match (mem_kind(src), mem_kind(dst)) {
        (Some(s), Some(d)) => format!("Memcpy {} ({s} -> {d})", copy_kind(copy)),
        _ => format!("Memcpy {}", copy_kind(copy)),
    }
}

/// Kineto's memset name: `Memset (Device)`.
pub fn memset_name(kind: Option<i64>) -> String {
    match mem_kind(kind) {
        Some(k) => format!("Memset ({k})"),
        None => "Memset".into(),
    }
}

/// Process id of a `globalTid`/`globalPid`.
pub fn pid_of(global: i64) -> i64 {
    (global >> 24) & 0xFF_FFFF
}

/// Thread id of a `globalTid`.
pub fn tid_of(global: i64) -> i64 {
    global & 0xFF_FFFF
}

/// PyTorch `emit_nvtx` ranges carry the operator's sequence number and id after its name
/// (`aten::mm, seq = 3, op_id = 12, sizes = [[2, 3]]`). Returns the bare name and whether the
/// suffix was there.
pub fn strip_emit_nvtx(text: &str) -> (&str, bool) {
    let cut = [", seq = ", ", op_id = ", ", sizes = ", ", input_op_ids = "]
        .iter()
        .filter_map(|k| text.find(k))
        .min();
    match cut {
        Some(i) => (&text[..i], true),
        None => (text, false),
    }
}

/// True for operator names in a lower-case C++ namespace (`aten::mm`, `c10d::allreduce_`,
/// `flash_attn::_flash_attn_forward`); `FSDP::pre_forward (…)` and plain names are annotations.
fn is_operator_name(name: &str) -> bool {
    let Some((ns, op)) = name.split_once("::") else {
        return false;
    };
    !ns.is_empty()
        && ns
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !op.is_empty()
        && op
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b':')
}

/// A RUNTIME row: start, end, eventClass, globalTid, correlationId, nameId, name.
type RuntimeRow = (
    i64,
    i64,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<String>,
);

/// A (copyKind, srcKind, dstKind) key.
type CopyKey = (Option<i64>, Option<i64>, Option<i64>);

/// One table: its name as stored and its columns.
struct Table {
    name: String,
    cols: Vec<String>,
}

/// An open export with its table list.
struct Db<'p> {
    conn: Connection,
    path: &'p str,
    tables: HashMap<String, Table>,
}

impl<'p> Db<'p> {
    fn open(file: &Path, path: &'p str) -> Result<Db<'p>, LoadError> {
        let conn = Connection::open_with_flags(
            file,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| LoadError::new(path, format!("cannot open the SQLite file: {e}")))?;
        let mut db = Db {
            conn,
            path,
            tables: HashMap::default(),
        };
        let unreadable = |e: rusqlite::Error| {
            LoadError::new(
                path,
                format!(
                    "an SQLite file (Nsight Systems export?) whose table list cannot be read: {e}"
                ),
            )
        };
        let names: Vec<String> = {
            let mut st = db
                .conn
                .prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
                .map_err(unreadable)?;
            let rows = st
                .query_map([], |r| r.get::<_, String>(0))
                .map_err(unreadable)?;
            rows.collect::<Result<_, _>>().map_err(unreadable)?
        };
        for name in names {
            let sql = format!("PRAGMA table_info(\"{}\")", name.replace('"', "\"\""));
            let cols: Vec<String> = {
                let mut st = db.conn.prepare(&sql).map_err(|e| db.err(&name, e))?;
                let rows = st
                    .query_map([], |r| r.get::<_, String>(1))
                    .map_err(|e| db.err(&name, e))?;
                rows.collect::<Result<_, _>>()
                    .map_err(|e| db.err(&name, e))?
            };
            db.tables
                .insert(name.to_ascii_lowercase(), Table { name, cols });
        }
        Ok(db)
    }

    fn err(&self, table: &str, e: rusqlite::Error) -> LoadError {
        LoadError::new(self.path, format!("table {table}: {e}"))
    }

    fn table(&self, name: &str) -> Option<&Table> {
        self.tables.get(&name.to_ascii_lowercase())
    }

    fn has(&self, name: &str) -> bool {
        self.table(name).is_some()
    }

    fn col<'t>(&'t self, table: &str, col: &str) -> Option<&'t str> {
        self.table(table)?
            .cols
            .iter()
            .find(|c| c.eq_ignore_ascii_case(col))
            .map(|c| c.as_str())
    }

    /// Columns of `cols` that `table` lacks.
    fn missing(&self, table: &str, cols: &[&str]) -> Vec<String> {
        cols.iter()
            .filter(|c| self.col(table, c).is_none())
            .map(|c| c.to_string())
            .collect()
    }

    /// Selects `cols` (NULL for absent columns) from `table`, in rowid order, calling `f` on
    /// each row. Returns the number of rows (0 when the table is absent).
    fn rows(
        &self,
        table: &str,
        cols: &[&str],
        filter: &str,
        f: impl FnMut(&Row),
    ) -> Result<u64, LoadError> {
        let Some(t) = self.table(table) else {
            return Ok(0);
        };
        let select: Vec<String> = cols
            .iter()
            .map(|c| match self.col(table, c) {
                Some(real) => format!("\"{real}\""),
                None => "NULL".into(),
            })
            .collect();
        let sql = format!("SELECT {} FROM \"{}\"{}", select.join(", "), t.name, filter);
        self.query(&t.name, &sql, f)
    }

    /// Runs `sql`, a query of `table` (named in errors), calling `f` on each row; the number
    /// of rows.
    fn query(&self, table: &str, sql: &str, mut f: impl FnMut(&Row)) -> Result<u64, LoadError> {
        let Some(mut rows) = Query::prepare(&self.conn, sql).map_err(|e| self.err(table, e))?
        else {
            return Ok(0);
        };
        let mut n = 0u64;
        loop {
            match rows.step() {
                Ok(Some(r)) => {
                    n += 1;
                    f(&r);
                }
                Ok(None) => break,
                Err(e) => {
                    return Err(LoadError::new(
                        self.path,
                        format!("table {table}: row {}: {e}", n + 1),
                    ))
                }
            }
        }
        Ok(n)
    }

    /// `name → value` of a two-column metadata table.
    fn pairs(&self, table: &str) -> Result<Vec<(String, String)>, LoadError> {
        let mut out = Vec::new();
        self.rows(table, &["name", "value"], "", |r| {
            if let (Some(n), Some(v)) = (r.s(0), r.s(1)) {
                out.push((n, v));
            }
        })?;
        Ok(out)
    }
}

/// Warning code of device records written twice under one correlation id, counted once;
/// the capture check reports them (`duplicate-records`).
pub const DUPLICATE_RECORDS: &str = "duplicate-records";

/// Warning code of nsys's own reports of lost events (`DIAGNOSTIC_EVENT`), which the
/// capture check turns into `producer-lost-events`.
pub const LOST_EVENTS: &str = "nsys-lost-events";

/// True for an nsys diagnostic that reports events lost or possibly missing ("Some CUPTI
/// events might be missing", "Not all CUDA events might have been collected", dropped events,
/// buffer overflows). The NVTX and OS-runtime variants of these messages do not count: they
/// do not take device records away.
pub fn reports_lost_events(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    if t.contains("nvtx") || t.contains("os runtime") || t.contains("opengl") {
        return false;
    }
    t.contains("might be missing")
        || t.contains("not all cuda events")
        || (t.contains("dropped") && t.contains("event"))
        || t.contains("overflow")
}

/// Collects warnings by code.
#[derive(Default)]
struct Warnings(BTreeMap<&'static str, Warning>);

impl Warnings {
    fn add(&mut self, code: &'static str, count: u64, message: String) {
        self.0
            .entry(code)
            .and_modify(|w| w.count += count)
            .or_insert(Warning {
                code,
                count,
                first_offset: None,
                message,
            });
    }
}

/// The innermost frame of each CPU sample that names a function (see
/// [`Reader::read_samples`]), and the callchain rows read.
struct SampleLeaves {
    /// Sample id → (depth, symbol string id) of its innermost resolved user-mode frame.
    leaf: HashMap<i64, (i64, i64)>,
    rows: u64,
}

/// [`SampleLeaves`] of an export, `None` without the sample tables: a scan of the callchains
/// that needs nothing else the reader learns, so it can run beside the profiler tables on a
/// connection of its own.
fn sample_leaves(db: &Db) -> Result<Option<SampleLeaves>, LoadError> {
    let (Some(t), Some(id), Some(symbol), Some(depth), true) = (
        db.table(CALLCHAINS),
        db.col(CALLCHAINS, "id"),
        db.col(CALLCHAINS, "symbol"),
        db.col(CALLCHAINS, "stackDepth"),
        db.has(SAMPLES),
    ) else {
        return Ok(None);
    };
    // the innermost frame that is resolved and in user mode among the innermost
    // SAMPLE_FRAMES: an unresolved address or a kernel frame names nothing the user can
    // act on. A plain scan with the depth bound (an aggregate over every frame of every
    // sample took 1.2 s on an 800 MB export)
    let mut filter = vec![format!("\"{depth}\" < {SAMPLE_FRAMES}")];
    for c in ["unresolved", "kernelMode"] {
        if let Some(c) = db.col(CALLCHAINS, c) {
            filter.push(format!("coalesce(\"{c}\", 0) = 0"));
        }
    }
    let sql = format!(
        "SELECT \"{id}\", \"{symbol}\", \"{depth}\" FROM \"{}\" WHERE {}",
        t.name,
        filter.join(" AND ")
    );
    let mut leaf: HashMap<i64, (i64, i64)> = HashMap::default();
    let rows = db.query(CALLCHAINS, &sql, |r| {
        if let (Some(id), Some(sym), Some(d)) = (r.i(0), r.i(1), r.i(2)) {
            let e = leaf.entry(id).or_insert((d, sym));
            if d < e.0 {
                *e = (d, sym);
            }
        }
    })?;
    Ok(Some(SampleLeaves { leaf, rows }))
}

/// The reader's state while filling a trace.
struct Reader<'d, 'p> {
    /// The export (a shared reference: rows are converted as they are read, with the reader
    /// borrowed mutably beside it).
    db: &'d Db<'p>,
    /// `StringIds` (shared with the side readers of [`read_file`]).
    strings: std::sync::Arc<HashMap<i64, String>>,
    names: Interner,
    name_cache: HashMap<i64, NameId>,
    threads: Vec<Thread>,
    thread_index: HashMap<(i64, i64), u32>,
    thread_names: HashMap<i64, String>,
    process_names: HashMap<i64, String>,
    process_rank: HashMap<i64, u64>,
    cpu: Vec<CpuEvent>,
    gpu: Vec<GpuEvent>,
    kernel_infos: KernelInfoTable,
    warnings: Warnings,
    sm_count: HashMap<i64, u32>,
    rows: u64,
    /// The `globalTid`s of the threads the profiler recorded spans on ([`Reader::thread`]).
    global_tids: std::collections::BTreeSet<i64>,
    /// The rank of rows without a process ([`Reader::correlation`]): the first process's (0),
    /// or in a side reader [`SIDE_NO_PROCESS`], which [`Reader::join`] makes 0.
    no_process: u64,
}

/// [`Reader::no_process`] of a side reader: a rank no process gets.
const SIDE_NO_PROCESS: u64 = (1 << 24) - 1;

/// The device events a side reader of [`read_file`] read on a connection of its own, with
/// what they refer to: its names, kernel launch details, warnings, rows, and the processes
/// it ranked for correlations, in rank order ([`Reader::correlation`]).
struct Side {
    names: Interner,
    gpu: Vec<GpuEvent>,
    kernel_infos: KernelInfoTable,
    warnings: Warnings,
    rows: u64,
    ranks: Vec<i64>,
}

impl<'d, 'p> Reader<'d, 'p> {
    /// A reader of `db` with no rows read, knowing `strings` (the `StringIds`).
    fn new(db: &'d Db<'p>, strings: std::sync::Arc<HashMap<i64, String>>) -> Self {
        Reader {
            db,
            strings,
            names: Interner::new(),
            name_cache: HashMap::default(),
            threads: Vec::new(),
            thread_index: HashMap::default(),
            thread_names: HashMap::default(),
            process_names: HashMap::default(),
            process_rank: HashMap::default(),
            cpu: Vec::new(),
            gpu: Vec::new(),
            kernel_infos: KernelInfoTable::new(),
            warnings: Warnings::default(),
            sm_count: HashMap::default(),
            rows: 0,
            global_tids: Default::default(),
            no_process: 0,
        }
    }

    /// What a side reader read (device tables only: no host thread, no OS record), to be
    /// joined with [`Reader::join`].
    fn into_side(self) -> Side {
        let mut ranks: Vec<(i64, u64)> = self.process_rank.into_iter().collect();
        ranks.sort_unstable_by_key(|&(_, r)| r);
        Side {
            names: self.names,
            gpu: self.gpu,
            kernel_infos: self.kernel_infos,
            warnings: self.warnings,
            rows: self.rows,
            ranks: ranks.into_iter().map(|(p, _)| p).collect(),
        }
    }

    /// Takes in a side reader's device events as if this reader had read its tables next:
    /// its names interned here in the order it met them, its processes ranked after the ones
    /// met here, its warnings after these, its kernel launch details after these. Returns the
    /// side's name ids mapped to this reader's (`names[side id]`), for whatever else the side
    /// read.
    fn join(&mut self, side: Side) -> Vec<NameId> {
        let names: Vec<NameId> = side
            .names
            .iter()
            .map(|(_, s)| self.names.intern(s))
            .collect();
        let ranks: Vec<u64> = (side.ranks.iter())
            .map(|&p| {
                let next = self.process_rank.len() as u64;
                *self.process_rank.entry(p).or_insert(next)
            })
            .collect();
        // (only the kernel table adds launch details, and only a side reads it: the side's
        // table is taken whole; were there two, the side's ids would be renumbered)
        let infos: Option<Vec<u32>> = if self.kernel_infos.len() <= 1 {
            self.kernel_infos = side.kernel_infos;
            None
        } else {
            let side_infos = side.kernel_infos.into_vec();
            Some(
                side_infos
                    .iter()
                    .map(|k| self.kernel_infos.intern(k))
                    .collect(),
            )
        };
        let mut gpu = side.gpu;
        for g in gpu.iter_mut() {
            g.name = names[g.name.0 as usize];
            if let Some(infos) = &infos {
                g.info = infos[g.info as usize];
            }
            if g.correlation != 0 {
                let (rank, low) = (g.correlation >> 40, g.correlation & ((1 << 40) - 1));
                let rank = match rank {
                    SIDE_NO_PROCESS => 0,
                    r => ranks[r as usize],
                };
                g.correlation = (rank << 40) | low;
            }
        }
        if self.gpu.is_empty() {
            self.gpu = gpu;
        } else {
            self.gpu.extend(gpu);
        }
        for (code, w) in side.warnings.0 {
            self.warnings.add(code, w.count, w.message);
        }
        self.rows += side.rows;
        names
    }

    fn string_id(&mut self, id: Option<i64>) -> Option<NameId> {
        let id = id?;
        if let Some(&n) = self.name_cache.get(&id) {
            return Some(n);
        }
        let s = self.strings.get(&id)?;
        let n = self.names.intern(s);
        self.name_cache.insert(id, n);
        Some(n)
    }

    /// Unique correlation for a (process, correlationId) pair.
    fn correlation(&mut self, pid: Option<i64>, corr: Option<i64>) -> u64 {
        let Some(c) = corr.filter(|&c| c > 0) else {
            return 0;
        };
        // a table without process ids (trimmed exports) joins the first process
        let rank = match pid {
            Some(p) => {
                let next = self.process_rank.len() as u64;
                *self.process_rank.entry(p).or_insert(next)
            }
            None => self.no_process,
        };
        (rank << 40) | (c as u64 & ((1 << 40) - 1))
    }

    /// Thread index for a `globalTid`; `pseudo` gives the start/end-range companion thread.
    fn thread(&mut self, global_tid: Option<i64>, pseudo: bool) -> u32 {
        let g = global_tid.unwrap_or(0);
        if let Some(g) = global_tid {
            self.global_tids.insert(g);
        }
        let (pid, tid) = (pid_of(g), tid_of(g));
        let key = (pid, if pseudo { -tid - 1 } else { tid });
        if let Some(&i) = self.thread_index.get(&key) {
            return i;
        }
        let base = self.thread_names.get(&g).cloned().or_else(|| {
            (tid == pid)
                .then(|| self.process_names.get(&pid).cloned())
                .flatten()
        });
        let name = if pseudo {
            Some(format!(
                "{} [NVTX start/end]",
                base.unwrap_or_else(|| format!("thread {tid}"))
            ))
        } else {
            base
        };
        self.threads.push(Thread {
            pid,
            tid: key.1,
            name,
        });
        let i = (self.threads.len() - 1) as u32;
        self.thread_index.insert(key, i);
        i
    }

    /// ` WHERE "globalTid" IN (…)` over the threads the profiler recorded spans on, with
    /// `more` (` AND …`) after it: the OS's rows of other threads explain no gap, and an
    /// export holds millions of them. `None` when `table` has no `globalTid` or no thread is
    /// known (nothing to read).
    fn known_threads_where(&self, table: &str, more: &str) -> Option<String> {
        let col = self.db.col(table, "globalTid")?;
        if self.global_tids.is_empty() {
            return None;
        }
        let list: Vec<String> = self.global_tids.iter().map(|g| g.to_string()).collect();
        Some(format!(" WHERE \"{col}\" IN ({}){more}", list.join(", ")))
    }

    /// The thread index of a `globalTid` some span already uses; `None` for a thread the
    /// profiler recorded nothing on (the OS's record of such a thread explains no gap).
    fn known_thread(&self, global_tid: Option<i64>) -> Option<u32> {
        let g = global_tid?;
        self.thread_index.get(&(pid_of(g), tid_of(g))).copied()
    }

    /// A row's `start` and `end` as (start, duration), or `None` (with a `ts-out-of-range`
    /// warning naming the table) when either lies past [`MAX_TIME_NS`]: such a value is no
    /// time, and it would overflow the sums made over events.
    fn times(&mut self, table: &str, start: i64, end: i64) -> Option<(Ns, Ns)> {
        if start.unsigned_abs() > MAX_TIME_NS as u64 || end.unsigned_abs() > MAX_TIME_NS as u64 {
            self.warnings.add(
                "ts-out-of-range",
                1,
                format!(
                    "rows of {table} with a start or end beyond ±2^62 ns (146 years) were left \
                     out (the first: start {start}, end {end})"
                ),
            );
            return None;
        }
        Some((start, end.saturating_sub(start).clamp(0, MAX_TIME_NS)))
    }

    fn warn_missing(&mut self, table: &str, cols: &[&str]) {
        let m = self.db.missing(table, cols);
        if !m.is_empty() && self.db.has(table) {
            self.warnings.add(
                "nsys-missing-columns",
                1,
                format!(
                    "table {table} lacks column(s) {} (trimmed or old export); the values they \
                     hold are unknown",
                    m.join(", ")
                ),
            );
        }
    }

    /// Every row of `table` as the integers of its columns `cols` (`None` for NULL, text that
    /// is no integer, or an absent column), in rowid order, counted in [`Reader::rows`]. `N` is
    /// `cols.len()`; no rows when the table is absent.
    fn int_rows<const N: usize>(
        &mut self,
        table: &str,
        cols: &[&str],
    ) -> Result<Vec<[Option<i64>; N]>, LoadError> {
        self.int_rows_where(table, cols, "")
    }

    /// [`Reader::int_rows`] of the rows `filter` (an SQL ` WHERE …` clause, or empty) keeps.
    fn int_rows_where<const N: usize>(
        &mut self,
        table: &str,
        cols: &[&str],
        filter: &str,
    ) -> Result<Vec<[Option<i64>; N]>, LoadError> {
        debug_assert_eq!(cols.len(), N);
        let mut rows = Vec::new();
        self.db.rows(table, cols, filter, |r| {
            rows.push(std::array::from_fn(|k| r.i(k)))
        })?;
        self.rows += rows.len() as u64;
        Ok(rows)
    }

    /// [`Reader::int_rows_where`] without holding the rows: `f` gets the reader and each row
    /// as it is read (the large tables: millions of rows of 16-byte integers would be held
    /// whole, and faulted in, only to be converted once). The number of rows.
    fn each_int_row<const N: usize>(
        &mut self,
        table: &str,
        cols: &[&str],
        filter: &str,
        mut f: impl FnMut(&mut Self, [Option<i64>; N]),
    ) -> Result<u64, LoadError> {
        debug_assert_eq!(cols.len(), N);
        let db = self.db;
        let n = db.rows(table, cols, filter, |r| {
            f(self, std::array::from_fn(|k| r.i(k)))
        })?;
        self.rows += n;
        Ok(n)
    }

    /// [`Reader::int_rows`] of a GPU activity table: the [`Self::GPU_COLS`], then `extra`.
    fn gpu_rows<const N: usize>(
        &mut self,
        table: &str,
        extra: &[&str],
    ) -> Result<Vec<[Option<i64>; N]>, LoadError> {
        self.int_rows(table, &[&Self::GPU_COLS[..], extra].concat())
    }

    fn read_strings(&mut self) -> Result<(), LoadError> {
        let mut strings = HashMap::default();
        self.db.rows("StringIds", &["id", "value"], "", |r| {
            if let (Some(id), Some(v)) = (r.i(0), r.s(1)) {
                strings.insert(id, v);
            }
        })?;
        self.strings = std::sync::Arc::new(strings);
        Ok(())
    }

    fn read_threads(&mut self) -> Result<(), LoadError> {
        let mut names: Vec<(i64, i64)> = Vec::new();
        self.db
            .rows("ThreadNames", &["nameId", "globalTid"], "", |r| {
                if let (Some(n), Some(g)) = (r.i(0), r.i(1)) {
                    names.push((g, n));
                }
            })?;
        for (g, n) in names {
            if let Some(s) = self.strings.get(&n) {
                self.thread_names.insert(g, s.clone());
            }
        }
        let mut procs = HashMap::default();
        self.db
            .rows("PROCESSES", &["globalPid", "pid", "name"], "", |r| {
                let pid = r.i(1).or_else(|| r.i(0).map(pid_of));
                if let (Some(p), Some(n)) = (pid, r.s(2)) {
                    procs.insert(p, n);
                }
            })?;
        self.process_names = procs;
        Ok(())
    }

    fn read_devices(&mut self) -> Result<Vec<Device>, LoadError> {
        let mut cuda_id: HashMap<i64, i64> = HashMap::default();
        let mut cuda_sms: HashMap<i64, u32> = HashMap::default();
        self.db.rows(
            "TARGET_INFO_CUDA_DEVICE",
            &["gpuId", "cudaId", "numMultiprocessors"],
            "",
            |r| {
                if let (Some(g), Some(c)) = (r.i(0), r.i(1)) {
                    cuda_id.entry(g).or_insert(c);
                    if let Some(n) = r.i(2).and_then(|n| u32::try_from(n).ok()) {
                        cuda_sms.insert(c, n);
                    }
                }
            },
        )?;
        let mut devices: Vec<Device> = Vec::new();
        self.db.rows(
            "TARGET_INFO_GPU",
            &[
                "id",
                "name",
                "smCount",
                "totalMemory",
                "computeMajor",
                "computeMinor",
                "maxWarpsPerSm",
                "threadsPerWarp",
            ],
            "",
            |r| {
                let Some(gid) = r.i(0) else { return };
                let id = cuda_id.get(&gid).copied().unwrap_or(gid);
                if devices.iter().any(|d| d.id == id) {
                    return;
                }
                // a property no device can have (negative, or past u32) is unknown
                let small = |c: usize| r.i(c).and_then(|v| u32::try_from(v).ok());
                let positive = |c: usize| small(c).filter(|&v| v > 0);
                let warp = positive(7);
                devices.push(Device {
                    id,
                    name: r.s(1).unwrap_or_default(),
                    sm_count: positive(2),
                    memory_bytes: r.i(3).filter(|&v| v > 0).map(|v| v as u64),
                    compute_major: small(4),
                    compute_minor: small(5),
                    max_threads_per_sm: positive(6).zip(warp).and_then(|(w, t)| w.checked_mul(t)),
                    warp_size: warp,
                    vendor: Vendor::Nvidia,
                    active: false,
                    peak_allocated: None,
                });
            },
        )?;
        for (c, n) in cuda_sms {
            match devices.iter_mut().find(|d| d.id == c) {
                Some(d) => {
                    d.sm_count.get_or_insert(n);
                }
                None => devices.push(Device {
                    id: c,
                    sm_count: Some(n),
                    vendor: Vendor::Nvidia,
                    ..Device::default()
                }),
            }
        }
        for d in &devices {
            if let Some(n) = d.sm_count {
                self.sm_count.insert(d.id, n);
            }
        }
        Ok(devices)
    }

    fn read_runtime(&mut self) -> Result<(), LoadError> {
        const COLS: [&str; 7] = [
            "start",
            "end",
            "eventClass",
            "globalTid",
            "correlationId",
            "nameId",
            "name",
        ];
        self.warn_missing(
            RUNTIME,
            &["start", "end", "globalTid", "correlationId", "nameId"],
        );
        // Older exports (nsys 2022.2) write each call twice under one correlation id, the
        // versioned entry point (`cudaMemcpy_v3020`) inside the call (`cudaMemcpy`), one row
        // after the other: the inner one is counted once, as the call.
        let mut last: Option<(Option<i64>, Option<i64>, i64, i64)> = None;
        let (mut duplicates, mut timed) = (0u64, 0u64);
        let db = self.db;
        db.rows(RUNTIME, &COLS, "", |r| {
            let (Some(s), Some(e)) = (r.i(0), r.i(1)) else {
                return;
            };
            timed += 1;
            // the `name` column is not in real exports (pipit added it); it is only a
            // fallback when nameId is absent
            let text = if r.i(5).is_none() { r.s(6) } else { None };
            let row: RuntimeRow = (s, e, r.i(2), r.i(3), r.i(4), r.i(5), text);
            if self.runtime_row(row, &mut last) {
                duplicates += 1;
            }
        })?;
        // the rows with both times count, as read
        self.rows += timed;
        if duplicates > 0 {
            self.warnings.add(
                DUPLICATE_RECORDS,
                duplicates,
                "runtime calls, copies or fills written twice under one correlation id (a \
                 versioned entry point inside its call, or the same stream, start and \
                 duration): each was counted once"
                    .into(),
            );
        }
        Ok(())
    }

    /// One row of the runtime table (see [`Reader::read_runtime`]); true when it is the inner
    /// copy of the call before it (`last`), left out.
    fn runtime_row(
        &mut self,
        (s, e, class, gtid, corr, name_id, text): RuntimeRow,
        last: &mut Option<(Option<i64>, Option<i64>, i64, i64)>,
    ) -> bool {
        let inner = last.is_some_and(|(g, c, ls, le)| {
            corr.is_some_and(|x| x != 0) && g == gtid && c == corr && s >= ls && e <= le
        });
        if inner {
            return true;
        }
        *last = Some((gtid, corr, s, e));
        let Some((s, d)) = self.times(RUNTIME, s, e) else {
            return false;
        };
        let name = match (self.string_id(name_id), text) {
            (Some(n), _) => n,
            (None, Some(t)) => self.names.intern(&t),
            (None, None) => self.names.intern("(unnamed runtime call)"),
        };
        let kind = match class {
            Some(1) => CpuKind::Driver,
            Some(_) => CpuKind::Runtime,
            None => {
                let n = self.names.resolve(name);
                if n.starts_with("cu") && !n.starts_with("cuda") {
                    CpuKind::Driver
                } else {
                    CpuKind::Runtime
                }
            }
        };
        let thread = self.thread(gtid, false);
        let correlation = self.correlation(gtid.map(pid_of), corr);
        self.cpu.push(CpuEvent {
            start: s,
            dur: d,
            name,
            thread,
            kind,
            is_module: false,
            external_id: 0,
            correlation,
            owner_op: NONE,
        });
        false
    }

    /// Common columns of the GPU activity tables.
    const GPU_COLS: [&'static str; 6] = [
        "start",
        "end",
        "deviceId",
        "streamId",
        "correlationId",
        "globalPid",
    ];

    fn read_kernels(&mut self) -> Result<u64, LoadError> {
        const EXTRA: [&str; 14] = [
            "demangledName",
            "shortName",
            "mangledName",
            "gridX",
            "gridY",
            "gridZ",
            "blockX",
            "blockY",
            "blockZ",
            "registersPerThread",
            "staticSharedMemory",
            "dynamicSharedMemory",
            "graphNodeId",
            "graphId",
        ];
        self.warn_missing(
            KERNEL,
            &["start", "end", "deviceId", "streamId", "correlationId"],
        );
        let cols = [&Self::GPU_COLS[..], &EXTRA[..]].concat();
        let unnamed = self.names.intern("(unnamed kernel)");
        let n = self.each_int_row(KERNEL, &cols, "", |me, v: [Option<i64>; 20]| {
            let (Some(s), Some(e)) = (v[0], v[1]) else {
                return;
            };
            let Some((s, d)) = me.times(KERNEL, s, e) else {
                return;
            };
            let name = me
                .string_id(v[6])
                .or_else(|| me.string_id(v[7]))
                .or_else(|| me.string_id(v[8]))
                .unwrap_or(unnamed);
            let mut g = GpuEvent::new(name, GpuKind::Kernel, s, d);
            me.fill_common(&mut g, &v);
            let dim = |x: Option<i64>| x.unwrap_or(0).clamp(0, u32::MAX as i64) as u32;
            let mut k = KernelInfo {
                grid: [dim(v[9]), dim(v[10]), dim(v[11])],
                block: [dim(v[12]), dim(v[13]), dim(v[14])],
                registers: v[15].unwrap_or(0).clamp(0, u16::MAX as i64) as u16,
                shared_mem: (v[16].unwrap_or(0).saturating_add(v[17].unwrap_or(0)))
                    .clamp(0, u32::MAX as i64) as u32,
                ..KernelInfo::UNKNOWN
            };
            g.in_graph = v[18].is_some_and(|x| x != 0) || v[19].is_some_and(|x| x != 0);
            if let Some(&sms) = me.sm_count.get(&(g.device as i64)) {
                let blocks = k.grid.iter().map(|&x| x as f64).product::<f64>();
                let threads = k.block.iter().map(|&x| x as f64).product::<f64>();
                if blocks > 0.0 && sms > 0 {
                    k.blocks_per_sm = (blocks / sms as f64) as f32;
                    k.warps_per_sm = (blocks * (threads / 32.0).ceil() / sms as f64) as f32;
                }
            }
            g.info = me.kernel_infos.intern(&k);
            me.gpu.push(g);
        })?;
        Ok(n)
    }

    /// Device, stream and correlation from the [`Self::GPU_COLS`] prefix.
    fn fill_common(&mut self, g: &mut GpuEvent, v: &[Option<i64>]) {
        g.device = v[2].unwrap_or(0).clamp(i32::MIN as i64, i32::MAX as i64) as i32;
        g.stream = stream_id(v[3].unwrap_or(-1));
        g.correlation = self.correlation(v[5].map(pid_of), v[4]);
    }

    fn read_copies(&mut self) -> Result<(), LoadError> {
        self.warn_missing(MEMCPY, &["copyKind", "srcKind", "dstKind", "bytes"]);
        let mut names: HashMap<CopyKey, NameId> = HashMap::default();
        // the same copy or fill written twice under one correlation id (some exports do so
        // for blocking copies): counted once
        let mut seen: std::collections::HashSet<(GpuKind, u64, Ns, Ns, i32)> = Default::default();
        let mut duplicates = 0u64;
        let mut once = |g: &GpuEvent| {
            let fresh = g.correlation == 0
                || seen.insert((g.kind, g.correlation, g.start, g.dur, g.stream));
            duplicates += u64::from(!fresh);
            fresh
        };
        // (rows converted as read, as the kernels': [`Reader::each_int_row`])
        let cols = [
            &Self::GPU_COLS[..],
            &["bytes", "copyKind", "srcKind", "dstKind", "graphNodeId"],
        ]
        .concat();
        self.each_int_row(MEMCPY, &cols, "", |me, v: [Option<i64>; 11]| {
            let (Some(s), Some(e)) = (v[0], v[1]) else {
                return;
            };
            let Some((s, d)) = me.times(MEMCPY, s, e) else {
                return;
            };
            let key = (v[7], v[8], v[9]);
            let name = match names.get(&key) {
                Some(&n) => n,
                None => {
                    let n = me.names.intern(&memcpy_name(v[7], v[8], v[9]));
                    names.insert(key, n);
                    n
                }
            };
            let mut g = GpuEvent::new(name, GpuKind::Memcpy, s, d);
            me.fill_common(&mut g, &v);
            g.bytes = v[6].unwrap_or(0).max(0) as u64;
            g.in_graph = v[10].is_some_and(|x| x != 0);
            if once(&g) {
                me.gpu.push(g);
            }
        })?;

        let cols = [&Self::GPU_COLS[..], &["bytes", "memKind", "graphNodeId"]].concat();
        self.each_int_row(MEMSET, &cols, "", |me, v: [Option<i64>; 9]| {
            let (Some(s), Some(e)) = (v[0], v[1]) else {
                return;
            };
            let Some((s, d)) = me.times(MEMSET, s, e) else {
                return;
            };
            let name = me.names.intern(&memset_name(v[7]));
            let mut g = GpuEvent::new(name, GpuKind::Memset, s, d);
            me.fill_common(&mut g, &v);
            g.bytes = v[6].unwrap_or(0).max(0) as u64;
            g.in_graph = v[8].is_some_and(|x| x != 0);
            if once(&g) {
                me.gpu.push(g);
            }
        })?;
        if duplicates > 0 {
            self.warnings.add(
                DUPLICATE_RECORDS,
                duplicates,
                "runtime calls, copies or fills written twice under one correlation id (a \
                 versioned entry point inside its call, or the same stream, start and \
                 duration): each was counted once"
                    .into(),
            );
        }
        Ok(())
    }

    fn read_syncs(&mut self) -> Result<(), LoadError> {
        let cols = [&Self::GPU_COLS[..], &["syncType"]].concat();
        self.each_int_row(SYNC, &cols, "", |me, v: [Option<i64>; 7]| {
            let (Some(s), Some(e)) = (v[0], v[1]) else {
                return;
            };
            let Some((s, d)) = me.times(SYNC, s, e) else {
                return;
            };
            let name = me.names.intern(sync_name(v[6]));
            let mut g = GpuEvent::new(name, GpuKind::Sync, s, d);
            me.fill_common(&mut g, &v);
            me.gpu.push(g);
        })?;
        Ok(())
    }

    /// Whole-graph replays (graph-trace mode). Returns the number of rows.
    fn read_graph_trace(&mut self) -> Result<u64, LoadError> {
        let rows: Vec<[Option<i64>; 7]> = self.gpu_rows(GRAPH_TRACE, &["graphId"])?;
        let n = rows.len() as u64;
        for v in rows {
            let (Some(s), Some(e)) = (v[0], v[1]) else {
                continue;
            };
            let Some((s, d)) = self.times(GRAPH_TRACE, s, e) else {
                continue;
            };
            let label = match v[6] {
                Some(id) => format!("[CUDA graph {id} replay]"),
                None => "[CUDA graph replay]".into(),
            };
            let name = self.names.intern(&label);
            let mut g = GpuEvent::new(name, GpuKind::Kernel, s, d);
            self.fill_common(&mut g, &v);
            g.in_graph = true;
            self.gpu.push(g);
        }
        Ok(n)
    }

    /// Device memory allocations and frees (`--cuda-memory-usage=true`:
    /// `CUDA_GPU_MEMORY_USAGE_EVENTS`) folded into the same [`MemoryEvents`] as Kineto's
    /// `[memory]` events. Each row is one allocation (`memoryOperationType` 0) or free (1) of
    /// `bytes` at `address`; host memory (`memKind` pageable or pinned) is left out. The host
    /// thread is the one of the runtime call with the row's `correlationId`. The allocated total
    /// after each event is the running sum per device, raised by the bytes allocated before the
    /// capture (the largest shortfall of the running sum, from frees of blocks allocated
    /// earlier). These are CUDA-API allocations: for a PyTorch program, what the caching
    /// allocator reserved, not the tensors; no reserved total is recorded.
    fn read_memory(&mut self) -> Result<MemoryEvents, LoadError> {
        let rows: Vec<[Option<i64>; 8]> = self.int_rows(
            MEMORY_USAGE,
            &[
                "start",
                "globalPid",
                "deviceId",
                "address",
                "bytes",
                "memKind",
                "memoryOperationType",
                "correlationId",
            ],
        )?;
        let mut events: Vec<MemEvent> = Vec::with_capacity(rows.len());
        let mut thread_of: HashMap<u64, u32> = HashMap::default();
        if !rows.is_empty() {
            for e in &self.cpu {
                if e.correlation != 0 && matches!(e.kind, CpuKind::Runtime | CpuKind::Driver) {
                    thread_of.insert(e.correlation, e.thread);
                }
            }
        }
        for v in rows {
            let (Some(ts), Some(bytes), Some(op)) = (v[0], v[4], v[6]) else {
                continue;
            };
            // no allocation is a petabyte, and no time lies past ±2^62 ns: such a row is corrupt
            if matches!(v[5], Some(0) | Some(1))
                || !(1..=1 << 50).contains(&bytes)
                || !(0..=1).contains(&op)
                || ts.unsigned_abs() > MAX_TIME_NS as u64
            {
                continue;
            }
            let corr = self.correlation(v[1].map(pid_of), v[7]);
            events.push(MemEvent {
                ts,
                addr: v[3].unwrap_or(0) as u64,
                bytes: if op == 0 { bytes } else { -bytes },
                total_allocated: 0,
                total_reserved: -1,
                device: v[2].unwrap_or(0).clamp(i32::MIN as i64, i32::MAX as i64) as i32,
                thread: thread_of.get(&corr).copied().unwrap_or(NONE),
            });
        }
        events.sort_by_key(|e| e.ts);
        // running totals per device, then what was allocated before the capture
        let mut run: BTreeMap<i32, (i64, i64)> = BTreeMap::new(); // device → (sum, min)
        for e in events.iter_mut() {
            let r = run.entry(e.device).or_insert((0, 0));
            r.0 = r.0.saturating_add(e.bytes);
            r.1 = r.1.min(r.0);
            e.total_allocated = r.0;
        }
        let mut b = MemoryBuilder::new();
        for e in events.iter_mut() {
            e.total_allocated = e.total_allocated.saturating_sub(run[&e.device].1);
            b.push(e);
        }
        Ok(b.finish())
    }

    /// nsys's own diagnostics (`DIAGNOSTIC_EVENT`): the messages that report lost events
    /// become the [`LOST_EVENTS`] warning.
    fn read_diagnostics(&mut self) -> Result<(), LoadError> {
        let mut lost: Vec<String> = Vec::new();
        self.db.rows("DIAGNOSTIC_EVENT", &["text"], "", |r| {
            if let Some(t) = r.s(0).filter(|t| reports_lost_events(t)) {
                lost.push(t.split_whitespace().collect::<Vec<_>>().join(" "));
            }
        })?;
        if let Some(first) = lost.first() {
            self.warnings.add(
                LOST_EVENTS,
                lost.len() as u64,
                format!(
                    "nsys reports lost events (DIAGNOSTIC_EVENT): \"{}\"",
                    crate::text::shorten_middle(first, 200)
                ),
            );
        }
        Ok(())
    }

    fn read_overhead(&mut self) -> Result<(), LoadError> {
        let rows: Vec<[Option<i64>; 4]> =
            self.int_rows(OVERHEAD, &["start", "end", "globalTid", "nameId"])?;
        for v in rows {
            let (Some(s), Some(e)) = (v[0], v[1]) else {
                continue;
            };
            let Some((s, d)) = self.times(OVERHEAD, s, e) else {
                continue;
            };
            let Some(name) = self.string_id(v[3]) else {
                continue;
            };
            let thread = self.thread(v[2], false);
            self.cpu.push(CpuEvent {
                start: s,
                dur: d,
                name,
                thread,
                kind: CpuKind::Other,
                is_module: false,
                external_id: 0,
                correlation: 0,
                owner_op: NONE,
            });
        }
        Ok(())
    }

    /// The outermost OS runtime calls (`OSRT_API`, `--trace=osrt`), by start.
    fn read_os_calls(&mut self) -> Result<Vec<OsCall>, LoadError> {
        // only the outermost calls (a call inside another is the outer call's time)
        let nested = match self.db.col(OSRT, "nestingLevel") {
            Some(c) => format!(" AND coalesce(\"{c}\", 0) = 0"),
            None => String::new(),
        };
        let Some(filter) = self.known_threads_where(OSRT, &nested) else {
            return Ok(Vec::new());
        };
        let mut calls = Vec::new();
        self.each_int_row(
            OSRT,
            &["start", "end", "globalTid", "nameId", "nestingLevel"],
            &filter,
            |me, v: [Option<i64>; 5]| {
                // a call made inside another (`open64` inside `fopen`) is the outer call's time
                let (Some(s), Some(e), None | Some(0)) = (v[0], v[1], v[4]) else {
                    return;
                };
                let Some((start, dur)) = me.times(OSRT, s, e) else {
                    return;
                };
                let Some(name) = me.string_id(v[3]) else {
                    return;
                };
                let Some(thread) = me.known_thread(v[2]) else {
                    return;
                };
                calls.push(OsCall {
                    start,
                    dur,
                    name,
                    thread,
                });
            },
        )?;
        calls.sort_by_key(|c| (c.thread, c.start, std::cmp::Reverse(c.dur)));
        Ok(calls)
    }

    /// When each thread was off a CPU, from its context switches (`SCHED_EVENTS`,
    /// `--cpuctxsw=process-tree`); `end` closes a last switch out.
    fn read_schedule(&mut self, end: Ns) -> Result<Vec<Option<IntervalSet>>, LoadError> {
        let Some(filter) = self.known_threads_where(SCHED, "") else {
            return Ok(Vec::new());
        };
        let mut per: BTreeMap<u32, Vec<(Ns, bool)>> = BTreeMap::new();
        let cols = ["start", "isSchedIn", "globalTid"];
        self.each_int_row(SCHED, &cols, &filter, |me, v: [Option<i64>; 3]| {
            let (Some(t), Some(i), Some(_)) = (v[0], v[1], v[2]) else {
                return;
            };
            let Some((t, _)) = me.times(SCHED, t, t) else {
                return;
            };
            let Some(thread) = me.known_thread(v[2]) else {
                return;
            };
            per.entry(thread).or_default().push((t, i != 0));
        })?;
        let mut out: Vec<Option<IntervalSet>> = Vec::new();
        for (thread, mut sw) in per {
            // stable: a switch out and in at one time keep their order in the table
            sw.sort_by_key(|s| s.0);
            if out.len() <= thread as usize {
                out.resize(thread as usize + 1, None);
            }
            out[thread as usize] = Some(OsActivity::off_cpu_from_switches(&sw, end));
        }
        Ok(out)
    }

    /// The CPU samples (`COMPOSITE_EVENTS`, `--sample=process-tree`) of the threads the
    /// profiler recorded spans on, each with the function of its innermost resolved user-mode
    /// frame among the innermost [`SAMPLE_FRAMES`] (`SAMPLING_CALLCHAINS`); samples without one
    /// are left out. By thread, then time.
    fn read_samples(&mut self, leaves: Option<SampleLeaves>) -> Result<Vec<CpuSample>, LoadError> {
        let Some(SampleLeaves { leaf, rows: n }) = leaves else {
            return Ok(Vec::new());
        };
        self.rows += n;
        let Some(filter) = self.known_threads_where(SAMPLES, "") else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        let cols = ["id", "start", "globalTid"];
        self.each_int_row(SAMPLES, &cols, &filter, |me, v: [Option<i64>; 3]| {
            let (Some(id), Some(t), Some(_)) = (v[0], v[1], v[2]) else {
                return;
            };
            let Some(function) = leaf.get(&id).and_then(|l| me.string_id(Some(l.1))) else {
                return;
            };
            let Some((time, _)) = me.times(SAMPLES, t, t) else {
                return;
            };
            let Some(thread) = me.known_thread(v[2]) else {
                return;
            };
            out.push(CpuSample {
                time,
                thread,
                function,
            });
        })?;
        out.sort_by_key(|s| (s.thread, s.time));
        Ok(out)
    }

    fn read_nvtx(&mut self) -> Result<(), LoadError> {
        if !self.db.has(NVTX) {
            return Ok(());
        }
        self.warn_missing(NVTX, &["start", "end", "eventType", "globalTid"]);
        let has_type = self.db.col(NVTX, "eventType").is_some();
        #[allow(clippy::type_complexity)]
        let mut rows: Vec<(
            Option<i64>,
            Option<i64>,
            Option<i64>,
            Option<String>,
            Option<i64>,
            Option<i64>,
            Option<i64>,
        )> = Vec::new();
        self.db.rows(
            NVTX,
            &[
                "start",
                "end",
                "eventType",
                "text",
                "textId",
                "domainId",
                "globalTid",
            ],
            "",
            |r| rows.push((r.i(0), r.i(1), r.i(2), r.s(3), r.i(4), r.i(5), r.i(6))),
        )?;
        self.rows += rows.len() as u64;
        // domains: type-75 rows define `domainId → name` per process
        let mut domains: HashMap<(i64, i64), String> = HashMap::default();
        for (_, _, ty, text, text_id, dom, gtid) in &rows {
            if *ty == Some(75) {
                let name = text
                    .clone()
                    .or_else(|| text_id.and_then(|i| self.strings.get(&i).cloned()));
                if let (Some(d), Some(n)) = (dom, name) {
                    domains.insert((pid_of(gtid.unwrap_or(0)), *d), n);
                }
            }
        }
        let mut unclosed = 0u64;
        for (start, end, ty, text, text_id, dom, gtid) in rows {
            let start_end = match ty {
                Some(59) | Some(70) => false,
                Some(60) | Some(71) => true,
                None if !has_type => false,
                _ => continue,
            };
            let Some(s) = start else { continue };
            let Some(e) = end.filter(|&e| e >= s) else {
                unclosed += 1;
                continue;
            };
            let Some((s, d)) = self.times(NVTX, s, e) else {
                continue;
            };
            let text = text
                .or_else(|| text_id.and_then(|i| self.strings.get(&i).cloned()))
                .unwrap_or_else(|| "(unnamed range)".into());
            let (bare, emitted) = strip_emit_nvtx(&text);
            let kind = if emitted && is_operator_name(bare) {
                CpuKind::Op
            } else {
                CpuKind::UserAnnotation
            };
            let name = match dom.filter(|&d| d != 0) {
                Some(d) => match domains.get(&(pid_of(gtid.unwrap_or(0)), d)) {
                    Some(dn) => self.names.intern(&format!("{dn}:{bare}")),
                    None => self.names.intern(bare),
                },
                None => self.names.intern(bare),
            };
            let thread = self.thread(gtid, start_end);
            self.cpu.push(CpuEvent {
                start: s,
                dur: d,
                name,
                thread,
                kind,
                is_module: false,
                external_id: 0,
                correlation: 0,
                owner_op: NONE,
            });
        }
        if unclosed > 0 {
            self.warnings.add(
                "nsys-unclosed-range",
                unclosed,
                "NVTX range without an end (pushed but never popped before the capture \
                 stopped); left out"
                    .into(),
            );
        }
        Ok(())
    }

    /// Gives every emit_nvtx operator range an External id and every runtime/driver call the
    /// id of the innermost operator range around it on its thread.
    fn link_ops(&mut self) {
        let mut by_thread: HashMap<u32, Vec<u32>> = HashMap::default();
        let mut next = 0u64;
        for (i, e) in self.cpu.iter_mut().enumerate() {
            match e.kind {
                CpuKind::Op => {
                    next += 1;
                    e.external_id = next;
                }
                CpuKind::Runtime | CpuKind::Driver => {}
                _ => continue,
            }
            by_thread.entry(e.thread).or_default().push(i as u32);
        }
        if next == 0 {
            return;
        }
        for (_, mut idx) in by_thread {
            idx.sort_by(|&a, &b| {
                let (x, y) = (&self.cpu[a as usize], &self.cpu[b as usize]);
                x.start
                    .cmp(&y.start)
                    .then(y.dur.cmp(&x.dur))
                    .then((x.kind != CpuKind::Op).cmp(&(y.kind != CpuKind::Op)))
            });
            let mut stack: Vec<(Ns, u64)> = Vec::new();
            for i in idx {
                let e = self.cpu[i as usize];
                while stack.last().is_some_and(|&(end, _)| end < e.end()) {
                    stack.pop();
                }
                if e.kind == CpuKind::Op {
                    stack.push((e.end(), e.external_id));
                } else if let Some(&(_, ext)) = stack.last() {
                    self.cpu[i as usize].external_id = ext;
                }
            }
        }
    }

    fn read_gpu_metrics(&mut self) -> Result<Vec<GpuMetricSeries>, LoadError> {
        let mut series: BTreeMap<(i64, String), GpuMetricSeries> = BTreeMap::new();
        if self.db.has("GPU_METRICS") {
            let mut names: HashMap<(i64, i64), String> = HashMap::default();
            self.db.rows(
                "TARGET_INFO_GPU_METRICS",
                &["typeId", "metricId", "metricName"],
                "",
                |r| {
                    if let (Some(t), Some(m), Some(n)) = (r.i(0), r.i(1), r.s(2)) {
                        names.insert((t, m), n);
                    }
                },
            )?;
            let mut unnamed = 0u64;
            self.db.rows(
                "GPU_METRICS",
                &["timestamp", "typeId", "metricId", "value"],
                "",
                |r| {
                    let (Some(t), Some(ty), Some(m)) = (r.i(0), r.i(1), r.i(2)) else {
                        return;
                    };
                    let value = match r.value(3) {
                        ValueRef::Integer(v) => v as f64,
                        ValueRef::Real(v) => v,
                        _ => return,
                    };
                    let Some(name) = names.get(&(ty, m)) else {
                        unnamed += 1;
                        return;
                    };
                    push_sample(&mut series, ty & 0xFF, name, t, value);
                },
            )?;
            if unnamed > 0 {
                self.warnings.add(
                    "nsys-gpu-metric-unnamed",
                    unnamed,
                    "GPU_METRICS sample whose (typeId, metricId) is not in \
                     TARGET_INFO_GPU_METRICS; left out"
                        .into(),
                );
            }
        } else if self.db.has("GENERIC_EVENTS") {
            self.db.rows(
                "GENERIC_EVENTS",
                &["timestamp", "typeId", "data"],
                "",
                |r| {
                    let (Some(t), Some(ty), Some(data)) = (r.i(0), r.i(1), r.s(2)) else {
                        return;
                    };
                    let Ok(serde_json::Value::Object(map)) =
                        serde_json::from_str::<serde_json::Value>(&data)
                    else {
                        return;
                    };
                    if !map.keys().any(|k| is_known_gpu_metric(k)) {
                        return;
                    }
                    let device = ty & 0xFF;
                    for (k, v) in map {
                        let value = match &v {
                            serde_json::Value::Number(n) => n.as_f64(),
                            serde_json::Value::String(s) => s.trim().parse().ok(),
                            _ => None,
                        };
                        let Some(value) = value else { continue };
                        push_sample(&mut series, device, &k, t, value);
                    }
                },
            )?;
        }
        let mut out: Vec<GpuMetricSeries> = series.into_values().collect();
        for s in &mut out {
            if s.times.windows(2).any(|w| w[0] > w[1]) {
                let mut pairs: Vec<(Ns, f64)> = s
                    .times
                    .iter()
                    .copied()
                    .zip(s.values.iter().copied())
                    .collect();
                pairs.sort_by_key(|p| p.0);
                s.times = pairs.iter().map(|p| p.0).collect();
                s.values = pairs.iter().map(|p| p.1).collect();
            }
        }
        Ok(out)
    }
}

/// True for the GPU-metric names nsys writes (old display names and 2023+ names).
/// Adds one sample to the series of `(device, name)`.
fn push_sample(
    series: &mut BTreeMap<(i64, String), GpuMetricSeries>,
    device: i64,
    name: &str,
    t: Ns,
    value: f64,
) {
    // a sample at no time (past ±2^62 ns) or of no value is left out
    if t.unsigned_abs() > MAX_TIME_NS as u64 || !value.is_finite() {
        return;
    }
    let s = series
        .entry((device, name.to_string()))
        .or_insert_with(|| GpuMetricSeries {
            device,
            name: name.to_string(),
            ..Default::default()
        });
    s.times.push(t);
    s.values.push(value);
}

fn is_known_gpu_metric(name: &str) -> bool {
    let base = name.split(" [").next().unwrap_or(name);
    matches!(
        base,
        "SM Active"
            | "SMs Active"
            | "SM Issue"
            | "Tensor Active"
            | "Tensor Active / FP16 Active"
            | "DRAM Read Throughput"
            | "DRAM Write Throughput"
            | "DRAM Read Bandwidth"
            | "DRAM Write Bandwidth"
            | "GR Active"
            | "GR Active (GE/CE)"
            | "Compute Warps In Flight"
            | "Compute Warps in Flight"
    )
}

/// Reads an Nsight Systems SQLite export at `file`; `path` is the name given by the user,
/// `compressed` the on-disk size when the input was gzip. With `threads` > 1 the kernels,
/// copies and fills are read on a second connection beside the runtime calls (and the syncs
/// after those), the CPU samples' callchains are scanned on a third beside the profiler
/// tables, and the trace is finalized on two threads (same trace).
pub fn read_file(
    file: &Path,
    path: &str,
    compressed: Option<u64>,
    threads: usize,
) -> Result<Trace, LoadError> {
    let mut tt = crate::timings::Timings::nested();
    let db = Db::open(file, path)?;
    if db.has("CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL") && db.has("StringTable") {
        return Err(LoadError::new(
            path,
            "an nvprof SQLite database, not an Nsight Systems export: profile with `nsys \
             profile` and export with `nsys export --type sqlite`"
                .into(),
        ));
    }
    let known = [RUNTIME, KERNEL, MEMCPY, MEMSET, SYNC, NVTX, "StringIds"];
    if !known.iter().any(|t| db.has(t)) {
        return Err(LoadError::new(
            path,
            format!(
                "an SQLite database that is not an Nsight Systems export (none of the tables {} \
                 exists)",
                known.join(", ")
            ),
        ));
    }
    let bytes = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
    let mut r = Reader::new(&db, Default::default());
    if !r.db.has("StringIds") {
        r.warnings.add(
            "nsys-missing-table",
            1,
            "no StringIds table: kernel, runtime-call and NVTX names stored as ids are unknown"
                .into(),
        );
    }
    std::thread::scope(|scope| {
        // the callchains' scan needs nothing the profiler tables teach: on a connection of its
        // own beside them
        let leaves = (threads > 1 && r.db.has(SAMPLES) && r.db.has(CALLCHAINS)).then(|| {
            scope.spawn(|| -> Result<Option<SampleLeaves>, LoadError> {
                sample_leaves(&Db::open(file, path)?)
            })
        });
        r.read_strings()?;
        r.read_threads()?;
        let devices = r.read_devices()?;
        // With two threads, the kernels and the copies and fills on a connection of their
        // own beside the runtime calls, then the syncs on this one after them, each side in
        // a reader of its own; joined in the order one reader reads them (runtime calls,
        // kernels, copies, fills, syncs), they make the same trace.
        let node_kernels = if threads > 1 {
            let (strings, sm_count) = (r.strings.clone(), r.sm_count.clone());
            let devices_side = scope.spawn(move || -> Result<(Side, usize), LoadError> {
                let db = Db::open(file, path)?;
                let mut side = Reader::new(&db, strings);
                (side.sm_count, side.no_process) = (sm_count, SIDE_NO_PROCESS);
                side.read_kernels()?;
                let node_kernels = count_node_kernels(&side.gpu);
                side.read_copies()?;
                Ok((side.into_side(), node_kernels))
            });
            r.read_runtime()?;
            let mut syncs = Reader::new(r.db, r.strings.clone());
            syncs.no_process = SIDE_NO_PROCESS;
            syncs.read_syncs()?;
            let (side, node_kernels) = devices_side.join().map_err(|_| {
                LoadError::new(path, "internal error: the kernel reader panicked".into())
            })??;
            r.join(side);
            r.join(syncs.into_side());
            node_kernels
        } else {
            r.read_runtime()?;
            r.read_kernels()?;
            let node_kernels = count_node_kernels(&r.gpu);
            r.read_copies()?;
            r.read_syncs()?;
            node_kernels
        };
        let graph_rows = r.read_graph_trace()?;
        r.read_overhead()?;
        r.read_nvtx()?;
        let gpu_metrics = r.read_gpu_metrics()?;
        let memory = r.read_memory()?;
        r.read_diagnostics()?;
        tt.lap("nsys: profiler tables");
        // the OS's rows describe host time; the events counted are the profiler's records (a
        // capture of 139 CUDA records holds 16,000 OS rows with sampling on)
        let profiler_rows = r.rows;
        // With two threads, the CPU samples on a connection of their own beside the OS calls
        // and context switches (the profiler tables have named the threads that filter them),
        // in a reader of its own, joined after those as one reader reads them.
        let samples_side = leaves.map(|leaves| {
            let strings = r.strings.clone();
            let (global_tids, thread_index) = (r.global_tids.clone(), r.thread_index.clone());
            scope.spawn(move || -> Result<(Vec<CpuSample>, Side), LoadError> {
                let leaves = leaves.join().map_err(|_| {
                    LoadError::new(path, "internal error: the callchain reader panicked".into())
                })??;
                let db = Db::open(file, path)?;
                let mut side = Reader::new(&db, strings);
                (side.global_tids, side.thread_index) = (global_tids, thread_index);
                let samples = side.read_samples(leaves)?;
                Ok((samples, side.into_side()))
            })
        });
        let os_calls = r.read_os_calls()?;
        tt.lap("nsys: OS runtime calls");
        // a thread switched out for good is off until the last thing the capture recorded
        let last = (r.cpu.iter().map(|e| e.start + e.dur))
            .chain(r.gpu.iter().map(|g| g.start + g.dur))
            .chain(os_calls.iter().map(|c| c.start + c.dur))
            .max()
            .unwrap_or(0);
        let off_cpu = r.read_schedule(last)?;
        tt.lap("nsys: context switches");
        let samples = match samples_side {
            Some(h) => {
                let (mut samples, side) = h.join().map_err(|_| {
                    LoadError::new(path, "internal error: the sample reader panicked".into())
                })??;
                let names = r.join(side);
                for s in samples.iter_mut() {
                    s.function = names[s.function.0 as usize];
                }
                samples
            }
            None => {
                let leaves = sample_leaves(r.db)?;
                r.read_samples(leaves)?
            }
        };
        tt.lap("nsys: CPU samples");
        r.rows = profiler_rows;
        r.link_ops();

        // What is missing, and why it matters.
        let capture =
            r.db.pairs("META_DATA_CAPTURE")
                .unwrap_or_default()
                .into_iter()
                .filter(|(k, _)| k.ends_with("CUDA_GRAPH_TRACE_OPTIONS:MODE"))
                .map(|(_, v)| v)
                .next();
        let cuda_calls = r
            .cpu
            .iter()
            .any(|e| matches!(e.kind, CpuKind::Runtime | CpuKind::Driver));
        if !cuda_calls && r.gpu.is_empty() {
            r.warnings.add(
                "nsys-no-cuda-trace",
                1,
                "no CUDA runtime call or device activity (CUPTI_ACTIVITY_KIND_* tables absent or \
             empty): a capture without `--trace=cuda`, or no CUDA work ran; only host-side \
             data (NVTX ranges) is analyzed"
                    .into(),
            );
        } else if !r.db.has(KERNEL) {
            r.warnings.add(
            "nsys-no-kernel-table",
            1,
            "no CUPTI_ACTIVITY_KIND_KERNEL table: the export holds no kernel records (no kernel \
             ran while CUDA was traced, or the export was filtered); device time is copies, \
             fills and graph replays only"
                .into(),
        );
        }
        let graph_launches = {
            let names = &r.names;
            r.cpu
                .iter()
                .filter(|e| {
                    matches!(e.kind, CpuKind::Runtime | CpuKind::Driver)
                        && names.resolve(e.name).contains("GraphLaunch")
                })
                .count() as u64
        };
        if graph_rows > 0 {
            r.warnings.add(
            "nsys-graph-trace",
            graph_rows,
            "CUDA graph replay traced as a whole graph (`--cuda-graph-trace=graph`): the graph's \
             kernels are not in the export; each replay is one `[CUDA graph N replay]` span, \
             counted as busy time, not idle. Profile with `--cuda-graph-trace=node` for \
             per-kernel detail"
                .into(),
        );
        } else if graph_launches > 0 && node_kernels == 0 {
            let mode = capture
                .as_deref()
                .map(|m| format!(" (capture mode `{m}`)"))
                .unwrap_or_default();
            r.warnings.add(
                "nsys-graph-untraced",
                graph_launches,
                format!(
                    "CUDA graph launch without device records{mode}: the export has neither \
                 CUPTI_ACTIVITY_KIND_GRAPH_TRACE rows nor graph kernels, so the GPU time of \
                 these graphs is missing; it is not idle time. Profile with \
                 `--cuda-graph-trace=node`"
                ),
            );
        }

        let events = r.rows;
        let mut trace = Trace {
            source: Source {
                path: path.to_string(),
                format: SourceFormat::NsysSqlite,
                bytes,
                compressed_bytes: compressed,
                events,
            },
            names: r.names,
            devices,
            threads: r.threads,
            cpu: r.cpu,
            gpu: r.gpu,
            kernel_infos: r.kernel_infos.into_vec(),
            distributed: None,
            base_time_ns: None,
            warnings: r.warnings.0.into_values().collect(),
            gpu_metrics,
            op_shapes: Default::default(),
            op_flops: Default::default(),
            kernel_comms: Default::default(),
            op_comms: Default::default(),
            memory,
            clock_corrections: Vec::new(),
            kernel_classes: Default::default(),
            op_shape_index: Default::default(),
            bounds: Default::default(),
            os: OsActivity {
                off_cpu,
                calls: os_calls,
                samples,
            },
        };
        for d in trace.devices.iter_mut() {
            d.peak_allocated = trace
                .memory
                .recorded_peak
                .iter()
                .find(|p| p.0 as i64 == d.id)
                .map(|p| p.1.max(0) as u64);
        }
        trace.finalize_with(threads > 1);
        for g in trace.gpu.iter_mut() {
            g.flow_linked = g.correlation != 0 && g.launch != NONE;
        }
        Ok(trace)
    })
}

/// Kernels that ran as nodes of a CUDA graph (`--cuda-graph-trace=node`).
fn count_node_kernels(gpu: &[GpuEvent]) -> usize {
    (gpu.iter())
        .filter(|g| g.kind == GpuKind::Kernel && g.in_graph)
        .count()
}

/// A temporary file removed on drop.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn temp_path(ext: &str) -> PathBuf {
    use std::time::{SystemTime, UNIX_EPOCH};
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    std::env::temp_dir().join(format!("stallscope-{}-{nanos}.{ext}", std::process::id()))
}

/// Reads an export from a byte stream (standard input or a gzip-compressed file): SQLite
/// needs a file, so the bytes are spooled to a temporary one first.
pub fn read_stream<R: std::io::Read>(
    mut input: R,
    path: &str,
    compressed: Option<u64>,
    threads: usize,
) -> Result<Trace, LoadError> {
    let tmp = TempFile(temp_path("sqlite"));
    let mut f = std::fs::File::create(&tmp.0).map_err(|e| {
        LoadError::new(
            path,
            format!("cannot create a temporary file {}: {e}", tmp.0.display()),
        )
    })?;
    std::io::copy(&mut input, &mut f).map_err(|e| LoadError::io(path, e))?;
    drop(f);
    read_file(&tmp.0, path, compressed, threads)
}

/// The nsys version that wrote a report, from its header
/// (`NVIDIA Tegra Profiler Report 2026@1@2@63-…` → `2026.1.2`).
pub fn rep_version(head: &[u8]) -> Option<String> {
    let rest = head.strip_prefix(b"NVIDIA Tegra Profiler Report ")?;
    let end = rest.iter().position(|&c| c == b'-' || c == b'\n')?;
    let v = std::str::from_utf8(&rest[..end]).ok()?;
    let parts: Vec<&str> = v.split('@').collect();
    (parts.len() >= 3
        && parts[..3]
            .iter()
            .all(|p| p.chars().all(|c| c.is_ascii_digit())))
    .then(|| parts[..3].join("."))
}

/// `nsys` on PATH, if any.
fn find_nsys() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("nsys"))
        .find(|p| p.is_file())
}

/// The command that converts a report: `nsys export --type sqlite --output OUT REPORT`.
pub fn export_command(report: &str) -> String {
    let out = Path::new(report).with_extension("sqlite");
    format!(
        "nsys export --type sqlite --output {} {}",
        shell_quote(&out.to_string_lossy()),
        shell_quote(report)
    )
}

fn shell_quote(s: &str) -> String {
    if s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_./=:@+,".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Reads a `.nsys-rep` by running `nsys export --type sqlite` when nsys is on PATH; otherwise
/// a one-line error with the exact command to run.
pub fn read_rep(path: &str, head: &[u8], threads: usize) -> Result<Trace, LoadError> {
    let version = rep_version(head)
        .map(|v| format!(" written by nsys {v}"))
        .unwrap_or_default();
    if path == "-" {
        return Err(LoadError::new(
            path,
            format!(
                "an Nsight Systems report{version} on standard input: save it to a file and \
                 run `nsys export --type sqlite --output report.sqlite report.nsys-rep`"
            ),
        ));
    }
    let Some(nsys) = find_nsys() else {
        return Err(LoadError::new(
            path,
            format!(
                "an Nsight Systems report{version}; nsys is not on PATH, so convert it first: \
                 `{}`, then analyze the .sqlite",
                export_command(path)
            ),
        ));
    };
    let tmp = TempFile(temp_path("sqlite"));
    let out = std::process::Command::new(&nsys)
        .args([
            "export",
            "--type",
            "sqlite",
            "--force-overwrite",
            "true",
            "--output",
        ])
        .arg(&tmp.0)
        .arg(path)
        .output()
        .map_err(|e| LoadError::new(path, format!("running {}: {e}", nsys.display())))?;
    if !out.status.success() || !tmp.0.exists() {
        let msg = String::from_utf8_lossy(&out.stderr);
        let msg = msg
            .lines()
            .chain(String::from_utf8_lossy(&out.stdout).lines())
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("no output")
            .to_string();
        return Err(LoadError::new(
            path,
            format!(
                "an Nsight Systems report{version}: `nsys export` failed ({}): {msg}",
                out.status
            ),
        ));
    }
    let mut t = read_file(&tmp.0, path, None, threads)?;
    t.source.bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_kineto() {
        assert_eq!(
            memcpy_name(Some(1), Some(0), Some(2)),
            "Memcpy HtoD (Pageable -> Device)"
        );
        assert_eq!(
            memcpy_name(Some(2), Some(2), Some(1)),
            "Memcpy DtoH (Device -> Pinned)"
        );
        assert_eq!(memcpy_name(Some(8), None, None), "Memcpy DtoD");
        assert_eq!(memset_name(Some(2)), "Memset (Device)");
        assert_eq!(sync_name(Some(3)), "Stream Sync");
    }

    #[test]
    fn global_ids() {
        // cloverleaf: 0x119F80819F808 → pid 1701896, tid 1701896
        assert_eq!(pid_of(0x119F80819F808), 1701896);
        assert_eq!(tid_of(0x119F80819F808), 1701896);
    }

    #[test]
    fn emit_nvtx_suffix() {
        assert_eq!(
            strip_emit_nvtx("aten::view, op_id = 314290"),
            ("aten::view", true)
        );
        assert_eq!(
            strip_emit_nvtx("aten::mm, seq = 3, op_id = 12, sizes = [[2, 3]]"),
            ("aten::mm", true)
        );
        assert_eq!(strip_emit_nvtx("Denoise_Step_0"), ("Denoise_Step_0", false));
        assert!(is_operator_name("aten::mm"));
        assert!(is_operator_name("c10d::alltoall_base_"));
        assert!(!is_operator_name("FSDP::pre_forward (encoder.block.0)"));
        assert!(!is_operator_name("nccl:all_to_all"));
    }

    #[test]
    fn report_header() {
        assert_eq!(
            rep_version(b"NVIDIA Tegra Profiler Report 2026@1@2@63-261237296639v0.\n"),
            Some("2026.1.2".into())
        );
        assert_eq!(rep_version(b"NVIDIA Tegra Profiler Report 1.\n"), None);
        assert_eq!(
            export_command("my report.nsys-rep"),
            "nsys export --type sqlite --output 'my report.sqlite' 'my report.nsys-rep'"
        );
    }
}
