//! Nsight Systems SQLite exports: every corpus file loads, and the numbers of NVIDIA's own
//! `nsys stats` / `nsys analyze` (../shared/reference/expected-values.md §5) come out of the
//! model. Synthetic exports made here with rusqlite cover GPU metrics, graph-trace mode and
//! corrupt input, which no corpus file has.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use stallscope::model::{CpuKind, GpuKind, Interval, IntervalSet, Ns, Trace};

const DIR: &str = "nsys/sqlite";

fn file(name: &str) -> Option<PathBuf> {
    common::corpus_file(&format!("{DIR}/{name}"))
}

fn count_named(t: &Trace, prefix: &str) -> usize {
    t.cpu
        .iter()
        .filter(|e| t.name(e.name).starts_with(prefix))
        .count()
}

fn has_warning(t: &Trace, code: &str) -> bool {
    t.warnings.iter().any(|w| w.code == code)
}

/// Kernels with a RUNTIME row of the same correlationId in the same process, by SQL.
fn linked_by_sql(p: &Path) -> usize {
    let c = rusqlite::Connection::open_with_flags(p, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap();
    let has_pid: bool = c
        .query_row(
            "SELECT count(*) FROM pragma_table_info('CUPTI_ACTIVITY_KIND_KERNEL') WHERE name = 'globalPid'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap()
        > 0;
    let same_process = if has_pid {
        " AND (r.globalTid >> 24) = (k.globalPid >> 24)"
    } else {
        ""
    };
    c.query_row(
        &format!(
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE EXISTS (SELECT 1 FROM \
             CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = k.correlationId{same_process})"
        ),
        [],
        |r| r.get::<_, i64>(0),
    )
    .unwrap() as usize
}

#[test]
fn every_export_loads() {
    let Some(dir) = common::corpus_dir().map(|d| d.join(DIR)) else {
        common::corpus_file(DIR);
        return;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sqlite"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 10,
        "expected the 10 corpus exports, found {}",
        files.len()
    );
    for p in &files {
        let t = common::load(p);
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(
            t.source.format,
            stallscope::model::SourceFormat::NsysSqlite,
            "{name}"
        );
        // every view runs on it
        let a = stallscope::analysis::analyze(&t, &Default::default());
        let kernels = t.gpu.iter().filter(|g| g.kind == GpuKind::Kernel).count();
        if name.contains("nokernels") {
            assert_eq!(kernels, 0, "{name}");
            assert!(
                has_warning(&t, "nsys-no-kernel-table"),
                "{name}: {:?}",
                t.warnings
            );
            assert_eq!(count_named(&t, "cu"), 3, "{name}: its 3 driver calls");
        } else if name.contains("cpuonly") {
            assert!(
                has_warning(&t, "nsys-no-cuda-trace"),
                "{name}: {:?}",
                t.warnings
            );
            assert!(t.gpu.is_empty());
        } else {
            assert!(kernels > 0, "{name}");
            assert!(!a.kernels.is_empty(), "{name}: kernel table");
            // kernels find their runtime call through (process, correlation)
            let linked = t
                .gpu
                .iter()
                .filter(|g| g.kind == GpuKind::Kernel && g.launch != stallscope::model::NONE)
                .count();
            assert_eq!(
                linked,
                linked_by_sql(p),
                "{name}: kernels linked to their launch"
            );
            if name.contains("fastvideo") {
                // the nsys-ai fixture was cut to 1 s: some launches are outside the file
                assert_eq!(linked, 1632, "{name}");
            }
            if name.contains("cloverleaf") || name.contains("saxpy") {
                assert_eq!(linked, kernels, "{name}");
            }
        }
        if name.contains("TRIMMED") {
            assert!(
                has_warning(&t, "nsys-missing-columns"),
                "{name}: {:?}",
                t.warnings
            );
            assert_eq!(kernels, 400);
        }
    }
}

#[test]
fn fastvideo_matches_nsys_stats() {
    let Some(p) = file("nsysai_fastvideo_2xh100_nsys2026.2.sqlite") else {
        return;
    };
    let t = common::load(&p);
    let kernels: Vec<_> = t.gpu.iter().filter(|g| g.kind == GpuKind::Kernel).collect();
    assert_eq!(kernels.len(), 3442);
    assert_eq!(kernels.iter().map(|k| k.dur).sum::<Ns>(), 44_829_522);
    for d in [0, 1] {
        assert_eq!(kernels.iter().filter(|k| k.device == d).count(), 1721);
    }
    // cuda_gpu_kern_sum top row
    let mut by_name: HashMap<&str, Vec<Ns>> = HashMap::new();
    for k in &kernels {
        by_name.entry(t.name(k.name)).or_default().push(k.dur);
    }
    let total: Ns = kernels.iter().map(|k| k.dur).sum();
    let (top, durs) = by_name
        .iter()
        .max_by_key(|(_, d)| d.iter().sum::<Ns>())
        .unwrap();
    assert_eq!(
        *top,
        "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x256x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas"
    );
    let sum: Ns = durs.iter().sum();
    assert_eq!(sum, 31_121_662);
    assert_eq!(durs.len(), 248);
    assert_eq!(*durs.iter().min().unwrap(), 57_473);
    assert_eq!(*durs.iter().max().unwrap(), 306_210);
    assert_eq!(format!("{:.1}", sum as f64 / 248.0), "125490.6");
    let mut sorted = durs.clone();
    sorted.sort();
    assert_eq!((sorted[123] + sorted[124]) as f64 / 2.0, 133_296.0);
    assert_eq!(format!("{:.1}", sum as f64 * 100.0 / total as f64), "69.4");

    // the same through the kernel-table view, over the whole capture
    let whole = Interval::new(t.start(), t.gpu.iter().map(|g| g.end()).max().unwrap());
    let rows = stallscope::analysis::kernels::kernel_table(&t, whole);
    let row = &rows[0];
    assert_eq!(row.name, *top);
    assert_eq!(row.calls, 248);
    assert_eq!(row.total, 31_121_662);

    // cuda_api_sync: 8 stream syncs, two ~428 ms
    let mut syncs: Vec<(Ns, i64)> = t
        .cpu
        .iter()
        .filter(|e| t.name(e.name) == "cudaStreamSynchronize_v3020")
        .map(|e| (e.dur, t.threads[e.thread as usize].pid))
        .collect();
    assert_eq!(syncs.len(), 8);
    syncs.sort_by(|a, b| b.cmp(a));
    assert_eq!(syncs[0], (428_468_918, 111));
    assert_eq!(syncs[1], (428_424_529, 112));
    assert!(t
        .cpu
        .iter()
        .filter(|e| t.name(e.name) == "cudaStreamSynchronize_v3020")
        .all(|e| e.kind == CpuKind::Runtime));

    // cuda_memcpy_async: 4 pageable → device async copies
    let mut pageable: Vec<Ns> = t
        .gpu
        .iter()
        .filter(|g| {
            g.kind == GpuKind::Memcpy
                && t.name(g.name) == "Memcpy HtoD (Pageable -> Device)"
                && g.launch != stallscope::model::NONE
                && t.name(t.cpu[g.launch as usize].name)
                    .starts_with("cudaMemcpyAsync")
        })
        .map(|g| g.dur)
        .collect();
    pageable.sort_by(|a, b| b.cmp(a));
    assert_eq!(pageable, vec![928, 864, 800, 768]);

    // SYNCHRONIZATION syncType 2 → 236, 3 → 8 (Kineto's names)
    let syncs = |n: &str| {
        t.gpu
            .iter()
            .filter(|g| g.kind == GpuKind::Sync && t.name(g.name) == n)
            .count()
    };
    assert_eq!(syncs("Stream Wait Event"), 236);
    assert_eq!(syncs("Stream Sync"), 8);

    // PyTorch emit_nvtx ranges: operators (suffix stripped) own the runtime calls in them
    assert!(t
        .cpu
        .iter()
        .any(|e| e.kind == CpuKind::Op && t.name(e.name) == "aten::mm"));
    assert!(!t.names.iter().any(|(_, s)| s.contains(", op_id = ")));
    let owned = t
        .cpu
        .iter()
        .filter(|e| e.kind == CpuKind::Runtime && e.owner_op != stallscope::model::NONE)
        .count();
    assert!(
        owned > 0,
        "runtime calls inside aten ranges get their operator"
    );
}

/// Union of device-0 kernels and copies (nsys `gpu_gaps` ignores streams).
fn busy(t: &Trace, device: i32) -> IntervalSet {
    IntervalSet::from_intervals(
        t.gpu
            .iter()
            .filter(|g| g.device == device && g.is_activity())
            .map(|g| g.interval()),
    )
}

#[test]
fn cloverleaf_matches_nsys_analyze() {
    let Some(p) = file("pipit_cloverleaf-cuda_4xa100_nsys2024.5.sqlite") else {
        return;
    };
    let t = common::load(&p);
    assert_eq!(
        t.gpu.iter().filter(|g| g.kind == GpuKind::Kernel).count(),
        1312
    );
    assert_eq!(count_named(&t, "cudaLaunchKernel_v7000"), 1312);
    assert_eq!(count_named(&t, "cudaDeviceSynchronize_v3020"), 1312);
    // CUPTI records these device syncs with syncType 1 ("Event Sync")
    let sync_records: Vec<_> = t.gpu.iter().filter(|g| g.kind == GpuKind::Sync).collect();
    assert_eq!(sync_records.len(), 1312);
    assert!(sync_records.iter().all(|g| t.name(g.name) == "Event Sync"));
    assert!(sync_records
        .iter()
        .all(|g| g.launch != stallscope::model::NONE
            && t.name(t.cpu[g.launch as usize].name) == "cudaDeviceSynchronize_v3020"));

    // devices from TARGET_INFO_GPU
    assert_eq!(t.devices.len(), 4);
    let d0 = t.device(0).unwrap();
    assert_eq!(d0.name, "NVIDIA A100-SXM4-80GB");
    assert_eq!(d0.sm_count, Some(108));
    assert!(d0.active);

    // busy union and gaps ≥ 1 ms (nsys analyze gpu_gaps:gap=1)
    let b = busy(&t, 0);
    let hull = b.hull().unwrap();
    assert_eq!(b.total(), 303_795_463);
    assert_eq!(hull.len(), 342_407_810);
    assert_eq!(
        format!("{:.2}", b.total() as f64 * 100.0 / hull.len() as f64),
        "88.72"
    );
    let gaps: Vec<Interval> = b.gaps().filter(|g| g.len() >= 1_000_000).collect();
    assert_eq!(
        gaps.iter().map(|g| (g.len(), g.start)).collect::<Vec<_>>(),
        vec![
            (2_559_289, 539_216_752),
            (1_148_317, 542_648_423),
            (1_107_965, 872_642_539)
        ]
    );

    // cuda_gpu_mem_time_sum
    let copies = |n: &str| {
        let v: Vec<Ns> = t
            .gpu
            .iter()
            .filter(|g| g.kind == GpuKind::Memcpy && t.name(g.name).starts_with(n))
            .map(|g| g.dur)
            .collect();
        (v.len(), v.iter().sum::<Ns>())
    };
    assert_eq!(copies("Memcpy HtoD"), (254, 9_346_285));
    assert_eq!(copies("Memcpy DtoH"), (25, 44_638));
    assert_eq!(copies("Memcpy HtoD (Pageable -> Device)").0, 254);

    // the same busy time through the GPU timeline view
    let a = stallscope::analysis::analyze(&t, &Default::default());
    assert!(!a.timeline.is_empty());
}

#[test]
fn saxpy_old_schema() {
    let Some(p) = file("pipit_saxpy-mpi-cuda_a100_nsys2022.2.sqlite") else {
        return;
    };
    let t = common::load(&p);
    let k: Vec<_> = t.gpu.iter().filter(|g| g.kind == GpuKind::Kernel).collect();
    assert_eq!(k.len(), 5);
    assert!(k
        .iter()
        .all(|g| t.name(g.name) == "saxpy(double *, double *, double *, double, int)"));
    assert_eq!(k.iter().map(|g| g.dur).sum::<Ns>(), 88_573_480);
    assert!(k
        .iter()
        .all(|g| t.kernel_info(g).grid == [2, 1, 1] && t.kernel_info(g).block == [512, 1, 1]));
    // NVTX ranges of the MPI domain (textId) are named `MPI:MPI_Send`
    assert_eq!(
        t.cpu
            .iter()
            .filter(|e| e.kind == CpuKind::UserAnnotation && t.name(e.name) == "MPI:MPI_Send")
            .count(),
        10
    );
    // 15 synchronous pageable copies
    let copies = t.gpu.iter().filter(|g| g.kind == GpuKind::Memcpy).count();
    assert_eq!(copies, 15);
}

/// Paths of the per-thread containment trees of user annotations.
fn annotation_paths(t: &Trace) -> Vec<String> {
    let mut by_thread: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, e) in t.cpu.iter().enumerate() {
        if e.kind == CpuKind::UserAnnotation {
            by_thread.entry(e.thread).or_default().push(i);
        }
    }
    let mut out = Vec::new();
    for (_, idx) in by_thread {
        let mut stack: Vec<(Ns, String)> = Vec::new();
        for i in idx {
            let e = &t.cpu[i];
            while stack.last().is_some_and(|(end, _)| *end < e.end()) {
                stack.pop();
            }
            let path = match stack.last() {
                Some((_, p)) => format!("{p}/{}", t.name(e.name)),
                None => t.name(e.name).to_string(),
            };
            out.push(path.clone());
            stack.push((e.end(), path));
        }
    }
    out
}

#[test]
fn nested_nvtx_tree() {
    for name in [
        "generated_nvtx_nested_cpuonly_nsys2023.4.sqlite",
        "generated_nvtx_nested_cpuonly_lazyfalse_fullschema_nsys2023.4.sqlite",
    ] {
        let Some(p) = file(name) else { return };
        let t = common::load(&p);
        let paths = annotation_paths(&t);
        for want in [
            "Denoise_Step_0/Layer_0/MLP",
            "Denoise_Step_0/Layer_0/Attention",
            "Denoise_Step_2/Layer_1/MLP",
            "Denoise_Step_0/Layer_0/Denoiser:MLP",
        ] {
            assert!(
                paths.iter().any(|p| p == want),
                "{name}: no {want} in {paths:?}"
            );
        }
        // three steps × two layers × {Attention, MLP, Denoiser:MLP} + layers + steps
        assert_eq!(
            paths
                .iter()
                .filter(|p| p.starts_with("Denoise_Step_"))
                .count(),
            3 + 6 + 18
        );
        // the same tree through the phases analysis
        let ann = stallscope::window::annotations::Annotations::build(&t);
        let phase_paths: Vec<String> = (0..ann.paths.len() as u32)
            .map(|i| ann.path_string(&t, i))
            .collect();
        assert!(
            phase_paths
                .iter()
                .any(|p| p == "Denoise_Step_0/Layer_0/MLP"),
            "{phase_paths:?}"
        );
        assert!(phase_paths.iter().any(|p| p == "sample_actions"));
        // the start/end range is not a parent of the push/pop tree
        assert!(paths.iter().any(|p| p == "sample_actions"));
        assert!(!paths.iter().any(|p| p.starts_with("sample_actions/")));
        let se = t
            .cpu
            .iter()
            .find(|e| t.name(e.name) == "sample_actions")
            .unwrap();
        let th = &t.threads[se.thread as usize];
        assert!(
            th.tid < 0 && th.name.as_deref() == Some("gen [NVTX start/end]"),
            "{th:?}"
        );
        // the thread named by ThreadNames
        let step = t
            .cpu
            .iter()
            .find(|e| t.name(e.name) == "Denoise_Step_0")
            .unwrap();
        assert_eq!(t.threads[step.thread as usize].name.as_deref(), Some("gen"));
        assert_eq!(t.threads[step.thread as usize].pid, 27049);
    }
}

#[test]
fn rep_without_nsys_prints_the_command() {
    let Some(p) =
        common::corpus_file("nsys/nsys-rep/cs336_assignment2_report1_nsys2026.1.nsys-rep")
    else {
        return;
    };
    let out = Command::new(env!("CARGO_BIN_EXE_stallscope"))
        .args(["analyze", p.to_str().unwrap()])
        .env("PATH", "")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("nsys 2026.1.2"), "{err}");
    let want = format!(
        "`nsys export --type sqlite --output {} {}`",
        p.with_extension("sqlite").display(),
        p.display()
    );
    assert!(err.contains(&want), "{err}\nwanted {want}");
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("stallscope-nsys-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

#[test]
fn corrupt_export_is_a_one_line_error() {
    let p = tmp("corrupt.sqlite");
    let mut bytes = b"SQLite format 3\0".to_vec();
    bytes.extend(vec![0xA5u8; 4096]);
    std::fs::write(&p, &bytes).unwrap();
    let e = stallscope::ingest::load(p.to_str().unwrap(), &Default::default())
        .unwrap_err()
        .to_string();
    assert!(e.starts_with(p.to_str().unwrap()), "{e}");
    assert!(!e.contains('\n'), "{e}");
    assert!(
        e.contains("Nsight Systems") && e.contains("table list"),
        "{e}"
    );

    // a valid SQLite file that is no nsys export
    let p = tmp("other.sqlite");
    let _ = std::fs::remove_file(&p);
    let c = rusqlite::Connection::open(&p).unwrap();
    c.execute_batch("CREATE TABLE t(a); INSERT INTO t VALUES (1);")
        .unwrap();
    drop(c);
    let e = stallscope::ingest::load(p.to_str().unwrap(), &Default::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("not an Nsight Systems export"), "{e}");

    // a table whose values are of the wrong type gives no panic
    let p = tmp("badtypes.sqlite");
    let _ = std::fs::remove_file(&p);
    let c = rusqlite::Connection::open(&p).unwrap();
    c.execute_batch(
        "CREATE TABLE StringIds(id, value); INSERT INTO StringIds VALUES (1, 'k');
         CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, shortName);
         INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ('x', 10, 'y', 1), (5, 15, 0, 99), (NULL, 3, 0, 1);",
    )
    .unwrap();
    drop(c);
    let t = stallscope::ingest::load(p.to_str().unwrap(), &Default::default()).unwrap();
    assert_eq!(t.gpu.len(), 1);
    assert_eq!(t.name(t.gpu[0].name), "(unnamed kernel)");
}

/// A small export in the 2023.4+ shape: one thread, NVTX ranges, kernels, GPU metrics.
pub fn synthetic_export(path: &Path, generic_events: bool, graph_trace: bool) {
    let _ = std::fs::remove_file(path);
    let c = rusqlite::Connection::open(path).unwrap();
    let tid: i64 = (1 << 56) | (100 << 24) | 100;
    let pid: i64 = (1 << 56) | (100 << 24);
    c.execute_batch(
        "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT);
         INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'gemm_kernel'),
           (3, 'copy_kernel'), (4, 'cudaGraphLaunch_v10000'), (5, 'main');
         CREATE TABLE ThreadNames(nameId, priority, globalTid);
         CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start, end, eventClass, globalTid,
           correlationId, nameId, returnValue, callchainId);
         CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, contextId, streamId,
           correlationId, globalPid, demangledName, shortName, gridX, gridY, gridZ, blockX,
           blockY, blockZ, registersPerThread, staticSharedMemory, dynamicSharedMemory);
         CREATE TABLE NVTX_EVENTS(start, end, eventType, rangeId, category, color, text,
           globalTid, endGlobalTid, textId, domainId);",
    )
    .unwrap();
    c.execute("INSERT INTO ThreadNames VALUES (5, 10, ?1)", [tid])
        .unwrap();
    // two NVTX ranges: `mlp` (1.0–2.0 ms) launches a memory-heavy kernel, `attn`
    // (3.0–4.0 ms) a compute-heavy one; a 1 ms gap between the kernels
    c.execute(
        "INSERT INTO NVTX_EVENTS(start, end, eventType, text, globalTid, domainId) VALUES
           (1000000, 2000000, 59, 'mlp', ?1, 0), (3000000, 4000000, 59, 'attn', ?1, 0)",
        [tid],
    )
    .unwrap();
    c.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
           (1100000, 1110000, 0, ?1, 1, 1, 0, NULL), (3100000, 3110000, 0, ?1, 2, 1, 0, NULL)",
        [tid],
    )
    .unwrap();
    c.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
           (1200000, 2200000, 0, 1, 7, 1, ?1, 3, 3, 108, 1, 1, 256, 1, 1, 32, 0, 0),
           (3200000, 4200000, 0, 1, 7, 2, ?1, 2, 2, 216, 1, 1, 128, 1, 1, 64, 1024, 0)",
        [pid],
    )
    .unwrap();
    // samples every 100 µs from 0 to 5 ms on GPU 0
    let sample = |t: i64| -> (i64, i64, i64) {
        if (1_200_000..2_200_000).contains(&t) {
            (20, 60, 35) // SM, DRAM read, DRAM write: memory-bound
        } else if (3_200_000..4_200_000).contains(&t) {
            (85, 20, 10) // compute-bound
        } else {
            (2, 1, 1) // idle
        }
    };
    if generic_events {
        c.execute_batch("CREATE TABLE GENERIC_EVENTS(rawTimestamp, timestamp, typeId, data);")
            .unwrap();
        for i in 0..50 {
            let t = i * 100_000;
            let (sm, r, w) = sample(t);
            let data = format!(
                "{{\"SM Active\":\"{sm}\",\"DRAM Read Throughput\":\"{r}\",\"DRAM Write Throughput\":{w},\"Unallocated Warps in Active SM\":\"0\"}}"
            );
            c.execute(
                "INSERT INTO GENERIC_EVENTS VALUES (?1, ?1, 65536, ?2)",
                rusqlite::params![t, data],
            )
            .unwrap();
        }
    } else {
        c.execute_batch(
            "CREATE TABLE TARGET_INFO_GPU_METRICS(typeId, sourceId, typeName, metricId, metricName);
             INSERT INTO TARGET_INFO_GPU_METRICS VALUES
               (65536, 1, 'GA100', 3, 'SMs Active [Throughput %]'),
               (65536, 1, 'GA100', 8, 'DRAM Read Bandwidth [Throughput %]'),
               (65536, 1, 'GA100', 9, 'DRAM Write Bandwidth [Throughput %]'),
               (65536, 1, 'GA100', 1, 'GPC Clock Frequency [MHz]');
             CREATE TABLE GPU_METRICS(timestamp INTEGER, typeId INTEGER, metricId INTEGER, value INTEGER);",
        )
        .unwrap();
        for i in 0..50 {
            let t = i * 100_000;
            let (sm, r, w) = sample(t);
            for (m, v) in [(3, sm), (8, r), (9, w), (1, 1410)] {
                c.execute(
                    "INSERT INTO GPU_METRICS VALUES (?1, 65536, ?2, ?3)",
                    [t, m, v],
                )
                .unwrap();
            }
        }
    }
    if graph_trace {
        c.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (4500000, 4510000, 0, ?1, 3, 4, 0, NULL)",
            [tid],
        )
        .unwrap();
        c.execute_batch(
            "CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, deviceId, contextId,
               greenContextId, streamId, correlationId, globalPid, graphId, graphExecId);",
        )
        .unwrap();
        c.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE VALUES (4600000, 4900000, 0, 1, NULL, 7, 3, ?1, 12, 1)",
            [pid],
        )
        .unwrap();
    }
}

