//! Fork-join on two threads, the only parallelism the stages after reading need.

/// Runs `a` on the calling thread and `b` beside it on a scoped thread when `parallel`, else
/// both in turn; a panic in either is passed on.
///
/// The helper thread starts on another CPU than the caller's (see [`start_elsewhere`]).
pub fn join<A: Send, B: Send>(
    parallel: bool,
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    if !parallel {
        let ra = a();
        return (ra, b());
    }
    let here = current_cpu();
    std::thread::scope(|s| {
        let hb = s.spawn(move || {
            start_elsewhere(here);
            b()
        });
        let ra = a();
        let rb = hb.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        (ra, rb)
    })
}

/// The CPU the calling thread runs on, when the system tells.
pub fn current_cpu() -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: no arguments; returns -1 on failure.
        let c = unsafe { libc::sched_getcpu() };
        usize::try_from(c).ok()
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// Moves the calling (freshly spawned) thread off CPU `parent` when it was placed there, then
/// gives back its full set of allowed CPUs, so the scheduler may move it again later.
///
/// Linux often starts a new thread on its parent's CPU and moves it only at the next load
/// balance, several milliseconds later: on a two-core machine the two halves of a short
/// fork-join then share one core (seen at 215 MB: ~40 ms of finalize and analysis with the
/// second core idle). A thread starting on a CPU that is not its parent's avoids that. Does
/// nothing when the parent's CPU is unknown, when the thread is elsewhere already, or when
/// the thread may run on no other CPU.
pub fn start_elsewhere(parent: Option<usize>) {
    #[cfg(target_os = "linux")]
    {
        let Some(parent) = parent else { return };
        if current_cpu() != Some(parent) || parent >= libc::CPU_SETSIZE as usize {
            return;
        }
        // SAFETY: `cpu_set_t` is plain bits (all zeros is the empty set); the calls read or
        // write only the set passed, for the calling thread (pid 0).
        unsafe {
            let mut allowed: libc::cpu_set_t = std::mem::zeroed();
            let size = std::mem::size_of::<libc::cpu_set_t>();
            if libc::sched_getaffinity(0, size, &mut allowed) != 0 {
                return;
            }
            let mut others = allowed;
            libc::CPU_CLR(parent, &mut others);
            if libc::CPU_COUNT(&others) == 0 {
                return;
            }
            if libc::sched_setaffinity(0, size, &others) == 0 {
                // the move happens at once; the full set does not move the thread back
                libc::sched_setaffinity(0, size, &allowed);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = parent;
}

/// Merges the sorted runs `v[..mid]` and `v[mid..]` (each sorted by `cmp`) into one, stably:
/// on ties an element of the first run comes first, so the result is `v.sort_by(cmp)`'s.
///
/// When `parallel`, on two threads without more scratch memory than one merge: a binary
/// search finds the split of the merged order at `mid` (the first `mid` elements are the
/// first run's `..i` and the second run's `..mid - i`), the two middle blocks of equal
/// length (`v[i..mid]` and the second run's first `mid - i`) trade places, and each half of
/// `v` is then two sorted runs, merged by its own stable sort beside the other.
pub fn merge_runs<T: Send>(
    v: &mut [T],
    mid: usize,
    parallel: bool,
    cmp: impl Fn(&T, &T) -> std::cmp::Ordering + Sync,
) {
    if !parallel || mid == 0 || mid >= v.len() {
        v.sort_by(&cmp);
        return;
    }
    let (first, second) = v.split_at(mid);
    // the least i (j = mid - i from the second run) with no first-run element at or after i
    // that belongs before the second run's j-th: first[i] <= second[j - 1] means first[i] is
    // among the first mid elements, so i is too small
    let (mut lo, mut hi) = (mid.saturating_sub(second.len()), mid);
    while lo < hi {
        let i = lo + (hi - lo) / 2;
        let j = mid - i;
        if cmp(&first[i], &second[j - 1]).is_le() {
            lo = i + 1;
        } else {
            hi = i;
        }
    }
    let (i, j) = (lo, mid - lo);
    let (a, b) = v[i..mid + j].split_at_mut(j);
    a.swap_with_slice(b);
    let (left, right) = v.split_at_mut(mid);
    join(true, || left.sort_by(&cmp), || right.sort_by(&cmp));
}

/// One of [`run_tasks`]' tasks.
pub type Task<'a> = Box<dyn FnOnce() + Send + 'a>;

/// Runs every task: on two threads when `parallel`, each taking the next task no thread has
/// taken (in the order given: put the longest first), else in order on the calling thread. A
/// task hands its result out through what it captures (a [`std::sync::OnceLock`]); a panic
/// in a task is passed on once both threads stop.
///
/// A fixed split of the tasks into two sides is balanced for one kind of input only (the host
/// facts take ~45 % of a Kineto trace's analysis, ~65 % of an Nsight Systems export's); taking
/// the next task as a thread frees up balances both.
pub fn run_tasks(parallel: bool, tasks: Vec<Task<'_>>) {
    let slots: Vec<std::sync::Mutex<Option<Task<'_>>>> = tasks
        .into_iter()
        .map(|t| std::sync::Mutex::new(Some(t)))
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || loop {
        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let Some(slot) = slots.get(i) else { break };
        // each slot is taken once (by the index), so the lock is never contended
        let task = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(task) = task {
            task();
        }
    };
    join(parallel, work, work);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_tasks_runs_each_task_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        for parallel in [false, true] {
            let runs: Vec<AtomicUsize> = (0..50).map(|_| AtomicUsize::new(0)).collect();
            let order = std::sync::Mutex::new(Vec::new());
            let tasks: Vec<Task<'_>> = (0..runs.len())
                .map(|i| {
                    let (runs, order) = (&runs, &order);
                    Box::new(move || {
                        runs[i].fetch_add(1, Ordering::Relaxed);
                        order.lock().unwrap().push(i);
                    }) as Task<'_>
                })
                .collect();
            run_tasks(parallel, tasks);
            assert!(runs.iter().all(|r| r.load(Ordering::Relaxed) == 1));
            let order = order.into_inner().unwrap();
            if !parallel {
                assert_eq!(order, (0..runs.len()).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn merge_runs_is_the_stable_sort() {
        // runs of random keys from a small range (many ties), every split point and length,
        // tagged with their position: a stable merge keeps the tags of equal keys in order
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let by_key = |a: &(u64, usize), b: &(u64, usize)| a.0.cmp(&b.0);
        for case in 0..600 {
            let n = (next() % 70) as usize;
            let range = 1 + next() % if case % 2 == 0 { 4 } else { 1000 };
            let mut v: Vec<(u64, usize)> = (0..n).map(|i| (next() % range, i)).collect();
            let mid = if n == 0 {
                0
            } else {
                (next() as usize) % (n + 1)
            };
            v[..mid].sort_by(by_key);
            v[mid..].sort_by(by_key);
            let mut want = v.clone();
            want.sort_by(by_key);
            for parallel in [false, true] {
                let mut got = v.clone();
                merge_runs(&mut got, mid, parallel, by_key);
                assert_eq!(
                    got, want,
                    "n {n} mid {mid} range {range} parallel {parallel}"
                );
            }
        }
    }

    #[test]
    fn join_gives_both_results_in_order() {
        for parallel in [false, true] {
            let (a, b) = join(parallel, || 1 + 1, || "b".repeat(3));
            assert_eq!((a, b.as_str()), (2, "bbb"));
        }
    }

    #[test]
    fn helper_keeps_its_allowed_cpus() {
        // after the move, the helper may run anywhere it could before
        #[cfg(target_os = "linux")]
        {
            let mask = || unsafe {
                let mut s: libc::cpu_set_t = std::mem::zeroed();
                libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut s);
                (0..libc::CPU_SETSIZE as usize)
                    .filter(|&c| libc::CPU_ISSET(c, &s))
                    .collect::<Vec<_>>()
            };
            let before = mask();
            let (_, after) = join(
                true,
                || (),
                || {
                    start_elsewhere(current_cpu());
                    mask()
                },
            );
            assert_eq!(before, after);
        }
    }
}
