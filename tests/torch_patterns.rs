//! torch.profiler's own anti-patterns (issue 19): each pattern on a small Kineto trace built
//! here, the finding it raises (with the numbers computed by hand from the events), and the
//! same trace without the pattern raising nothing.

mod common;

use stallscope::diagnose::{self, Diagnosis, Finding, Severity};

/// A Kineto trace under construction: one host thread, one stream, times in µs.
struct B {
    ev: Vec<String>,
    next_id: u64,
}

impl B {
    fn new() -> B {
        B {
            ev: Vec::new(),
            next_id: 1,
        }
    }
    fn step(&mut self, n: u32, ts: f64, dur: f64) {
        self.ev.push(format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{n}","pid":1,"tid":1,"ts":{ts},"dur":{dur}}}"#
        ));
    }
    /// A cpu_op; returns its External id.
    fn op(&mut self, name: &str, ts: f64, dur: f64, dims: &str, types: &str) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.ev.push(format!(
            r#"{{"ph":"X","cat":"cpu_op","name":"{name}","pid":1,"tid":1,"ts":{ts},"dur":{dur},"args":{{"External id":{id},"Input Dims":{dims},"Input type":{types}}}}}"#
        ));
        id
    }
    /// A Python frame (`module`: an nn.Module call).
    fn py(&mut self, name: &str, ts: f64, dur: f64, module: bool) {
        let m = if module {
            r#","args":{"Python module id":1}"#
        } else {
            ""
        };
        self.ev.push(format!(
            r#"{{"ph":"X","cat":"python_function","name":"{name}","pid":1,"tid":1,"ts":{ts},"dur":{dur}{m}}}"#
        ));
    }
    /// A runtime launch by op `ext` at `ts` (1 µs) of a device activity at `gts` for `gdur`.
    fn launch(&mut self, ext: u64, ts: f64, cat: &str, name: &str, gts: f64, gdur: f64) {
        let c = 1000 + self.next_id;
        self.next_id += 1;
        let rt = if cat == "kernel" {
            "cudaLaunchKernel"
        } else {
            "cudaMemcpyAsync"
        };
        self.ev.push(format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"{rt}","pid":1,"tid":1,"ts":{ts},"dur":1,"args":{{"External id":{ext},"correlation":{c}}}}}"#
        ));
        self.ev.push(format!(
            r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":0,"tid":7,"ts":{gts},"dur":{gdur},"args":{{"device":0,"stream":7,"correlation":{c},"External id":{ext},"bytes":4096}}}}"#
        ));
    }
    fn diagnose(&self, tag: &str) -> Diagnosis {
        let dir = std::env::temp_dir().join(format!("stallscope-patterns-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!("{tag}.json"));
        let body = format!(
            r#"{{"schemaVersion":1,"deviceProperties":[{{"id":0,"name":"NVIDIA A100-SXM4-80GB","computeMajor":8,"computeMinor":0,"totalGlobalMem":85899345920,"numSms":108}}],"traceEvents":[{}]}}"#,
            self.ev.join(",\n")
        );
        std::fs::write(&p, body).unwrap();
        let t = stallscope::ingest::load(p.to_str().unwrap(), &Default::default()).unwrap();
        let a = stallscope::analysis::analyze(
            &t,
            &stallscope::analysis::AnalyzeOptions {
                all_steps: true,
                ..Default::default()
            },
        );
        diagnose::diagnose(&t, &a)
    }
}

fn find<'a>(d: &'a Diagnosis, id: &str) -> Option<&'a Finding> {
    d.findings.iter().find(|f| f.id == id)
}

/// Two 1000 µs steps, each with a 200 µs GEMM kernel (so the device has work).
fn base() -> B {
    base_with(200.0)
}

