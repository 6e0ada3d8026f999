//! torch.profiler's own anti-patterns (`torch/profiler/_pattern_matcher.py`), found on the
//! host call tree of a Kineto trace, with the time each matched call took.
//!
//! # Definitions (our reading of the matcher)
//!
//! * **Tree**: per host thread, operators, user annotations and Python frames (all
//!   `python_function` frames, `nn.Module` ones included) nested by time containment, like
//!   [`crate::analysis::ops`]. A span that crosses its parent's end is left at the top level.
//! * **Extra CUDA copy**: an `aten::to` whose last child is `aten::_to_copy`, whose last child
//!   is `aten::copy_` with the same dtype on its first two inputs (a pure device move), and
//!   whose previous sibling (or that sibling's chain of last descendants) is a CPU-side
//!   initialiser (when the `aten::to` sits in a Python frame of its call, as with
//!   `with_stack=True`, the matcher looks at the sibling before that frame: so do we) `aten::fill_`/`zero_`/`normal_`/`uniform_`: a tensor built on the host and then
//!   moved. Matched span: the `aten::to`.
//! * **For-loop indexing**: among the children of one parent, an `aten::select` followed by the
//!   ops up to the next `aten::select`, the same name sequence repeated at least
//!   [`LOOP_REPEATS`] times in a row. Matched spans: every op of the run.
//! * **Grad not set to none**: `aten::zero_` calls (not under `aten::zeros`) inside a
//!   `zero_grad` frame (Python `…: zero_grad` or the `Optimizer.zero_grad#…` annotation).
//! * **Conv2d bias before BatchNorm2d**: `aten::conv2d` with a third input (the bias) recorded
//!   in `Input type`, inside an `nn.Module: Conv2d` frame whose next sibling is an
//!   `nn.Module: BatchNorm2d` frame; without module frames (`with_stack=False`), the conv's own
//!   next sibling op being `aten::batch_norm`.
//! * **Matmul dim not aligned**: `aten::mm`/`bmm`/`addmm` whose first input is fp16/bf16 and
//!   one of whose inputs has one of its last two dims not a multiple of 8.
//! * **Optimizer single tensor**: Python frames named `…_single_tensor_adam`/`sgd`/`adamw`.
//!
//! A call counts when it starts inside the analysis window. Device time of a matched span =
//! Σ durations of the kernels, copies and fills launched by runtime calls on its thread inside
//! it.

use serde::Serialize;

use crate::model::{CpuKind, Interval, IntervalSet, Ns, Trace, NONE};

/// Repeats of the same indexing sequence that make a for-loop-indexing match (the matcher's).
pub const LOOP_REPEATS: usize = 10;

/// The calls one pattern matched.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PatternMatch {
    /// Matched calls (for loops: loops found).
    pub calls: u64,
    /// Σ host durations of the matched spans, ns.
    pub host_ns: Ns,
    /// Σ device time launched inside the matched spans, ns.
    pub device_ns: Ns,
    /// Device activities launched inside them.
    pub device_events: u64,
    /// First matched span: name, start and duration (ns).
    pub first: Option<(String, Ns, Ns)>,
    /// Up to three distinct details (shapes, dtypes, frame names, loop bodies).
    pub examples: Vec<String>,
    /// For loops: Σ iterations over the loops found.
    pub iterations: u64,
}

/// Every pattern's matches.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TorchPatterns {
    /// `ExtraCUDACopyPattern`.
    pub extra_cuda_copy: PatternMatch,
    /// `ForLoopIndexingPattern`.
    pub for_loop_indexing: PatternMatch,
    /// `GradNotSetToNonePattern`.
    pub grad_not_set_to_none: PatternMatch,
    /// `Conv2dBiasFollowedByBatchNorm2dPattern`.
    pub conv_bias_before_batchnorm: PatternMatch,
    /// `MatMulDimInFP16Pattern`.
    pub matmul_dim_not_aligned: PatternMatch,
    /// `OptimizerSingleTensorPattern`.
    pub optimizer_single_tensor: PatternMatch,
}

fn in_window(mask: &IntervalSet, t: Ns) -> bool {
    let s = mask.spans();
    let i = s.partition_point(|iv| iv.end <= t);
    i < s.len() && s[i].start <= t
}

/// Input types of an op call (`Input type`), if recorded.
fn input_types(trace: &Trace, i: usize) -> Option<Vec<String>> {
    let s = trace.op_shape_at(i)?;
    crate::analysis::roofline::parse_strings(trace.name(s.types))
}

/// `Input Dims` text of an op call, if recorded.
fn dims_text(trace: &Trace, i: usize) -> Option<&str> {
    let s = trace.op_shape_at(i)?;
    Some(trace.name(s.dims))
}

struct Collector<'a> {
    trace: &'a Trace,
    m: PatternMatch,
    spans: Vec<(u32, Interval)>,
}