#[test]
fn gpu_metrics_classify_ranges_and_gaps() {
    use stallscope::analysis::gpu_metrics::{self, Boundness};
    for generic in [false, true] {
        let p = tmp(if generic {
            "generic.sqlite"
        } else {
            "metrics.sqlite"
        });
        synthetic_export(&p, generic, false);
        let t = common::load(&p);
        let sm = t
            .gpu_metrics
            .iter()
            .find(|s| s.name.starts_with("SM"))
            .expect("SM series");
        assert_eq!(sm.device, 0);
        assert_eq!(sm.times.len(), 50);
        let window = Interval::new(0, 5_000_000);
        let m = gpu_metrics::analyze_gpu_metrics(&t, window, 20_000).expect("metrics");
        let mlp = m.ranges.iter().find(|r| r.path == "mlp").unwrap();
        // the kernel launched in `mlp` runs 1.2–2.2 ms: 10 samples, SM 20 %, DRAM 60 + 35
        assert_eq!(mlp.sampled.samples, 10);
        assert_eq!(mlp.sampled.sm_pct, Some(20.0));
        assert_eq!(mlp.sampled.dram_pct, Some(95.0));
        assert_eq!(mlp.sampled.class, Boundness::MemoryBound);
        assert_eq!(mlp.basis, gpu_metrics::Basis::GpuProjection);
        let attn = m.ranges.iter().find(|r| r.path == "attn").unwrap();
        assert_eq!(attn.sampled.class, Boundness::ComputeBound);
        assert_eq!(attn.sampled.sm_pct, Some(85.0));
        // one gap between the kernels: 2.2–3.2 ms, idle → launch-bound
        assert_eq!(m.gaps.len(), 1, "{:?}", m.gaps);
        let g = &m.gaps[0];
        assert_eq!((g.start, g.dur), (2_200_000, 1_000_000));
        assert_eq!(g.sampled.class, Boundness::LaunchBound);
        assert_eq!(g.sampled.samples, 10);
        // through the report
        let a = stallscope::analysis::analyze(&t, &Default::default());
        assert!(a.gpu_metrics.is_some());
    }
    // a trace without metrics has no such analysis
    if let Some(p) = file("nsysai_mock_rtx3080_nsys2026.1.sqlite") {
        let t = common::load(&p);
        assert!(t.gpu_metrics.is_empty());
        assert!(gpu_metrics::analyze_gpu_metrics(&t, Interval::new(0, i64::MAX), 20_000).is_none());
    }
}

