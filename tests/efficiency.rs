//! FLOPs and bytes of recorded operator calls against hand computations and TraceLens's
//! published perf-model formulas, and the MFU of corpus traces.

mod common;

use stallscope::analysis::roofline::{op_cost, parse_dims, parse_strings, Arg, OpCost};
use stallscope::model::Trace;

/// The cost of the call with External id `ext`, and its name and recorded dims.
fn cost_of(t: &Trace, ext: u64) -> (String, String, Option<OpCost>) {
    let e = t
        .cpu
        .iter()
        .find(|e| e.external_id == ext && t.op_shapes.contains_key(&e.external_id))
        .unwrap_or_else(|| panic!("no call with External id {ext}"));
    let s = t.op_shapes[&ext];
    let dims_text = t.name(s.dims).to_string();
    let dims = parse_dims(&dims_text).unwrap();
    let types = parse_strings(t.name(s.types)).unwrap_or_default();
    let concrete = parse_strings(t.name(s.concrete)).unwrap_or_default();
    let name = t.name(e.name).to_string();
    let c = op_cost(&name, &dims, &types, &concrete);
    (name, dims_text.replace(char::is_whitespace, ""), c)
}

fn check(t: &Trace, ext: u64, name: &str, dims: &str, flops: f64, bytes: f64) {
    let (n, d, c) = cost_of(t, ext);
    assert_eq!(n, name);
    assert_eq!(d, dims, "{name}");
    let c = c.unwrap_or_else(|| panic!("{name}: no cost"));
    assert_eq!(c.flops, flops, "{name} FLOPs");
    assert_eq!(c.bytes, bytes, "{name} bytes");
}

/// ViT (Falconsai) on H100: patch-embedding conv, a linear's addmm, SDPA; all bf16 (2 B).
#[test]
fn hand_computed_flops_vit() {
    let Some(p) = common::corpus_file(
        "tracelens/tests__traces__h100__Falconsai_nsfw_image_detection__1016002.json.gz",
    ) else {
        return;
    };
    let t = common::load(&p);
    // conv 16×16 stride 16, no padding: 224/16 = 14 → output [4, 768, 14, 14]
    let out = 4.0 * 768.0 * 14.0 * 14.0;
    check(
        &t,
        1538,
        "aten::conv2d",
        "[[4,3,224,224],[768,3,16,16],[768],[],[],[],[]]",
        2.0 * out * 3.0 * 16.0 * 16.0,
        (4.0 * 3.0 * 224.0 * 224.0 + 768.0 * 3.0 * 256.0 + out) * 2.0,
    );
    // addmm(bias [768], x [788, 768], w [768, 768]): 2MKN + MN (bias add)
    check(
        &t,
        1567,
        "aten::addmm",
        "[[768],[788,768],[768,768],[],[]]",
        2.0 * 788.0 * 768.0 * 768.0 + 788.0 * 768.0,
        (788.0 * 768.0 + 768.0 * 768.0 + 788.0 * 768.0 + 768.0) * 2.0,
    );
    // SDPA [B=4, H=12, L=197, D=64], not causal: QKᵀ and PV, 2·B·H·L·S·D each
    let qkv = 4.0 * 12.0 * 197.0 * 64.0;
    check(
        &t,
        1597,
        "aten::scaled_dot_product_attention",
        "[[4,12,197,64],[4,12,197,64],[4,12,197,64],[],[],[],[],[]]",
        4.0 * 4.0 * 12.0 * 197.0 * 197.0 * 64.0,
        4.0 * qkv * 2.0,
    );
}

