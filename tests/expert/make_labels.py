# generator for tests/expert/labels.toml (run once; the TOML is the source of truth afterwards)
L = []
def lab(path, classes, first, forbidden, why):
    L.append((path, classes, first, forbidden, why))

HOST = ["host_only"]
IDLE_ONE_PASS = ["no_steady_state", "host_bound", "launch_bound", "idle_unexplained"]
NOHOSTSIDE = ["dataloader-stall", "host-sync", "launch-bound", "compile-in-window", "exposed-communication", "gpu-idle-gaps"]

# ---- samples
lab("samples/a100_triton_example.json.gz", IDLE_ONE_PASS + ["compile"], ["any"], ["dataloader-stall", "exposed-communication", "host-sync", "fp32-matmul"],
    "one Triton kernel of 1.8 us in one compiled call (A100): nothing repeats, the device is idle; no device-side, comm or DataLoader cause can be shown")
lab("samples/cpu_only_rank34.json.gz", HOST, ["any"], ["fp32-matmul", "exposed-communication"],
    "CPU-only excerpt: 0 kernels, copies or fills in the file")
lab("samples/h100_bert_small.json.gz", ["launch_bound", "host_bound", "no_steady_state"], ["launch-bound", "small-kernels", "gpu-idle-gaps"], ["fp32-matmul", "dataloader-stall", "exposed-communication"],
    "H100 BERT-small: 60 kernels of 5.1 us mean (97% under 10 us), GPU busy 7.0% of the step, 93% of it idle in gaps under 1 ms (TraceLens ref: busy 7.9%); all 60 matmuls bf16")
lab("samples/mi300x_bert_small.json.gz", ["launch_bound", "host_bound", "no_steady_state"], ["launch-bound", "small-kernels", "gpu-idle-gaps"], ["fp32-matmul", "dataloader-stall", "exposed-communication"],
    "MI300X BERT-small: 60 kernels of 6.5 us mean, GPU busy 9.8% of the step, 90% idle in gaps under 1 ms (TraceLens ref: busy 11.2%); matmuls bf16")
lab("samples/mi300x_torch_compile_triton.json.gz", ["gpu_bound", "no_steady_state"], ["any"], ["fp32-matmul", "dataloader-stall", "exposed-communication"],
    "MI300X torch.compile run: 12 Triton kernels of 1.05 ms mean keep the device busy 100% of their span (TraceLens ref: 99.99%); the host waits in syncs meanwhile, so not sync-bound")
lab("samples/resnet50_v100_num_workers_0.pt.trace.json.gz", ["dataloader_bound"], ["dataloader-stall"], ["exposed-communication"],
    "ResNet-50 on V100 with num_workers=0: DataLoader 39.6% of the 6-step window, GPU busy 56% (TB plugin ref: DataLoader 33.37%, GPU utilization 55.51%)")
lab("samples/torch_cpu_compile_graph_breaks.json.gz", HOST, ["any"], ["fp32-matmul", "exposed-communication", "dataloader-stall"],
    "torch 2.15 CPU run of a compiled MLP with graph breaks: 0 device activities, 4 steps")
lab("samples/torch_cpu_mlp_two_phases.pt.trace.json.gz", HOST, ["any"], ["fp32-matmul", "exposed-communication", "dataloader-stall"],
    "torch 2.15 CPU training of a small MLP: 0 device activities, 3 steps")

C = ""
# ---- dtu / hta
lab("dtu_mlops/trace.json", HOST, ["any"], ["fp32-matmul", "exposed-communication"],
    "CPU-only ResNet-style inference (mkldnn_convolution): 0 device activities, no deviceProperties")
lab("hta/tests__data__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz", IDLE_ONE_PASS, ["any"], ["dataloader-stall", "exposed-communication"],
    "MI250 toy: 14 kernels of 7.9 us mean, GPU busy 1.6% of its 2 ProfilerSteps (9.29 ms then 0.05 ms: the first is the cold one); 71% of the window in idle gaps over 1 ms")
lab("hta/tests__data__cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", HOST, ["any"], ["fp32-matmul", "exposed-communication"],
    "CPU-only excerpt, rank 34 of 300 (gloo): 0 device activities")
