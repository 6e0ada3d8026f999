//! Readers: one module per input format, and [`sniff`] to tell them apart by content.
//!
//! [`load`] is the entry point: it opens a path (or `-` for standard input), undoes gzip when
//! the magic bytes say so (never by extension), recognises the format and hands the byte
//! stream to the matching reader, which fills a [`crate::model::Trace`].

pub mod folder;
pub mod kineto;
pub mod ncu;
pub mod nsys;
pub mod sniff;

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

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
    /// Read uncompressed Kineto files with `read` into buffers instead of through a memory map
    /// (the map saves a copy of every byte; both give the same trace).
    pub no_mmap: bool,
}

/// Counts compressed bytes as they are read (for progress and for the report).
struct Counting<R> {
    inner: R,
    bar: Option<indicatif::ProgressBar>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(b) = &self.bar {
            b.inc(n as u64);
        }
        Ok(n)
    }
}

fn progress_bar(len: u64, path: &str) -> indicatif::ProgressBar {
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
    let short = Path::new(path)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string());
    bar.set_message(format!("reading {short}"));
    bar
}

/// Opens, sniffs and reads one input.
pub fn load(path: &str, opts: &LoadOptions) -> Result<Trace, LoadError> {
    use std::io::IsTerminal;
    // a second handle on a regular file, for the memory map
    let mut mappable: Option<File> = None;
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
        (Box::new(f), meta.map(|m| m.len()))
    };
    let bar = match (opts.progress_over, len) {
        (Some(min), Some(l)) if l > min && io::stderr().is_terminal() => {
            Some(progress_bar(l, path))
        }
        _ => None,
    };
    let counting = Counting {
        inner: raw,
        bar: bar.clone(),
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
        let mut decoder =
            BufReader::with_capacity(64 << 10, flate2::bufread::MultiGzDecoder::new(buffered));
        let head = decoder
            .fill_buf()
            .map_err(|e| LoadError::io(path, e))?
            .to_vec();
        dispatch(decoder, &head, path, len, opts)
    } else if let (Some(file), Some(len), Format::Json) = (&mappable, len, sniff::sniff(head)) {
        let source: kineto::Input<'_, io::Empty> = kineto::Input::Mapped {
            file,
            len,
            progress: bar.clone(),
        };
        kineto::read_from(source, path, None, &opts.kineto)
    } else {
        let head = head.to_vec();
        dispatch(buffered, &head, path, None, opts)
    };
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    result
}

fn dispatch<R: Read + Send>(
    input: R,
    head: &[u8],
    path: &str,
    compressed: Option<u64>,
    opts: &LoadOptions,
) -> Result<Trace, LoadError> {
    match sniff::sniff(head) {
        Format::Json => kineto::read(input, path, compressed, &opts.kineto),
        // SQLite reads files: open the path itself unless the bytes came through stdin or gzip
        Format::NsysSqlite if path != "-" && compressed.is_none() => {
            drop(input);
            nsys::read_file(Path::new(path), path, None)
        }
        Format::NsysSqlite => nsys::read_stream(input, path, compressed),
        Format::NsysRep => nsys::read_rep(path, head),
        Format::Empty => Err(LoadError::at(path, 0, "empty file".into())),
        other => Err(LoadError::at(path, 0, other.unsupported_message())),
    }
}
