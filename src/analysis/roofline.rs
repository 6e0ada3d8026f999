//! Roofline per operator: FLOPs and bytes from recorded shapes and dtypes
//! (`record_shapes=True`: `Input Dims`, `Input type`, `Concrete Inputs`, kept in
//! [`Trace::op_shapes`]), against the device's peak FLOP/s and DRAM bandwidth
//! ([`super::devices_db`]).
//!
//! # Costs
//!
//! `e` is the element size of the dtype. Bytes are the minimum DRAM traffic: every input read
//! once, the output written once.
//!
//! | operators | FLOPs | bytes |
//! |---|---|---|
//! | `aten::mm` `[M,K]·[K,N]`, `aten::addmm` (+bias) | 2MKN | (MK + KN + MN)·e (+ bias) |
//! | `aten::bmm`, `aten::baddbmm` `[B,M,K]·[B,K,N]` | 2BMKN | B(MK + KN + MN)·e |
//! | `aten::matmul` (batch dims broadcast) | 2·batch·MKN | (A + B + out)·e |
//! | `aten::linear` `[…,K]`, `[N,K]` | 2·M·K·N with M = rows of the input | (MK + NK + MN)·e |
//! | `aten::conv{1,2,3}d`, `aten::convolution`, `aten::_convolution`, `aten::cudnn_convolution`, `aten::slow_conv_dilated{2,3}d` — stride/padding/dilation/groups from `Concrete Inputs` (no roofline without them) | 2·N·C_out·∏out·(C_in/groups)·∏kernel | (input + weight + output)·e |
//! | `aten::scaled_dot_product_attention` and its `_flash`/`_efficient`/`_cudnn` forms `[B,H,L,D]`, `flash_attn::_flash_attn_forward` `[B,L,H,D]` | 4·B·H·L·S·D, halved when `is_causal` and L = S (as TraceLens and FlashAttention count) | (q + k + v + out)·e |
//! | pointwise (`add`, `mul`, `div`, `sub`, activations, `copy_`, `to`, `fill_`, `where`, …) | one per output element | every tensor input + the output (the largest input's shape) |
//! | norms (`layer_norm`, `group_norm`, `batch_norm`) | 8 per element | 2 × input + parameters |
//! | `rms_norm`, `_fused_rms_norm` over C normalized elements (the weight's size, else `normalized_shape`) | (n ÷ C)·(2C + 2) + 2n (n without a weight), TraceLens's RMSNorm | (2 × input + weight)·e |
//! | `softmax`, `log_softmax` | 5 per element | 2 × input |
//! | reductions (`sum`, `mean`, `amax`, `norm`) | one per input element | input (+ output) |
//!
//! # Roofline
//!
//! An operator instance's **device time** is the sum of the kernels launched inside its span
//! on its thread (its descendants included); an instance nested in another instance that has
//! a formula is left to the outer one (`aten::linear` over `aten::addmm`). The compute peak is
//! the device's tensor peak for the dtype (FP16/BF16, FP8, TF32 for FP32 inputs) when its
//! kernels run on tensor cores, else the FP32 peak. `ideal = max(FLOPs ÷ peak, bytes ÷
//! bandwidth)` is the least time any implementation could take; an operator is
//! **memory-bound** when its arithmetic intensity (FLOPs ÷ bytes) is below the ridge point
//! (peak ÷ bandwidth), **compute-bound** otherwise. Achieved TFLOP/s and GB/s are FLOPs and
//! bytes over the measured device time.

use crate::model::fast::HashMap;

use super::devices_db::{self, DeviceSpec};
use crate::model::{CpuKind, GpuKind, NameId, Ns, Trace, NONE};

/// One argument of `Input Dims`.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// A tensor's shape (`[]` is a scalar tensor or a non-tensor argument).
    Tensor(Vec<i64>),
    /// A tensor list.
    List(Vec<Vec<i64>>),
}

impl Arg {
    /// The shape, if a tensor.
    pub fn shape(&self) -> Option<&[i64]> {
        match self {
            Arg::Tensor(v) => Some(v),
            Arg::List(_) => None,
        }
    }
}

fn numel(s: &[i64]) -> f64 {
    s.iter().map(|&x| x.max(0) as f64).product()
}

/// Parses `Input Dims` (`[[128, 256], [], [[1, 2], [3]]]`).
pub fn parse_dims(text: &str) -> Option<Vec<Arg>> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let outer = v.as_array()?;
    let ints = |a: &serde_json::Value| -> Option<Vec<i64>> {
        a.as_array()?.iter().map(|x| x.as_i64()).collect()
    };
    outer
        .iter()
        .map(|a| {
            let arr = a.as_array()?;
            if arr.iter().all(|x| x.is_array()) && !arr.is_empty() {
                Some(Arg::List(arr.iter().map(ints).collect::<Option<_>>()?))
            } else {
                Some(Arg::Tensor(ints(a)?))
            }
        })
        .collect()
}

/// Parses a JSON array of strings (`Input type`, `Concrete Inputs`).
pub fn parse_strings(text: &str) -> Option<Vec<String>> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    v.as_array()?
        .iter()
        .map(|x| x.as_str().map(|s| s.to_string()))
        .collect()
}

