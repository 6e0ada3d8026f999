//! Phases on the samples shipped in the repository (no corpus needed) and the `phases`
//! command end to end.

mod common;

use common::stallscope;

use stallscope::analysis::{self, phases, AnalyzeOptions};
use stallscope::window::{self, WindowSpec};

/// ResNet-50 (2021 trace, `Operator` record_functions). The counts were checked with an
/// independent script: device activities whose runtime call (by correlation) lies inside an
/// `Optimizer.step#SGD.step` span on the same thread: 2,898 for 7,883 µs; inside
/// `Optimizer.zero_grad#SGD.zero_grad`: 966 for 1,026 µs; 9,096 in all.
#[test]
fn resnet_sample_optimizer_phases() {
    let t = common::load(&common::sample(
        "resnet50_v100_num_workers_0.pt.trace.json.gz",
    ));
    let a = analysis::analyze(&t, &AnalyzeOptions::default());
    let p = &a.phases;
    assert_eq!(p.activities, 9096);
    let get = |path: &str| p.phases.iter().find(|x| x.path == path).unwrap();
    let step = get("Optimizer.step#SGD.step");
    assert_eq!((step.calls, step.kernel_count), (6, 2898));
    assert_eq!(step.gpu_time / 1000, 7883);
    let zero = get("Optimizer.zero_grad#SGD.zero_grad");
    assert_eq!((zero.calls, zero.kernel_count), (6, 966));
    assert_eq!(zero.gpu_time / 1000, 1026);
    let dl = get("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
    assert_eq!((dl.calls, dl.kernel_count), (6, 0));
    assert!(dl.cpu_total > 0);
    let un = get(phases::UNANNOTATED);
    assert_eq!(un.kernel_count, 9096 - 2898 - 966);
    assert_eq!(p.phases.last().unwrap().path, phases::UNANNOTATED);
    // shares of the window device time add up over the roots
    let s: f64 = p
        .phases
        .iter()
        .filter(|x| x.depth == 0)
        .map(|x| x.gpu_share)
        .sum();
    assert!((s - 1.0).abs() < 1e-9, "{s}");
}

/// BERT-small on H100 with `with_modules`: the nn.Module tree, every activity attributed once.
#[test]
fn module_tree_on_bert_sample() {
    let t = common::load(&common::sample("h100_bert_small.json.gz"));
    let a = analysis::analyze(&t, &AnalyzeOptions::default());
    let p = &a.phases;
    assert!(p.activities > 0);
    assert!(p
        .phases
        .iter()
        .any(|x| x.name.starts_with("nn.Module: ") && x.depth >= 1));
    let roots: u64 = p
        .phases
        .iter()
        .filter(|x| x.depth == 0)
        .map(|x| x.kernel_count)
        .sum();
    assert_eq!(roots, p.activities);
    for x in &p.phases {
        assert_eq!(x.path.split('/').count() as u32, x.depth + 1, "{}", x.path);
        let kids: u64 = p
            .phases
            .iter()
            .filter(|c| c.depth == x.depth + 1 && c.path.starts_with(&format!("{}/", x.path)))
            .map(|c| c.kernel_count)
            .sum();
        assert_eq!(x.kernel_count, x.self_kernel_count + kids, "{}", x.path);
        assert!(
            x.share >= 0.0 && x.share <= 1.0 + 1e-12,
            "{}: {}",
            x.path,
            x.share
        );
        assert!(x.gpu_span <= a.selection.duration(), "{}", x.path);
    }
}

/// torch.compile sample: one compiled-region call, its graph under it, nothing compiled in
/// the profiled window (a single run cannot be judged slow), the GPU work all under the graph.
#[test]
fn compiled_region_sample() {
    let t = common::load(&common::sample("mi300x_torch_compile_triton.json.gz"));
    let a = analysis::analyze(&t, &AnalyzeOptions::default());
    assert_eq!(a.selection.compile.total, 0);
    let graph = a
        .phases
        .phases
        .iter()
        .find(|x| x.name.starts_with("## Call CompiledFxGraph"))
        .expect("compiled graph phase");
    assert_eq!(graph.calls, 1);
    assert!(graph.kernel_count > 0);
}

#[test]
fn phases_command_prints_the_tree_and_json() {
    let p = common::sample("resnet50_v100_num_workers_0.pt.trace.json.gz");
    let out = stallscope(&["phases", p.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("Window  steady state (auto) — 6 of 6 steps"),
        "{text}"
    );
    assert!(text.contains("Optimizer.step#SGD.step"), "{text}");
    assert!(text.contains("2,898"), "{text}");
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "over 100 columns: {line:?}");
    }
    let out = stallscope(&[
        "phases",
        p.to_str().unwrap(),
        "--steps",
        "6..7",
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["window"]["spec"], "--steps 6..7");
    assert_eq!(v["window"]["steps"].as_array().unwrap().len(), 2);
    assert_eq!(v["window"]["excluded"].as_array().unwrap().len(), 4);
    let ph = v["phases"].as_array().unwrap();
    let opt = ph
        .iter()
        .find(|x| x["path"] == "Optimizer.step#SGD.step")
        .unwrap();
    assert_eq!(opt["calls"], 2);
    assert_eq!(opt["depth"], 0);
    for key in [
        "name",
        "cpu_total_us",
        "cpu_mean_us",
        "kernel_count",
        "gpu_us",
        "gpu_span_us",
        "share",
        "top_kernels",
        "breakdown_us",
        "self_gpu_us",
        "gpu_share",
    ] {
        assert!(opt.get(key).is_some(), "missing {key}");
    }
}

#[test]
fn analyze_json_has_window_and_phases_and_bad_windows_exit_2() {
    let p = common::sample("resnet50_v100_num_workers_0.pt.trace.json.gz");
    let ps = p.to_str().unwrap();
    let out = stallscope(&["analyze", ps, "--format", "json", "--steps", "7"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["window"]["steps"], serde_json::json!(["ProfilerStep#7"]));
    assert_eq!(v["steps"].as_array().unwrap().len(), 1);
    assert_eq!(v["window"]["compile_us"], 0.0);
    // the average is over the window's steps: ProfilerStep#7 alone (plugin: 179,733 µs)
    let st = v["step_time_us"].as_f64().unwrap();
    assert!((st - 179733.0).abs() <= 1.0, "{st}");
    assert!(v["phases"].as_array().unwrap().len() >= 3);
    for (args, needle) in [
        (vec!["--steps", "40..50"], "selects no step"),
        (vec!["--focus", "no_such_annotation"], "no annotation"),
        (vec!["--time", "9e9..1e10"], "outside the trace"),
        (vec!["--steps", "x"], "step number"),
    ] {
        let mut a = vec!["analyze", ps];
        a.extend(args.iter());
        let out = stallscope(&a);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // --all and --steps conflict
    let out = stallscope(&["analyze", ps, "--all", "--steps", "5"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `analyze` (the library entry point) falls back to every step, with a note, when the window
/// cannot be selected.
#[test]
fn analyze_falls_back_with_a_note() {
    let t = common::load(&common::sample(
        "resnet50_v100_num_workers_0.pt.trace.json.gz",
    ));
    let opts = AnalyzeOptions {
        window: window::parse_steps("99").unwrap(),
        ..AnalyzeOptions::default()
    };
    assert!(analysis::try_analyze(&t, &opts).is_err());
    let a = analysis::analyze(&t, &opts);
    assert_eq!(a.steps.steps.len(), 6);
    assert_eq!(a.selection.spec, WindowSpec::All);
    assert!(
        a.selection.notes[0].contains("selects no step"),
        "{:?}",
        a.selection.notes
    );
}