#[test]
fn graph_trace_mode_is_busy_not_idle() {
    let p = tmp("graph.sqlite");
    synthetic_export(&p, false, true);
    let t = common::load(&p);
    assert!(has_warning(&t, "nsys-graph-trace"), "{:?}", t.warnings);
    let g = t
        .gpu
        .iter()
        .find(|g| t.name(g.name) == "[CUDA graph 12 replay]")
        .expect("graph replay span");
    assert!(g.in_graph && g.is_activity());
    assert_eq!(
        t.name(t.cpu[g.launch as usize].name),
        "cudaGraphLaunch_v10000"
    );
    assert_eq!(busy(&t, 0).total(), 2_000_000 + 300_000);

    // graph launches with no device record at all: say so
    let c = rusqlite::Connection::open(&p).unwrap();
    c.execute_batch("DROP TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE;")
        .unwrap();
    drop(c);
    let t = common::load(&p);
    assert!(has_warning(&t, "nsys-graph-untraced"), "{:?}", t.warnings);
}

#[test]
fn stdin_and_gzip_exports() {
    let Some(p) = file("nsysai_mock_rtx3080_nsys2026.1.sqlite") else {
        return;
    };
    let gz = tmp("mock.sqlite.gz");
    {
        use std::io::Write;
        let f = std::fs::File::create(&gz).unwrap();
        let mut e = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
        e.write_all(&std::fs::read(&p).unwrap()).unwrap();
        e.finish().unwrap();
    }
    let t = common::load(&gz);
    assert_eq!(
        t.gpu.iter().filter(|g| g.kind == GpuKind::Kernel).count(),
        2
    );
    assert!(t.source.compressed_bytes.is_some());
    let d = t.device(0).unwrap();
    assert_eq!(d.name, "NVIDIA GeForce RTX 3080");
    assert_eq!(d.sm_count, Some(68));
}