/// Element size of a dtype name as Kineto writes it.
pub fn dtype_bytes(t: &str) -> Option<f64> {
    let t = t.trim_start_matches("c10::");
    Some(match t {
        "float" | "Float" | "int" | "Int" | "unsigned int" => 4.0,
        "double" | "Double" | "long int" | "long" | "Long" | "unsigned long" => 8.0,
        "Half" | "BFloat16" | "short" | "Short" | "ComplexHalf" => 2.0,
        "unsigned char" | "signed char" | "bool" | "Bool" | "Byte" | "Char" => 1.0,
        _ if t.starts_with("Float8") => 1.0,
        "c10::complex<float>" | "complex<float>" => 8.0,
        _ => return None,
    })
}

/// Kind of work an operator does.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum CostKind {
    /// Matrix multiplication.
    Gemm,
    /// Convolution.
    Conv,
    /// Attention.
    Attention,
    /// Pointwise.
    Elementwise,
    /// Normalization.
    Norm,
    /// Softmax.
    Softmax,
    /// Reduction.
    Reduction,
}

/// FLOPs and bytes of one operator call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpCost {
    /// Kind.
    pub kind: CostKind,
    /// Floating-point operations.
    pub flops: f64,
    /// Minimum DRAM bytes.
    pub bytes: f64,
    /// Element size of the main input.
    pub elem: f64,
    /// Main input dtype as written (`float`, `c10::BFloat16`, …).
    pub dtype: &'static str,
    /// FLOPs come from the profiler's `flops` argument (`with_flops=True`), not the formula.
    pub from_args: bool,
}

fn intern_dtype(t: &str) -> &'static str {
    match t.trim_start_matches("c10::") {
        "float" => "float",
        "double" => "double",
        "Half" => "half",
        "BFloat16" => "bfloat16",
        "long int" => "int64",
        "int" => "int32",
        "bool" => "bool",
        "unsigned char" => "uint8",
        "signed char" => "int8",
        s if s.starts_with("Float8") => "float8",
        _ => "other",
    }
}

/// Integers of a `Concrete Inputs` value: `[1, 2]` → [1, 2], `3` → [3].
fn concrete_ints(s: &str) -> Option<Vec<i64>> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let inner = s.trim_start_matches('[').trim_end_matches(']');
    inner
        .split(',')
        .filter(|x| !x.trim().is_empty())
        .map(|x| x.trim().parse::<i64>().ok())
        .collect()
}

fn expand(v: &[i64], n: usize) -> Vec<i64> {
    match v.len() {
        0 => vec![0; n],
        1 => vec![v[0]; n],
        _ => v.to_vec(),
    }
}

const POINTWISE: &[&str] = &[
    "add",
    "add_",
    "sub",
    "sub_",
    "mul",
    "mul_",
    "div",
    "div_",
    "relu",
    "relu_",
    "gelu",
    "silu",
    "silu_",
    "sigmoid",
    "tanh",
    "exp",
    "pow",
    "neg",
    "sqrt",
    "rsqrt",
    "clamp",
    "clamp_",
    "clamp_min",
    "where",
    "copy_",
    "to",
    "_to_copy",
    "fill_",
    "zero_",
    "addcmul_",
    "addcdiv_",
    "lerp_",
    "masked_fill",
    "masked_fill_",
    "threshold_backward",
    "gelu_backward",
    "silu_backward",
    "sigmoid_backward",
    "tanh_backward",
    "cos",
    "sin",
    "abs",
    "maximum",
    "minimum",
    "hardtanh",
    "leaky_relu",
    "mish",
    "dropout",
    "native_dropout",
    "cat",
];

const FORMULAS: &[&str] = &[
    "mm",
    "addmm",
    "bmm",
    "baddbmm",
    "matmul",
    "linear",
    "conv1d",
    "conv2d",
    "conv3d",
    "convolution",
    "_convolution",
    "cudnn_convolution",
    "slow_conv_dilated2d",
    "slow_conv_dilated3d",
    "scaled_dot_product_attention",
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention",
    "_flash_attn_forward",
    "flash_attn::_flash_attn_forward",
    "layer_norm",
    "native_layer_norm",
    "group_norm",
    "native_group_norm",
    "batch_norm",
    "native_batch_norm",
    "cudnn_batch_norm",
    "_batch_norm_impl_index",
    "rms_norm",
    "_fused_rms_norm",
    "softmax",
    "_softmax",
    "log_softmax",
    "_log_softmax",
    "sum",
    "mean",
    "amax",
    "amin",
    "norm",
    "linalg_vector_norm",
];

/// True when [`op_cost`] has a formula for the operator name.
pub fn has_formula(name: &str) -> bool {
    let base = name.strip_prefix("aten::").unwrap_or(name);
    FORMULAS.contains(&base) || POINTWISE.contains(&base)
}

/// One call's recorded arguments, as the cost formulas read them.
struct Call<'a> {
    /// The operator's name as recorded.
    name: &'a str,
    /// Without its `aten::` prefix.
    base: &'a str,
    /// The shapes of the arguments.
    dims: &'a [Arg],
    /// Their dtypes.
    types: &'a [String],
    /// Their concrete values (scalars and int lists), as text.
    concrete: &'a [String],
}

