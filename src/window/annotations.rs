//! The annotation tree of a trace: `record_function` ranges, user annotations and module
//! frames nested per thread, and the call each device activity is attributed to. A fact of the
//! trace that both the window (`--focus` selects annotation calls, [`crate::window`]) and the
//! phases ([`crate::analysis::phases`]) read, so it sits below both.
//!
//! # Annotations ([`Annotations`])
//!
//! An **annotation call** (an *instance*) is a host span that is
//! * a `user_annotation` ([`CpuKind::UserAnnotation`]: `record_function` ranges,
//!   `Optimizer.step#SGD.step`, `## Call CompiledFxGraph … ##`, `nccl:all_reduce`, …),
//! * an operator ([`CpuKind::Op`]) whose name contains `#` or starts with `## ` and has no
//!   `::` (old traces wrote `record_function` ranges as `Operator`/`cpu_op`), or
//! * an `nn.Module` frame (`python_function` with a `Python module id`, traced with
//!   `with_stack`/`with_modules`),
//!
//! except the `ProfilerStep#N` spans themselves (they are the steps, not phases).
//!
//! Calls nest **per thread** by time containment (`parent.start ≤ start` and
//! `end ≤ parent.end`); an exact duplicate of its parent (same name, start and duration)
//! counts once. A call's **path** is the names from its root joined by `/`.
//!
//! **Autograd threads** (threads running `autograd::engine::evaluate_function: …` ops) have
//! no annotations of their own around the backward pass: their root calls are attached to the
//! innermost call of the **main thread** (the thread of the `ProfilerStep#N` spans, else the
//! non-autograd thread with the most calls) that contains their start, so that
//! `record_function("backward")` around `loss.backward()` gets the backward kernels.
//!
//! # Device work
//!
//! A device activity (kernel, copy or fill) is attributed, through the correlation id of its
//! launching runtime/driver call, to the innermost call on the launch's thread that contains
//! the launch (`call.start ≤ launch.start`, `launch.end ≤ call.end`); on an autograd thread
//! without such a call, to the innermost main-thread call containing the launch. Activities
//! whose launch is not in the trace fall back to the shortest `gpu_user_annotation` that
//! overlaps them on the same device and stream (HTA's rule), mapped to its host twin through
//! their common `External id`. Everything else is **`(unannotated)`**.
//!
//! An activity is **backward** when its launch is on an autograd thread or inside an
//! `autograd::engine::evaluate_function: …` op.

use crate::model::fast::{HashMap, NameMemo};
use crate::model::{CpuKind, GpuEvent, GpuKind, Interval, IntervalSet, NameId, Ns, Trace, NONE};

const STEP_PREFIX: &str = "ProfilerStep#";
const EVALUATE_FUNCTION: &str = "autograd::engine::evaluate_function:";

/// One annotation call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instance {
    /// Index in [`Trace::cpu`].
    pub cpu: u32,
    /// Parent call (possibly on the main thread for autograd-thread roots), or [`NONE`].
    pub parent: u32,
    /// Index in [`Annotations::paths`].
    pub path: u32,
}

/// One node of the path tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathNode {
    /// Last name of the path.
    pub name: NameId,
    /// Parent path, or [`NONE`].
    pub parent: u32,
    /// 0 for roots.
    pub depth: u32,
}

/// The annotation tree of a trace and the attribution of every device activity to a call.
#[derive(Clone, Debug, Default)]
pub struct Annotations {
    /// Calls, each thread's in start order.
    pub instances: Vec<Instance>,
    /// Distinct paths.
    pub paths: Vec<PathNode>,
    /// Per [`Trace::gpu`] entry: the innermost call it is attributed to, or [`NONE`]
    /// (also [`NONE`] for entries that are not device activities).
    pub activity_instance: Vec<u32>,
    /// Per [`Trace::gpu`] entry: launched by backward (autograd) code (one bit each).
    pub backward: crate::model::fast::Bits,
    /// The main thread (index into [`Trace::threads`]).
    pub main_thread: Option<u32>,
    /// Per call: [first start, last end] of the device activities attributed to it or below.
    hull: Vec<Option<Interval>>,
    /// Per thread (index = thread): (start, instance) in start order.
    by_thread: Vec<Vec<(Ns, u32)>>,
}

