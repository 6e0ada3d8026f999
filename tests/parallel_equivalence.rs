//! The Kineto reader gives the same model whatever the number of threads and the block size:
//! one thread with 4 KiB blocks (every block boundary falls inside some event, the tails are
//! carried over thousands of times) against two (and three) threads with the default blocks,
//! a memory-mapped file against the same file read into buffers, and chained blocks (cut at
//! likely event boundaries, walked by the parsers) against scanned ones.
//! Events are compared field by field with names resolved, and so are threads, devices,
//! warnings and the source counts.

mod common;

use std::path::Path;

use stallscope::ingest::{load, LoadOptions};
use stallscope::model::Trace;

fn opts(threads: usize, block_size: Option<usize>) -> LoadOptions {
    let mut o = LoadOptions::default();
    o.kineto.threads = threads;
    if let Some(b) = block_size {
        o.kineto.block_size = b;
    }
    o.kineto.allow_truncated = true;
    o
}

/// One line per fact of the model, names resolved.
fn rows(t: &Trace) -> Vec<String> {
    let mut v = vec![
        format!(
            "source events={} bytes={} compressed={:?}",
            t.source.events, t.source.bytes, t.source.compressed_bytes
        ),
        format!("distributed {:?} base {:?}", t.distributed, t.base_time_ns),
        format!("names {}", t.names.len()),
    ];
    for d in &t.devices {
        v.push(format!("device {d:?}"));
    }
    for th in &t.threads {
        v.push(format!("thread {th:?}"));
    }
    for w in &t.warnings {
        v.push(format!("warning {w:?}"));
    }
    for e in &t.cpu {
        let th = &t.threads[e.thread as usize];
        v.push(format!(
            "cpu {} {} {:?} {}/{} {:?} {} ext={} corr={} owner={}",
            e.start,
            e.dur,
            t.name(e.name),
            th.pid,
            th.tid,
            e.kind,
            e.is_module,
            e.external_id,
            e.correlation,
            e.owner_op
        ));
    }
    for g in &t.gpu {
        let k = t.kernel_info(g);
        v.push(format!(
            "gpu {} {} {:?} {:?} dev={} stream={} corr={} ext={} {:08x} {:08x} {:08x} regs={} \
             grid={:?} block={:?} smem={} bytes={} graph={} flow={} launch={}",
            g.start,
            g.dur,
            t.name(g.name),
            g.kind,
            g.device,
            g.stream,
            g.correlation,
            g.external_id,
            k.blocks_per_sm.to_bits(),
            k.warps_per_sm.to_bits(),
            k.occupancy_pct.to_bits(),
            k.registers,
            k.grid,
            k.block,
            k.shared_mem,
            g.bytes,
            g.in_graph,
            g.flow_linked,
            g.launch
        ));
    }
    v
}

fn assert_same(a: &Trace, b: &Trace, what: &str) {
    let (ra, rb) = (rows(a), rows(b));
    if let Some(i) = (0..ra.len().min(rb.len())).find(|&i| ra[i] != rb[i]) {
        panic!(
            "{what}: models differ at row {i}:\n  {}\n  {}",
            ra[i], rb[i]
        );
    }
    assert_eq!(ra.len(), rb.len(), "{what}: row counts differ");
}

/// Loads `path` three ways and checks the models are identical.
fn check(path: &Path) {
    let p = path.to_str().unwrap();
    let seq = load(p, &opts(1, Some(4096))).unwrap_or_else(|e| panic!("{e}"));
    let par = load(p, &opts(2, None)).unwrap_or_else(|e| panic!("{e}"));
    let par3 = load(p, &opts(3, Some(64 << 10))).unwrap_or_else(|e| panic!("{e}"));
    assert!(seq.source.events > 0, "{p}: no events");
    assert_same(
        &seq,
        &par,
        &format!("{p}: threads=1/4KiB vs threads=2/default"),
    );
    assert_same(
        &seq,
        &par3,
        &format!("{p}: threads=1/4KiB vs threads=3/64KiB"),
    );
    // uncompressed files are memory-mapped by default: read them into buffers too
    let mut o = opts(2, None);
    o.no_mmap = true;
    let read = load(p, &o).unwrap_or_else(|e| panic!("{e}"));
    assert_same(&seq, &read, &format!("{p}: mapped vs read into buffers"));
    // mapped files are cut into chain blocks the parsers walk: against the scanned blocks
    let mut o = opts(2, Some(4096));
    o.kineto.chain = false;
    let scanned = load(p, &o).unwrap_or_else(|e| panic!("{e}"));
    assert_same(&seq, &scanned, &format!("{p}: chained vs scanned blocks"));
}

