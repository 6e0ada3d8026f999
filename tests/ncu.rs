//! Nsight Compute CSVs: every corpus file loads; the ESMM SGEMM report gives the same numbers
//! from its details page, its raw page in base units and its raw page in auto units
//! (../shared/reference/ncu-csv.md §7, expected-values.md §6).

mod common;

use stallscope::ingest::ncu::{self, Bound, Layout, NcuReport};

fn load(name: &str) -> Option<NcuReport> {
    let p = common::corpus_file(&format!("ncu/csv/{name}"))?;
    Some(ncu::read(p.to_str().unwrap()).unwrap_or_else(|e| panic!("{e}")))
}

fn close(actual: Option<f64>, expected: f64, tol: f64, what: &str) {
    let a = actual.unwrap_or_else(|| panic!("{what}: no value, expected {expected}"));
    assert!(
        (a - expected).abs() <= tol,
        "{what}: got {a}, expected {expected} ± {tol}"
    );
}

/// One ESMM launch: (duration ns, SM %, Mem %, DRAM %, theoretical %, achieved %, waves,
/// registers).
type LaunchRow = (f64, f64, f64, f64, f64, f64, f64, f64);

const ESMM: [LaunchRow; 3] = [
    (139914240.0, 87.60, 33.62, 12.56, 22.92, 22.49, 18.62, 56.0),
    (90892608.0, 97.72, 97.72, 50.81, 22.92, 22.59, 18.62, 40.0),
    (90236288.0, 98.56, 98.56, 49.56, 22.92, 22.59, 18.62, 40.0),
];

#[test]
fn esmm_same_numbers_from_every_page() {
    // (file, layout, duration tolerance ns, percent tolerance): the details page prints
    // `139.91 msecond` (±0.005 ms) and two decimals; the auto raw page six decimals of ms
    for (file, layout, dur_tol, pct_tol) in [
        (
            "esmm_gemm_a10g_page-raw_units-base.csv",
            Layout::Raw,
            0.5,
            0.0051,
        ),
        (
            "esmm_gemm_a10g_page-raw_units-auto.csv",
            Layout::Raw,
            0.5,
            0.0051,
        ),
        (
            "esmm_gemm_a10g_page-details.csv",
            Layout::Details,
            5000.0,
            0.0051,
        ),
    ] {
        let Some(r) = load(file) else { return };
        assert_eq!(r.layout, layout, "{file}");
        assert_eq!(r.kernels.len(), 4, "{file}");
        for (i, e) in ESMM.iter().enumerate() {
            let k = &r.kernels[i];
            let w = |m: &str| format!("{file} launch {i} {m}");
            assert_eq!(k.id, i as u64);
            close(
                k.duration_ns.map(|v| v as f64),
                e.0,
                dur_tol,
                &w("duration"),
            );
            close(k.sm_pct, e.1, pct_tol, &w("SM %"));
            close(k.memory_pct, e.2, pct_tol, &w("Mem %"));
            close(k.dram_pct, e.3, pct_tol, &w("DRAM %"));
            close(
                k.theoretical_occupancy_pct,
                e.4,
                pct_tol,
                &w("theoretical occupancy"),
            );
            close(
                k.achieved_occupancy_pct,
                e.5,
                pct_tol,
                &w("achieved occupancy"),
            );
            close(k.waves_per_sm, e.6, 0.0051, &w("waves"));
            close(k.registers_per_thread, e.7, 0.0, &w("registers"));
            // SOL rule: High Throughput, SM ≥ Mem → compute-bound
            assert_eq!(k.bound, Some(Bound::Compute), "{}", w("bound"));
            assert_eq!(k.sol, Some("High Throughput"), "{}", w("sol"));
            // theoretical occupancy 22.9 % limited by shared memory (11 blocks)
            assert_eq!(
                k.occupancy_limiter.as_deref(),
                Some("shared_mem"),
                "{}",
                w("limiter")
            );
            assert_eq!(k.block, Some([32, 1, 1]));
            assert_eq!(k.grid, Some([128, 128, 1]));
        }
        assert!(r.kernels[0].name.starts_with("esmm_shmem_multi("));
        // launch 3 failed: no data, no bound
        let k = &r.kernels[3];
        assert!(
            k.name.starts_with("void vectorized_blocktiling<"),
            "{}",
            k.name
        );
        assert_eq!(k.duration_ns, None, "{file}");
        assert_eq!(k.sm_pct, None);
        assert_eq!(k.bound, None);
        assert_eq!(k.block, Some([0, 0, 0]));
        if layout == Layout::Details {
            // rule messages kept as evidence
            let rules = |i: usize| -> Vec<(String, String)> {
                r.kernels[i]
                    .rules
                    .iter()
                    .map(|x| (x.name.clone(), x.kind.clone()))
                    .collect()
            };
            for i in 0..3 {
                let rs = rules(i);
                assert!(
                    rs.contains(&("SOLBottleneck".into(), "INF".into())),
                    "{rs:?}"
                );
                let occ = r.kernels[i]
                    .rules
                    .iter()
                    .find(|x| x.kind == "WRN" && x.section == "Occupancy")
                    .expect("Occupancy WRN");
                assert!(occ.message.contains("22.9"), "{}", occ.message);
            }
            let errs = r.kernels[3]
                .rules
                .iter()
                .filter(|x| x.kind == "ERR")
                .count();
            assert!(errs >= 3, "{:?}", rules(3));
            // tracebacks reduced to one line
            assert!(r.kernels[3].rules.iter().all(|x| !x.message.contains('\n')));
        }
    }
}