impl<'a> Collector<'a> {
    fn new(trace: &'a Trace) -> Self {
        Collector {
            trace,
            m: PatternMatch::default(),
            spans: Vec::new(),
        }
    }
    fn add(&mut self, i: usize, example: Option<String>) {
        let e = &self.trace.cpu[i];
        self.m.calls += 1;
        self.add_span(i);
        if self.m.first.is_none() {
            self.m.first = Some((self.trace.name(e.name).to_string(), e.start, e.dur));
        }
        if let Some(x) = example {
            if self.m.examples.len() < 3 && !self.m.examples.contains(&x) {
                self.m.examples.push(x);
            }
        }
    }
    fn add_span(&mut self, i: usize) {
        let e = &self.trace.cpu[i];
        self.m.host_ns += e.dur;
        self.spans.push((e.thread, e.interval()));
    }
    /// Adds the device time launched inside each collector's spans: one pass over the device
    /// events for all of them.
    fn finish_all<const N: usize>(trace: &Trace, mut all: [Collector<'a>; N]) -> [PatternMatch; N] {
        let mut busy = false;
        for c in &mut all {
            c.spans.sort_by_key(|&(th, iv)| (th, iv.start));
            busy |= !c.spans.is_empty();
        }
        if busy {
            // the host events are in start order: a launch inside a span (same thread, start in
            // it) has its index in the span's index range. The ranges' union tells, without
            // reading the launch call, that most device events are in no span.
            let ranges = IntervalSet::from_intervals(all.iter().flat_map(|c| {
                c.spans.iter().map(|&(_, iv)| {
                    let lo = trace.cpu.partition_point(|e| e.start < iv.start);
                    let hi = trace.cpu.partition_point(|e| e.start < iv.end);
                    Interval::new(lo as Ns, hi as Ns)
                })
            }));
            let ranges = ranges.spans();
            for g in &trace.gpu {
                if g.launch == NONE || g.kind == crate::model::GpuKind::Annotation {
                    continue;
                }
                let li = g.launch as Ns;
                let k = ranges.partition_point(|r| r.end <= li);
                if ranges.get(k).is_none_or(|r| r.start > li) {
                    continue;
                }
                let Some(l) = trace.cpu.get(g.launch as usize) else {
                    continue;
                };
                for c in all.iter_mut().filter(|c| !c.spans.is_empty()) {
                    let k = c
                        .spans
                        .partition_point(|&(th, iv)| (th, iv.start) <= (l.thread, l.start));
                    if k > 0 {
                        let (th, iv) = c.spans[k - 1];
                        if th == l.thread && l.start < iv.end {
                            c.m.device_ns += g.dur;
                            c.m.device_events += 1;
                        }
                    }
                }
            }
        }
        all.map(|c| c.m)
    }

    /// The six patterns from their collectors (extra copy, zero_grad, conv bias, matmul dims,
    /// single-tensor optimizer, for-loop), device time added ([`Collector::finish_all`]).
    fn patterns(trace: &Trace, found: [Collector<'a>; 6]) -> TorchPatterns {
        let [copy, zero, conv, mm, opt, lp] = Collector::finish_all(trace, found);
        TorchPatterns {
            extra_cuda_copy: copy,
            for_loop_indexing: lp,
            grad_not_set_to_none: zero,
            conv_bias_before_batchnorm: conv,
            matmul_dim_not_aligned: mm,
            optimizer_single_tensor: opt,
        }
    }
}

const INIT_OPS: [&str; 4] = [
    "aten::fill_",
    "aten::zero_",
    "aten::normal_",
    "aten::uniform_",
];

/// What a name can be in the patterns (found once per interned name).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// No pattern starts at it.
    None,
    /// `aten::to`: an extra copy when it is a pure move after a host initialiser.
    To,
    /// `aten::zero_`: under `zero_grad`.
    Zero,
    /// `aten::conv2d`: with a bias, before a batch norm.
    Conv,
    /// `aten::mm`/`bmm`/`addmm`: half inputs with unaligned dims.
    Mm,
    /// `aten::select`: the start of a for-loop's body.
    Select,
    /// A Python frame of a single-tensor optimizer.
    Optimizer,
}

impl Role {
    fn of(n: &str) -> Role {
        match n {
            "aten::to" => Role::To,
            "aten::zero_" => Role::Zero,
            "aten::conv2d" => Role::Conv,
            "aten::mm" | "aten::bmm" | "aten::addmm" => Role::Mm,
            "aten::select" => Role::Select,
            _ if ["adam", "sgd", "adamw"].iter().any(|o| {
                n.strip_suffix(o)
                    .is_some_and(|s| s.ends_with("_single_tensor_"))
            }) =>
            {
                Role::Optimizer
            }
            _ => Role::None,
        }
    }

    /// The kinds of event the role applies to.
    fn applies_to(self, kind: CpuKind) -> bool {
        match self {
            Role::None => false,
            Role::Optimizer => matches!(kind, CpuKind::PythonFunction | CpuKind::Python),
            _ => kind == CpuKind::Op,
        }
    }