/// True for the host spans that open a phase (user annotations, `## name ##` records, module
/// calls), `ProfilerStep#N` excepted.
pub fn is_phase_event(kind: CpuKind, is_module: bool, name: &str) -> bool {
    if name.starts_with(STEP_PREFIX) {
        return false;
    }
    match kind {
        CpuKind::UserAnnotation => true,
        CpuKind::Op => (name.contains('#') || name.starts_with("## ")) && !name.contains("::"),
        CpuKind::PythonFunction => is_module,
        _ => false,
    }
}

fn is_launcher(kind: CpuKind) -> bool {
    matches!(
        kind,
        CpuKind::Runtime | CpuKind::OtherRuntime | CpuKind::Driver
    )
}

impl Annotations {
    /// Builds the tree and attributes every device activity.
    pub fn build(trace: &Trace) -> Annotations {
        let cpu = &trace.cpu;
        // candidate calls per thread, autograd threads, backward op intervals
        // candidate calls per thread (index = thread), autograd threads, backward op intervals
        let mut cand: Vec<Vec<u32>> = Vec::new();
        let mut backward_ops: HashMap<u32, Vec<Interval>> = HashMap::default();
        let mut step_thread: Option<u32> = None;
        // per name: (ProfilerStep, autograd `evaluate_function`, phase if an operator)
        let mut name_class = NameMemo::new(trace, |n: &str| {
            (
                n.starts_with(STEP_PREFIX),
                n.starts_with(EVALUATE_FUNCTION),
                is_phase_event(CpuKind::Op, false, n),
            )
        });
        for (i, e) in cpu.iter().enumerate() {
            if !matches!(
                e.kind,
                CpuKind::UserAnnotation | CpuKind::Op | CpuKind::PythonFunction
            ) {
                continue;
            }
            let (step, eval_fn, op_phase) = name_class.get(e.name);
            if e.kind != CpuKind::PythonFunction && step_thread.is_none() && step {
                step_thread = Some(e.thread);
            }
            if e.kind == CpuKind::Op && eval_fn {
                backward_ops.entry(e.thread).or_default().push(e.interval());
            }
            // [`is_phase_event`]
            let is = !step
                && match e.kind {
                    CpuKind::Op => op_phase,
                    CpuKind::PythonFunction => e.is_module,
                    _ => true,
                };
            if is {
                let t = e.thread as usize;
                if cand.len() <= t {
                    cand.resize_with(t + 1, Vec::new);
                }
                cand[t].push(i as u32);
            }
        }
        let backward_sets: HashMap<u32, IntervalSet> = backward_ops
            .into_iter()
            .map(|(t, v)| (t, IntervalSet::from_intervals(v)))
            .collect();
        let is_autograd = |t: u32| backward_sets.contains_key(&t);
        // threads with candidates, in id order
        let cand_threads = || {
            cand.iter()
                .enumerate()
                .filter(|(_, v)| !v.is_empty())
                .map(|(t, v)| (t as u32, v))
        };
        let main_thread = step_thread.or_else(|| {
            cand_threads()
                .filter(|&(t, _)| !is_autograd(t))
                .max_by_key(|&(t, v)| (v.len(), std::cmp::Reverse(t)))
                .map(|(t, _)| t)
        });

        let mut a = Annotations {
            main_thread,
            ..Annotations::default()
        };
        let mut path_index: HashMap<(u32, NameId), u32> = HashMap::default();
        // main thread first, then the others in id order (deterministic)
        let mut threads: Vec<u32> = cand_threads().map(|(t, _)| t).collect();
        threads.sort_by_key(|&t| (Some(t) != main_thread, t));
        for t in threads {
            let list = &cand[t as usize];
            let mut stack: Vec<u32> = Vec::new();
            let mut mine: Vec<(Ns, u32)> = Vec::with_capacity(list.len());
            for &ci in list {
                let e = &cpu[ci as usize];
                while let Some(&top) = stack.last() {
                    let p = &cpu[a.instances[top as usize].cpu as usize];
                    if p.start <= e.start && e.end() <= p.end() {
                        break;
                    }
                    stack.pop();
                }
                let mut parent = stack.last().copied().unwrap_or(NONE);
                if parent != NONE {
                    let p = &cpu[a.instances[parent as usize].cpu as usize];
                    if p.name == e.name && p.start == e.start && p.dur == e.dur {
                        continue; // exact duplicate
                    }
                } else if is_autograd(t) && Some(t) != main_thread {
                    if let Some(m) = main_thread {
                        parent = a.innermost(m, e.start, e.start, cpu);
                    }
                }
                let parent_path = if parent == NONE {
                    NONE
                } else {
                    a.instances[parent as usize].path
                };
                let path = *path_index.entry((parent_path, e.name)).or_insert_with(|| {
                    let depth = if parent_path == NONE {
                        0
                    } else {
                        a.paths[parent_path as usize].depth + 1
                    };
                    a.paths.push(PathNode {
                        name: e.name,
                        parent: parent_path,
                        depth,
                    });
                    (a.paths.len() - 1) as u32
                });
                let id = a.instances.len() as u32;
                a.instances.push(Instance {
                    cpu: ci,
                    parent,
                    path,
                });
                mine.push((e.start, id));
                stack.push(id);
            }
            let t = t as usize;
            if a.by_thread.len() <= t {
                a.by_thread.resize_with(t + 1, Vec::new);
            }
            a.by_thread[t] = mine;
        }

        // attribution of device activities
        let n = trace.gpu.len();
        a.activity_instance = vec![NONE; n];
        a.backward = crate::model::fast::Bits::new(n);
        // a launch's call and side, remembered for its next activities: a small direct-mapped
        // memo (a launch's activities come close together), not a table of every launch
        const MEMO: usize = 1024;
        let mut by_launch: Vec<(u32, u32, bool)> = vec![(NONE, NONE, false); MEMO];
        let mut unlinked: Vec<u32> = Vec::new();
        for (gi, (g, l)) in trace.gpu_with_launches().enumerate() {
            if !g.is_activity() {
                continue;
            }
            let Some(l) = l.filter(|l| is_launcher(l.kind)) else {
                unlinked.push(gi as u32);
                continue;
            };
            let slot = &mut by_launch[g.launch as usize % MEMO];
            let (inst, bw) = if slot.0 == g.launch {
                (slot.1, slot.2)
            } else {
                let mut inst = a.innermost(l.thread, l.start, l.end(), cpu);
                if inst == NONE && is_autograd(l.thread) {
                    if let Some(m) = main_thread {
                        inst = a.innermost(m, l.start, l.end(), cpu);
                    }
                }
                let bw = is_autograd(l.thread)
                    || backward_sets
                        .get(&l.thread)
                        .is_some_and(|s| s.covered_within(Interval::new(l.start, l.start + 1)) > 0);
                *slot = (g.launch, inst, bw);
                (inst, bw)
            };
            a.activity_instance[gi] = inst;
            if bw {
                a.backward.set(gi);
            }
        }
        if !unlinked.is_empty() {
            let by_ext: HashMap<u64, u32> = a
                .instances
                .iter()
                .enumerate()
                .filter(|(_, i)| cpu[i.cpu as usize].external_id != 0)
                .map(|(k, i)| (cpu[i.cpu as usize].external_id, k as u32))
                .collect();
            let ann = shortest_gpu_annotation(trace, &unlinked, |_| true);
            for (&gi, &an) in unlinked.iter().zip(&ann) {
                if an != NONE {
                    let ext = trace.gpu[an as usize].external_id;
                    if let Some(&inst) = by_ext.get(&ext) {
                        a.activity_instance[gi as usize] = inst;
                    }
                }
            }
        }

        // inclusive device hull per call
        a.hull = vec![None; a.instances.len()];
        for (gi, &inst) in a.activity_instance.iter().enumerate() {
            if inst == NONE {
                continue;
            }
            let iv = trace.gpu[gi].interval();
            let mut cur = inst;
            while cur != NONE {
                let h = &mut a.hull[cur as usize];
                *h = Some(match *h {
                    None => iv,
                    Some(x) => Interval::new(x.start.min(iv.start), x.end.max(iv.end)),
                });
                cur = a.instances[cur as usize].parent;
            }
        }
        a
    }