#[test]
fn cli_reports_nsys_exports() {
    let run = |p: &Path| common::analyze_json(p, &[]);
    let p = tmp("cli-metrics.sqlite");
    synthetic_export(&p, false, false);
    let j = run(&p);
    assert_eq!(j["source"]["format"], "nsys_sqlite");
    let ranges = j["gpu_metrics"]["ranges"].as_array().unwrap();
    let mlp = ranges.iter().find(|r| r["path"] == "mlp").unwrap();
    assert_eq!(mlp["class"], "memory-bound");
    assert_eq!(mlp["basis"], "gpu_projection");
    assert_eq!(j["gpu_metrics"]["gaps"][0]["class"], "launch-bound");
    assert_eq!(j["gpu_metrics"]["gaps"][0]["dur_us"], 1000.0);

    if let Some(p) = file("pipit_cloverleaf-cuda_4xa100_nsys2024.5.sqlite") {
        let j = run(&p);
        assert_eq!(j["source"]["format"], "nsys_sqlite");
        assert!(j.get("gpu_metrics").is_none());
        let tl = &j["gpu_timeline"][0];
        // computation + exposed memcpy = the device-0 busy union, 303,795,463 ns
        let busy =
            tl["computation_us"].as_f64().unwrap() + tl["exposed_memcpy_us"].as_f64().unwrap();
        assert!((busy - 303_795.463).abs() < 1e-6, "{tl}");
    }
}

