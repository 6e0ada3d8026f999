//! Reader for torch.profiler / Kineto Chrome-trace JSON.
//!
//! Pipeline (bounded memory, all cores):
//! 1. a reader thread pulls fixed-size blocks from the (possibly gzip) stream and runs the
//!    [`scan::Scanner`] to cut each block at the last complete event; the incomplete tail is
//!    carried into the next block;
//! 2. worker threads parse the events of a block with serde (borrowed strings, skipped args,
//!    repaired through [`lenient`] when strict parsing fails) into compact records with
//!    block-local interned names ([`Partial`]);
//! 3. the calling thread merges partials in block order, so the result is identical whatever
//!    the number of threads.
//!
//! At most `threads + 2` blocks are alive at once, so peak memory is a few blocks plus the
//! compact model, never the file.

pub mod event;
pub mod lenient;
pub mod scan;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;

use crossbeam_channel::{bounded, Receiver, Sender};

use crate::ingest::LoadError;
use crate::model::{
    CpuEvent, CpuKind, Device, Distributed, GpuEvent, GpuKind, Interner, NameId, Source,
    SourceFormat, Thread, Trace, Vendor, Warning, NONE,
};
use event::{id_value, micros_to_ns, IdValue, RawEvent};
use scan::{Item, Scanner, Step};

/// Reader settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Parser threads (at least 1).
    pub threads: usize,
    /// Block size in bytes.
    pub block_size: usize,
    /// Keep what was read from a truncated file (with a warning) instead of failing.
    pub allow_truncated: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            block_size: 8 << 20,
            allow_truncated: false,
        }
    }
}

struct Batch {
    seq: u64,
    base: u64,
    buf: Vec<u8>,
    ranges: Vec<(u32, u32, bool)>,
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

/// What one block produced, with block-local name and thread ids.
#[derive(Default)]
struct Partial {
    seq: u64,
    names: Interner,
    threads: Vec<(i64, i64)>,
    thread_index: HashMap<(i64, i64), u32>,
    cpu: Vec<CpuEvent>,
    gpu: Vec<GpuEvent>,
    flow_starts: Vec<u64>,
    flow_ends: Vec<u64>,
    thread_names: Vec<(i64, i64, String)>,
    mem_peaks: Vec<(i64, u64)>,
    warnings: Warnings,
    events: u64,
    hip: bool,
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

enum Class {
    Cpu(CpuKind),
    Gpu(GpuKind),
    Skip,
}

fn classify(cat: &str) -> Class {
    let eq = |s: &str| cat.eq_ignore_ascii_case(s);
    if eq("cpu_op") || eq("operator") {
        Class::Cpu(CpuKind::Op)
    } else if eq("cuda_runtime") || eq("runtime") {
        Class::Cpu(CpuKind::Runtime)
    } else if eq("kernel") {
        Class::Gpu(GpuKind::Kernel)
    } else if eq("python_function") {
        Class::Cpu(CpuKind::PythonFunction)
    } else if eq("user_annotation") {
        Class::Cpu(CpuKind::UserAnnotation)
    } else if eq("gpu_memcpy") || eq("memcpy") {
        Class::Gpu(GpuKind::Memcpy)
    } else if eq("gpu_memset") || eq("memset") {
        Class::Gpu(GpuKind::Memset)
    } else if eq("cuda_driver") {
        Class::Cpu(CpuKind::Driver)
    } else if eq("gpu_user_annotation") {
        Class::Gpu(GpuKind::Annotation)
    } else if eq("cuda_sync") {
        Class::Gpu(GpuKind::Sync)
    } else if eq("python") {
        Class::Cpu(CpuKind::Python)
    } else if eq("mtia_runtime")
        || eq("xpu_runtime")
        || eq("xpu_driver")
        || eq("privateuse1_runtime")
        || eq("privateuse1_driver")
        || eq("glow_runtime")
    {
        Class::Cpu(CpuKind::OtherRuntime)
    } else if eq("mtia_ccp_events") {
        Class::Gpu(GpuKind::Kernel)
    } else if eq("trace") {
        Class::Skip
    } else {
        Class::Cpu(CpuKind::Other)
    }
}

fn is_launch_flow(cat: &str) -> bool {
    cat.eq_ignore_ascii_case("ac2g")
        || cat.eq_ignore_ascii_case("async_cpu_to_gpu")
        || cat.eq_ignore_ascii_case("async_gpu")
        || cat.eq_ignore_ascii_case("async")
}

impl Partial {
    fn thread(&mut self, pid: i64, tid: i64) -> u32 {
        if let Some(&i) = self.thread_index.get(&(pid, tid)) {
            return i;
        }
        let i = self.threads.len() as u32;
        self.threads.push((pid, tid));
        self.thread_index.insert((pid, tid), i);
        i
    }