lab("hta/tests__data__critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz", ["host_bound", "no_steady_state", "idle_unexplained"], ["any"], ["dataloader-stall", "exposed-communication"],
    "PARAM AlexNet benchmark on A100, no ProfilerStep: 79 kernels spread over 12.9 s, GPU busy 0.5%, 99.5% of it in idle gaps over 1 ms; no host sync time")
lab("hta/tests__data__critical_path__cuda_event_sync__event_sync_trace.json.gz", IDLE_ONE_PASS + ["sync_bound"], ["any"], ["dataloader-stall", "exposed-communication"],
    "cudaEventSynchronize repro on A100: 4 kernels, GPU busy 1.6% of 3.2 ms, host sync 1.5%; one pass, nothing to call steady")
lab("hta/tests__data__critical_path__cuda_event_sync_multi_stream__event_sync_trace.json.gz", IDLE_ONE_PASS, ["any"], ["dataloader-stall", "exposed-communication", "host-sync"],
    "multi-stream cudaStreamWaitEvent repro on A100: 3 kernels in 19.5 ms, GPU busy 1.9%, no host sync time; one pass")
lab("hta/tests__data__critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz", ["host_bound", "no_steady_state", "idle_unexplained"], ["any"], ["dataloader-stall", "exposed-communication"],
    "PARAM benchmark (alex_net forward) on A100: 79 kernels over 16.0 s, GPU busy 0.3%, 99.6% in idle gaps over 1 ms; no host sync time")
lab("hta/tests__data__cupti_profiler__benchmark_result_924719_1679055439_trace.json.gz", ["host_only", "no_device_work_in_window"], ["any"], ["exposed-communication", "dataloader-stall"],
    "CUPTI range-profiler mode: 77 launches but no kernel activity records (cuda_profiler_range events instead); the device timeline was not traced")
lab("hta/tests__data__df_index_resolver__df_index_resolver.json.gz", ["launch_bound", "host_bound", "communication_bound"], ["any"], ["dataloader-stall"],
    "DDP+compile rank 1 of 2 on V100: 5 steps of ~345 ms, GPU busy 57.6%, 39% of the window idle in gaps under 1 ms, exposed NCCL 20.6% of the step")
lab("hta/tests__data__distributed_info_unavailable__distributed_info_not_found.json.gz", HOST, ["any"], ["exposed-communication"],
    "CPU ops only (2,467 events), 0 device activities")
lab("hta/tests__data__execution_trace__benchmark_simple_add_trace.json.gz", IDLE_ONE_PASS + ["sync_bound"], ["any"], ["dataloader-stall", "exposed-communication"],
    "A100 simple_add: 4 kernels of 4 us in 109 ms, GPU busy 0.0%, host sync 7%; one pass of a tiny benchmark")
lab("hta/tests__data__mtia_inference_trace__mtia_inference_rank_0.json.gz", ["any"], ["any"], ["fp32-matmul"],
    "MTIA inference, no ProfilerStep, device events in mtia categories (not CUDA): no evidence computed for a class; fp32-matmul (a TF32/tensor-core rule) cannot apply to MTIA")
lab("hta/tests__data__mtia_trace_single_rank__mtia_rank_0.json.gz", ["any"], ["any"], ["fp32-matmul"],
    "MTIA training, 1 ProfilerStep, a corrupt timestamp (span 3.6e12 us): no evidence computed for a class; fp32-matmul cannot apply to MTIA")
lab("hta/tests__data__nccl_parser_config__nccl_data.json.gz", ["launch_bound", "host_bound"], ["any"], ["dataloader-stall"],
    "A100 rank 0 of 2: 3 steps of ~222 ms, GPU busy 23.6%, 53% of the window idle in gaps under 1 ms, 23% in longer gaps, exposed NCCL only 5.9%")
lab("hta/tests__data__negative_queue_length_values_check__rank0.json.gz", ["host_bound", "device_stalls", "communication_bound", "gpu_bound", "idle_unexplained"], ["any"], ["dataloader-stall"],
    "A100 rank 0 of 16: 5 steps of ~215 ms, GPU busy 35.5%, exposed SendRecv 15%, 57% idle in gaps over 1 ms, yet stream 7 queue reaches 946 (HTA); 70 graph launches: ambiguous, not compile (CompiledFunction = compiled-graph runs only)")
