#!/usr/bin/env python3
"""Runs HTA (PyPI `traceinsight`) on one Kineto trace the way a user would: TraceAnalysis
(load), then temporal, idle-time and GPU kernel breakdowns, without plots.

Prints one JSON line: HTA version, seconds for load and for the analyses, and the peak RSS of
this process (ru_maxrss). Used by bench/hta_compare.sh; run it under /usr/bin/time -v for an
outside view of wall time and memory.
"""
import json
import os
import re
import resource
import sys
import time


def rank_of(path):
    """Rank from distributedInfo (read from the head of the file), else 0."""
    import gzip

    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rb") as f:
        head = f.read(1 << 16).decode("utf-8", "replace")
    m = re.search(r'"rank"\s*:\s*(\d+)', head)
    return int(m.group(1)) if m else 0


def main():
    path = os.path.abspath(sys.argv[1])
    t0 = time.perf_counter()
    import hta
    from hta.trace_analysis import TraceAnalysis

    t_import = time.perf_counter() - t0
    rank = rank_of(path)
    t1 = time.perf_counter()
    ta = TraceAnalysis(trace_files={rank: path}, trace_dir=os.path.dirname(path))
    t_load = time.perf_counter() - t1
    t2 = time.perf_counter()
    temporal = ta.get_temporal_breakdown(visualize=False)
    idle, _ = ta.get_idle_time_breakdown(ranks=[rank], visualize=False)
    kernels, _ = ta.get_gpu_kernel_breakdown(visualize=False)
    t_analyze = time.perf_counter() - t2
    out = {
        "hta_version": getattr(hta, "__version__", None)
        or __import__("hta.version").version.__version__,
        "file": path,
        "rank": rank,
        "import_s": round(t_import, 3),
        "load_s": round(t_load, 3),
        "analyze_s": round(t_analyze, 3),
        "total_s": round(time.perf_counter() - t0, 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "temporal_rows": len(temporal),
        "idle_rows": len(idle),
        "kernel_types": len(kernels),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