    /// Innermost call of thread `t` containing `[start, end]`, walking up from the last call
    /// that started at or before `start` (calls of a thread are nested), or [`NONE`].
    fn innermost(&self, t: u32, start: Ns, end: Ns, cpu: &[crate::model::CpuEvent]) -> u32 {
        let Some(list) = self.by_thread.get(t as usize) else {
            return NONE;
        };
        let i = list.partition_point(|&(s, _)| s <= start);
        if i == 0 {
            return NONE;
        }
        let mut cur = list[i - 1].1;
        while cur != NONE {
            let e = &cpu[self.instances[cur as usize].cpu as usize];
            if e.start <= start && end <= e.end() {
                return cur;
            }
            cur = self.instances[cur as usize].parent;
        }
        NONE
    }

    /// End of the last device activity attributed to call `inst` or below it.
    pub fn device_end(&self, inst: u32) -> Option<Ns> {
        self.hull
            .get(inst as usize)
            .copied()
            .flatten()
            .map(|h| h.end)
    }

    /// Full path of a path index.
    pub fn path_string(&self, trace: &Trace, mut p: u32) -> String {
        let mut parts = Vec::new();
        while p != NONE {
            let node = self.paths[p as usize];
            parts.push(trace.name(node.name));
            p = node.parent;
        }
        parts.reverse();
        parts.join("/")
    }

