//! Limits that bound the memory and time a read may take, whatever the bytes.
//!
//! The readers stream: memory grows with what is kept (events, names, threads), never with
//! what surrounds it (whitespace, skipped members). A few things cannot be streamed, and each
//! has a limit here: one JSON value (an event, or a top-level member such as
//! `deviceProperties`) must be whole in memory to be parsed; distinct names are kept for the
//! whole read; a gzip stream may inflate to any size. A limit that trips is a one-line error
//! naming the limit, the file and the byte offset, and how to raise it (`--limit NAME=VALUE`,
//! or `--max-inflate` for the decompression limits).
//!
//! The defaults never trip on real traces: a Kineto event is at most a few kilobytes (the
//! largest in the corpus is 7 kB; a top-level member 40 MB), a trace has at most some
//! hundred thousand distinct names (each costs about 0.5 kB from reading to the report: a
//! million take about 500 MB), and Kineto JSON compresses 10 to 20 times.

use std::fmt;

/// Limits of one read (see the module documentation). [`Limits::default`] are the defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of one JSON value that must be read whole: an event, or a top-level member.
    pub value_bytes: u64,
    /// Bytes of a top-level member that is parsed (`deviceProperties`, `distributedInfo`):
    /// a larger one is ignored with a warning.
    pub header_bytes: u64,
    /// Distinct names (operators, kernels, annotations, ...) in one trace.
    pub names: u64,
    /// Inflated bytes per compressed byte of a gzip input, checked once the inflated size
    /// passes `inflate_floor`.
    pub inflate_ratio: u64,
    /// A gzip input may always inflate to this size: the ratio limit applies beyond it, so
    /// small synthetic files (which compress far better than real traces) are never refused.
    pub inflate_floor: u64,
    /// Inflated bytes of a gzip input, whatever its compressed size.
    pub inflate_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            value_bytes: 128 << 20,
            header_bytes: 16 << 20,
            names: 1_000_000,
            inflate_ratio: 100,
            inflate_floor: 1 << 30,
            inflate_bytes: 64 << 30,
        }
    }
}

/// The names `--limit` accepts, what each bounds, and its field.
const NAMES: [(&str, &str); 6] = [
    ("value-bytes", "bytes of one event or top-level JSON value"),
    (
        "header-bytes",
        "bytes of a parsed top-level member (deviceProperties, ...)",
    ),
    ("names", "distinct names in one trace"),
    (
        "inflate-ratio",
        "inflated bytes per gzip byte (past inflate-floor)",
    ),
    (
        "inflate-floor",
        "inflated bytes before inflate-ratio applies",
    ),
    ("inflate-bytes", "inflated bytes of a gzip input"),
];

impl Limits {
    fn field(&mut self, name: &str) -> Option<&mut u64> {
        Some(match name {
            "value-bytes" => &mut self.value_bytes,
            "header-bytes" => &mut self.header_bytes,
            "names" => &mut self.names,
            "inflate-ratio" => &mut self.inflate_ratio,
            "inflate-floor" => &mut self.inflate_floor,
            "inflate-bytes" => &mut self.inflate_bytes,
            _ => return None,
        })
    }

    /// Applies one `NAME=VALUE` of `--limit` (sizes take K, M, G suffixes: powers of 1024).
    pub fn set(&mut self, spec: &str) -> Result<(), String> {
        let (name, value) = spec
            .split_once('=')
            .ok_or_else(|| format!("--limit {spec}: expected NAME=VALUE ({})", list()))?;
        let name = name.trim();
        let v = parse_size(value.trim()).map_err(|e| format!("--limit {spec}: {e}"))?;
        let field = self
            .field(name)
            .ok_or_else(|| format!("--limit {spec}: unknown limit `{name}` ({})", list()))?;
        *field = v;
        Ok(())
    }

    /// Applies `--max-inflate SPEC`: `RATIOx`, `SIZE` or both, comma-separated (`200x,100G`).
    pub fn set_max_inflate(&mut self, spec: &str) -> Result<(), String> {
        for part in spec.split(',').map(str::trim) {
            if let Some(r) = part.strip_suffix(['x', 'X']) {
                self.inflate_ratio = r
                    .parse::<u64>()
                    .ok()
                    .filter(|&r| r > 0)
                    .ok_or_else(|| format!("--max-inflate {spec}: bad ratio `{part}`"))?;
            } else {
                self.inflate_bytes =
                    parse_size(part).map_err(|e| format!("--max-inflate {spec}: {e}"))?;
            }
        }
        Ok(())
    }

    /// The message of a tripped limit: what was exceeded and the flag that raises it.
    pub fn exceeded(name: &str, value: u64, what: &str) -> String {
        let flag = if name.starts_with("inflate-") {
            "--max-inflate".to_string()
        } else {
            format!("--limit {name}=…")
        };
        format!("{what}: over the limit {name}={value} (raise it with {flag})")
    }
}

/// The limits and what they bound, for error messages.
fn list() -> String {
    NAMES
        .iter()
        .map(|(n, what)| format!("{n}: {what}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// `123`, `64K`, `128M`, `4G` (powers of 1024; a trailing `B` or `iB` is accepted).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim_end_matches(['B', 'b']).trim_end_matches('i');
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m: u64 = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                _ => return Err(format!("bad size `{s}` (use a number, or K, M, G, T)")),
            };
            (&t[..i], m)
        }
        _ => (t, 1),
    };
    let n: u64 = num
        .trim()
        .parse()
        .map_err(|_| format!("bad number `{s}`"))?;
    n.checked_mul(mult)
        .filter(|&v| v > 0)
        .ok_or_else(|| format!("bad size `{s}` (must be positive)"))
}

impl fmt::Display for Limits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "value-bytes={} header-bytes={} names={} inflate-ratio={} inflate-floor={} \
             inflate-bytes={}",
            self.value_bytes,
            self.header_bytes,
            self.names,
            self.inflate_ratio,
            self.inflate_floor,
            self.inflate_bytes
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_flags() {
        let mut l = Limits::default();
        l.set("value-bytes=1G").unwrap();
        l.set("names = 10").unwrap();
        assert_eq!(l.value_bytes, 1 << 30);
        assert_eq!(l.names, 10);
        l.set_max_inflate("500x,2GiB").unwrap();
        assert_eq!((l.inflate_ratio, l.inflate_bytes), (500, 2 << 30));
        assert!(l
            .set("depth=3")
            .unwrap_err()
            .contains("unknown limit `depth`"));
        assert!(l.set("names").is_err());
        assert!(l.set("names=0").is_err());
        assert!(l.set_max_inflate("0x").is_err());
        assert_eq!(parse_size("64k").unwrap(), 64 << 10);
    }
}