lab("hta/tests__data__ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", ["gpu_bound"], ["any"], ["dataloader-stall", "exposed-communication", "host-sync"],
    "V100 DDP+SGD rank 0 of 1: GPU busy 97.4% of 5 steps, launch queue on stream 7 reaches 1022 (HTA: GPU-bound); no NCCL kernels, no host sync time")
lab("hta/tests__data__rank_non_gpu__rank_non_gpu.json.gz", HOST, ["any"], ["exposed-communication"],
    "CPU ops only with distributedInfo rank 0: 0 device activities")
lab("hta/tests__data__rank_unavailable__rank_not_found.json.gz", HOST, ["any"], ["exposed-communication"],
    "CPU ops only, distributedInfo without rank: 0 device activities")
lab("hta/tests__data__timeline_analysis__sampled_rank-0.json.gz", ["communication_bound", "host_bound", "idle_unexplained"], ["any"], ["dataloader-stall", "host-sync"],
    "rank 0 of 128, event-sampled: 2 steps of ~615 ms, GPU busy 44.5%, exposed NCCL 27.3%, 46% idle in gaps over 1 ms; sampling removes records, so no device-stall cause can be proven")
lab("hta/tests__data__trace_filter__sampled_rank-1.json.gz", ["communication_bound", "host_bound", "idle_unexplained"], ["any"], ["dataloader-stall", "host-sync"],
    "rank 1 of the same 128-rank job, event-sampled: 2 steps of ~620 ms, GPU busy 46.8%, exposed NCCL 24.2%, 46% idle in gaps over 1 ms")
lab("hta/tests__data__critical_path__end_to_end__simple_add__output__overlaid_critical_path_trace.json.gz", ["host_bound", "no_steady_state", "idle_unexplained"], ["any"], ["dataloader-stall", "exposed-communication"],
    "the simple_add benchmark with HTA's critical-path flow overlay (same events): 79 kernels over 16.0 s, GPU busy 0.3%; the overlay must not change the diagnosis")
lab("hta/tests__data__trace_diff__control__control.json.gz", ["gpu_bound", "launch_bound", "communication_bound"], ["any"], ["dataloader-stall", "host-sync"],
    "A100 rank 3 of 8: 6 steps of ~77 ms, GPU busy 83.5% (just under 85%), exposed NCCL 18.6%, 13.6% idle in gaps under 1 ms; no host sync time")
lab("hta/tests__data__trace_diff__test__test.json.gz", ["gpu_bound"], ["any"], ["dataloader-stall", "host-sync"],
    "V100 rank 1 of 2: 6 steps, GPU busy 96.3%, exposed NCCL 8.8%; no host sync time")
lab("hta/tests__data__trace_file_list__inference_rank_1.json.gz", IDLE_ONE_PASS, ["any"], ["dataloader-stall", "exposed-communication", "host-sync"],
    "54-event excerpt (legacy categories): 4 kernels in 1.6 ms, GPU busy 1.8%; nothing repeats")
lab("hta/tests__data__triton_example__triton_example.json.gz", IDLE_ONE_PASS + ["compile"], ["any"], ["dataloader-stall", "exposed-communication", "host-sync", "fp32-matmul"],
    "one Triton kernel of 1.8 us in one compiled call (A100): nothing repeats (same file as samples/a100_triton_example.json.gz)")

# ---- nsys
lab("nsys/sqlite/generated_nvtx_nested_cpuonly_nsys2023.4.sqlite", HOST, ["any"], ["exposed-communication", "dataloader-stall"],
    "NVTX-only C program: no CUDA tables, 0 device activities")
lab("nsys/sqlite/generated_nvtx_nested_cpuonly_lazyfalse_fullschema_nsys2023.4.sqlite", HOST, ["any"], ["exposed-communication", "dataloader-stall"],
    "same NVTX-only capture with every table (all empty of CUDA work)")
lab("nsys/sqlite/lighttransport_gemm_rtx5060ti_nokernels_nsys2025.1.sqlite", ["host_only", "no_device_work_in_window"], ["any"], ["launch-bound", "gpu-idle-gaps"],
    "RTX 5060 Ti: no KERNEL table, 3 runtime rows: device work not traced, nothing to blame idle time on")
lab("nsys/sqlite/nsysai_fastvideo_2xh100_nsys2026.2.sqlite", ["gpu_bound"], ["any"], ["dataloader-stall", "exposed-communication"],
    "FastVideo inference, 2 x H100: busiest device busy 99.3% of the kernel span; the two ~428 ms cudaStreamSynchronize wait for a busy GPU (not sync-bound)")
