//! Name-based classification of device work: kernel category, communication, tensor cores.
//!
//! One place for every name pattern, so that the step breakdown, the GPU timeline, the kernel
//! table and the diagnosis all agree on what "communication" or "tensor core" means.

use serde::Serialize;

/// What a kernel does, from its name (memcpy/memset come from the event kind).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum KernelCategory {
    /// Matrix multiplication (cuBLAS, cuBLASLt nvjet, CUTLASS, Tensile/hipBLASLt, ...).
    Gemm,
    /// Convolution (cuDNN, MIOpen, implicit GEMM, im2col/vol2col fallbacks).
    Conv,
    /// Attention (flash, fmha, paged attention, SDPA).
    Attention,
    /// Pointwise kernels.
    Elementwise,
    /// Reductions, softmax, top-k, scans.
    Reduction,
    /// Normalisation layers.
    Norm,
    /// Device memory copies.
    Memcpy,
    /// Device memory fills.
    Memset,
    /// Collectives (NCCL/RCCL).
    Communication,
    /// Triton-generated kernels (torch.compile / Inductor) not recognised as above.
    Triton,
    /// Anything else.
    Other,
}

impl KernelCategory {
    /// Lower-case name as used in JSON and tables.
    pub fn as_str(&self) -> &'static str {
        match self {
            KernelCategory::Gemm => "gemm",
            KernelCategory::Conv => "conv",
            KernelCategory::Attention => "attention",
            KernelCategory::Elementwise => "elementwise",
            KernelCategory::Reduction => "reduction",
            KernelCategory::Norm => "norm",
            KernelCategory::Memcpy => "memcpy",
            KernelCategory::Memset => "memset",
            KernelCategory::Communication => "communication",
            KernelCategory::Triton => "triton",
            KernelCategory::Other => "other",
        }
    }
}

fn has(hay: &str, needles: &[&str]) -> bool {
    needles.iter().any(|n| hay.contains(n))
}

/// Everything the analyses ask of a device event's name, computed together: its
/// [`categorize`] category, [`uses_tensor_cores`] and [`is_communication`]. A trace keeps one
/// per name of its device events ([`crate::model::Trace::kernel_class`]), computed once for
/// every analysis: kernel names run to thousands of characters (templated CUTLASS and cuDNN
/// names) and each test is a dozen substring searches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelClass {
    /// [`categorize`] of the name.
    pub category: KernelCategory,
    /// [`uses_tensor_cores`] of the name.
    pub tensor_cores: bool,
    /// [`is_communication`] of the name (the same as `category == Communication`).
    pub communication: bool,
    /// [`is_copy_kernel`] of the name.
    pub copy_kernel: bool,
}

impl KernelClass {
    /// The class of `name`.
    pub fn of(name: &str) -> KernelClass {
        let category = categorize(name);
        KernelClass {
            category,
            tensor_cores: uses_tensor_cores(name),
            communication: category == KernelCategory::Communication,
            copy_kernel: is_copy_kernel(name),
        }
    }
}

/// The [`KernelClass`] table of a trace ([`crate::model::Trace::kernel_classes`]), for loops
/// over device events: a lookup is an index.
#[derive(Clone, Copy)]
pub struct KernelClasses<'t> {
    pub(crate) table: &'t [Option<KernelClass>],
    pub(crate) trace: &'t crate::model::Trace,
}

impl KernelClasses<'_> {
    /// The class of name `id` (classified on the spot when no device event carries it).
    #[inline]
    pub fn get(&self, id: crate::model::NameId) -> KernelClass {
        match self.table.get(id.0 as usize) {
            Some(Some(c)) => *c,
            _ => KernelClass::of(self.trace.name(id)),
        }
    }
}