impl<'a> Call<'a> {
    /// The dtype of argument `i` (empty when unknown).
    fn ty(&self, i: usize) -> &'a str {
        self.types.get(i).map(|s| s.as_str()).unwrap_or("")
    }

    /// The shape of argument `i`, when a tensor.
    fn shape(&self, i: usize) -> Option<&'a [i64]> {
        self.dims.get(i).and_then(|a| a.shape())
    }

    /// Bytes per element of argument `i`.
    fn elem(&self, i: usize) -> Option<f64> {
        dtype_bytes(self.ty(i))
    }

    /// The cost, when finite and moving some bytes; the dtype is argument `i`'s.
    fn cost(&self, kind: CostKind, flops: f64, bytes: f64, elem: f64, i: usize) -> Option<OpCost> {
        (flops.is_finite() && bytes.is_finite() && bytes > 0.0).then_some(OpCost {
            kind,
            flops,
            bytes,
            elem,
            dtype: intern_dtype(self.ty(i)),
            from_args: false,
        })
    }
}

/// Cost of one call, or `None` when the operator has no formula or the shapes do not fit it.
pub fn op_cost(name: &str, dims: &[Arg], types: &[String], concrete: &[String]) -> Option<OpCost> {
    let c = Call {
        name,
        base: name.strip_prefix("aten::").unwrap_or(name),
        dims,
        types,
        concrete,
    };
    match c.base {
        "mm" | "addmm" | "bmm" | "baddbmm" | "matmul" | "linear" => gemm_cost(&c),
        "conv1d"
        | "conv2d"
        | "conv3d"
        | "convolution"
        | "_convolution"
        | "cudnn_convolution"
        | "slow_conv_dilated2d"
        | "slow_conv_dilated3d" => conv_cost(&c),
        "scaled_dot_product_attention"
        | "_scaled_dot_product_flash_attention"
        | "_scaled_dot_product_efficient_attention"
        | "_scaled_dot_product_cudnn_attention"
        | "_flash_attn_forward"
        | "flash_attn::_flash_attn_forward" => attention_cost(&c),
        "layer_norm"
        | "native_layer_norm"
        | "group_norm"
        | "native_group_norm"
        | "batch_norm"
        | "native_batch_norm"
        | "cudnn_batch_norm"
        | "_batch_norm_impl_index" => norm_cost(&c),
        "rms_norm" | "_fused_rms_norm" => rms_norm_cost(&c),
        "softmax" | "_softmax" | "log_softmax" | "_log_softmax" => {
            let x = c.shape(0)?;
            let e = c.elem(0)?;
            let n = numel(x);
            c.cost(CostKind::Softmax, 5.0 * n, 2.0 * n * e, e, 0)
        }
        "sum" | "mean" | "amax" | "amin" | "norm" | "linalg_vector_norm" => {
            let x = c.shape(0)?;
            let e = c.elem(0)?;
            let n = numel(x);
            c.cost(CostKind::Reduction, n, n * e, e, 0)
        }
        _ if POINTWISE.contains(&c.base) => pointwise_cost(&c),
        _ => None,
    }
}

/// Matrix products (`mm`, `addmm`, `bmm`, `baddbmm`, `matmul`, `linear`): 2·m·k·n FLOPs
/// (times the batch), the operands and the result read or written once.
fn gemm_cost(c: &Call) -> Option<OpCost> {
    match c.base {
        "mm" => {
            let (a, b) = (c.shape(0)?, c.shape(1)?);
            if a.len() != 2 || b.len() != 2 {
                return None;
            }
            let (m, k, n) = (a[0] as f64, a[1] as f64, b[1] as f64);
            let e = c.elem(0)?;
            c.cost(
                CostKind::Gemm,
                2.0 * m * k * n,
                (m * k + k * n + m * n) * e,
                e,
                0,
            )
        }
        "addmm" => {
            let (input, a, b) = (c.shape(0)?, c.shape(1)?, c.shape(2)?);
            if a.len() != 2 || b.len() != 2 {
                return None;
            }
            let (m, k, n) = (a[0] as f64, a[1] as f64, b[1] as f64);
            let e = c.elem(1)?;
            c.cost(
                CostKind::Gemm,
                2.0 * m * k * n + m * n,
                (m * k + k * n + m * n + numel(input)) * e,
                e,
                1,
            )
        }
        "bmm" | "baddbmm" => {
            let off = usize::from(c.base == "baddbmm");
            let (a, b) = (c.shape(off)?, c.shape(off + 1)?);
            if a.len() != 3 || b.len() != 3 {
                return None;
            }
            let (bt, m, k, n) = (a[0] as f64, a[1] as f64, a[2] as f64, b[2] as f64);
            let e = c.elem(off)?;
            c.cost(
                CostKind::Gemm,
                2.0 * bt * m * k * n,
                bt * (m * k + k * n + m * n) * e,
                e,
                off,
            )
        }
        "matmul" => {
            let (a, b) = (c.shape(0)?, c.shape(1)?);
            if a.len() < 2 || b.len() < 2 {
                return None;
            }
            let (m, k) = (a[a.len() - 2] as f64, a[a.len() - 1] as f64);
            let n = b[b.len() - 1] as f64;
            let batch = numel(&a[..a.len() - 2]).max(numel(&b[..b.len() - 2]));
            let e = c.elem(0)?;
            c.cost(
                CostKind::Gemm,
                2.0 * batch * m * k * n,
                (numel(a) + numel(b) + batch * m * n) * e,
                e,
                0,
            )
        }
        "linear" => {
            let (x, w) = (c.shape(0)?, c.shape(1)?);
            if x.is_empty() || w.len() != 2 {
                return None;
            }
            let k = *x.last()? as f64;
            let m = numel(&x[..x.len() - 1]);
            let n = w[0] as f64;
            let e = c.elem(0)?;
            let bias = c.shape(2).map(numel).unwrap_or(0.0);
            c.cost(
                CostKind::Gemm,
                2.0 * m * k * n,
                (m * k + n * k + m * n + bias) * e,
                e,
                0,
            )
        }
        _ => None,
    }
}

