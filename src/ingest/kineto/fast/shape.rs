//! Learned event shapes: the fast parser's fast path.
//!
//! libkineto writes each kind of event with the same bytes around its values: the same keys
//! in the same order, the same commas, spaces, newlines and indentation. Only the values
//! change (`"ts": 1669783687389324`, a kernel's name, ...). The **shape** of an event is that
//! skeleton: the literal bytes between its values, and for each value what it is (which
//! member: `ts`, `args.correlation`, a member stallscope skips, ...). Values that are the
//! same in every event of a kind are part of the literal and read out of it when it matches:
//! `ph`, `cat`, `pid` and `tid` (a process and a thread, or a device and a stream: a few
//! per trace), the `name` of flows and instants, `bp` and `s`.
//!
//! A parser thread learns the shape of every event the general parser ([`Cur::event`]) reads
//! and keeps the shapes in a radix trie ([`Shapes`]): from the root, each node is a literal
//! and the value that follows it; events of one kind follow one path; siblings differ in
//! their first byte. The next event is read by walking the trie: at each node, the child
//! whose literal the bytes start with (one 8-byte comparison per word of literal, where the
//! general parser runs whitespace, a key scan and a key dispatch per member), then the
//! value, read by the very routine the general parser uses for that member. An event whose
//! bytes leave the trie (a new kind, a new thread, other whitespace, another order of keys)
//! is read by the general parser from its start, and its shape is learned. At 215 MB of a
//! libkineto trace: 13 of 216 k events of the base trace leave the trie, and the whole run
//! takes 671 M instructions instead of 770 M.
//!
//! The result is the general parser's: a literal that matches byte for byte means the same
//! keys in the same order with the same separators and the same constant values, so the
//! general parser would have called the same value routines on the same bytes, in the same
//! order, with the same resets of the event's fields. Shapes are learned only from events the
//! general parser read, and only when every key and every constant string is plain (no
//! escapes).

use std::borrow::Cow;

use super::{reset_members, Cur};
use crate::ingest::kineto::event::{ArgSlot, BStr, RawArgs, RawEvent};

/// What follows a literal of a shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Act {
    /// Values of the members of the event that stallscope reads.
    Ph,
    Cat,
    Name,
    Pid,
    Tid,
    Ts,
    Dur,
    Id,
    /// An `args` value that is not an object (left to [`Cur::args`]).
    Args,
    /// The `{` of the `args` object was the literal's last byte: the event's args start over.
    ArgsOpen,
    /// A member stallscope does not read (validated and skipped).
    Skip,
    /// A member of `args` stallscope reads: [`RawArgs::slot_index`].
    Arg(u8),
    /// The literal goes on in the next node (literals longer than [`LIT_MAX`]).
    More,
    /// The literal closed the event.
    End,
}

impl Act {
    /// Whether a value starts right after the literal (which must then have taken all the
    /// whitespace before it, as the general parser does).
    fn reads_value(self) -> bool {
        !matches!(self, Act::ArgsOpen | Act::More | Act::End)
    }
}

/// Literals of at most this many bytes fit in a node; longer ones are split ([`Act::More`]).
// (64: libkineto's literals between two values run to 40-60 bytes with the pretty-printer's
// indentation, `, "pid": 783658, "tid": 785244,\n    "ts": `; at 32 each took two nodes:
// dfi-100M 1,537 -> 1,496 M instructions, every report identical)
const LIT_MAX: usize = 64;

/// A node of the trie: the literal that leads to it (in 8-byte words, zero padded), what
/// follows the literal, the node after that (its first child) and the next alternative to
/// this node (its sibling).
struct Node {
    words: [u64; LIT_MAX / 8],
    /// Number of words of the literal (at least one: literals are never empty).
    nwords: u8,
    len: u8,
    /// The bytes of the last word that belong to the literal.
    last_mask: u64,
    act: Act,
    /// [`Act::reads_value`].
    value: bool,
    /// Values the literal holds.
    caps: Box<[Capture]>,
    child: u32,
    sibling: u32,
}

const NONE: u32 = u32::MAX;

