//! Ingest benchmark: MB/s, events/s and peak RSS of `stallscope::ingest::load` on real-workload
//! traces (made by `examples/scale_trace.rs`), next to the floor of a bare pass over the same
//! bytes.
//!
//! ```text
//! cargo bench --bench ingest -- [--repeat N] [--cases LIST] FILE...
//! ```
//!
//! Every measurement runs in a fresh child process (this binary re-executed with `--child`),
//! so its peak RSS (`VmHWM` from /proc/self/status) is its own. Cases:
//! - `load-1core`: `load` with `threads = 1`, pinned to CPU 0 (`taskset -c 0`, when present);
//! - `load-1core-read`: the same, with the file read into buffers instead of memory-mapped
//!   (`LoadOptions::no_mmap`; gzip input is read the same way by both);
//! - `load-2cores`: `load` with `threads = 2`;
//! - `floor-ignoredany`: the file read (and inflated) into memory, then one
//!   `serde_json::from_slice::<IgnoredAny>` over it, on one core; only the parse is timed;
//! - `floor-read`: reading (and inflating) the file to a sink, on one core.
//!
//! The children of the load cases print a digest of the whole model (every event field, names
//! resolved, threads, devices, warnings); the parent fails when the digests of the load cases
//! differ. When `FILE.meta.json` (written by scale_trace) exists, the loaded
//! event count must match it.
//!
//! MB are 10^6 bytes of uncompressed input.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::io::Read;
use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Instant;

use stallscope::ingest::{self, LoadOptions};
use stallscope::model::Trace;

const ALL_CASES: &[&str] = &[
    "load-1core",
    "load-1core-read",
    "load-2cores",
    "floor-ignoredany",
    "floor-read",
];

/// CPU time (user + system) of this process so far, in seconds (10 ms ticks).
fn cpu_secs() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // fields after the command name (which is in parentheses and may hold spaces)
    let rest = s.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name
    (ticks(11) + ticks(12)) / 100.0
}

fn vm_hwm_kb() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// A digest of everything a reader produces, names resolved.
fn digest(t: &Trace) -> u64 {
    let mut h = DefaultHasher::new();
    t.source.events.hash(&mut h);
    t.source.bytes.hash(&mut h);
    t.names.len().hash(&mut h);
    for th in &t.threads {
        (th.pid, th.tid, &th.name).hash(&mut h);
    }
    for d in &t.devices {
        (
            d.id,
            &d.name,
            d.sm_count,
            d.memory_bytes,
            d.active,
            d.peak_allocated,
        )
            .hash(&mut h);
    }
    for e in &t.cpu {
        (
            e.start,
            e.dur,
            t.name(e.name),
            e.thread,
            e.kind as u8,
            e.is_module,
            e.external_id,
            e.correlation,
            e.owner_op,
        )
            .hash(&mut h);
    }
    for g in &t.gpu {
        let k = t.kernel_info(g);
        (
            g.start,
            g.dur,
            t.name(g.name),
            g.kind as u8,
            g.device,
            g.stream as i64, // hashed as before it was stored as i32
            g.correlation,
            g.external_id,
        )
            .hash(&mut h);
        (
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
            g.launch,
        )
            .hash(&mut h);
    }
    for w in &t.warnings {
        (w.code, w.count, w.first_offset, &w.message).hash(&mut h);
    }
    h.finish()
}

fn open_decoded(path: &str) -> Box<dyn Read> {
    let mut f = std::fs::File::open(path).expect("open");
    let mut magic = [0u8; 2];
    let gz = f.read(&mut magic).unwrap_or(0) == 2 && magic == [0x1f, 0x8b];
    let f = std::fs::File::open(path).expect("open");
    if gz {
        Box::new(flate2::read::MultiGzDecoder::new(
            std::io::BufReader::with_capacity(1 << 20, f),
        ))
    } else {
        Box::new(f)
    }
}