/// The check: CloverLeaf calls `cudaDeviceSynchronize` after every kernel, so the
/// host sync ranks first. The window is the device work and its launches (from the first
/// launch, 342.4 ms, to the last kernel's end), not the 269 ms of `cudaMalloc` at start-up,
/// which would otherwise count as idle GPU time and make the verdict "Host-bound".
#[test]
fn cloverleaf_ranks_host_sync_first() {
    let Some(p) = file("pipit_cloverleaf-cuda_4xa100_nsys2024.5.sqlite") else {
        return;
    };
    let j = common::analyze_json(&p, &[]);
    let ids = common::finding_ids(&j);
    assert_eq!(ids.first(), Some(&"host-sync"), "{ids:?}");
    let verdict = j["verdict"].as_str().unwrap();
    assert!(!verdict.starts_with("Host-bound"), "{verdict}");
    let dur = j["window"]["duration_us"].as_f64().unwrap();
    assert!((342_407.810..343_407.810).contains(&dur), "{dur}");
}

/// fastvideo's first activities have no launch record; the whole capture is the window, so
/// every kernel is in the table, and the verdict names the copies that keep the GPUs busy.
/// The copies and fills are rows of the kernel table after the kernels, with direction,
/// bytes per call and bandwidth: checked against sums over `CUPTI_ACTIVITY_KIND_MEMCPY` and
/// `_MEMSET` in Python (both devices pooled, as for kernels): `copyKind` 1, `srcKind` 1
/// (pinned): 446 rows, 50,950,504,448 bytes in 1,841,627,438 ns; `copyKind` 8: 450 rows,
/// 59,368,472,576 bytes in 39,203,544 ns; `copyKind` 1, `srcKind` 0 (pageable): 4 rows of
/// 784 bytes in 3,360 ns; memsets: 22 rows, 17,672 bytes.
#[test]
fn fastvideo_window_is_the_whole_device_work() {
    let Some(p) = file("nsysai_fastvideo_2xh100_nsys2026.2.sqlite") else {
        return;
    };
    let j = common::analyze_json(&p, &[]);
    let rows = j["kernels"].as_array().unwrap();
    let calls: u64 = rows
        .iter()
        .filter(|k| k.get("copy").is_none())
        .map(|k| k["calls"].as_u64().unwrap())
        .sum();
    assert_eq!(calls, 3442);
    let copy = |name: &str| {
        rows.iter()
            .find(|k| k["name"] == name)
            .unwrap_or_else(|| panic!("no row {name}"))
    };
    let up = copy("Memcpy HtoD (Pinned -> Device)");
    assert_eq!(up["category"], "memcpy");
    assert_eq!(up["calls"], 446);
    assert!((up["total_us"].as_f64().unwrap() - 1_841_627.438).abs() < 1e-6);
    let c = &up["copy"];
    assert_eq!(
        (c["kind"].as_str(), c["direction"].as_str()),
        (Some("memcpy"), Some("HtoD"))
    );
    assert_eq!(c["host_memory"], "pinned");
    assert_eq!(c["bytes"], 50_950_504_448u64);
    let bw = |c: &serde_json::Value| c["bandwidth_gbps"].as_f64().unwrap();
    let per_call = |c: &serde_json::Value| c["bytes_per_call"].as_f64().unwrap();
    assert!((per_call(c) - 114_238_799.21076234).abs() < 1e-6);
    assert!((bw(c) - 27.666021583242724).abs() < 1e-9);
    let c = &copy("Memcpy DtoD (Device -> Device)")["copy"];
    assert_eq!(
        (c["direction"].as_str(), c["host_memory"].as_str()),
        (Some("DtoD"), None)
    );
    assert!((per_call(c) - 131_929_939.05777778).abs() < 1e-6);
    assert!((bw(c) - 1514.3649404757896).abs() < 1e-9);
    let c = &copy("Memcpy HtoD (Pageable -> Device)")["copy"];
    assert_eq!(c["host_memory"], "pageable");
    assert!((per_call(c) - 784.0).abs() < 1e-9 && (bw(c) - 3136.0 / 3360.0).abs() < 1e-12);
    let fill = copy("Memset (Device)");
    assert_eq!(
        (fill["category"].as_str(), fill["calls"].as_u64()),
        (Some("memset"), Some(22))
    );
    assert_eq!(fill["copy"]["bytes"], 17_672);
    // the kernel rows come first; the copy rows' shares are of copy and fill time
    let first_copy = rows.iter().position(|k| k.get("copy").is_some()).unwrap();
    assert!(rows[first_copy..].iter().all(|k| k.get("copy").is_some()));
    let share: f64 = rows[first_copy..]
        .iter()
        .map(|k| k["share"].as_f64().unwrap())
        .sum();
    assert!((share - 1.0).abs() < 1e-9, "{share}");
    let verdict = j["verdict"].as_str().unwrap();
    assert!(verdict.contains("copies"), "{verdict}");
    assert_eq!(j["findings"][0]["id"], "memcpy-heavy");
    // the finding reports each link, with bytes per call (SQL per `deviceId`: 223 pinned
    // uploads of 25,475,252,224 bytes each side, in 920,871,273 and 920,756,165 ns; 225
    // device-to-device copies of 29,684,236,288 bytes in 19,613,651 and 19,589,893 ns)
    let facts: Vec<&str> = j["findings"][0]["evidence"]["facts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    for want in [
        "  host → GPU 0 (HtoD pinned): 223 copies, 108.9 MiB per call (23.7 GiB in all) in \
         920.87 ms, 27.7 GB/s",
        "  host → GPU 1 (HtoD pinned): 223 copies, 108.9 MiB per call (23.7 GiB in all) in \
         920.76 ms, 27.7 GB/s",
        "  GPU 0 → GPU 0 (DtoD): 225 copies, 125.8 MiB per call (27.6 GiB in all) in 19.61 ms, \
         1513 GB/s",
        "  GPU 1 → GPU 1 (DtoD): 225 copies, 125.8 MiB per call (27.6 GiB in all) in 19.59 ms, \
         1515 GB/s",
    ] {
        assert!(facts.contains(&want), "{want} not in {facts:#?}");
    }
    // the two GPUs' links run alike: no slow link
    assert!(!facts.iter().any(|x| x.starts_with("slow link")));
}