impl Node {
    fn new(lit: &[u8], act: Act, caps: Vec<Capture>) -> Node {
        debug_assert!(!lit.is_empty() && lit.len() <= LIT_MAX);
        let mut words = [0u64; LIT_MAX / 8];
        for (j, chunk) in lit.chunks(8).enumerate() {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            words[j] = u64::from_le_bytes(w);
        }
        let tail = lit.len() - (lit.len() - 1) / 8 * 8;
        Node {
            words,
            nwords: lit.len().div_ceil(8) as u8,
            len: lit.len() as u8,
            last_mask: if tail == 8 {
                u64::MAX
            } else {
                (1u64 << (8 * tail)) - 1
            },
            act,
            value: act.reads_value(),
            caps: caps.into_boxed_slice(),
            child: NONE,
            sibling: NONE,
        }
    }

    fn lit(&self) -> Vec<u8> {
        let bytes: Vec<u8> = self.words.iter().flat_map(|w| w.to_le_bytes()).collect();
        bytes[..self.len as usize].to_vec()
    }

    /// Whether `b[i..]` starts with the node's literal: one 8-byte load and comparison per
    /// word (the last one masked).
    #[inline(always)]
    fn matches(&self, b: &[u8], i: usize) -> bool {
        let last = self.nwords as usize - 1;
        if i + 8 * (last + 1) > b.len() {
            // near the end of the buffer: bytewise
            return b.get(i..i + self.len as usize).is_some_and(|s| {
                s.iter()
                    .enumerate()
                    .all(|(j, &x)| x == (self.words[j / 8] >> (8 * (j % 8))) as u8)
            });
        }
        // SAFETY: every load reads b[i + 8k..i + 8k + 8] with k <= last, inside `b` (checked
        // above); unaligned reads of plain bytes.
        let word = |k: usize| unsafe {
            u64::from_le(std::ptr::read_unaligned(
                b.as_ptr().add(i + 8 * k) as *const u64
            ))
        };
        for k in 0..last {
            if word(k) != self.words[k] {
                return false;
            }
        }
        (word(last) ^ self.words[last]) & self.last_mask == 0
    }
}

/// The shapes a parser thread learned (see the module documentation).
pub struct Shapes {
    /// The trie; node 0 is the root (no literal), its children the first literals.
    nodes: Vec<Node>,
    /// Events whose shape was looked at: learning stops after [`MAX_LEARNED`], so a trace of
    /// ever new shapes costs the general parser and no more.
    learned: u32,
    /// Events the walk was asked to read ([`Shapes::event`]), for the sampling of [`Shapes::hits`].
    walked: u32,
    /// Per node, the walks that went through it among the sampled events since the last
    /// [`Shapes::reorder`] (empty between samples).
    hits: Vec<u32>,
}

/// Siblings are tried in the order the events took them most: of every [`SAMPLE_EVERY`] events
/// a walk reads, the first [`SAMPLED`] count the nodes they go through, and the siblings are
/// then reordered by those counts ([`Shapes::reorder`]). A trace's kinds of events change along
/// the file (libkineto writes the host's spans, then the device's activities), so the order
/// follows them; the counting costs a few instructions in one event of 64.
// (dfi-100M: 4 of the 15 nodes a walk tried per event were siblings it missed, the longest
// literal being tried first, whatever the events' kinds)
const SAMPLE_EVERY: u32 = 1 << 16;
const SAMPLED: u32 = 1 << 10;

/// Limits that keep the trie small (a few kinds of events need a few hundred nodes).
const MAX_NODES: usize = 1 << 14;
const MAX_CHILDREN: usize = 16;
const MAX_LEARNED: u32 = 4096;

impl Default for Shapes {
    fn default() -> Self {
        Shapes {
            // the root: its literal is never compared
            nodes: vec![Node::new(b"{", Act::More, Vec::new())],
            learned: 0,
            walked: 0,
            hits: Vec::new(),
        }
    }
}

