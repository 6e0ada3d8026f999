//! Reader for torch.profiler / Kineto Chrome-trace JSON.
//!
//! Part of the ingest stage: it may use the model and the support modules.
//!
//! Pipeline (bounded memory, all cores):
//! 1. a reader thread pulls fixed-size blocks from the (possibly gzip) stream into a fixed set
//!    of reused buffers and runs the [`scan::Scanner`] (its SIMD fast path,
//!    [`scan::Scanner::next_events`], over the events array) to cut each block at the last
//!    complete event; the incomplete tail is carried into the next block;
//! 2. worker threads parse the events of a block with a hand-written borrowing parser
//!    ([`fast`]), falling back to serde (borrowed strings, skipped args) and then to the
//!    [`lenient`] repair when strict parsing fails, into compact records. Each worker keeps
//!    its own name and thread tables across blocks, so a block only carries the names that
//!    worker had not seen yet;
//! 3. the calling thread merges partials in block order, so the result is identical whatever
//!    the number of threads and the block size. Event vectors go back to the workers for
//!    reuse.
//!
//! At most `2 × threads + 1` blocks are alive at once, so peak memory is a few blocks plus the
//! compact model, never the file.

mod digits;
pub mod event;
mod fast;
pub mod lenient;
pub mod scan;

use std::collections::BTreeMap;
use std::io::Read;

use crossbeam_channel::{bounded, Receiver, Sender};

use crate::ingest::limits::Limits;
use crate::ingest::outliers;
use crate::ingest::LoadError;
use crate::model::idindex::IdSet;
use crate::model::memory::{MemEvent, MemoryBuilder};
use crate::model::Ns;
use crate::model::{
    stream_id, CommArgs, CpuEvent, CpuKind, Device, Distributed, GpuEvent, GpuKind, Interner,
    KernelInfo, KernelInfoTable, NameId, OpShape, Source, SourceFormat, Thread, Trace, Vendor,
    Warning, NONE,
};
use event::{id_value, micros_to_ns, IdValue, RawEvent};
use scan::{Item, Scanner, Step};

/// Reader settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Parser threads (at least 1).
    pub threads: usize,
    /// Block size in bytes ([`crate::ingest::load`] lowers it for small inputs).
    pub block_size: usize,
    /// Keep what was read from a truncated file (with a warning) instead of failing.
    pub allow_truncated: bool,
    /// Memory-mapped files and reopenable streams: once the first block has reached the
    /// events, cut the blocks at likely event boundaries and let the parser threads walk the
    /// events themselves, without the scanner's pass over the bytes (see [`ChainEnd`]).
    /// Whatever the parsers do not confirm reads the input again the scanned way, so the
    /// result never depends on it.
    pub chain: bool,
    /// What one value, the names and a gzip stream may take (see [`Limits`]).
    pub limits: Limits,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            block_size: 8 << 20,
            allow_truncated: false,
            chain: true,
            limits: Limits::default(),
        }
    }
}

/// A block buffer and its event ranges, handed back for reuse.
type Buffers = (Vec<u8>, Vec<(u32, u32, bool)>);

struct Batch {
    seq: u64,
    base: u64,
    /// `buf[..len]` holds the block; the rest is room kept for reuse.
    buf: Storage,
    len: usize,
    ranges: Vec<(u32, u32, bool)>,
    /// A chain block (no ranges): `Some(expects_element)`, true when the block starts where
    /// an element is expected (after `[` or `,`), false when it starts after an element.
    chain: Option<bool>,
}

/// How a chain block ended (see [`Options::chain`]).
///
/// The reader cuts a chain block just before a `,` that follows an object's `}` and precedes
/// a `{`, with a newline among the whitespace around it: a raw newline is never inside a JSON
/// string, so the cut is outside strings, but the object may still be nested (an array of
/// objects inside an event). The parser confirms each cut: it walks the block from its
/// start, event after event (separated by commas only), and must land exactly on the block's
/// end right after an event. The first chain block starts where the scanner left off inside
/// the events array, so by induction every confirmed cut is a true event boundary and the
/// events are exactly the scanner's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum ChainEnd {
    /// Not a chain block: the scanner's ranges.
    #[default]
    Scanned,
    /// The block ended right after an event.
    Confirmed,
    /// The `]` closing the events array is at this offset in the file.
    ArrayEnd(u64),
    /// Not a chain of events up to the block's end (a wrong cut, a value that is not an
    /// event object, invalid JSON or UTF-8, a file cut short): read the file again the
    /// scanned way.
    Failed,
}

/// The bytes of a block: a pooled buffer the stream was read into, or a window of a mapped
/// file (no copy; unmapped when the block is dropped).
enum Storage {
    Heap(Vec<u8>),
    Map(memmap2::Mmap),
}

impl Storage {
    fn bytes(&self) -> &[u8] {
        match self {
            Storage::Heap(v) => v,
            Storage::Map(m) => m,
        }
    }
    /// The buffer to reuse (an empty one for a mapped window, which is unmapped here).
    fn into_reusable(self) -> Vec<u8> {
        match self {
            Storage::Heap(v) => v,
            Storage::Map(_) => Vec::new(),
        }
    }
}

/// Opens a stream again from its start (see [`Input::Reopenable`]).
pub type Reopen<'f> = &'f (dyn Fn() -> std::io::Result<Box<dyn Read + Send + 'f>> + Sync);

/// Where the reader gets its bytes.
pub enum Input<'f, R> {
    /// A byte stream (gzip, standard input, ...), read into a fixed set of reused buffers.
    Stream(R),
    /// A byte stream that can be read again from its start (a gzip file): once the first
    /// block has reached the events, its blocks are cut at likely event boundaries and the
    /// parsers walk the events themselves, as for a mapped file (see [`Options::chain`]);
    /// when a parser does not confirm a cut, `again` opens the stream anew and it is read
    /// the scanned way.
    Reopenable {
        /// The stream.
        stream: R,
        /// Opens the same bytes again, from the start.
        again: Reopen<'f>,
    },
    /// A regular file of this length, read through windows of a memory map: the bytes go
    /// from the page cache to the parser without a copy. The file must not shrink while it
    /// is read (a truncated mapping faults).
    Mapped {
        /// The open file.
        file: &'f std::fs::File,
        /// Its length.
        len: u64,
        /// Called with the number of bytes of the file read so far (the end of each window;
        /// windows overlap where an event is carried over, so a position may repeat).
        progress: Option<&'f (dyn Fn(u64) + Sync)>,
    },
}

/// Aggregated warnings keyed by code.
#[derive(Default)]
struct Warnings {
    map: BTreeMap<&'static str, Warning>,
}

impl Warnings {
    fn add(&mut self, code: &'static str, offset: Option<u64>, message: impl FnOnce() -> String) {
        match self.map.get_mut(code) {
            Some(w) => {
                w.count += 1;
                if let (Some(o), Some(f)) = (offset, w.first_offset) {
                    if o < f {
                        w.first_offset = Some(o);
                    }
                }
            }
            None => {
                self.map.insert(
                    code,
                    Warning {
                        code,
                        count: 1,
                        first_offset: offset,
                        message: message(),
                    },
                );
            }
        }
    }
    fn merge(&mut self, other: Warnings) {
        for (code, w) in other.map {
            match self.map.get_mut(code) {
                Some(x) => {
                    x.count += w.count;
                    if w.first_offset < x.first_offset {
                        x.first_offset = w.first_offset;
                        x.message = w.message;
                    }
                }
                None => {
                    self.map.insert(code, w);
                }
            }
        }
    }
}

/// Warning code of the events written with `ts` 0 and `dur` 0 (pytorch #188481), left out
/// when read; the capture check reports them (`zero-timestamps`).
pub const ZERO_TIMESTAMP: &str = "zero-timestamp";

/// The reader's private tables (names, threads): the model's fast hash.
type FxHashMap<K, V> = crate::model::fasthash::HashMap<K, V>;

/// What one block produced. Name and thread ids are those of the worker that parsed it;
/// `new_names` and `new_threads` are the ones that worker met for the first time here.
#[derive(Default)]
struct Partial {
    seq: u64,
    worker: usize,
    new_names: Vec<Box<str>>,
    /// Offset of the event that brought each of `new_names` (for the `names` limit).
    new_name_offsets: Vec<u64>,
    new_threads: Vec<(i64, i64)>,
    /// Kernel launch details the worker met for the first time here (its ids continue).
    new_infos: Vec<KernelInfo>,
    cpu: Vec<CpuEvent>,
    gpu: Vec<GpuEvent>,
    flow_starts: Vec<u64>,
    flow_ends: Vec<u64>,
    thread_names: Vec<(i64, i64, String)>,
    mem_peaks: Vec<(i64, u64)>,
    /// Device memory events (threads are the worker's ids).
    memory: Vec<MemEvent>,
    /// Operator input shapes: External id and the worker's ids of the three texts.
    shapes: Vec<(u64, [NameId; 3])>,
    /// `with_flops` FLOPs by External id.
    flops: Vec<(u64, u64)>,
    /// Collective arguments (names are the worker's ids): true for a host operator (keyed by
    /// External id), false for a device kernel (keyed by correlation).
    comms: Vec<(bool, u64, CommArgs)>,
    warnings: Warnings,
    events: u64,
    hip: bool,
    /// For chain blocks: how the walk ended.
    chain_end: ChainEnd,
    /// The block's earliest-starting and latest-ending events (for the `ts-outlier` offset).
    extremes: Extremes,
}

/// The vectors a [`Partial`] fills per event, emptied by [`Merger::merge`] and handed back to
/// the workers, so that each block fills vectors grown by earlier ones instead of growing
/// its own from nothing.
#[derive(Default)]
struct Spare {
    cpu: Vec<CpuEvent>,
    gpu: Vec<GpuEvent>,
    flow_starts: Vec<u64>,
    flow_ends: Vec<u64>,
    memory: Vec<MemEvent>,
    shapes: Vec<(u64, [NameId; 3])>,
    flops: Vec<(u64, u64)>,
}

/// One event of a block: its time, byte offset and (worker's) name id.
#[derive(Clone, Copy, Debug)]
struct Marked {
    at: Ns,
    offset: u64,
    name: NameId,
}

/// A block's earliest-starting and latest-ending events. Blocks come in file order, so the
/// first block whose extreme lies beyond the outlier bounds holds the first far event; when
/// it holds only one (the usual corrupt event), that extreme *is* the first, with its offset.
#[derive(Clone, Copy, Debug, Default)]
struct Extremes {
    low: Option<Marked>,
    high: Option<Marked>,
}

impl Extremes {
    fn see(&mut self, start: Ns, end: Ns, offset: u64, name: NameId) {
        if self.low.is_none_or(|m| start < m.at) {
            self.low = Some(Marked {
                at: start,
                offset,
                name,
            });
        }
        if self.high.is_none_or(|m| end > m.at) {
            self.high = Some(Marked {
                at: end,
                offset,
                name,
            });
        }
    }
}

/// One parser thread: its name and thread tables live as long as the read.
struct Worker {
    id: usize,
    /// Offset of the event being added.
    offset: u64,
    names: FxHashMap<Box<str>, u32>,
    threads: FxHashMap<(i64, i64), u32>,
    last_thread: ((i64, i64), u32),
    /// Kernel launch details seen by this worker, and how many were already sent.
    infos: KernelInfoTable,
    infos_sent: usize,
    /// The event shapes this worker learned (see [`fast::Shapes`]).
    shapes: fast::Shapes,
    p: Partial,
}