    /// Whether matching it needs the containment tree.
    fn needs_tree(self) -> bool {
        matches!(self, Role::To | Role::Zero | Role::Conv | Role::Select)
    }
}

/// A name's role and what the tree walk asks of it (found once per interned name).
#[derive(Clone, Copy)]
struct Traits {
    role: Role,
    /// [`INIT_OPS`].
    init: bool,
    /// A `zero_grad` frame: Python `…: zero_grad` or `Optimizer.zero_grad#….zero_grad`.
    zero_grad: bool,
    /// `aten::zeros` (its `aten::zero_` is no gradient reset).
    zeros: bool,
    /// `nn.Module: Conv2d…`.
    conv_module: bool,
    /// `nn.Module: BatchNorm2d…`.
    bn_module: bool,
    /// `aten::batch_norm`.
    batch_norm: bool,
    /// `aten::select` (a loop body's end, whatever the event).
    select: bool,
    /// `aten::_to_copy`.
    to_copy: bool,
    /// `aten::copy_`.
    copy: bool,
}

impl Traits {
    fn of(n: &str) -> Traits {
        Traits {
            role: Role::of(n),
            init: INIT_OPS.contains(&n),
            zero_grad: n.ends_with(": zero_grad")
                || (n.starts_with("Optimizer.zero_grad#") && n.ends_with(".zero_grad")),
            zeros: n == "aten::zeros",
            conv_module: n.starts_with("nn.Module: Conv2d"),
            bn_module: n.starts_with("nn.Module: BatchNorm2d"),
            batch_norm: n == "aten::batch_norm",
            select: n == "aten::select",
            to_copy: n == "aten::_to_copy",
            copy: n == "aten::copy_",
        }
    }
}

/// An open span of the containment walk (the bottom one of a thread stands for its top
/// level), with what its children told when they closed.
#[derive(Clone, Copy)]
struct Frame {
    /// Index in [`Trace::cpu`] ([`NONE`] for a thread's top level).
    idx: u32,
    end: Ns,
    /// Its latest child so far (at its close: its last child).
    last_child: u32,
    /// The last child of its latest closed child.
    lc_last_child: u32,
    /// Its latest closed child, or that child's chain of last descendants, is an initialiser.
    lc_ends_init: bool,
    /// The same of its own previous sibling (found when it opened).
    prev_ends_init: bool,
    /// It or an ancestor is a `zero_grad` frame.
    zero_grad: bool,
    /// An `aten::to` in the window: matched at its close, when its last child is known.
    to: bool,
    /// Conv2d matches wait for the next sibling of its latest child.
    pending: bool,
    /// 1 + the index of its children's names recorded since a loop could start (0: none).
    seq: u32,
    /// Its name's [`Traits::init`] and [`Traits::zeros`] (read again when it closes and when
    /// a child opens, without looking its name up).
    init: bool,
    zeros: bool,
}

impl Frame {
    fn open(idx: u32, end: Ns) -> Frame {
        Frame {
            idx,
            end,
            last_child: NONE,
            lc_last_child: NONE,
            lc_ends_init: false,
            prev_ends_init: false,
            zero_grad: false,
            to: false,
            pending: false,
            seq: 0,
            init: false,
            zeros: false,
        }
    }
}

/// What a match adds to its pattern, kept until every match is found and then added in
/// the order of the host events (the order the first match and the examples follow).
enum Hit {
    /// One matched call of pattern `0` (an index into the collectors), with its detail.
    Call(usize, Option<String>),
    /// A for-loop: its body's text, its repeats and its calls.
    Loop(String, usize, Vec<u32>),
}

/// The walk over the host events' containment tree (per thread, by time containment like
/// [`crate::analysis::ops`]): every pattern that needs the tree is decided when the spans
/// it reads have closed, so no tree is stored.
struct Walk<'t, F: Fn(&str) -> Traits> {
    trace: &'t Trace,
    mask: &'t IntervalSet,
    traits: crate::model::fast::NameMemo<'t, Traits, F>,
    stacks: Vec<Vec<Frame>>,
    /// Children recorded per open span since its first `aten::select` candidate.
    seqs: Vec<Vec<u32>>,
    free_seqs: Vec<u32>,
    /// Conv2d calls waiting for the next sibling of a span: (span, conv, a module frame
    /// of BatchNorm2d wanted rather than `aten::batch_norm`).
    waiting: Vec<(u32, u32, bool)>,
    hits: Vec<(u32, Hit)>,
    /// Whether a name the tree's patterns start at is in the trace: without one, the walk
    /// keeps no stacks (the two other patterns read none).
    tree: bool,
}

/// Indices of the collectors in [`torch_patterns`].
const COPY: usize = 0;
const ZERO: usize = 1;
const CONV: usize = 2;
const MM: usize = 3;
const OPT: usize = 4;