lab("nsys/sqlite/nsysai_healthy_1pct_TRIMMED_nsys2026.1.sqlite", ["gpu_bound"], ["any"], ["dataloader-stall", "exposed-communication", "host-sync"],
    "400 kernels of 1.0 ms, GPU busy 99% of their span, no sync calls (trimmed 'healthy' fixture)")
lab("nsys/sqlite/nsysai_mfu_2xh100_before_nsys2026.2.sqlite", ["gpu_bound"], ["any"], ["dataloader-stall"],
    "2 x H100 PyTorch+NCCL: busiest device busy 91.3%, exposed NCCL 5.7%; host syncs wait for a busy GPU")
lab("nsys/sqlite/nsysai_mfu_2xh100_after_nsys2026.2.sqlite", ["gpu_bound", "launch_bound", "host_bound"], ["any"], ["dataloader-stall"],
    "same workload after the optimisation: busiest device busy 84.9% (at the 85% line), 13% idle in gaps under 1 ms, exposed NCCL 7.9%")
lab("nsys/sqlite/nsysai_mock_rtx3080_nsys2026.1.sqlite", IDLE_ONE_PASS + ["sync_bound"], ["any"], ["dataloader-stall", "exposed-communication"],
    "tiny RTX 3080 export: 2 kernels of 2.1 us, 1 memcpy, 1 stream sync; nothing repeats")
lab("nsys/sqlite/pipit_cloverleaf-cuda_4xa100_nsys2024.5.sqlite", ["gpu_bound", "sync_bound"], ["any"], ["dataloader-stall", "exposed-communication"],
    "CloverLeaf on A100: 1312 kernels each followed by cudaDeviceSynchronize; GPU busy 88.7% of the kernel span, 9.9% idle in gaps under 1 ms after the syncs")
lab("nsys/sqlite/pipit_saxpy-mpi-cuda_a100_nsys2022.2.sqlite", ["host_bound", "sync_bound", "idle_unexplained", "no_steady_state"], ["any"], ["dataloader-stall", "exposed-communication"],
    "MPI saxpy on A100: 5 kernels of 17.7 ms, GPU busy 34% of their span, 66% idle in gaps over 1 ms, host in blocking pageable cudaMemcpy 34%")
lab("weatherbench2/report1.sqlite", ["host_only", "no_steady_state", "idle_unexplained", "no_device_work_in_window"], ["any"], ["dataloader-stall", "exposed-communication", "launch-bound"],
    "RTX 4060 nsys 2025.5: 23 runtime calls, 1 memset, no KERNEL table: nothing to judge")

# ---- param
dl = {0: (0.456, 0.383, 0.452), 1: (0.619, 0.556, 0.329), 2: (0.331, 0.247, 0.55), 3: (0.554, 0.489, 0.389),
      4: (0.428, 0.364, 0.5), 5: (0.409, 0.349, 0.518), 6: (0.333, 0.251, 0.547), 7: (0.213, 0.126, 0.673)}
names = {0: "1694128201545", 1: "1694128201556", 2: "1694128201554", 3: "1694128201557", 4: "1694128201547", 5: "1694128201549", 6: "1694128201553", 7: "1694128201553"}
for w, (busy, comm, small) in dl.items():
    cls = ["no_steady_state", "launch_bound", "host_bound"] + (["communication_bound"] if comm >= 0.2 else [])
    lab(f"param/et_replay__tests__inputs__dlrm_kineto.tar.gz__dlrm_kineto__worker{w}_step_12.{names[w]}.pt.trace.json.gz", cls, ["any"], [],
        f"DLRM rank {w} of 8 on V100, a single extracted step (step 12): GPU busy {busy:.1%}, exposed NCCL {comm:.1%}, {small:.0%} idle in gaps under 1 ms; one iteration, so no device-stall verdict")
lab("param/et_replay__tests__inputs__linear_kineto.json.gz", ["launch_bound", "host_bound"], ["any"], ["dataloader-stall", "exposed-communication"],
    "linear-model training on RTX 2080 Ti, no ProfilerStep: 8716 kernels, GPU busy 36.8%, 59% of the span idle in gaps under 1 ms")
