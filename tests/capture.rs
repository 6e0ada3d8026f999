//! The capture check (`trust` in JSON) on corpus traces: the AMD graph-replay traces of vLLM
//! whose device clock is offset from the host's, traces without such an offset, a CPU-only
//! trace; and the verdict, which does not blame device-side stalls on an offset clock. Known
//! producer defects and format drift (issue 30): `ts 0, dur 0` events, log lines in the event
//! array, Kineto's 2026 fields, nsys's own lost-event diagnostics.

mod common;

fn ids(r: &serde_json::Value) -> Vec<String> {
    r["trust"]["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn clock_offset_on_amd_graph_replays() {
    // smallest delay from a launch's return to its kernel (computed with Python from the
    // JSON: 146385.85 µs for hipModuleLaunchKernel on the piecewise trace, 6378.31 µs for
    // hipGraphLaunch on the full-graph one)
    let cases = [
        (
            "tracelens/tests__traces__inference__vllm_prefilldecode_piecewise__graph_execution.json.gz",
            146_385.853,
        ),
        (
            "tracelens/tests__traces__inference__vllm_decode_full__graph_execution.json.gz",
            6_378.309,
        ),
    ];
    for (rel, offset_us) in cases {
        let Some(p) = common::corpus_file(rel) else {
            return;
        };
        let r = common::analyze_json(&p, &[]);
        assert_eq!(ids(&r), ["clock-offset"], "{rel}");
        assert_eq!(r["trust"]["ok"], false);
        let got = r["trust"]["clock_offset_us"].as_f64().unwrap();
        assert!((got - offset_us).abs() < 0.01, "{rel}: {got}");
        // each is one extracted iteration: no steady state (issue 30), a verdict that blames
        // neither the host nor the device (the capture check names the offset)
        let v = r["verdict"].as_str().unwrap();
        assert!(
            v.starts_with("No steady state: one iteration"),
            "{rel}: {v}"
        );
        assert!(!v.contains("Device-side stalls"), "{v}");
        assert!(!v.contains("nothing traced on the host"), "{v}");
    }
}

#[test]
fn no_offset_on_nvidia_and_cpu_only() {
    for rel in [
        "hta/tests__data__ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
        "tracelens/tests__traces__h100__gaunernst_bert-small-uncased__1016001.json.gz",
        "tracelens/tests__traces__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz",
    ] {
        let Some(p) = common::corpus_file(rel) else {
            return;
        };
        let r = common::analyze_json(&p, &[]);
        assert!(!ids(&r).contains(&"clock-offset".to_string()), "{rel}");
        assert_eq!(r["trust"]["clock_offset_us"], 0.0);
    }
    let Some(p) = common::corpus_file(
        "hta/tests__data__cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    ) else {
        return;
    };
    let r = common::analyze_json(&p, &[]);
    assert_eq!(ids(&r), ["cpu-only"]);
}

/// A Kineto trace of `steps` ProfilerSteps of 10 launches each (epoch-µs times, one GEMM
/// kernel of 60 µs per launch, 100 µs apart), with `kernel_args` added to every kernel's
/// args and `extra` events appended; `zero_from`: the events of that step on are written with
/// `ts 0, dur 0` (the torch 2.12 defect).
fn kineto(steps: usize, kernel_args: &str, extra: &[String], zero_from: usize) -> String {
    let t0: u64 = 1_764_000_000_000_000;
    let mut ev: Vec<String> = Vec::new();
    for s in 0..steps {
        let zero = s >= zero_from;
        let t = |x: u64| if zero { 0 } else { x };
        let d = |x: u64| if zero { 0 } else { x };
        let base = t0 + 1000 + s as u64 * 1000;
        ev.push(format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{s}","pid":1,"tid":1,"ts":{},"dur":{}}}"#,
            t(base),
            d(1000)
        ));
        for i in 0..10u64 {
            let at = base + i * 100;
            let n = s as u64 * 10 + i + 1;
            let corr = 1000 + n;
            ev.push(format!(
                r#"{{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":{},"dur":{},"args":{{"External id":{n}}}}}"#,
                t(at),
                d(20)
            ));
            ev.push(format!(
                r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":{},"args":{{"External id":{n},"correlation":{corr}}}}}"#,
                t(at + 2),
                d(5)
            ));
            ev.push(format!(
                r#"{{"ph":"X","cat":"kernel","name":"sm90_xmma_gemm_bf16","pid":0,"tid":7,"ts":{},"dur":{},"args":{{"External id":{n},"correlation":{corr},"device":0,"stream":7{kernel_args}}}}}"#,
                t(at + 10),
                d(60)
            ));
            ev.push(format!(
                r#"{{"ph":"s","cat":"ac2g","name":"ac2g","pid":1,"tid":1,"ts":{},"id":{corr}}}"#,
                at + 2
            ));
            ev.push(format!(
                r#"{{"ph":"f","cat":"ac2g","name":"ac2g","pid":0,"tid":7,"ts":{},"id":{corr},"bp":"e"}}"#,
                at + 10
            ));
        }
    }
    ev.extend(extra.iter().cloned());
    format!(
        "{{\"schemaVersion\":1,\"deviceProperties\":[{{\"id\":0,\"name\":\"NVIDIA H100\",\
         \"totalGlobalMem\":85000000000,\"computeMajor\":9,\"computeMinor\":0,\"numSms\":132}}],\
         \"traceEvents\":[\n{}\n]}}",
        ev.join(",\n")
    )
}

