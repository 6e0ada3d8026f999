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

use crate::model::fast::HashSet;
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
                CpuKind::Op | CpuKind::UserAnnotation | CpuKind::Python | CpuKind::PythonFunction
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

fn in_window(mask: &IntervalSet, t: Ns) -> bool {
    let s = mask.spans();
    let i = s.partition_point(|iv| iv.end <= t);
    i < s.len() && s[i].start <= t
}

/// Input types of an op call (`Input type`), if recorded.
fn input_types(trace: &Trace, i: usize) -> Option<Vec<String>> {
    let e = &trace.cpu[i];
    let s = trace.op_shapes.get(&e.external_id)?;
    crate::analysis::roofline::parse_strings(trace.name(s.types))
}

/// `Input Dims` text of an op call, if recorded.
fn dims_text(trace: &Trace, i: usize) -> Option<&str> {
    let e = &trace.cpu[i];
    let s = trace.op_shapes.get(&e.external_id)?;
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

/// Finds the six patterns in the window.
///
/// The calls that can start a pattern are found first by their (memoised) names; the
/// containment tree over the host events is built only when one of them needs it, and the
/// device time inside the matched spans is found in one pass over the device events.
pub fn torch_patterns(trace: &Trace, mask: &IntervalSet) -> TorchPatterns {
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
                if (par == NONE || name(par) != "aten::zeros") && under_zero_grad(&tree, ui, &name)
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
    input_types(trace, c as usize).is_some_and(|t| t.len() >= 2 && !t[0].is_empty() && t[0] == t[1])
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

/// Last two dims of every tensor input multiples of 8 (unparsable text counts as aligned).
fn aligned(dims: &str) -> bool {
    let Some(args) = crate::analysis::roofline::parse_dims(dims) else {
        return true;
    };
    args.iter()
        .filter_map(|a| a.shape())
        .all(|s| s.iter().rev().take(2).all(|d| d % 8 == 0))
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