lab("param/et_replay__tests__inputs__resnet_kineto.json.gz", ["dataloader_bound"], ["dataloader-stall"], ["exposed-communication"],
    "ResNet training on RTX 2080 Ti: DataLoader spans cover 56.5% of the kernel span, GPU busy 32.6%, 67% idle in gaps over 1 ms")

# ---- particle transformer
lab("particle_transformer/cpu_tensorboard_logs__hmoss-6a49xb_4025559.1732704788383329918.pt.trace.json.gz", HOST, ["any"], ["exposed-communication"],
    "ParticleTransformer on the CPU of a GPU host: 0 device activities")
lab("particle_transformer/gpu_working_chrome_trace.json.gz", ["host_bound", "no_steady_state", "idle_unexplained"], ["any"], ["dataloader-stall", "exposed-communication"],
    "A100 inference, no ProfilerStep: 549 kernels over 1.8 s, GPU busy 5.1%, 95% idle in gaps over 1 ms")
lab("particle_transformer/profiler_trace.json", ["host_only", "no_device_work_in_window"], ["any"], ["exposed-communication"],
    "near-empty trace: 0 ops, 7 cuda_runtime calls, 0 device activities")
for bs, fn, busy, big in [(128, "hmoss-6a49xb_1987242.1733769849366171800", 0.08, 0.9), (2, "hmoss-6a49xb_1981897.1733767528038368522", 0.016, 0.908), (512, "hmoss-6a49xb_1988833.1733770537022695153", 0.09, 0.906)]:
    lab(f"particle_transformer/tensorboard_logs_forward_2024_12_09__batch_size_{bs}__{fn}.pt.trace.json.gz", ["host_bound", "no_steady_state", "idle_unexplained"], ["any"], ["dataloader-stall", "exposed-communication"],
        f"A100 forward, batch {bs}, no ProfilerStep: GPU busy {busy:.1%} of the kernel span, {big:.0%} idle in gaps over 1 ms")

# ---- tbprof
lab("tbprof/tb_plugin__samples__resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz", ["dataloader_bound"], ["dataloader-stall"], ["exposed-communication"],
    "ResNet-50 V100 num_workers=0, span 1: DataLoader 39.6% of the window, GPU busy 56% (TB plugin ref: DataLoader 33.37%, GPU utilization 55.51%)")
lab("tbprof/tb_plugin__samples__resnet50_num_workers_0__worker0.1623143566756.pt.trace.json.gz", ["dataloader_bound"], ["dataloader-stall"], ["exposed-communication"],
    "same run, span 2: DataLoader 29.7% of the window, GPU busy 64.4%")
lab("tbprof/tb_plugin__samples__resnet50_num_workers_4__worker0.1623212756351.pt.trace.json.gz", ["launch_bound", "host_bound"], ["any"], ["exposed-communication", "dataloader-stall"],
    "num_workers=4, span 1: DataLoader 1.0%, GPU busy 72.4%, 20% idle in gaps under 1 ms, 7.7% in longer gaps")
lab("tbprof/tb_plugin__samples__resnet50_num_workers_4__worker0.1623213129365.pt.trace.json.gz", ["launch_bound", "host_bound"], ["any"], ["exposed-communication", "dataloader-stall"],
    "num_workers=4, span 2: DataLoader 1.0%, GPU busy 71.4%, 13% idle in gaps under 1 ms, 15% in longer gaps")
for f in ["tbprof/tb_plugin__test__gpu_metrics_input.json", "tbprof/tb_plugin__test__gpu_metrics_expected.json"]:
    lab(f, IDLE_ONE_PASS, ["any"], ["exposed-communication"],
        "small V100 trace: 30 kernels of 1.6 us, GPU busy 0.4% of 13.4 ms, 91% idle in gaps under 1 ms" + (" (the plugin's injected counter events must not change this)" if "expected" in f else ""))

# ---- tracelens micro
micro = "tracelens/agent_evals__Analysis__analysis_tests__unit_tests_standalone.tar.gz__"
BF = ["fp32-matmul", "dataloader-stall", "exposed-communication"]
lab(micro + "attention__sdpa_01_long_seq_low_eff.json", ["gpu_bound"], ["any"], BF, "10 SDPA kernels of 66 ms (MI300X), device busy 100% of their span; host syncs wait for a busy device (bf16)")
lab(micro + "attention__sdpa_02_very_long_seq_head_waste.json", ["gpu_bound"], ["any"], BF, "10 SDPA kernels of 112 ms, device busy 100% (bf16)")
lab(micro + "attention__sdpa_03_short_seq_overhead.json", ["launch_bound", "sync_bound", "host_bound"], ["any"], BF,
    "authors' label 'launch/overhead bound': 10 SDPA kernels of 108 us, device busy 78.7%, 21% idle in gaps under 1 ms between synced calls")
