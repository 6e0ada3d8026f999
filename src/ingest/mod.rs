//! Readers: one module per input format, and [`sniff`] to tell them apart by content.
//!
//! Stage 2 of the pipeline (ARCHITECTURE.md): bytes to a [`crate::model::Trace`]; it may use
//! the model and the support modules, nothing above.
//!
//! [`load`] is the entry point: it opens a path (or `-` for standard input), undoes gzip when
//! the magic bytes say so (never by extension), recognises the format and hands the byte
//! stream to the matching reader, which fills a [`crate::model::Trace`].

pub mod folder;
pub mod kineto;
pub mod limits;
pub mod ncu;
pub mod nsys;
pub mod outliers;
pub mod sniff;
pub mod torch_memory;

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::model::Trace;
use sniff::Format;

/// Why an input could not be read. Displays as one line naming the file (and the byte offset
/// in the uncompressed stream when known).
#[derive(Debug)]
pub struct LoadError {
    /// The path as given.
    pub path: String,
    /// Byte offset in the (uncompressed) input, if the problem has a place.
    pub offset: Option<u64>,
    /// What went wrong.
    pub message: String,
}

impl LoadError {
    /// An error at a byte offset.
    pub fn at(path: &str, offset: u64, message: String) -> Self {
        LoadError {
            path: path.to_string(),
            offset: Some(offset),
            message,
        }
    }
    /// An error without a place.
    pub fn new(path: &str, message: String) -> Self {
        LoadError {
            path: path.to_string(),
            offset: None,
            message,
        }
    }
    /// An I/O error.
    pub fn io(path: &str, e: io::Error) -> Self {
        let msg = match e.kind() {
            io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData => {
                format!("corrupt compressed data: {e}")
            }
            io::ErrorKind::UnexpectedEof => format!("compressed stream ends early: {e}"),
            _ => e.to_string(),
        };
        LoadError::new(path, msg)
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(o) => write!(f, "{}: byte {}: {}", self.path, o, self.message),
            None => write!(f, "{}: {}", self.path, self.message),
        }
    }
}

impl std::error::Error for LoadError {}

/// Options for [`load`].
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// Kineto reader settings.
    pub kineto: kineto::Options,
    /// Show a progress bar on stderr for inputs over this many bytes (when stderr is a TTY).
    pub progress_over: Option<u64>,
    /// A progress bar owned by the caller, used instead of one of [`load`]'s own (and then
    /// `progress_over` is not looked at): advanced by the bytes read (compressed bytes for
    /// gzip), by the file's size in all once the load returns, never given a length nor
    /// cleared. Several loads, in parallel too, can advance one bar (the ranks of a folder).
    pub progress: Option<indicatif::ProgressBar>,
    /// Read uncompressed Kineto files with `read` into buffers instead of through a memory map
    /// (the map saves a copy of every byte; both give the same trace).
    pub no_mmap: bool,
    /// Leave device clocks as recorded (`analyze --no-clock-correction`). By default a device
    /// whose launch flows anchor a clock offset is corrected ([`crate::model::clock`]).
    pub no_clock_correction: bool,
}

/// A progress bar and the bytes one load has put on it: the bar may be shared with other
/// loads, so it is only ever advanced (`inc`), by what this load has not counted yet.
struct Meter {
    bar: indicatif::ProgressBar,
    counted: AtomicU64,
}

impl Meter {
    fn new(bar: indicatif::ProgressBar) -> Self {
        Meter {
            bar,
            counted: AtomicU64::new(0),
        }
    }
    /// `n` more bytes read.
    fn add(&self, n: u64) {
        self.counted.fetch_add(n, Ordering::Relaxed);
        self.bar.inc(n);
    }
    /// The first `pos` bytes of the input are read (counts only what was not counted yet).
    fn reach(&self, pos: u64) {
        let before = self.counted.fetch_max(pos, Ordering::Relaxed);
        if pos > before {
            self.bar.inc(pos - before);
        }
    }
}