impl Shapes {
    /// Reads the event at the cursor (on its `{`) through a learned shape into `e`; false
    /// when the bytes leave the trie or a value does not parse (the cursor and `e` are then
    /// unspecified: the caller starts over with the general parser).
    pub(super) fn event<'a>(&mut self, c: &mut Cur<'a>, e: &mut RawEvent<'a>) -> bool {
        let k = self.walked % SAMPLE_EVERY;
        self.walked = self.walked.wrapping_add(1);
        if k >= SAMPLED {
            return walk::<false>(&self.nodes, &mut [], c, e);
        }
        self.hits.resize(self.nodes.len(), 0);
        let read = walk_counted(&self.nodes, &mut self.hits, c, e);
        if k == SAMPLED - 1 {
            self.reorder();
        }
        read
    }

    /// Orders each node's children by [`Shapes::hits`], the most taken first, where the
    /// order cannot change what matches: when no two of them start with the same byte, at
    /// most one can match the bytes at the cursor. (Children that share a first byte, a
    /// literal and a longer one it begins, keep the longer one first; see [`Shapes::insert`].)
    fn reorder(&mut self) {
        let mut kids: Vec<u32> = Vec::new();
        for p in 0..self.nodes.len() {
            kids.clear();
            let mut k = self.nodes[p].child;
            while k != NONE {
                kids.push(k);
                k = self.nodes[k as usize].sibling;
            }
            if kids.len() < 2 {
                continue;
            }
            let mut firsts = [false; 256];
            let distinct = kids.iter().all(|&k| {
                let b = self.nodes[k as usize].words[0] as u8;
                !std::mem::replace(&mut firsts[b as usize], true)
            });
            if !distinct {
                continue;
            }
            let hits = &self.hits;
            kids.sort_by_key(|&k| std::cmp::Reverse(hits.get(k as usize).copied().unwrap_or(0)));
            self.nodes[p].child = kids[0];
            for w in kids.windows(2) {
                self.nodes[w[0] as usize].sibling = w[1];
            }
            self.nodes[*kids.last().unwrap() as usize].sibling = NONE;
        }
        self.hits.clear();
    }
}

/// [`walk`] counting the nodes it goes through, out of line: it reads one event of 64, and
/// the other walk keeps its registers.
#[inline(never)]
fn walk_counted<'a>(
    nodes: &[Node],
    hits: &mut [u32],
    c: &mut Cur<'a>,
    e: &mut RawEvent<'a>,
) -> bool {
    walk::<true>(nodes, hits, c, e)
}

/// [`Shapes::event`]'s walk of `nodes`, counting in `hits` the nodes it goes through when
/// `COUNT`.
#[inline(always)]
fn walk<'a, const COUNT: bool>(
    nodes: &[Node],
    hits: &mut [u32],
    c: &mut Cur<'a>,
    e: &mut RawEvent<'a>,
) -> bool {
    let mut n = nodes[0].child;
    if n == NONE {
        return false;
    }
    // the resets of `Cur::event_members`
    reset_members(e);
    let mut args_seen = false;
    loop {
        let node = &nodes[n as usize];
        if !node.matches(c.b, c.i) {
            n = node.sibling;
            if n == NONE {
                return false;
            }
            continue;
        }
        if COUNT {
            hits[n as usize] += 1;
        }
        c.i += node.len as usize;
        for cap in node.caps.iter() {
            let start = c.i - cap.back as usize;
            let text = c.text(start, start + cap.len as usize);
            match cap.act {
                Act::Ph => e.ph = BStr(Some(Cow::Borrowed(text))),
                Act::Cat => e.cat = BStr(Some(Cow::Borrowed(text))),
                Act::Name => e.name = BStr(Some(Cow::Borrowed(text))),
                Act::Pid => (e.pid, e.decoded.pid) = (Some(text), cap.value),
                _ => (e.tid, e.decoded.tid) = (Some(text), cap.value),
            }
        }
        // a value starts right after its literal, which took the whitespace before it
        // (as the general parser's `ws` does): any JSON value starts above b' '
        if node.value && !matches!(c.b.get(c.i), Some(&x) if x > b' ') {
            return false;
        }
        let read = match node.act {
            Act::Ph => c.bstr().map(|v| e.ph = v),
            Act::Cat => c.bstr().map(|v| e.cat = v),
            Act::Name => c.bstr().map(|v| e.name = v),
            Act::Pid => c.pid(e),
            Act::Tid => c.tid(e),
            Act::Ts => c.ts(e),
            Act::Dur => c.dur(e),
            Act::Id => c.raw().map(|v| e.id = Some(v)),
            Act::Args => {
                args_seen = true;
                c.args(&mut e.args)
            }
            Act::ArgsOpen => {
                args_seen = true;
                e.args.clear_hot();
                Some(())
            }
            Act::Skip => c.skip().map(|_| ()),
            Act::Arg(k) => match e.args.slot_noted(k) {
                ArgSlot::Num(v) => c.num().map(|x| *v = x),
                ArgSlot::Dim3(v) => c.dim3().map(|x| *v = x),
                ArgSlot::Str(v) => c.bstr().map(|x| *v = x),
                ArgSlot::Raw(v) => c.raw().map(|x| *v = Some(x)),
            },
            Act::More => Some(()),
            Act::End => {
                // the reset of `Cur::event` for events without `args`
                if !args_seen {
                    e.args.clear_hot();
                }
                return true;
            }
        };
        if read.is_none() {
            return false;
        }
        n = node.child;
        if n == NONE {
            return false;
        }
    }
}

