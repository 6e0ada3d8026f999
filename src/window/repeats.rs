//! Whether the window's steps repeat one launch sequence with one set of shapes: what a CUDA
//! graph needs (it replays a fixed sequence of kernels on fixed shapes), checked before the
//! launch-bound finding advises one (issue 29).
//!
//! Each step of the window is compared with the first:
//!
//! * **kernels**: the multiset of kernel names launched by calls inside the step's host span
//!   (the order is not compared: streams may interleave differently from step to step);
//! * **shapes**, when recorded (`record_shapes=True`): the multiset of (operator, `Input
//!   Dims`) of the operators inside the step's host span.
//!
//! A step that differs in either is named with the first step; with fewer than two steps
//! nothing is compared ([`Repetition::compared`] is 0).

use crate::model::{CpuKind, GpuKind, NameId, Trace};

use super::steps::Step;

/// How the window's steps repeat (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Repetition {
    /// Steps compared (0 with fewer than two).
    pub compared: usize,
    /// The first step whose kernels differ from the first step's, with the count of kernels
    /// of each: (step, its kernels, first step, its kernels).
    pub kernels_differ: Option<(String, u64, String, u64)>,
    /// Whether shapes were recorded (for the steps' operators, when the kernels repeat;
    /// for any operator when they differ and the shapes were not compared).
    pub shapes_recorded: bool,
    /// The first step whose operator shapes differ from the first step's: (step, first
    /// step); `None` too when the kernels differ (the shapes are then not compared).
    pub shapes_differ: Option<(String, String)>,
}

impl Repetition {
    /// True when at least two steps were compared and each repeats the first one's kernels
    /// and (where recorded) shapes.
    pub fn is_static(&self) -> bool {
        self.compared >= 2 && self.kernels_differ.is_none() && self.shapes_differ.is_none()
    }
}

/// The first of `steps[1..]` whose multiset of items differs from `steps[0]`'s. Steps that
/// repeat mostly repeat in the same order: each is compared as it is first, and sorted (with
/// a sorted copy of the first) only when that comparison fails.
fn first_differing<T: Ord + Clone>(steps: &mut [Vec<T>]) -> Option<usize> {
    let (first, rest) = steps.split_first_mut()?;
    let mut first_sorted: Option<Vec<T>> = None;
    for (k, v) in rest.iter_mut().enumerate() {
        if v == first {
            continue;
        }
        if v.len() != first.len() {
            return Some(k + 1);
        }
        let f = first_sorted.get_or_insert_with(|| {
            let mut f = first.clone();
            f.sort_unstable();
            f
        });
        v.sort_unstable();
        if v != f {
            return Some(k + 1);
        }
    }
    None
}