fn name_code(s: &str) -> i64 {
    // stable FNV-1a hash of a non-numeric id, mapped below any real pid
    let mut h: u64 = 0xcbf29ce484222325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    -((h >> 2) as i64) - 2
}

fn id_key(v: IdValue<'_>) -> i64 {
    match v {
        IdValue::Int(i) => i,
        IdValue::Name(s) => {
            // "stream 7" style ids
            if let Some(n) = s
                .rsplit(' ')
                .next()
                .and_then(|t| t.trim().parse::<i64>().ok())
            {
                if s.starts_with("stream") {
                    return n;
                }
            }
            name_code(&s)
        }
        IdValue::None => -1,
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Class {
    Cpu(CpuKind),
    Gpu(GpuKind),
    Skip,
}

/// The part a Kineto category plays, in any letter case.
#[inline]
fn classify(cat: &str) -> Class {
    // every writer spells the categories in lower case: one length test and one word
    // comparison each; only another spelling pays for the lower-cased copy
    if let Some(c) = class_of(cat) {
        return c;
    }
    let mut buf = [0u8; CATEGORY_MAX];
    lowered(cat, &mut buf)
        .and_then(class_of)
        .unwrap_or(Class::Cpu(CpuKind::Other))
}

/// Whether a flow event of category `cat` (any letter case) links a launch to its device
/// activity.
#[inline]
fn is_launch_flow(cat: &str) -> bool {
    let launch = |c: &str| matches!(c, "ac2g" | "async_cpu_to_gpu" | "async_gpu" | "async");
    if launch(cat) {
        return true;
    }
    let mut buf = [0u8; CATEGORY_MAX];
    lowered(cat, &mut buf).is_some_and(launch)
}

/// Longer than any category [`class_of`] or [`is_launch_flow`] knows.
const CATEGORY_MAX: usize = 32;

/// `s` in lower case, in `buf`; `None` when `s` is already lower case (the exact comparison
/// has answered) or too long to be a known category.
fn lowered<'b>(s: &str, buf: &'b mut [u8; CATEGORY_MAX]) -> Option<&'b str> {
    if s.len() > CATEGORY_MAX || !s.bytes().any(|b| b.is_ascii_uppercase()) {
        return None;
    }
    let out = &mut buf[..s.len()];
    out.copy_from_slice(s.as_bytes());
    out.make_ascii_lowercase();
    std::str::from_utf8(out).ok()
}

/// The part a lower-case Kineto category plays (`None`: not a category named here, an
/// ordinary host span). One arm per category, so the match compiles to length tests and word
/// comparisons.
#[inline]
fn class_of(cat: &str) -> Option<Class> {
    Some(match cat {
        "cpu_op" | "operator" => Class::Cpu(CpuKind::Op),
        "cuda_runtime" | "runtime" => Class::Cpu(CpuKind::Runtime),
        "kernel" => Class::Gpu(GpuKind::Kernel),
        "python_function" => Class::Cpu(CpuKind::PythonFunction),
        "user_annotation" => Class::Cpu(CpuKind::UserAnnotation),
        "gpu_memcpy" | "memcpy" => Class::Gpu(GpuKind::Memcpy),
        "gpu_memset" | "memset" => Class::Gpu(GpuKind::Memset),
        "cuda_driver" => Class::Cpu(CpuKind::Driver),
        "gpu_user_annotation" => Class::Gpu(GpuKind::Annotation),
        "cuda_sync" => Class::Gpu(GpuKind::Sync),
        "python" => Class::Cpu(CpuKind::Python),
        "mtia_runtime"
        | "xpu_runtime"
        | "xpu_driver"
        | "privateuse1_runtime"
        | "privateuse1_driver"
        | "glow_runtime" => Class::Cpu(CpuKind::OtherRuntime),
        "mtia_ccp_events" => Class::Gpu(GpuKind::Kernel),
        "trace" => Class::Skip,
        _ => return None,
    })
}

impl Worker {
    fn new(id: usize) -> Self {
        Worker {
            id,
            offset: 0,
            names: FxHashMap::default(),
            threads: FxHashMap::default(),
            last_thread: ((i64::MIN, i64::MIN), NONE),
            infos: KernelInfoTable::new(),
            infos_sent: 1, // id 0 (unknown) is shared by every table
            shapes: fast::Shapes::default(),
            p: Partial::default(),
        }
    }

    #[inline]
    fn thread(&mut self, pid: i64, tid: i64) -> u32 {
        if self.last_thread.0 == (pid, tid) {
            return self.last_thread.1;
        }
        let n = self.threads.len() as u32;
        let i = *self.threads.entry((pid, tid)).or_insert_with(|| {
            self.p.new_threads.push((pid, tid));
            n
        });
        self.last_thread = ((pid, tid), i);
        i
    }

    #[inline]
    fn name(&mut self, s: &str) -> NameId {
        if let Some(&i) = self.names.get(s) {
            return NameId(i);
        }
        let i = self.names.len() as u32;
        self.names.insert(s.into(), i);
        self.p.new_names.push(s.into());
        self.p.new_name_offsets.push(self.offset);
        NameId(i)
    }

    /// The collective arguments of an event (`Seq`, `Comms Id`, process group, message size,
    /// dtype), `None` when it has none: a few comparisons per event, names interned.
    fn comm_args(&mut self, a: &event::RawArgs<'_>) -> Option<CommArgs> {
        use event::Num;
        let count = |n: Num| match n {
            Num::Int(v) if v >= 0 => Some(v as u64),
            Num::UInt(v) => Some(v),
            _ => None,
        };
        if a.seq == Num::None
            && a.comms_id == Num::None
            && a.in_nelems == Num::None
            && a.out_nelems == Num::None
            && a.pg_name.0.is_none()
            && a.pg_id == Num::None
        {
            return None;
        }
        let group = match (a.pg_name.0.as_deref(), count(a.pg_id)) {
            (Some(g), _) => Some(self.name(g)),
            (None, Some(id)) => {
                // the id as text, without an allocation
                let mut buf = [0u8; 20];
                let mut w = &mut buf[..];
                let _ = std::io::Write::write_fmt(&mut w, format_args!("{id}"));
                let n = 20 - w.len();
                Some(self.name(std::str::from_utf8(&buf[..n]).unwrap_or("")))
            }
            (None, None) => None,
        };
        let dtype = a.dtype.0.as_deref().map(|d| self.name(d));
        Some(CommArgs {
            seq: count(a.seq),
            comms_id: count(a.comms_id),
            group,
            in_nelems: count(a.in_nelems),
            out_nelems: count(a.out_nelems),
            dtype,
        })
    }

    /// A `[memory]` instant of a CUDA or HIP device (`Device Type` 1, or 6 as ROCm builds
    /// record it): its peak, and the event for the merger's [`MemoryBuilder`]; or of the CPU
    /// (`Device Type` 0): the event, as device [`crate::model::memory::CPU_DEVICE`], without
    /// `Total Reserved` (the CPU allocator has no cache; torch records 0).
    fn memory_event(&mut self, e: &RawEvent<'_>) {
        let a = &e.args;
        let cpu = match a.device_type.int() {
            Some(1 | 6) => false,
            Some(0) => true,
            _ => return,
        };
        let dev = if cpu {
            crate::model::memory::CPU_DEVICE as i64
        } else {
            match a.device_id.int() {
                Some(d) => d,
                None => return,
            }
        };
        let total = a.total_allocated.int();
        if let (Some(total), false) = (total, cpu) {
            let total = total.max(0) as u64;
            match self.p.mem_peaks.iter_mut().find(|(d, _)| *d == dev) {
                Some((_, p)) => *p = (*p).max(total),
                None => self.p.mem_peaks.push((dev, total)),
            }
        }
        let ts = match e.decoded.ts_ns {
            Some(ns) => Some(ns),
            None => e.ts.and_then(micros_to_ns),
        };
        let (Some(ts), Some(bytes)) = (ts, a.mem_bytes.int()) else {
            return;
        };
        let pid = e.decoded.pid.unwrap_or_else(|| id_key(id_value(e.pid)));
        let tid = e.decoded.tid.unwrap_or_else(|| id_key(id_value(e.tid)));
        let thread = self.thread(pid, tid);
        self.p.memory.push(MemEvent {
            ts,
            addr: a.addr.id(),
            bytes,
            total_allocated: total.unwrap_or(-1),
            total_reserved: if cpu {
                -1
            } else {
                a.total_reserved.int().unwrap_or(-1)
            },
            device: dev.clamp(i32::MIN as i64, i32::MAX as i64) as i32,
            thread,
        });
    }

    fn add(&mut self, e: &RawEvent<'_>, offset: u64) {
        self.offset = offset;
        self.p.events += 1;
        let ph = e.ph.0.as_deref().unwrap_or("");
        let cat = e.cat.0.as_deref().unwrap_or("");
        match ph {
            "X" => {}
            "i" | "I" => {
                if e.name.0.as_deref() == Some("[memory]") {
                    self.memory_event(e);
                }
                return;
            }
            "s" | "f" | "t" => {
                if is_launch_flow(cat) {
                    let id = match id_value(e.id) {
                        IdValue::Int(i) if i > 0 => i as u64,
                        _ => 0,
                    };
                    if id != 0 {
                        if ph == "s" {
                            self.p.flow_starts.push(id);
                        } else {
                            self.p.flow_ends.push(id);
                        }
                    }
                }
                return;
            }
            "M" => {
                if e.name.0.as_deref() == Some("thread_name") {
                    if let Some(n) = e.args.name.0.as_deref() {
                        let pid = id_key(id_value(e.pid));
                        let tid = id_key(id_value(e.tid));
                        self.p.thread_names.push((pid, tid, n.trim().to_string()));
                    }
                }
                return;
            }
            _ => return,
        }
        let class = classify(cat);
        if let Class::Skip = class {
            return;
        }
        let ts = match e.decoded.ts_ns {
            Some(ns) => Some(ns),
            None => e.ts.and_then(micros_to_ns),
        };
        let Some(start) = ts else {
            self.p.warnings.add("missing-ts", Some(offset), || {
                "an X event has no usable `ts`; it was skipped".to_string()
            });
            return;
        };
        let dur = match e
            .decoded
            .dur_ns
            .map(Some)
            .or_else(|| e.dur.map(micros_to_ns))
        {
            Some(Some(d)) if d >= 0 => d,
            Some(Some(_)) => {
                self.p.warnings.add("negative-dur", Some(offset), || {
                    "an event has a negative `dur`; it was treated as 0".to_string()
                });
                0
            }
            _ => 0,
        };
        // torch 2.12 writes the later events of some traces with `ts 0, dur 0` (pytorch
        // #188481): they carry no time, and kept they would stretch the trace from 0 to now
        if start == 0 && dur == 0 {
            self.p.warnings.add(ZERO_TIMESTAMP, Some(offset), || {
                "events with `ts` 0 and `dur` 0 (the torch 2.12 export defect, pytorch \
                 #188481) carry no time and were left out"
                    .to_string()
            });
            return;
        }
        let name_str = e.name.0.as_deref().unwrap_or("");
        let name = self.name(name_str);
        self.p
            .extremes
            .see(start, start.saturating_add(dur.max(0)), offset, name);
        match class {
            Class::Cpu(kind) => self.add_cpu(e, kind, start, dur, name),
            Class::Gpu(kind) => self.add_gpu(e, kind, start, dur, name, offset),
            Class::Skip => {}
        }
    }

