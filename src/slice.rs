//! `stallscope slice`: writes a valid Kineto trace of just one window, streaming — the cure
//! for "the 500 MB trace hangs the viewer".
//!
//! # What is kept
//!
//! The input is read block by block by the reader's scanner ([`scan_stream`], which cuts
//! `traceEvents` at event boundaries without parsing) and each event is decided on its own from
//! `ph`, `ts`, `dur`, `name`, `cat` and `id`; kept events are written through byte for byte. Memory stays
//! at a few blocks plus the flows waiting for their other end, never the file.
//!
//! * Metadata events (`ph: "M"`: process/thread names, sort indexes) and events without a
//!   usable `ts`: always.
//! * Complete events (`ph: "X"`): when `[ts, ts + dur)` overlaps the kept time (a zero-length
//!   event when its `ts` lies inside). For step windows, `ProfilerStep#N` spans (and their
//!   `gpu_user_annotation` twins) of steps outside the window are dropped even when they
//!   overlap, so that the slice has exactly the selected steps.
//! * Flow events (`ph: "s"`, `"f"`, `"t"`, paired by `cat` and `id`): when their `ts` is
//!   inside the kept time **and** a partner of the pair is too; a flow whose other end is
//!   outside — or missing from the input altogether, like the `f` events that 2022 Kineto
//!   wrote on CPU threads for calls without device work — is dropped (counted in
//!   [`SliceStats::flows_dropped`]; such single ends link nothing, for viewers or for the
//!   reader). Flow events wait in memory until their partner is seen, so they may come out
//!   later than in the input.
//! * Every other event (instants such as `[memory]`, counters): when its `ts` is inside.
//! * Every top-level member other than `traceEvents` (`deviceProperties`, `distributedInfo`,
//!   `baseTimeNanoseconds`, `schemaVersion`, …), verbatim and in order, plus a
//!   `stallscope_slice` member saying where the slice came from.
//!
//! Events that are not valid JSON are repaired as the reader does ([`lenient::repair`]) and
//! written repaired; those that cannot be repaired are dropped (counted).
//!
//! # Kept time
//!
//! [`plan`] turns a [`Window`] into the kept time: for step windows, the union over the
//! included steps of [host start, device-extended end) — from the host start rather than the
//! extended start so that device work of the previous step still running when the step began
//! is in the slice, which is what makes a re-analysis of the slice give the same step spans
//! and breakdowns as the original; for time and focus windows, the window's mask.
//!
//! Measured on the ResNet-50 sample and seven corpus traces (`tests/slice.rs`): every step of
//! the slice has the span, breakdown and device-activity count of the original, to the
//! nanosecond — except, in two of those traces, the slice's first step. The step rule starts a
//! trace's first step at its host start unless earlier device work *ended before the step's
//! own first device activity*; when the previous step's kernels still run on one stream while
//! the first step's first activity (a copy on a side stream) has begun, the original starts the
//! step at the end of the previous step and the slice, like any trace that starts there, at its
//! host start (up to 159 ms earlier on `negative_queue_length_values_check`). The following
//! steps are exact.
//!
//! Output is gzip when the output name ends in `.gz`, else plain JSON; it is written to
//! `OUTPUT.partial` and renamed when complete.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::ingest::kineto::event::{micros_to_ns, BStr};
use crate::ingest::kineto::lenient;
use crate::ingest::kineto::scan::{scan_stream, StreamError, Streamed};
use crate::ingest::sniff;
use crate::model::{Interval, IntervalSet, Ns, Trace};
use crate::window::steps::StepAnalysis;
use crate::window::{Window, WindowSpec};

/// What to keep.
#[derive(Clone, Debug, Default)]
pub struct SlicePlan {
    /// Kept time, ns on the trace's clock (`ts` × 1000).
    pub keep: IntervalSet,
    /// For step windows: the `ProfilerStep#N` names to keep (others are dropped).
    pub step_names: Option<HashSet<String>>,
    /// Written as the `stallscope_slice` top-level member.
    pub info: serde_json::Value,
}