lab(micro + "attention__sdpa_04_large_head_dim.json", ["gpu_bound"], ["any"], BF, "10 SDPA kernels of 6.5 ms, device busy 98.2% (bf16)")
lab(micro + "elementwise__elem_01_add_poor_bw.json", ["gpu_bound"], ["any"], ["dataloader-stall", "exposed-communication"], "10 add kernels of 421 us, device busy 100%")
lab(micro + "gemm__gemm_01_compute_few_tiles.json", ["gpu_bound"], ["any"], BF, "20 hipBLASLt kernels, device busy 100% of 10.9 ms (bf16)")
lab(micro + "gemm__gemm_02_compute_non_pow2.json", ["gpu_bound"], ["any"], BF, "10 GEMMs of 107 us, device busy 100% (bf16)")
lab(micro + "gemm__gemm_03_compute_misaligned.json", ["gpu_bound"], ["any"], BF, "10 GEMMs of 367 us, device busy 100% (bf16)")
lab(micro + "gemm__gemm_04_memory_tall_skinny.json.gz", ["gpu_bound"], ["any"], BF, "10 tall-skinny GEMMs of 13.5 us, device busy 93.8% of their span (fp16)")

# ---- tracelens traces
T = "tracelens/tests__traces__"
lab(T + "b200__eager_trace.json.gz", ["launch_bound", "host_bound", "no_steady_state"], ["any"], ["fp32-matmul", "dataloader-stall"],
    "B200 eager serving step, rank 0 of 8: 768 kernels (76% under 10 us), GPU busy 13.7%, 75.5% idle in gaps under 1 ms; exposed comm 2.5%; flashinfer autotuner cache lookups are not compile work")
lab(T + "h100__Falconsai_nsfw_image_detection__1016002.json.gz", ["launch_bound", "host_bound", "no_steady_state"], ["any"], ["fp32-matmul", "dataloader-stall", "exposed-communication"],
    "H100 ViT inference: 154 kernels of 7.9 us mean, GPU busy 15.5% of the step, 84.5% idle in gaps under 1 ms (TraceLens ref: busy 16.2%)")
lab(T + "h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", ["gpu_bound"], ["any"], ["dataloader-stall", "exposed-communication"],
    "H100 Qwen1.5-0.5B: GPU busy 91.8% of the step (TraceLens ref: 91.4%); host syncs wait for a busy GPU (0.8 ms of 16.3 ms sync overlaps idle)")
lab(T + "h100__facebook_timesformer-base-finetuned-k400__1016002.json.gz", ["gpu_bound", "host_bound", "no_steady_state"], ["any"], ["fp32-matmul", "dataloader-stall", "exposed-communication"],
    "H100 TimeSformer, one step: GPU busy 99% of its 160 ms of device work (TraceLens ref: 99.0%) after 220 ms of host work before the first kernel (step busy 41%)")
lab(T + "h100__gaunernst_bert-small-uncased__1016001.json.gz", ["launch_bound", "host_bound", "no_steady_state"], ["launch-bound", "small-kernels", "gpu-idle-gaps"], ["fp32-matmul", "dataloader-stall", "exposed-communication"],
    "same file as samples/h100_bert_small.json.gz: GPU busy 7.0%, 93% idle in gaps under 1 ms")
lab(T + "h100__google_owlv2-large-patch14-ensemble__1016001.json.gz", ["dataloader_bound", "host_bound", "no_steady_state"], ["any"], ["fp32-matmul", "exposed-communication"],
    "H100 OWLv2, one step: DataLoader spans 51% of the step, GPU busy 46.8% (TraceLens ref: 52.6% of the device span)")
lab(T + "inference__sglang_decode__capture_traces__bs_32_rank0.json.gz", ["compile", "no_steady_state", "host_bound", "idle_unexplained"], ["any"], ["fp32-matmul", "dataloader-stall"],
    "SGLang CUDA-graph capture phase: 546 launches captured into a graph, only 2 kernels executed; a capture, not a workload")
