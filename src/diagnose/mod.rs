//! Bottleneck diagnosis: a one-line verdict and findings ranked by the time each would recover.
//!
//! Stage 5 of the pipeline (ARCHITECTURE.md): rules over the analyses' facts; it may use the
//! analyses and everything below them, never the report or the CLI.
//!
//! Rules read facts only: the views of [`crate::analysis`] (steps, window, kernel table, GPU
//! timeline, devices) and the facts computed here once for all rules ([`Facts`]: device idle
//! gaps and their host attribution, launch statistics and queue depth, host syncs, the host's
//! wait for the device). One file per rule family:
//!
//! | file | rules |
//! |---|---|
//! | [`host`] | `startup`, `dataloader-stall`, `host-sync`, `compile-in-window`, `launch-bound`, `gpu-idle-gaps`, `queue-full` |
//! | [`compiled`] | `graph-breaks` |
//! | [`device`] | `fallback-kernel`, `fp32-matmul`, `small-kernels`, `low-occupancy` |
//! | [`transfer`] | `exposed-communication`, `pageable-memcpy`, `memcpy-heavy`, `gpu-memory-pressure` |
//! | [`roofline`] | `memory-bound`, `compute-bound` |
//! | [`memory`] | `memory-fragmentation` (and the live-at-peak evidence of `gpu-memory-pressure`) |
//! | [`patterns`] | `extra-cuda-copy`, `grad-not-set-to-none`, `for-loop-indexing`, `conv-bias-before-batchnorm`, `matmul-dim-not-aligned`, `optimizer-single-tensor` (torch.profiler's patterns) |
//! | [`ranks`] | `rank-straggler`, `comm-imbalance` (across the ranks of a folder, over their facts) |
//! | [`ncu`] | `ncu-register-spills`, `ncu-bank-conflicts`, `ncu-l2-hit-rate`, `ncu-occupancy`, `ncu-warp-stalls`, `ncu-other-rules` (with `--ncu`, or an Nsight Compute CSV alone) |
//!
//! # Reading order, from the bottom up
//!
//! 1. [`finding`]: the shared types every rule builds ([`Severity`], [`Evidence`],
//!    [`Location`], [`Finding`], [`Diagnosis`]), rounding ([`round3`], [`metric`]) and ranking
//!    ([`rank`]); [`words`]: how rules write numbers into sentences ([`fmt_ns`], [`fmt_us_sentence`],
//!    [`pct`], [`count`], [`short`]).
//! 2. [`facts`]: [`Facts`], what every rule reads, computed once.
//! 3. [`claims`]: what the device-side rules share (a kernel claimed once, the host-wait cap).
//! 4. The rule families (table above), each `rules(&Facts) -> Vec<Finding>`; [`verdict`]
//!    reads the ranked findings and writes the one-line verdict.
//! 5. [`run`]: the rule runner ([`diagnose`], [`diagnose_facts`]) calls every family in a fixed
//!    order and ranks the findings. Nothing in `diagnose/` imports it.
//!
//! Rules import the shared types through this module (`super::{Facts, Finding, …}`); the
//! re-exports below keep every `crate::diagnose::X` path of the stages above valid.//!
//! # Recoverable time and double counting
//!
//! Every finding states `recoverable_us`: an upper bound, per step, of the time its fix could
//! remove from the step, and the basis of that bound. Window totals are divided by the number
//! of steps in the window (1 when the window has no steps). Pools of time are never claimed
//! twice:
//!
//! * **Device idle** is split once, to the nanosecond, by host cause
//!   ([`crate::analysis::host::gaps::Cause`]); each host-side rule claims its causes only:
//!   one-time start-up → `startup`, sync →
//!   `host-sync`, compile → `compile-in-window`, dataloader → `dataloader-stall`, launch
//!   overhead and other CPU work in gaps under 1 ms → `launch-bound`, other CPU work in gaps of
//!   1 ms and more and untraced time → `gpu-idle-gaps`; the same host work between the graphs
//!   of a compiled call with graph breaks → `graph-breaks`. Gaps inside CUDA/HIP graph replays
//!   are no host rule's: the device ran the graph without the host there. On several devices a rule claims the
//!   largest per-device figure, never the sum.
//! * **Device busy time** is claimed kernel by kernel: each kernel belongs to the first
//!   device-side rule that claims it (fallback > fp32 GEMM > small kernels > roofline > low
//!   occupancy > the `ncu-*` rules, which weigh each profiled launch by the unclaimed time of
//!   its trace kernel and compose among themselves so that one kernel's ncu findings never
//!   exceed its time; see [`ncu`]). Exposed communication and exposed copies are disjoint by
//!   construction (GPU timeline). A faster device only helps while the host waits for it, so each
//!   device-side bound is capped by the host's wait per step
//!   ([`crate::analysis::host::gaps::StepWait`]); the uncapped figure is kept in the evidence.
//!
//! # Severity
//!
//! From the recoverable share of the step: **high** ≥ 20 %, **medium** ≥ 5 %, **low** ≥ 1 %,
//! else **info**. Each rule has its own firing threshold (documented in `docs/rules.md`);
//! below it the rule reports nothing, so a healthy trace gets no finding above `info`.

pub mod facts;
pub mod finding;
pub mod words;

pub mod claims;
pub mod compiled;
pub mod device;
pub mod host;
pub mod memory;
pub mod ncu;
pub mod patterns;
pub mod ranks;
pub mod roofline;
pub mod transfer;
pub mod verdict;

pub mod run;

#[cfg(test)]
pub(crate) mod testutil;

pub use facts::{Facts, STARTUP_DOMINATES};
pub use finding::{metric, rank, round3, Diagnosis, Evidence, Finding, Location, Severity};
pub use run::{diagnose, diagnose_facts};
pub use words::{count, fmt_ns, fmt_us_sentence, pct, short};
