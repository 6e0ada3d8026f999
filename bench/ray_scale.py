"""The Ray figures of docs/performance.md ("Per-rank summaries on Ray"): a folder of rank files
(bench/ranks256.sh) through `stallscope.ray.analyze` on a local Ray cluster of N CPUs, against
`stallscope.analyze(FOLDER, jobs=N)` (the command's folder run, in-process) on the same files.

    python bench/ray_scale.py /tmp/stallscope-r256 [--cpus 2] [--repeat 2]

Prints wall times (best of --repeat, alternating the two), the overhead, the peak RSS of each
Ray worker process (VmHWM, read from /proc after the run: workers are reused, so it is the
largest over the ranks a worker ran), the driver's, the summary sizes, and whether the two
reports are equal (they must be).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

import ray
import stallscope
import stallscope.ray


def vm_hwm_kib(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def ray_workers() -> list[int]:
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        # a worker's process title: ray::IDLE, ray::_summarize_task
        if cmd.startswith(b"ray::") and b"Agent" not in cmd:
            pids.append(int(p))
    return pids


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    files = stallscope.ray.list_files(a.folder)
    size = sum(os.path.getsize(f) for f in files)
    print(f"{len(files)} files, {size / 1e9:.2f} GB")
    ray.init(num_cpus=a.cpus, include_dashboard=False, logging_level="error")
    # start the workers before timing (Ray starts them lazily)
    ray.get([ray.remote(lambda: os.getpid()).options(num_cpus=1).remote() for _ in range(a.cpus)])
    best = {"ray": float("inf"), "folder": float("inf")}
    reports = {}
    for _ in range(a.repeat):
        t = time.perf_counter()
        reports["ray"] = stallscope.ray.analyze(
            a.folder, max_concurrency_per_node=a.cpus, progress=False
        )
        best["ray"] = min(best["ray"], time.perf_counter() - t)
        t = time.perf_counter()
        reports["folder"] = stallscope.analyze(a.folder, jobs=a.cpus)
        best["folder"] = min(best["folder"], time.perf_counter() - t)
    same = reports["ray"].to_json() == reports["folder"].to_json()
    for k, v in best.items():
        print(f"{k:7s} {v:7.2f} s  {len(files) / v:6.1f} ranks/s  {size / v / 1e6:6.1f} MB/s")
    print(f"overhead of the Ray path: {100 * (best['ray'] / best['folder'] - 1):+.1f}%")
    print(f"reports equal: {same}")
    hwm = sorted(filter(None, (vm_hwm_kib(p) for p in ray_workers())))
    print(f"Ray worker peak RSS (MiB): {[round(h / 1024) for h in hwm]}")
    drv = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"driver peak RSS: {drv / 1024:.0f} MiB (the folder run included)")
    parts = [stallscope.summarize(f, threads=1) for f in files[:8]]
    sizes = [len(json.dumps(p)) for p in parts]
    merged = stallscope.merge_summaries(parts)
    print(f"summary sizes (first 8 ranks): {min(sizes) / 1e3:.0f}-{max(sizes) / 1e3:.0f} kB;")
    print(f"  facts of one rank: {len(json.dumps(parts[0]['ranks'][0]))} bytes;")
    print(f"  merged summary of 8: {len(json.dumps(merged)) / 1e3:.0f} kB")
    texts = [json.dumps(p).encode() for p in parts] * (len(files) // 8)
    t = time.perf_counter()
    stallscope.merge(texts)
    dt = time.perf_counter() - t
    each = 1e3 * dt / len(texts)
    print(f"merging {len(texts)} summaries on the driver: {dt:.2f} s, {each:.1f} ms each")
    ray.shutdown()


if __name__ == "__main__":
    main()