    /// [`Worker::add`] of a host span (its time and name read).
    #[inline(always)]
    fn add_cpu(&mut self, e: &RawEvent<'_>, kind: CpuKind, start: Ns, dur: Ns, name: NameId) {
        let a = &e.args;
        let name_str = e.name.0.as_deref().unwrap_or("");
        if kind == CpuKind::Runtime && name_str.starts_with("hip") {
            self.p.hip = true;
        }
        let pid = e.decoded.pid.unwrap_or_else(|| id_key(id_value(e.pid)));
        let tid = e.decoded.tid.unwrap_or_else(|| id_key(id_value(e.tid)));
        let thread = self.thread(pid, tid);
        // record_shapes: the raw JSON texts of an operator's inputs
        if let (CpuKind::Op, Some(dims)) = (kind, a.input_dims) {
            let ext = a.external_id.id();
            if ext != 0 {
                let texts = [
                    self.name(dims),
                    self.name(a.input_type.unwrap_or("[]")),
                    self.name(a.concrete_inputs.unwrap_or("[]")),
                ];
                self.p.shapes.push((ext, texts));
            }
        }
        // (flops and a collective's arguments are cold slots: most events fill none)
        if kind == CpuKind::Op && !a.cold_default() {
            if let (Some(f), ext) = (a.flops.int(), a.external_id.id()) {
                if f > 0 && ext != 0 {
                    self.p.flops.push((ext, f as u64));
                }
            }
            // record_param_comms: the collective's arguments
            let ext = a.external_id.id();
            if ext != 0 {
                if let Some(c) = self.comm_args(a) {
                    self.p.comms.push((true, ext, c));
                }
            }
        }
        self.p.cpu.push(CpuEvent {
            start,
            dur,
            name,
            thread,
            kind,
            is_module: kind == CpuKind::PythonFunction
                && !a.cold_default()
                && a.python_module_id != event::Num::None,
            external_id: a.external_id.id(),
            correlation: a.correlation.id(),
            owner_op: NONE,
        });
    }

    /// [`Worker::add`] of a device activity (its time and name read).
    #[inline(always)]
    fn add_gpu(
        &mut self,
        e: &RawEvent<'_>,
        kind: GpuKind,
        start: Ns,
        dur: Ns,
        name: NameId,
        offset: u64,
    ) {
        let a = &e.args;
        let device = a
            .device
            .int()
            .unwrap_or_else(|| {
                e.decoded
                    .pid
                    .unwrap_or_else(|| id_key(id_value(e.pid)))
                    .max(0)
            })
            .clamp(i32::MIN as i64, i32::MAX as i64) as i32;
        let stream = a
            .stream
            .int()
            .unwrap_or_else(|| e.decoded.tid.unwrap_or_else(|| id_key(id_value(e.tid))));
        let f32or = |n: event::Num| n.float().map(|v| v as f32).unwrap_or(f32::NAN);
        // launch statistics that cannot be right are left out (NaN), not averaged
        let (mut blocks, mut warps, mut occupancy) = (
            f32or(a.blocks_per_sm),
            f32or(a.warps_per_sm),
            f32or(a.occupancy),
        );
        let bad = |v: f32, max: f32| v.is_finite() && !(0.0..=max).contains(&v);
        if bad(occupancy, 100.0) || bad(blocks, f32::MAX) || bad(warps, f32::MAX) {
            for (v, max) in [
                (&mut occupancy, 100.0),
                (&mut blocks, f32::MAX),
                (&mut warps, f32::MAX),
            ] {
                if bad(*v, max) {
                    *v = f32::NAN;
                }
            }
            self.p
                .warnings
                .add("kernel-stat-out-of-range", Some(offset), || {
                    "kernels with an occupancy over 100 % or a negative blocks/warps per SM: \
                 those values were left out of the kernel statistics"
                        .into()
                });
        }
        let info = KernelInfo {
            blocks_per_sm: blocks,
            warps_per_sm: warps,
            occupancy_pct: occupancy,
            registers: a.registers.int().unwrap_or(0).clamp(0, u16::MAX as i64) as u16,
            grid: a.grid.0,
            block: a.block.0,
            shared_mem: a.shared_memory.int().unwrap_or(0).clamp(0, u32::MAX as i64) as u32,
        };
        let info = self.infos.intern(&info);
        // a collective kernel's arguments (copied from its record_param_comms)
        let corr = a.correlation.id();
        if kind == GpuKind::Kernel && corr != 0 && !a.cold_default() {
            if let Some(c) = self.comm_args(a) {
                self.p.comms.push((false, corr, c));
            }
        }
        self.p.gpu.push(GpuEvent {
            start,
            dur,
            name,
            kind,
            device,
            stream: stream_id(stream),
            correlation: a.correlation.id(),
            external_id: a.external_id.id(),
            bytes: a.bytes.int().unwrap_or(0).max(0) as u64,
            info,
            in_graph: a.graph_id.id() != 0,
            flow_linked: false,
            launch: NONE,
        });
    }
}

/// Orders host spans as [`Trace::finalize`] does (start, then longer first), stably.
fn cpu_order(a: &CpuEvent, b: &CpuEvent) -> std::cmp::Ordering {
    a.start.cmp(&b.start).then(b.dur.cmp(&a.dur))
}

impl Worker {
    /// Parses the events of one block into a [`Partial`], reusing the given (empty) vectors.
    fn parse_batch(&mut self, batch: &Batch, spare: Spare) -> Partial {
        self.p = Partial {
            seq: batch.seq,
            worker: self.id,
            cpu: spare.cpu,
            gpu: spare.gpu,
            flow_starts: spare.flow_starts,
            flow_ends: spare.flow_ends,
            memory: spare.memory,
            shapes: spare.shapes,
            flops: spare.flops,
            ..Partial::default()
        };
        match batch.chain {
            None => self.parse_ranges(batch),
            Some(expects) => self.p.chain_end = self.parse_chain(batch, expects),
        }
        // sorted runs make the final sort a cheap merge (or a no-op for time-ordered files);
        // a stable sort of stably sorted blocks gives the same order as one big stable sort
        let mut p = std::mem::take(&mut self.p);
        p.new_infos = self.infos.infos()[self.infos_sent..].to_vec();
        self.infos_sent = self.infos.len();
        if !p.cpu.windows(2).all(|w| cpu_order(&w[0], &w[1]).is_le()) {
            p.cpu.sort_by(cpu_order);
        }
        if !p.gpu.windows(2).all(|w| w[0].start <= w[1].start) {
            p.gpu.sort_by_key(|g| g.start);
        }
        p
    }
}

impl Worker {
    /// The events of a scanned block: one range each.
    fn parse_ranges(&mut self, batch: &Batch) {
        let mut ev = RawEvent::default();
        for &(s, e, repair_hint) in &batch.ranges {
            let slice = &batch.buf.bytes()[..batch.len][s as usize..e as usize];
            let offset = batch.base + s as u64;
            if !repair_hint && fast::parse_shaped(&mut self.shapes, slice, &mut ev) {
                self.add(&ev, offset);
                continue;
            }
            self.add_slow(slice, offset, repair_hint);
        }
    }

    /// Walks the events of a chain block (see [`ChainEnd`]).
    fn parse_chain(&mut self, batch: &Batch, mut expects: bool) -> ChainEnd {
        let data = &batch.buf.bytes()[..batch.len];
        let Some(text) = fast::utf8(data) else {
            return ChainEnd::Failed;
        };
        let mut ev = RawEvent::default();
        let mut pos = 0;
        loop {
            while data.get(pos).is_some_and(|&c| scan::is_ws(c)) {
                pos += 1;
            }
            let Some(&c) = data.get(pos) else {
                return if expects {
                    ChainEnd::Failed
                } else {
                    ChainEnd::Confirmed
                };
            };
            if !expects {
                match c {
                    b',' => {
                        pos += 1;
                        expects = true;
                        continue;
                    }
                    b']' => return ChainEnd::ArrayEnd(batch.base + pos as u64),
                    _ => return ChainEnd::Failed,
                }
            }
            if c != b'{' {
                return ChainEnd::Failed;
            }
            let offset = batch.base + pos as u64;
            match fast::parse_at_shaped(&mut self.shapes, text, pos, &mut ev) {
                Ok(end) => {
                    self.add(&ev, offset);
                    pos = end;
                }
                Err(Some(end)) => {
                    self.add_slow(&data[pos..end], offset, false);
                    pos = end;
                }
                Err(None) => return ChainEnd::Failed,
            }
            expects = false;
        }
    }

    /// One event the fast parser left (or that the scanner marked for repair): serde, then
    /// the lenient repair with its warnings, else a skipped event.
    fn add_slow(&mut self, slice: &[u8], offset: u64, repair_hint: bool) {
        if !repair_hint {
            if let Ok(ev) = serde_json::from_slice::<RawEvent>(slice) {
                self.add(&ev, offset);
                return;
            }
        }
        let (fixed, fixes) = lenient::repair(slice);
        match serde_json::from_slice::<RawEvent>(&fixed) {
            Ok(ev) => {
                let repairs = [
                    (
                        fixes.invalid_utf8,
                        "invalid-utf8",
                        "invalid UTF-8 in a string was replaced by U+FFFD",
                    ),
                    (
                        fixes.control_chars,
                        "control-chars",
                        "raw control characters inside a string were escaped",
                    ),
                    (
                        fixes.quotes,
                        "unescaped-quotes",
                        "unescaped quotes inside a string were escaped",
                    ),
                    (
                        fixes.bare_tokens,
                        "bare-tokens",
                        "non-JSON tokens (such as N/A or NaN) were read as null",
                    ),
                ];
                for (made, code, what) in repairs {
                    if made {
                        self.p.warnings.add(code, Some(offset), || what.into());
                    }
                }
                self.add(&ev, offset);
            }
            Err(err) => {
                // still an entry of `traceEvents`
                self.p.events += 1;
                let msg = err.to_string();
                self.p.warnings.add("skipped-event", Some(offset), move || {
                    format!("an event that is not valid JSON was skipped ({msg})")
                });
            }
        }
    }
}

/// Top-level members other than `traceEvents`, as raw JSON.
#[derive(Default)]
struct Header {
    /// The first [`Header::MAX_KEYS`] member names (to tell what a non-trace file is).
    keys: Vec<String>,
    /// The members read ([`Header::READ`]), raw.
    values: Vec<(String, Vec<u8>)>,
}

impl Header {
    /// Member names kept: enough to name what a file is, bounded whatever the file.
    const MAX_KEYS: usize = 256;
    /// The top-level members the reader parses; the others are skipped, not kept.
    const READ: [&'static str; 4] = [
        "deviceProperties",
        "computeProperties",
        "distributedInfo",
        "baseTimeNanoseconds",
    ];

    fn add(&mut self, key: String, raw: &[u8]) {
        if Self::READ.contains(&key.as_str()) {
            self.values.push((key.clone(), raw.to_vec()));
        }
        if self.keys.len() < Self::MAX_KEYS {
            self.keys.push(key);
        }
    }
}

struct ReaderOutcome {
    header: Header,
    bytes: u64,
    saw_events: bool,
    truncated_at: Option<u64>,
    /// Elements of the event array that are not objects, and the offset of the first.
    non_objects: (u64, Option<u64>),
    /// When the reader ended in chain mode (the end of the events array is then found by a
    /// chain block): whether the events array is a member of an object.
    chain_in_object: Option<bool>,
    /// Whether chain blocks were sent (each must be confirmed).
    chained: bool,
}