impl<'t, F: Fn(&str) -> Traits> Walk<'t, F> {
    fn name(&self, i: u32) -> &'t str {
        self.trace.name(self.trace.cpu[i as usize].name)
    }

    fn hit(&mut self, i: u32, pattern: usize, detail: Option<String>) {
        self.hits.push((i, Hit::Call(pattern, detail)));
    }

    fn dims(&self, i: u32) -> Option<String> {
        dims_text(self.trace, i as usize).map(str::to_string)
    }

    /// Visits host event `i` (events come in start order).
    fn visit(&mut self, i: u32) {
        let trace = self.trace;
        let e = &trace.cpu[i as usize];
        if !matches!(
            e.kind,
            CpuKind::Op | CpuKind::UserAnnotation | CpuKind::Python | CpuKind::PythonFunction
        ) {
            return;
        }
        let t = self.traits.get(e.name);
        let candidate = t.role.applies_to(e.kind) && in_window(self.mask, e.start);
        if candidate {
            // the two patterns that read no tree
            match t.role {
                Role::Mm => self.matmul(i),
                Role::Optimizer => {
                    let n = self.name(i).to_string();
                    self.hit(i, OPT, Some(n));
                }
                _ => {}
            }
        }
        if !self.tree {
            return;
        }
        let th = e.thread as usize;
        if self.stacks.len() <= th {
            self.stacks.resize_with(th + 1, Vec::new);
        }
        if self.stacks[th].is_empty() {
            self.stacks[th].push(Frame::open(NONE, Ns::MAX));
        }
        while self.stacks[th].len() > 1 && self.stacks[th].last().unwrap().end <= e.start {
            self.close(th);
        }
        let level = *self.stacks[th].last().unwrap();
        if e.end() > level.end {
            return; // crosses its parent's end: left out, as in ops.rs
        }
        // the latest child of the level is this span's previous sibling, closed by now
        let prev = level.last_child;
        if level.pending {
            self.resolve(prev, t);
        }
        if candidate && t.role == Role::Select && level.seq == 0 {
            let k = self.free_seqs.pop().unwrap_or_else(|| {
                self.seqs.push(Vec::new());
                self.seqs.len() as u32 - 1
            });
            self.stacks[th].last_mut().unwrap().seq = k + 1;
        }
        let level = self.stacks[th].last_mut().unwrap();
        if level.seq != 0 {
            self.seqs[level.seq as usize - 1].push(i);
        }
        level.last_child = i;
        level.pending = false;
        let mut f = Frame::open(i, e.end());
        f.prev_ends_init = prev != NONE && level.lc_ends_init;
        f.zero_grad = level.zero_grad || t.zero_grad;
        f.to = candidate && t.role == Role::To;
        (f.init, f.zeros) = (t.init, t.zeros);
        // (a thread's top level is no span: neither `aten::zeros` nor under `zero_grad`)
        let (parent_zeros, parent_zero_grad) = (level.zeros, level.zero_grad);
        self.stacks[th].push(f);
        if candidate {
            match t.role {
                Role::Zero if !parent_zeros && parent_zero_grad => {
                    let d = self.dims(i);
                    self.hit(i, ZERO, d);
                }
                Role::Conv => self.conv(th, i),
                _ => {}
            }
        }
    }

    /// A half-precision matmul with a dimension not a multiple of 8.
    fn matmul(&mut self, i: u32) {
        let half = input_types(self.trace, i as usize).is_some_and(|t| {
            t.first()
                .is_some_and(|d| matches!(d.trim_start_matches("c10::"), "Half" | "BFloat16"))
        });
        if half {
            if let Some(d) = dims_text(self.trace, i as usize) {
                if !aligned(d) {
                    let text = format!("{} {d}", self.name(i));
                    self.hit(i, MM, Some(text));
                }
            }
        }
    }

    /// A conv2d with a bias (just opened on thread `th`): it waits for the next sibling of
    /// its Conv2d module frame (the nearest), or without one for its own.
    fn conv(&mut self, th: usize, i: u32) {
        let has_bias =
            input_types(self.trace, i as usize).is_some_and(|t| t.len() >= 3 && !t[2].is_empty());
        if !has_bias {
            return;
        }
        let (stack, traits, trace) = (&self.stacks[th], &mut self.traits, self.trace);
        // the frames above the top level, innermost first, the conv's own excluded
        let top = stack.len() - 1;
        let module = (1..top).rev().find(|&k| {
            let f = &trace.cpu[stack[k].idx as usize];
            f.is_module && traits.get(f.name).conv_module
        });
        let (k, wants_module) = match module {
            Some(k) => (k, true),
            None => (top, false),
        };
        self.waiting.push((stack[k].idx, i, wants_module));
        self.stacks[th][k - 1].pending = true;
    }

    /// The next sibling of span `prev` opened, with traits `t`: the conv calls waiting for it
    /// are decided.
    fn resolve(&mut self, prev: u32, t: Traits) {
        let mut k = 0;
        while k < self.waiting.len() {
            let (span, conv, wants_module) = self.waiting[k];
            if span != prev {
                k += 1;
                continue;
            }
            self.waiting.swap_remove(k);
            if (wants_module && t.bn_module) || (!wants_module && t.batch_norm) {
                let d = self.dims(conv);
                self.hit(conv, CONV, d);
            }
        }
    }

    /// Closes the innermost open span of thread `th`.
    fn close(&mut self, th: usize) {
        let f = self.stacks[th].pop().unwrap();
        let ends_init = f.init || (f.last_child != NONE && f.lc_ends_init);
        if f.to {
            self.extra_copy(&f, th);
        }
        if f.seq != 0 {
            self.loops(f.seq - 1);
        }
        let parent = self.stacks[th].last_mut().unwrap();
        parent.lc_ends_init = ends_init;
        parent.lc_last_child = f.last_child;
    }

    /// An `aten::to` closing: a pure move (last child `aten::_to_copy`, whose last child is an
    /// `aten::copy_` with equal dtypes) after an initialiser (its previous sibling; inside a
    /// Python frame of the call, as with `with_stack=True`, the frame's previous sibling too).
    fn extra_copy(&mut self, f: &Frame, th: usize) {
        let trace = self.trace;
        let (c, d) = (f.last_child, f.lc_last_child);
        if c == NONE || d == NONE {
            return;
        }
        if !self.traits.get(trace.cpu[c as usize].name).to_copy
            || !self.traits.get(trace.cpu[d as usize].name).copy
        {
            return;
        }
        let pure = input_types(trace, d as usize)
            .is_some_and(|t| t.len() >= 2 && !t[0].is_empty() && t[0] == t[1]);
        if !pure {
            return;
        }
        let parent = self.stacks[th].last().unwrap();
        let frame = parent.idx != NONE && {
            let p = &trace.cpu[parent.idx as usize];
            matches!(p.kind, CpuKind::PythonFunction | CpuKind::Python) && !p.is_module
        };
        if f.prev_ends_init || (frame && parent.prev_ends_init) {
            let d = self.dims(f.idx);
            self.hit(f.idx, COPY, d);
        }
    }

    /// The for-loops among the children recorded in `seqs[k]` (from the first
    /// `aten::select` candidate on), each starting at a candidate outside an earlier loop.
    fn loops(&mut self, k: u32) {
        let seq = std::mem::take(&mut self.seqs[k as usize]);
        let mut p = 0;
        while p < seq.len() {
            let i = seq[p];
            let e = &self.trace.cpu[i as usize];
            let t = self.traits.get(e.name);
            let starts = t.role == Role::Select
                && t.role.applies_to(e.kind)
                && in_window(self.mask, e.start);
            match starts.then(|| self.loop_at(&seq[p..])).flatten() {
                Some((body, reps)) => {
                    let run = seq[p..p + body.len() * reps].to_vec();
                    self.hits.push((i, Hit::Loop(body.join(" → "), reps, run)));
                    p += body.len() * reps;
                }
                None => p += 1,
            }
        }
        let mut seq = seq;
        seq.clear();
        self.seqs[k as usize] = seq;
        self.free_seqs.push(k);
    }

    /// The loop at the start of `siblings` (an `aten::select`): its body's names and repeats
    /// (≥ [`LOOP_REPEATS`]).
    fn loop_at(&mut self, siblings: &[u32]) -> Option<(Vec<&'t str>, usize)> {
        let trace = self.trace;
        let name = |i: u32| trace.name(trace.cpu[i as usize].name);
        let next_select = siblings[1..]
            .iter()
            .position(|&c| self.traits.get(trace.cpu[c as usize].name).select)?
            + 1;
        let body: Vec<&str> = siblings[..next_select].iter().map(|&c| name(c)).collect();
        let reps = 1 + siblings[next_select..]
            .chunks_exact(body.len())
            .take_while(|run| run.iter().zip(&body).all(|(&c, b)| name(c) == *b))
            .count();
        (reps >= LOOP_REPEATS).then_some((body, reps))
    }

    /// Closes every span still open (the end of the events).
    fn finish(&mut self) {
        for th in 0..self.stacks.len() {
            while self.stacks[th].len() > 1 {
                self.close(th);
            }
            if let Some(root) = self.stacks[th].first() {
                if root.seq != 0 {
                    self.loops(root.seq - 1);
                }
            }
        }
    }
}

