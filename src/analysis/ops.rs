//! Operator table, like `torch.profiler`'s `key_averages()` and the TensorBoard plugin's
//! operator view.
//!
//! # Definition (the plugin's)
//!
//! * **Tree**: per host thread, the spans of operators (`cpu_op`/`Operator`), user annotations
//!   (including `ProfilerStep#N`), legacy `python` frames and `nn.Module` Python frames are
//!   nested by time containment (sorted by start, longer first). A span that starts inside
//!   the innermost open span but ends after it ("ranges on the same thread should not
//!   intersect") is left out of the tree, as the plugin does. Other Python frames are not
//!   part of the tree.
//! * **Own launch calls** of a span: the runtime/driver calls whose External id points at it
//!   ([`CpuEvent::owner_op`](crate::model::CpuEvent)), on any thread.
//! * `host_total` = duration; `host_self` = duration − direct children's durations − own
//!   launch calls' durations (may be negative on malformed traces, as in the plugin).
//! * `device_self` = Σ durations of the kernels, copies and fills launched by the own calls
//!   (plain sums: parallel streams count twice, as in the plugin and `key_averages()`);
//!   `device_total` = `device_self` + the children's `device_total`.
//! * An operator whose only child is an operator of the same name is merged with it (the
//!   child's children and launch calls replace the parent's), like the plugin and the legacy
//!   autograd profiler (`_remove_dup_nodes`); [`op_table_with`] can turn this off.
//! * **Rows**: operators only, grouped by name; left out: `ProfilerStep#*`, DataLoader
//!   `enumerate(DataLoader)#*.__next__`, `Optimizer.*`, `DataParallel.forward`,
//!   `DistributedDataParallel.forward`, annotations and Python frames. An operator counts when
//!   it **starts inside the window**; its device time counts wherever its kernels ran.
//! * Order: device self descending, then host total descending, then name.
//!
//! Deliberate difference: driver calls (`cuLaunchKernel`, Triton) are launch calls here; the
//! plugin ignores the `cuda_driver` category, so Triton kernels get no operator there.

use crate::model::fast::NameMemo;

use crate::model::{CpuKind, Interval, Ns, Trace, NONE};

/// One operator name's statistics.
#[derive(Clone, Debug, PartialEq)]
pub struct OpRow {
    /// Operator name.
    pub name: String,
    /// Calls.
    pub calls: u64,
    /// Host time minus children and own runtime calls, ns.
    pub host_self: Ns,
    /// Host duration, ns.
    pub host_total: Ns,
    /// Device time of kernels/copies/fills launched by the op itself, ns.
    pub device_self: Ns,
    /// Device time launched by the op and its descendants, ns.
    pub device_total: Ns,
}

/// Settings for [`op_table_with`].
#[derive(Clone, Copy, Debug)]
pub struct OpOptions {
    /// Merge an operator with its only child of the same name (the plugin's behaviour).
    pub merge_same_name_child: bool,
}

impl Default for OpOptions {
    fn default() -> Self {
        OpOptions {
            merge_same_name_child: true,
        }
    }
}

/// Rows by device self time descending (then host total).
pub fn op_table(trace: &Trace, window: Interval) -> Vec<OpRow> {
    op_table_with(trace, window, OpOptions::default())
}

/// Host spans that form the call tree.
fn in_tree(kind: CpuKind, is_module: bool) -> bool {
    match kind {
        CpuKind::Op | CpuKind::UserAnnotation | CpuKind::Python => true,
        CpuKind::PythonFunction => is_module,
        _ => false,
    }
}

/// Host calls that launch device work.
fn is_launch_call(kind: CpuKind) -> bool {
    matches!(
        kind,
        CpuKind::Runtime | CpuKind::Driver | CpuKind::OtherRuntime
    )
}

/// True for operators that get a row (the plugin's `is_operator_node`).
pub fn is_table_op(kind: CpuKind, name: &str) -> bool {
    let dataloader = name.starts_with("enumerate(DataLoader)#") && name.ends_with(".__next__");
    kind == CpuKind::Op
        && !dataloader
        && !name.starts_with("ProfilerStep#")
        && !name.starts_with("Optimizer.")
        && name != "DataParallel.forward"
        && name != "DistributedDataParallel.forward"
}