#[test]
fn zero_timestamp_tail_is_left_out_and_named() {
    let dir = common::TempDir::new("zero-ts");
    let good = dir.file("good.json", kineto(4, "", &[], 4).as_bytes());
    let r = common::analyze_json(std::path::Path::new(&good), &[]);
    assert!(ids(&r).is_empty(), "{:?}", ids(&r));
    assert_eq!(common::kernel_calls(&r), 40);
    // steps 2 and 3 written with ts 0, dur 0: 2 × (1 step + 10 × 3 spans) = 62 events
    let bad = dir.file("bad.json", kineto(4, "", &[], 2).as_bytes());
    let r = common::analyze_json(std::path::Path::new(&bad), &[]);
    assert_eq!(ids(&r), ["zero-timestamps"]);
    let issue = &r["trust"]["issues"][0];
    assert!(
        issue["finding"]
            .as_str()
            .unwrap()
            .starts_with("62 events were written with ts 0 and dur 0 (the torch 2.12 export defect, pytorch #188481); the first at byte "),
        "{issue}"
    );
    let w = &r["warnings"][0];
    assert_eq!(
        (w["code"].as_str(), w["count"].as_u64()),
        (Some("zero-timestamp"), Some(62))
    );
    // the figures come from the two steps with real times; the idle time is not blamed
    assert_eq!(common::kernel_calls(&r), 20);
    let v = r["verdict"].as_str().unwrap();
    assert!(v.starts_with("Device records incomplete"), "{v}");
    assert!(v.contains("zero-timestamps"), "{v}");
}

#[test]
fn log_lines_in_the_event_array_are_skipped_with_their_offset() {
    let doc = kineto(2, "", &[], 2);
    // a log line after the 31st event (kineto #1453)
    let cut = doc.match_indices(",\n").nth(30).unwrap().0 + 2;
    let line = "WARNING:2026-05-01 12:00:00 kineto.cpp:123] cudaEvent \"event_id\": 64 {x}\n";
    let with_log = format!("{}{}{}", &doc[..cut], line, &doc[cut..]);
    let dir = common::TempDir::new("log-line");
    let p = dir.file("log.json", with_log.as_bytes());
    let r = common::analyze_json(std::path::Path::new(&p), &[]);
    let w = &r["warnings"][0];
    assert_eq!(w["code"], "non-object-event");
    assert_eq!(w["count"], 1);
    assert_eq!(w["first_offset"].as_u64(), Some(cut as u64));
    assert_eq!(common::kernel_calls(&r), 20);
    // the same bytes gzip-compressed (the streaming path)
    let p = dir.gz("log.json.gz", with_log.as_bytes());
    let r = common::analyze_json(std::path::Path::new(&p), &[]);
    assert_eq!(r["warnings"][0]["first_offset"].as_u64(), Some(cut as u64));
    assert_eq!(common::kernel_calls(&r), 20);
}