/// Qwen1.5-0.5B on H100: mm, an FP32 bmm, addmm and a causal SDPA.
#[test]
fn hand_computed_flops_llm() {
    let Some(p) = common::corpus_file(
        "tracelens/tests__traces__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    ) else {
        return;
    };
    let t = common::load(&p);
    check(
        &t,
        18622,
        "aten::mm",
        "[[8944,1024],[1024,1024]]",
        2.0 * 8944.0 * 1024.0 * 1024.0,
        (8944.0 * 1024.0 + 1024.0 * 1024.0 + 8944.0 * 1024.0) * 2.0,
    );
    // rotary frequencies: [1, 32, 1] × [1, 1, 559] in FP32 (4 B)
    check(
        &t,
        18483,
        "aten::bmm",
        "[[1,32,1],[1,1,559]]",
        2.0 * 32.0 * 559.0,
        (32.0 + 559.0 + 32.0 * 559.0) * 4.0,
    );
    check(
        &t,
        18522,
        "aten::addmm",
        "[[1024],[8944,1024],[1024,1024],[],[]]",
        2.0 * 8944.0 * 1024.0 * 1024.0 + 8944.0 * 1024.0,
        (8944.0 * 1024.0 * 2.0 + 1024.0 * 1024.0 + 1024.0) * 2.0,
    );
    // causal (`is_causal` True, L = S): half of 4·B·H·L²·D
    let qkv = 16.0 * 16.0 * 559.0 * 64.0;
    check(
        &t,
        18589,
        "aten::scaled_dot_product_attention",
        "[[16,16,559,64],[16,16,559,64],[16,16,559,64],[],[],[],[],[]]",
        4.0 * 16.0 * 16.0 * 559.0 * 559.0 * 64.0 / 2.0,
        4.0 * qkv * 2.0,
    );
    // the whole window: MFU against the bf16 dense peak of the H100 SXM
    let a = stallscope::analysis::analyze(&t, &Default::default());
    let e = a.efficiency.expect("efficiency");
    assert_eq!(e.dtype, "bfloat16");
    assert_eq!(e.device.as_deref(), Some("H100 SXM"));
    assert_eq!(e.peak_tflops, Some(989.4));
    let mfu = e.mfu.unwrap();
    let step_s = e.step_us * 1e-6;
    assert!((mfu - e.flops_per_step / step_s / 989.4e12).abs() < 1e-12);
    assert!(mfu > 0.05 && mfu < 0.5, "{mfu}");
    // every GEMM/attention kernel runs under a call with recorded shapes
    assert_eq!(e.accounted_share, Some(1.0));
    // the ops' FLOPs add up to the total
    let sum: f64 = e.ops.iter().map(|o| o.flops).sum();
    assert!((sum - e.flops_per_step).abs() / e.flops_per_step < 1e-9);
    assert_eq!(e.ops[0].name, "aten::linear");
}

fn numel(s: &[i64]) -> f64 {
    s.iter().map(|&x| x as f64).product()
}

fn bpe(t: &str) -> f64 {
    match t.trim_start_matches("c10::") {
        "BFloat16" | "Half" => 2.0,
        "float" => 4.0,
        t => panic!("dtype {t}"),
    }
}

/// TraceLens's perf-model formulas (`TraceLens/PerfModel/perf_model.py`), written again from
/// their published definitions: GEMM `2MNK`, bytes `(MK + KN + MN)·bpe`; SDPA
/// `4·B·H·N_Q·N_KV·d` halved when causal, bytes `(q + k + v + out)·bpe`; binary elementwise one
/// FLOP per element of the broadcast output, bytes `in1 + in2 + out`.
fn tracelens(name: &str, dims: &[Arg], types: &[String], concrete: &[String]) -> (f64, f64) {
    let sh = |i: usize| dims[i].shape().unwrap().to_vec();
    match name {
        "aten::mm" => {
            let (a, b) = (sh(0), sh(1));
            let (m, k, n) = (a[0] as f64, a[1] as f64, b[1] as f64);
            (2.0 * m * n * k, (m * k + k * n + m * n) * bpe(&types[0]))
        }
        "aten::scaled_dot_product_attention" | "aten::_scaled_dot_product_flash_attention" => {
            let (q, k, v) = (sh(0), sh(1), sh(2));
            let causal_at = if name.ends_with("flash_attention") {
                4
            } else {
                5
            };
            let causal = concrete.get(causal_at).map(|s| s.as_str()) == Some("True");
            let f = 2.0 * q[0] as f64 * q[1] as f64 * q[2] as f64 * k[2] as f64 * q[3] as f64
                + 2.0 * q[0] as f64 * q[1] as f64 * q[2] as f64 * k[2] as f64 * v[3] as f64;
            let out = q[0] as f64 * q[1] as f64 * q[2] as f64 * v[3] as f64;
            (
                if causal { f / 2.0 } else { f },
                (numel(&q) + numel(&k) + numel(&v) + out) * bpe(&types[0]),
            )
        }
        "aten::add" => {
            let (a, b) = (sh(0), sh(1));
            let out = numel(&a).max(numel(&b));
            (
                out,
                numel(&a) * bpe(&types[0]) + numel(&b) * bpe(&types[1]) + out * bpe(&types[0]),
            )
        }
        _ => unreachable!(),
    }
}