/// Traces of every kind in the corpus: DDP + NCCL, ns timestamps, AMD, legacy 2021
/// categories and string tids, B200 with baseTimeNanoseconds, HIP graph replay, MTIA with a
/// corrupt timestamp, Triton, CPU only, no deviceProperties.
const CORPUS: &[&str] = &[
    "hta/tests__data__df_index_resolver__df_index_resolver.json.gz",
    "hta/tests__data__ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "hta/tests__data__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "hta/tests__data__mtia_trace_single_rank__mtia_rank_0.json.gz",
    "hta/tests__data__triton_example__triton_example.json.gz",
    "hta/tests__data__cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "tbprof/tb_plugin__samples__resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz",
    "tracelens/tests__traces__b200__eager_trace.json.gz",
    "tracelens/tests__traces__inference__vllm_decode_full__graph_execution.json.gz",
    "dtu_mlops/trace.json",
];

#[test]
fn corpus_models_do_not_depend_on_threads_or_blocks() {
    for rel in CORPUS {
        if let Some(p) = common::corpus_file(rel) {
            check(&p);
        }
    }
}

#[test]
fn shipped_samples_do_not_depend_on_threads_or_blocks() {
    for name in [
        "resnet50_v100_num_workers_0.pt.trace.json.gz",
        "h100_bert_small.json.gz",
        "mi300x_bert_small.json.gz",
        "h100_kineto_2026_format.json",
    ] {
        check(&common::sample(name));
    }
}

/// A trace whose events carry every quirk the repair path handles, spread so that block
/// boundaries fall inside broken events too.
#[test]
fn repaired_events_do_not_depend_on_threads_or_blocks() {
    let dir = std::env::temp_dir().join(format!("stallscope-par-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("quirks.json");
    let mut doc: Vec<u8> = b"{\"schemaVersion\": 1, \"traceEvents\": [\n".to_vec();
    for i in 0..6000u32 {
        if i > 0 {
            doc.extend_from_slice(b",\n");
        }
        let name: Vec<u8> = match i % 7 {
            0 => b"aten::mm".to_vec(),
            1 => format!("say \"hi\" {i}").into_bytes(), // unescaped quotes
            2 => b"tab\there\x01".to_vec(),              // raw control characters
            3 => b"caf\xe9 \xff".to_vec(),               // invalid UTF-8
            4 => format!("esc\\\"aped\\\\ {{\\u00e9}} {i}").into_bytes(),
            _ => format!("op_{}", i % 50).into_bytes(),
        };
        doc.extend_from_slice(b"{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"");
        doc.extend_from_slice(&name);
        doc.extend_from_slice(
            format!(
                "\", \"pid\": 1, \"tid\": {}, \"ts\": {}.{}, \"dur\": {}, \"args\": {{\"External id\": {}, \"v\": {}}}}}",
                1 + i % 3,
                1000 + i,
                i % 1000,
                i % 17,
                i + 1,
                if i % 11 == 0 { "N/A" } else { "[1, {\"x\": \"}\"}]" }
            )
            .as_bytes(),
        );
    }
    doc.extend_from_slice(b"\n], \"traceName\": \"quirks\"}\n");
    std::fs::write(&path, &doc).unwrap();
    check(&path);
    let t = load(path.to_str().unwrap(), &opts(2, None)).unwrap();
    let codes: Vec<&str> = t.warnings.iter().map(|w| w.code).collect();
    for c in [
        "unescaped-quotes",
        "control-chars",
        "invalid-utf8",
        "bare-tokens",
    ] {
        assert!(codes.contains(&c), "warning {c} missing: {codes:?}");
    }
    assert_eq!(t.source.events, 6000);
    assert_eq!(t.cpu.len(), 6000);
    let _ = std::fs::remove_dir_all(&dir);
}