impl ReaderOutcome {
    /// What the reader ends with after `bytes` bytes (`truncated_at`: where a cut event
    /// starts), in chain mode when `chain` is set.
    fn new(
        header: Header,
        bytes: u64,
        truncated_at: Option<u64>,
        scanner: &Scanner,
        first_non_object: Option<u64>,
        chain: Option<(bool, bool)>,
        chain_off: bool,
    ) -> Self {
        ReaderOutcome {
            header,
            bytes,
            saw_events: scanner.saw_events,
            truncated_at,
            non_objects: (scanner.non_objects, first_non_object),
            chain_in_object: chain.map(|(_, in_object)| in_object),
            chained: chain_off || chain.is_some(),
        }
    }
}

/// Where to cut a chain block inside `data` (see [`ChainEnd`]): the last `,` with an
/// object's `}` before it and a `{` after it (whitespace between) and a newline among that
/// whitespace; `None` when there is none.
fn chain_cut(data: &[u8]) -> Option<usize> {
    let ws = |c: u8| scan::is_ws(c);
    let mut end = data.len();
    while let Some(n) = memchr::memrchr(b'\n', &data[..end]) {
        end = n;
        // the token after the newline must open an object
        let after = data[n..].iter().position(|&c| !ws(c)).map(|i| n + i);
        if after.is_none_or(|i| data[i] != b'{') {
            continue;
        }
        // before it: a comma (maybe across more whitespace), and before that a `}`
        let Some(comma) = data[..n].iter().rposition(|&c| !ws(c)) else {
            continue;
        };
        if data[comma] != b',' {
            continue;
        }
        if data[..comma]
            .iter()
            .rposition(|&c| !ws(c))
            .is_some_and(|i| data[i] == b'}')
        {
            return Some(comma);
        }
    }
    None
}

/// The top-level members after the events array, whose `]` is at offset `at` of the mapped
/// file (read by the scanner, as the scanned way would); `None` when that part does not end
/// the document cleanly (then the file is read again the scanned way, which reports it).
fn read_after_events(
    file: &std::fs::File,
    len: u64,
    at: u64,
    in_object: bool,
    path: &str,
) -> Result<Option<Header>, LoadError> {
    // SAFETY: as for the reader's windows (read only, dropped here).
    let map = unsafe {
        memmap2::MmapOptions::new()
            .offset(at)
            .len((len - at) as usize)
            .map(file)
    }
    .map_err(|e| io_error_at(path, at, e))?;
    let mut scanner = Scanner::in_events(false, in_object);
    let mut header = Header::default();
    let mut pos = 0;
    loop {
        match scanner.next(&map, pos, true) {
            Ok(Step::Item(Item::TopValue { key, start, end }, next)) => {
                header.add(key, &map[start..end]);
                pos = next;
            }
            Ok(Step::Done(_)) => return Ok(Some(header)),
            Ok(_) | Err(_) => return Ok(None),
        }
    }
}

/// `len` bytes of `file` from `offset`, mapped read only and populated (a window of the
/// reader; unmapped when dropped).
fn map_window(
    file: &std::fs::File,
    offset: u64,
    len: usize,
    path: &str,
) -> Result<memmap2::Mmap, LoadError> {
    // SAFETY: the map is read only and dropped with its block; the file is not modified by
    // this process (see `Input::Mapped`).
    unsafe {
        memmap2::MmapOptions::new()
            .offset(offset)
            .len(len)
            .populate()
            .map(file)
    }
    .map_err(|e| io_error_at(path, offset, e))
}

/// A read error (corrupt or cut gzip data, ...) at an offset of the uncompressed stream.
fn io_error_at(path: &str, offset: u64, e: std::io::Error) -> LoadError {
    let mut err = LoadError::io(path, e);
    err.offset = Some(offset);
    err
}

/// Size of the first block of a mapped file and the smallest of its last windows.
const FIRST_BLOCK: usize = 256 << 10;

/// A block as read from the [`Input`], before it is cut at its last complete event.
struct Block {
    storage: Storage,
    len: usize,
    /// True when nothing follows the block.
    eof: bool,
}

/// A window of a mapped file for a chain block, from `base`: ending at a cut between events
/// (found without a scan), or at the end of the file (then `true`); the last windows shrink (a
/// quarter of what is left per two parsers), so that the parsers finish together. `None` when
/// the window holds no place to cut (no newlines between events).
#[allow(clippy::type_complexity)]
fn chain_window(
    file: &std::fs::File,
    file_len: u64,
    base: u64,
    target: usize,
    threads: usize,
    path: &str,
) -> Result<Option<(Option<memmap2::Mmap>, usize, bool)>, LoadError> {
    let left = file_len - base;
    let near_end = 2 * threads.max(1) as u64 * target as u64;
    let target = if left < near_end {
        (left / (2 * threads.max(1) as u64)).max(FIRST_BLOCK as u64) as usize
    } else {
        target
    };
    let end = (base + target as u64).min(file_len);
    let len = (end - base) as usize;
    if len == 0 {
        return Ok(Some((None, 0, true)));
    }
    let map = map_window(file, base, len, path)?;
    if end == file_len {
        return Ok(Some((Some(map), len, true)));
    }
    Ok(chain_cut(&map).map(|cut| (Some(map), cut, false)))
}

/// The next block of a stream: the carried incomplete item (`tail`), then up to `target`
/// bytes read into `buf` (grown to fit).
fn stream_block<R: Read>(
    input: &mut R,
    mut buf: Vec<u8>,
    tail: &mut Vec<u8>,
    target: usize,
    stream_eof: &mut bool,
    base: u64,
    path: &str,
) -> Result<Block, LoadError> {
    let room = target.max(tail.len());
    if buf.len() < room {
        buf.resize(room, 0);
    }
    buf[..tail.len()].copy_from_slice(tail);
    let mut len = tail.len();
    tail.clear();
    while !*stream_eof && len < target {
        match input.read(&mut buf[len..target]) {
            Ok(0) => *stream_eof = true,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_error_at(path, base + len as u64, e)),
        }
    }
    Ok(Block {
        storage: Storage::Heap(buf),
        len,
        eof: *stream_eof,
    })
}

/// The next block of a mapped file: `target` bytes from `base` (fewer at its end), mapped.
fn mapped_block(
    file: &std::fs::File,
    file_len: u64,
    progress: &Option<&(dyn Fn(u64) + Sync)>,
    base: u64,
    target: usize,
    path: &str,
) -> Result<Block, LoadError> {
    let end = (base + target as u64).min(file_len);
    let len = (end - base) as usize;
    let storage = if len == 0 {
        Storage::Heap(Vec::new())
    } else {
        Storage::Map(map_window(file, base, len, path)?)
    };
    if let Some(report) = progress {
        report(end);
    }
    Ok(Block {
        storage,
        len,
        eof: end == file_len,
    })
}

/// Where the scan of a block stopped ([`scan_block`]).
struct Scanned {
    /// The first byte not consumed.
    pos: usize,
    /// Whether an item (or whitespace) was consumed.
    progressed: bool,
    /// Whether the document ended in the block.
    done: bool,
}

/// Scans a block (`data`, at file offset `base`): the events' ranges into `ranges`, the
/// top-level values other than the events into `header`, until the block ends inside an item
/// or the document ends.
#[allow(clippy::too_many_arguments)]
fn scan_block(
    scanner: &mut Scanner,
    data: &[u8],
    eof: bool,
    base: u64,
    ranges: &mut Vec<(u32, u32, bool)>,
    header: &mut Header,
    first_non_object: &mut Option<u64>,
    path: &str,
) -> Result<Scanned, LoadError> {
    let mut pos = 0usize;
    let mut progressed = false;
    loop {
        let before = ranges.len();
        pos = scanner.next_events(data, pos, ranges);
        progressed |= ranges.len() > before;
        let skipped_before = scanner.non_objects;
        let step = scanner.next(data, pos, eof);
        if skipped_before == 0 && scanner.non_objects > 0 {
            *first_non_object = scanner.first_non_object.map(|o| base + o as u64);
        }
        match step {
            Ok(Step::Item(Item::Event { start, end, repair }, next)) => {
                ranges.push((start as u32, end as u32, repair));
                pos = next;
                progressed = true;
            }
            Ok(Step::Item(Item::TopValue { key, start, end }, next)) => {
                header.add(key, &data[start..end]);
                pos = next;
                progressed = true;
            }
            Ok(Step::NeedMore(p)) => {
                return Ok(Scanned {
                    pos: p,
                    progressed,
                    done: false,
                })
            }
            Ok(Step::Done(p)) => {
                return Ok(Scanned {
                    pos: p,
                    progressed,
                    done: true,
                })
            }
            Err(e) => {
                let off = base + e.offset as u64;
                return Err(LoadError::at(
                    path,
                    off,
                    if scanner.saw_events {
                        format!("malformed JSON: {}", e.message)
                    } else {
                        format!("not a JSON trace: {}", e.message)
                    },
                ));
            }
        }
    }
}

/// The size of the next block when one item is larger than this one (`len` bytes at `base`):
/// twice `target`, up to the value limit, past which the file is refused.
fn grown_target(
    target: usize,
    len: usize,
    limit: u64,
    base: u64,
    path: &str,
) -> Result<usize, LoadError> {
    if len as u64 > limit {
        return Err(LoadError::at(
            path,
            base,
            Limits::exceeded(
                "value-bytes",
                limit,
                &format!("a JSON value of more than {limit} bytes starts here"),
            ),
        ));
    }
    Ok(target
        .saturating_mul(2)
        .min(usize::try_from(limit.saturating_add(1)).unwrap_or(usize::MAX)))
}

/// Where the event cut by the end of the input starts (after any whitespace from `pos` in
/// `data`, at file offset `base`), and whether only whitespace follows `pos`.
fn cut_event_at(data: &[u8], pos: usize, base: u64) -> (u64, bool) {
    let space = data[pos..]
        .iter()
        .take_while(|c| c.is_ascii_whitespace())
        .count();
    (base + (pos + space) as u64, pos + space == data.len())
}

/// Reads the rest of a stream after the document ended; returns the offset of its end.
fn drain<R: Read>(input: &mut R, mut base: u64, path: &str) -> Result<u64, LoadError> {
    let mut sink = [0u8; 1 << 16];
    loop {
        match input.read(&mut sink) {
            Ok(0) => return Ok(base),
            Ok(n) => base += n as u64,
            Err(e) => return Err(io_error_at(path, base, e)),
        }
    }
}