/// Finds the six patterns in the window.
///
/// One walk over the host events decides every pattern: the ones that read the containment
/// tree when the spans they read have closed (no tree is stored); the device time inside
/// the matched spans is found in one pass over the device events.
pub fn torch_patterns(trace: &Trace, mask: &IntervalSet) -> TorchPatterns {
    let mut walk = Walk {
        trace,
        mask,
        traits: crate::model::fast::NameMemo::new(trace, Traits::of),
        stacks: Vec::new(),
        seqs: Vec::new(),
        free_seqs: Vec::new(),
        waiting: Vec::new(),
        hits: Vec::new(),
        tree: crate::model::fast::any_name(trace, |n| Role::of(n).needs_tree()),
    };
    for i in 0..trace.cpu.len() as u32 {
        walk.visit(i);
    }
    walk.finish();
    let mut hits = walk.hits;
    hits.sort_by_key(|h| h.0);
    let mut found = [
        Collector::new(trace),
        Collector::new(trace),
        Collector::new(trace),
        Collector::new(trace),
        Collector::new(trace),
        Collector::new(trace),
    ];
    for (i, hit) in hits {
        match hit {
            Hit::Call(pattern, detail) => found[pattern].add(i as usize, detail),
            Hit::Loop(text, reps, run) => {
                let lp = &mut found[5];
                for c in run {
                    lp.add_span(c as usize);
                }
                lp.m.calls += 1;
                lp.m.iterations += reps as u64;
                if lp.m.first.is_none() {
                    let e = &trace.cpu[i as usize];
                    lp.m.first = Some((trace.name(e.name).to_string(), e.start, 0));
                }
                if lp.m.examples.len() < 3 && !lp.m.examples.contains(&text) {
                    lp.m.examples.push(text);
                }
            }
        }
    }
    Collector::patterns(trace, found)
}

/// Last two dims of every tensor input multiples of 8 (unparsable text counts as aligned).
fn aligned(dims: &str) -> bool {
    let Some(args) = crate::analysis::roofline::parse_dims(dims) else {
        return true;
    };
    args.iter()
        .filter_map(|a| a.shape())
        .all(|s| s.iter().rev().take(2).all(|d| d % 8 == 0))
}

