#!/usr/bin/env python3
"""Evidence for expert labels, computed from the raw capture (never from stallscope's answer).

    python3 tests/expert/evidence.py FILE...

Per Kineto trace: steps (ProfilerStep#), the window (first step start .. last step end, else
the span of device activity), device busy share of the window (union of kernel/copy/fill
intervals of the busiest device), exposed communication share (NCCL/RCCL kernels not
overlapped by computation), host time in blocking syncs (cuda/hip *Synchronize, blocking
cudaMemcpy; `async_copy_wait`: host time in cudaMemcpyAsync/hipMemcpyAsync calls of 20 us or
more, which block on pageable memory or `.item()` and are not in `sync`), DataLoader time, compile markers, graph launches, the matmul input dtypes,
idle time split into gaps under / over 1 ms. Per nsys SQLite export: the same from the
CUPTI tables. Prints one line per file.
"""
import gzip
import json
import sqlite3
import sys
from collections import Counter, defaultdict

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}
SYNC_NAMES = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
              "hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize",
              "cudaMemcpy", "hipMemcpy", "cudaMemcpyWithStream", "hipMemcpyWithStream")


def union(iv):
    iv = sorted(iv)
    out = []
    for s, e in iv:
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def clip(iv, lo, hi):
    return [(max(s, lo), min(e, hi)) for s, e in iv if min(e, hi) > max(s, lo)]


def length(iv):
    return sum(e - s for s, e in iv)


def minus(a, b):
    """a \\ b for sorted disjoint interval lists."""
    out, j = [], 0
    for s, e in a:
        cur = s
        while j < len(b) and b[j][1] <= cur:
            j += 1
        k = j
        while k < len(b) and b[k][0] < e:
            if b[k][0] > cur:
                out.append((cur, b[k][0]))
            cur = max(cur, b[k][1])
            k += 1
        if cur < e:
            out.append((cur, e))
    return out


def is_comm(name):
    n = name.lower()
    return "nccl" in n or "rccl" in n or "all_reduce" in n or "allreduce" in n or "all_gather" in n


def summarize(window, gpu_by_dev, comm_by_dev, sync_t, dl_t, extra):
    lo, hi = window
    span = max(hi - lo, 1)
    best = None
    for dev, iv in gpu_by_dev.items():
        u = union(clip(iv, lo, hi))
        b = length(u)
        if best is None or b > best[1]:
            best = (dev, b, u)
    out = dict(window_ms=round(span / 1e3, 3))
    if best is None:
        out["busy"] = 0.0
    else:
        dev, b, u = best
        out["busy"] = round(b / span, 3)
        comm = union(clip(comm_by_dev.get(dev, []), lo, hi))
        exposed = length(minus(comm, union(clip(noncomm_by_dev.get(dev, []), lo, hi)))) if comm else 0
        out["exposed_comm"] = round(exposed / span, 3)
        # idle gaps
        small = big = 0
        prev = lo
        for s, e in u:
            g = s - prev
            if g > 0:
                if g < 1000:
                    small += g
                else:
                    big += g
            prev = max(prev, e)
        g = hi - prev
        if g > 0:
            if g < 1000:
                small += g
            else:
                big += g
        out["idle_lt1ms"] = round(small / span, 3)
        out["idle_ge1ms"] = round(big / span, 3)
    out["sync"] = round(sync_t / span, 3)
    out["dataloader"] = round(dl_t / span, 3)
    out.update(extra)
    return out


noncomm_by_dev = {}