#[test]
fn older_ncu_files() {
    if let Some(r) = load("leleucas_bert_attention_a100_ncu2022_details_with_PROF_preamble.csv") {
        assert_eq!(r.layout, Layout::Details);
        assert_eq!(r.kernels.len(), 26);
        // Launch Statistics and Occupancy labels are read; thousands separators removed
        let k = &r.kernels[0];
        assert!(k.theoretical_occupancy_pct.is_some());
        assert!(k
            .metrics
            .get("launch__thread_count")
            .is_some_and(|&v| v >= 1000.0));
        let conflicts = r
            .kernels
            .iter()
            .filter(|k| k.bank_conflicts.is_some())
            .count();
        assert!(conflicts > 0);
    }
    if let Some(r) = load("leleucas_dropout_a100_ncu2022_metrics_only.csv") {
        assert_eq!(r.layout, Layout::Details);
        assert_eq!(r.kernels.len(), 162);
        // "4,194,688" bytes
        assert_eq!(
            r.kernels[0].metrics.get("dram__bytes.sum"),
            Some(&4194688.0)
        );
        assert!(r
            .kernels
            .iter()
            .all(|k| k.duration_ns.is_some() && k.bound.is_some()));
        assert!(r.kernels.iter().all(|k| k.rules.is_empty()));
    }
}

#[test]
fn every_corpus_csv_loads() {
    let Some(dir) = common::corpus_dir().map(|d| d.join("ncu/csv")) else {
        common::corpus_file("ncu/csv");
        return;
    };
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let r = ncu::read(p.to_str().unwrap()).unwrap_or_else(|e| panic!("{e}"));
        assert!(!r.kernels.is_empty(), "{}", p.display());
        assert!(ncu::looks_like(p.to_str().unwrap()));
        n += 1;
    }
    assert_eq!(n, 5);
}