#[cfg(test)]
mod equivalence {
    //! The walk against the stored-tree matcher it replaced, on random nested traces.
    use super::*;
    use crate::model::fast::HashSet;

    /// Containment tree over [`Trace::cpu`] indices (linked lists: no allocation per node).
    struct Tree {
        member: Vec<bool>,
        parent: Vec<u32>,
        last_child: Vec<u32>,
        next: Vec<u32>,
        prev: Vec<u32>,
    }

    impl Tree {
        /// No tree (no candidate needs one): every lookup is out of range and never made.
        fn empty() -> Tree {
            Tree {
                member: Vec::new(),
                parent: Vec::new(),
                last_child: Vec::new(),
                next: Vec::new(),
                prev: Vec::new(),
            }
        }

        fn build(trace: &Trace) -> Tree {
            let n = trace.cpu.len();
            let mut t = Tree {
                member: vec![false; n],
                parent: vec![NONE; n],
                last_child: vec![NONE; n],
                next: vec![NONE; n],
                prev: vec![NONE; n],
            };
            let mut stacks: Vec<Vec<u32>> = Vec::new();
            // last top-level span of each thread, to link top-level siblings
            let mut last_top: Vec<u32> = Vec::new();
            for (i, e) in trace.cpu.iter().enumerate() {
                let in_tree = matches!(
                    e.kind,
                    CpuKind::Op
                        | CpuKind::UserAnnotation
                        | CpuKind::Python
                        | CpuKind::PythonFunction
                );
                if !in_tree {
                    continue;
                }
                let th = e.thread as usize;
                if stacks.len() <= th {
                    stacks.resize_with(th + 1, Vec::new);
                    last_top.resize(th + 1, NONE);
                }
                let stack = &mut stacks[th];
                while let Some(&top) = stack.last() {
                    if trace.cpu[top as usize].end() <= e.start {
                        stack.pop();
                    } else {
                        break;
                    }
                }
                let parent = match stack.last() {
                    Some(&p) if e.end() <= trace.cpu[p as usize].end() => p,
                    Some(_) => continue, // crosses its parent's end: left out, as in ops.rs
                    None => NONE,
                };
                let i = i as u32;
                let prev = if parent == NONE {
                    last_top[th]
                } else {
                    t.last_child[parent as usize]
                };
                t.member[i as usize] = true;
                t.parent[i as usize] = parent;
                t.prev[i as usize] = prev;
                if prev != NONE {
                    t.next[prev as usize] = i;
                }
                if parent == NONE {
                    last_top[th] = i;
                } else {
                    t.last_child[parent as usize] = i;
                }
                stack.push(i);
            }
            t
        }
    }