/// One recorded call: its name, `Input Dims`, `Input type`, `Concrete Inputs`, and
/// stallscope's cost of it.
type Call<'t> = (&'t str, Vec<Arg>, Vec<String>, Vec<String>, OpCost);

/// Every call of one of `ops` with recorded shapes.
fn recorded_calls<'t>(t: &'t Trace, ops: &[&str]) -> Vec<Call<'t>> {
    let mut out = Vec::new();
    for e in &t.cpu {
        let op = t.name(e.name);
        if !ops.contains(&op) {
            continue;
        }
        let Some(s) = t.op_shapes.get(&e.external_id) else {
            continue;
        };
        let dims = parse_dims(t.name(s.dims)).unwrap();
        let types = parse_strings(t.name(s.types)).unwrap();
        let concrete = parse_strings(t.name(s.concrete)).unwrap_or_default();
        let ours = op_cost(op, &dims, &types, &concrete).expect("a cost");
        out.push((op, dims, types, concrete, ours));
    }
    out
}

/// `a` within 1% of `b`.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 0.01 * b
}

#[test]
fn tracelens_perf_model_traces_agree_within_one_percent() {
    let base = "tracelens/agent_evals__Analysis__analysis_tests__unit_tests_standalone.tar.gz__";
    let files = [
        ("gemm__gemm_01_compute_few_tiles.json", "aten::mm"),
        ("gemm__gemm_02_compute_non_pow2.json", "aten::mm"),
        ("gemm__gemm_03_compute_misaligned.json", "aten::mm"),
        ("gemm__gemm_04_memory_tall_skinny.json.gz", "aten::mm"),
        (
            "attention__sdpa_01_long_seq_low_eff.json",
            "aten::scaled_dot_product_attention",
        ),
        (
            "attention__sdpa_02_very_long_seq_head_waste.json",
            "aten::scaled_dot_product_attention",
        ),
        (
            "attention__sdpa_03_short_seq_overhead.json",
            "aten::_scaled_dot_product_flash_attention",
        ),
        (
            "attention__sdpa_04_large_head_dim.json",
            "aten::scaled_dot_product_attention",
        ),
        ("elementwise__elem_01_add_poor_bw.json", "aten::add"),
    ];
    for (f, op) in files {
        let Some(p) = common::corpus_file(&format!("{base}{f}")) else {
            return;
        };
        let t = common::load(&p);
        let calls = recorded_calls(&t, &[op]);
        for (op, dims, types, concrete, ours) in &calls {
            let (flops, bytes) = tracelens(op, dims, types, concrete);
            assert!(
                close(ours.flops, flops),
                "{f}: FLOPs {} vs {flops}",
                ours.flops
            );
            assert!(
                close(ours.bytes, bytes),
                "{f}: bytes {} vs {bytes}",
                ours.bytes
            );
        }
        assert!(calls.len() >= 10, "{f}: {} calls of {op}", calls.len());
    }
}

/// `with_flops=True` writes `flops` into the args of the operators it can count; those win
/// over the shape formula, and a call known only by them still counts.
#[test]
fn flops_args_win_over_shapes() {
    let json = r#"{"deviceProperties":[{"id":0,"name":"NVIDIA H100 80GB HBM3","totalGlobalMem":85000000000,"numSms":132}],
"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":1000},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":10,"dur":50,"args":{"External id":1,"Input Dims":[[128,256],[256,64]],"Input type":["c10::BFloat16","c10::BFloat16"],"flops":4000000}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":20,"dur":5,"args":{"External id":1,"correlation":11}},
{"ph":"X","cat":"kernel","name":"sm90_xmma_gemm_bf16bf16_bf16f32","pid":0,"tid":7,"ts":30,"dur":100,"args":{"device":0,"stream":7,"correlation":11,"External id":1}},
{"ph":"X","cat":"cpu_op","name":"aten::conv2d","pid":1,"tid":1,"ts":200,"dur":50,"args":{"External id":2,"flops":6000000}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":210,"dur":5,"args":{"External id":2,"correlation":12}},
{"ph":"X","cat":"kernel","name":"implicit_convolve_sgemm","pid":0,"tid":7,"ts":300,"dur":100,"args":{"device":0,"stream":7,"correlation":12,"External id":2}}
]}"#;
    let dir = std::env::temp_dir().join(format!("stallscope-flops-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.json");
    std::fs::write(&path, json).unwrap();
    let t = common::load(&path);
    assert_eq!(t.op_flops.get(&1), Some(&4_000_000));
    assert_eq!(t.op_flops.get(&2), Some(&6_000_000));
    let a = stallscope::analysis::analyze(&t, &Default::default());
    let e = a.efficiency.expect("efficiency");
    assert_eq!(e.flops_per_step, 10_000_000.0);
    assert_eq!(e.flops_from_args, 1.0);
    let mm = e.ops.iter().find(|o| o.name == "aten::mm").unwrap();
    // bytes still from the shapes: (128·256 + 256·64 + 128·64)·2
    assert_eq!(
        mm.bytes,
        (128.0 * 256.0 + 256.0 * 64.0 + 128.0 * 64.0) * 2.0
    );
    assert_eq!(mm.achieved_tflops, 4e6 / 100_000.0 / 1000.0);
    std::fs::remove_dir_all(&dir).ok();
}