/// What a slice did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SliceStats {
    /// Events read.
    pub events_in: u64,
    /// Events written.
    pub events_out: u64,
    /// Flow events dropped because the other end of their pair is outside.
    pub flows_dropped: u64,
    /// Events written after repairing invalid JSON.
    pub repaired: u64,
    /// Events dropped because they could not be parsed even after repair.
    pub skipped: u64,
    /// Uncompressed bytes read.
    pub bytes_in: u64,
    /// Uncompressed bytes written.
    pub bytes_out: u64,
}

/// Builds the plan of a window (see the module docs).
pub fn plan(trace: &Trace, steps: &StepAnalysis, window: &Window) -> SlicePlan {
    let origin = trace.start();
    let step_based = !matches!(
        window.spec,
        WindowSpec::Time { .. } | WindowSpec::Focus { .. }
    );
    let (keep, step_names) = if step_based && !window.steps.is_empty() {
        let keep = IntervalSet::from_intervals(window.steps.iter().filter_map(|&i| {
            steps.steps.get(i).map(|s| {
                Interval::new(
                    s.host_span.start.min(s.span.start),
                    s.span.end.max(s.host_span.end),
                )
            })
        }));
        let names: HashSet<String> = window
            .steps
            .iter()
            .filter_map(|&i| steps.steps.get(i).map(|s| s.name.clone()))
            .collect();
        (keep, steps.from_profiler_steps.then_some(names))
    } else {
        (window.mask.clone(), None)
    };
    let hull = keep.hull().unwrap_or_default();
    let rel = |t: Ns| (t - origin) as f64 / 1000.0;
    let info = serde_json::json!({
        "generator": format!("stallscope {}", env!("CARGO_PKG_VERSION")),
        "source": trace.source.path,
        "window": window.spec.to_string(),
        "steps": window
            .steps
            .iter()
            .filter_map(|&i| steps.steps.get(i).map(|s| s.name.clone()))
            .collect::<Vec<_>>(),
        "start_us": rel(hull.start),
        "end_us": rel(hull.end),
        "origin_ts_us": origin as f64 / 1000.0,
    });
    SlicePlan {
        keep,
        step_names,
        info,
    }
}

/// A plan with what it keeps, for the front ends to report.
#[derive(Clone, Debug)]
pub struct WindowPlan {
    /// What to write.
    pub plan: SlicePlan,
    /// The kept steps: `ProfilerStep#4`, `2 steps, ProfilerStep#4 … ProfilerStep#5`, `no step`.
    pub steps_desc: String,
    /// Steps the window left out, and why (those merely outside `--steps` included).
    pub excluded: Vec<crate::window::Exclusion>,
}

/// Selects the window `spec` of a loaded trace and plans its slice: the one path from a window
/// specification to a [`SlicePlan`] for the command line and the MCP server.
pub fn plan_window(trace: &Trace, spec: &WindowSpec) -> Result<WindowPlan, SliceError> {
    let all = crate::window::steps::analyze_steps(trace);
    let ann = crate::window::annotations::Annotations::build(trace);
    let w =
        crate::window::select(trace, &all, &ann, spec).map_err(|e| SliceError(e.to_string()))?;
    let names: Vec<&str> = w
        .steps
        .iter()
        .filter_map(|&i| all.steps.get(i).map(|s| s.name.as_str()))
        .collect();
    let steps_desc = match (names.first(), names.last()) {
        (Some(f), Some(l)) if names.len() > 1 => format!("{} steps, {f} … {l}", names.len()),
        (Some(f), _) => f.to_string(),
        _ => "no step".into(),
    };
    Ok(WindowPlan {
        plan: plan(trace, &all, &w),
        steps_desc,
        excluded: w.excluded.clone(),
    })
}

/// Why a slice failed.
#[derive(Debug)]
pub struct SliceError(pub String);

impl std::fmt::Display for SliceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SliceError {}