/// JIT compilers other than Dynamo/Inductor, found in an nsys export: nvFuser, TensorRT and
/// XLA NVTX ranges and a driver `cuModuleLoadData` call fill a 4.7 ms gap between two kernels.
/// They count in the window's compile report. The window is cold (the compiles and the load run
/// before the second kernel of the capture), so they are one-time start-up: the verdict says
/// start-up dominates and the `startup` finding, which carries it, fires first; the gap is
/// start-up's, not "nothing traced".
#[test]
fn nsys_jit_compiles_and_module_loads_are_compile_work() {
    let p = tmp("jit.sqlite");
    let (c, tid, pid) = new_export(
        &p,
        &["cudaLaunchKernel_v7000", "gemm_kernel", "cuModuleLoadData"],
    );
    c.execute(
        "INSERT INTO NVTX_EVENTS(start, end, eventType, text, globalTid, domainId) VALUES
           (300000, 1300000, 59, 'FusionKernelRuntime::compileFusionParallel', ?1, 0),
           (1400000, 2400000, 59, 'buildSerializedNetwork', ?1, 0),
           (2500000, 3500000, 59, 'XlaCompile', ?1, 0)",
        [tid],
    )
    .unwrap();
    c.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
           (0, 10000, 0, ?1, 1, 1, 0, NULL), (3600000, 4600000, 1, ?1, 0, 3, 0, NULL),
           (4800000, 4810000, 0, ?1, 2, 1, 0, NULL)",
        [tid],
    )
    .unwrap();
    c.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
           (100000, 200000, 0, 1, 7, 1, ?1, 2, 2, 108, 1, 1, 256, 1, 1, 32, 0, 0),
           (4900000, 5000000, 0, 1, 7, 2, ?1, 2, 2, 108, 1, 1, 256, 1, 1, 32, 0, 0)",
        [pid],
    )
    .unwrap();
    drop(c);
    let j = common::analyze_json(&p, &[]);
    let kinds: Vec<(String, f64)> = j["window"]["compile"]["by_kind"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["kind"].as_str().unwrap().to_string(),
                k["us"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("jit".to_string(), 3000.0),
            ("module_load".to_string(), 1000.0)
        ],
        "{}",
        j["window"]
    );
    assert_eq!(j["window"]["compile_us"], 4000.0);
    assert_eq!(j["verdict_class"], "startup_dominates", "{}", j["verdict"]);
    assert_eq!(common::finding_ids(&j)[0], "startup", "{}", j["verdict"]);
}

