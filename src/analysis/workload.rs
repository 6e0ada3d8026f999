//! What a trace says about the workload of the window: its first layer operator and the
//! shape of that layer's data input (`record_shapes=True`), and the dtype mix of its layer
//! operators. Found with the analysis (so that every report made in this process carries it,
//! whichever front door made it); compared by `diff::parity` before two sides are compared.

use serde::{Deserialize, Serialize};

use crate::model::{CpuKind, Trace};

/// The calls under this share of the layer operators' calls are left out of the dtype mix.
pub const DTYPE_MIX_MIN_SHARE: f64 = 0.10;

/// Layer operators and the index of their data input (`aten::addmm(bias, input, weight)`:
/// 1; `aten::embedding(weight, indices)`: 1).
const LAYER_OPS: &[(&str, usize)] = &[
    ("aten::linear", 0),
    ("aten::addmm", 1),
    ("aten::mm", 0),
    ("aten::matmul", 0),
    ("aten::bmm", 0),
    ("aten::baddbmm", 1),
    ("aten::conv1d", 0),
    ("aten::conv2d", 0),
    ("aten::conv3d", 0),
    ("aten::convolution", 0),
    ("aten::conv_transpose1d", 0),
    ("aten::conv_transpose2d", 0),
    ("aten::conv_transpose3d", 0),
    ("aten::embedding", 1),
];

/// What the trace says about the workload of a side's window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// The first layer operator of the window with recorded shapes.
    pub first_layer: Option<String>,
    /// Its data input's shape.
    pub first_input: Option<Vec<i64>>,
    /// Layer-operator calls in the window with a recorded dtype.
    pub layer_calls: u64,
    /// Data dtype → share of those calls, largest first.
    pub dtype_mix: Vec<(String, f64)>,
}

impl Workload {
    /// The first layer's batch (first dimension of its data input).
    pub fn batch(&self) -> Option<i64> {
        self.first_input.as_ref().and_then(|d| d.first().copied())
    }

    /// The dtypes at or over [`DTYPE_MIX_MIN_SHARE`], sorted by name.
    pub fn main_dtypes(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self
            .dtype_mix
            .iter()
            .filter(|(_, s)| *s >= DTYPE_MIX_MIN_SHARE)
            .map(|(d, _)| d.as_str())
            .collect();
        v.sort_unstable();
        v
    }
}

fn dims_of(text: &str) -> Option<Vec<serde_json::Value>> {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()?
        .as_array()
        .cloned()
}

/// The workload of the window `[start, end)` (ns) of a trace: its first layer operator and the
/// dtype mix of its layer operators (empty without recorded shapes).
pub fn workload(trace: &Trace, start: i64, end: i64) -> Workload {
    let mut w = Workload::default();
    let mut counts: std::collections::BTreeMap<String, u64> = Default::default();
    // a name's place in LAYER_OPS, found once per name (0: not looked up, 1: not a layer op)
    let mut memo: Vec<u8> = Vec::new();
    // calls of layer operators by (recorded `Input type` text, index of the typed input)
    let mut by_types: crate::model::fasthash::HashMap<(crate::model::NameId, usize), u64> =
        Default::default();
    for (i, e) in trace.cpu.iter().enumerate() {
        if e.kind != CpuKind::Op || e.start < start || e.start >= end || e.external_id == 0 {
            continue;
        }
        let id = e.name.0 as usize;
        if id >= memo.len() {
            memo.resize(id + 1, 0);
        }
        if memo[id] == 0 {
            let n = trace.name(e.name);
            memo[id] = LAYER_OPS
                .iter()
                .position(|(l, _)| *l == n)
                .map_or(1, |i| i as u8 + 2);
        }
        if memo[id] == 1 {
            continue;
        }
        let (name, data) = LAYER_OPS[memo[id] as usize - 2];
        let Some(shape) = trace.op_shape_at(i) else {
            continue;
        };
        if w.first_layer.is_none() {
            let dims = dims_of(trace.name(shape.dims)).unwrap_or_default();
            let input: Option<Vec<i64>> = dims
                .get(data)
                .and_then(|d| d.as_array())
                .map(|a| a.iter().filter_map(|x| x.as_i64()).collect());
            if let Some(input) = input.filter(|v| !v.is_empty()) {
                w.first_layer = Some(name.to_string());
                w.first_input = Some(input);
            }
        }
        // the dtype of the computation: the weight's for embedding (its indices are integers);
        // counted by recorded types text, read once per distinct text below
        let ti = if name == "aten::embedding" { 0 } else { data };
        *by_types.entry((shape.types, ti)).or_default() += 1;
    }
    for ((types, ti), calls) in by_types {
        let types = dims_of(trace.name(types)).unwrap_or_default();
        if let Some(t) = types
            .get(ti)
            .and_then(|t| t.as_str())
            .filter(|t| !t.is_empty())
        {
            *counts.entry(t.to_string()).or_default() += calls;
            w.layer_calls += calls;
        }
    }
    let n = w.layer_calls.max(1) as f64;
    w.dtype_mix = counts.into_iter().map(|(d, c)| (d, c as f64 / n)).collect();
    w.dtype_mix
        .sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    w
}