/// Compares the `steps` (the window's, in time order) of `trace`.
pub fn of(trace: &Trace, steps: &[Step]) -> Repetition {
    let n = steps.len();
    if n < 2 {
        return Repetition::default();
    }
    let step_of = |t: crate::model::Ns, end: crate::model::Ns| -> Option<usize> {
        let i = steps.partition_point(|s| s.host_span.start <= t);
        (i > 0 && end <= steps[i - 1].host_span.end).then(|| i - 1)
    };
    let mut kernels: Vec<Vec<NameId>> = vec![Vec::new(); n];
    for (g, call) in trace.gpu_with_launches() {
        let Some(call) = call.filter(|_| g.kind == GpuKind::Kernel) else {
            continue;
        };
        if let Some(i) = step_of(call.start, call.end()) {
            kernels[i].push(g.name);
        }
    }
    let first = &steps[0].name;
    let kernels_differ = first_differing(&mut kernels).map(|i| {
        (
            steps[i].name.clone(),
            kernels[i].len() as u64,
            first.clone(),
            kernels[0].len() as u64,
        )
    });
    // the shapes only when the kernels repeat: either difference makes the steps not static,
    // and the kernels' is the one said
    let (shapes_recorded, shapes_differ) = if kernels_differ.is_some() {
        (!trace.op_shapes.is_empty(), None)
    } else {
        let mut shapes: Vec<Vec<(NameId, NameId)>> = vec![Vec::new(); n];
        let mut recorded = false;
        if !trace.op_shapes.is_empty() {
            for (k, e) in trace.cpu.iter().enumerate() {
                if e.kind != CpuKind::Op {
                    continue;
                }
                let Some(s) = trace.op_shape_at(k) else {
                    continue;
                };
                if let Some(i) = step_of(e.start, e.end()) {
                    shapes[i].push((e.name, s.dims));
                    recorded = true;
                }
            }
        }
        let differ = recorded
            .then(|| first_differing(&mut shapes))
            .flatten()
            .map(|i| (steps[i].name.clone(), first.clone()));
        (recorded, differ)
    };
    Repetition {
        compared: n,
        kernels_differ,
        shapes_recorded,
        shapes_differ,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::build::TraceBuilder;
    use crate::window::steps::analyze_steps;

    /// Three steps of two ops each launching one kernel; step 2's second op has input
    /// `dims2` and kernel `k2`.
    fn trace(dims2: &str, k2: &str) -> Trace {
        let mut b = TraceBuilder::new().device(0, "GPU", 80, 1 << 30);
        for s in 0..3 {
            let t0 = 100.0 * s as f64;
            b.annotation(&format!("ProfilerStep#{s}"), t0, 100.0);
            for j in 0..2 {
                let at = t0 + 10.0 + 40.0 * j as f64;
                let op = b.op("aten::mm", at, 20.0);
                let last = s == 2 && j == 1;
                b.shapes(
                    op,
                    if last { dims2 } else { "[[8, 8], [8, 8]]" },
                    "[]",
                    "[]",
                );
                let corr = b.runtime("cudaLaunchKernel", op, at + 2.0, 3.0);
                let name = if last { k2 } else { "gemm" };
                b.gpu(GpuKind::Kernel, name, 0, 7, at + 6.0, 10.0, corr);
            }
        }
        b.build()
    }

    #[test]
    fn multisets_compared_in_order_then_sorted() {
        let mut v = vec![vec![1, 2, 3], vec![1, 2, 3], vec![3, 1, 2], vec![1, 2, 2]];
        assert_eq!(first_differing(&mut v), Some(3));
        let mut v = vec![vec![1, 2, 3], vec![2, 3, 1], vec![1, 2]];
        assert_eq!(first_differing(&mut v), Some(2));
        let mut v = vec![vec![2, 1], vec![1, 2], vec![2, 1]];
        assert_eq!(first_differing(&mut v), None);
        assert_eq!(first_differing::<u32>(&mut []), None);
    }

    #[test]
    fn steps_repeat_or_name_the_first_that_differs() {
        let t = trace("[[8, 8], [8, 8]]", "gemm");
        let r = of(&t, &analyze_steps(&t).steps);
        assert_eq!(r.compared, 3);
        assert!(r.shapes_recorded);
        assert!(r.is_static(), "{r:?}");
        // new shapes in step 2 (same kernels: a dynamic batch on one GEMM kernel)
        let t = trace("[[16, 8], [8, 8]]", "gemm");
        let r = of(&t, &analyze_steps(&t).steps);
        assert_eq!(r.kernels_differ, None);
        assert_eq!(
            r.shapes_differ,
            Some(("ProfilerStep#2".into(), "ProfilerStep#0".into()))
        );
        assert!(!r.is_static());
        // another kernel in step 2
        let t = trace("[[8, 8], [8, 8]]", "gemm_splitk");
        let r = of(&t, &analyze_steps(&t).steps);
        assert_eq!(
            r.kernels_differ,
            Some(("ProfilerStep#2".into(), 2, "ProfilerStep#0".into(), 2))
        );
        // one step: nothing compared
        let r = of(&t, &analyze_steps(&t).steps[..1]);
        assert_eq!(r, Repetition::default());
        assert!(!r.is_static());
    }
}
