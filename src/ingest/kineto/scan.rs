//! Finds the boundaries of the entries of `traceEvents` in a byte stream without parsing them.
//!
//! The scanner walks the top-level object (or a bare array of events, the old autograd export)
//! and yields one [`Item`] per event object and per other top-level value. Inside an event it
//! only tracks braces and string state, jumping with SIMD `memchr` to the next interesting byte,
//! so it runs several times faster than the parser that later reads each event. Work is
//! resumable: when an item is not complete in the buffer, [`Scanner::next`] reports
//! [`Step::NeedMore`] without changing state, and the caller retries from the same position
//! once more bytes are appended.
//!
//! Real traces contain strings with unescaped quotes (Python names). A closing quote that is
//! not followed by `:`, `,`, `}` or `]` is taken as part of the string and the event is marked
//! for repair, so one bad name cannot desynchronize the rest of the file.

use memchr::{memchr2, memchr3};

/// What the scanner found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// One entry of `traceEvents`: `buf[start..end]` is a JSON object.
    Event {
        /// Offset of `{`.
        start: usize,
        /// Offset after `}`.
        end: usize,
        /// The scanner saw an unescaped quote inside a string.
        repair: bool,
    },
    /// A top-level member other than `traceEvents`: `buf[start..end]` is its JSON value.
    TopValue {
        /// Member name.
        key: String,
        /// Offset of the value's first byte.
        start: usize,
        /// Offset after the value.
        end: usize,
    },
}

/// Result of one scanning step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// An item, and the position to continue from.
    Item(Item, usize),
    /// The item starting at the given position is not complete in the buffer.
    NeedMore(usize),
    /// The document is complete; the position after it.
    Done(usize),
}

/// A structural error, at an offset into the buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanError {
    /// Buffer offset of the offending byte.
    pub offset: usize,
    /// What was expected.
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Doc,
    Key,
    Colon,
    Value,
    ObjCommaOrEnd,
    Elem { in_object: bool },
    ElemCommaOrEnd { in_object: bool },
    Done,
}

/// Resumable scanner state (between items).
#[derive(Debug, Clone)]
pub struct Scanner {
    state: State,
    key: String,
    /// True once the document turned out to be an object or array of events.
    pub saw_events: bool,
}

impl Default for Scanner {
    fn default() -> Self {
        Self::new()
    }
}

fn skip_ws(buf: &[u8], mut i: usize) -> usize {
    while i < buf.len() && matches!(buf[i], b' ' | b'\n' | b'\r' | b'\t') {
        i += 1;
    }
    i
}

/// Skips a JSON string starting at `buf[i] == b'"'`. Returns the offset after the closing
/// quote, or `None` when the buffer ends first. Sets `repair` on unescaped inner quotes.
#[inline]
fn skip_string(buf: &[u8], mut i: usize, eof: bool, repair: &mut bool) -> Option<usize> {
    i += 1;
    loop {
        if i >= buf.len() {
            return None;
        }
        let k = memchr2(b'"', b'\\', &buf[i..])?;
        i += k;
        if buf[i] == b'\\' {
            i += 2;
            continue;
        }
        // closing quote candidate: what follows must end a key or a value
        let j = skip_ws(buf, i + 1);
        if j >= buf.len() {
            if eof {
                return Some(i + 1);
            }
            return None;
        }
        match buf[j] {
            b':' | b',' | b'}' | b']' => return Some(i + 1),
            _ => {
                *repair = true;
                i += 1;
            }
        }
    }
}

