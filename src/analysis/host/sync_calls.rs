//! Which host calls wait for the device: the sync calls of a trace and their kind. The lower
//! fact of host synchronization: [`super::gaps`] attributes device idle time to these calls,
//! and [`super::syncs`] locates them and sums that idle per call and site.
//!
//! A **sync call** is a host runtime/driver call ([`CpuKind::Runtime`], [`CpuKind::Driver`],
//! [`CpuKind::OtherRuntime`]) that blocks until device work finishes ([`sync_kind`]):
//!
//! | kind | calls |
//! |---|---|
//! | stream | `cudaStreamSynchronize`, `hipStreamSynchronize`, `cuStreamSynchronize` |
//! | device | `cudaDeviceSynchronize`, `hipDeviceSynchronize`, `cuCtxSynchronize`, `cudaThreadSynchronize` |
//! | event | `cudaEventSynchronize`, `hipEventSynchronize`, `cuEventSynchronize` |
//! | blocking copy | synchronous copies (`cudaMemcpy`, `cudaMemcpy2D/3D`, `hipMemcpy`, `hipMemcpyWithStream`, `cuMemcpyDtoH`, …) and asynchronous copies whose device copy goes to pageable host memory (`Memcpy DtoH (Device -> Pageable)`: CUDA returns only when it is done) |

use crate::model::fast::NameMemo;
use crate::model::{CpuKind, GpuKind, Trace, NONE};

/// What a sync call waits for.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum SyncKind {
    /// One stream.
    Stream,
    /// The whole device.
    Device,
    /// One event.
    Event,
    /// A copy that returns only when the device has finished it.
    BlockingCopy,
}

impl SyncKind {
    /// Short label.
    pub fn as_str(&self) -> &'static str {
        match self {
            SyncKind::Stream => "stream sync",
            SyncKind::Device => "device sync",
            SyncKind::Event => "event sync",
            SyncKind::BlockingCopy => "blocking copy",
        }
    }
}

/// The family name of a runtime/driver API call ([`crate::model::classify::api_base`]).
pub use crate::model::classify::api_base;

/// Kind of a sync call from its name alone (`None` for other calls), by its family
/// ([`api_base`]). Asynchronous copies to pageable memory are recognised by [`sync_calls`],
/// which sees their device copy.
pub fn sync_kind(name: &str) -> Option<SyncKind> {
    match api_base(name) {
        "cudaStreamSynchronize" | "hipStreamSynchronize" | "cuStreamSynchronize" => {
            Some(SyncKind::Stream)
        }
        "cudaDeviceSynchronize"
        | "hipDeviceSynchronize"
        | "cuCtxSynchronize"
        | "cudaThreadSynchronize" => Some(SyncKind::Device),
        "cudaEventSynchronize" | "hipEventSynchronize" | "cuEventSynchronize" => {
            Some(SyncKind::Event)
        }
        "cudaMemcpy"
        | "cudaMemcpy2D"
        | "cudaMemcpy3D"
        | "cudaMemcpyFromSymbol"
        | "cudaMemcpyToSymbol"
        | "cudaMemcpyPeer"
        | "hipMemcpy"
        | "hipMemcpyWithStream"
        | "hipMemcpy2D"
        | "hipMemcpyDtoH"
        | "hipMemcpyHtoD"
        | "hipMemcpyDtoD"
        | "cuMemcpyDtoH"
        | "cuMemcpyHtoD"
        | "cuMemcpy" => Some(SyncKind::BlockingCopy),
        _ => None,
    }
}

/// True for a device copy into pageable host memory.
pub fn is_pageable_dtoh(name: &str) -> bool {
    name.contains("DtoH") && name.contains("Pageable")
}

fn is_host_call(kind: CpuKind) -> bool {
    matches!(
        kind,
        CpuKind::Runtime | CpuKind::Driver | CpuKind::OtherRuntime
    )
}

/// Every sync call of the trace: (index in `trace.cpu`, kind), in start order.
pub fn sync_calls(trace: &Trace) -> Vec<(u32, SyncKind)> {
    let mut pageable_name = NameMemo::new(trace, is_pageable_dtoh);
    let mut pageable: Vec<u32> = trace
        .gpu
        .iter()
        .filter(|g| g.kind == GpuKind::Memcpy && g.launch != NONE && pageable_name.get(g.name))
        .map(|g| g.launch)
        .collect();
    pageable.sort_unstable();
    pageable.dedup();
    let mut kind_by_name = NameMemo::new(trace, sync_kind);
    let mut out = Vec::new();
    for (i, e) in trace.cpu.iter().enumerate() {
        if !is_host_call(e.kind) {
            continue;
        }
        let k = kind_by_name.get(e.name).or_else(|| {
            pageable
                .binary_search(&(i as u32))
                .is_ok()
                .then_some(SyncKind::BlockingCopy)
        });
        if let Some(k) = k {
            out.push((i as u32, k));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Version suffixes and per-thread-stream variants name the same family on Kineto and
    /// nsys input.
    #[test]
    fn api_families_ignore_version_suffixes() {
        assert_eq!(api_base("cudaMalloc_v3020"), "cudaMalloc");
        assert_eq!(api_base("cuMemAlloc_v2"), "cuMemAlloc");
        assert_eq!(api_base("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
        assert_eq!(api_base("cudaMemcpyAsync_ptsz_v7000"), "cudaMemcpyAsync");
        assert_eq!(
            api_base("cudaStreamSynchronize_ptsz"),
            "cudaStreamSynchronize"
        );
        assert_eq!(api_base("hipMalloc"), "hipMalloc");
        assert_eq!(api_base("cuMemCreate"), "cuMemCreate");
        assert_eq!(api_base("cuda_v"), "cuda_v");
        assert_eq!(sync_kind("cuMemcpyDtoH_v2"), Some(SyncKind::BlockingCopy));
        assert_eq!(
            sync_kind("cudaMemcpy_ptds_v7000"),
            Some(SyncKind::BlockingCopy)
        );
        assert_eq!(
            sync_kind("cudaStreamSynchronize_ptsz"),
            Some(SyncKind::Stream)
        );
        assert_eq!(sync_kind("cudaMemcpyAsync_v3020"), None);
    }
}
