//! Repairs the invalid JSON that real traces contain, one event at a time.
//!
//! Only events that the strict parser rejected come here, so the fast path pays nothing.
//! Fixes: invalid UTF-8 (replaced by U+FFFD), raw control characters inside strings
//! (escaped), unescaped quotes inside strings (escaped, same rule as the scanner: a quote
//! that is not followed by `:` `,` `}` or `]` does not close the string), and bare tokens
//! such as `N/A`, `NaN`, `inf` where a value is expected (replaced by `null`).

/// What a repair changed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Fixes {
    /// Invalid UTF-8 was replaced.
    pub invalid_utf8: bool,
    /// Raw control characters were escaped.
    pub control_chars: bool,
    /// Unescaped quotes were escaped.
    pub quotes: bool,
    /// Bare non-JSON tokens were replaced by null.
    pub bare_tokens: bool,
}

impl Fixes {
    /// True when anything was changed.
    pub fn any(&self) -> bool {
        self.invalid_utf8 || self.control_chars || self.quotes || self.bare_tokens
    }
}

fn next_non_ws(b: &[u8], mut i: usize) -> Option<u8> {
    while i < b.len() {
        if !matches!(b[i], b' ' | b'\n' | b'\r' | b'\t') {
            return Some(b[i]);
        }
        i += 1;
    }
    None
}

fn is_json_scalar(tok: &[u8]) -> bool {
    if tok == b"true" || tok == b"false" || tok == b"null" {
        return true;
    }
    // JSON number grammar, loosely: digits, sign, dot, exponent, and at least one digit
    !tok.is_empty()
        && tok.iter().any(|c| c.is_ascii_digit())
        && tok
            .iter()
            .all(|c| c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b'e' | b'E'))
        && tok
            .first()
            .map(|c| c.is_ascii_digit() || *c == b'-')
            .unwrap_or(false)
}

/// Returns a repaired copy of one event's bytes and what was fixed.
pub fn repair(input: &[u8]) -> (Vec<u8>, Fixes) {
    let mut fixes = Fixes::default();
    let text = match std::str::from_utf8(input) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => {
            fixes.invalid_utf8 = true;
            String::from_utf8_lossy(input)
        }
    };
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len() + 16);
    let mut i = 0;
    let mut in_str = false;
    while i < b.len() {
        let c = b[i];
        if in_str {
            match c {
                b'\\' => {
                    out.push(c);
                    if i + 1 < b.len() {
                        out.push(b[i + 1]);
                    }
                    i += 2;
                    continue;
                }
                b'"' => {
                    match next_non_ws(b, i + 1) {
                        Some(b':' | b',' | b'}' | b']') | None => {
                            in_str = false;
                            out.push(c);
                        }
                        _ => {
                            fixes.quotes = true;
                            out.extend_from_slice(b"\\\"");
                        }
                    }
                    i += 1;
                    continue;
                }
                0x00..=0x1f => {
                    fixes.control_chars = true;
                    out.extend_from_slice(format!("\\u{:04x}", c).as_bytes());
                    i += 1;
                    continue;
                }
                _ => {
                    out.push(c);
                    i += 1;
                    continue;
                }
            }
        }
        match c {
            b'"' => {
                in_str = true;
                out.push(c);
                i += 1;
            }
            b'{' | b'}' | b'[' | b']' | b',' | b':' | b' ' | b'\n' | b'\r' | b'\t' => {
                out.push(c);
                i += 1;
            }
            _ => {
                let start = i;
                while i < b.len()
                    && !matches!(
                        b[i],
                        b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t' | b'"' | b':'
                    )
                {
                    i += 1;
                }
                let tok = &b[start..i];
                if is_json_scalar(tok) {
                    out.extend_from_slice(tok);
                } else {
                    fixes.bare_tokens = true;
                    out.extend_from_slice(b"null");
                }
            }
        }
    }
    (out, fixes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repairs_each_quirk() {
        let raw = b"{\"name\": \"a\tb \"q\" \xff end\", \"v\": N/A, \"w\": NaN, \"x\": -1.5e3}";
        let (fixed, f) = repair(raw);
        assert!(f.invalid_utf8 && f.control_chars && f.quotes && f.bare_tokens);
        let v: serde_json::Value = serde_json::from_slice(&fixed).unwrap();
        assert_eq!(v["name"], "a\tb \"q\" \u{fffd} end");
        assert!(v["v"].is_null() && v["w"].is_null());
        assert_eq!(v["x"], -1500.0);
    }

    #[test]
    fn valid_json_is_unchanged() {
        let raw = br#"{"a": [1, 2.5, true, null], "b": "x\"y"}"#;
        let (fixed, f) = repair(raw);
        assert!(!f.any());
        assert_eq!(&fixed[..], &raw[..]);
    }
}
