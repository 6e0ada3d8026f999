//! Scales a real Kineto trace to a target size, for benchmarks that run on real workloads.
//!
//! ```text
//! cargo run --release --example scale_trace -- IN OUT --size 1G [--gzip] [--verify]
//! ```
//!
//! The input (plain or gzip JSON) is streamed twice, never held whole:
//! 1. a first pass finds the step window (from the first `ProfilerStep#N` start to the end of
//!    the last timed event after it) and the largest correlation / flow / External id /
//!    Sequence number / Python id, so that shifted copies never collide;
//! 2. the output gets the top-level metadata (`deviceProperties`, `distributedInfo`, ...)
//!    once, every event of the input once (copy 0), then copies 1, 2, ... of the events of the
//!    step window with `ts` shifted by one window length per copy and ids shifted past the
//!    largest id of the input, until the uncompressed output reaches `--size`. Steps are
//!    renumbered (`ProfilerStep#2..#6` becomes `#7..#11` in copy 1, ...). Metadata (`M`),
//!    `Trace` spans and global instants are written only once. Each event keeps its original
//!    bytes (formatting, args) except for the rewritten numbers.
//!
//! Next to OUT it writes `OUT.meta.json` with the expected counts (events, copies, kernels,
//! ...), which the benchmark checks after loading. `--verify` loads the output with stallscope
//! and checks those counts right away.
//!
//! Sizes take K/M/G suffixes (powers of 1000): `--size 100M`, `--size 1G`.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Read, Write};
use std::process::ExitCode;

use stallscope::ingest::kineto::scan::{Item, Scanner, Step};

fn usage() -> ! {
    eprintln!(
        "usage: scale_trace IN OUT --size SIZE[K|M|G] [--gzip] [--verify]\n\
         writes a trace of about SIZE uncompressed bytes made of copies of IN's steps"
    );
    std::process::exit(2)
}

fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mul) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1_000u64),
        'm' | 'M' => (&s[..s.len() - 1], 1_000_000),
        'g' | 'G' => (&s[..s.len() - 1], 1_000_000_000),
        _ => (s, 1),
    };
    let v: f64 = num.parse().ok()?;
    Some((v * mul as f64) as u64)
}

fn open(path: &str) -> io::Result<Box<dyn Read>> {
    let mut f = File::open(path)?;
    let mut magic = [0u8; 2];
    let n = f.read(&mut magic)?;
    let f = File::open(path)?;
    if n == 2 && magic == [0x1f, 0x8b] {
        Ok(Box::new(flate2::read::MultiGzDecoder::new(
            io::BufReader::with_capacity(1 << 20, f),
        )))
    } else {
        Ok(Box::new(f))
    }
}

/// One item of the input, with its bytes.
enum Piece<'a> {
    /// A top-level member other than `traceEvents`; `before_events` says on which side of
    /// `traceEvents` it was.
    Top {
        key: &'a str,
        raw: &'a [u8],
        before_events: bool,
    },
    Event(&'a [u8]),
}

/// Streams the items of a JSON trace through `f`, in blocks (bounded memory).
fn for_each_piece(path: &str, mut f: impl FnMut(Piece<'_>) -> io::Result<()>) -> io::Result<()> {
    let mut input = open(path)?;
    let mut scanner = Scanner::new();
    let mut buf: Vec<u8> = Vec::with_capacity(8 << 20);
    let mut pos = 0usize;
    let mut eof = false;
    let mut chunk = vec![0u8; 4 << 20];
    loop {
        match scanner.next(&buf, pos, eof) {
            Ok(Step::Item(Item::Event { start, end, .. }, next)) => {
                f(Piece::Event(&buf[start..end]))?;
                pos = next;
            }
            Ok(Step::Item(Item::TopValue { key, start, end }, next)) => {
                let before_events = !scanner.saw_events;
                f(Piece::Top {
                    key: &key,
                    raw: &buf[start..end],
                    before_events,
                })?;
                pos = next;
            }
            Ok(Step::NeedMore(p)) => {
                if eof {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("{path}: truncated JSON at byte {p}"),
                    ));
                }
                buf.drain(..p);
                pos = 0;
                let n = input.read(&mut chunk)?;
                if n == 0 {
                    eof = true;
                } else {
                    buf.extend_from_slice(&chunk[..n]);
                }
            }
            Ok(Step::Done(_)) => return Ok(()),
            Err(e) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{path}: {} near byte {}", e.message, e.offset),
                ))
            }
        }
    }
}