/// Counts compressed bytes as they are read (for progress, for the report and for the
/// inflation limit).
struct Counting<R> {
    inner: R,
    meter: Option<Arc<Meter>>,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(m) = &self.meter {
            m.add(n as u64);
        }
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// A gzip stream over `compressed` bytes (counted into `counted` by the [`Counting`] under
/// it), inflated within `limits`; concatenated members (`cat a.gz b.gz`, pigz) read as one.
fn inflating<R: io::BufRead>(
    compressed: R,
    counted: Arc<AtomicU64>,
    limits: limits::Limits,
) -> BufReader<Inflate<flate2::bufread::MultiGzDecoder<R>>> {
    let inflate = Inflate {
        inner: flate2::bufread::MultiGzDecoder::new(compressed),
        compressed: counted,
        inflated: 0,
        limits,
    };
    BufReader::with_capacity(64 << 10, inflate)
}

/// A gzip decoder held to the inflation limits of [`limits::Limits`]: an error (which the
/// reader reports at the inflated offset) once the output passes the absolute cap, or passes
/// both its floor and the ratio times the compressed bytes read.
struct Inflate<R> {
    inner: R,
    /// Compressed bytes read so far (by the [`Counting`] under the decoder).
    compressed: Arc<AtomicU64>,
    inflated: u64,
    limits: limits::Limits,
}

impl<R: Read> Read for Inflate<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.inflated += n as u64;
        let l = &self.limits;
        let compressed = self.compressed.load(Ordering::Relaxed).max(1);
        let msg = if self.inflated > l.inflate_bytes {
            Some(limits::Limits::exceeded(
                "inflate-bytes",
                l.inflate_bytes,
                &format!("the gzip stream inflates past {} bytes", l.inflate_bytes),
            ))
        } else if self.inflated > l.inflate_floor && self.inflated / compressed >= l.inflate_ratio {
            Some(limits::Limits::exceeded(
                "inflate-ratio",
                l.inflate_ratio,
                &format!(
                    "the gzip stream inflates {} bytes from {compressed} compressed bytes ({}x; \
                     real traces compress 10-20x)",
                    self.inflated,
                    self.inflated / compressed
                ),
            ))
        } else {
            None
        };
        match msg {
            Some(m) => Err(io::Error::other(m)),
            None => Ok(n),
        }
    }
}

/// A byte progress bar on stderr (redrawn at most 8 times a second) of `len` bytes, with
/// `message` before it. Draws only when stderr is a terminal.
pub(crate) fn progress_bar(len: u64, message: String) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(len),
        indicatif::ProgressDrawTarget::stderr_with_hz(8),
    );
    let style = indicatif::ProgressStyle::with_template(
        "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    )
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(message);
    bar
}

/// Opens, sniffs and reads one input; then corrects the device clocks that the launch flows
/// anchor ([`crate::model::clock::correct`]) unless [`LoadOptions::no_clock_correction`].
pub fn load(path: &str, opts: &LoadOptions) -> Result<Trace, LoadError> {
    let mut trace = read(path, opts)?;
    if !opts.no_clock_correction {
        let mut tt = crate::timings::Timings::nested();
        crate::model::clock::correct(&mut trace);
        tt.lap("clock correction");
    }
    Ok(trace)
}