/// TraceLens's RMSNorm model (published with its perf-model extensions: per row of C
/// normalized elements 2C + 2 FLOPs, then 2 per element for the affine scale; bytes: input
/// and output once plus the weight) on the `rms_norm` and `_fused_rms_norm` calls of its own
/// normalization test trace: FLOPs and bytes within 1%. Layer, group and batch norms keep
/// stallscope's 8 FLOPs per element (docs/json-report.md says why).
#[test]
fn tracelens_rms_norm_formula_on_its_normalization_trace() {
    let Some(p) = common::corpus_file(
        "tracelens/tests__traces__perf_model__normalization__normalization_layer_test.json.gz",
    ) else {
        return;
    };
    let t = common::load(&p);
    let mut n_calls = 0;
    for (op, dims, types, _, ours) in
        recorded_calls(&t, &["aten::rms_norm", "aten::_fused_rms_norm"])
    {
        let x = dims[0].shape().unwrap().to_vec();
        // TraceLens publishes the affine form only; calls without a weight are left out
        let Some(w) = dims[2].shape().filter(|w| !w.is_empty()) else {
            continue;
        };
        let c = numel(w);
        let n = numel(&x);
        let flops = n / c * (2.0 * c + 2.0) + 2.0 * n;
        let bytes = (2.0 * n + c) * bpe(&types[0]);
        assert!(close(ours.flops, flops), "{op}: {} vs {flops}", ours.flops);
        assert!(close(ours.bytes, bytes), "{op}: {} vs {bytes}", ours.bytes);
        n_calls += 1;
    }
    assert!(n_calls >= 6, "{n_calls} rms_norm calls");
}

use stallscope::model::build::TraceBuilder;
use stallscope::model::GpuKind;

/// Steps on an H100 of GEMM calls: `(shapes or None, kernel µs)`; each call one bf16 kernel,
/// the host syncs on it.
fn gemm_steps(calls: &[(Option<&str>, f64)]) -> Trace {
    let mut b = TraceBuilder::new().device(0, "NVIDIA H100 80GB HBM3", 132, 80 << 30);
    let mut t = 0.0;
    for s in 0..3 {
        let start = t;
        for &(dims, us) in calls {
            let ext = b.op("aten::mm", t, 10.0);
            if let Some(d) = dims {
                b.shapes(
                    ext,
                    d,
                    "[\"c10::BFloat16\", \"c10::BFloat16\"]",
                    "[\"\", \"\"]",
                );
            }
            let c = b.runtime("cudaLaunchKernel", ext, t + 2.0, 5.0);
            b.gpu(
                GpuKind::Kernel,
                "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n",
                0,
                7,
                t + 10.0,
                us,
                c,
            );
            b.runtime("cudaDeviceSynchronize", 0, t + 11.0, us);
            t += us + 20.0;
        }
        b.annotation(&format!("ProfilerStep#{s}"), start, t - start - 5.0);
    }
    b.build()
}