lab(T + "inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz", ["timing_unreliable", "idle_unexplained", "no_steady_state"], ["any"], ["dataloader-stall"],
    "SGLang decode graph replay: GPU busy 2.1% (TraceLens ref 2.06%) while the host sits 463 ms in syncs during 464 ms of device idle: device work unrecorded or clocks offset, not a sync or host bound")
lab(T + "inference__sglang_prefilldecode__sglang_Qwen3-8B_prefilldecode.json.gz", ["timing_unreliable", "idle_unexplained", "no_steady_state"], ["any"], ["dataloader-stall"],
    "SGLang prefill+decode: GPU busy 49.9% (TraceLens ref), all 493 ms of device idle covered by host syncs: device work unrecorded or clocks offset")
lab(T + "inference__vllm_decode_full__capture_traces__graph_capture_rank_0.1773709742341309550.pt.trace.json.gz", ["compile", "no_steady_state"], ["any"], ["fp32-matmul", "dataloader-stall"],
    "vLLM graph-capture phase: 25 CompiledFxGraph + autotune, 428 launches, 7 kernels run")
lab(T + "inference__vllm_decode_full__graph_execution.json.gz", ["gpu_bound", "timing_unreliable"], ["any"], ["dataloader-stall"],
    "vLLM full-graph decode replay: device busy 99.8% of its span (TraceLens ref 99.76%); host/device clock offset known on this trace")
lab(T + "inference__vllm_prefilldecode_piecewise__capture_traces__graph_capture_rank_0.1773709679453551615.pt.trace.json.gz", ["compile", "no_steady_state"], ["any"], ["fp32-matmul", "dataloader-stall"],
    "vLLM piecewise graph-capture phase: compile + autotune, 460 launches, 99 kernels run")
lab(T + "inference__vllm_prefilldecode_piecewise__graph_execution.json.gz", ["gpu_bound", "timing_unreliable"], ["any"], ["dataloader-stall"],
    "vLLM piecewise prefill+decode replay: device busy 99.8% (TraceLens ref 99.76%)")
lab(T + "inference__xdit_flux.1_aiter_sage__profile_trace_rank_0.json.gz", ["gpu_bound", "host_bound", "launch_bound"], ["any"], ["fp32-matmul", "dataloader-stall", "exposed-communication"],
    "xDiT FLUX.1, one step: GPU busy 80.7% of the step, 88.9% of the device span (TraceLens ref); compile_fx frames are compiled-graph runs, not compilation")
lab(T + "inference__xdit_sd_3.5__profile_trace_rank_0.json.gz", ["launch_bound", "host_bound"], ["any"], ["fp32-matmul", "dataloader-stall", "exposed-communication"],
    "xDiT SD3.5: GPU busy 59.6% (TraceLens ref 60.8%), 33% idle in gaps under 1 ms over 8042 launches")
lab(T + "mi210__gpu_only_trace__gpu_only_trace.json.gz", ["gpu_bound"], ["any"], ["dataloader-stall", "exposed-communication"],
    "MI210: 562 kernels, device busy 89.4% (TraceLens ref 89.36%)")
lab(T + "mi300__Falconsai_nsfw_image_detection__1016002.json.gz", ["launch_bound", "host_bound", "no_steady_state"], ["any"], ["fp32-matmul", "dataloader-stall", "exposed-communication"],
    "MI300X ViT: GPU busy 23% of the step (TraceLens ref 25.0%), 77% idle in gaps under 1 ms")
lab(T + "mi300__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", ["gpu_bound"], ["any"], ["dataloader-stall", "exposed-communication"],
    "MI300X Qwen1.5-0.5B: GPU busy 90.6% of the step (TraceLens ref 89.8%)")
lab(T + "mi300__ddp_resnet18_no_pool__train_resnet18.json.gz", ["host_bound", "idle_unexplained", "no_steady_state"], ["any"], ["fp32-matmul", "dataloader-stall"],
    "MI300X DDP ResNet-18, no ProfilerStep: 2360 kernels over 3.39 s, GPU busy 10.6%, 86% idle in gaps over 1 ms, no host sync time")