/// `--cuda-memory-usage=true` exports (`CUDA_GPU_MEMORY_USAGE_EVENTS`) feed the memory
/// timeline as Kineto's `[memory]` events do. By hand: a free at 50 µs of 2 MiB allocated
/// before the capture, then 1 MiB allocated at 120 µs inside `aten::empty`, 4 MiB at 310 µs
/// inside `aten::linear`, the 1 MiB freed at 505 µs; an 8 MiB pinned host allocation is no
/// device memory. Allocated: 2 → 0 → 1 → 5 → 4 MiB; the peak is 5 MiB, live at it the
/// 4 MiB of `aten::linear` and the 1 MiB of `aten::empty`.
#[test]
fn nsys_memory_usage_events_feed_the_memory_timeline() {
    const MIB: i64 = 1 << 20;
    let p = tmp("memory-usage.sqlite");
    let (c, tid, pid) = new_export(
        &p,
        &[
            "cudaLaunchKernel_v7000",
            "gemm_kernel",
            "cudaMalloc_v3020",
            "cudaFree_v3020",
            "cudaHostAlloc_v3020",
        ],
    );
    c.execute_batch(
        "CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS(start, globalPid, deviceId, contextId,
           address, pc, bytes, memKind, memoryOperationType, name, correlationId);",
    )
    .unwrap();
    c.execute(
        "INSERT INTO NVTX_EVENTS(start, end, eventType, text, globalTid, domainId) VALUES
           (90000, 160000, 59, 'aten::empty, seq = 1, op_id = 1', ?1, 0),
           (290000, 330000, 59, 'aten::linear, seq = 2, op_id = 2', ?1, 0)",
        [tid],
    )
    .unwrap();
    c.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
           (40000, 60000, 0, ?1, 9, 4, 0, NULL),
           (100000, 150000, 0, ?1, 10, 3, 0, NULL),
           (170000, 180000, 0, ?1, 13, 5, 0, NULL),
           (200000, 210000, 0, ?1, 1, 1, 0, NULL),
           (300000, 320000, 0, ?1, 11, 3, 0, NULL),
           (500000, 510000, 0, ?1, 12, 4, 0, NULL),
           (600000, 610000, 0, ?1, 2, 1, 0, NULL)",
        [tid],
    )
    .unwrap();
    c.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
           (210000, 400000, 0, 1, 7, 1, ?1, 2, 2, 108, 1, 1, 256, 1, 1, 32, 0, 0),
           (610000, 700000, 0, 1, 7, 2, ?1, 2, 2, 108, 1, 1, 256, 1, 1, 32, 0, 0)",
        [pid],
    )
    .unwrap();
    c.execute(
        "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES
           (50000, ?1, 0, 1, 57005, 0, ?2, 2, 1, NULL, 9),
           (120000, ?1, 0, 1, 4096, 0, ?3, 2, 0, NULL, 10),
           (175000, ?1, 0, 1, 999, 0, ?4, 1, 0, NULL, 13),
           (310000, ?1, 0, 1, 8192, 0, ?5, 2, 0, NULL, 11),
           (505000, ?1, 0, 1, 4096, 0, ?3, 2, 1, NULL, 12)",
        [pid, 2 * MIB, MIB, 8 * MIB, 4 * MIB],
    )
    .unwrap();
    drop(c);
    let t = stallscope::ingest::load(p.to_str().unwrap(), &Default::default()).unwrap();
    assert_eq!(t.memory.events, 4);
    assert_eq!(t.memory.unmatched_frees, 1);
    assert_eq!(t.memory.base, vec![(0, 50_000, 2 * MIB)]);
    let j = common::analyze_json(&p, &[]);
    let d = &j["memory"]["devices"][0];
    assert_eq!(d["device"], 0);
    assert_eq!(d["peak_allocated"], 5 * MIB, "{d}");
    assert_eq!(d["recorded_peak"], 5 * MIB);
    let live: Vec<(&str, i64)> = d["live_at_peak"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["op"].as_str().unwrap(), g["bytes"].as_i64().unwrap()))
        .collect();
    assert_eq!(live, vec![("aten::linear", 4 * MIB), ("aten::empty", MIB)]);
}

/// A new export at `path` with the tables every synthetic export here uses (StringIds holding
/// `strings` as ids 1, 2, …; runtime calls, kernels and NVTX ranges empty), and the
/// `globalTid` and `globalPid` of its one thread.
fn new_export(path: &Path, strings: &[&str]) -> (rusqlite::Connection, i64, i64) {
    let _ = std::fs::remove_file(path);
    let c = rusqlite::Connection::open(path).unwrap();
    c.execute_batch(
        "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT);
         CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start, end, eventClass, globalTid,
           correlationId, nameId, returnValue, callchainId);
         CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, contextId, streamId,
           correlationId, globalPid, demangledName, shortName, gridX, gridY, gridZ, blockX,
           blockY, blockZ, registersPerThread, staticSharedMemory, dynamicSharedMemory);
         CREATE TABLE NVTX_EVENTS(start, end, eventType, rangeId, category, color, text,
           globalTid, endGlobalTid, textId, domainId);",
    )
    .unwrap();
    for (i, v) in strings.iter().enumerate() {
        c.execute(
            "INSERT INTO StringIds VALUES (?1, ?2)",
            rusqlite::params![i as i64 + 1, v],
        )
        .unwrap();
    }
    let tid: i64 = (1 << 56) | (100 << 24) | 100;
    let pid: i64 = (1 << 56) | (100 << 24);
    (c, tid, pid)
}

/// pipit's MPI saxpy: the GPU idles while rank 0 waits in `MPI_Send`/`MPI_Recv` (Nsight
/// Systems' MPI ranges, domain `MPI`). That time is host communication, not host compute and
/// not "nothing traced": `host-communication` claims it and names the calls. Hand computation
/// over the export (Python, sqlite3): the 8 `MPI_Send` and 4 `MPI_Recv` ranges inside the
/// window (822.637686–1,920.165773 ms after the first event, at 64,186,762 ns) last
/// 88,857,607 + 84,748,184 ns = 173.605791 ms and overlap no kernel, copy or CUDA API call:
/// one step, so 173,605.791 µs per step.
#[test]
fn saxpy_mpi_waits_are_host_communication() {
    let Some(p) = file("pipit_saxpy-mpi-cuda_a100_nsys2022.2.sqlite") else {
        return;
    };
    let j = common::analyze_json(&p, &[]);
    let f = j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "host-communication")
        .unwrap_or_else(|| panic!("no host-communication: {:?}", common::finding_ids(&j)));
    assert_eq!(f["recoverable_us"].as_f64(), Some(173_605.791));
    assert_eq!(f["severity"], "medium");
    assert!(
        f["title"].as_str().unwrap().contains("`MPI:MPI_Send`"),
        "{}",
        f["title"]
    );
    let facts = f["evidence"]["facts"].to_string();
    assert!(facts.contains("`MPI:MPI_Send` 8× 88.86 ms"), "{facts}");
    assert!(facts.contains("`MPI:MPI_Recv` 4× 84.75 ms"), "{facts}");
    // never host compute, and what stays untraced is only the rest
    assert!(!common::finding_ids(&j).contains(&"host-compute"));
    let idle = j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "gpu-idle-gaps")
        .unwrap();
    let text = idle["evidence"]["facts"].to_string();
    assert!(
        text.contains(
            "host communication (collective or MPI call) 173.61 ms (→ host-communication)"
        ),
        "{text}"
    );
}