    /// Finds the six patterns in the window.
    ///
    /// The calls that can start a pattern are found first by their (memoised) names; the
    /// containment tree over the host events is built only when one of them needs it, and the
    /// device time inside the matched spans is found in one pass over the device events.
    pub fn old_torch_patterns(trace: &Trace, mask: &IntervalSet) -> TorchPatterns {
        let mut roles = crate::model::fast::NameMemo::new(trace, Role::of);
        let candidates: Vec<(u32, Role)> = trace
            .cpu
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                let r = roles.get(e.name);
                (r.applies_to(e.kind) && in_window(mask, e.start)).then_some((i as u32, r))
            })
            .collect();
        let mut found = [
            Collector::new(trace),
            Collector::new(trace),
            Collector::new(trace),
            Collector::new(trace),
            Collector::new(trace),
            Collector::new(trace),
        ];
        let tree = if candidates.iter().any(|c| c.1.needs_tree()) {
            Tree::build(trace)
        } else {
            Tree::empty()
        };
        let [copy, zero, conv, mm, opt, lp] = &mut found;
        let name = |i: u32| trace.name(trace.cpu[i as usize].name);
        let mut in_loop: HashSet<u32> = HashSet::default();
        for &(ui, role) in &candidates {
            let i = ui as usize;
            let e = &trace.cpu[i];
            let n = trace.name(e.name);
            match role {
                Role::To if is_pure_move(trace, &tree, ui) => {
                    // the op before the move; under a Python frame of the call (`with_stack=True`:
                    // `<built-in method to …>`), the matcher's choice: the frame before that frame
                    let par = tree.parent[i];
                    let frame = par != NONE
                        && matches!(
                            trace.cpu[par as usize].kind,
                            CpuKind::PythonFunction | CpuKind::Python
                        )
                        && !trace.cpu[par as usize].is_module;
                    let before = |n: u32| (n != NONE).then(|| tree.prev[n as usize]);
                    let inits = [before(ui), if frame { before(par) } else { None }];
                    if inits
                        .into_iter()
                        .flatten()
                        .any(|p| p != NONE && ends_in_init(&tree, p, &name))
                    {
                        copy.add(i, dims_text(trace, i).map(str::to_string));
                    }
                }
                Role::Zero => {
                    let par = tree.parent[i];
                    if (par == NONE || name(par) != "aten::zeros")
                        && under_zero_grad(&tree, ui, &name)
                    {
                        zero.add(i, dims_text(trace, i).map(str::to_string));
                    }
                }
                Role::Conv => {
                    let has_bias =
                        input_types(trace, i).is_some_and(|t| t.len() >= 3 && !t[2].is_empty());
                    if has_bias && followed_by_batchnorm(trace, &tree, ui, &name) {
                        conv.add(i, dims_text(trace, i).map(str::to_string));
                    }
                }
                Role::Mm => {
                    let half = input_types(trace, i).is_some_and(|t| {
                        t.first().is_some_and(|d| {
                            matches!(d.trim_start_matches("c10::"), "Half" | "BFloat16")
                        })
                    });
                    if half {
                        if let Some(d) = dims_text(trace, i) {
                            if !aligned(d) {
                                mm.add(i, Some(format!("{n} {d}")));
                            }
                        }
                    }
                }
                Role::Select if tree.member[i] && !in_loop.contains(&ui) => {
                    if let Some((body, reps)) = loop_at(&tree, ui, &name) {
                        // every op of the run belongs to the loop
                        let mut c = ui;
                        for _ in 0..body.len() * reps {
                            in_loop.insert(c);
                            lp.add_span(c as usize);
                            c = tree.next[c as usize];
                        }
                        lp.m.calls += 1;
                        lp.m.iterations += reps as u64;
                        if lp.m.first.is_none() {
                            lp.m.first = Some((n.to_string(), e.start, 0));
                        }
                        let text = body.join(" → ");
                        if lp.m.examples.len() < 3 && !lp.m.examples.contains(&text) {
                            lp.m.examples.push(text);
                        }
                    }
                }
                Role::Optimizer => opt.add(i, Some(n.to_string())),
                _ => {}
            }
        }
        drop(tree);
        Collector::patterns(trace, found)
    }

    /// `aten::to` → last child `aten::_to_copy` → last child `aten::copy_` with equal dtypes.
    fn is_pure_move(trace: &Trace, tree: &Tree, i: u32) -> bool {
        let name = |i: u32| trace.name(trace.cpu[i as usize].name);
        let c = tree.last_child[i as usize];
        if c == NONE || name(c) != "aten::_to_copy" {
            return false;
        }
        let c = tree.last_child[c as usize];
        if c == NONE || name(c) != "aten::copy_" {
            return false;
        }
        input_types(trace, c as usize)
            .is_some_and(|t| t.len() >= 2 && !t[0].is_empty() && t[0] == t[1])
    }

    /// The span or one of its chain of last descendants is an initialiser.
    fn ends_in_init<'a>(tree: &Tree, mut i: u32, name: &impl Fn(u32) -> &'a str) -> bool {
        loop {
            if INIT_OPS.contains(&name(i)) {
                return true;
            }
            i = tree.last_child[i as usize];
            if i == NONE {
                return false;
            }
        }
    }

    fn under_zero_grad<'a>(tree: &Tree, i: u32, name: &impl Fn(u32) -> &'a str) -> bool {
        let mut p = tree.parent[i as usize];
        while p != NONE {
            let n = name(p);
            if n.ends_with(": zero_grad")
                || (n.starts_with("Optimizer.zero_grad#") && n.ends_with(".zero_grad"))
            {
                return true;
            }
            p = tree.parent[p as usize];
        }
        false
    }

    fn followed_by_batchnorm<'a>(
        trace: &Trace,
        tree: &Tree,
        i: u32,
        name: &impl Fn(u32) -> &'a str,
    ) -> bool {
        let mut p = tree.parent[i as usize];
        while p != NONE {
            let e = &trace.cpu[p as usize];
            if e.is_module && name(p).starts_with("nn.Module: Conv2d") {
                let s = tree.next[p as usize];
                return s != NONE && name(s).starts_with("nn.Module: BatchNorm2d");
            }
            p = tree.parent[p as usize];
        }
        // no module frame recorded: the conv's next op at its level
        let s = tree.next[i as usize];
        s != NONE && name(s) == "aten::batch_norm"
    }

    /// The loop starting at an `aten::select`: its body's names and repeats (≥ [`LOOP_REPEATS`]).
    fn loop_at<'a>(
        tree: &Tree,
        i: u32,
        name: &impl Fn(u32) -> &'a str,
    ) -> Option<(Vec<&'a str>, usize)> {
        let mut body = vec![name(i)];
        let mut c = tree.next[i as usize];
        while c != NONE && name(c) != "aten::select" {
            body.push(name(c));
            c = tree.next[c as usize];
        }
        if c == NONE {
            return None;
        }
        let mut reps = 1;
        'outer: loop {
            let mut k = c;
            for &b in &body {
                if k == NONE || name(k) != b {
                    break 'outer;
                }
                k = tree.next[k as usize];
            }
            reps += 1;
            c = k;
            if c == NONE {
                break;
            }
        }
        (reps >= LOOP_REPEATS).then_some((body, reps))
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    const NAMES: [&str; 17] = [
        "aten::to",
        "aten::_to_copy",
        "aten::copy_",
        "aten::fill_",
        "aten::zero_",
        "aten::zeros",
        "aten::conv2d",
        "aten::batch_norm",
        "nn.Module: Conv2d_0",
        "nn.Module: BatchNorm2d_0",
        "aten::select",
        "aten::add",
        "aten::mm",
        "Optimizer.zero_grad#SGD.zero_grad",
        "<built-in method to>",
        "torch/optim/sgd.py(1): _single_tensor_sgd",
        "aten::select",
    ];

    fn gen(
        b: &mut crate::model::build::TraceBuilder,
        r: &mut Rng,
        tid: i64,
        start: f64,
        end: f64,
        depth: u32,
        modules: &mut Vec<(u32, String)>,
    ) {
        let mut t = start;
        while t < end {
            let gap = r.below(3) as f64;
            t += gap;
            if t >= end {
                break;
            }
            if r.below(8) == 0 && t + 12.0 < end {
                // a host initialiser, then a move: `aten::to` → `_to_copy` → `copy_`,
                // sometimes inside a Python frame of the call, sometimes not a pure move
                let init = ["aten::fill_", "aten::normal_", "aten::add"][r.below(3) as usize];
                b.cpu(CpuKind::Op, init, tid, t, 2.0);
                if r.below(3) == 0 {
                    b.cpu(CpuKind::Op, "aten::zero_", tid, t + 0.5, 1.0);
                }
                let framed = r.below(2) == 0;
                if framed {
                    b.cpu(
                        CpuKind::PythonFunction,
                        "<built-in method to>",
                        tid,
                        t + 2.0,
                        9.0,
                    );
                }
                b.cpu(CpuKind::Op, "aten::to", tid, t + 3.0, 7.0);
                b.cpu(CpuKind::Op, "aten::_to_copy", tid, t + 4.0, 5.0);
                let c = b.cpu(CpuKind::Op, "aten::copy_", tid, t + 5.0, 3.0);
                let ty =
                    ["[\"float\", \"float\"]", "[\"float\", \"c10::Half\"]"][r.below(2) as usize];
                b.shapes(c, "[[4], [4]]", ty, "[]");
                t += 12.0;
                continue;
            }
            let loop_run = r.below(12) == 0;
            let kids = if loop_run { 9 + r.below(4) } else { 1 };
            for _ in 0..kids {
                let names: Vec<&str> = if loop_run {
                    vec!["aten::select", "aten::add"]
                } else {
                    vec![NAMES[r.below(NAMES.len() as u64) as usize]]
                };
                for n in names {
                    let mut dur = 1.0 + r.below(40) as f64;
                    if depth >= 3 || r.below(3) == 0 {
                        dur = 1.0 + r.below(3) as f64;
                    }
                    // a span now and then crosses its parent's end
                    if t + dur > end && r.below(4) != 0 {
                        dur = (end - t).max(1.0);
                    }
                    let kind = if n.starts_with("aten::") {
                        CpuKind::Op
                    } else {
                        CpuKind::PythonFunction
                    };
                    let ext = b.cpu(kind, n, tid, t, dur);
                    if kind == CpuKind::Op && r.below(2) == 0 {
                        let ty = [
                            "[\"float\", \"float\", \"float\"]",
                            "[\"float\", \"c10::Half\"]",
                            "[\"c10::Half\", \"c10::Half\", \"\"]",
                        ][r.below(3) as usize];
                        let dims = ["[[8, 8], [8, 8]]", "[[3, 5], [5, 7]]"][r.below(2) as usize];
                        b.shapes(ext, dims, ty, "[]");
                    }
                    if n.starts_with("nn.Module") {
                        modules.push((tid as u32, n.to_string()));
                    }
                    if depth < 5 && dur > 3.0 {
                        gen(b, r, tid, t, t + dur, depth + 1, modules);
                    }
                    t += dur;
                }
            }
        }
    }

    #[test]
    fn the_walk_matches_the_stored_tree() {
        let mut differ = 0;
        let mut seen = [0u32; 6];
        for seed in 0..3000u64 {
            let mut r = Rng(seed * 7919 + 1);
            let mut b = crate::model::build::TraceBuilder::new();
            let mut modules = Vec::new();
            for tid in 1..=(1 + r.below(2) as i64) {
                let end = 200.0 + r.below(300) as f64;
                gen(&mut b, &mut r, tid, 0.0, end, 0, &mut modules);
            }
            let mut trace = b.build();
            for e in trace.cpu.iter_mut() {
                if trace.names.resolve(e.name).starts_with("nn.Module") {
                    e.is_module = r.below(4) != 0;
                }
            }
            let lo = r.below(100) as i64 * 1000;
            let mask = IntervalSet::from_intervals([Interval::new(
                lo,
                lo + 150_000 + r.below(300) as i64 * 1000,
            )]);
            let a = old_torch_patterns(&trace, &mask);
            let b = torch_patterns(&trace, &mask);
            for (k, m) in [
                &a.extra_cuda_copy,
                &a.for_loop_indexing,
                &a.grad_not_set_to_none,
                &a.conv_bias_before_batchnorm,
                &a.matmul_dim_not_aligned,
                &a.optimizer_single_tensor,
            ]
            .iter()
            .enumerate()
            {
                if m.calls > 0 {
                    seen[k] += 1;
                }
            }
            if a != b {
                differ += 1;
                if differ < 3 {
                    eprintln!("seed {seed}:\nold {a:?}\nnew {b:?}");
                }
            }
        }
        eprintln!("traces with a match, per pattern: {seen:?}");
        assert!(seen.iter().all(|&n| n >= 20), "{seen:?}");
        assert_eq!(differ, 0);
    }
}