impl Shapes {
    /// Learns the shape of `ev`, an event object the general parser just read (exactly its
    /// bytes, `{` to `}`).
    pub(super) fn learn(&mut self, ev: &str) {
        if self.learned >= MAX_LEARNED || self.nodes.len() >= MAX_NODES {
            return;
        }
        self.learned += 1;
        let Some(steps) = skeleton(ev) else {
            return;
        };
        let mut parent = 0usize;
        for Step { lit, caps, act } in steps {
            match self.insert(parent, lit, act, caps) {
                Some(k) => parent = k,
                // a path that ends here leaves the trie: such events take the general parser
                None => return,
            }
        }
    }

    /// Number of children of node `n`.
    fn children(&self, n: usize) -> usize {
        let mut k = self.nodes[n].child;
        let mut count = 0;
        while k != NONE {
            count += 1;
            k = self.nodes[k as usize].sibling;
        }
        count
    }

    /// The child of `parent` (or a descendant through literal-only nodes) that reads `lit`
    /// and then `act`, added when missing; `None` when the trie is full. The trie is kept a
    /// radix trie: a new literal that shares a first part with a child's splits that child,
    /// so siblings differ in their first byte (or one is a prefix of the other, which only
    /// trailing whitespace makes; the longer comes first) and a walk rejects a sibling on its
    /// first word.
    fn insert(
        &mut self,
        mut parent: usize,
        mut lit: Vec<u8>,
        act: Act,
        caps: Vec<Capture>,
    ) -> Option<usize> {
        'parent: loop {
            let mut k = self.nodes[parent].child;
            while k != NONE {
                let node = &self.nodes[k as usize];
                let old = node.lit();
                if node.act == act && old == lit {
                    return Some(k as usize);
                }
                let p = old.iter().zip(&lit).take_while(|(a, b)| a == b).count();
                if node.act == Act::More && p == old.len() && p < lit.len() {
                    // through a literal-only node
                    parent = k as usize;
                    lit.drain(..p);
                    continue 'parent;
                }
                if p > 0 && p < old.len() && p < lit.len() {
                    if self.nodes.len() + 2 > MAX_NODES {
                        return None;
                    }
                    // split: the node keeps the common part, a new node the rest of its
                    // literal with its act, captures (they count back from the end) and
                    // children
                    let mut tail = Node::new(&old[p..], node.act, node.caps.to_vec());
                    tail.child = node.child;
                    let t = self.nodes.len() as u32;
                    self.nodes.push(tail);
                    let sibling = self.nodes[k as usize].sibling;
                    let mut head = Node::new(&old[..p], Act::More, Vec::new());
                    head.child = t;
                    head.sibling = sibling;
                    self.nodes[k as usize] = head;
                    parent = k as usize;
                    lit.drain(..p);
                    continue 'parent;
                }
                k = node.sibling;
            }
            if lit.is_empty() || self.nodes.len() >= MAX_NODES {
                return None;
            }
            if self.children(parent) >= MAX_CHILDREN {
                // a walk tries the children one after another: past a few (many threads,
                // say), the general parser is as fast
                return None;
            }
            // a new child, before the first sibling with a shorter literal
            let new = self.nodes.len() as u32;
            self.nodes.push(Node::new(&lit, act, caps));
            let mut prev = NONE;
            let mut k = self.nodes[parent].child;
            while k != NONE && self.nodes[k as usize].len as usize >= lit.len() {
                prev = k;
                k = self.nodes[k as usize].sibling;
            }
            self.nodes[new as usize].sibling = k;
            if prev == NONE {
                self.nodes[parent].child = new;
            } else {
                self.nodes[prev as usize].sibling = new;
            }
            return Some(new as usize);
        }
    }
}