/// Convolutions: 2 FLOPs per multiply-add over the output, the input, weight and output
/// moved once; stride, padding, dilation and groups from the concrete arguments.
fn conv_cost(c: &Call) -> Option<OpCost> {
    let (x, w) = (c.shape(0)?, c.shape(1)?);
    if x.len() < 3 || w.len() != x.len() {
        return None;
    }
    let sp = x.len() - 2;
    // (stride, padding, dilation, groups) positions per signature
    let (si, pi, di, gi): (usize, usize, usize, Option<usize>) = match c.base {
        "cudnn_convolution" => (3, 2, 4, Some(5)),
        "slow_conv_dilated2d" | "slow_conv_dilated3d" => (4, 5, 6, None),
        "convolution" | "_convolution" => {
            if c.concrete.get(6).map(|s| s.trim()) == Some("True") {
                return None; // transposed
            }
            (3, 4, 5, Some(8))
        }
        _ => (3, 4, 5, Some(6)),
    };
    let stride = expand(&concrete_ints(c.concrete.get(si)?)?, sp);
    let pad = expand(&concrete_ints(c.concrete.get(pi)?)?, sp);
    let dil = expand(&concrete_ints(c.concrete.get(di)?)?, sp);
    let groups = match gi {
        Some(g) => c
            .concrete
            .get(g)
            .and_then(|s| concrete_ints(s))
            .and_then(|v| v.first().copied())
            .unwrap_or(1)
            .max(1),
        None => 1,
    };
    if stride.len() != sp || pad.len() != sp || dil.len() != sp {
        return None;
    }
    let mut out_sp = 1.0;
    for i in 0..sp {
        let (inp, k) = (x[2 + i], w[2 + i]);
        let s = stride[i].max(1);
        let o = (inp + 2 * pad[i] - dil[i].max(1) * (k - 1) - 1) / s + 1;
        if o <= 0 {
            return None;
        }
        out_sp *= o as f64;
    }
    let (n, cin, cout) = (x[0] as f64, x[1] as f64, w[0] as f64);
    let kernel = numel(&w[2..]);
    let e = c.elem(0)?;
    let flops = 2.0 * n * cout * out_sp * (cin / groups as f64) * kernel;
    let bytes = (numel(x) + numel(w) + n * cout * out_sp) * e;
    c.cost(CostKind::Conv, flops, bytes, e, 0)
}

/// Scaled dot-product and flash attention: Q·Kᵀ and P·V, halved when causal over a square
/// score matrix; Q, K, V and the output moved once.
fn attention_cost(c: &Call) -> Option<OpCost> {
    let (q, k, v) = (c.shape(0)?, c.shape(1)?, c.shape(2)?);
    if q.len() != 4 || k.len() != 4 || v.len() != 4 {
        return None;
    }
    // [B, H, L, D] for SDPA; [B, L, H, D] for flash_attn
    let flash = c.name.contains("flash_attn::") || c.base == "_flash_attn_forward";
    let (b, h, l, d, s, dv) = if flash {
        (q[0], q[2], q[1], q[3], k[1], v[3])
    } else {
        (q[0], q[1], q[2], q[3], k[2], v[3])
    };
    let (b, h, l, d, s, dv) = (b as f64, h as f64, l as f64, d as f64, s as f64, dv as f64);
    let e = c.elem(0)?;
    // `is_causal` (SDPA: argument 5; `_scaled_dot_product_flash_attention`: 4;
    // `_efficient_` and `_cudnn_`: 6) masks half of a square score matrix
    let causal_at = match c.base {
        "scaled_dot_product_attention" => Some(5),
        "_scaled_dot_product_flash_attention" => Some(4),
        "_scaled_dot_product_efficient_attention" | "_scaled_dot_product_cudnn_attention" => {
            Some(6)
        }
        _ => None,
    };
    let causal = causal_at
        .and_then(|i| c.concrete.get(i))
        .is_some_and(|v| v.trim() == "True")
        && l == s;
    let flops =
        (2.0 * b * h * l * s * d + 2.0 * b * h * l * s * dv) / if causal { 2.0 } else { 1.0 };
    let bytes = (numel(q) + numel(k) + numel(v) + b * h * l * dv) * e;
    c.cost(CostKind::Attention, flops, bytes, e, 0)
}

/// Layer, group and batch norms: 8 FLOPs per element, input and output once plus the
/// parameters.
fn norm_cost(c: &Call) -> Option<OpCost> {
    let x = c.shape(0)?;
    let e = c.elem(0)?;
    let params: f64 = (1..c.dims.len())
        .filter_map(|i| c.shape(i))
        .map(numel)
        .sum();
    let n = numel(x);
    c.cost(CostKind::Norm, 8.0 * n, (2.0 * n + params) * e, e, 0)
}