/// The fields a slice decision needs, borrowed. Its visitor has the shape of
/// [`crate::ingest::kineto::event::RawEvent`]'s on purpose: the same keys read the same way, into
/// the six fields a decision needs instead of a whole event.
#[derive(Default)]
struct SliceEvent<'a> {
    ph: BStr<'a>,
    cat: BStr<'a>,
    name: BStr<'a>,
    ts: Option<&'a RawValue>,
    dur: Option<&'a RawValue>,
    id: Option<&'a RawValue>,
}

impl<'de> Deserialize<'de> for SliceEvent<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SliceEvent<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a trace event object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                let mut e = SliceEvent::default();
                while let Some(k) = m.next_key::<BStr<'de>>()? {
                    let k = k.0.unwrap_or_default();
                    match k.as_bytes() {
                        b"ph" => e.ph = m.next_value()?,
                        b"cat" => e.cat = m.next_value()?,
                        b"name" => e.name = m.next_value()?,
                        b"ts" => e.ts = Some(m.next_value()?),
                        b"dur" => e.dur = Some(m.next_value()?),
                        b"id" => e.id = Some(m.next_value()?),
                        _ => {
                            m.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(e)
            }
        }
        d.deserialize_map(V)
    }
}

enum Decision {
    Keep,
    Drop,
    /// A flow event inside the kept time: (key, is start).
    Flow(Vec<u8>, bool),
}

fn inside(keep: &IntervalSet, t: Ns) -> bool {
    let s = keep.spans();
    let i = s.partition_point(|iv| iv.start <= t);
    i > 0 && t < s[i - 1].end
}

fn overlaps(keep: &IntervalSet, start: Ns, end: Ns) -> bool {
    if end <= start {
        return inside(keep, start);
    }
    keep.covered_within(Interval::new(start, end)) > 0
}

fn decide(plan: &SlicePlan, e: &SliceEvent<'_>) -> Decision {
    let ph = e.ph.0.as_deref().unwrap_or("");
    if ph == "M" {
        return Decision::Keep;
    }
    let Some(ts) = e.ts.and_then(|t| micros_to_ns(t.get())) else {
        return Decision::Keep;
    };
    match ph {
        "X" => {
            let dur = e
                .dur
                .and_then(|d| micros_to_ns(d.get()))
                .unwrap_or(0)
                .max(0);
            if !overlaps(&plan.keep, ts, ts.saturating_add(dur)) {
                return Decision::Drop;
            }
            if let (Some(names), Some(n)) = (&plan.step_names, e.name.0.as_deref()) {
                if n.starts_with("ProfilerStep#") && !names.contains(n) {
                    return Decision::Drop;
                }
            }
            Decision::Keep
        }
        "s" | "f" | "t" => {
            if !inside(&plan.keep, ts) {
                return Decision::Drop;
            }
            let mut key = e.cat.0.as_deref().unwrap_or("").as_bytes().to_vec();
            key.push(0);
            key.extend_from_slice(e.id.map(|r| r.get().trim()).unwrap_or("").as_bytes());
            Decision::Flow(key, ph == "s")
        }
        _ => {
            if inside(&plan.keep, ts) {
                Decision::Keep
            } else {
                Decision::Drop
            }
        }
    }
}

/// Writes events, separators and the document frame; pairs flows.
struct Writer<W: Write> {
    out: W,
    bytes: u64,
    /// A top-level member was written (a comma is needed before the next one).
    members: bool,
    /// `traceEvents` was opened and not closed.
    events_open: bool,
    /// `traceEvents` was written at all.
    events_written: bool,
    /// At least one event was written into the open array.
    first_written: bool,
    bare: bool,
    linked: HashSet<Vec<u8>>,
    pending_s: HashMap<Vec<u8>, Vec<u8>>,
    pending_f: HashMap<Vec<u8>, Vec<Vec<u8>>>,
    events_out: u64,
}

impl<W: Write> Writer<W> {
    fn raw(&mut self, b: &[u8]) -> io::Result<()> {
        self.bytes += b.len() as u64;
        self.out.write_all(b)
    }