/// A value the literal holds (a member whose value is the same in every event of a kind:
/// `ph`, `cat`, `pid`, `tid`, and the `name` of flows and instants), read out of the matched
/// bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Capture {
    /// [`Act::Ph`], [`Act::Cat`] or [`Act::Name`] (the string's contents), [`Act::Pid`] or
    /// [`Act::Tid`] (the raw text).
    act: Act,
    /// Where the text starts, counted back from the end of the literal.
    back: u16,
    len: u16,
    /// `pid` and `tid`: the integer value of the text ([`Cur::raw_int`]).
    value: Option<i64>,
}

/// A step of a shape: a literal, the values it holds, and what follows it.
struct Step {
    lit: Vec<u8>,
    caps: Vec<Capture>,
    act: Act,
}

/// `steps` with every literal longer than [`LIT_MAX`] split into pieces joined by
/// [`Act::More`] (the captures stay with the last piece: they count back from its end).
fn split_long(steps: Vec<Step>) -> Vec<Step> {
    let mut out = Vec::with_capacity(steps.len());
    for st in steps {
        let mut rest = &st.lit[..];
        while rest.len() > LIT_MAX {
            out.push(Step {
                lit: rest[..LIT_MAX].to_vec(),
                caps: Vec::new(),
                act: Act::More,
            });
            rest = &rest[LIT_MAX..];
        }
        out.push(Step {
            lit: rest.to_vec(),
            caps: st.caps,
            act: st.act,
        });
    }
    out
}

/// The shape of an event object (`{` to `}`, read by the general parser, so valid): its
/// literals and what follows each. `None` for a key with escapes or any surprise.
fn skeleton(ev: &str) -> Option<Vec<Step>> {
    let mut k = Skeleton {
        c: Cur {
            s: ev,
            b: ev.as_bytes(),
            i: 0,
            args_seen: 0,
        },
        steps: Vec::new(),
        lit: Vec::new(),
        caps: Vec::new(),
        ph: None,
    };
    if k.c.peek()? != b'{' {
        return None;
    }
    k.lit.push(b'{');
    k.c.i += 1;
    k.object_rest(true)?;
    k.push(Act::End)?;
    (k.c.i == ev.len()).then(|| split_long(k.steps))
}

/// The state of [`skeleton`]: the steps so far and the literal in progress.
struct Skeleton<'a> {
    c: Cur<'a>,
    steps: Vec<Step>,
    lit: Vec<u8>,
    /// Captures of the literal in progress: (act, start in `lit`, length, integer value).
    caps: Vec<(Act, usize, usize, Option<i64>)>,
    /// The event's `ph`, once read.
    ph: Option<&'a [u8]>,
}

impl<'a> Skeleton<'a> {
    /// Whitespace at the cursor goes into the literal.
    fn ws(&mut self) {
        let from = self.c.i;
        self.c.ws();
        self.lit.extend_from_slice(&self.c.b[from..self.c.i]);
    }

    /// Ends the literal in progress with `act`; `None` when a capture is too far back
    /// (a literal of more than 64 KiB, made of a huge constant value).
    fn push(&mut self, act: Act) -> Option<()> {
        let lit = std::mem::take(&mut self.lit);
        let mut caps = Vec::with_capacity(self.caps.len());
        for (act, at, len, value) in self.caps.drain(..) {
            caps.push(Capture {
                act,
                back: u16::try_from(lit.len() - at).ok()?,
                len: u16::try_from(len).ok()?,
                value,
            });
        }
        self.steps.push(Step { lit, caps, act });
        Some(())
    }

    /// The rest of an object after its `{`: whitespace, then `}` or its members; `top` for
    /// the event itself, else `args`.
    fn object_rest(&mut self, top: bool) -> Option<()> {
        self.ws();
        if self.c.peek()? == b'}' {
            self.lit.push(b'}');
            self.c.i += 1;
            Some(())
        } else {
            self.members(top)
        }
    }