/// [`load`] without the clock correction: the trace as the file records it.
fn read(path: &str, opts: &LoadOptions) -> Result<Trace, LoadError> {
    use std::io::IsTerminal;
    // a second handle on a regular file, for the memory map
    let mut mappable: Option<File> = None;
    // and one to read a regular file again from its start (see `kineto::Input::Reopenable`)
    let mut regular: Option<File> = None;
    let (raw, len): (Box<dyn Read + Send>, Option<u64>) = if path == "-" {
        (Box::new(io::stdin()), None)
    } else {
        let p = Path::new(path);
        if p.is_dir() {
            return Err(LoadError::new(
                path,
                "is a folder; pass one trace file (`stallscope analyze FOLDER` reads a folder of \
                 per-rank traces)"
                    .into(),
            ));
        }
        let f = File::open(p).map_err(|e| LoadError::io(path, e))?;
        let meta = f.metadata().ok();
        if !opts.no_mmap && meta.as_ref().is_some_and(|m| m.is_file() && m.len() > 0) {
            mappable = f.try_clone().ok();
        }
        if meta.as_ref().is_some_and(|m| m.is_file()) {
            regular = f.try_clone().ok();
        }
        (Box::new(f), meta.map(|m| m.len()))
    };
    // the caller's bar, or one of our own (finished and cleared here)
    let (bar, own) = match (&opts.progress, opts.progress_over, len) {
        (Some(b), _, _) => (Some(b.clone()), false),
        (None, Some(min), Some(l)) if l > min && io::stderr().is_terminal() => {
            let short = Path::new(path)
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| path.to_string());
            (Some(progress_bar(l, format!("reading {short}"))), true)
        }
        _ => (None, false),
    };
    let meter = bar.map(|b| Arc::new(Meter::new(b)));
    let compressed = Arc::new(AtomicU64::new(0));
    let counting = Counting {
        inner: raw,
        meter: meter.clone(),
        read: compressed.clone(),
    };
    // 64 KiB is room for sniffing; the block reads that follow are larger, so they bypass
    // this buffer and go straight into the blocks (no copy)
    let mut buffered = BufReader::with_capacity(64 << 10, counting);
    let head = buffered.fill_buf().map_err(|e| LoadError::io(path, e))?;
    let gz = sniff::is_gzip(head);
    // Smaller inputs get smaller blocks (at most `2 × threads + 1` are alive at once): a
    // 100 MB trace then peaks near a quarter of its size instead of holding 40 MB of blocks.
    // gzip traces inflate to about ten times their size.
    let mut sized;
    let opts = match len.map(|l| if gz { l.saturating_mul(10) } else { l }) {
        Some(size) => {
            sized = opts.clone();
            let adaptive = (size / 64).clamp(1 << 20, 4 << 20) as usize;
            sized.kineto.block_size = sized.kineto.block_size.min(adaptive);
            &sized
        }
        None => opts,
    };
    let result = if gz {
        let limits = opts.kineto.limits;
        let mut decoder = inflating(buffered, compressed, limits);
        // a regular gzip file can be read again from its start, through the same open file
        // (when a parser does not confirm a block cut made without a scan, see
        // `kineto::Options::chain`); standard input and pipes cannot
        let reopenable = regular.is_some();
        let again = move || -> io::Result<Box<dyn Read + Send + '_>> {
            use std::io::{Seek, SeekFrom};
            let mut file = regular
                .as_ref()
                .ok_or_else(|| io::Error::other("not a regular file"))?
                .try_clone()?;
            file.seek(SeekFrom::Start(0))?;
            let compressed = Arc::new(AtomicU64::new(0));
            let counting = Counting {
                inner: file,
                meter: None,
                read: compressed.clone(),
            };
            let buffered = BufReader::with_capacity(64 << 10, counting);
            Ok(Box::new(inflating(buffered, compressed, limits)))
        };
        let reopen: Option<kineto::Reopen<'_>> = reopenable.then_some(&again);
        let head = decoder
            .fill_buf()
            .map_err(|e| LoadError::io(path, e))?
            .to_vec();
        if sniff::is_gzip(&head) {
            // one layer only: a gzip bomb nests layers, and no profiler compresses twice
            Err(LoadError::at(
                path,
                0,
                "a gzip file inside a gzip file (compressed twice): not read; decompress the \
                 outer layer first (`gunzip -c FILE > FILE1.gz`)"
                    .into(),
            ))
        } else {
            dispatch(decoder, &head, path, len, reopen, opts)
        }
    } else if let (Some(file), Some(len), Format::Json) =
        (&mappable, len, sniff::sniff_stream(head))
    {
        // the windows report how far the file is read; the sniffed head is counted already
        let reach = |pos: u64| {
            if let Some(m) = &meter {
                m.reach(pos);
            }
        };
        let source: kineto::Input<'_, io::Empty> = kineto::Input::Mapped {
            file,
            len,
            progress: meter.is_some().then_some(&reach as &(dyn Fn(u64) + Sync)),
        };
        kineto::read_from(source, path, None, &opts.kineto)
    } else {
        let head = head.to_vec();
        dispatch(buffered, &head, path, None, None, opts)
    };
    if let Some(m) = meter {
        // the whole file counts once its load is over, whatever part of it was read (an
        // error, a SQLite file opened by path, trailing bytes after the events)
        if let Some(l) = len {
            m.reach(l);
        }
        if own {
            m.bar.finish_and_clear();
        }
    }
    let trace = result?;
    trace.check_totals().map_err(|m| LoadError::new(path, m))?;
    Ok(trace)
}