lab(T + "mi300__facebook_timesformer-base-finetuned-k400__1016002.json.gz", ["gpu_bound", "host_bound", "no_steady_state"], ["any"], ["fp32-matmul", "dataloader-stall", "exposed-communication"],
    "MI300X TimeSformer, one step: device busy 98.8% of its 121 ms of work (TraceLens ref) after ~270 ms of host work (step busy 30.7%); syncs overlap no device idle")
lab(T + "mi300__gaunernst_bert-small-uncased__1016001.json.gz", ["launch_bound", "host_bound", "no_steady_state"], ["launch-bound", "small-kernels", "gpu-idle-gaps"], ["fp32-matmul", "dataloader-stall", "exposed-communication"],
    "same file as samples/mi300x_bert_small.json.gz: GPU busy 9.8%, 90% idle in gaps under 1 ms")
lab(T + "mi300__google_owlv2-large-patch14-ensemble__1016001.json.gz", ["dataloader_bound", "host_bound", "no_steady_state"], ["any"], ["fp32-matmul", "exposed-communication"],
    "MI300X OWLv2, one step: DataLoader spans 64% of the step, GPU busy 30.3% (TraceLens ref 36.5% of the device span)")
lab(T + "mi300__resnet_act_checkpoint.json.gz", ["communication_bound"], ["exposed-communication"], ["fp32-matmul", "dataloader-stall"],
    "MI300X DDP ResNet rank 0 of 8: exposed RCCL 65.7% of the steps, device busy 95.1% (TraceLens ref: 67.8% exposed comm)")
lab(T + "perf_model__normalization__normalization_layer_test.json.gz", ["host_bound", "launch_bound", "idle_unexplained", "no_steady_state"], ["any"], ["dataloader-stall", "exposed-communication"],
    "MI300X norm-layer microbenchmark: 168 kernels of 5.9 us over 1.07 s, device busy 0.1% (TraceLens ref 0.09%), 99% idle in gaps over 1 ms")
lab(T + "torch_compile_triton__trace.json.gz", ["gpu_bound", "no_steady_state"], ["any"], ["fp32-matmul", "dataloader-stall", "exposed-communication"],
    "same file as samples/mi300x_torch_compile_triton.json.gz: device busy 100% (TraceLens ref 99.99%)")
lab("zoology/trace.json.gz", ["host_only", "no_device_work_in_window"], ["any"], ["launch-bound", "gpu-idle-gaps"],
    "A100 host: 260 launch calls but 0 kernel/copy records: device activity not traced, so no idle time can be blamed")

# ---- ncu
NC = ["dataloader-stall", "host-sync", "launch-bound", "compile-in-window", "exposed-communication", "gpu-idle-gaps"]
for f, why in [("ncu/csv/esmm_gemm_a10g_page-details.csv", "ncu details export: 4 SGEMM launches on A10G (3 compute-bound at 87.6-98.6% SM throughput, one failed); no timeline, so no host-side finding"),
               ("ncu/csv/esmm_gemm_a10g_page-raw_units-base.csv", "same report, raw page (base units)"),
               ("ncu/csv/esmm_gemm_a10g_page-raw_units-auto.csv", "same report, raw page (auto units)"),
               ("ncu/csv/leleucas_bert_attention_a100_ncu2022_details_with_PROF_preamble.csv", "ncu 2022 A100 BERT-attention kernels; no timeline, so no host-side finding"),
               ("ncu/csv/leleucas_dropout_a100_ncu2022_metrics_only.csv", "ncu 2022, 162 dropout launches x 21 metrics; no timeline, so no host-side finding")]:
    lab(f, ["ncu_only"], ["any"], NC, why)

def q(s):
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"') + '"'
out = ["# Expert labels: one per real capture of ../shared/corpus and samples/ (docs/expert-labels.md).",
       "# Written from the capture's own evidence (tests/expert/evidence.py) or its author's",
       "# published figures BEFORE stallscope was run on it. A label changes only with a written",
       "# reason in the same commit.", ""]
for path, classes, first, forb, why in L:
    out.append("[[capture]]")
    out.append(f"path = {q(path)}")
    out.append("classes = [" + ", ".join(q(c) for c in classes) + "]")
    out.append("first = [" + ", ".join(q(c) for c in first) + "]")
    out.append("forbidden = [" + ", ".join(q(c) for c in forb) + "]")
    out.append(f"why = {q(why)}")
    out.append("")
open('/work/wt/expert/tests/expert/labels.toml', 'w').write("\n".join(out))
print(len(L))