/// Skips an object or array starting at `buf[i]`. Returns the end offset, or `None`.
#[inline]
fn skip_container(buf: &[u8], mut i: usize, eof: bool, repair: &mut bool) -> Option<usize> {
    let (open, close) = if buf[i] == b'{' {
        (b'{', b'}')
    } else {
        (b'[', b']')
    };
    let mut depth = 0usize;
    loop {
        if i >= buf.len() {
            return None;
        }
        let k = memchr3(b'"', open, close, &buf[i..])?;
        i += k;
        let c = buf[i];
        if c == b'"' {
            i = skip_string(buf, i, eof, repair)?;
        } else if c == open {
            depth += 1;
            i += 1;
        } else {
            depth -= 1;
            i += 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
}

/// Skips a scalar (number, literal, or a bare token such as `N/A`).
fn skip_scalar(buf: &[u8], mut i: usize, eof: bool) -> Option<usize> {
    while i < buf.len() {
        match buf[i] {
            b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t' => return Some(i),
            _ => i += 1,
        }
    }
    if eof {
        Some(i)
    } else {
        None
    }
}

fn skip_value(buf: &[u8], i: usize, eof: bool, repair: &mut bool) -> Option<usize> {
    match buf[i] {
        b'{' | b'[' => skip_container(buf, i, eof, repair),
        b'"' => skip_string(buf, i, eof, repair),
        _ => skip_scalar(buf, i, eof),
    }
}

impl Scanner {
    /// A scanner at the start of a document.
    pub fn new() -> Self {
        Scanner {
            state: State::Doc,
            key: String::new(),
            saw_events: false,
        }
    }

    /// True once the closing bracket of the document was seen.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Scans from `pos` for the next item. `eof` says no more bytes will follow `buf`.
    pub fn next(&mut self, buf: &[u8], mut pos: usize, eof: bool) -> Result<Step, ScanError> {
        loop {
            let i = skip_ws(buf, pos);
            if i >= buf.len() {
                return Ok(if self.state == State::Done {
                    Step::Done(i)
                } else {
                    Step::NeedMore(pos)
                });
            }
            let c = buf[i];
            let err = |msg: &str| ScanError {
                offset: i,
                message: msg.to_string(),
            };
            match self.state {
                State::Doc => match c {
                    b'{' => {
                        self.state = State::Key;
                        pos = i + 1;
                    }
                    b'[' => {
                        self.saw_events = true;
                        self.state = State::Elem { in_object: false };
                        pos = i + 1;
                    }
                    0xEF if buf[i..].starts_with(&[0xEF, 0xBB, 0xBF]) => pos = i + 3,
                    _ => return Err(err("expected a JSON object or array")),
                },
                State::Key => match c {
                    b'"' => {
                        let mut rep = false;
                        let Some(end) = skip_string(buf, i, eof, &mut rep) else {
                            return Ok(Step::NeedMore(pos));
                        };
                        let raw = &buf[i..end];
                        self.key = serde_json::from_slice::<String>(raw)
                            .unwrap_or_else(|_| String::from_utf8_lossy(&raw[1..raw.len() - 1]).into());
                        self.state = State::Colon;
                        pos = end;
                    }
                    b'}' => {
                        self.state = State::Done;
                        return Ok(Step::Done(i + 1));
                    }
                    _ => return Err(err("expected a member name")),
                },
                State::Colon => {
                    if c != b':' {
                        return Err(err("expected ':'"));
                    }
                    self.state = State::Value;
                    pos = i + 1;
                }
                State::Value => {
                    if self.key == "traceEvents" && c == b'[' {
                        self.saw_events = true;
                        self.state = State::Elem { in_object: true };
                        pos = i + 1;
                        continue;
                    }
                    let mut rep = false;
                    let Some(end) = skip_value(buf, i, eof, &mut rep) else {
                        return Ok(Step::NeedMore(pos));
                    };
                    self.state = State::ObjCommaOrEnd;
                    let key = std::mem::take(&mut self.key);
                    return Ok(Step::Item(
                        Item::TopValue {
                            key,
                            start: i,
                            end,
                        },
                        end,
                    ));
                }
                State::ObjCommaOrEnd => match c {
                    b',' => {
                        self.state = State::Key;
                        pos = i + 1;
                    }
                    b'}' => {
                        self.state = State::Done;
                        return Ok(Step::Done(i + 1));
                    }
                    _ => return Err(err("expected ',' or '}' after a member")),
                },
                State::Elem { in_object } => match c {
                    b']' => {
                        pos = i + 1;
                        if in_object {
                            self.state = State::ObjCommaOrEnd;
                        } else {
                            self.state = State::Done;
                            return Ok(Step::Done(pos));
                        }
                    }
                    b'{' => {
                        let mut repair = false;
                        let Some(end) = skip_container(buf, i, eof, &mut repair) else {
                            return Ok(Step::NeedMore(pos));
                        };
                        self.state = State::ElemCommaOrEnd { in_object };
                        return Ok(Step::Item(
                            Item::Event {
                                start: i,
                                end,
                                repair,
                            },
                            end,
                        ));
                    }
                    b',' => pos = i + 1, // tolerate empty slots / double commas
                    _ => {
                        // a non-object element: skip it
                        let mut rep = false;
                        let Some(end) = skip_value(buf, i, eof, &mut rep) else {
                            return Ok(Step::NeedMore(pos));
                        };
                        self.state = State::ElemCommaOrEnd { in_object };
                        pos = end;
                    }
                },
                State::ElemCommaOrEnd { in_object } => match c {
                    b',' => {
                        self.state = State::Elem { in_object };
                        pos = i + 1;
                    }
                    b']' => {
                        self.state = State::Elem { in_object };
                        pos = i; // let Elem handle the close
                    }
                    b'{' => {
                        // missing comma between events: tolerate
                        self.state = State::Elem { in_object };
                        pos = i;
                    }
                    _ => return Err(err("expected ',' or ']' after an event")),
                },
                State::Done => return Ok(Step::Done(i)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_all(doc: &[u8]) -> Vec<Item> {
        let mut s = Scanner::new();
        let mut pos = 0;
        let mut out = vec![];
        loop {
            match s.next(doc, pos, true).unwrap() {
                Step::Item(it, p) => {
                    out.push(it);
                    pos = p;
                }
                Step::Done(_) => break,
                Step::NeedMore(p) => panic!("need more at {p}"),
            }
        }
        out
    }

    #[test]
    fn finds_events_and_top_values() {
        let doc = br#"{"schemaVersion": 1, "traceEvents": [ {"name": "a{", "x": {"y": "}"}}, {"n": "b\"}"} ], "deviceProperties": [{"id": 0}]}"#;
        let items = scan_all(doc);
        assert_eq!(items.len(), 4);
        match &items[1] {
            Item::Event { start, end, repair } => {
                assert_eq!(&doc[*start..*end], br#"{"name": "a{", "x": {"y": "}"}}"#);
                assert!(!repair);
            }
            _ => panic!(),
        }
        match &items[3] {
            Item::TopValue { key, start, end } => {
                assert_eq!(key, "deviceProperties");
                assert_eq!(&doc[*start..*end], br#"[{"id": 0}]"#);
            }
            _ => panic!(),
        }
    }

    #[test]
    fn resumes_after_partial_buffer() {
        let doc = br#"{"traceEvents": [{"a": 1}, {"b": "xyz"}]}"#;
        let mut s = Scanner::new();
        let cut = 30; // inside the second event
        let mut pos = 0;
        let mut n = 0;
        loop {
            match s.next(&doc[..cut], pos, false).unwrap() {
                Step::Item(_, p) => {
                    n += 1;
                    pos = p
                }
                Step::NeedMore(p) => {
                    pos = p;
                    break;
                }
                Step::Done(_) => panic!(),
            }
        }
        assert_eq!(n, 1);
        match s.next(doc, pos, true).unwrap() {
            Step::Item(Item::Event { start, end, .. }, _) => {
                assert_eq!(&doc[start..end], br#"{"b": "xyz"}"#)
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unescaped_quote_marks_repair() {
        let doc = br#"[{"name": "say "hi" now", "ph": "X"}, {"name": "ok"}]"#;
        let items = scan_all(doc);
        assert_eq!(items.len(), 2);
        assert!(matches!(items[0], Item::Event { repair: true, .. }));
        assert!(matches!(items[1], Item::Event { repair: false, .. }));
    }

    #[test]
    fn rejects_non_json() {
        let mut s = Scanner::new();
        assert!(s.next(b"hello", 0, true).is_err());
    }
}