/// A call whose shapes imply 111× the H100's bf16 peak (an 8192³ GEMM in 10 µs) is left out
/// of MFU and the roofline, named with its factor; the plausible call alone makes the MFU.
#[test]
fn impossible_calls_are_left_out() {
    let big = "[[8192, 8192], [8192, 8192]]";
    let t = gemm_steps(&[(Some(big), 4000.0), (Some(big), 10.0)]);
    let a = stallscope::analysis::analyze(&t, &Default::default());
    let e = a.efficiency.as_ref().expect("efficiency");
    assert_eq!(e.excluded.len(), 1, "{:?}", e.excluded);
    let x = &e.excluded[0];
    assert_eq!(
        (x.name.as_str(), x.calls, x.bound.as_str()),
        ("aten::mm", 3, "flops")
    );
    let flops = 2.0 * 8192f64.powi(3);
    let factor = flops / 10e-6 / 989.4e12;
    assert!(
        (x.factor - factor).abs() < 1e-6 * factor,
        "{} vs {factor}",
        x.factor
    );
    assert!(a
        .selection
        .notes
        .iter()
        .any(|n| n.starts_with("3 call(s) of aten::mm left out of MFU") && n.contains("111.13×")));
    // only the 4 ms calls count: one per step
    assert_eq!(e.flops_per_step, flops);
    let mfu = e.mfu.expect("mfu");
    assert!((mfu - flops / (e.step_us * 1e-6) / 989.4e12).abs() < 1e-12);
    assert!(mfu <= 1.0);
    // no figure above 100 % anywhere in the efficiency rows
    for o in e.ops.iter().chain(&e.phases) {
        assert!(o.achieved_tflops <= 989.4, "{o:?}");
    }
}

/// MFU and the roofline findings need FLOPs for at least half of the matrix-kernel time; below
/// it the report says for how much and why.
#[test]
fn mfu_needs_half_the_matrix_time() {
    let big = "[[8192, 8192], [8192, 8192]]";
    // 3 ms with shapes, 7 ms without: 30 %
    let t = gemm_steps(&[(Some(big), 3000.0), (None, 7000.0)]);
    let a = stallscope::analysis::analyze(&t, &Default::default());
    let e = a.efficiency.as_ref().expect("efficiency");
    assert_eq!(e.mfu, None);
    assert!(e.steps.iter().all(|s| s.mfu.is_none()));
    let why = e.mfu_unknown.as_deref().expect("why");
    assert!(
        why.starts_with("MFU unknown: FLOPs known for 30.0% of matrix-kernel time"),
        "{why}"
    );
    assert!(
        why.contains("70% operators without recorded shapes (e.g. `aten::mm`"),
        "{why}"
    );
    assert_eq!(e.uncovered[0].reason, "no_shapes");
    assert!(stallscope::report::efficiency_headline(&e.into()).contains("MFU unknown"));
    let d = stallscope::diagnose::diagnose(&t, &a);
    assert!(
        d.findings.iter().all(|f| f.id != "compute-bound"),
        "{:?}",
        d.findings.iter().map(|f| f.id).collect::<Vec<_>>()
    );
    // 7 ms with shapes, 3 ms without: an MFU, and the compute-bound finding
    let t = gemm_steps(&[(Some(big), 7000.0), (None, 3000.0)]);
    let a = stallscope::analysis::analyze(&t, &Default::default());
    let e = a.efficiency.as_ref().expect("efficiency");
    assert!(e.mfu.is_some() && e.mfu_unknown.is_none());
    let d = stallscope::diagnose::diagnose(&t, &a);
    assert!(d.findings.iter().any(|f| f.id == "compute-bound"));
}

/// The README's sample (ResNet-50 on a V100, PyTorch 1.9: convolutions without `Concrete
/// Inputs`) has FLOPs for 0.1 % of its matrix-kernel time: no MFU headline.
#[test]
fn readme_sample_has_no_mfu() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples/resnet50_v100_num_workers_0.pt.trace.json.gz");
    let t = common::load(&p);
    let a = stallscope::analysis::analyze(&t, &Default::default());
    let e = a.efficiency.as_ref().expect("efficiency");
    assert_eq!(e.mfu, None);
    let share = e.accounted_share.unwrap();
    assert!(share < 0.01, "{share}");
    let line = stallscope::report::efficiency_headline(&e.into());
    assert!(
        line.contains("MFU unknown: FLOPs known for 0.1% of matrix-kernel time"),
        "{line}"
    );
    assert!(!line.contains("MFU 0."), "{line}");
    assert_eq!(e.uncovered[0].reason, "no_formula");
    // its small in-place adds run above the V100's DRAM bandwidth from L2: kept, not called
    // impossible
    assert!(e.excluded.is_empty(), "{:?}", e.excluded);
}