/// The reader thread: cuts the input into blocks at event boundaries ([`Scanner`]) and sends
/// them to the workers; top-level values other than the events are kept in the [`Header`].
fn reader_loop<R: Read>(
    mut src: Input<'_, R>,
    opts: &Options,
    work: Sender<Batch>,
    pool: Receiver<Buffers>,
    path: &str,
) -> Result<ReaderOutcome, LoadError> {
    let mut scanner = Scanner::new();
    let mut header = Header::default();
    // absolute offset of the first byte not consumed yet (the start of the next block)
    let mut base: u64 = 0;
    let mut first_non_object: Option<u64> = None;
    let mut tail: Vec<u8> = Vec::new(); // stream input only: the carried incomplete item
    let mut seq = 0u64;
    let mut stream_eof = false;
    let block_size = opts.block_size.max(1024);
    // a mapped file's first block is scanned by this thread alone while the parsers wait:
    // small, so that chain blocks (cut without a scan) start at once
    let mut target = match &src {
        Input::Mapped { .. } if opts.chain => block_size.min(FIRST_BLOCK),
        _ => block_size,
    };
    let max_buffers = 2 * opts.threads.max(1) + 1;
    let mut created = 0usize;
    // chain mode (mapped files): whether the next block starts where an element is expected,
    // and whether the events array is an object's member
    let mut chain: Option<(bool, bool)> = None;
    // set once chain blocks were sent and the reader went back to scanning
    let mut chain_off = false;
    // the outcome after this many bytes, with where a cut event starts
    macro_rules! finish {
        ($bytes:expr, $truncated_at:expr) => {
            ReaderOutcome::new(
                header,
                $bytes,
                $truncated_at,
                &scanner,
                first_non_object,
                chain,
                chain_off,
            )
        };
    }
    loop {
        // A fixed set of buffers circulates between this thread and the workers: reused
        // buffers keep their length (zeroed once), so reading never clears or faults in memory
        // again, and their number bounds the memory in flight (mapped windows take one each
        // too, so at most as many are mapped at once).
        let (buf, mut ranges) = match pool.try_recv() {
            Ok(b) => b,
            Err(_) if created < max_buffers => {
                created += 1;
                Buffers::default()
            }
            Err(_) => pool.recv().unwrap_or_default(),
        };
        ranges.clear();
        // chain blocks (mapped files, reopenable streams) once the first block reached the events
        let chains = matches!(src, Input::Mapped { .. } | Input::Reopenable { .. });
        if chains && chain.is_none() && !chain_off && opts.chain && seq > 0 {
            chain = scanner.events_position();
        }
        if let Input::Mapped {
            file,
            len: file_len,
            progress,
        } = &src
        {
            if let Some((expects, in_object)) = chain {
                // a window ending at a cut or at the end of the file
                let found = chain_window(file, *file_len, base, target, opts.threads, path)?;
                let Some((map, len, eof)) = found else {
                    // no place to cut (no newlines between events): scan the rest, from where
                    // the chain blocks end (if they do not end there, one of them fails)
                    scanner.resume_in_events(expects, in_object);
                    chain = None;
                    chain_off = true;
                    created -= 1; // this buffer is dropped
                    continue;
                };
                if let Some(report) = progress {
                    report(base + len as u64);
                }
                if let Some(map) = map {
                    let batch = Batch {
                        seq,
                        base,
                        buf: Storage::Map(map),
                        len,
                        ranges,
                        chain: Some(expects),
                    };
                    if work.send(batch).is_err() {
                        break;
                    }
                    seq += 1;
                }
                let _ = buf; // mapped windows need no buffer
                base += len as u64;
                chain = Some((false, in_object));
                target = block_size;
                if eof {
                    return Ok(finish!(base, None));
                }
                continue;
            }
        }
        let block = match &mut src {
            Input::Stream(input) | Input::Reopenable { stream: input, .. } => {
                stream_block(input, buf, &mut tail, target, &mut stream_eof, base, path)?
            }
            Input::Mapped {
                file,
                len: file_len,
                progress,
            } => mapped_block(file, *file_len, progress, base, target, path)?,
        };
        let Block { storage, len, eof } = block;
        if let Input::Reopenable { .. } = &src {
            if let Some((expects, in_object)) = chain {
                // up to the last cut between events, the rest carried into the next block
                // (never the stream's last block: what follows the events is scanned)
                let cut = if eof {
                    None
                } else {
                    chain_cut(&storage.bytes()[..len])
                };
                if let Some(cut) = cut {
                    tail.extend_from_slice(&storage.bytes()[cut..len]);
                    let batch = Batch {
                        seq,
                        base,
                        buf: storage,
                        len: cut,
                        ranges,
                        chain: Some(expects),
                    };
                    if work.send(batch).is_err() {
                        break;
                    }
                    seq += 1;
                    base += cut as u64;
                    chain = Some((false, in_object));
                    target = block_size;
                    continue;
                }
                // no place to cut, or the end of the stream: scan from where the chain blocks
                // end (if they do not end there, one of them fails)
                scanner.resume_in_events(expects, in_object);
                chain = None;
                chain_off = true;
            }
        }
        let data = &storage.bytes()[..len];
        let Scanned {
            pos,
            mut progressed,
            done,
        } = scan_block(
            &mut scanner,
            data,
            eof,
            base,
            &mut ranges,
            &mut header,
            &mut first_non_object,
            path,
        )?;
        // whitespace between items is consumed: it never makes a block grow
        progressed |= pos > 0;
        if !done && !eof && !progressed {
            // one item is larger than the block: read more into a bigger block
            target = grown_target(target, len, opts.limits.value_bytes, base, path)?;
            if let Storage::Heap(_) = storage {
                tail = data[pos..].to_vec();
            }
            base += pos as u64;
            created -= 1; // this buffer is dropped
            continue;
        }
        if eof && !done {
            let (at, only_space) = cut_event_at(data, pos, base);
            let bytes = base + len as u64;
            if !scanner.saw_events && header.keys.is_empty() && only_space {
                return Err(LoadError::at(
                    path,
                    at,
                    "empty file: no JSON document".into(),
                ));
            }
            let _ = work.send(Batch {
                seq,
                base,
                buf: storage,
                len,
                ranges,
                chain: None,
            });
            return Ok(finish!(bytes, Some(at)));
        }
        if !done {
            if let Storage::Heap(_) = storage {
                tail.extend_from_slice(&data[pos..]);
            }
        }
        let consumed = if done { len } else { pos };
        let batch = Batch {
            seq,
            base,
            buf: storage,
            len,
            ranges,
            chain: None,
        };
        seq += 1;
        base += consumed as u64;
        if work.send(batch).is_err() {
            break;
        }
        target = block_size;
        if done {
            // the rest of the input (trailing whitespace/garbage is ignored)
            base = match &mut src {
                Input::Stream(input) | Input::Reopenable { stream: input, .. } => {
                    drain(input, base, path)?
                }
                Input::Mapped { len, .. } => *len,
            };
            return Ok(finish!(base, None));
        }
    }
    Ok(finish!(base, None))
}

struct Merger {
    names: Interner,
    threads: Vec<Thread>,
    thread_index: FxHashMap<(i64, i64), u32>,
    /// Per worker: its name ids and thread indexes mapped to the merged ones.
    name_maps: Vec<Vec<NameId>>,
    thread_maps: Vec<Vec<u32>>,
    /// Kernel launch details in first-seen order, and per worker its ids mapped to these.
    kernel_infos: KernelInfoTable,
    info_maps: Vec<Vec<u32>>,
    cpu: Vec<CpuEvent>,
    gpu: Vec<GpuEvent>,
    flow_starts: Vec<u64>,
    flow_ends: Vec<u64>,
    thread_names: Vec<(i64, i64, String)>,
    mem_peaks: BTreeMap<i64, u64>,
    memory: MemoryBuilder,
    op_shapes: FxHashMap<u64, OpShape>,
    op_flops: FxHashMap<u64, u64>,
    kernel_comms: FxHashMap<u64, CommArgs>,
    op_comms: FxHashMap<u64, CommArgs>,
    warnings: Warnings,
    events: u64,
    hip: bool,
    /// The `names` limit, and the offset of the event that brought the first name over it.
    name_limit: u64,
    names_over: Option<u64>,
    /// Each block's extremes in file order, names mapped to the merged table.
    extremes: Vec<Extremes>,
}

impl Merger {
    fn new(workers: usize, name_limit: u64) -> Self {
        Merger {
            names: Interner::new(),
            threads: Vec::new(),
            thread_index: FxHashMap::default(),
            name_maps: vec![Vec::new(); workers],
            thread_maps: vec![Vec::new(); workers],
            kernel_infos: KernelInfoTable::new(),
            info_maps: vec![vec![0]; workers],
            cpu: Vec::new(),
            gpu: Vec::new(),
            flow_starts: Vec::new(),
            flow_ends: Vec::new(),
            thread_names: Vec::new(),
            mem_peaks: BTreeMap::new(),
            memory: MemoryBuilder::new(),
            op_shapes: Default::default(),
            op_flops: Default::default(),
            kernel_comms: Default::default(),
            op_comms: Default::default(),
            warnings: Warnings::default(),
            events: 0,
            hip: false,
            name_limit,
            names_over: None,
            extremes: Vec::new(),
        }
    }

    /// Appends a partial (partials come in block order); returns its emptied vectors.
    fn merge(&mut self, mut p: Partial) -> Spare {
        let name_map = &mut self.name_maps[p.worker];
        for (s, at) in p.new_names.drain(..).zip(&p.new_name_offsets) {
            let before = self.names.len();
            name_map.push(self.names.intern(&s));
            if self.names.len() > before && self.names.len() as u64 > self.name_limit {
                self.names_over.get_or_insert(*at);
            }
        }
        let global = |m: Option<Marked>| {
            m.map(|m| Marked {
                name: name_map[m.name.0 as usize],
                ..m
            })
        };
        self.extremes.push(Extremes {
            low: global(p.extremes.low),
            high: global(p.extremes.high),
        });
        let thread_map = &mut self.thread_maps[p.worker];
        for &(pid, tid) in &p.new_threads {
            let i = *self.thread_index.entry((pid, tid)).or_insert_with(|| {
                self.threads.push(Thread {
                    pid,
                    tid,
                    name: None,
                });
                (self.threads.len() - 1) as u32
            });
            thread_map.push(i);
        }
        self.cpu.reserve(p.cpu.len());
        self.cpu.extend(p.cpu.drain(..).map(|mut e| {
            e.name = name_map[e.name.0 as usize];
            e.thread = thread_map[e.thread as usize];
            e
        }));
        let info_map = &mut self.info_maps[p.worker];
        for info in p.new_infos.drain(..) {
            info_map.push(self.kernel_infos.intern(&info));
        }
        self.gpu.reserve(p.gpu.len());
        self.gpu.extend(p.gpu.drain(..).map(|mut e| {
            e.name = name_map[e.name.0 as usize];
            e.info = info_map[e.info as usize];
            e
        }));
        for (ext, [d, t, c]) in p.shapes.drain(..) {
            // first call wins, like the External id links
            self.op_shapes.entry(ext).or_insert(OpShape {
                dims: name_map[d.0 as usize],
                types: name_map[t.0 as usize],
                concrete: name_map[c.0 as usize],
            });
        }
        for (ext, f) in p.flops.drain(..) {
            self.op_flops.entry(ext).or_insert(f);
        }
        for (host, key, c) in p.comms {
            let map = |n: Option<NameId>| n.map(|n| name_map[n.0 as usize]);
            let c = CommArgs {
                group: map(c.group),
                dtype: map(c.dtype),
                ..c
            };
            let table = if host {
                &mut self.op_comms
            } else {
                &mut self.kernel_comms
            };
            // first record wins, like the External id links
            table.entry(key).or_insert(c);
        }
        for m in p.memory.drain(..) {
            self.memory.push(&MemEvent {
                thread: thread_map[m.thread as usize],
                ..m
            });
        }
        self.flow_starts.append(&mut p.flow_starts);
        self.flow_ends.append(&mut p.flow_ends);
        self.thread_names.extend(p.thread_names);
        for (d, v) in p.mem_peaks {
            let e = self.mem_peaks.entry(d).or_insert(0);
            *e = (*e).max(v);
        }
        self.warnings.merge(p.warnings);
        self.events += p.events;
        self.hip |= p.hip;
        Spare {
            cpu: p.cpu,
            gpu: p.gpu,
            flow_starts: p.flow_starts,
            flow_ends: p.flow_ends,
            memory: p.memory,
            shapes: p.shapes,
            flops: p.flops,
        }
    }
}