/// Two 1000 µs steps, each with a GEMM kernel of `gemm_us`.
fn base_with(gemm_us: f64) -> B {
    let mut b = B::new();
    for s in 0..2 {
        let t0 = s as f64 * 1000.0;
        b.step(s + 1, t0, 1000.0);
        let id = b.op(
            "aten::mm",
            t0 + 10.0,
            20.0,
            "[[64, 64], [64, 64]]",
            r#"["float", "float"]"#,
        );
        b.launch(id, t0 + 15.0, "kernel", "gemm_kernel", t0 + 20.0, gemm_us);
        // on a stream of its own: the tests' other kernels run beside it (on one stream they
        // would queue behind it, and stallscope cuts a kernel overrunning the next one)
        let gemm = b.ev.last_mut().unwrap();
        *gemm = gemm.replace(r#""stream":7"#, r#""stream":13"#);
    }
    b
}

/// Per step at 300 µs: `first` (a CPU initialiser or not), then a host-to-device move of
/// 1024 floats (`aten::to` 50 µs host, a 30 µs pageable copy).
/// `framed`: each call inside its Python frame (`with_stack=True`), as the matcher sees them.
fn with_moves(first: &str, framed: bool) -> B {
    let mut b = base();
    for s in 0..2 {
        let t0 = s as f64 * 1000.0 + 300.0;
        let f32x2 = r#"["float", "float", "Scalar"]"#;
        if framed {
            b.py(
                "<built-in method zeros of type object>",
                t0 - 1.0,
                12.0,
                false,
            );
            b.py(
                "<built-in method to of Tensor object>",
                t0 + 19.0,
                52.0,
                false,
            );
        }
        b.op(first, t0, 10.0, "[[1024], [1024], []]", f32x2);
        if first == "aten::zeros" {
            b.op("aten::zero_", t0 + 2.0, 6.0, "[[1024]]", r#"["float"]"#);
            b.op(
                "aten::fill_",
                t0 + 3.0,
                4.0,
                "[[1024], []]",
                r#"["float", "Scalar"]"#,
            );
        }
        let to_types = r#"["float", "", "", "", ""]"#;
        b.op(
            "aten::to",
            t0 + 20.0,
            50.0,
            "[[1024], [], [], [], []]",
            to_types,
        );
        b.op(
            "aten::_to_copy",
            t0 + 21.0,
            48.0,
            "[[1024]]",
            r#"["float"]"#,
        );
        let c = b.op(
            "aten::copy_",
            t0 + 25.0,
            40.0,
            "[[1024], [1024], []]",
            f32x2,
        );
        let copy = "Memcpy HtoD (Pageable -> Device)";
        b.launch(c, t0 + 30.0, "gpu_memcpy", copy, t0 + 35.0, 30.0);
    }
    b
}

#[test]
fn extra_cuda_copy_claims_the_moves() {
    let d = with_moves("aten::zeros", false).diagnose("copy");
    let f = find(&d, "extra-cuda-copy").expect("extra-cuda-copy");
    // the aten::to calls: 50 µs host per step ≥ 30 µs of copy
    assert_eq!(f.recoverable_us, 50.0);
    assert_eq!(f.evidence.metrics["calls"], 2.0);
    assert_eq!(f.evidence.metrics["device_us_per_step"], 30.0);
    assert_eq!(f.severity, Severity::Medium);
    assert_ne!(d.findings[0].id, "extra-cuda-copy");

    // the same move of a tensor computed on the host (no initialiser before it): no finding
    let d = with_moves("aten::add", false).diagnose("copy-neg");
    assert!(find(&d, "extra-cuda-copy").is_none());

    // with Python frames: the initialiser is the frame before the move's frame
    let d = with_moves("aten::zeros", true).diagnose("copy-framed");
    let f = find(&d, "extra-cuda-copy").expect("extra-cuda-copy under Python frames");
    assert_eq!(f.evidence.metrics["calls"], 2.0);
    let d = with_moves("aten::add", true).diagnose("copy-framed-neg");
    assert!(find(&d, "extra-cuda-copy").is_none());
}

#[test]
fn grad_not_set_to_none_claims_the_zero_kernels() {
    let zero_grad = |b: &mut B, frame: &str| {
        for s in 0..2 {
            let t0 = s as f64 * 1000.0 + 400.0;
            b.op(frame, t0, 100.0, "[]", "[]");
            for k in 0..4 {
                let t = t0 + 5.0 + 20.0 * k as f64;
                let id = b.op("aten::zero_", t, 15.0, "[[256, 256]]", r#"["float"]"#);
                let fill = b.op(
                    "aten::fill_",
                    t + 1.0,
                    12.0,
                    "[[256, 256], []]",
                    r#"["float", "Scalar"]"#,
                );
                let _ = id;
                b.launch(
                    fill,
                    t + 2.0,
                    "kernel",
                    "vectorized_elementwise_kernel<FillFunctor>",
                    t + 300.0,
                    3.0,
                );
            }
        }
    };
    let mut b = base();
    zero_grad(&mut b, "Optimizer.zero_grad#SGD.zero_grad");
    let d = b.diagnose("zero");
    let uncapped = find(&d, "grad-not-set-to-none").map(|f| f.recoverable_us);
    let f = find(&d, "grad-not-set-to-none").expect("grad-not-set-to-none");
    // 4 zero_ calls of 15 µs host per step (60 µs) vs 4 × 3 µs of fill kernels
    assert_eq!(f.evidence.metrics["calls"], 8.0);
    assert_eq!(f.evidence.metrics["host_us_per_step"], 60.0);
    assert_eq!(f.evidence.metrics["device_us_per_step"], 12.0);
    assert_eq!(f.recoverable_us, 60.0);
    assert_eq!(uncapped, Some(60.0));

    // a device busy all step but 20 µs (kernel 20..990 µs): host work saved only helps while
    // the device idles, so the claim drops to at most that idle
    let mut b = base_with(970.0);
    zero_grad(&mut b, "Optimizer.zero_grad#SGD.zero_grad");
    let d = b.diagnose("zero-busy");
    let f = find(&d, "grad-not-set-to-none").expect("grad-not-set-to-none");
    assert_eq!(f.evidence.metrics["uncapped_us_per_step"], 60.0);
    assert!(f.recoverable_us <= 30.0, "{}", f.recoverable_us);

    // the same zero_ calls outside zero_grad (e.g. a buffer reset in forward): no finding
    let mut b = base();
    zero_grad(&mut b, "forward");
    assert!(find(&b.diagnose("zero-neg"), "grad-not-set-to-none").is_none());
}

#[test]
fn for_loop_indexing_needs_ten_repeats() {
    let lp = |b: &mut B, n: usize| {
        let t0 = 300.0;
        b.op("loop", t0, 400.0, "[]", "[]");
        for i in 0..n {
            let t = t0 + 1.0 + 10.0 * i as f64;
            b.op(
                "aten::select",
                t,
                4.0,
                "[[100, 100], [], []]",
                r#"["float", "", ""]"#,
            );
            b.op(
                "aten::fill_",
                t + 5.0,
                4.0,
                "[[100], []]",
                r#"["float", "Scalar"]"#,
            );
        }
    };
    let mut b = base();
    lp(&mut b, 12);
    let d = b.diagnose("loop");
    let f = find(&d, "for-loop-indexing").expect("for-loop-indexing");
    assert_eq!(f.evidence.metrics["iterations"], 12.0);
    // 12 × (4 + 4) µs of host time over 2 steps
    assert_eq!(f.evidence.metrics["host_us_per_step"], 48.0);
    // a host pattern: vectorizing removes the loop's host time, while the device idles
    let idle = f.evidence.metrics["device_idle_us_per_step"];
    assert!(idle > 0.0);
    assert_eq!(f.recoverable_us, 48.0f64.min(idle));
    assert_ne!(f.severity, Severity::Info);
    assert!(f.recoverable_basis.contains("host time"));

    let mut b = base();
    lp(&mut b, 9);
    assert!(find(&b.diagnose("loop-neg"), "for-loop-indexing").is_none());
}

#[test]
fn conv_bias_before_batchnorm_is_found_through_module_frames() {
    let net = |b: &mut B, bias: bool| {
        let t0 = 300.0;
        b.py("nn.Module: Conv2d_0", t0, 50.0, true);
        let types = if bias {
            r#"["float", "float", "float", "", "", "", ""]"#
        } else {
            r#"["float", "float", "", "", "", "", ""]"#
        };
        let c = b.op(
            "aten::conv2d",
            t0 + 1.0,
            40.0,
            "[[8, 3, 32, 32], [16, 3, 3, 3], [16], [], [], [], []]",
            types,
        );
        b.launch(c, t0 + 5.0, "kernel", "cudnn_conv_kernel", t0 + 400.0, 20.0);
        b.py("nn.Module: BatchNorm2d_0", t0 + 60.0, 30.0, true);
        b.op(
            "aten::batch_norm",
            t0 + 61.0,
            20.0,
            "[[8, 16, 32, 32]]",
            r#"["float"]"#,
        );
    };
    let mut b = base();
    net(&mut b, true);
    let d = b.diagnose("conv");
    let f = find(&d, "conv-bias-before-batchnorm").expect("conv-bias-before-batchnorm");
    assert_eq!(f.evidence.metrics["calls"], 1.0);
    // step 2 has fewer device activities than step 1: cut, so the window is step 1 alone
    assert_eq!(f.evidence.metrics["device_us_per_step"], 20.0);
    assert_eq!(f.severity, Severity::Info);
    assert!(
        f.evidence.facts.iter().any(|x| x.contains("[16]")),
        "{:?}",
        f.evidence.facts
    );

    let mut b = base();
    net(&mut b, false);
    assert!(find(&b.diagnose("conv-neg"), "conv-bias-before-batchnorm").is_none());
}

#[test]
fn matmul_dims_not_multiple_of_8_in_half() {
    let mm = |b: &mut B, dims: &str, ty: &str| {
        let id = b.op("aten::mm", 300.0, 20.0, dims, ty);
        b.launch(id, 305.0, "kernel", "ampere_fp16_gemm", 500.0, 50.0);
    };
    let mut b = base();
    mm(
        &mut b,
        "[[64, 100], [100, 64]]",
        r#"["c10::Half", "c10::Half"]"#,
    );
    let d = b.diagnose("mm");
    let f = find(&d, "matmul-dim-not-aligned").expect("matmul-dim-not-aligned");
    assert_eq!(f.evidence.metrics["calls"], 1.0);
    // one step in the window (step 2, with fewer kernels, is cut)
    assert_eq!(f.evidence.metrics["device_us_per_step"], 50.0);
    assert!(f
        .evidence
        .facts
        .iter()
        .any(|x| x.contains("[[64, 100], [100, 64]]")));
    assert_eq!(f.recoverable_us, 0.0);

    // aligned dims, or fp32 with the same dims: no finding
    for (i, (dims, ty)) in [
        ("[[64, 104], [104, 64]]", r#"["c10::Half", "c10::Half"]"#),
        ("[[64, 100], [100, 64]]", r#"["float", "float"]"#),
    ]
    .into_iter()
    .enumerate()
    {
        let mut b = base();
        mm(&mut b, dims, ty);
        assert!(find(&b.diagnose(&format!("mm-neg{i}")), "matmul-dim-not-aligned").is_none());
    }
}

#[test]
fn optimizer_single_tensor_frames() {
    let opt = |b: &mut B, frame: &str| {
        b.py(frame, 600.0, 80.0, false);
        for k in 0..3 {
            let t = 601.0 + 20.0 * k as f64;
            let id = b.op(
                "aten::add_",
                t,
                10.0,
                "[[256], [256], []]",
                r#"["float", "float", "Scalar"]"#,
            );
            b.launch(
                id,
                t + 2.0,
                "kernel",
                "vectorized_elementwise_kernel",
                700.0 + 5.0 * k as f64,
                2.0,
            );
        }
    };
    let mut b = base();
    opt(&mut b, "torch/optim/adam.py(339): _single_tensor_adam");
    let d = b.diagnose("opt");
    let f = find(&d, "optimizer-single-tensor").expect("optimizer-single-tensor");
    assert_eq!(f.evidence.metrics["calls"], 1.0);
    // three 2 µs kernels; one step in the window (step 2, with fewer kernels, is cut)
    assert_eq!(f.evidence.metrics["device_us_per_step"], 6.0);
    // a host pattern: the foreach optimizer removes the per-parameter loop's host time
    let (host, idle) = (
        f.evidence.metrics["host_us_per_step"],
        f.evidence.metrics["device_idle_us_per_step"],
    );
    assert!(host > 0.0);
    assert_eq!(f.recoverable_us, host.min(idle));
    assert_ne!(f.severity, Severity::Info);

    let mut b = base();
    opt(&mut b, "torch/optim/adam.py(420): _multi_tensor_adam");
    assert!(find(&b.diagnose("opt-neg"), "optimizer-single-tensor").is_none());
}

/// ResNet-50 has 161 parameter tensors (53 conv weights, 53 × 2 BatchNorm weights and biases,
/// the fc weight and bias): `SGD.zero_grad` zeroes each once per step.
#[test]
fn resnet50_zero_grad_zeroes_its_161_parameters_each_step() {
    let rel =
        "tbprof/tb_plugin__samples__resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz";
    let Some(p) = common::corpus_file(rel) else {
        return;
    };
    let t = common::load(&p);
    let a = stallscope::analysis::analyze(&t, &Default::default());
    let d = diagnose::diagnose(&t, &a);
    let f = find(&d, "grad-not-set-to-none").expect("grad-not-set-to-none");
    let steps = a.steps.steps.len() as f64;
    assert_eq!(f.evidence.metrics["calls"], 161.0 * steps);
    assert_eq!(f.severity, Severity::Low);
    // not the first finding: the DataLoader costs far more
    assert_eq!(d.findings[0].id, "dataloader-stall");
}