/// Name fragments (lower case) of communication kernels: NCCL (`ncclKernel_*`,
/// `ncclDevKernel_*`) and RCCL, MSCCL++, NVSHMEM, DeepEP (`deep_ep::`, `dpsk::ep`), the custom
/// all-reduce kernels of vLLM (`cross_device_reduce`) and TensorRT-LLM (`oneShotAllReduce`,
/// `twoShotAllReduce`), PyTorch symmetric memory (`symm_mem`, `multimem_all_reduce_kernel`,
/// `two_shot_all_reduce`), and collective names without a library prefix.
const COMMUNICATION_PATTERNS: &[&str] = &[
    "nccl",
    "rccl",
    "mscclpp",
    "nvshmem",
    "deep_ep",
    "deepep",
    "dpsk::ep",
    "cross_device_reduce",
    "symm_mem",
    "multimem",
    "all_reduce",
    "allreduce",
    "all_gather",
    "allgather",
    "reduce_scatter",
    "reducescatter",
    "all_to_all",
    "alltoall",
];

/// True for communication kernels ([`COMMUNICATION_PATTERNS`], any case). They run on few SMs
/// by design and overlap computation when they can: the GPU timeline counts them as
/// communication (exposed when nothing computes beside them) and `low-occupancy` never leads
/// with them. On the corpus files that have a TraceLens reference this is TraceLens's own rule
/// (`nccl`, `rccl`, `cross_device_reduce`): none of them has the other families.
pub fn is_communication(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    has(&l, COMMUNICATION_PATTERNS)
}

/// The same test as [`is_communication`] (kept for callers of the earlier, wider name).
pub fn is_collective_kernel(name: &str) -> bool {
    is_communication(name)
}

/// True for a host-side communication span: `gloo:*`, `nccl:*`, `mpi:*`, `ucc:*` (c10d's
/// profiling title of a collective's work, e.g. `gloo:all_reduce`; it opens when the rank
/// calls the collective and closes when the work completes on that rank), and the MPI calls
/// Nsight Systems' MPI tracing records as ranges of its `MPI` domain (`MPI:MPI_Send`,
/// `MPI_Allreduce`; not the set-up and tear-down calls `MPI_Init*` and `MPI_Finalize`).
pub fn is_host_collective(name: &str) -> bool {
    ["gloo:", "nccl:", "mpi:", "ucc:"]
        .iter()
        .any(|p| name.starts_with(p))
        || name
            .strip_prefix("MPI:")
            .unwrap_or(name)
            .strip_prefix("MPI_")
            .is_some_and(|call| {
                call.starts_with(|c: char| c.is_ascii_uppercase())
                    && !call.starts_with("Init")
                    && !call.starts_with("Finalize")
            })
}

/// True for a host-side collective the host itself runs ([`is_host_collective`] without
/// `nccl:*` and `ucc:*`, whose spans on a GPU run enqueue device work and return): gloo, the
/// MPI backend and MPI calls. The calling thread waits in it for the other ranks and the
/// transfer.
pub fn is_host_run_collective(name: &str) -> bool {
    is_host_collective(name) && !name.starts_with("nccl:") && !name.starts_with("ucc:")
}

/// True for ROCm 7.1 copy kernels (`MEMORY_COPY_*`, `__amd_rocclr_copyBuffer*`), which that
/// release records as `kernel` events where later ones write `gpu_memcpy` (TraceLens counts
/// them as memcpy).
pub fn is_copy_kernel(name: &str) -> bool {
    name.starts_with("MEMORY_COPY") || name.starts_with("__amd_rocclr_copyBuffer")
}

