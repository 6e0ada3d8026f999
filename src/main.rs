//! The `stallscope` binary: see `stallscope --help`.

fn main() {
    fixed_mmap_threshold();
    stallscope::advice::on_many_files(keep_freed_memory);
    std::process::exit(stallscope::cli::run());
}

/// glibc's `mallopt`, and the parameters set here (glibc's `malloc.h`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod glibc {
    use std::ffi::c_int;
    extern "C" {
        pub fn mallopt(param: c_int, value: c_int) -> c_int;
    }
    pub const M_TOP_PAD: c_int = -2;
    pub const M_MMAP_THRESHOLD: c_int = -3;

    /// Sets `param` unless the environment variable `env` (glibc's own name for it) does.
    pub fn set_unless_in_env(env: &str, param: c_int, value: c_int) {
        if std::env::var_os(env).is_none() {
            // SAFETY: mallopt only sets an allocator parameter
            unsafe {
                mallopt(param, value);
            }
        }
    }
}

/// glibc raises its mmap threshold (up to 32 MiB) each time a large block is freed: after the
/// reader frees its multi-MiB blocks, the analysis' vectors of a large trace land on the
/// `brk` heap instead of their own mappings, where growing them copies and freeing them
/// leaves holes that are never given back. A fixed threshold keeps every large buffer in its
/// own mapping (grown with `mremap`, returned when freed): 1 GB trace, `analyze` peak RSS
/// ~250 → ~215 MB, same speed. `MALLOC_MMAP_THRESHOLD_` in the environment still wins.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn fixed_mmap_threshold() {
    // called before any thread starts
    glibc::set_unless_in_env("MALLOC_MMAP_THRESHOLD_", glibc::M_MMAP_THRESHOLD, 256 << 10);
}

/// A folder's ranks are read one after another, each into buffers freed before the next: by
/// default glibc gives the top of each heap back to the system as soon as 128 KiB of it is
/// free, so every rank faulted its pages in again (16 ranks of 64 MB on two cores: 218 k
/// faults, 0.7 s of system time in 1.4 s). Keeping 64 MiB free at the top of each heap
/// reuses them: ~90 k faults, 1.15–1.25 s, peak RSS 56 → ~105 MB, the same for any number of
/// ranks (docs/performance.md, fourteenth pass). A single trace keeps the default: its
/// buffers are allocated about once, and the pad would only raise its peak.
/// `MALLOC_TOP_PAD_` in the environment still wins.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn keep_freed_memory() {
    glibc::set_unless_in_env("MALLOC_TOP_PAD_", glibc::M_TOP_PAD, 64 << 20);
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn fixed_mmap_threshold() {}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn keep_freed_memory() {}