    /// The members of an object from the cursor on its first key to just after its `}`;
    /// `top` for the event itself, else `args`.
    fn members(&mut self, top: bool) -> Option<()> {
        let b = self.c.b;
        loop {
            // the key: a plain string
            if self.c.peek()? != b'"' {
                return None;
            }
            let at = self.c.i;
            let key = self.c.string()?;
            if key.escaped {
                return None;
            }
            let k = &b[key.start..key.end];
            self.lit.extend_from_slice(&b[at..self.c.i]);
            self.ws();
            if self.c.peek()? != b':' {
                return None;
            }
            self.lit.push(b':');
            self.c.i += 1;
            self.ws();
            let v = self.c.i;
            if top && k == b"args" && self.c.peek()? == b'{' {
                self.lit.push(b'{');
                self.c.i += 1;
                self.push(Act::ArgsOpen)?;
                self.object_rest(false)?;
            } else if let Some(act) = top.then(|| self.constant(k)).flatten() {
                // a value the same in every event of the kind: part of the literal
                let at = self.lit.len();
                match act {
                    Act::Pid | Act::Tid => {
                        // the raw text and the integer, as `Cur::pid` / `Cur::tid` give them
                        let (text, value) = self.c.raw_int()?;
                        self.caps.push((act, at, text.len(), value));
                    }
                    _ => {
                        self.c.skip()?;
                        let (start, end) = (v + 1, self.c.i - 1);
                        if act != Act::Skip {
                            if b[start..end].contains(&b'\\') {
                                return None;
                            }
                            if act == Act::Ph {
                                self.ph = Some(&b[start..end]);
                            }
                            self.caps.push((act, at + 1, end - start, None));
                        }
                    }
                }
                self.lit.extend_from_slice(&b[v..self.c.i]);
            } else {
                let act = if top {
                    match k {
                        b"ph" => Act::Ph,
                        b"cat" => Act::Cat,
                        b"name" => Act::Name,
                        b"pid" => Act::Pid,
                        b"tid" => Act::Tid,
                        b"ts" => Act::Ts,
                        b"dur" => Act::Dur,
                        b"id" => Act::Id,
                        b"args" => Act::Args,
                        _ => Act::Skip,
                    }
                } else {
                    RawArgs::slot_index(k).map_or(Act::Skip, Act::Arg)
                };
                if act == Act::Ph {
                    // kept only from a plain string value (see `constant`)
                    self.ph = None;
                }
                self.push(act)?;
                self.c.skip()?;
            }
            self.ws();
            match self.c.peek()? {
                b',' => {
                    self.lit.push(b',');
                    self.c.i += 1;
                    self.ws();
                }
                b'}' => {
                    self.lit.push(b'}');
                    self.c.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The act of a member of the event whose value is part of the literal: `pid` and
    /// `tid` (a process and a thread, or a device and a stream: a few values per trace);
    /// when the value is a string, `ph` and `cat`, the `name` of flows and instants
    /// (`ac2g`, `[memory]`, ...), `bp` of flow ends and `s` of instants (skipped members).
    fn constant(&self, k: &[u8]) -> Option<Act> {
        match k {
            b"pid" => return Some(Act::Pid),
            b"tid" => return Some(Act::Tid),
            _ => {}
        }
        if self.c.peek()? != b'"' {
            return None;
        }
        let flow_or_instant = matches!(self.ph, Some(b"s" | b"f" | b"t" | b"i" | b"I"));
        match k {
            b"ph" => Some(Act::Ph),
            b"cat" => Some(Act::Cat),
            b"name" if flow_or_instant => Some(Act::Name),
            b"bp" | b"s" if flow_or_instant => Some(Act::Skip),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse, parse_shaped};
    use super::*;

    #[test]
    fn many_threads_keep_the_trie_narrow() {
        let mut shapes = Shapes::default();
        for tid in 0..60 {
            let doc = format!(
                "{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op\", \"pid\": 1, \
                 \"tid\": {tid}, \"ts\": {}, \"dur\": 2}}",
                1000 + tid
            );
            for _ in 0..2 {
                let (mut general, mut shaped) = (RawEvent::default(), RawEvent::default());
                assert!(parse(doc.as_bytes(), &mut general));
                assert!(parse_shaped(&mut shapes, doc.as_bytes(), &mut shaped));
                assert_eq!(format!("{shaped:?}"), format!("{general:?}"));
                assert!(shaped.decoded == general.decoded);
            }
        }
        let widest = (0..shapes.nodes.len()).map(|n| shapes.children(n)).max();
        assert!(widest.is_some_and(|w| w <= MAX_CHILDREN), "{widest:?}");
        assert!(shapes.nodes.len() < 200, "{} nodes", shapes.nodes.len());
    }

    /// The literals of the children of node `p`, in the order the walk tries them.
    fn children_lits(shapes: &Shapes, p: usize) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut k = shapes.nodes[p].child;
        while k != NONE {
            out.push(shapes.nodes[k as usize].lit());
            k = shapes.nodes[k as usize].sibling;
        }
        out
    }

    #[test]
    fn siblings_follow_the_kinds_the_events_take() {
        // two kinds of events part after `"cat": "`; the copies' literal is the longer, tried
        // first as learned. A run of operators puts theirs first, a run of copies back
        let doc = |cat: &str, ts: u32| {
            format!(
                "{{\"ph\": \"X\", \"cat\": \"{cat}\", \"name\": \"n\", \"pid\": 1, \
                 \"tid\": 2, \"ts\": {ts}, \"dur\": 3}}"
            )
        };
        let mut shapes = Shapes::default();
        let first_at_branch = |shapes: &Shapes| {
            let p = (0..shapes.nodes.len())
                .find(|&n| shapes.children(n) == 2)
                .expect("one branching node");
            children_lits(shapes, p)[0][0]
        };
        let mut ts = 0;
        for (cat, first) in [("cpu_op", b'c'), ("gpu_memcpy", b'g'), ("cpu_op", b'c')] {
            for _ in 0..SAMPLE_EVERY {
                ts += 1;
                let d = doc(cat, ts);
                let (mut general, mut shaped) = (RawEvent::default(), RawEvent::default());
                assert!(parse(d.as_bytes(), &mut general));
                assert!(parse_shaped(&mut shapes, d.as_bytes(), &mut shaped));
                assert_eq!(format!("{shaped:?}"), format!("{general:?}"), "{d}");
                if ts == 2 {
                    // the other kind learned too: the longer literal first
                    let k = doc("gpu_memcpy", 0);
                    assert!(parse_shaped(
                        &mut shapes,
                        k.as_bytes(),
                        &mut RawEvent::default()
                    ));
                    assert_eq!(first_at_branch(&shapes), b'g');
                }
            }
            assert_eq!(first_at_branch(&shapes), first, "after a run of {cat}");
        }
    }

    #[test]
    fn siblings_sharing_a_first_byte_keep_the_longer_first() {
        // a literal and a longer one it begins can both match: the longer stays first however
        // the events took them; children that all start differently follow the counts
        let mut shapes = Shapes::default();
        let short = shapes
            .insert(0, b"ab".to_vec(), Act::Ts, Vec::new())
            .unwrap();
        let long = shapes
            .insert(0, b"abc".to_vec(), Act::Dur, Vec::new())
            .unwrap();
        let a = shapes
            .insert(long, b"x".to_vec(), Act::Ts, Vec::new())
            .unwrap();
        let b = shapes
            .insert(long, b"yy".to_vec(), Act::Ts, Vec::new())
            .unwrap();
        assert_eq!(children_lits(&shapes, 0), [b"abc".to_vec(), b"ab".to_vec()]);
        assert_eq!(
            children_lits(&shapes, long),
            [b"yy".to_vec(), b"x".to_vec()]
        );
        shapes.hits = vec![0; shapes.nodes.len()];
        shapes.hits[short] = 9;
        shapes.hits[a] = 5;
        shapes.hits[b] = 1;
        shapes.reorder();
        assert_eq!(children_lits(&shapes, 0), [b"abc".to_vec(), b"ab".to_vec()]);
        assert_eq!(
            children_lits(&shapes, long),
            [b"x".to_vec(), b"yy".to_vec()]
        );
        assert!(shapes.hits.is_empty());
    }
}