/// RMS norm, as TraceLens counts it.
fn rms_norm_cost(c: &Call) -> Option<OpCost> {
    // TraceLens's RMSNorm: per row of C normalized elements, 2C + 2 (squares, sum,
    // mean, rsqrt), then 2 per element to scale by the rsqrt and the weight (1 without
    // a weight); bytes: input and output once, plus the weight
    let x = c.shape(0)?;
    let e = c.elem(0)?;
    let n = numel(x);
    let weight = c.shape(2).filter(|w| !w.is_empty()).map(numel);
    let row = weight.or_else(|| {
        let list = c.concrete.get(1)?;
        let v: Option<Vec<f64>> = list
            .trim()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .split(',')
            .map(|d| d.trim().parse::<f64>().ok())
            .collect();
        v.filter(|v| !v.is_empty()).map(|v| v.iter().product())
    })?;
    if row <= 0.0 {
        return None;
    }
    let flops = n / row * (2.0 * row + 2.0) + if weight.is_some() { 2.0 * n } else { n };
    c.cost(
        CostKind::Norm,
        flops,
        (2.0 * n + weight.unwrap_or(0.0)) * e,
        e,
        0,
    )
}

/// Pointwise operators: one FLOP per output element; every tensor input read, the
/// output written.
fn pointwise_cost(c: &Call) -> Option<OpCost> {
    // tensors among the inputs, their bytes; the output takes the largest shape
    let mut read = 0.0;
    let mut out: f64 = 0.0;
    let mut out_elem = 0.0;
    let mut first = None;
    for (i, a) in c.dims.iter().enumerate() {
        match a {
            Arg::Tensor(s) if !s.is_empty() => {
                let e = c.elem(i)?;
                let n = numel(s);
                read += n * e;
                if n > out {
                    out = n;
                    out_elem = e;
                }
                first.get_or_insert(i);
            }
            Arg::List(l) => {
                let e = c.elem(i).unwrap_or(4.0);
                let n: f64 = l.iter().map(|s| numel(s)).sum();
                read += n * e;
                out = out.max(n);
                out_elem = e;
                first.get_or_insert(i);
            }
            _ => {}
        }
    }
    let first = first?;
    let write = out * out_elem;
    // in-place and fill ops write their first argument: no extra read for fill_/zero_
    let read = if matches!(c.base, "fill_" | "zero_") {
        0.0
    } else {
        read
    };
    c.cost(CostKind::Elementwise, out, read + write, out_elem, first)
}

/// The cost of a call known only by the profiler's `flops` argument: the kind from the name,
/// the dtype of the first input when recorded, bytes unknown (0: the call is placed on the
/// compute roof).
fn args_cost(name: &str, flops: u64, dtype: &str) -> OpCost {
    let l = name.to_ascii_lowercase();
    let kind = if l.contains("conv") {
        CostKind::Conv
    } else if l.contains("attention") || l.contains("attn") {
        CostKind::Attention
    } else if l.contains("mm") || l.contains("matmul") || l.contains("linear") {
        CostKind::Gemm
    } else {
        CostKind::Elementwise
    };
    OpCost {
        kind,
        flops: flops as f64,
        bytes: 0.0,
        elem: dtype_bytes(dtype).unwrap_or(0.0),
        dtype: intern_dtype(dtype),
        from_args: true,
    }
}

/// One operator instance on the roofline.
#[derive(Clone, Debug, PartialEq)]
pub struct OpPoint {
    /// Index of the operator in `trace.cpu`.
    pub op: u32,
    /// Cost.
    pub cost: OpCost,
    /// Device time of its kernels, ns.
    pub time: Ns,
    /// Its kernels (indices in `trace.gpu`).
    pub kernels: Vec<u32>,
    /// Compute peak used, TFLOP/s.
    pub peak_tflops: f64,
    /// Bandwidth, GB/s.
    pub bw_gbs: f64,
    /// Least possible time, ns.
    pub ideal: f64,
    /// Memory-bound (intensity below the ridge point).
    pub memory_bound: bool,
    /// Kernels ran on tensor cores.
    pub tensor_cores: bool,
    /// The highest dense peak any kernel can reach for the call's dtype on the device
    /// ([`dtype_ceiling`]), TFLOP/s; 0 when the device is not in the peak table.
    pub max_tflops: f64,
}

impl OpPoint {
    /// Achieved TFLOP/s.
    pub fn tflops(&self) -> f64 {
        if self.time > 0 {
            self.cost.flops / self.time as f64 / 1000.0
        } else {
            0.0
        }
    }
    /// Achieved GB/s.
    pub fn gbs(&self) -> f64 {
        if self.time > 0 {
            self.cost.bytes / self.time as f64
        } else {
            0.0
        }
    }
    /// True when the device is in the peak table (the roofline fields are set).
    pub fn has_roofline(&self) -> bool {
        self.bw_gbs > 0.0
    }
    /// Arithmetic intensity, FLOP/byte.
    pub fn intensity(&self) -> f64 {
        self.cost.flops / self.cost.bytes
    }
}

/// The highest dense peak a call of this dtype can reach on the device, whatever its kernels
/// (tensor cores or not): FP8 → the FP8 (else FP16) tensor peak, FP16/BF16 → the FP16 tensor
/// peak, FP32 → the larger of FP32 and TF32, FP64 → the larger of FP64 and FP32; other or
/// unknown dtypes → the device's highest peak. A call whose FLOPs ÷ device time exceed it
/// cannot be right ([`Implausible`]).
pub fn dtype_ceiling(spec: &DeviceSpec, dtype: &str) -> f64 {
    let tc = match dtype {
        "float8" => spec.fp8.or(spec.fp16),
        "half" | "bfloat16" => spec.fp16,
        "float" => spec.tf32,
        "double" => spec.fp64,
        _ => [spec.fp4, spec.fp8, spec.fp16, spec.tf32]
            .into_iter()
            .flatten()
            .reduce(f64::max),
    };
    tc.unwrap_or(0.0).max(spec.fp32)
}