    fn add(&mut self, e: RawEvent<'_>, offset: u64) {
        self.events += 1;
        let ph = e.ph.0.as_deref().unwrap_or("");
        let cat = e.cat.0.as_deref().unwrap_or("");
        match ph {
            "X" => {}
            "i" | "I" => {
                if e.name.0.as_deref() == Some("[memory]") {
                    let a = &e.args;
                    if a.device_type.int() == Some(1) {
                        if let (Some(dev), Some(total)) = (a.device_id.int(), a.total_allocated.int())
                        {
                            let total = total.max(0) as u64;
                            match self.mem_peaks.iter_mut().find(|(d, _)| *d == dev) {
                                Some((_, p)) => *p = (*p).max(total),
                                None => self.mem_peaks.push((dev, total)),
                            }
                        }
                    }
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
                            self.flow_starts.push(id);
                        } else {
                            self.flow_ends.push(id);
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
                        self.thread_names.push((pid, tid, n.trim().to_string()));
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
        let Some(start) = e.ts.and_then(|t| micros_to_ns(t.get())) else {
            self.warnings.add("missing-ts", Some(offset), || {
                "an X event has no usable `ts`; it was skipped".to_string()
            });
            return;
        };
        let dur = match e.dur.map(|d| micros_to_ns(d.get())) {
            Some(Some(d)) if d >= 0 => d,
            Some(Some(_)) => {
                self.warnings.add("negative-dur", Some(offset), || {
                    "an event has a negative `dur`; it was treated as 0".to_string()
                });
                0
            }
            _ => 0,
        };
        let name_str = e.name.0.as_deref().unwrap_or("");
        let name = self.names.intern(name_str);
        let a = &e.args;
        match class {
            Class::Cpu(kind) => {
                if kind == CpuKind::Runtime && name_str.starts_with("hip") {
                    self.hip = true;
                }
                let pid = id_key(id_value(e.pid));
                let tid = id_key(id_value(e.tid));
                let thread = self.thread(pid, tid);
                self.cpu.push(CpuEvent {
                    start,
                    dur,
                    name,
                    thread,
                    kind,
                    is_module: kind == CpuKind::PythonFunction && a.python_module_id != event::Num::None,
                    external_id: a.external_id.id(),
                    correlation: a.correlation.id(),
                    owner_op: NONE,
                });
            }
            Class::Gpu(kind) => {
                let device = a
                    .device
                    .int()
                    .unwrap_or_else(|| id_key(id_value(e.pid)).max(0))
                    .clamp(i32::MIN as i64, i32::MAX as i64) as i32;
                let stream = a.stream.int().unwrap_or_else(|| id_key(id_value(e.tid)));
                let f32or = |n: event::Num| n.float().map(|v| v as f32).unwrap_or(f32::NAN);
                self.gpu.push(GpuEvent {
                    start,
                    dur,
                    name,
                    kind,
                    device,
                    stream,
                    correlation: a.correlation.id(),
                    external_id: a.external_id.id(),
                    blocks_per_sm: f32or(a.blocks_per_sm),
                    warps_per_sm: f32or(a.warps_per_sm),
                    occupancy_pct: f32or(a.occupancy),
                    registers: a.registers.int().unwrap_or(0).clamp(0, u16::MAX as i64) as u16,
                    grid: a.grid.0,
                    block: a.block.0,
                    shared_mem: a.shared_memory.int().unwrap_or(0).clamp(0, u32::MAX as i64)
                        as u32,
                    bytes: a.bytes.int().unwrap_or(0).max(0) as u64,
                    in_graph: a.graph_id.id() != 0,
                    flow_linked: false,
                    launch: NONE,
                });
            }
            Class::Skip => {}
        }
    }
}

fn parse_batch(batch: &Batch) -> Partial {
    let mut p = Partial {
        seq: batch.seq,
        names: Interner::new(),
        ..Partial::default()
    };
    for &(s, e, repair_hint) in &batch.ranges {
        let slice = &batch.buf[s as usize..e as usize];
        let offset = batch.base + s as u64;
        if !repair_hint {
            if let Ok(ev) = serde_json::from_slice::<RawEvent>(slice) {
                p.add(ev, offset);
                continue;
            }
        }
        let (fixed, fixes) = lenient::repair(slice);
        match serde_json::from_slice::<RawEvent>(&fixed) {
            Ok(ev) => {
                if fixes.invalid_utf8 {
                    p.warnings.add("invalid-utf8", Some(offset), || {
                        "invalid UTF-8 in a string was replaced by U+FFFD".into()
                    });
                }
                if fixes.control_chars {
                    p.warnings.add("control-chars", Some(offset), || {
                        "raw control characters inside a string were escaped".into()
                    });
                }
                if fixes.quotes {
                    p.warnings.add("unescaped-quotes", Some(offset), || {
                        "unescaped quotes inside a string were escaped".into()
                    });
                }
                if fixes.bare_tokens {
                    p.warnings.add("bare-tokens", Some(offset), || {
                        "non-JSON tokens (such as N/A or NaN) were read as null".into()
                    });
                }
                p.add(ev, offset);
            }
            Err(err) => {
                let msg = err.to_string();
                p.warnings.add("skipped-event", Some(offset), move || {
                    format!("an event that is not valid JSON was skipped ({msg})")
                });
            }
        }
    }
    p
}

/// Top-level members other than `traceEvents`, as raw JSON.
#[derive(Default)]
struct Header {
    keys: Vec<String>,
    values: Vec<(String, Vec<u8>)>,
}

struct ReaderOutcome {
    header: Header,
    bytes: u64,
    saw_events: bool,
    truncated_at: Option<u64>,
}

#[allow(clippy::too_many_arguments)]
fn reader_loop<R: Read>(
    mut input: R,
    opts: &Options,
    work: Sender<Batch>,
    pool: Receiver<Vec<u8>>,
    path: &str,
) -> Result<ReaderOutcome, LoadError> {
    let mut scanner = Scanner::new();
    let mut header = Header::default();
    let mut base: u64 = 0; // absolute offset of buf[0]
    let mut tail: Vec<u8> = Vec::new();
    let mut seq = 0u64;
    let mut eof = false;
    let mut target = opts.block_size.max(1024);
    loop {
        let mut buf = pool.try_recv().unwrap_or_default();
        buf.clear();
        buf.reserve(target + tail.len());
        buf.extend_from_slice(&tail);
        tail.clear();
        while !eof && buf.len() < target {
            let want = (target - buf.len()) as u64;
            let n = (&mut input)
                .take(want)
                .read_to_end(&mut buf)
                .map_err(|e| LoadError::io(path, e))?;
            if n == 0 {
                eof = true;
            }
        }
        let mut pos = 0usize;
        let mut ranges: Vec<(u32, u32, bool)> = Vec::new();
        let mut progressed = false;
        let mut done = false;
        loop {
            match scanner.next(&buf, pos, eof) {
                Ok(Step::Item(Item::Event { start, end, repair }, next)) => {
                    ranges.push((start as u32, end as u32, repair));
                    pos = next;
                    progressed = true;
                }
                Ok(Step::Item(Item::TopValue { key, start, end }, next)) => {
                    header.keys.push(key.clone());
                    header.values.push((key, buf[start..end].to_vec()));
                    pos = next;
                    progressed = true;
                }
                Ok(Step::NeedMore(p)) => {
                    pos = p;
                    break;
                }
                Ok(Step::Done(p)) => {
                    pos = p;
                    done = true;
                    break;
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
        if !done && !eof && !progressed {
            // one item is larger than the block: read more into a bigger block
            target = target.saturating_mul(2);
            tail = buf[pos..].to_vec();
            continue;
        }
        if !done {
            tail.extend_from_slice(&buf[pos..]);
        }
        let consumed = if done { buf.len() } else { pos };
        let batch = Batch {
            seq,
            base,
            buf,
            ranges,
        };
        seq += 1;
        base += consumed as u64;
        if work.send(batch).is_err() {
            break;
        }
        target = opts.block_size.max(1024);
        if done {
            // drain the rest of the input (trailing whitespace/garbage is ignored)
            let mut sink = [0u8; 1 << 16];
            loop {
                match input.read(&mut sink) {
                    Ok(0) => break,
                    Ok(n) => base += n as u64,
                    Err(e) => return Err(LoadError::io(path, e)),
                }
            }
            return Ok(ReaderOutcome {
                header,
                bytes: base,
                saw_events: scanner.saw_events,
                truncated_at: None,
            });
        }
        if eof {
            let trailing = tail.iter().all(|c| c.is_ascii_whitespace());
            let at = base;
            let bytes = base + tail.len() as u64;
            if !scanner.saw_events && header.keys.is_empty() && trailing {
                return Err(LoadError::at(path, at, "empty file: no JSON document".into()));
            }
            return Ok(ReaderOutcome {
                header,
                bytes,
                saw_events: scanner.saw_events,
                truncated_at: Some(at),
            });
        }
    }
    Ok(ReaderOutcome {
        header,
        bytes: base,
        saw_events: scanner.saw_events,
        truncated_at: None,
    })
}

struct Merger {
    names: Interner,
    threads: Vec<Thread>,
    thread_index: HashMap<(i64, i64), u32>,
    cpu: Vec<CpuEvent>,
    gpu: Vec<GpuEvent>,
    flow_starts: HashSet<u64>,
    flow_ends: HashSet<u64>,
    thread_names: Vec<(i64, i64, String)>,
    mem_peaks: BTreeMap<i64, u64>,
    warnings: Warnings,
    events: u64,
    hip: bool,
}

impl Merger {
    fn new() -> Self {
        Merger {
            names: Interner::new(),
            threads: Vec::new(),
            thread_index: HashMap::new(),
            cpu: Vec::new(),
            gpu: Vec::new(),
            flow_starts: HashSet::new(),
            flow_ends: HashSet::new(),
            thread_names: Vec::new(),
            mem_peaks: BTreeMap::new(),
            warnings: Warnings::default(),
            events: 0,
            hip: false,
        }
    }

    fn merge(&mut self, p: Partial) {
        let name_map: Vec<NameId> = p.names.iter().map(|(_, s)| self.names.intern(s)).collect();
        let thread_map: Vec<u32> = p
            .threads
            .iter()
            .map(|&(pid, tid)| {
                *self.thread_index.entry((pid, tid)).or_insert_with(|| {
                    self.threads.push(Thread {
                        pid,
                        tid,
                        name: None,
                    });
                    (self.threads.len() - 1) as u32
                })
            })
            .collect();
        self.cpu.reserve(p.cpu.len());
        for mut e in p.cpu {
            e.name = name_map[e.name.0 as usize];
            e.thread = thread_map[e.thread as usize];
            self.cpu.push(e);
        }
        self.gpu.reserve(p.gpu.len());
        for mut e in p.gpu {
            e.name = name_map[e.name.0 as usize];
            self.gpu.push(e);
        }
        self.flow_starts.extend(p.flow_starts);
        self.flow_ends.extend(p.flow_ends);
        self.thread_names.extend(p.thread_names);
        for (d, v) in p.mem_peaks {
            let e = self.mem_peaks.entry(d).or_insert(0);
            *e = (*e).max(v);
        }
        self.warnings.merge(p.warnings);
        self.events += p.events;
        self.hip |= p.hip;
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
            let id = d
                .get("id")
                .and_then(|v| v.as_i64())
                .unwrap_or(i as i64);
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
    if n.contains("amd") || n.contains("instinct") || n.contains("radeon") || n.starts_with("mi")
    {
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
    let threads = opts.threads.max(1);
    let (work_tx, work_rx) = bounded::<Batch>(threads);
    let (pool_tx, pool_rx) = bounded::<Vec<u8>>(threads + 2);
    let (part_tx, part_rx) = bounded::<Partial>(threads + 1);

    let mut merger = Merger::new();
    let outcome = std::thread::scope(|s| -> Result<ReaderOutcome, LoadError> {
        let reader = s.spawn(move || reader_loop(input, opts, work_tx, pool_rx, path));
        for _ in 0..threads {
            let work_rx = work_rx.clone();
            let part_tx = part_tx.clone();
            let pool_tx = pool_tx.clone();
            s.spawn(move || {
                for batch in work_rx.iter() {
                    let p = parse_batch(&batch);
                    let _ = pool_tx.try_send(batch.buf);
                    if part_tx.send(p).is_err() {
                        break;
                    }
                }
            });
        }
        drop(work_rx);
        drop(part_tx);
        drop(pool_tx);
        let mut pending: BTreeMap<u64, Partial> = BTreeMap::new();
        let mut next = 0u64;
        for p in part_rx.iter() {
            pending.insert(p.seq, p);
            while let Some(p) = pending.remove(&next) {
                merger.merge(p);
                next += 1;
            }
        }
        match reader.join() {
            Ok(r) => r,
            Err(_) => Err(LoadError::at(path, 0, "internal error: reader thread panicked".into())),
        }
    })?;

    if !outcome.saw_events {
        return Err(LoadError::at(path, 0, describe_non_trace(&outcome.header)));
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

    let mut devices = devices_from_header(&outcome.header);
    for d in devices.iter_mut() {
        if merger.hip && d.vendor == Vendor::Other {
            d.vendor = Vendor::Amd;
        }
        d.peak_allocated = merger.mem_peaks.get(&d.id).copied();
    }
    let mut distributed = None;
    let mut base_time_ns = None;
    for (key, raw) in &outcome.header.values {
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
                base_time_ns = std::str::from_utf8(raw).ok().and_then(|s| s.trim().parse().ok())
            }
            _ => {}
        }
    }

    // thread names
    let mut threads_v = merger.threads;
    for (pid, tid, name) in merger.thread_names {
        if let Some(&i) = merger.thread_index.get(&(pid, tid)) {
            threads_v[i as usize].name = Some(name);
        }
    }
    let gpu = merger.gpu;
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
        cpu: merger.cpu,
        gpu,
        distributed,
        base_time_ns,
        warnings: merger.warnings.map.into_values().collect(),
        gpu_metrics: Vec::new(),
    };
    trace.finalize();
    // Launch flows (TraceLens's linkage): a device event is linked when its launching call is
    // in the trace and a launch flow both starts and ends at its correlation id, or when it is
    // a kernel replayed by a graph launch (`*GraphLaunch*`: one call, many kernels). A flow
    // that only ends (AMD `gpu_memset`: `f` events without an `s`) does not link.
    let (cpu, names) = (&trace.cpu, &trace.names);
    for g in trace.gpu.iter_mut() {
        let launch = (g.launch != NONE).then(|| &cpu[g.launch as usize]);
        let by_flow = launch.is_some()
            && merger.flow_starts.contains(&g.correlation)
            && merger.flow_ends.contains(&g.correlation);
        let by_graph = g.kind == GpuKind::Kernel
            && launch.is_some_and(|l| {
                names.resolve(l.name).to_ascii_lowercase().contains("graphlaunch")
            });
        g.flow_linked = g.correlation != 0 && (by_flow || by_graph);
    }
    Ok(trace)
}
