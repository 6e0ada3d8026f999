//! Every file of ../shared/corpus either loads (Kineto traces) or is refused with a one-line
//! message that names the file and what it is; nothing panics.

mod common;

use std::path::{Path, PathBuf};

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn is_kineto_name(name: &str) -> bool {
    (name.ends_with(".json") || name.ends_with(".json.gz"))
        && !name.contains("rocprof")
        && !name.contains("_et.json")
        && !name.ends_with("_et.json.gz")
        && !name.contains("gpu_metrics_expected")
        && !name.contains("DERIVED__")
}

#[test]
fn every_corpus_file_loads_or_is_named() {
    let Some(dir) = common::corpus_file("") else {
        return;
    };
    let mut files = Vec::new();
    walk(&dir, &mut files);
    files.sort();
    let mut loaded = 0;
    let mut refused = 0;
    for p in files {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            continue;
        }
        let path = p.to_str().unwrap().to_string();
        let result = std::panic::catch_unwind(|| {
            stallscope::ingest::load(&path, &Default::default()).map(|t| {
                // the analyses must not panic on any real trace either
                let a = stallscope::analysis::analyze(&t, &Default::default());
                let _ =
                    stallscope::report::Report::new(&t, &a, stallscope::diagnose::diagnose(&t, &a));
                t.source.events
            })
        });
        match result {
            Err(_) => panic!("panic on {name}"),
            Ok(Ok(_)) => {
                loaded += 1;
            }
            Ok(Err(e)) => {
                let msg = e.to_string();
                assert!(!msg.contains('\n'), "{name}: multi-line error: {msg}");
                assert!(
                    msg.starts_with(&path),
                    "{name}: error does not name the file: {msg}"
                );
                assert!(
                    !is_kineto_name(&name)
                        || name.contains("memory_timeline")
                        || msg.contains("not a Kineto trace"),
                    "Kineto file {name} failed: {msg}"
                );
                refused += 1;
            }
        }
    }
    eprintln!("corpus: {loaded} loaded, {refused} refused with a message");
    assert!(loaded >= 70, "only {loaded} corpus files loaded");
}

/// Parser sanity counts from ../shared/reference/expected-values.md §1.
#[test]
fn parser_sanity_counts() {
    use stallscope::model::{CpuKind, GpuKind};
    let cases: &[(&str, u64, usize, usize, usize, usize, usize)] = &[
        // file, traceEvents, kernels, runtime, driver, memcpy, memset
        ("tbprof/tb_plugin__samples__resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz", 75718, 8772, 11923, 0, 12, 312),
        ("tbprof/tb_plugin__samples__resnet50_num_workers_4__worker0.1623212756351.pt.trace.json.gz", 71424, 8868, 12085, 0, 12, 378),
        ("tracelens/tests__traces__b200__eager_trace.json.gz", 24656, 768, 1151, 221, 161, 0),
        ("hta/tests__data__ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", 68692, 4350, 15329, 0, 1600, 145),
        ("param/et_replay__tests__inputs__dlrm_kineto.tar.gz__dlrm_kineto__worker0_step_12.1694128201545.pt.trace.json.gz", 3290, 245, 525, 0, 16, 0),
        ("tracelens/tests__traces__inference__vllm_decode_full__graph_execution.json.gz", 1993, 425, 20, 0, 9, 0),
        ("hta/tests__data__triton_example__triton_example.json.gz", 71, 1, 1, 1, 0, 0),
        ("zoology/trace.json.gz", 1784, 0, 246, 24, 0, 0),
        ("dtu_mlops/trace.json", 990, 0, 0, 0, 0, 0),
        ("tbprof/docs__traces__after_fix_trace.json", 75, 1, 1, 0, 0, 0),
    ];
    for &(rel, events, kernels, runtime, driver, memcpy, memset) in cases {
        let Some(p) = common::corpus_file(rel) else {
            return;
        };
        let t = common::load(&p);
        let gk = |k: GpuKind| t.gpu.iter().filter(|g| g.kind == k).count();
        let ck = |k: CpuKind| t.cpu.iter().filter(|c| c.kind == k).count();
        assert_eq!(t.source.events, events, "{rel} events");
        assert_eq!(gk(GpuKind::Kernel), kernels, "{rel} kernels");
        assert_eq!(ck(CpuKind::Runtime), runtime, "{rel} runtime");
        assert_eq!(ck(CpuKind::Driver), driver, "{rel} driver");
        assert_eq!(gk(GpuKind::Memcpy), memcpy, "{rel} memcpy");
        assert_eq!(gk(GpuKind::Memset), memset, "{rel} memset");
    }
    // vLLM full-graph decode: 421 kernels share the one hipGraphLaunch correlation
    if let Some(p) = common::corpus_file(
        "tracelens/tests__traces__inference__vllm_decode_full__graph_execution.json.gz",
    ) {
        let t = common::load(&p);
        let shared = t.gpu.iter().filter(|g| g.correlation == 505113).count();
        assert_eq!(shared, 421);
        let g = t.gpu.iter().find(|g| g.correlation == 505113).unwrap();
        assert_eq!(t.name(t.cpu[g.launch as usize].name), "hipGraphLaunch");
    }
}