def kineto(path):
    global noncomm_by_dev
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt", errors="replace") as fh:
        d = json.load(fh)
    if isinstance(d, list):
        ev = d
    else:
        ev = d.get("traceEvents") or []
    steps = []
    gpu_by_dev, comm_by_dev = defaultdict(list), defaultdict(list)
    noncomm_by_dev = defaultdict(list)
    syncs, dls, compiles, graphs, runtime = [], [], Counter(), 0, 0
    async_waits = []
    dtypes = Counter()
    names = Counter()
    launches = 0
    kernels = []
    host_lo, host_hi = None, None
    for e in ev:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        try:
            ts = float(e.get("ts", 0)); du = float(e.get("dur", 0) or 0)
        except Exception:
            continue
        cat = e.get("cat", ""); n = str(e.get("name", ""))
        if cat in GPU_CATS:
            dev = (e.get("args") or {}).get("device", e.get("pid"))
            gpu_by_dev[dev].append((ts, ts + du))
            if is_comm(n):
                comm_by_dev[dev].append((ts, ts + du))
            else:
                noncomm_by_dev[dev].append((ts, ts + du))
            if cat in ("kernel", "Kernel"):
                kernels.append(du)
            continue
        if host_lo is None or ts < host_lo:
            host_lo = ts
        if host_hi is None or ts + du > host_hi:
            host_hi = ts + du
        if n.startswith("ProfilerStep#") and cat != "gpu_user_annotation":
            steps.append((ts, ts + du))
        if cat in ("cuda_runtime", "cuda_driver", "Runtime"):
            runtime += 1
            if "Launch" in n or "launch" in n.lower():
                launches += 1
            if n in SYNC_NAMES:
                syncs.append((ts, ts + du))
            if n in ("cudaMemcpyAsync", "hipMemcpyAsync") and du >= 20:
                async_waits.append((ts, ts + du))
            if "GraphLaunch" in n:
                graphs += 1
        if n.startswith("enumerate(DataLoader)"):
            dls.append((ts, ts + du))
        for k in ("Torch-Compiled Region", "CompiledFunction", "CompiledFxGraph",
                  "TorchDynamo Cache Lookup", "autotune", "Inductor", "compile_fx"):
            if k in n:
                compiles[k] += 1
        if cat == "cpu_op" and n in ("aten::mm", "aten::addmm", "aten::bmm", "aten::linear",
                                     "aten::matmul", "aten::convolution", "aten::_convolution",
                                     "aten::baddbmm", "aten::_scaled_dot_product_flash_attention",
                                     "aten::scaled_dot_product_attention"):
            t = (e.get("args") or {}).get("Input type")
            if t:
                dtypes[str(t[0]) if isinstance(t, list) and t else str(t)] += 1
    if steps:
        window = (min(s for s, _ in steps), max(e for _, e in steps))
    else:
        allg = [x for v in gpu_by_dev.values() for x in v]
        if allg:
            window = (min(s for s, _ in allg), max(e for _, e in allg))
        else:
            window = (host_lo or 0, host_hi or 1)
    lo, hi = window
    sync_t = length(union(clip(syncs, lo, hi)))
    dl_t = length(union(clip(dls, lo, hi)))
    short = sum(1 for k in kernels if k < 10)
    aw = length(union(clip(async_waits, lo, hi)))
    extra = dict(steps=len(steps), kernels=len(kernels),
                 async_copy_wait=round(aw / max(hi - lo, 1), 3),
                 short_kernels=round(short / len(kernels), 2) if kernels else None,
                 mean_kernel_us=round(sum(kernels) / len(kernels), 1) if kernels else None,
                 launches=launches, graph_launches=graphs, compile=dict(compiles),
                 mm_dtypes=dict(dtypes.most_common(4)),
                 devices=len(gpu_by_dev), comm_kernels=sum(len(v) for v in comm_by_dev.values()))
    if steps and len(steps) > 1:
        extra["step_ms"] = [round((e - s) / 1e3, 2) for s, e in sorted(steps)]
    return summarize(window, gpu_by_dev, comm_by_dev, sync_t, dl_t, extra)


def nsys(path):
    global noncomm_by_dev
    db = sqlite3.connect(path)
    tables = {r[0] for r in db.execute("select name from sqlite_master where type='table'")}
    gpu_by_dev, comm_by_dev = defaultdict(list), defaultdict(list)
    noncomm_by_dev = defaultdict(list)
    names = {}
    if "StringIds" in tables:
        names = dict(db.execute("select id, value from StringIds"))
    kernels = []
    for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
        if t not in tables:
            continue
        cols = [r[1] for r in db.execute(f"pragma table_info({t})")]
        namecol = "shortName" if "shortName" in cols else ("demangledName" if "demangledName" in cols else None)
        q = f"select start, end, deviceId{', ' + namecol if namecol else ''} from {t}"
        for row in db.execute(q):
            s, e, dev = row[0] / 1e3, row[1] / 1e3, row[2]
            gpu_by_dev[dev].append((s, e))
            nm = names.get(row[3], "") if namecol else ""
            if is_comm(str(nm)):
                comm_by_dev[dev].append((s, e))
            else:
                noncomm_by_dev[dev].append((s, e))
            if t.endswith("KERNEL"):
                kernels.append(e - s)
    syncs, launches, rt = [], 0, 0
    if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:
        for s, e, nid in db.execute("select start, end, nameId from CUPTI_ACTIVITY_KIND_RUNTIME"):
            n = names.get(nid, "")
            rt += 1
            base = n.split("_v")[0]
            if base in SYNC_NAMES:
                syncs.append((s / 1e3, e / 1e3))
            if "Launch" in n:
                launches += 1
    allg = [x for v in gpu_by_dev.values() for x in v]
    if allg:
        window = (min(s for s, _ in allg), max(e for _, e in allg))
    else:
        window = (0, 1)
    lo, hi = window
    sync_t = length(union(clip(syncs, lo, hi)))
    short = sum(1 for k in kernels if k < 10)
    extra = dict(kernels=len(kernels), runtime_calls=rt, launches=launches,
                 short_kernels=round(short / len(kernels), 2) if kernels else None,
                 mean_kernel_us=round(sum(kernels) / len(kernels), 1) if kernels else None,
                 devices=len(gpu_by_dev), comm_kernels=sum(len(v) for v in comm_by_dev.values()))
    return summarize(window, gpu_by_dev, comm_by_dev, sync_t, 0, extra)


for p in sys.argv[1:]:
    try:
        r = nsys(p) if p.endswith(".sqlite") else kineto(p)
    except Exception as ex:  # noqa: BLE001
        r = {"error": repr(ex)[:200]}
    print(p.split("/corpus/")[-1], json.dumps(r), flush=True)