    fn open_events(&mut self) -> io::Result<()> {
        if self.events_open {
            return Ok(());
        }
        if self.bare {
            if !self.events_written {
                self.raw(b"[\n")?;
            }
        } else {
            if self.members {
                self.raw(b",\n")?;
            }
            self.raw(b"\"traceEvents\": [\n")?;
            self.members = true;
        }
        self.events_open = true;
        self.events_written = true;
        Ok(())
    }

    fn event(&mut self, b: &[u8]) -> io::Result<()> {
        self.open_events()?;
        if self.first_written {
            self.raw(b",\n")?;
        }
        self.first_written = true;
        self.events_out += 1;
        self.raw(b)
    }

    /// Writes the flows still waiting whose partner arrived, closes the array.
    fn close_events(&mut self) -> io::Result<()> {
        if self.events_open && !self.bare {
            self.raw(b"\n]")?;
            self.events_open = false;
        }
        Ok(())
    }

    fn member(&mut self, key: &str, value: &[u8]) -> io::Result<()> {
        self.close_events()?;
        if self.members {
            self.raw(b",\n")?;
        }
        let k = serde_json::to_string(key).unwrap_or_else(|_| "\"?\"".into());
        self.raw(k.as_bytes())?;
        self.raw(b": ")?;
        self.raw(value)?;
        self.members = true;
        Ok(())
    }

    fn flow(&mut self, key: Vec<u8>, is_start: bool, bytes: &[u8]) -> io::Result<()> {
        if is_start {
            if let Some(fs) = self.pending_f.remove(&key) {
                self.event(bytes)?;
                for f in fs {
                    self.event(&f)?;
                }
                self.linked.insert(key);
            } else if self.linked.contains(&key) {
                // a second start of a linked pair: its partner is already out
                self.event(bytes)?;
            } else {
                self.pending_s.insert(key, bytes.to_vec());
            }
        } else if self.linked.contains(&key) {
            self.event(bytes)?;
        } else if let Some(s) = self.pending_s.remove(&key) {
            self.event(&s)?;
            self.event(bytes)?;
            self.linked.insert(key);
        } else {
            self.pending_f.entry(key).or_default().push(bytes.to_vec());
        }
        Ok(())
    }

    fn dropped_flows(&self) -> u64 {
        self.pending_s.len() as u64 + self.pending_f.values().map(|v| v.len() as u64).sum::<u64>()
    }
}