/// Category of a kernel from its name.
pub fn categorize(name: &str) -> KernelCategory {
    let l = name.to_ascii_lowercase();
    if is_collective_kernel(name) {
        return KernelCategory::Communication;
    }
    if l.starts_with("memcpy") || l.contains("copybuffer") || l.starts_with("memory_copy") {
        return KernelCategory::Memcpy;
    }
    if l.starts_with("memset") || l.contains("fillbuffer") {
        return KernelCategory::Memset;
    }
    if has(
        &l,
        &[
            "flash",
            "fmha",
            "attention",
            "attn",
            "sdpa",
            "paged_attention",
            "xformers",
            "mha_",
            "sage_fwd",
            "sageattn",
            "sage_attn",
        ],
    ) {
        return KernelCategory::Attention;
    }
    // `_typeConvert` and friends are not convolutions
    let no_convert = l.replace("convert", "");
    if has(
        &no_convert,
        &[
            "conv",
            "scudnn",
            "hcudnn",
            "884cudnn",
            "1688cudnn",
            "16816cudnn",
            "dgrad",
            "wgrad",
            "fprop",
            "winograd",
            "im2col",
            "vol2col",
            "col2im",
            "col2vol",
            "implicit_gemm",
            "miopen",
            "igemm",
        ],
    ) {
        return KernelCategory::Conv;
    }
    if has(
        &l,
        &[
            "gemm",
            "gemv",
            "matmul",
            "nvjet",
            "cublas",
            "cijk_",
            "xmma",
            "gmma",
            "splitk",
            "_mm_",
            "triton_tem_fused_mm",
            "triton_tem_fused_addmm",
            "bmm",
            "hipblaslt",
            "wvsplitk",
        ],
    ) {
        return KernelCategory::Gemm;
    }
    if has(
        &l,
        &[
            "layer_norm",
            "layernorm",
            "rms_norm",
            "rmsnorm",
            "batch_norm",
            "batchnorm",
            "group_norm",
            "groupnorm",
            "instance_norm",
            "instancenorm",
            "l2_norm",
            "l2norm",
            "_norm_",
            "norm_fwd",
            "norm_bwd",
            "bn_fw",
            "bn_bw",
        ],
    ) {
        return KernelCategory::Norm;
    }
    if l.starts_with("triton_") || l.contains(" triton_") {
        return KernelCategory::Triton;
    }
    if has(
        &l,
        &[
            "reduce",
            "reduction",
            "softmax",
            "argmax",
            "argmin",
            "topk",
            "scan",
            "cumsum",
            "sum_kernel",
            "mean_kernel",
            "norm_kernel",
            "max_kernel",
            "min_kernel",
        ],
    ) {
        return KernelCategory::Reduction;
    }
    if has(
        &l,
        &[
            "elementwise",
            "vectorized",
            "unrolled",
            "pointwise",
            "copy_kernel",
            "catarray",
            "transpose",
            "fill_kernel",
            "fill",
            "add",
            "mul",
            "div",
            "relu",
            "gelu",
            "silu",
            "sigmoid",
            "tanh",
            "activation",
            "cast",
            "where",
            "clamp",
            "dropout",
            "index",
            "gather",
            "scatter",
            "cat_",
            "sort",
            "apply",
            "rotary",
            "rope",
            "embedding",
        ],
    ) {
        return KernelCategory::Elementwise;
    }
    KernelCategory::Other
}

/// The TensorBoard plugin's 2021 list of tensor-core kernel name fragments.
const TB_TC_PATTERNS: &[&str] = &[
    "h884",
    "s884",
    "h1688",
    "s1688",
    "hmma",
    "i8816",
    "16816",
    "dgrad_1x1_stride_2x2",
    "first_layer_wgrad_kernel",
    "conv1x1",
    "conv2d_c1_k1",
    "direct_group",
    "xmma_implicit_gemm",
    "xmma_sparse_conv",
    "xmma_warp_specialized_implicit_gemm",
    "xmma_gemm",
    "xmma_sparse_gemm",
    "c1688",
];

/// Fragments of current tensor-core kernels the 2021 list misses.
const MODERN_TC_PATTERNS: &[&str] = &[
    "nvjet",
    "gmma",
    "wgmma",
    "tensorop",
    "16832",
    "hmma",
    "imma",
    "dmma",
    "tf32",
    "bf16",
    "f16f16",
    "e4m3",
    "e5m2",
    "fp8",
    "flash",
    "fmha",
    "mfma",
    "xdl",
    "wmma",
    "_mi16x",
    "_mi32x",
    "umma",
    "tcgen05",
    "sm90_xmma",
    "sm100_xmma",
    "sm80_xmma",
];

/// Fragments that mark plain FP32 (FFMA) kernels even when the name looks like a tensor-core
/// kernel (`sm80_xmma_gemm_f32f32_..._ffma_...`).
const NON_TC_PATTERNS: &[&str] = &["ffma", "sgemm", "_f32f32_f32f32_f32", "fp32_gemm"];

