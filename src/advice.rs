//! What the library tells the process that runs it about the memory work ahead, for a binary
//! that tunes its allocator. The library never tunes the allocator itself (it also runs
//! inside Python processes); the `stallscope` binary registers its hooks at start-up
//! (`src/main.rs`), and a process that registers none is unaffected.

use std::sync::OnceLock;

static MANY_FILES: OnceLock<fn()> = OnceLock::new();

/// Registers `hook`, called before a folder's files are read one after another: each file's
/// buffers are freed and the next file's allocated again, so an allocator that gives freed
/// memory back to the system at once pays a page fault for every page of every file. The
/// first registration wins.
pub fn on_many_files(hook: fn()) {
    let _ = MANY_FILES.set(hook);
}

/// Announces that many files are about to be read in turn (see [`on_many_files`]).
pub(crate) fn many_files() {
    if let Some(hook) = MANY_FILES.get() {
        hook();
    }
}
