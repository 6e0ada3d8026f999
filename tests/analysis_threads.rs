//! The analyses give the same report whether independent ones run side by side on two
//! threads or one after another on the calling thread (`AnalyzeOptions::threads`): the JSON
//! report (every view, the diagnosis and its evidence) is compared byte for byte, over the
//! shipped samples and a few corpus traces (Kineto and Nsight Systems), for the default
//! window and for every step.

mod common;

use std::path::Path;

use stallscope::analysis::{self, AnalyzeOptions};
use stallscope::report::{json::Json, RenderOptions, Renderer, Report};
use stallscope::window::WindowSpec;

fn report_json(t: &stallscope::model::Trace, window: &WindowSpec, threads: usize) -> String {
    let opts = AnalyzeOptions {
        window: window.clone(),
        threads,
        ..AnalyzeOptions::default()
    };
    let a = analysis::analyze(t, &opts);
    let rep = Report::new(t, &a, stallscope::diagnose::diagnose(t, &a));
    let mut buf = Vec::new();
    Json.render(
        &rep,
        &RenderOptions {
            top: 0,
            color: false,
            width: 100,
        },
        &mut buf,
    )
    .unwrap();
    String::from_utf8(buf).unwrap()
}

fn check(path: &Path) {
    let t = common::load(path);
    for window in [WindowSpec::Auto, WindowSpec::All] {
        let one = report_json(&t, &window, 1);
        let two = report_json(&t, &window, 2);
        assert!(
            one == two,
            "{}: the report differs between 1 and 2 analysis threads ({window:?})",
            path.display()
        );
        // and the default (all cores) is one of the two
        assert_eq!(report_json(&t, &window, 0), one, "{}", path.display());
    }
}

#[test]
fn shipped_samples_analyze_the_same_on_one_or_two_threads() {
    for s in [
        "resnet50_v100_num_workers_0.pt.trace.json.gz",
        "h100_bert_small.json.gz",
        "mi300x_torch_compile_triton.json.gz",
        "a100_triton_example.json.gz",
        "cpu_only_rank34.json.gz",
    ] {
        check(&common::sample(s));
    }
}

#[test]
fn corpus_traces_analyze_the_same_on_one_or_two_threads() {
    for rel in [
        "hta/tests__data__df_index_resolver__df_index_resolver.json.gz",
        "hta/tests__data__critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
        "tracelens/tests__traces__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        "nsys/sqlite/nsysai_fastvideo_2xh100_nsys2026.2.sqlite",
        "nsys/sqlite/pipit_cloverleaf-cuda_4xa100_nsys2024.5.sqlite",
    ] {
        let Some(p) = common::corpus_file(rel) else {
            return;
        };
        check(&p);
    }
}

#[test]
fn host_facts_are_taken_once_and_recomputed_after() {
    // the diagnosis uses the host facts computed beside the views, then computes them itself
    // when asked again: both diagnoses agree
    let t = common::load(&common::sample(
        "resnet50_v100_num_workers_0.pt.trace.json.gz",
    ));
    let a = analysis::analyze(&t, &AnalyzeOptions::default());
    let first = stallscope::diagnose::diagnose(&t, &a);
    let again = stallscope::diagnose::diagnose(&t, &a);
    assert_eq!(first, again);
    assert!(a
        .take_host_facts(
            &a.selection.mask,
            &a.steps.steps,
            &a.selection.compile.spans
        )
        .is_none());
}