/// A call whose recorded shapes cannot belong to its kernels: FLOPs ÷ device time above the
/// dtype's dense peak ([`dtype_ceiling`]), or bytes ÷ device time above the DRAM bandwidth for
/// more bytes than any device caches ([`CACHE_BYTES`]: a smaller call can be served from L2 /
/// Infinity Cache faster than DRAM allows, and is kept), judged on the device time plus
/// [`RESOLUTION_NS`]. Left out of the roofline and MFU ([`roofline_checked`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Implausible {
    /// The call.
    pub point: OpPoint,
    /// Achieved ÷ possible, > 1 (the larger of the FLOP/s and bytes/s ratios).
    pub factor: f64,
    /// True when the FLOP/s ratio is the larger (else bytes/s).
    pub compute: bool,
}

/// The largest last-level cache of a device in the table (MI300X's 256 MiB Infinity Cache):
/// a call moving fewer bytes may be served from cache above the DRAM bandwidth.
pub const CACHE_BYTES: f64 = 256.0 * 1024.0 * 1024.0;
/// The timestamp resolution of older traces (integer µs), ns: a call is impossible only when
/// even its recorded time plus this is too short for its FLOPs or bytes.
pub const RESOLUTION_NS: f64 = 1000.0;

/// The tensor or FP32 peak for a cost on a device.
pub fn peak_for(spec: &DeviceSpec, cost: &OpCost, tensor_cores: bool) -> f64 {
    if !tensor_cores {
        return spec.fp32;
    }
    let tc = match cost.dtype {
        "float8" => spec.fp8.or(spec.fp16),
        "half" | "bfloat16" => spec.fp16,
        "float" => spec.tf32.or(spec.fp16),
        _ => None,
    };
    tc.unwrap_or(spec.fp32)
}

/// Roofline points of the operators with a formula and recorded shapes (or a `flops`
/// argument, which wins over the formula), for kernels that belong to the window (`counts`),
/// in start order, without the [`Implausible`] calls. On a device not in the peak table a
/// point has no roofline: `peak_tflops` and `bw_gbs` are 0 and `ideal` is 0
/// ([`OpPoint::has_roofline`]).
pub fn roofline(trace: &Trace, counts: &dyn Fn(u32) -> bool) -> Vec<OpPoint> {
    roofline_checked(trace, counts).0
}