fn json_u64(v: &serde_json::Value) -> Option<u64> {
    v.as_u64()
        .or_else(|| v.as_f64().map(|f| f as u64))
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

fn devices_from_header(header: &Header) -> Vec<Device> {
    let mut out = Vec::new();
    for (key, raw) in &header.values {
        let legacy = key == "computeProperties";
        if key != "deviceProperties" && !legacy {
            continue;
        }
        let Ok(serde_json::Value::Array(list)) = serde_json::from_slice::<serde_json::Value>(raw)
        else {
            continue;
        };
        for (i, d) in list.iter().enumerate() {
            let g = |k: &str| d.get(k).and_then(json_u64);
            let name = d
                .get("name")
                .and_then(|n| n.as_str())
                .unwrap_or("")
                .to_string();
            let (maj, min, sms) = if legacy {
                (g("major"), g("minor"), g("multiProcessorCount"))
            } else {
                (g("computeMajor"), g("computeMinor"), g("numSms"))
            };
            let id = d.get("id").and_then(|v| v.as_i64()).unwrap_or(i as i64);
            if out.iter().any(|x: &Device| x.id == id) {
                continue;
            }
            let warp = g("warpSize").map(|v| v as u32);
            out.push(Device {
                id,
                vendor: vendor_of(&name, warp),
                name,
                sm_count: sms.map(|v| v as u32),
                memory_bytes: g("totalGlobalMem"),
                compute_major: maj.map(|v| v as u32),
                compute_minor: min.map(|v| v as u32),
                max_threads_per_sm: g("maxThreadsPerMultiprocessor")
                    .or(g("maxThreadsPerMultiProcessor"))
                    .map(|v| v as u32),
                warp_size: warp,
                active: false,
                peak_allocated: None,
            });
        }
    }
    out
}

fn vendor_of(name: &str, warp: Option<u32>) -> Vendor {
    let n = name.to_ascii_lowercase();
    if n.contains("amd") || n.contains("instinct") || n.contains("radeon") || n.starts_with("mi") {
        Vendor::Amd
    } else if n.contains("nvidia")
        || n.contains("tesla")
        || n.contains("geforce")
        || n.contains("quadro")
        || n.contains("rtx")
        || n.contains("a100")
        || n.contains("h100")
    {
        Vendor::Nvidia
    } else if warp == Some(64) {
        Vendor::Amd
    } else if warp == Some(32) {
        Vendor::Nvidia
    } else {
        Vendor::Other
    }
}

fn describe_non_trace(header: &Header) -> String {
    let keys: Vec<&str> = header.keys.iter().map(|s| s.as_str()).collect();
    let what = if keys.contains(&"rocprofiler-sdk-tool") {
        "a rocprofv3 JSON output"
    } else if keys.contains(&"nodes") && keys.contains(&"schema") {
        "a PyTorch Execution Trace (ET)"
    } else {
        "JSON without a `traceEvents` array"
    };
    let mut shown = keys.iter().take(6).copied().collect::<Vec<_>>().join(", ");
    if keys.len() > 6 {
        shown.push_str(", ...");
    }
    format!("not a Kineto trace: {what} (top-level keys: {shown})")
}

/// Reads a Kineto trace from an already-decompressed byte stream.
pub fn read<R: Read + Send>(
    input: R,
    path: &str,
    compressed_bytes: Option<u64>,
    opts: &Options,
) -> Result<Trace, LoadError> {
    read_from(Input::Stream(input), path, compressed_bytes, opts)
}

/// The reader's outcome judged: values in the event array that are not events (an error when
/// nothing else was read, else a warning), and a file that ends inside an event (an error
/// unless `--allow-truncated`).
fn check_outcome(
    outcome: &ReaderOutcome,
    merger: &mut Merger,
    opts: &Options,
    path: &str,
) -> Result<(), LoadError> {
    if let (n @ 1.., first) = outcome.non_objects {
        if merger.events == 0 {
            return Err(LoadError::at(
                path,
                first.unwrap_or(0),
                format!(
                    "not a Kineto trace: its event array holds {n} values that are not events \
                     (JSON objects) and no event"
                ),
            ));
        }
        merger.warnings.add("non-object-event", first, || {
            "values in the event array that are not JSON objects (log or warning lines \
             written into the trace, kineto #1453, #1460, or bare values) were skipped"
                .into()
        });
        if let Some(w) = merger.warnings.map.get_mut("non-object-event") {
            w.count = n;
        }
    }
    if let Some(at) = outcome.truncated_at {
        if !opts.allow_truncated {
            return Err(LoadError::at(
                path,
                at,
                format!(
                    "truncated trace: the JSON ends inside an event after {} complete events \
                     (rerun with --allow-truncated to analyze what was read)",
                    merger.events
                ),
            ));
        }
        merger.warnings.add("truncated", Some(at), || {
            "the file ends inside an event; only the complete events before it were read".into()
        });
    }
    Ok(())
}

/// What the header holds: the devices (with their peak memory and AMD vendor from the
/// events), the distributed setup and `baseTimeNanoseconds`. Members over `header_limit`
/// bytes are left out with a warning.
fn header_facts(
    header: &mut Header,
    merger: &mut Merger,
    header_limit: u64,
) -> (Vec<Device>, Option<Distributed>, Option<i64>) {
    // the members parsed into a JSON tree: a huge one is left out, not parsed
    header.values.retain(|(key, raw)| {
        let keep = raw.len() as u64 <= header_limit;
        if !keep {
            merger.warnings.add("header-too-large", None, || {
                format!(
                    "the top-level member `{key}` ({} bytes) is over the limit \
                     header-bytes={header_limit} and was ignored (raise it with \
                     --limit header-bytes=…)",
                    raw.len()
                )
            });
        }
        keep
    });
    let mut devices = devices_from_header(header);
    for d in devices.iter_mut() {
        if merger.hip && d.vendor == Vendor::Other {
            d.vendor = Vendor::Amd;
        }
        d.peak_allocated = merger.mem_peaks.get(&d.id).copied();
    }
    let mut distributed = None;
    let mut base_time_ns = None;
    for (key, raw) in &header.values {
        match key.as_str() {
            "distributedInfo" => {
                if let Ok(v) = serde_json::from_slice::<serde_json::Value>(raw) {
                    distributed = Some(Distributed {
                        backend: v.get("backend").and_then(|b| b.as_str()).map(String::from),
                        rank: v.get("rank").and_then(|r| r.as_i64()),
                        world_size: v.get("world_size").and_then(|r| r.as_i64()),
                    });
                }
            }
            "baseTimeNanoseconds" => {
                base_time_ns = std::str::from_utf8(raw)
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
            }
            _ => {}
        }
    }
    (devices, distributed, base_time_ns)
}

/// The merged host and device events, with each device event's launch-flow mark and the
/// events far outside the trace's span left out (with the `ts-outlier` warning).
fn flow_marks_and_outliers(merger: &mut Merger) -> (Vec<CpuEvent>, Vec<GpuEvent>) {
    // Whether a launch flow starts and ends at each device event's correlation id, kept in
    // `flow_linked` until the links are known (finalize moves it along when it sorts), so
    // the flow sets are freed before finalize builds its tables.
    let mut gpu = std::mem::take(&mut merger.gpu);
    {
        // ids from counters: bit sets over their range (a hash set when sparse)
        let starts = IdSet::new(&std::mem::take(&mut merger.flow_starts));
        let ends = IdSet::new(&std::mem::take(&mut merger.flow_ends));
        for g in gpu.iter_mut() {
            g.flow_linked = g.correlation != 0
                && starts.contains(g.correlation)
                && ends.contains(g.correlation);
        }
    }
    // events far outside the trace's span are dropped (they would stretch it to hours)
    let mut cpu = std::mem::take(&mut merger.cpu);
    let n = cpu.len() + gpu.len();
    let span = |i: usize| match cpu.get(i) {
        Some(c) => (c.start, c.dur),
        None => (gpu[i - cpu.len()].start, gpu[i - cpu.len()].dur),
    };
    // every kept event is inside its block's extremes: no block beyond the bounds, no far event
    let beyond = |b: &outliers::Bounds| {
        merger
            .extremes
            .iter()
            .any(|x| x.low.is_some_and(|m| m.at < b.lo) || x.high.is_some_and(|m| m.at > b.hi))
    };
    if let Some(b) = outliers::Bounds::of(n, span).filter(beyond) {
        let mut far = 0u64;
        let mut keep = |start: Ns, dur: Ns| {
            let f = b.far(start, dur);
            far += f as u64;
            !f
        };
        cpu.retain(|c| keep(c.start, c.dur));
        gpu.retain(|g| keep(g.start, g.dur));
        // the first block (in file order) with an extreme beyond the bounds holds the first
        // far event; of its far extremes, the one earlier in the file is named
        let first = merger.extremes.iter().find_map(|x| {
            let low = x.low.filter(|m| m.at < b.lo).map(|m| (m, "starting"));
            let high = x.high.filter(|m| m.at > b.hi).map(|m| (m, "ending"));
            match (low, high) {
                (Some(l), Some(h)) => Some(if l.0.offset <= h.0.offset { l } else { h }),
                (l, h) => l.or(h),
            }
        });
        if far > 0 {
            let what = match first {
                Some((m, how)) => format!(
                    "; the first: `{}` {how} at {:.0} µs",
                    crate::text::shorten_middle(merger.names.resolve(m.name), 60),
                    m.at as f64 / 1e3
                ),
                None => String::new(),
            };
            merger
                .warnings
                .add("ts-outlier", first.map(|(m, _)| m.offset), || {
                    format!(
                        "events far outside the trace's span (more than ten times its length or \
                         10 minutes away) were left out{what}, outside {:.0}..{:.0} µs",
                        b.lo as f64 / 1e3,
                        b.hi as f64 / 1e3,
                    )
                });
            if let Some(w) = merger.warnings.map.get_mut("ts-outlier") {
                w.count = far;
            }
        }
    }
    (cpu, gpu)
}

/// Launch flows (TraceLens's linkage) on the finalized trace.
fn link_launches(trace: &mut Trace, parallel: bool) {
    // a device event is linked when its launching call is
    // in the trace and a launch flow both starts and ends at its correlation id, or when it is
    // a kernel replayed by a graph launch (`*GraphLaunch*`: one call, many kernels). A flow
    // that only ends (AMD `gpu_memset`: `f` events without an `s`) does not link.
    let graph_launch: Vec<bool> = trace
        .names
        .iter()
        .map(|(_, n)| n.to_ascii_lowercase().contains("graphlaunch"))
        .collect();
    let cpu = &trace.cpu;
    let link = |gpu: &mut [GpuEvent]| {
        for i in 0..gpu.len() {
            crate::model::prefetch_launch_ahead(gpu, cpu, i);
            let g = &mut gpu[i];
            let launch = (g.launch != NONE).then(|| &cpu[g.launch as usize]);
            let by_flow = launch.is_some() && g.flow_linked;
            let by_graph = g.kind == GpuKind::Kernel
                && launch.is_some_and(|l| graph_launch[l.name.0 as usize]);
            g.flow_linked = g.correlation != 0 && (by_flow || by_graph);
        }
    };
    // a half of the device events on each thread
    let half = trace.gpu.len() / 2;
    let (left, right) = trace.gpu.split_at_mut(half);
    crate::par::join(parallel && half >= 1 << 16, || link(left), || link(right));
}

/// Reads a Kineto trace from a stream or a mapped file ([`Input`]).
pub fn read_from<R: Read + Send>(
    input: Input<'_, R>,
    path: &str,
    compressed_bytes: Option<u64>,
    opts: &Options,
) -> Result<Trace, LoadError> {
    // chain blocks need the file again: to read what follows the events, or the whole file
    // the scanned way when a chain block is not confirmed
    let mapped = match &input {
        Input::Mapped {
            file,
            len,
            progress,
        } => Some((*file, *len, *progress)),
        Input::Stream(_) | Input::Reopenable { .. } => None,
    };
    let reopen = match &input {
        Input::Reopenable { again, .. } => Some(*again),
        Input::Stream(_) | Input::Mapped { .. } => None,
    };
    let threads = opts.threads.max(1);
    let (work_tx, work_rx) = bounded::<Batch>(threads);
    let (pool_tx, pool_rx) = bounded::<Buffers>(2 * threads + 1);
    let (part_tx, part_rx) = bounded::<Partial>(threads + 1);
    let (vecs_tx, vecs_rx) = bounded::<Spare>(2 * threads + 4);

    let mut timings = crate::timings::Timings::nested();
    let mut merger = Merger::new(threads, opts.limits.names);
    let mut array_end: Option<u64> = None;
    let mut chain_failed = false;
    let mut names_over: Option<LoadError> = None;
    let outcome = std::thread::scope(|s| -> Result<ReaderOutcome, LoadError> {
        let reader = s.spawn(move || reader_loop(input, opts, work_tx, pool_rx, path));
        for id in 0..threads {
            let work_rx = work_rx.clone();
            let part_tx = part_tx.clone();
            let pool_tx = pool_tx.clone();
            let vecs_rx = vecs_rx.clone();
            s.spawn(move || {
                let mut worker = Worker::new(id);
                for batch in work_rx.iter() {
                    let spare = vecs_rx.try_recv().unwrap_or_default();
                    let p = worker.parse_batch(&batch, spare);
                    let _ = pool_tx.try_send((batch.buf.into_reusable(), batch.ranges));
                    if part_tx.send(p).is_err() {
                        break;
                    }
                }
            });
        }
        drop(vecs_rx);
        drop(work_rx);
        drop(part_tx);
        drop(pool_tx);
        let mut pending: BTreeMap<u64, Partial> = BTreeMap::new();
        let mut next = 0u64;
        'merge: for p in part_rx.iter() {
            pending.insert(p.seq, p);
            while let Some(p) = pending.remove(&next) {
                next += 1;
                if array_end.is_some() {
                    continue; // what follows the events array is read below
                }
                match p.chain_end {
                    ChainEnd::Failed => {
                        chain_failed = true;
                        break 'merge;
                    }
                    // a stream's chain blocks end before its events do: a wrong cut
                    ChainEnd::ArrayEnd(_) if mapped.is_none() => {
                        chain_failed = true;
                        break 'merge;
                    }
                    ChainEnd::ArrayEnd(at) => array_end = Some(at),
                    ChainEnd::Scanned | ChainEnd::Confirmed => {}
                }
                let vecs = merger.merge(p);
                let _ = vecs_tx.try_send(vecs);
                if let Some(at) = merger.names_over {
                    let limit = opts.limits.names;
                    names_over = Some(LoadError::at(
                        path,
                        at,
                        Limits::exceeded(
                            "names",
                            limit,
                            &format!("this event brings the distinct names over {limit}"),
                        ),
                    ));
                    break 'merge;
                }
            }
        }
        // stops the parsers (their sends fail) and so the reader
        drop(part_rx);
        match reader.join() {
            Ok(r) => r,
            Err(_) => Err(LoadError::at(
                path,
                0,
                "internal error: reader thread panicked".into(),
            )),
        }
    });
    // not confirmed: the whole file again, scanned (a reader error after an unconfirmed
    // chain block may come from a wrong cut)
    let scanned_again = |timings: &mut crate::timings::Timings| {
        timings.lap("kineto chain not confirmed, read again scanned");
        #[cfg(test)]
        tests::CHAIN_RETRIES.with(|c| c.set(c.get() + 1));
        #[cfg(test)]
        if mapped.is_none() {
            tests::STREAM_RETRIES.with(|c| c.set(c.get() + 1));
        }
        let again = Options {
            chain: false,
            ..opts.clone()
        };
        match (mapped, reopen) {
            (Some((file, len, progress)), _) => read_from::<std::io::Empty>(
                Input::Mapped {
                    file,
                    len,
                    progress,
                },
                path,
                compressed_bytes,
                &again,
            ),
            (None, Some(reopen)) => {
                let stream = reopen().map_err(|e| LoadError::io(path, e))?;
                read_from(Input::Stream(stream), path, compressed_bytes, &again)
            }
            (None, None) => Err(LoadError::at(
                path,
                0,
                "internal error: chain blocks from a stream that cannot be read again".into(),
            )),
        }
    };
    if let Some(e) = names_over {
        return Err(e);
    }
    let mut outcome = match outcome {
        Err(_) if chain_failed => return scanned_again(&mut timings),
        r => r?,
    };
    if chain_failed {
        return scanned_again(&mut timings);
    }
    if let (true, Some((file, len, _))) = (outcome.chained, mapped) {
        let tail = match (outcome.chain_in_object, array_end) {
            // the reader went back to scanning and read the rest itself
            (None, _) => Some(Header::default()),
            (Some(in_object), Some(at)) => read_after_events(file, len, at, in_object, path)?,
            (Some(_), None) => None,
        };
        match tail {
            Some(tail) => {
                outcome.header.keys.extend(tail.keys);
                outcome.header.values.extend(tail.values);
            }
            None => return scanned_again(&mut timings),
        }
    }
    if !outcome.saw_events {
        return Err(LoadError::at(path, 0, describe_non_trace(&outcome.header)));
    }
    check_outcome(&outcome, &mut merger, opts, path)?;
    timings.lap("kineto read+parse+merge");
    let (mut devices, distributed, base_time_ns) =
        header_facts(&mut outcome.header, &mut merger, opts.limits.header_bytes);
    // thread names
    let mut threads_v = std::mem::take(&mut merger.threads);
    for (pid, tid, name) in std::mem::take(&mut merger.thread_names) {
        if let Some(&i) = merger.thread_index.get(&(pid, tid)) {
            threads_v[i as usize].name = Some(name);
        }
    }
    // the memory blocks sorted by allocation beside the flow marks (~8 ms each at 1 GB; a
    // thread is not worth starting for a small trace)
    let memory = std::mem::take(&mut merger.memory);
    let big = merger.cpu.len() + merger.gpu.len() >= 1 << 16;
    let ((cpu, gpu), memory) = crate::par::join(
        opts.threads > 1 && big,
        || flow_marks_and_outliers(&mut merger),
        || memory.finish(),
    );
    // a device with no SMs would divide by zero: its SM count is unknown
    for d in devices.iter_mut().filter(|d| d.sm_count == Some(0)) {
        d.sm_count = None;
        merger.warnings.add("zero-sms", None, || {
            "devices with 0 SMs in deviceProperties: their SM count is taken as unknown".into()
        });
    }
    let mut trace = Trace {
        source: Source {
            path: path.to_string(),
            format: SourceFormat::Kineto,
            bytes: outcome.bytes,
            compressed_bytes,
            events: merger.events,
        },
        names: merger.names,
        devices,
        threads: threads_v,
        cpu,
        gpu,
        kernel_infos: merger.kernel_infos.into_vec(),
        distributed,
        base_time_ns,
        warnings: merger.warnings.map.into_values().collect(),
        gpu_metrics: Vec::new(),
        op_shapes: merger.op_shapes,
        op_flops: merger.op_flops,
        kernel_comms: merger.kernel_comms,
        op_comms: merger.op_comms,
        memory,
        clock_corrections: Vec::new(),
        os: Default::default(),
        kernel_classes: Default::default(),
        op_shape_index: Default::default(),
        bounds: Default::default(),
    };
    timings.lap("kineto tables");
    trace.finalize_with(opts.threads > 1);
    timings.lap("kineto finalize");
    link_launches(&mut trace, opts.threads > 1);
    timings.lap("kineto links");
    Ok(trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_in_any_letter_case() {
        // the exact lower-case match and the lower-cased retry agree on every spelling
        let known = [
            ("cpu_op", Class::Cpu(CpuKind::Op)),
            ("cuda_runtime", Class::Cpu(CpuKind::Runtime)),
            ("kernel", Class::Gpu(GpuKind::Kernel)),
            ("gpu_user_annotation", Class::Gpu(GpuKind::Annotation)),
            ("privateuse1_runtime", Class::Cpu(CpuKind::OtherRuntime)),
            ("trace", Class::Skip),
        ];
        for (cat, class) in known {
            let upper = cat.to_ascii_uppercase();
            let mixed: String = cat
                .chars()
                .enumerate()
                .map(|(i, c)| {
                    if i % 2 == 0 {
                        c.to_ascii_uppercase()
                    } else {
                        c
                    }
                })
                .collect();
            for spelling in [cat, upper.as_str(), mixed.as_str()] {
                assert_eq!(classify(spelling), class, "{spelling}");
            }
        }
        let other = Class::Cpu(CpuKind::Other);
        let long = "K".repeat(CATEGORY_MAX + 1);
        for cat in [
            "",
            "kernels",
            "Kernel_",
            "cpu_instant_event",
            "Overhead",
            long.as_str(),
        ] {
            assert_eq!(classify(cat), other, "{cat}");
        }
        for (cat, launch) in [
            ("ac2g", true),
            ("AC2G", true),
            ("Async_Cpu_To_Gpu", true),
            ("async", true),
            ("ac2", false),
            ("fwdbwd", false),
            ("ASYNC_GPUS", false),
        ] {
            assert_eq!(is_launch_flow(cat), launch, "{cat}");
        }
    }

    thread_local! {
        /// How many loads on this thread read the file again because a chain block was not
        /// confirmed.
        pub(super) static CHAIN_RETRIES: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
        /// How many of those read a stream again (opened anew).
        pub(super) static STREAM_RETRIES: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    }

    #[test]
    fn chain_cuts_fall_between_objects_across_a_newline() {
        let doc = b"[{\"a\": 1},\n  {\"b\": [{\"c\": 2}, {\"d\": 3}]},\n  {\"e\": 4}";
        let cut = chain_cut(doc).unwrap();
        assert_eq!(&doc[cut - 1..cut + 1], b"},");
        assert!(doc[cut..].starts_with(b",\n  {\"e\""));
        // the comma between the nested objects has no newline beside it
        assert_eq!(chain_cut(&doc[..cut]), Some(9));
        // no newline, or no object after it: no cut
        assert_eq!(chain_cut(b"[{\"a\": 1}, {\"b\": 2}, {\"c\": 3}"), None);
        assert_eq!(chain_cut(b"{\"a\": 1},\n 7,\n \"x\""), None);
        assert_eq!(chain_cut(b""), None);
        // a comma after something other than an object
        assert_eq!(chain_cut(b"[1,\n{\"a\": 1}"), None);
    }

    /// The model facts, names resolved (or the error).
    fn digest(r: Result<Trace, LoadError>) -> String {
        let t = match r {
            Ok(t) => t,
            Err(e) => return format!("error {e}"),
        };
        let mut out = format!(
            "{:?} {:?} {:?} {} {}\n",
            t.source.events,
            t.source.bytes,
            t.base_time_ns,
            t.devices.len(),
            t.threads.len()
        );
        for w in &t.warnings {
            out += &format!("{w:?}\n");
        }
        for th in &t.threads {
            out += &format!("{th:?}\n");
        }
        for e in &t.cpu {
            let n = t.name(e.name);
            out += &format!(
                "c {} {} {n} {} {} {}\n",
                e.start, e.dur, e.thread, e.external_id, e.correlation
            );
        }
        for g in &t.gpu {
            let n = t.name(g.name);
            out += &format!(
                "g {} {} {n} {} {} {}\n",
                g.start, g.dur, g.correlation, g.launch, g.flow_linked
            );
        }
        out
    }

    /// Loads `doc` from a mapped file with small blocks, chained and scanned, and from a
    /// reopenable stream, chained; all must agree. Returns the digest and how many chained
    /// loads were read again.
    fn both_ways(doc: &[u8], tag: &str) -> (String, u32) {
        both_ways_with(doc, tag, &[(1, 1024), (2, 1024), (2, 4096), (3, 700)])
    }

    /// [`both_ways`] with these (threads, block size) for the chained loads.
    fn both_ways_with(doc: &[u8], tag: &str, runs: &[(usize, usize)]) -> (String, u32) {
        let dir = std::env::temp_dir().join(format!("stallscope-chain-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{tag}.json"));
        std::fs::write(&path, doc).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let len = doc.len() as u64;
        let load = |chain: bool, threads: usize, block_size: usize| {
            let opts = Options {
                threads,
                block_size,
                allow_truncated: false,
                chain,
                limits: Limits::default(),
            };
            let input: Input<'_, std::io::Empty> = Input::Mapped {
                file: &file,
                len,
                progress: None,
            };
            digest(read_from(input, "t.json", None, &opts))
        };
        let again = || -> std::io::Result<Box<dyn Read + Send>> {
            Ok(Box::new(std::io::Cursor::new(doc.to_vec())))
        };
        let stream = |threads: usize, block_size: usize| {
            let opts = Options {
                threads,
                block_size,
                allow_truncated: false,
                chain: true,
                limits: Limits::default(),
            };
            let input = Input::Reopenable {
                stream: std::io::Cursor::new(doc),
                again: &again,
            };
            digest(read_from(input, "t.json", None, &opts))
        };
        let scanned = load(false, 1, 1 << 20);
        let before = CHAIN_RETRIES.with(|c| c.get());
        for &(threads, block) in runs {
            assert_eq!(
                load(true, threads, block),
                scanned,
                "{tag} {threads} threads, {block} B"
            );
            assert_eq!(
                stream(threads, block),
                scanned,
                "{tag} stream, {threads} threads, {block} B"
            );
        }
        let retries = CHAIN_RETRIES.with(|c| c.get()) - before;
        std::fs::remove_file(&path).ok();
        (scanned, retries)
    }

    fn event(i: u32, args: &str) -> String {
        format!(
            "  {{\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op_{}\", \"pid\": 1, \
             \"tid\": {},\n    \"ts\": {}, \"dur\": 3,\n    \"args\": {{\n      \"External id\": {}{args}\n    }}\n  }}",
            i % 13,
            1 + i % 2,
            1000 + 5 * i,
            i + 1
        )
    }

    fn trace(n: u32, args: impl Fn(u32) -> String, tail: &str) -> Vec<u8> {
        let events: Vec<String> = (0..n).map(|i| event(i, &args(i))).collect();
        format!(
            "{{\n  \"schemaVersion\": 1,\n  \"traceEvents\": [\n{}\n]{tail}",
            events.join(",\n")
        )
        .into_bytes()
    }

    /// `ts-outlier` names the first far event and its byte offset, whatever the blocks and
    /// threads: event 900 ends years after the rest, event 1200 starts 1000 s before them.
    #[test]
    fn ts_outlier_has_the_first_far_events_offset() {
        let mut doc = String::from_utf8(trace(1500, |_| String::new(), "}")).unwrap();
        let far_end = format!("\"ts\": {}, \"dur\": 3,", 1000 + 5 * 900);
        let far_start = format!("\"ts\": {}, \"dur\": 3,", 1000 + 5 * 1200);
        doc = doc.replacen(&far_end, &far_end.replace("\"dur\": 3", "\"dur\": 1e12"), 1);
        doc = doc.replacen(&far_start, "\"ts\": -1000000000, \"dur\": 3,", 1);
        let marker = doc.find("\"External id\": 901\n").unwrap();
        let at = doc[..marker].rfind("{\n    \"ph\"").unwrap() as u64;
        let (digest, _) = both_ways_with(doc.as_bytes(), "ts-outlier", &[(1, 700), (2, 1024)]);
        let line = digest
            .lines()
            .find(|l| l.contains("ts-outlier"))
            .unwrap_or_else(|| panic!("no ts-outlier warning:\n{digest}"));
        assert!(line.contains("count: 2"), "{line}");
        assert!(
            line.contains(&format!("first_offset: Some({at})")),
            "{at}: {line}"
        );
        assert!(line.contains("`op_3` ending at"), "{line}");
    }

    #[test]
    fn chained_blocks_give_the_scanned_model() {
        // clean pretty-printed trace with members after the events: every cut confirmed
        let doc = trace(
            400,
            |_| String::new(),
            ",\n  \"traceName\": \"t\",\n  \"baseTimeNanoseconds\": 7\n}\n",
        );
        let (d, retries) = both_ways(&doc, "clean");
        assert!(
            d.contains("Some(7)") && d.matches("\nc ").count() == 400,
            "{d}"
        );
        assert_eq!(retries, 0);
        // objects across lines after the events (devices listed last): a cut may fall among
        // them, past the events' end
        let devices = ",\n  \"deviceProperties\": [\n    {\"id\": 0, \"name\": \"A\"},\n    \
                       {\"id\": 1, \"name\": \"B\"}\n  ]\n}\n";
        let doc = trace(400, |_| String::new(), devices);
        let (d, _) = both_ways(&doc, "devices-last");
        assert!(d.starts_with("400 ") && d.contains(" 2 "), "{d}");
        // a value the fast path leaves to serde (a float id) and a repaired one (NaN) inside
        let doc = trace(
            300,
            |i| match i % 50 {
                7 => ", \"Sequence number\": 1.5e3".into(),
                9 => ", \"v\": NaN".into(),
                _ => String::new(),
            },
            "\n}",
        );
        let (d, _) = both_ways(&doc, "slow-values");
        assert!(d.contains("bare-tokens"), "{d}");
        // a bare top-level array of events (no object around it), Windows line ends
        let events: Vec<String> = (0..300).map(|i| event(i, "")).collect();
        let doc = format!("[\r\n{}\r\n]\r\n", events.join(",\r\n")).into_bytes();
        let (d, retries) = both_ways(&doc, "bare-array");
        assert_eq!((d.matches("\nc ").count(), retries), (300, 0), "{d}");
    }

    /// Log lines written into the event array (kineto #1453, #1460) and events written with
    /// `ts 0, dur 0` (pytorch #188481) read the same in chained blocks and scanned: the lines
    /// skipped and counted with the first one's offset, the events left out and counted.
    #[test]
    fn log_lines_and_zero_timestamps_both_ways() {
        let mut doc = String::from_utf8(trace(400, |_| String::new(), "\n}")).unwrap();
        let line = "WARNING:2026-05-01 kineto.cpp:12] cudaEvent \"event_id\": 64 {\n";
        let at = doc.match_indices(",\n").nth(150).unwrap().0 + 2;
        doc.insert_str(at, line);
        let at2 = doc.match_indices(",\n").nth(300).unwrap().0 + 2;
        doc.insert_str(at2, "LOG: done\n");
        // the last 50 events with ts 0, dur 0
        for i in 350..400 {
            let real = format!("\"ts\": {}, \"dur\": 3,", 1000 + 5 * i);
            doc = doc.replacen(&real, "\"ts\": 0, \"dur\": 0,", 1);
        }
        let (d, _) = both_ways(doc.as_bytes(), "log-lines");
        assert_eq!(d.matches("\nc ").count(), 350, "{d}");
        assert!(
            d.contains(&format!(
                "code: \"non-object-event\", count: 2, first_offset: Some({at})"
            )),
            "{d}"
        );
        assert!(
            d.contains("code: \"zero-timestamp\", count: 50, first_offset: Some("),
            "{d}"
        );
    }

    #[test]
    fn unconfirmed_chains_are_read_again_the_scanned_way() {
        // arrays of objects across lines inside events: some cuts fall inside them
        let nested = |i: u32| {
            if i.is_multiple_of(3) {
                ",\n      \"v\": [\n        {\"x\": 1},\n        {\"y\": 2}\n      ]".to_string()
            } else {
                String::new()
            }
        };
        // (blocks of many sizes: with events of regular sizes, one size cuts alike each time)
        let runs: Vec<(usize, usize)> = (0..40).map(|k| (1 + k % 2, 1000 + 37 * k)).collect();
        let streams = STREAM_RETRIES.with(|c| c.get());
        let (d, retries) = both_ways_with(&trace(400, nested, "\n}"), "nested", &runs);
        assert_eq!(d.matches("\nc ").count(), 400, "{d}");
        assert!(retries > 0);
        // a stream opened anew for some of them
        assert!(STREAM_RETRIES.with(|c| c.get()) > streams);
        // cut short inside an event, a value that is not an event, garbage after the array,
        // invalid UTF-8 and raw control characters in a late event, no newlines at all
        let clean = trace(200, |_| String::new(), "\n}");
        let mut cut = clean.clone();
        cut.truncate(clean.len() * 3 / 4);
        let (d, _) = both_ways(&cut, "truncated");
        assert!(d.starts_with("error") && d.contains("truncated"), "{d}");
        let number = String::from_utf8(clean.clone()).unwrap().replacen(
            "  },\n  {",
            "  },\n  17,\n  {",
            150,
        );
        let (d, _) = both_ways(number.as_bytes(), "non-object");
        assert!(d.contains("non-object-event"), "{d}");
        let mut garbage = clean[..clean.len() - 2].to_vec();
        garbage.extend_from_slice(b"\n}\n]]] trailing");
        both_ways(&garbage, "garbage");
        let mut bad = clean.clone();
        let at = bad.len() - 400;
        let q = at + bad[at..].iter().position(|&c| c == b'_').unwrap();
        bad[q] = 0xff;
        bad[q + 1] = 0x01;
        let (d, _) = both_ways(&bad, "bad-bytes");
        assert!(d.contains("invalid-utf8") || d.contains("control"), "{d}");
        let compact: Vec<u8> = clean.iter().copied().filter(|&c| c != b'\n').collect();
        // no place to cut: the reader goes back to scanning where the chain blocks end
        let (_, retries) = both_ways(&compact, "compact");
        assert_eq!(retries, 0);
        let mut late = clean[..clean.len() / 2].to_vec();
        late.extend(clean[clean.len() / 2..].iter().filter(|&&c| c != b'\n'));
        let (d, retries) = both_ways(&late, "compact-late");
        assert_eq!((d.matches("\nc ").count(), retries), (200, 0), "{d}");
    }
}