/// A span of the call tree. Children are a singly linked list (`first_child`, then each
/// child's `next_sibling`), so building the tree allocates nothing per node. 40 bytes: a
/// large trace has millions of nodes.
#[derive(Clone, Copy)]
struct Node {
    /// Index in [`Trace::cpu`]; [`NONE`] once merged into its same-name parent.
    cpu: u32,
    /// First child ([`NONE`] when none).
    first_child: u32,
    /// Next child of the same parent ([`NONE`] for the last).
    next_sibling: u32,
    /// Number of children.
    n_children: u32,
    /// Σ host durations of the children and of own launch calls (the host time that is not
    /// the node's own).
    host_below: Ns,
    /// Σ device time launched by own launch calls.
    launch_device: Ns,
    device_total: Ns,
}

impl Node {
    /// False once merged into its same-name parent.
    fn alive(&self) -> bool {
        self.cpu != NONE
    }
}

/// The children of node `n`.
fn children(nodes: &[Node], n: usize) -> impl Iterator<Item = u32> + '_ {
    std::iter::successors(
        Some(nodes[n].first_child).filter(|&c| c != NONE),
        move |&c| Some(nodes[c as usize].next_sibling).filter(|&s| s != NONE),
    )
}

/// Like [`op_table`], with options.
pub fn op_table_with(trace: &Trace, window: Interval, opts: OpOptions) -> Vec<OpRow> {
    let cpu = &trace.cpu;
    // Nodes are created in `cpu` order (start ascending, longer first), so a parent always
    // comes before its descendants.
    let mut nodes: Vec<Node> = Vec::new();
    let mut node_of_cpu: Vec<u32> = vec![NONE; cpu.len()];

    // 1. Per-thread containment tree.
    let mut stacks: Vec<Vec<u32>> = Vec::new();
    for (i, e) in cpu.iter().enumerate() {
        if !in_tree(e.kind, e.is_module) {
            continue;
        }
        let t = e.thread as usize;
        if stacks.len() <= t {
            stacks.resize_with(t + 1, Vec::new);
        }
        let stack = &mut stacks[t];
        while let Some(&top) = stack.last() {
            if e.start < cpu[nodes[top as usize].cpu as usize].end() {
                break;
            }
            stack.pop();
        }
        let parent = match stack.last() {
            // starts inside the open span but ends after it: left out, like the plugin
            Some(&top) if e.end() > cpu[nodes[top as usize].cpu as usize].end() => continue,
            parent => parent.copied(),
        };
        let n = nodes.len() as u32;
        let mut next_sibling = NONE;
        if let Some(p) = parent {
            // prepended: children come out last first, which no sum below minds
            let p = &mut nodes[p as usize];
            next_sibling = p.first_child;
            p.first_child = n;
            p.n_children += 1;
            p.host_below += e.dur;
        }
        nodes.push(Node {
            cpu: i as u32,
            first_child: NONE,
            next_sibling,
            n_children: 0,
            host_below: 0,
            launch_device: 0,
            device_total: 0,
        });
        node_of_cpu[i] = n;
        stack.push(n);
    }
    drop(stacks);

    // 2. Own launch calls and their device time, by External id.
    let node_of_owner = |e: &crate::model::CpuEvent| -> Option<usize> {
        if !is_launch_call(e.kind) || e.owner_op == NONE {
            return None;
        }
        match node_of_cpu.get(e.owner_op as usize) {
            Some(&n) if n != NONE => Some(n as usize),
            _ => None,
        }
    };
    for e in cpu {
        if let Some(n) = node_of_owner(e) {
            nodes[n].host_below += e.dur;
        }
    }
    for (g, l) in trace.gpu_with_launches() {
        if let Some(l) = l.filter(|_| g.is_activity()) {
            if let Some(n) = node_of_owner(l) {
                nodes[n].launch_device += g.dur;
            }
        }
    }
    drop(node_of_cpu);

    // 3. Merge an operator with its only same-name operator child (top-down).
    if opts.merge_same_name_child {
        for n in 0..nodes.len() {
            if !nodes[n].alive() {
                continue;
            }
            while nodes[n].n_children == 1 {
                let only = nodes[n].first_child as usize;
                let (p, c) = (&cpu[nodes[n].cpu as usize], &cpu[nodes[only].cpu as usize]);
                if p.name != c.name || p.kind != CpuKind::Op || c.kind != CpuKind::Op {
                    break;
                }
                let child = nodes[only];
                nodes[only].cpu = NONE;
                let node = &mut nodes[n];
                node.first_child = child.first_child;
                node.n_children = child.n_children;
                node.host_below = child.host_below;
                node.launch_device = child.launch_device;
            }
        }
    }

    // 4. Device totals bottom-up.
    for n in (0..nodes.len()).rev() {
        if !nodes[n].alive() {
            continue;
        }
        let below: Ns = children(&nodes, n)
            .map(|c| nodes[c as usize].device_total)
            .sum();
        nodes[n].device_total = nodes[n].launch_device + below;
    }

    // 5. Rows, one per name (row index per name id).
    let mut table_op = NameMemo::new(trace, |name: &str| is_table_op(CpuKind::Op, name));
    let mut row_of: Vec<u32> = Vec::new();
    let mut rows: Vec<OpRow> = Vec::new();
    for n in nodes.iter().filter(|n| n.alive()) {
        let e = &cpu[n.cpu as usize];
        if e.start < window.start || e.start >= window.end {
            continue;
        }
        if e.kind != CpuKind::Op || !table_op.get(e.name) {
            continue;
        }
        let id = e.name.0 as usize;
        if row_of.len() <= id {
            row_of.resize(trace.names.len().max(id + 1), NONE);
        }
        if row_of[id] == NONE {
            row_of[id] = rows.len() as u32;
            rows.push(OpRow {
                name: trace.name(e.name).to_string(),
                calls: 0,
                host_self: 0,
                host_total: 0,
                device_self: 0,
                device_total: 0,
            });
        }
        let row = &mut rows[row_of[id] as usize];
        row.calls += 1;
        row.host_total += e.dur;
        row.host_self += e.dur - n.host_below;
        row.device_self += n.launch_device;
        row.device_total += n.device_total;
    }
    rows.sort_by(|a, b| {
        b.device_self
            .cmp(&a.device_self)
            .then(b.host_total.cmp(&a.host_total))
            .then_with(|| a.name.cmp(&b.name))
    });
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::build::TraceBuilder;
    use crate::model::GpuKind;

    const ALL: Interval = Interval::ALL;

    fn row<'a>(rows: &'a [OpRow], name: &str) -> &'a OpRow {
        rows.iter().find(|r| r.name == name).unwrap()
    }

    #[test]
    fn node_size() {
        // millions of nodes on a large trace: keep this from growing
        assert_eq!(std::mem::size_of::<Node>(), 40);
    }

    #[test]
    fn empty_trace() {
        let t = TraceBuilder::new().build();
        assert!(op_table(&t, ALL).is_empty());
    }

    #[test]
    fn self_and_total_times_through_nesting() {
        let mut b = TraceBuilder::new();
        // aten::linear [0, 100) > aten::addmm [10, 60) launching a gemm (40 µs) and a copy (5 µs)
        let lin = b.op("aten::linear", 0.0, 100.0);
        let addmm = b.op("aten::addmm", 10.0, 50.0);
        let c = b.runtime("cudaLaunchKernel", addmm, 20.0, 10.0);
        b.gpu(GpuKind::Kernel, "gemm", 0, 7, 40.0, 40.0, c);
        let c = b.runtime("cudaMemcpyAsync", addmm, 35.0, 5.0);
        b.gpu(GpuKind::Memcpy, "Memcpy DtoD", 0, 7, 80.0, 5.0, c);
        // linear's own launch: a fill, on another stream overlapping the gemm (counted again)
        let c = b.runtime("cudaMemsetAsync", lin, 70.0, 4.0);
        b.gpu(GpuKind::Memset, "Memset", 0, 13, 50.0, 2.0, c);
        let t = b.build();
        let rows = op_table(&t, ALL);
        assert_eq!(rows.len(), 2);
        let a = row(&rows, "aten::addmm");
        assert_eq!((a.calls, a.host_total, a.host_self), (1, 50_000, 35_000));
        assert_eq!((a.device_self, a.device_total), (45_000, 45_000));
        let l = row(&rows, "aten::linear");
        assert_eq!((l.host_total, l.host_self), (100_000, 46_000));
        assert_eq!((l.device_self, l.device_total), (2_000, 47_000));
        assert_eq!(rows[0].name, "aten::addmm"); // by device self
    }

    #[test]
    fn grouping_and_exclusions() {
        let mut b = TraceBuilder::new();
        b.annotation("ProfilerStep#3", 0.0, 1000.0);
        b.op(
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
            1.0,
            50.0,
        );
        b.op("Optimizer.step#SGD.step", 100.0, 50.0);
        b.op("DistributedDataParallel.forward", 200.0, 300.0);
        b.op_with_kernel("aten::add", "add_kernel", 210.0, 10.0, 215.0, 3.0);
        b.op_with_kernel("aten::add", "add_kernel", 230.0, 20.0, 235.0, 4.0);
        b.annotation("my_region", 600.0, 100.0);
        b.op("ProfilerStep#4", 800.0, 10.0); // old traces write steps as operators
        let t = b.build();
        let rows = op_table(&t, ALL);
        assert_eq!(rows.len(), 1, "{rows:?}");
        let r = &rows[0];
        assert_eq!((r.name.as_str(), r.calls), ("aten::add", 2));
        assert_eq!(
            (r.host_total, r.device_self, r.device_total),
            (30_000, 7_000, 7_000)
        );
        // launch calls take (dur − 2) µs each: 8 + 18
        assert_eq!(r.host_self, 30_000 - 26_000);
    }

    #[test]
    fn threads_are_separate_trees_and_partial_overlaps_are_dropped() {
        let mut b = TraceBuilder::new();
        b.op("aten::outer", 0.0, 100.0);
        b.cpu(CpuKind::Op, "aten::other_thread", 2, 10.0, 20.0); // not a child: thread 2
        b.op("aten::straddles", 90.0, 20.0); // intersects outer's end: left out
        let t = b.build();
        let rows = op_table(&t, ALL);
        assert_eq!(row(&rows, "aten::outer").host_self, 100_000);
        assert_eq!(row(&rows, "aten::other_thread").host_self, 20_000);
        assert!(rows.iter().all(|r| r.name != "aten::straddles"));
    }

    #[test]
    fn same_name_child_is_merged() {
        let mut b = TraceBuilder::new();
        let outer = b.op("aten::to", 0.0, 100.0);
        b.runtime("cudaStreamSynchronize", outer, 90.0, 5.0);
        let inner = b.op("aten::to", 10.0, 50.0);
        let c = b.runtime("cudaMemcpyAsync", inner, 20.0, 10.0);
        b.gpu(GpuKind::Memcpy, "Memcpy HtoD", 0, 7, 30.0, 8.0, c);
        b.op("aten::copy_", 40.0, 10.0);
        let t = b.build();
        let merged = op_table(&t, ALL);
        let r = row(&merged, "aten::to");
        // one call; inner's children (copy_) and launches replace outer's
        assert_eq!((r.calls, r.host_total), (1, 100_000));
        assert_eq!(r.host_self, 100_000 - 10_000 - 10_000);
        assert_eq!((r.device_self, r.device_total), (8_000, 8_000));
        let plain = op_table_with(
            &t,
            ALL,
            OpOptions {
                merge_same_name_child: false,
            },
        );
        let r = row(&plain, "aten::to");
        assert_eq!((r.calls, r.host_total), (2, 150_000));
        assert_eq!(
            r.host_self,
            (100_000 - 50_000 - 5_000) + (50_000 - 10_000 - 10_000)
        );
        assert_eq!((r.device_self, r.device_total), (8_000, 16_000));
    }

    #[test]
    fn window_selects_ops_by_start() {
        let mut b = TraceBuilder::new();
        b.op_with_kernel("aten::mm", "gemm", 0.0, 10.0, 500.0, 100.0);
        b.op_with_kernel("aten::mm", "gemm", 100.0, 10.0, 700.0, 100.0);
        let t = b.build();
        let rows = op_table(&t, Interval::new(50_000, 200_000));
        assert_eq!(rows[0].calls, 1);
        // device time counts although the kernel ran after the window
        assert_eq!(rows[0].device_self, 100_000);
    }
}