/// sglang on an MI300X: deviceProperties lists device 0, the kernels ran on device 9 — one
/// board, named and with its peaks (it was "GPU 9 (unnamed)", no peak table).
#[test]
fn renumbered_device_keeps_its_row() {
    let Some(p) = common::corpus_file(
        "tracelens/tests__traces__inference__sglang_prefilldecode__sglang_Qwen3-8B_prefilldecode.json.gz",
    ) else {
        return;
    };
    let t = common::load(&p);
    assert_eq!(t.devices.len(), 1);
    assert_eq!(
        (t.devices[0].id, t.devices[0].name.as_str()),
        (9, "AMD Instinct MI300X")
    );
    let a = stallscope::analysis::analyze(&t, &Default::default());
    assert!(
        a.selection
            .notes
            .iter()
            .all(|n| !n.contains("no peak table")),
        "{:?}",
        a.selection.notes
    );
    let e = a.efficiency.as_ref().expect("efficiency");
    assert_eq!(e.device.as_deref(), Some("MI300X"));
    let mfu = e.mfu.expect("mfu");
    assert!(mfu > 0.0 && mfu < 1.0, "{mfu}");
}

/// MFU abstains beside the figure in every format on real captures of each kind: the README's
/// sample (PyTorch 1.9 convolutions, no FLOPs formula for their recorded inputs), and two
/// captures whose matrix time is mostly replayed by `hipGraphLaunch`, shapes hidden inside
/// the replays: xDiT FLUX.1 (its compiled region replays a graph; it read "operators without
/// recorded shapes" before) and vLLM's piecewise graph replays on an MI300X (it read "kernels
/// no recorded operator launched"), and sglang's decode graph replays (an int32 dtype with no
/// peak: it said "no peak", not why). Each says "MFU unknown: FLOPs known for
/// N% of matrix-kernel time" and why, and prints no MFU number.
#[test]
fn mfu_unknown_in_every_format_on_real_captures() {
    let readme = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples/resnet50_v100_num_workers_0.pt.trace.json.gz");
    let cases: [(Option<std::path::PathBuf>, &str, &str); 4] = [
        (
            Some(readme),
            "MFU unknown: FLOPs known for 0.1% of matrix-kernel time",
            "operators without a FLOPs formula",
        ),
        (
            common::corpus_file(
                "tracelens/tests__traces__inference__xdit_flux.1_aiter_sage__profile_trace_rank_0.json.gz",
            ),
            "MFU unknown: FLOPs known for 11.5% of matrix-kernel time",
            "88% kernels replayed from CUDA/HIP graphs (their shapes are hidden inside the replay)",
        ),
        (
            common::corpus_file(
                "tracelens/tests__traces__inference__vllm_prefilldecode_piecewise__graph_execution.json.gz",
            ),
            "MFU unknown: FLOPs known for 0.2% of matrix-kernel time",
            "kernels replayed from CUDA/HIP graphs (their shapes are hidden inside the replay)",
        ),
        // sglang decode on an MI300X: the only FLOPs known are an int32 `aten::neg`'s, a
        // dtype without a peak; it read "MI300X has no int32 peak in the table: no MFU; 0% of
        // matrix-kernel time accounted for", hiding why
        (
            common::corpus_file(
                "tracelens/tests__traces__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz",
            ),
            "MFU unknown: FLOPs known for 0.0% of matrix-kernel time",
            "100% kernels replayed from CUDA/HIP graphs (their shapes are hidden inside the replay)",
        ),
    ];
    for (path, unknown, why) in cases {
        let Some(p) = path else { continue };
        let p = p.to_str().unwrap();
        let j = common::analyze_json(std::path::Path::new(p), &[]);
        let e = &j["efficiency"];
        assert!(e["mfu"].is_null(), "{p}: {e}");
        let text = e["mfu_unknown"].as_str().unwrap();
        assert!(
            text.starts_with(unknown) && text.contains(why),
            "{p}: {text}"
        );
        for fmt in ["table", "md", "html"] {
            let out = common::ok_stdout(&["analyze", p, "--format", fmt]);
            // the terminal wraps lines and HTML may break them: compare on single spaces
            let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(flat.contains(unknown), "{p} {fmt}: no `{unknown}`");
            assert!(flat.contains(why), "{p} {fmt}: no `{why}`");
            assert!(
                !flat.contains("MFU 0.") && !flat.contains("% MFU"),
                "{p} {fmt}: an MFU number"
            );
        }
    }
}