/// Walks the members of one event object. For every member whose value is a number or a
/// string, calls `f(depth, key, value)` (depth 1 = the event itself, 2 = `args`, ...; a
/// string value includes its quotes). When `f` returns bytes they replace the value in `out`;
/// everything else is copied unchanged.
fn walk(ev: &[u8], out: &mut Vec<u8>, mut f: impl FnMut(u32, &[u8], &[u8]) -> Option<Vec<u8>>) {
    let n = ev.len();
    let mut i = 0;
    let mut depth = 0u32;
    let string_end = |mut j: usize| -> usize {
        j += 1;
        while j < n {
            match ev[j] {
                b'\\' => j += 2,
                b'"' => return j + 1,
                _ => j += 1,
            }
        }
        n
    };
    let skip_ws = |mut j: usize| -> usize {
        while j < n && ev[j].is_ascii_whitespace() {
            j += 1;
        }
        j
    };
    while i < n {
        let c = ev[i];
        match c {
            b'"' => {
                let end = string_end(i);
                let colon = skip_ws(end);
                if colon < n && ev[colon] == b':' {
                    let key = &ev[i + 1..end - 1];
                    let v = skip_ws(colon + 1);
                    out.extend_from_slice(&ev[i..v]);
                    if v >= n {
                        return;
                    }
                    let vend = match ev[v] {
                        b'"' => string_end(v),
                        b'-' | b'0'..=b'9' => {
                            let mut j = v + 1;
                            while j < n
                                && matches!(ev[j], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                            {
                                j += 1;
                            }
                            j
                        }
                        _ => {
                            i = v;
                            continue;
                        }
                    };
                    match f(depth, key, &ev[v..vend]) {
                        Some(rep) => out.extend_from_slice(&rep),
                        None => out.extend_from_slice(&ev[v..vend]),
                    }
                    i = vend;
                } else {
                    out.extend_from_slice(&ev[i..end]);
                    i = end;
                }
            }
            b'{' | b'[' => {
                depth += 1;
                out.push(c);
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                out.push(c);
                i += 1;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
}

/// Exact integer nanoseconds from a µs number text (`1669783687464181`, `1712195495505543.2`).
fn us_text_to_ns(t: &[u8]) -> Option<i128> {
    let s = std::str::from_utf8(t).ok()?.trim_matches('"');
    let (int, frac) = match s.split_once('.') {
        Some((a, b)) => (a, b),
        None => (s, ""),
    };
    if int.contains(['e', 'E']) || frac.contains(['e', 'E']) {
        return s.parse::<f64>().ok().map(|f| (f * 1000.0).round() as i128);
    }
    let i: i128 = int.parse().ok()?;
    let mut f = 0i128;
    for d in frac.bytes().chain(std::iter::repeat(b'0')).take(3) {
        if !d.is_ascii_digit() {
            return None;
        }
        f = f * 10 + (d - b'0') as i128;
    }
    Some(if i < 0 { i * 1000 - f } else { i * 1000 + f })
}

fn int_text(t: &[u8]) -> Option<i128> {
    std::str::from_utf8(t).ok()?.parse().ok()
}

/// Adds `delta` µs to a µs number text, keeping its fractional digits.
fn shift_us_text(t: &[u8], delta: i128) -> Option<Vec<u8>> {
    let s = std::str::from_utf8(t).ok()?;
    let (int, frac) = match s.split_once('.') {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    };
    if s.contains(['e', 'E']) {
        return None;
    }
    let i: i128 = int.parse().ok()?;
    let mut out = (i + delta).to_string();
    if let Some(fr) = frac {
        out.push('.');
        out.push_str(fr);
    }
    Some(out.into_bytes())
}

/// Id namespaces that must stay unique across copies.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ns {
    Corr,
    Ext,
    Seq,
    Py,
}

fn id_namespace(depth: u32, key: &[u8]) -> Option<Ns> {
    match key {
        b"id" if depth == 1 => Some(Ns::Corr),
        b"correlation" | b"wait_on_cuda_event_record_corr_id" if depth >= 2 => Some(Ns::Corr),
        b"External id" | b"external id" if depth >= 2 => Some(Ns::Ext),
        b"Sequence number" if depth >= 2 => Some(Ns::Seq),
        b"Python id" | b"Python parent id" if depth >= 2 => Some(Ns::Py),
        _ => None,
    }
}

/// The fields of an event that decide whether it is repeated.
#[derive(Default)]
struct Head {
    ph: Vec<u8>,
    cat: Vec<u8>,
    scope: Vec<u8>,
    step: Option<i128>,
    ts: Option<i128>,
    dur: Option<i128>,
}

fn unquote(v: &[u8]) -> &[u8] {
    if v.len() >= 2 && v[0] == b'"' && v[v.len() - 1] == b'"' {
        &v[1..v.len() - 1]
    } else {
        v
    }
}

fn step_number(name: &[u8]) -> Option<i128> {
    let rest = name.strip_prefix(b"ProfilerStep#")?;
    int_text(rest)
}

fn head_of(ev: &[u8], scratch: &mut Vec<u8>, maxes: Option<&mut [i128; 4]>) -> Head {
    let mut h = Head::default();
    let mut maxes = maxes;
    scratch.clear();
    walk(ev, scratch, |depth, key, v| {
        if depth == 1 {
            match key {
                b"ph" => h.ph = unquote(v).to_vec(),
                b"cat" => h.cat = unquote(v).to_vec(),
                b"s" => h.scope = unquote(v).to_vec(),
                b"name" => h.step = step_number(unquote(v)),
                b"ts" => h.ts = us_text_to_ns(v),
                b"dur" => h.dur = us_text_to_ns(v),
                _ => {}
            }
        }
        if let (Some(ns), Some(m)) = (id_namespace(depth, key), maxes.as_deref_mut()) {
            if let Some(x) = int_text(unquote(v)) {
                let slot = &mut m[ns as usize];
                *slot = (*slot).max(x);
            }
        }
        None
    });
    h
}

impl Head {
    /// Events that make up the repeatable part of a trace (not metadata, spans or global
    /// instants).
    fn repeatable(&self) -> bool {
        let ph = self.ph.as_slice();
        if self.ts.is_none() || ph == b"M" || self.cat.eq_ignore_ascii_case(b"Trace") {
            return false;
        }
        if (ph == b"i" || ph == b"I") && self.scope == b"g" {
            return false;
        }
        matches!(ph, b"X" | b"i" | b"I" | b"s" | b"f" | b"t" | b"C")
    }
    fn is_step(&self) -> bool {
        self.step.is_some()
            && self.ph == b"X"
            && matches!(
                self.cat.to_ascii_lowercase().as_slice(),
                b"user_annotation" | b"cpu_op" | b"operator"
            )
    }
}

/// What the first pass learned.
struct Plan {
    window_start: i128,
    period_us: i128,
    id_span: [i128; 4],
    step_span: i128,
    events: u64,
    window_events: u64,
    counts_all: BTreeMap<String, u64>,
    counts_window: BTreeMap<String, u64>,
    steps: u64,
}

fn count_key(h: &Head) -> String {
    format!(
        "{}/{}",
        String::from_utf8_lossy(&h.ph),
        String::from_utf8_lossy(&h.cat).to_ascii_lowercase()
    )
}

fn plan(path: &str) -> io::Result<Plan> {
    let mut scratch = Vec::new();
    let mut maxes = [0i128; 4];
    let mut step_start: Option<i128> = None;
    let mut step_end: i128 = i128::MIN;
    let (mut step_min, mut step_max) = (i128::MAX, i128::MIN);
    let mut steps = 0u64;
    let mut events = 0u64;
    let mut counts_all = BTreeMap::new();
    for_each_piece(path, |p| {
        if let Piece::Event(ev) = p {
            events += 1;
            let h = head_of(ev, &mut scratch, Some(&mut maxes));
            *counts_all.entry(count_key(&h)).or_insert(0u64) += 1;
            if h.is_step() {
                let (ts, dur) = (h.ts.unwrap_or(0), h.dur.unwrap_or(0));
                step_start = Some(step_start.map_or(ts, |s: i128| s.min(ts)));
                step_end = step_end.max(ts + dur);
                let n = h.step.unwrap_or(0);
                step_min = step_min.min(n);
                step_max = step_max.max(n);
                steps += 1;
            }
        }
        Ok(())
    })?;
    // second look: the window's extent and size
    let mut min_ts: Option<i128> = None;
    for_each_piece(path, |p| {
        if let Piece::Event(ev) = p {
            let h = head_of(ev, &mut scratch, None);
            if h.repeatable() {
                let ts = h.ts.unwrap_or(0);
                min_ts = Some(min_ts.map_or(ts, |m: i128| m.min(ts)));
            }
        }
        Ok(())
    })?;
    let window_start = match step_start {
        Some(s) => s,
        None => {
            eprintln!("scale_trace: no ProfilerStep#N in the input: repeating the whole trace");
            min_ts.unwrap_or(0)
        }
    };
    let mut window_end = step_end.max(window_start);
    let mut window_events = 0u64;
    let mut counts_window = BTreeMap::new();
    for_each_piece(path, |p| {
        if let Piece::Event(ev) = p {
            let h = head_of(ev, &mut scratch, None);
            if h.repeatable() && h.ts.unwrap_or(0) >= window_start {
                window_events += 1;
                *counts_window.entry(count_key(&h)).or_insert(0u64) += 1;
                window_end = window_end.max(h.ts.unwrap_or(0) + h.dur.unwrap_or(0).max(0));
            }
        }
        Ok(())
    })?;
    // one window length per copy, in whole µs so fractional digits stay as written
    let period_us = ((window_end - window_start) + 999) / 1000 + 1;
    Ok(Plan {
        window_start,
        period_us,
        id_span: maxes.map(|m| m.max(0) + 1),
        step_span: if steps > 0 {
            step_max - step_min + 1
        } else {
            0
        },
        events,
        window_events,
        counts_all,
        counts_window,
        steps,
    })
}

/// Counts uncompressed bytes written.
struct Counter<W> {
    inner: W,
    n: u64,
}

impl<W: Write> Write for Counter<W> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        let k = self.inner.write(b)?;
        self.n += k as u64;
        Ok(k)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Plain or gzip output.
enum Sink {
    Plain(BufWriter<File>),
    Gz(Box<flate2::write::GzEncoder<BufWriter<File>>>),
}

impl Write for Sink {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            Sink::Plain(w) => w.write(b),
            Sink::Gz(w) => w.write(b),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Plain(w) => w.flush(),
            Sink::Gz(w) => w.flush(),
        }
    }
}

impl Sink {
    fn finish(self) -> io::Result<()> {
        let mut w = match self {
            Sink::Plain(w) => w,
            Sink::Gz(g) => g.finish()?,
        };
        w.flush()?;
        w.get_ref().sync_all()
    }
}

fn write_copy(
    input: &str,
    out: &mut Counter<Sink>,
    plan: &Plan,
    k: i128,
    first: &mut bool,
) -> io::Result<()> {
    let mut scratch = Vec::new();
    let mut buf = Vec::with_capacity(4096);
    for_each_piece(input, |p| {
        let Piece::Event(ev) = p else { return Ok(()) };
        if k > 0 {
            let h = head_of(ev, &mut scratch, None);
            if !(h.repeatable() && h.ts.unwrap_or(0) >= plan.window_start) {
                return Ok(());
            }
        }
        if !*first {
            out.write_all(b",\n  ")?;
        }
        *first = false;
        if k == 0 {
            return out.write_all(ev);
        }
        buf.clear();
        walk(ev, &mut buf, |depth, key, v| {
            if depth == 1 && key == b"ts" {
                return shift_us_text(v, k * plan.period_us);
            }
            if depth == 1 && key == b"name" {
                let name = unquote(v);
                if let Some(n) = step_number(name) {
                    if plan.step_span > 0 {
                        return Some(
                            format!("\"ProfilerStep#{}\"", n + k * plan.step_span).into_bytes(),
                        );
                    }
                }
                return None;
            }
            let ns = id_namespace(depth, key)?;
            let x = int_text(v)?;
            let positive = if ns == Ns::Seq { x >= 0 } else { x > 0 };
            if !positive {
                return None;
            }
            Some((x + k * plan.id_span[ns as usize]).to_string().into_bytes())
        });
        out.write_all(&buf)
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut pos = Vec::new();
    let mut size = None;
    let mut gzip = false;
    let mut verify = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--size" => size = it.next().and_then(|s| parse_size(s)),
            "--gzip" => gzip = true,
            "--verify" => verify = true,
            "-h" | "--help" => usage(),
            "--bench" => {}
            _ => pos.push(a.clone()),
        }
    }
    let (Some(input), Some(output), Some(target)) = (pos.first(), pos.get(1), size) else {
        usage()
    };
    match run(input, output, target, gzip, verify) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("scale_trace: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(input: &str, output: &str, target: u64, gzip: bool, verify: bool) -> io::Result<()> {
    let t0 = std::time::Instant::now();
    let plan = plan(input)?;
    eprintln!(
        "scale_trace: {} events, {} in the step window ({} steps), window {} µs, id spans {:?}",
        plan.events, plan.window_events, plan.steps, plan.period_us, plan.id_span
    );
    if plan.window_events == 0 {
        return Err(io::Error::other("nothing to repeat: no timed events"));
    }
    // top-level members, in order
    let mut before: Vec<(String, Vec<u8>)> = Vec::new();
    let mut after: Vec<(String, Vec<u8>)> = Vec::new();
    for_each_piece(input, |p| {
        if let Piece::Top {
            key,
            raw,
            before_events,
        } = p
        {
            let v = (key.to_string(), raw.to_vec());
            if before_events {
                before.push(v)
            } else {
                after.push(v)
            }
        }
        Ok(())
    })?;
    let tmp = format!("{output}.tmp");
    let file = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
    let sink = if gzip {
        Sink::Gz(Box::new(flate2::write::GzEncoder::new(
            file,
            flate2::Compression::new(6),
        )))
    } else {
        Sink::Plain(file)
    };
    let mut out = Counter { inner: sink, n: 0 };
    out.write_all(b"{\n")?;
    for (k, v) in &before {
        write!(out, "  {}: ", serde_json::to_string(k).unwrap())?;
        out.write_all(v)?;
        out.write_all(b",\n")?;
    }
    out.write_all(b"  \"traceEvents\": [\n  ")?;
    let mut first = true;
    let mut copies: i128 = 0;
    let tty = io::stderr().is_terminal();
    while copies == 0 || out.n < target {
        write_copy(input, &mut out, &plan, copies, &mut first)?;
        copies += 1;
        if tty {
            eprint!("\rscale_trace: {} copies, {} MB", copies, out.n / 1_000_000);
        }
    }
    if tty {
        eprintln!();
    }
    out.write_all(b"\n  ]")?;
    for (k, v) in &after {
        write!(out, ",\n  {}: ", serde_json::to_string(k).unwrap())?;
        out.write_all(v)?;
    }
    out.write_all(b"\n}\n")?;
    let bytes = out.n;
    out.inner.finish()?;
    std::fs::rename(&tmp, output)?;

    let extra = (copies - 1) as u64;
    let expect = |key: &str| -> u64 {
        plan.counts_all.get(key).copied().unwrap_or(0)
            + extra * plan.counts_window.get(key).copied().unwrap_or(0)
    };
    let total_events = plan.events + extra * plan.window_events;
    let mut per_copy = serde_json::Map::new();
    for (k, v) in &plan.counts_window {
        per_copy.insert(k.clone(), (*v).into());
    }
    let meta = serde_json::json!({
        "source": input,
        "output": output,
        "gzip": gzip,
        "bytes": bytes,
        "copies": copies as u64,
        "events": total_events,
        "window_events": plan.window_events,
        "period_us": plan.period_us as u64,
        "kernels": expect("X/kernel"),
        "runtime": expect("X/cuda_runtime") + expect("X/runtime"),
        "memcpy": expect("X/gpu_memcpy") + expect("X/memcpy"),
        "memset": expect("X/gpu_memset") + expect("X/memset"),
        "per_copy": per_copy,
    });
    let meta_path = format!("{output}.meta.json");
    std::fs::write(
        &meta_path,
        serde_json::to_string_pretty(&meta).unwrap() + "\n",
    )?;
    eprintln!(
        "scale_trace: wrote {output}: {} copies, {bytes} uncompressed bytes, {total_events} events \
         in {:.1?} (counts in {meta_path})",
        copies,
        t0.elapsed()
    );
    if verify {
        verify_output(output, &meta)?;
    }
    Ok(())
}

fn verify_output(output: &str, meta: &serde_json::Value) -> io::Result<()> {
    use stallscope::model::{CpuKind, GpuKind};
    let t = stallscope::ingest::load(output, &Default::default())
        .map_err(|e| io::Error::other(e.to_string()))?;
    let count_g = |k: GpuKind| t.gpu.iter().filter(|g| g.kind == k).count() as u64;
    let runtime = t.cpu.iter().filter(|c| c.kind == CpuKind::Runtime).count() as u64;
    let checks = [
        ("events", t.source.events),
        ("bytes", t.source.bytes),
        ("kernels", count_g(GpuKind::Kernel)),
        ("memcpy", count_g(GpuKind::Memcpy)),
        ("memset", count_g(GpuKind::Memset)),
        ("runtime", runtime),
    ];
    let mut ok = true;
    for (k, got) in checks {
        let want = meta[k].as_u64().unwrap_or(0);
        if got != want {
            eprintln!("scale_trace: verify: {k}: loaded {got}, expected {want}");
            ok = false;
        }
    }
    // ids stay unique across copies: no two runtime calls share a correlation id
    let mut corr: Vec<u64> = t
        .cpu
        .iter()
        .filter(|c| c.kind == CpuKind::Runtime && c.correlation != 0)
        .map(|c| c.correlation)
        .collect();
    let n = corr.len();
    corr.sort_unstable();
    corr.dedup();
    let dup = n - corr.len();
    let linked = t.gpu.iter().filter(|g| g.launch != u32::MAX).count();
    eprintln!(
        "scale_trace: verify: {} events, {} kernels, {} device events linked to a launch, \
         {dup} runtime calls with a repeated correlation id, warnings {:?}",
        t.source.events,
        count_g(GpuKind::Kernel),
        linked,
        t.warnings.iter().map(|w| w.code).collect::<Vec<_>>()
    );
    if !ok {
        return Err(io::Error::other("verification failed"));
    }
    eprintln!("scale_trace: verify: OK");
    Ok(())
}