/// Reads one input by its sniffed format; `reopen` opens a stream again from its start (a
/// gzip file), which lets the Kineto reader skip its scan.
fn dispatch<R: Read + Send>(
    input: R,
    head: &[u8],
    path: &str,
    compressed: Option<u64>,
    reopen: Option<kineto::Reopen<'_>>,
    opts: &LoadOptions,
) -> Result<Trace, LoadError> {
    match sniff::sniff_stream(head) {
        Format::Json => match reopen {
            Some(again) => {
                let input = kineto::Input::Reopenable {
                    stream: input,
                    again,
                };
                kineto::read_from(input, path, compressed, &opts.kineto)
            }
            None => kineto::read(input, path, compressed, &opts.kineto),
        },
        // SQLite reads files: open the path itself unless the bytes came through stdin or gzip
        Format::NsysSqlite if path != "-" && compressed.is_none() => {
            drop(input);
            nsys::read_file(Path::new(path), path, None, opts.kineto.threads)
        }
        Format::NsysSqlite => nsys::read_stream(input, path, compressed, opts.kineto.threads),
        Format::NsysRep => nsys::read_rep(path, head, opts.kineto.threads),
        Format::Empty => Err(LoadError::at(path, 0, "empty file".into())),
        other => Err(LoadError::at(path, 0, other.unsupported_message())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A copy of a sample in a fresh temporary folder, removed on drop.
    struct Temp(PathBuf);

    impl Temp {
        fn copy(tag: &str, sample: &str) -> (Self, String) {
            let dir = std::env::temp_dir()
                .join(format!("stallscope-progress-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let from = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("samples")
                .join(sample);
            let to = dir.join(sample);
            std::fs::copy(&from, &to).unwrap();
            (Temp(dir), to.to_string_lossy().into_owned())
        }
    }

    impl Drop for Temp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Small blocks (many windows over a mapped file, overlapping where an event is carried
    /// over) and the caller's hidden bar.
    fn opts(bar: &indicatif::ProgressBar, no_mmap: bool) -> LoadOptions {
        let mut o = LoadOptions {
            progress_over: Some(0),
            progress: Some(bar.clone()),
            no_mmap,
            ..LoadOptions::default()
        };
        o.kineto.block_size = 4096;
        o.kineto.threads = 2;
        o
    }

    fn size(path: &str) -> u64 {
        std::fs::metadata(path).unwrap().len()
    }

    /// A shared bar advances by the file's size (compressed for gzip), is neither given a
    /// length nor finished, and a second load adds as much again.
    fn advances_by_size(tag: &str, sample: &str, no_mmap: bool) {
        let (_dir, path) = Temp::copy(tag, sample);
        let bar = indicatif::ProgressBar::hidden();
        let o = opts(&bar, no_mmap);
        load(&path, &o).unwrap();
        assert_eq!(bar.position(), size(&path), "{sample} no_mmap={no_mmap}");
        load(&path, &o).unwrap();
        assert_eq!(
            bar.position(),
            2 * size(&path),
            "{sample} no_mmap={no_mmap}"
        );
        assert_eq!(bar.length(), None);
        assert!(!bar.is_finished());
    }

    #[test]
    fn shared_bar_plain_file() {
        advances_by_size("plain", "h100_kineto_2026_format.json", true);
    }

    #[test]
    fn shared_bar_mapped_file() {
        advances_by_size("mapped", "h100_kineto_2026_format.json", false);
    }

    #[test]
    fn shared_bar_gzip_file() {
        advances_by_size("gz", "h100_bert_small.json.gz", false);
    }

    /// A gzip file is read in blocks cut without a scan; where a parser does not confirm a
    /// cut (arrays of objects across lines inside events), the open file is read again from
    /// its start, the scanned way: the same events as the plain file, scanned.
    #[test]
    fn gzip_chain_blocks_and_the_file_read_again() {
        use std::io::Write;
        let dir = std::env::temp_dir().join(format!("stallscope-gz-chain-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // the CPU events of a load (small blocks, two parsers), chained or scanned
        let cpu_events = |path: &Path, chain: bool| {
            let mut o = LoadOptions::default();
            o.kineto.block_size = 4096;
            o.kineto.threads = 2;
            o.kineto.chain = chain;
            let t = load(path.to_str().unwrap(), &o).unwrap();
            t.cpu
                .iter()
                .map(|e| (e.start, e.dur, t.name(e.name).to_string()))
                .collect::<Vec<_>>()
        };
        for nested in [false, true] {
            let events: Vec<String> = (0..3000)
                .map(|i| {
                    let args = if nested && i % 5 == 0 {
                        let objects: Vec<String> =
                            (0..8).map(|k| format!("\n    {{\"x\": {k}}}")).collect();
                        format!(", \"v\": [{}\n  ]", objects.join(","))
                    } else {
                        String::new()
                    };
                    format!(
                        "  {{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op_{}\", \
                         \"pid\": 1, \"tid\": 1, \"ts\": {}, \"dur\": 3, \
                         \"args\": {{\"External id\": {}{args}}}}}",
                        // names of many lengths: the blocks end at every place in an event
                        "x".repeat((i * 7 % 23) as usize),
                        1000 + 5 * i,
                        i + 1
                    )
                })
                .collect();
            let doc = format!(
                "{{\"traceEvents\": [\n{}\n],\n\"traceName\": \"t\"}}\n",
                events.join(",\n")
            );
            let plain = dir.join(format!("t-{nested}.json"));
            std::fs::write(&plain, &doc).unwrap();
            let gz = dir.join(format!("t-{nested}.json.gz"));
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(doc.as_bytes()).unwrap();
            std::fs::write(&gz, e.finish().unwrap()).unwrap();
            let scanned = cpu_events(&plain, false);
            assert_eq!(scanned.len(), 3000);
            assert_eq!(cpu_events(&gz, true), scanned, "nested={nested}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Loads in parallel add up on one bar; a file that fails still counts in full.
    #[test]
    fn shared_bar_parallel_and_failed_loads() {
        let (_a, plain) = Temp::copy("par-plain", "h100_kineto_2026_format.json");
        let (_b, gz) = Temp::copy("par-gz", "h100_bert_small.json.gz");
        let (_c, bad) = Temp::copy("par-bad", "h100_kineto_2026_format.json");
        // cut in the middle of the events: an error without --allow-truncated
        let bytes = std::fs::read(&bad).unwrap();
        std::fs::write(&bad, &bytes[..bytes.len() / 2]).unwrap();
        let bar = indicatif::ProgressBar::hidden();
        let o = opts(&bar, false);
        std::thread::scope(|s| {
            s.spawn(|| load(&plain, &o).unwrap());
            s.spawn(|| load(&gz, &o).unwrap());
            s.spawn(|| assert!(load(&bad, &o).is_err()));
        });
        assert_eq!(bar.position(), size(&plain) + size(&gz) + size(&bad));
    }
}