#[test]
fn kineto_2026_fields_read_or_ignored_cleanly() {
    // each 2026 addition (docs: reference/format-drift-2026.md) must leave the report of the
    // plain trace unchanged but for its source
    let plain = kineto(2, "", &[], 2);
    let pm: Vec<String> = (0..40)
        .map(|i| {
            format!(
                r#"{{"ph":"C","name":"sm__throughput","pid":"GPU 0 Counters","tid":0,"ts":{},"args":{{"":{}}}}}"#,
                1_764_000_000_001_000u64 + i * 50,
                0.5 + i as f64 / 100.0
            )
        })
        .collect();
    let variants = [
        // graph id / graph node id (kineto #1276, #1277), node ids above 2^63
        kineto(
            2,
            r#","graph id":3,"graph node id":18446744073709551000"#,
            &[],
            2,
        ),
        // Seq / Comms Id beyond i64 (kineto #1296, #1300; HTA #324), channel, priority
        kineto(
            2,
            r#","Seq":7,"Comms Id":18446744073709551615,"channel":1,"channel_type":"p2p","priority":-1"#,
            &[],
            2,
        ),
        // torch 2.15 graph annotations (pytorch #179768, #187061)
        kineto(
            2,
            r#","annotated_stream":7,"original_stream":12,"layer":"decoder.3","meta":{"x":[1,2]}"#,
            &[],
            2,
        ),
        // CUPTI PM sampling counters under a string pid (kineto #1530)
        kineto(2, "", &pm, 2),
        // unsigned 64-bit ids above 2^63 (kineto #1455, #1499)
        plain
            .replace("\"correlation\":10", "\"correlation\":184467440737095510")
            .replace("\"id\":10", "\"id\":184467440737095510"),
    ];
    let dir = common::TempDir::new("drift-2026");
    let p = dir.file("plain.json", plain.as_bytes());
    let mut base = common::analyze_json(std::path::Path::new(&p), &[]);
    base.as_object_mut().unwrap().remove("source");
    assert_eq!(common::kernel_calls(&base), 20);
    assert!(ids(&base).is_empty());
    for (i, doc) in variants.iter().enumerate() {
        assert_ne!(doc, &plain);
        let p = dir.file(&format!("v{i}.json"), doc.as_bytes());
        let mut r = common::analyze_json(std::path::Path::new(&p), &[]);
        r.as_object_mut().unwrap().remove("source");
        assert_eq!(r, base, "variant {i}");
    }
}

#[test]
fn nsys_lost_events_named_on_the_capture_that_reports_them() {
    // lighttransport/gemm: nsys's DIAGNOSTIC_EVENT says "Some CUPTI events might be missing"
    // (CUPTI buffers 49 of 50) and "Not all CUDA events might have been collected"
    let Some(p) = common::corpus_file(
        "nsys/sqlite/lighttransport_gemm_rtx5060ti_nokernels_nsys2025.1.sqlite",
    ) else {
        return;
    };
    let r = common::analyze_json(&p, &[]);
    assert!(
        ids(&r).contains(&"producer-lost-events".to_string()),
        "{:?}",
        ids(&r)
    );
    let w = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == "nsys-lost-events")
        .unwrap();
    assert_eq!(w["count"], 2);
    // the other nsys captures report no loss
    for rel in [
        "nsys/sqlite/pipit_cloverleaf-cuda_4xa100_nsys2024.5.sqlite",
        "nsys/sqlite/nsysai_mock_rtx3080_nsys2026.1.sqlite",
    ] {
        let p = common::corpus_file(rel).unwrap();
        let r = common::analyze_json(&p, &[]);
        assert!(
            !ids(&r).contains(&"producer-lost-events".to_string()),
            "{rel}"
        );
    }
}