#[test]
fn missing_columns_are_a_one_line_error() {
    let dir = std::env::temp_dir().join(format!("stallscope-ncu-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("bad.csv");
    std::fs::write(
        &p,
        "\"ID\",\"Kernel Name\",\"Metric Name\"\n\"0\",\"k\",\"Duration\"\n",
    )
    .unwrap();
    let e = ncu::read(p.to_str().unwrap()).unwrap_err().to_string();
    assert!(e.starts_with(p.to_str().unwrap()), "{e}");
    assert!(e.contains("line 1") && e.contains("Metric Value"), "{e}");
    assert!(!e.contains('\n'));
    std::fs::write(&p, "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"\",\"\",\"nsecond\"\n\"x\",\"k\",\"5\"\n").unwrap();
    let e = ncu::read(p.to_str().unwrap()).unwrap_err().to_string();
    assert!(e.contains("line 3"), "{e}");
}

#[test]
fn join_by_name_and_order() {
    use stallscope::model::{build::TraceBuilder, GpuKind};
    let mut b = TraceBuilder::new().device(0, "NVIDIA A10G", 80, 24 << 30);
    for (i, name) in [
        "void gemm<64>(float *)",
        "copy(int)",
        "void gemm<64>(float *)",
    ]
    .iter()
    .enumerate()
    {
        let corr = b.runtime("cudaLaunchKernel", 0, i as f64 * 100.0, 5.0);
        b.gpu(
            GpuKind::Kernel,
            name,
            0,
            7,
            i as f64 * 100.0 + 10.0,
            50.0,
            corr,
        );
    }
    let t = b.build();
    let csv = "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"\",\"\",\"usecond\"\n\
\"0\",\"void gemm<64>(float *)\",\"50\"\n\"1\",\"void gemm<64>(float *)\",\"50\"\n\
\"2\",\"copy\",\"50\"\n\"3\",\"other\",\"1\"\n";
    let r = ncu::parse(csv, "k.csv").unwrap();
    let m = ncu::join(&t, &r);
    let name = |g: Option<u32>| g.map(|g| t.name(t.gpu[g as usize].name).to_string());
    let start = |g: Option<u32>| g.map(|g| t.gpu[g as usize].start);
    // launches 0 and 1 are the first and second gemm in time; `copy` matches by base name
    assert_eq!(start(m[0]), Some(10_000));
    assert_eq!(start(m[1]), Some(210_000));
    assert_eq!(name(m[2]).as_deref(), Some("copy(int)"));
    assert_eq!(m[3], None);
    let a = stallscope::analysis::analyze(
        &t,
        &stallscope::analysis::AnalyzeOptions {
            all_steps: true,
            ..Default::default()
        },
    );
    let n = stallscope::analysis::ncu::joined(&t, &a.selection, 1, &r);
    let s = stallscope::report::nvidia::NcuSection::new(&n, t.start());
    assert!(s.joined);
    assert_eq!(s.matched, 3);
}

fn stallscope(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_stallscope"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

#[test]
fn cli_ncu_alone_and_beside_a_trace() {
    let Some(p) = common::corpus_file("ncu/csv/esmm_gemm_a10g_page-details.csv") else {
        return;
    };
    let p = p.to_str().unwrap();
    let out = stallscope(&["analyze", p]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Nsight Compute kernels  4 launches"),
        "{text}"
    );
    assert_eq!(text.matches(" compute ").count(), 3, "{text}");
    assert!(text.contains("no data"), "{text}");

    let out = stallscope(&["analyze", p, "--format", "json"]);
    assert!(out.status.success());
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["schema_version"], 1);
    assert_eq!(j["source"]["format"], "ncu_csv");
    let l = &j["ncu"]["launches"];
    assert_eq!(l[0]["bound"], "compute");
    assert_eq!(l[0]["occupancy_limiter"], "shared_mem");
    assert!(l[3]["bound"].is_null());

    let out = stallscope(&["analyze", p, "--format", "html"]);
    assert_eq!(out.status.code(), Some(2));

    // beside a trace: joined, nothing matches in the ResNet sample
    let trace = common::sample("resnet50_v100_num_workers_0.pt.trace.json.gz");
    let out = stallscope(&["analyze", trace.to_str().unwrap(), "--ncu", p, "-f", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["ncu"]["joined"], true);
    assert_eq!(j["ncu"]["matched"], 0);
    assert_eq!(j["ncu"]["launches"].as_array().unwrap().len(), 4);
}