/// Slices a decompressed Kineto JSON stream into `out` (see the module docs).
pub fn slice<R: Read, W: Write>(
    input: R,
    out: W,
    plan: &SlicePlan,
) -> Result<SliceStats, SliceError> {
    const BLOCK: usize = 8 << 20;
    let io_err = |e: io::Error| SliceError(format!("I/O error: {e}"));
    let mut w = Writer {
        out,
        bytes: 0,
        members: false,
        events_open: false,
        events_written: false,
        first_written: false,
        bare: false,
        linked: HashSet::new(),
        pending_s: HashMap::new(),
        pending_f: HashMap::new(),
        events_out: 0,
    };
    let mut stats = SliceStats::default();
    // the reader's scanner cuts the document; each event is decided on its own
    let read = scan_stream(input, BLOCK, |item| -> io::Result<()> {
        match item {
            Streamed::Start { bare } => {
                w.bare = bare;
                if !bare {
                    w.raw(b"{\n")?;
                }
                Ok(())
            }
            Streamed::Event { bytes: raw, repair } => {
                stats.events_in += 1;
                let mut fixed: Option<Vec<u8>> = None;
                let parsed: Option<SliceEvent> = if repair {
                    None
                } else {
                    serde_json::from_slice::<SliceEvent>(raw).ok()
                };
                let decision = match parsed {
                    Some(e) => Some(decide(plan, &e)),
                    None => {
                        let (f, _) = lenient::repair(raw);
                        let d = serde_json::from_slice::<SliceEvent>(&f)
                            .ok()
                            .map(|e| decide(plan, &e));
                        fixed = Some(f);
                        d
                    }
                };
                let bytes: &[u8] = fixed.as_deref().unwrap_or(raw);
                match decision {
                    None => stats.skipped += 1,
                    Some(Decision::Drop) => {}
                    Some(Decision::Keep) => {
                        if fixed.is_some() {
                            stats.repaired += 1;
                        }
                        w.event(bytes)?;
                    }
                    Some(Decision::Flow(key, is_start)) => {
                        if fixed.is_some() {
                            stats.repaired += 1;
                        }
                        w.flow(key, is_start, bytes)?;
                    }
                }
                Ok(())
            }
            Streamed::TopValue { key, bytes } => {
                if key != "stallscope_slice" {
                    w.member(key, bytes)?;
                }
                Ok(())
            }
        }
    });
    stats.bytes_in = read.map_err(|e| match e {
        StreamError::Io(e) | StreamError::Visit(e) => io_err(e),
        StreamError::Malformed { offset, message } => {
            SliceError(format!("byte {offset}: malformed JSON: {message}"))
        }
        StreamError::Truncated { offset } => SliceError(format!(
            "byte {offset}: the input ends inside the document (truncated trace)"
        )),
    })?;
    stats.flows_dropped = w.dropped_flows();
    if w.bare {
        if !w.events_written {
            w.raw(b"[\n").map_err(io_err)?;
        }
        w.raw(b"\n]\n").map_err(io_err)?;
    } else {
        if !w.events_written {
            w.open_events().map_err(io_err)?;
        }
        w.close_events().map_err(io_err)?;
        let info = serde_json::to_vec(&plan.info).unwrap_or_else(|_| b"{}".to_vec());
        w.member("stallscope_slice", &info).map_err(io_err)?;
        w.raw(b"\n}\n").map_err(io_err)?;
    }
    w.out.flush().map_err(io_err)?;
    stats.events_out = w.events_out;
    stats.bytes_out = w.bytes;
    Ok(stats)
}

/// Slices the file `input` (plain or gzip, by content) into `output` (gzip when its name
/// ends in `.gz`), through `OUTPUT.partial`.
pub fn slice_file(input: &Path, output: &Path, plan: &SlicePlan) -> Result<SliceStats, SliceError> {
    let same = match (input.canonicalize(), output.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same {
        return Err(SliceError("the output would overwrite the input".into()));
    }
    let f = File::open(input).map_err(|e| SliceError(format!("{}: {e}", input.display())))?;
    let mut reader = BufReader::with_capacity(1 << 20, f);
    let head = reader
        .fill_buf()
        .map_err(|e| SliceError(format!("{}: {e}", input.display())))?;
    let gz_in = sniff::is_gzip(head);
    let src: Box<dyn Read> = if gz_in {
        Box::new(flate2::read::MultiGzDecoder::new(reader))
    } else {
        Box::new(reader)
    };
    let mut partial = output.as_os_str().to_owned();
    partial.push(".partial");
    let partial = std::path::PathBuf::from(partial);
    let file =
        File::create(&partial).map_err(|e| SliceError(format!("{}: {e}", partial.display())))?;
    let gz_out = output
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
    let result = if gz_out {
        let enc = flate2::write::GzEncoder::new(
            BufWriter::with_capacity(1 << 20, file),
            flate2::Compression::new(6),
        );
        let mut enc = enc;
        slice(src, &mut enc, plan).and_then(|s| {
            enc.try_finish()
                .map_err(|e| SliceError(format!("{}: {e}", partial.display())))?;
            enc.get_mut()
                .flush()
                .map_err(|e| SliceError(format!("{}: {e}", partial.display())))?;
            Ok(s)
        })
    } else {
        let mut out = BufWriter::with_capacity(1 << 20, file);
        slice(src, &mut out, plan)
    };
    match result {
        Ok(s) => {
            std::fs::rename(&partial, output)
                .map_err(|e| SliceError(format!("{}: {e}", output.display())))?;
            Ok(s)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            Err(SliceError(format!("{}: {}", input.display(), e.0)))
        }
    }
}