#[test]
fn nsys_2022_runtime_calls_written_twice_count_once() {
    // pipit saxpy (nsys 2022.2): each of the 95 runtime rows' 38 calls with a correlation id
    // is written twice, `cudaMemcpy` then `cudaMemcpy_v3020` inside it (checked with Python on
    // CUPTI_ACTIVITY_KIND_RUNTIME: 38 adjacent rows of one thread and correlation, nested);
    // its 15 cudaMemcpy calls are 15 host syncs, not 30
    let Some(p) = common::corpus_file("nsys/sqlite/pipit_saxpy-mpi-cuda_a100_nsys2022.2.sqlite")
    else {
        return;
    };
    let r = common::analyze_json(&p, &[]);
    assert_eq!(ids(&r), ["duplicate-records"], "{}", r["trust"]);
    let w = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == "duplicate-records")
        .unwrap();
    assert_eq!(w["count"], 38);
    // the syncs waited little (the host was hardly ahead): the idle after them is untraced
    // MPI time (issue 29's lead model), so the verdict is no longer Sync-bound; the sync
    // finding counts each call once
    let sync = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "host-sync")
        .expect("host-sync");
    let t = sync["title"].as_str().unwrap();
    assert!(t.contains(" 15 host syncs per step"), "{t}");
}

/// Capture-check levels (issue 30): collective kernels without a recorded message size limit
/// only the communication figures (`nccl-sizes-unrecorded`, level `figures`): the note prints
/// beside them, the verdict stands and `trust.ok` stays true; the terminal and markdown say
/// the verdict stands. On HTA's trace_diff test trace (NCCL kernels of 2023, before Kineto
/// recorded sizes on them) and an nsys export of two H100s (no sizes in an nsys export).
#[test]
fn comm_sizes_limit_only_their_figures() {
    for rel in [
        "hta/tests__data__trace_diff__test__test.json.gz",
        "nsys/sqlite/nsysai_mfu_2xh100_before_nsys2026.2.sqlite",
    ] {
        let Some(p) = common::corpus_file(rel) else {
            return;
        };
        let r = common::analyze_json(&p, &[]);
        assert_eq!(ids(&r), ["nccl-sizes-unrecorded"], "{rel}");
        assert_eq!(r["trust"]["issues"][0]["level"], "figures", "{rel}");
        assert_eq!(r["trust"]["ok"], true, "{rel}");
        let figures = &r["trust"]["figures"];
        assert_eq!(figures[0]["figure"], "communication", "{rel}: {figures}");
        assert_eq!(figures.as_array().unwrap().len(), 1, "{rel}: {figures}");
        let verdict = r["verdict"].as_str().unwrap();
        assert!(!verdict.contains("capture check"), "{rel}: {verdict}");
        for fmt in ["table", "md"] {
            let out = common::ok_stdout(&["analyze", p.to_str().unwrap(), "--format", fmt]);
            let out = out.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(
                out.contains("nothing in this capture limits the verdict")
                    && out.contains("the verdict stands"),
                "{rel} {fmt}"
            );
        }
    }
}

/// A verdict names the verdict-level capture issues that limit what it rests on (issue 30:
/// "the verdict says when it limits the answer"), and only those: a launch-bound verdict rests
/// on the launch links that `missing-launch-flows` says are missing; a GPU-bound one does not;
/// a host-only verdict may rest on device records the producer says it lost.
#[test]
fn the_verdict_names_the_capture_issues_it_rests_on() {
    let cases = [
        (
            "hta/tests__data__mtia_trace_single_rank__mtia_rank_0.json.gz",
            Some(
                " (limited by the capture check: missing-launch-flows — device work without a \
                 launch link has no known host cause)",
            ),
        ),
        (
            "tracelens/tests__traces__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
            None,
        ),
    ];
    for (rel, want) in cases {
        let Some(p) = common::corpus_file(rel) else {
            return;
        };
        let r = common::analyze_json(&p, &[]);
        let v = r["verdict"].as_str().unwrap();
        match want {
            Some(w) => assert!(v.ends_with(w), "{rel}: {v}"),
            None => assert!(!v.contains("limited by the capture check"), "{rel}: {v}"),
        }
    }
    // an nsys export whose producer reports lost CUPTI events and holds no kernel: the
    // host-only verdict may rest on records the producer lost
    let Some(p) = common::corpus_file(
        "nsys/sqlite/lighttransport_gemm_rtx5060ti_nokernels_nsys2025.1.sqlite",
    ) else {
        return;
    };
    let r = common::analyze_json(&p, &[]);
    let v = r["verdict"].as_str().unwrap();
    assert!(
        v.ends_with(
            " (limited by the capture check: producer-lost-events — device records are \
             missing, so idle time is not all idle; totals are lower bounds)"
        ),
        "{v}"
    );
}