/// Runs one case in this (child) process and prints one JSON line.
fn child(case: &str, path: &str) -> ExitCode {
    let mut out = serde_json::Map::new();
    out.insert("case".into(), case.into());
    match case {
        "load-1core" | "load-1core-read" | "load-2cores" => {
            let mut opts = LoadOptions::default();
            opts.kineto.threads = if case == "load-2cores" { 2 } else { 1 };
            opts.no_mmap = case == "load-1core-read";
            let c0 = cpu_secs();
            let t0 = Instant::now();
            let trace = match ingest::load(path, &opts) {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("load failed: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let secs = t0.elapsed().as_secs_f64();
            let cpu = cpu_secs() - c0;
            let hwm = vm_hwm_kb();
            out.insert("secs".into(), secs.into());
            out.insert("cpu_secs".into(), cpu.into());
            out.insert("bytes".into(), trace.source.bytes.into());
            out.insert("events".into(), trace.source.events.into());
            out.insert("cpu_events".into(), trace.cpu.len().into());
            out.insert("gpu_events".into(), trace.gpu.len().into());
            out.insert("vmhwm_kb".into(), hwm.into());
            out.insert("digest".into(), format!("{:016x}", digest(&trace)).into());
        }
        "floor-ignoredany" => {
            let mut buf = Vec::new();
            let t0 = Instant::now();
            open_decoded(path).read_to_end(&mut buf).expect("read");
            let read_secs = t0.elapsed().as_secs_f64();
            let t1 = Instant::now();
            let r = serde_json::from_slice::<serde::de::IgnoredAny>(&buf);
            let secs = t1.elapsed().as_secs_f64();
            if let Err(e) = r {
                eprintln!("IgnoredAny failed: {e}");
                return ExitCode::FAILURE;
            }
            out.insert("secs".into(), secs.into());
            out.insert("read_secs".into(), read_secs.into());
            out.insert("bytes".into(), (buf.len() as u64).into());
            out.insert("vmhwm_kb".into(), vm_hwm_kb().into());
        }
        "floor-read" => {
            let mut r = open_decoded(path);
            let mut chunk = vec![0u8; 8 << 20];
            let mut n = 0u64;
            let t0 = Instant::now();
            loop {
                let k = r.read(&mut chunk).expect("read");
                if k == 0 {
                    break;
                }
                n += k as u64;
            }
            out.insert("secs".into(), t0.elapsed().as_secs_f64().into());
            out.insert("bytes".into(), n.into());
            out.insert("vmhwm_kb".into(), vm_hwm_kb().into());
        }
        other => {
            eprintln!("unknown case {other}");
            return ExitCode::FAILURE;
        }
    }
    println!("{}", serde_json::Value::Object(out));
    ExitCode::SUCCESS
}

fn have_taskset() -> bool {
    Command::new("taskset")
        .arg("-V")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Reads `path` to its end (into the page cache), in 8 MiB chunks.
fn warm(path: &str) -> Result<(), String> {
    let mut f = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let mut chunk = vec![0u8; 8 << 20];
    while f.read(&mut chunk).map_err(|e| format!("{path}: {e}"))? > 0 {}
    Ok(())
}

fn run_child(case: &str, path: &str, taskset: bool) -> Result<serde_json::Value, String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    // the file's pages in the page cache before every run: this VM's proactive reclaim pages
    // out idle page cache within seconds (see bench/hta_compare.sh)
    warm(path)?;
    let one_core = case != "load-2cores";
    let mut cmd = if one_core && taskset {
        let mut c = Command::new("taskset");
        c.arg("-c").arg("0").arg(&me);
        c
    } else {
        Command::new(&me)
    };
    cmd.arg("--child").arg(case).arg(path);
    let o = cmd.output().map_err(|e| e.to_string())?;
    if !o.status.success() {
        return Err(format!(
            "{case} on {path} failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    let line = String::from_utf8_lossy(&o.stdout);
    serde_json::from_str(line.trim()).map_err(|e| format!("bad child output {line:?}: {e}"))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(|s| s.as_str()) == Some("--child") {
        return child(&args[1], &args[2]);
    }
    let mut repeat = 3usize;
    let mut cases: Vec<String> = ALL_CASES.iter().map(|s| s.to_string()).collect();
    let mut files = Vec::new();
    let mut json_out: Option<String> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--bench" => {} // added by `cargo bench`
            "--repeat" => repeat = it.next().and_then(|s| s.parse().ok()).unwrap_or(3).max(1),
            "--cases" => {
                cases = it
                    .next()
                    .map(|s| s.split(',').map(String::from).collect())
                    .unwrap_or_default()
            }
            "--json" => json_out = it.next().cloned(),
            f => files.push(f.to_string()),
        }
    }
    if files.is_empty() {
        eprintln!(
            "usage: cargo bench --bench ingest -- [--repeat N] [--cases {}] [--json OUT] FILE...\n\
             (make inputs with `bash bench/run.sh`, or examples/scale_trace.rs)",
            ALL_CASES.join(",")
        );
        return ExitCode::SUCCESS;
    }
    let taskset = have_taskset();
    if !taskset {
        eprintln!("note: taskset not found; 1-core cases run unpinned");
    }
    println!(
        "stallscope ingest bench: {} cpus, load {} at start, {} runs per case (fresh process each)",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        loadavg(),
        repeat
    );
    println!(
        "{:<28} {:<17} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8}",
        "file", "case", "MB/s best", "MB/s med", "MB/CPU-s", "Mevents/s", "peak MB", "RSS/in"
    );
    let mut failed = false;
    let mut all = Vec::new();
    for file in &files {
        let meta: Option<serde_json::Value> = std::fs::read_to_string(format!("{file}.meta.json"))
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok());
        let short = Path::new(file)
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| file.clone());
        let mut digests: Vec<(String, String)> = Vec::new();
        let mut best_load_1core = None;
        let mut floor = None;
        for case in &cases {
            let mut rates = Vec::new();
            let mut secs_v = Vec::new();
            let mut hwm = Vec::new();
            let mut cpu_v = Vec::new();
            let mut last = serde_json::Value::Null;
            for _ in 0..repeat {
                match run_child(case, file, taskset) {
                    Ok(v) => {
                        let secs = v["secs"].as_f64().unwrap_or(f64::NAN);
                        let bytes = v["bytes"].as_u64().unwrap_or(0) as f64;
                        rates.push(bytes / secs / 1e6);
                        secs_v.push(secs);
                        hwm.push(v["vmhwm_kb"].as_f64().unwrap_or(0.0));
                        if let Some(c) = v["cpu_secs"].as_f64() {
                            cpu_v.push(c);
                        }
                        if let Some(d) = v["digest"].as_str() {
                            if !digests.iter().any(|(c, x)| c == case && x == d) {
                                digests.push((case.clone(), d.to_string()));
                            }
                        }
                        last = v;
                    }
                    Err(e) => {
                        eprintln!("{e}");
                        failed = true;
                        break;
                    }
                }
            }
            if rates.is_empty() {
                continue;
            }
            let best = rates.iter().cloned().fold(f64::MIN, f64::max);
            let med = median(&mut rates.clone());
            let min_secs = secs_v.iter().cloned().fold(f64::MAX, f64::min);
            let bytes = last["bytes"].as_u64().unwrap_or(0);
            let events = last["events"].as_u64();
            let peak_mb = median(&mut hwm.clone()) / 1024.0;
            let evs = events
                .map(|e| format!("{:.2}", e as f64 / min_secs / 1e6))
                .unwrap_or_else(|| "-".into());
            let rss_ratio = if case.starts_with("load") {
                format!("{:.3}", peak_mb * 1024.0 * 1024.0 / bytes as f64)
            } else {
                "-".into()
            };
            let per_cpu = if cpu_v.is_empty() {
                "-".to_string()
            } else {
                let c = cpu_v.iter().cloned().fold(f64::MAX, f64::min).max(0.01);
                format!("{:.0}", bytes as f64 / c / 1e6)
            };
            println!(
                "{:<28} {:<17} {:>10.0} {:>10.0} {:>10} {:>10} {:>10.1} {:>8}",
                short, case, best, med, per_cpu, evs, peak_mb, rss_ratio
            );
            if case == "load-1core" {
                best_load_1core = Some(min_secs);
            }
            if case == "floor-ignoredany" {
                floor = Some(min_secs);
                println!(
                    "{:<28} {:<17} (reading the file into memory first took {:.2} s, not counted)",
                    "",
                    "",
                    last["read_secs"].as_f64().unwrap_or(0.0)
                );
            }
            if let (Some(m), Some(e)) = (&meta, events) {
                if let Some(want) = m["events"].as_u64() {
                    if want != e {
                        eprintln!("{short}: {case} loaded {e} events, scale_trace wrote {want}");
                        failed = true;
                    }
                }
            }
            all.push(serde_json::json!({
                "file": file, "case": case, "mb_s_best": best, "mb_s_median": med,
                "secs_best": min_secs, "cpu_secs": cpu_v, "bytes": bytes, "events": events,
                "peak_rss_mb": peak_mb, "runs": rates.len(),
            }));
        }
        if let (Some(l), Some(f)) = (best_load_1core, floor) {
            println!(
                "{:<28} load-1core / IgnoredAny floor: {:.2}x the time of a bare parse",
                short,
                l / f
            );
        }
        let distinct: std::collections::BTreeSet<&str> =
            digests.iter().map(|(_, d)| d.as_str()).collect();
        if distinct.len() > 1 {
            eprintln!("{short}: MODEL DIFFERS between runs/cases: {digests:?}");
            failed = true;
        } else if let Some(d) = distinct.iter().next() {
            let cs: std::collections::BTreeSet<&str> =
                digests.iter().map(|(c, _)| c.as_str()).collect();
            println!(
                "{:<28} model digest {d}: identical in every run of {}",
                short,
                cs.into_iter().collect::<Vec<_>>().join(", ")
            );
        }
    }
    println!("load {} at end", loadavg());
    if let Some(p) = json_out {
        let _ = std::fs::write(&p, serde_json::to_string_pretty(&all).unwrap());
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