/// The `gpu-idle-gaps` finding of a report.
fn idle_gaps(j: &serde_json::Value) -> &serde_json::Value {
    j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "gpu-idle-gaps")
        .unwrap_or_else(|| panic!("no gpu-idle-gaps: {:?}", common::finding_ids(j)))
}

/// The OS's record of the launching thread names what the host did while nothing was
/// traced (issue 29: thread scheduling tells untraced on-CPU work from a blocked thread).
/// saxpy-mpi: the four long gaps of "nothing traced" are the rank computing on its CPU —
/// `SCHED_EVENTS` puts the launching thread (globalTid 302119224788637) off a CPU for only
/// 31,901 ns of them (in the gap at 1,733,690,730 ns; hand-computed in Python from the switch
/// events), and its CPU samples there resolve mostly to `main` (with `std::abs(double)`: a
/// host-side check loop). cloverleaf: its 1.15 ms gap at 542,648,423 ns finds the thread off
/// a CPU for 960,491 ns (83.6 %) while it `write`s its output; the 1.11 ms gap at
/// 872,642,539 ns lies half inside one 557,074 ns `write` (same computation over `OSRT_API`).
#[test]
fn untraced_time_is_told_apart_by_the_os_record() {
    let Some(p) = file("pipit_saxpy-mpi-cuda_a100_nsys2022.2.sqlite") else {
        return;
    };
    let j = common::analyze_json(&p, &[]);
    let verdict = j["verdict"].to_string();
    assert!(
        verdict.contains("the launching thread ran on a CPU for 100.0% of it (untraced host work), sampled mostly in `main`"),
        "{verdict}"
    );
    let idle = idle_gaps(&j);
    let facts = idle["evidence"]["facts"].to_string();
    assert!(
        facts.contains("off a CPU (blocked or preempted) 31.9 µs (0.0%)"),
        "{facts}"
    );
    assert!(facts.contains("CPU samples, in `main`"), "{facts}");
    let gaps = idle["evidence"]["locations"].to_string();
    assert!(
        gaps.contains("nothing traced: thread on CPU 100.0%, samples mostly `main`"),
        "{gaps}"
    );
    let advice = idle["advice"].to_string();
    assert!(advice.contains("ran on a CPU"), "{advice}");
    // the same figures as metrics, for scripts: 31.901 µs off a CPU, the rest of the
    // 396.22 ms of untraced idle on one
    let m = &idle["evidence"]["metrics"];
    assert_eq!(m["gpu0_untraced_off_cpu_us"].as_f64(), Some(31.901), "{m}");
    let on = m["gpu0_untraced_on_cpu_us"].as_f64().unwrap();
    assert!((on - 396_190.0).abs() < 100.0, "{m}");

    let Some(p) = file("pipit_cloverleaf-cuda_4xa100_nsys2024.5.sqlite") else {
        return;
    };
    let j = common::analyze_json(&p, &[]);
    let idle = idle_gaps(&j);
    let gaps = idle["evidence"]["locations"].to_string();
    assert!(
        gaps.contains("nothing traced: thread off CPU 83.6%\""),
        "{gaps}"
    );
    assert!(
        gaps.contains("nothing traced: thread off CPU 82.8% in `write`"),
        "{gaps}"
    );
    let facts = idle["evidence"]["facts"].to_string();
    assert!(facts.contains("in OS calls: `write`"), "{facts}");
}

/// One and two threads read the same trace: the kernels, copies, fills and syncs read by side
/// readers beside the runtime calls give the same events, names (in order), launch details
/// and warnings, the callchains scanned on a connection of their own the samples the
/// one-connection read gives, and the two-thread finalize the same events (every corpus
/// export, those with CPU samples among them).
#[test]
fn one_and_two_threads_read_the_same_export() {
    let Some(dir) = common::corpus_file(DIR) else {
        eprintln!("corpus absent: skipped (set STALLSCOPE_CORPUS)");
        return;
    };
    let mut with_samples = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().and_then(|e| e.to_str()) != Some("sqlite") {
            continue;
        }
        let read = |threads: usize| {
            let mut o = stallscope::ingest::LoadOptions::default();
            o.kineto.threads = threads;
            stallscope::ingest::load(p.to_str().unwrap(), &o).unwrap_or_else(|e| panic!("{e}"))
        };
        let (one, two) = (read(1), read(2));
        let name = p.display();
        assert_eq!(format!("{:?}", one.os), format!("{:?}", two.os), "{name}");
        assert_eq!(format!("{:?}", one.cpu), format!("{:?}", two.cpu), "{name}");
        assert_eq!(format!("{:?}", one.gpu), format!("{:?}", two.gpu), "{name}");
        assert_eq!(one.source.events, two.source.events, "{name}");
        // the kernels, copies, fills and syncs are read beside the runtime calls with two
        // threads: the same names in the same order, launch details, warnings and memory
        let names = |t: &stallscope::model::Trace| {
            t.names
                .iter()
                .map(|(_, s)| s.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&one), names(&two), "{name}");
        assert_eq!(
            format!("{:?}", one.kernel_infos),
            format!("{:?}", two.kernel_infos),
            "{name}"
        );
        assert_eq!(
            format!("{:?}", one.warnings),
            format!("{:?}", two.warnings),
            "{name}"
        );
        assert_eq!(
            format!("{:?}", one.memory),
            format!("{:?}", two.memory),
            "{name}"
        );
        assert_eq!(
            format!("{:?} {:?}", one.threads, one.devices),
            format!("{:?} {:?}", two.threads, two.devices),
            "{name}"
        );
        with_samples += usize::from(!one.os.samples.is_empty());
    }
    assert!(
        with_samples >= 2,
        "exports with CPU samples: {with_samples}"
    );
}