/// [`roofline`], and the calls it leaves out because their achieved FLOP/s or bytes/s exceed
/// what the device can do ([`Implausible`]; only on a device in the peak table), in start order.
pub fn roofline_checked(
    trace: &Trace,
    counts: &dyn Fn(u32) -> bool,
) -> (Vec<OpPoint>, Vec<Implausible>) {
    if trace.op_shapes.is_empty() && trace.op_flops.is_empty() {
        return (Vec::new(), Vec::new());
    }
    // formula ops per thread, outermost only; their costs in `costs` (a formula's once per
    // distinct call, by `cache`), their points in `points` once a counted kernel is found
    struct Candidate {
        start: Ns,
        end: Ns,
        op: u32,
        cost: u32,
        point: u32,
    }
    let mut costs: Vec<OpCost> = Vec::new();
    let mut cache: HashMap<(NameId, NameId, NameId, NameId), Option<u32>> = HashMap::default();
    let mut per_thread: Vec<Vec<Candidate>> = Vec::new();
    // 0 = not looked at, 1 = has a formula, 2 = has none
    let mut formula: Vec<u8> = vec![0; trace.names.len()];
    for (i, e) in trace.cpu.iter().enumerate() {
        if e.kind != CpuKind::Op || e.external_id == 0 {
            continue;
        }
        let known = formula.get_mut(e.name.0 as usize);
        match known {
            Some(k) if *k == 0 => {
                *k = if has_formula(trace.name(e.name)) {
                    1
                } else {
                    2
                }
            }
            Some(_) => {}
            None => continue,
        }
        let args_flops = trace.op_flops.get(&e.external_id).copied();
        if formula[e.name.0 as usize] != 1 && args_flops.is_none() {
            continue;
        }
        let t = e.thread as usize;
        if per_thread.len() <= t {
            per_thread.resize_with(t + 1, Vec::new);
        }
        if per_thread[t].last().is_some_and(|c| e.start < c.end) {
            continue; // nested in an outer op with a formula
        }
        let shape = trace.op_shape_at(i);
        let formula_cost = match shape {
            Some(s) if formula[e.name.0 as usize] == 1 => *cache
                .entry((e.name, s.dims, s.types, s.concrete))
                .or_insert_with(|| {
                    let dims = parse_dims(trace.name(s.dims))?;
                    let types = parse_strings(trace.name(s.types)).unwrap_or_default();
                    let concrete = parse_strings(trace.name(s.concrete)).unwrap_or_default();
                    let c = op_cost(trace.name(e.name), &dims, &types, &concrete)?;
                    costs.push(c);
                    Some(costs.len() as u32 - 1)
                }),
            _ => None,
        };
        let own = |c: OpCost, costs: &mut Vec<OpCost>| {
            costs.push(c);
            costs.len() as u32 - 1
        };
        let cost = match (formula_cost, args_flops) {
            (Some(c), None) => c,
            (Some(c), Some(f)) => {
                let c = OpCost {
                    flops: f as f64,
                    from_args: true,
                    ..costs[c as usize]
                };
                own(c, &mut costs)
            }
            (None, Some(f)) => {
                let types = shape
                    .and_then(|s| parse_strings(trace.name(s.types)))
                    .unwrap_or_default();
                let c = args_cost(trace.name(e.name), f, types.first().map_or("", |t| t));
                own(c, &mut costs)
            }
            (None, None) => continue,
        };
        per_thread[t].push(Candidate {
            start: e.start,
            end: e.end(),
            op: i as u32,
            cost,
            point: NONE,
        });
    }
    let mut points: Vec<OpPoint> = Vec::new();
    let mut specs: HashMap<i32, Option<&'static DeviceSpec>> = HashMap::default();
    let classes = trace.kernel_classes();
    for (gi, (g, l)) in trace.gpu_with_launches().enumerate() {
        if g.kind != GpuKind::Kernel || g.launch == NONE || !counts(gi as u32) {
            continue;
        }
        let Some(l) = l else { continue };
        let Some(v) = per_thread.get_mut(l.thread as usize) else {
            continue;
        };
        let k = v.partition_point(|c| c.start <= l.start);
        if k == 0 || l.end() > v[k - 1].end {
            continue;
        }
        let c = &mut v[k - 1];
        let spec = *specs
            .entry(g.device)
            .or_insert_with(|| trace.device(g.device as i64).and_then(devices_db::lookup));
        let tc = classes.get(g.name).tensor_cores;
        if c.point == NONE {
            let cost = costs[c.cost as usize];
            c.point = points.len() as u32;
            points.push(OpPoint {
                op: c.op,
                cost,
                time: 0,
                kernels: Vec::new(),
                peak_tflops: spec.map_or(0.0, |s| s.fp32),
                bw_gbs: spec.map_or(0.0, |s| s.mem_bw),
                ideal: 0.0,
                memory_bound: false,
                tensor_cores: false,
                max_tflops: spec.map_or(0.0, |s| dtype_ceiling(s, cost.dtype)),
            });
        }
        let p = &mut points[c.point as usize];
        p.time += g.dur;
        p.kernels.push(gi as u32);
        p.tensor_cores |= tc;
        if let Some(spec) = spec {
            p.peak_tflops = peak_for(spec, &p.cost, p.tensor_cores);
        }
    }
    let mut out: Vec<OpPoint> = points
        .into_iter()
        .filter(|p| p.time > 0)
        .map(|mut p| {
            if p.bw_gbs <= 0.0 {
                return p; // device not in the peak table: no roofline
            }
            let t_compute = p.cost.flops / (p.peak_tflops * 1e12) * 1e9;
            let t_memory = p.cost.bytes / (p.bw_gbs * 1e9) * 1e9;
            p.ideal = t_compute.max(t_memory);
            p.memory_bound = t_memory >= t_compute;
            p
        })
        .collect();
    // in the order of the operators (host events are sorted by start)
    out.sort_unstable_by_key(|p| p.op);
    let mut implausible = Vec::new();
    out.retain(|p| {
        if !p.has_roofline() || p.max_tflops <= 0.0 {
            return true;
        }
        // judged on the recorded time plus the timestamp resolution of older traces (1 µs),
        // and on bytes only when they cannot sit in any device's cache
        let slack = p.time as f64 + RESOLUTION_NS;
        let over_flops = p.cost.flops / slack / 1000.0 > p.max_tflops;
        let over_bytes = p.cost.bytes > CACHE_BYTES && p.cost.bytes / slack > p.bw_gbs;
        if !over_flops && !over_bytes {
            return true;
        }
        let f = p.tflops() / p.max_tflops;
        let b = if over_bytes { p.gbs() / p.bw_gbs } else { 0.0 };
        implausible.push(Implausible {
            point: p.clone(),
            factor: f.max(b),
            compute: f >= b,
        });
        false
    });
    (out, implausible)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    /// RMSNorm over the weight's size, else over `normalized_shape` (no weight: 1 FLOP per
    /// element to scale, no weight bytes).
    #[test]
    fn rms_norm_with_and_without_weight() {
        let dims = parse_dims("[[4, 8, 16], [], [16], []]").unwrap();
        let c = op_cost(
            "aten::rms_norm",
            &dims,
            &s(&["c10::BFloat16", "ScalarList", "c10::BFloat16", ""]),
            &s(&["", "[16]", "", ""]),
        )
        .unwrap();
        assert_eq!(c.flops, 32.0 * (2.0 * 16.0 + 2.0) + 2.0 * 512.0);
        assert_eq!(c.bytes, (2.0 * 512.0 + 16.0) * 2.0);
        let dims = parse_dims("[[4, 8, 16], [], [], []]").unwrap();
        let c = op_cost(
            "aten::rms_norm",
            &dims,
            &s(&["float", "ScalarList", "", ""]),
            &s(&["", "[8, 16]", "", ""]),
        )
        .unwrap();
        assert_eq!(c.flops, 4.0 * (2.0 * 128.0 + 2.0) + 512.0);
        assert_eq!(c.bytes, 2.0 * 512.0 * 4.0);
        // no normalized shape at all: no cost rather than a guess
        assert!(op_cost(
            "aten::rms_norm",
            &dims,
            &s(&["float", "ScalarList", "", ""]),
            &s(&[]),
        )
        .is_none());
    }

    #[test]
    fn parses_dims_and_lists() {
        let d = parse_dims("[[128, 256], [], [[1, 2], [3]]]").unwrap();
        assert_eq!(d[0], Arg::Tensor(vec![128, 256]));
        assert_eq!(d[1], Arg::Tensor(vec![]));
        assert_eq!(d[2], Arg::List(vec![vec![1, 2], vec![3]]));
        assert_eq!(
            parse_strings("[\"float\", \"\"]").unwrap(),
            s(&["float", ""])
        );
        assert!(parse_dims("not json").is_none());
    }

    #[test]
    fn gemm_costs() {
        let d = parse_dims("[[128, 256], [256, 64]]").unwrap();
        let c = op_cost("aten::mm", &d, &s(&["float", "float"]), &[]).unwrap();
        assert_eq!(c.flops, 2.0 * 128.0 * 256.0 * 64.0);
        assert_eq!(c.bytes, (128.0 * 256.0 + 256.0 * 64.0 + 128.0 * 64.0) * 4.0);
        assert_eq!(c.kind, CostKind::Gemm);
        // linear [16, 559, 1024] x [1024, 1024] + bias, bf16
        let d = parse_dims("[[16, 559, 1024], [1024, 1024], [1024]]").unwrap();
        let t = s(&["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]);
        let c = op_cost("aten::linear", &d, &t, &[]).unwrap();
        let m = 16.0 * 559.0;
        assert_eq!(c.flops, 2.0 * m * 1024.0 * 1024.0);
        assert_eq!(c.bytes, (m * 1024.0 * 2.0 + 1024.0 * 1024.0 + 1024.0) * 2.0);
        assert_eq!(c.dtype, "bfloat16");
        let d = parse_dims("[[8, 64, 32], [8, 32, 16]]").unwrap();
        let c = op_cost("aten::bmm", &d, &s(&["c10::Half", "c10::Half"]), &[]).unwrap();
        assert_eq!(c.flops, 2.0 * 8.0 * 64.0 * 32.0 * 16.0);
    }

    #[test]
    fn conv_needs_concrete_inputs() {
        // ResNet stem: [32,3,224,224] * [64,3,7,7], stride 2, pad 3 → [32,64,112,112]
        let d = parse_dims("[[32, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], []]").unwrap();
        let t = s(&[
            "float",
            "float",
            "",
            "ScalarList",
            "ScalarList",
            "ScalarList",
            "Scalar",
        ]);
        let c = s(&["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "1"]);
        let cost = op_cost("aten::conv2d", &d, &t, &c).unwrap();
        assert_eq!(cost.flops, 2.0 * 32.0 * 64.0 * 112.0 * 112.0 * 3.0 * 49.0);
        assert_eq!(
            cost.bytes,
            (32.0 * 3.0 * 224.0 * 224.0 + 64.0 * 3.0 * 49.0 + 32.0 * 64.0 * 112.0 * 112.0) * 4.0
        );
        assert!(op_cost("aten::conv2d", &d, &t, &[]).is_none());
        // dilated 3d fallback: kernel 3, dilation 2, padding 2, stride 1 keeps the size
        let d = parse_dims("[[1, 16, 8, 32, 32], [16, 16, 3, 3, 3], [], [], [], [], []]").unwrap();
        let c = s(&[
            "",
            "",
            "[3, 3, 3]",
            "",
            "[1, 1, 1]",
            "[2, 2, 2]",
            "[2, 2, 2]",
        ]);
        let cost = op_cost(
            "aten::slow_conv_dilated3d",
            &d,
            &s(&["c10::Half", "c10::Half"]),
            &c,
        )
        .unwrap();
        assert_eq!(cost.flops, 2.0 * 16.0 * (8.0 * 32.0 * 32.0) * 16.0 * 27.0);
    }

    #[test]
    fn attention_and_pointwise() {
        let d = parse_dims("[[2, 8, 1024, 64], [2, 8, 1024, 64], [2, 8, 1024, 64]]").unwrap();
        let t = s(&["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]);
        let c = op_cost("aten::_scaled_dot_product_flash_attention", &d, &t, &[]).unwrap();
        assert_eq!(c.flops, 4.0 * 2.0 * 8.0 * 1024.0 * 1024.0 * 64.0);
        let d = parse_dims("[[32, 256, 56, 56], [32, 256, 56, 56], []]").unwrap();
        let c = op_cost("aten::add_", &d, &s(&["float", "float", "Int"]), &[]).unwrap();
        let n = 32.0 * 256.0 * 56.0 * 56.0;
        assert_eq!(c.flops, n);
        assert_eq!(c.bytes, 3.0 * n * 4.0);
        assert_eq!(c.kind, CostKind::Elementwise);
        assert!(op_cost("aten::view", &d, &s(&["float"]), &[]).is_none());
        assert_eq!(dtype_bytes("c10::BFloat16"), Some(2.0));
        assert_eq!(dtype_bytes("long int"), Some(8.0));
        assert_eq!(dtype_bytes("c10::Float8_e4m3fn"), Some(1.0));
    }

    #[test]
    fn peaks_by_dtype_and_tensor_cores() {
        let spec = devices_db::H100_SXM;
        let cost = OpCost {
            kind: CostKind::Gemm,
            flops: 1.0,
            bytes: 1.0,
            elem: 2.0,
            dtype: "bfloat16",
            from_args: false,
        };
        assert_eq!(peak_for(&spec, &cost, true), 989.4);
        assert_eq!(peak_for(&spec, &cost, false), 67.0);
        let f32c = OpCost {
            dtype: "float",
            ..cost
        };
        assert_eq!(peak_for(&spec, &f32c, true), 494.7);
    }
}