/// True when a kernel name says it runs on tensor cores / matrix cores. The modern fragments
/// (`bf16`, `fp8`, `flash`, ...) count only for GEMM, convolution and attention kernels, so a
/// bf16 elementwise kernel is not a tensor-core kernel.
pub fn uses_tensor_cores(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    if has(&l, NON_TC_PATTERNS) && !l.contains("tf32") {
        return false;
    }
    if has(name, TB_TC_PATTERNS) {
        return true;
    }
    // the fragment test first: it is the cheaper of the two
    has(&l, MODERN_TC_PATTERNS)
        && matches!(
            categorize(name),
            KernelCategory::Gemm | KernelCategory::Conv | KernelCategory::Attention
        )
}

/// The precision a GEMM/convolution works in, as far as a name or an operator's recorded
/// input types say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// 16 bits or fewer: bf16, fp16, fp8, fp4, int8 (never an FP32 matmul, tensor cores or not:
    /// GEMV kernels do not use them and need not).
    Low(&'static str),
    /// FP32 (or TF32-eligible FP32 inputs).
    Fp32(&'static str),
}

/// Fragments (lower case) of low-precision kernel names and dtype spellings: `__nv_bfloat16`,
/// `c10::BFloat16`, `Half`, `bf16`, `fp16`/`f16`, `e4m3`/`e5m2`/`fp8`, `fp4`/`e2m1`/`mxfp`,
/// `int8`.
const LOW_PRECISION: &[(&str, &str)] = &[
    ("bfloat16", "bf16"),
    ("bf16", "bf16"),
    ("half", "fp16"),
    ("f16", "fp16"),
    ("e4m3", "fp8"),
    ("e5m2", "fp8"),
    ("fp8", "fp8"),
    ("float8", "fp8"),
    ("e2m1", "fp4"),
    ("fp4", "fp4"),
    ("mxfp", "fp4"),
    ("int8", "int8"),
    ("i8i8", "int8"),
    ("s8s8", "int8"),
    ("signed char", "int8"),
];

/// Fragments (lower case) of FP32 GEMM/convolution kernel names: cuBLAS `sgemm`/`sgemv`,
/// cuDNN `scudnn`, CUTLASS/cuBLASLt `f32f32` and `ffma`, `fp32`, and a `float` template
/// argument (`gemv2T_kernel_val<int, int, float, …>`, `dgrad_engine<float, …>`).
const FP32_NAME: &[&str] = &[
    "sgemm", "sgemv", "scudnn", "f32f32", "ffma", "fp32", "tf32", "<float", "float,", "float>",
];

/// Precision of a GEMM/convolution kernel from its name, `None` when the name does not say.
/// Low-precision evidence wins: a bf16 GEMV accumulates in `float` and names it too.
pub fn name_precision(name: &str) -> Option<Precision> {
    let l = name.to_ascii_lowercase();
    if let Some((_, p)) = LOW_PRECISION.iter().find(|(f, _)| l.contains(f)) {
        return Some(Precision::Low(p));
    }
    FP32_NAME
        .iter()
        .find(|f| l.contains(*f))
        .map(|f| Precision::Fp32(f.trim_matches(|c| c == '<' || c == ',' || c == '>')))
}

/// Precision of an operator call from its recorded `Input type` text (`["float", "float"]`,
/// `["c10::BFloat16", …]`), `None` when no tensor input names a floating or int8 type.
pub fn types_precision(types: &str) -> Option<Precision> {
    let l = types.to_ascii_lowercase();
    if let Some((_, p)) = LOW_PRECISION.iter().find(|(f, _)| l.contains(f)) {
        return Some(Precision::Low(p));
    }
    l.contains("\"float\"").then_some(Precision::Fp32("float"))
}

/// The TensorBoard plugin's own (2021) tensor-core test, for peer-compatible figures.
pub fn uses_tensor_cores_tb(name: &str) -> bool {
    has(name, TB_TC_PATTERNS)
}

/// The family name of a runtime/driver API call: the name without its API-version suffix
/// (`cudaMalloc_v3020`, `cuMemAlloc_v2`, `cudaLaunchKernel_v7000`, as Nsight Systems and
/// some CUPTI versions record them) and without the per-thread default-stream variant
/// (`cudaMemcpyAsync_ptsz_v7000`, `_ptds`). The one place Kineto and nsys names of one call
/// are made equal; other names come back unchanged.
pub fn api_base(name: &str) -> &str {
    let mut base = name;
    if let Some(i) = base.rfind("_v") {
        let digits = &base[i + 2..];
        if !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()) {
            base = &base[..i];
        }
    }
    base.strip_suffix("_ptsz")
        .or_else(|| base.strip_suffix("_ptds"))
        .unwrap_or(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_communication_spans() {
        for yes in [
            "gloo:all_reduce",
            "nccl:broadcast",
            "mpi:send",
            "ucc:allgather",
        ] {
            assert!(is_host_collective(yes), "{yes}");
        }
        // Nsight Systems' MPI tracing: the calls that move data or wait for other ranks
        for yes in [
            "MPI:MPI_Send",
            "MPI_Recv",
            "MPI_Allreduce",
            "MPI_Barrier",
            "MPI:MPI_Wait",
        ] {
            assert!(is_host_collective(yes), "{yes}");
        }
        assert!(is_host_run_collective("gloo:all_reduce"));
        assert!(is_host_run_collective("MPI:MPI_Recv"));
        assert!(!is_host_run_collective("nccl:all_reduce"));
        assert!(!is_host_run_collective("ucc:allgather"));
        for no in [
            "MPI:MPI_Init",
            "MPI_Init_thread",
            "MPI_Finalize",
            "MPI Rank 0",
            "MPI_",
            "aten::all_reduce",
            "ProfilerStep#1",
        ] {
            assert!(!is_host_collective(no), "{no}");
        }
    }

    #[test]
    fn categories() {
        assert_eq!(
            categorize("ncclKernel_AllReduce_RING_LL_Sum_float"),
            KernelCategory::Communication
        );
        assert_eq!(
            categorize("void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int)"),
            KernelCategory::Conv
        );
        assert_eq!(
            categorize("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN"),
            KernelCategory::Gemm
        );
        assert_eq!(categorize("volta_sgemm_128x64_nn"), KernelCategory::Gemm);
        assert_eq!(
            categorize("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>"),
            KernelCategory::Elementwise
        );
        assert_eq!(
            categorize("flash_fwd_kernel<Flash_fwd_kernel_traits>"),
            KernelCategory::Attention
        );
        assert_eq!(
            categorize("triton_poi_fused_add_cos_sin_0"),
            KernelCategory::Triton
        );
        assert_eq!(
            categorize("void at::native::(anonymous namespace)::vol2col_kernel<float>"),
            KernelCategory::Conv
        );
    }

    /// Names met in the corpus that earlier patterns got wrong.
    #[test]
    fn categories_of_corpus_kernels() {
        use KernelCategory::*;
        let cases = [
            // B200 symmetric-memory all-reduce: a collective without "nccl" in its name
            (
                "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, unsigned long)",
                Communication,
            ),
            // "_typeConvert" is not a convolution
            (
                "std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long)",
                Norm,
            ),
            // a cutlass type argument does not make a GEMM
            (
                "void moe::dev::finalize::finalizeKernelVecLoad<moe::dev::finalize::KernelParams<cutlass::bfloat16_t, cutlass::bfloat16_t>>(moe::dev::finalize::KernelParams<cutlass::bfloat16_t, cutlass::bfloat16_t>)",
                Other,
            ),
            // "Renormalize" is not a normalisation layer
            (
                "void moe::dev::routing::routingIndicesHistogramKernel<moe::dev::routing::routingRenormalize::KernelParams<__nv_bfloat16>>(moe::dev::routing::routingRenormalize::KernelParams<__nv_bfloat16>)",
                Other,
            ),
            // cuDNN implicit-GEMM convolutions (the "relu" is a fused epilogue)
            ("cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1", Conv),
            ("cudnn_infer_volta_scudnn_128x64_stridedB_interior_nn_v1", Conv),
            ("sage_fwd", Attention),
            ("attn_fwd", Attention),
            (
                "void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_tn_align1>(cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_tn_align1::Params)",
                Gemm,
            ),
            (
                "void cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4_nhwc_align8>(cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4_nhwc_align8::Params)",
                Conv,
            ),
            (
                "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(float, float)",
                Norm,
            ),
            (
                "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float)",
                Norm,
            ),
            (
                "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64ELi8ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib",
                Norm,
            ),
            ("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", Communication),
            ("__amd_rocclr_fillBufferAligned", Memset),
            ("batched_transpose_16x32_half", Elementwise),
            (
                "void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 2, 128, 1>(float*)",
                Elementwise,
            ),
            (
                "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::NormOps<float, float>, unsigned int, float, 4>>(at::native::ReduceOp<float>)",
                Reduction,
            ),
        ];
        for (name, want) in cases {
            assert_eq!(categorize(name), want, "{name}");
        }
        assert!(is_communication("multimem_all_reduce_kernel"));
        assert!(is_collective_kernel("ncclDevKernel_Generic"));
        assert!(!uses_tensor_cores(
            "cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1"
        ));
        assert!(!uses_tensor_cores(
            "void moe::dev::finalize::finalizeKernelVecLoad<moe::dev::finalize::KernelParams<cutlass::bfloat16_t>>"
        ));
    }

    /// Communication kernels of the libraries serving engines and MoE training use today.
    #[test]
    fn communication_beyond_nccl() {
        for name in [
            "void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*)",
            "void deep_ep::internode_ll::combine<false, 7168>(void*, int*, long*)",
            "void dpsk::ep::dispatch_kernel<bf16>(Params)",
            "void nvshmemi_transfer_rma_p2p_get_bw_kernel(void*)",
            "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*)",
            "void tensorrt_llm::kernels::oneShotAllReduceKernel<__nv_bfloat16, 8>(AllReduceParams)",
            "void tensorrt_llm::kernels::twoShotAllReduceKernel<half, 4>(AllReduceParams)",
            "void mscclpp::allreduce8<__nv_bfloat16>(void*, mscclpp::DeviceHandle)",
            "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "rcclGenericKernel<1, false>(ncclDevComm*, unsigned long, ncclWork*)",
            "void c10d::symmetric_memory::two_shot_all_reduce_kernel<float, 16>(float**)",
            "void c10d::symm_mem::multimem_all_gather_kernel<16>(char*)",
        ] {
            assert!(is_communication(name), "{name}");
            assert_eq!(categorize(name), KernelCategory::Communication, "{name}");
        }
        for name in [
            "void at::native::index_elementwise_kernel<128, 4>(int)",
            "void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float>)",
            "void at::native::_scatter_gather_elementwise_kernel<128, 8>(int)",
            "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN",
        ] {
            assert!(!is_communication(name), "{name}");
        }
    }

    #[test]
    fn precision_from_names_and_types() {
        use Precision::*;
        assert_eq!(name_precision("volta_sgemm_128x64_nn"), Some(Fp32("sgemm")));
        assert_eq!(
            name_precision("void gemv2T_kernel_val<int, int, float, float, float, float, 128>"),
            Some(Fp32("float"))
        );
        // a bf16 GEMV names its float accumulator too: bf16 wins
        assert_eq!(
            name_precision(
                "void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, float>"
            ),
            Some(Low("bf16"))
        );
        assert_eq!(
            name_precision("void gemvx::kernel<int, int, __half, __half, float, false>"),
            Some(Low("fp16"))
        );
        assert_eq!(
            name_precision("sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n"),
            Some(Low("fp8"))
        );
        assert_eq!(name_precision("my_custom_matmul_kernel"), None);
        assert_eq!(
            types_precision(r#"["c10::BFloat16", "c10::BFloat16", ""]"#),
            Some(Low("bf16"))
        );
        assert_eq!(
            types_precision(r#"["float", "float"]"#),
            Some(Fp32("float"))
        );
        assert_eq!(types_precision(r#"["long int", ""]"#), None);
    }

    #[test]
    fn tensor_cores() {
        assert!(uses_tensor_cores(
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"
        ));
        assert!(uses_tensor_cores(
            "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN"
        ));
        assert!(uses_tensor_cores("volta_h884gemm_64x128_ldg8_nn"));
        assert!(!uses_tensor_cores(
            "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x256x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas"
        ));
        assert!(!uses_tensor_cores("volta_sgemm_128x64_nn"));
        assert!(!uses_tensor_cores(
            "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>"
        ));
    }
}
