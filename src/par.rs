//! Fork-join on two threads, the only parallelism the stages after reading need.

/// Runs `a` on the calling thread and `b` beside it on a scoped thread when `parallel`, else
/// both in turn; a panic in either is passed on.
pub fn join<A: Send, B: Send>(
    parallel: bool,
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    if !parallel {
        let ra = a();
        return (ra, b());
    }
    std::thread::scope(|s| {
        let hb = s.spawn(b);
        let ra = a();
        let rb = hb.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        (ra, rb)
    })
}