    /// Calls whose name equals `name`, or, when none does, contains it.
    pub fn matching(&self, trace: &Trace, name: &str) -> Vec<u32> {
        let pick = |exact: bool| -> Vec<u32> {
            let mut ok: HashMap<NameId, bool> = HashMap::default();
            self.instances
                .iter()
                .enumerate()
                .filter(|(_, i)| {
                    let nid = trace.cpu[i.cpu as usize].name;
                    *ok.entry(nid).or_insert_with(|| {
                        let n = trace.name(nid);
                        if exact {
                            n == name
                        } else {
                            n.contains(name)
                        }
                    })
                })
                .map(|(k, _)| k as u32)
                .collect()
        };
        let exact = pick(true);
        if exact.is_empty() && !name.is_empty() {
            pick(false)
        } else {
            exact
        }
    }

    /// Names of root paths, most calls first.
    pub fn top_level_names(&self, trace: &Trace) -> Vec<String> {
        let mut count: HashMap<u32, u64> = HashMap::default();
        for i in &self.instances {
            if self.paths[i.path as usize].parent == NONE {
                *count.entry(i.path).or_default() += 1;
            }
        }
        let mut v: Vec<(u32, u64)> = count.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut names: Vec<String> = Vec::new();
        for (p, _) in v {
            let n = trace.name(self.paths[p as usize].name).to_string();
            if !names.contains(&n) {
                names.push(n);
            }
        }
        names
    }
}

/// For each listed device activity, the shortest `gpu_user_annotation` ([`GpuKind::Annotation`])
/// accepted by `keep` that overlaps it on the same device and stream (index into
/// [`Trace::gpu`], or [`NONE`]). Overlap is `a.start < g.end && g.start < a.end`; a
/// zero-length activity overlaps an annotation when `a.start ≤ g.start < a.end`. Ties go to
/// the earlier annotation. `activities` must be in start order.
pub fn shortest_gpu_annotation(
    trace: &Trace,
    activities: &[u32],
    keep: impl Fn(&GpuEvent) -> bool,
) -> Vec<u32> {
    let mut anns: HashMap<(i32, i64), Vec<u32>> = HashMap::default();
    for (i, g) in trace.gpu.iter().enumerate() {
        if g.kind == GpuKind::Annotation && keep(g) {
            anns.entry((g.device, g.stream as i64))
                .or_default()
                .push(i as u32);
        }
    }
    let mut out = vec![NONE; activities.len()];
    if anns.is_empty() {
        return out;
    }
    // per (device, stream) sweep with an active list
    let mut next: HashMap<(i32, i64), usize> = HashMap::default();
    let mut active: HashMap<(i32, i64), Vec<u32>> = HashMap::default();
    for (k, &gi) in activities.iter().enumerate() {
        let g = &trace.gpu[gi as usize];
        let key = (g.device, g.stream as i64);
        let Some(list) = anns.get(&key) else {
            continue;
        };
        let pos = next.entry(key).or_insert(0);
        let act = active.entry(key).or_default();
        while *pos < list.len() && trace.gpu[list[*pos] as usize].start <= g.end() {
            act.push(list[*pos]);
            *pos += 1;
        }
        act.retain(|&a| trace.gpu[a as usize].end() > g.start);
        let mut best = NONE;
        for &ai in act.iter() {
            let a = &trace.gpu[ai as usize];
            let overlaps = if g.dur > 0 {
                a.start < g.end() && g.start < a.end()
            } else {
                a.start <= g.start && g.start < a.end()
            };
            if overlaps && (best == NONE || a.dur < trace.gpu[best as usize].dur) {
                best = ai;
            }
        }
        out[k] = best;
    }
    out
}
