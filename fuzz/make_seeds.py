"""Writes the fuzz seed corpora (fuzz/seeds/TARGET/) and dictionaries (fuzz/dict/) from the
shared corpus: small files and cut-down pieces of larger ones, a few KB each.

Usage: python3 fuzz/make_seeds.py [CORPUS] [STALLSCOPE_BINARY]
(defaults: $STALLSCOPE_CORPUS, else ../shared/corpus and target/release/stallscope, for the report seeds).
The committed seeds were written by this script; run it again only to renew them.
"""

import csv
import gzip
import io
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(
    sys.argv[1] if len(sys.argv) > 1 else os.environ.get("STALLSCOPE_CORPUS", ROOT.parent / "shared" / "corpus")
)
BINARY = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "target" / "release" / "stallscope"
SEEDS = ROOT / "fuzz" / "seeds"
DICTS = ROOT / "fuzz" / "dict"

# Kineto traces to cut down (corpus-relative), and the repository's own samples.
KINETO = [
    "hta/tests__data__call_stack__backward_thread.json",
    "particle_transformer/profiler_trace.json",
    "tbprof/docs__traces__before_fix_trace.json",
    "hta/tests__data__trace_compare__base__base.json.gz",
    "hta/tests__data__critical_path__cuda_event_sync__event_sync_trace.json.gz",
    "hta/tests__data__cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "hta/tests__data__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "tracelens/tests__traces__torch_compile_triton__trace.json.gz",
    "hta/tests__data__triton_example__triton_example.json.gz",
]
SAMPLES = ["h100_kineto_2026_format.json", "resnet50_v100_num_workers_0.pt.trace.json.gz"]
NSYS = [
    "nsys/sqlite/nsysai_healthy_1pct_TRIMMED_nsys2026.1.sqlite",
    "nsys/sqlite/nsysai_fastvideo_2xh100_nsys2026.2.sqlite",
    "nsys/sqlite/pipit_saxpy-mpi-cuda_a100_nsys2022.2.sqlite",
    "nsys/sqlite/nsysai_mock_rtx3080_nsys2026.1.sqlite",
    "nsys/sqlite/generated_nvtx_nested_cpuonly_lazyfalse_fullschema_nsys2023.4.sqlite",
    "nsys/sqlite/pipit_cloverleaf-cuda_4xa100_nsys2024.5.sqlite",
]
NCU = [
    "ncu/csv/esmm_gemm_a10g_page-details.csv",
    "ncu/csv/esmm_gemm_a10g_page-raw_units-auto.csv",
    "ncu/csv/esmm_gemm_a10g_page-raw_units-base.csv",
    "ncu/csv/leleucas_bert_attention_a100_ncu2022_details_with_PROF_preamble.csv",
    "ncu/csv/leleucas_dropout_a100_ncu2022_metrics_only.csv",
]
REPORTS = [
    "hta/tests__data__critical_path__cuda_event_sync__event_sync_trace.json.gz",
    "tbprof/docs__traces__before_fix_trace.json",
    "nsys/sqlite/nsysai_healthy_1pct_TRIMMED_nsys2026.1.sqlite",
]


def read_bytes(path):
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def write(target, name, data):
    d = SEEDS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


def short(name):
    """A file name's stem without the corpus's long prefixes."""
    stem = name.split("/")[-1]
    for ext in (".json.gz", ".json", ".sqlite", ".csv"):
        stem = stem.removesuffix(ext)
    return re.sub(r"^tests__(data|traces)__", "", stem)[:40]


def cut_kineto(trace, budget=3000):
    """A trace of the same header with a few events of every kind, about `budget` bytes."""
    events = trace.get("traceEvents", [])
    meta = [e for e in events if e.get("ph") == "M"][:4]
    timed = sorted(
        (e for e in events if e.get("ph") != "M" and "ts" in e),
        key=lambda e: float(e["ts"]) if isinstance(e["ts"], (int, float, str)) else 0.0,
    )
    # the first ProfilerStep and what starts inside it, else the first events
    kept, per_cat = [], {}
    for e in timed:
        cat = str(e.get("cat")) + str(e.get("ph"))
        if per_cat.get(cat, 0) >= 3:
            continue
        per_cat[cat] = per_cat.get(cat, 0) + 1
        kept.append(e)
        if sum(len(json.dumps(x)) for x in kept) > budget:
            break
    head = {}
    for k, v in trace.items():
        if k == "traceEvents":
            continue
        # one device, three ranks of a process group: the shape, not the bulk
        head[k] = v[:1] if k == "deviceProperties" and isinstance(v, list) else shrink(v)
    # Kineto's own layout: the header, then one event a line
    lines = ["{"]
    for k, v in head.items():
        lines.append(f"  {json.dumps(k)}: {json.dumps(v)},")
    lines.append('  "traceEvents": [')
    body = [json.dumps(e) for e in meta + kept]
    lines.append(",\n".join("  " + b for b in body))
    lines.append("]}")
    return "\n".join(lines).encode()


def kineto_seeds():
    for rel in KINETO + [f"samples/{s}" for s in SAMPLES]:
        path = ROOT / rel if rel.startswith("samples/") else CORPUS / rel
        trace = json.loads(read_bytes(path))
        cut = cut_kineto(trace)
        name = short(rel)
        # mode byte: see targets::KinetoMode (0 chain, 2|8 read+2 threads, 3 gzip, 1|16 scanned)
        write("kineto", f"{name}.chain", b"\x00" + cut)
        write("kineto", f"{name}.read", b"\x0a" + cut)
        write("kineto", f"{name}.gz", b"\x03" + cut)
        write("kineto", f"{name}.scan", b"\x11" + cut)
        # slice mode byte: 0 auto, 1 all steps, 5 all steps and gzip
        write("slice", f"{name}.auto", b"\x00" + cut)
        write("slice", f"{name}.all.gz", b"\x05" + cut)


NAME_COLS = {"demangledName", "shortName", "mangledName", "nameId", "textId", "typeId"}


def nsys_seeds(schema_tables):
    for rel in NSYS:
        db = sqlite3.connect(CORPUS / rel)
        present = {n for (n,) in db.execute("select name from sqlite_master where type='table'")}
        out, ids = [], set()
        for table in schema_tables:
            if table not in present or table == "StringIds":
                continue
            cols = [c[1] for c in db.execute(f'pragma table_info("{table}")')]
            rows = db.execute(f'select * from "{table}" limit 6').fetchall()
            out.append(f"@{table}")
            for r in rows:
                for c, v in zip(cols, r):
                    if c in NAME_COLS and isinstance(v, int):
                        ids.add(v)
                out.append("\t".join("" if v is None else str(v) for v in r))
        if "StringIds" in present and ids:
            out.append("@StringIds")
            marks = ",".join("?" * len(ids))
            for i, v in db.execute(f"select id, value from StringIds where id in ({marks})", list(ids)):
                out.append(f"{i}\t{v}")
        text = "\n".join(out).encode()
        write("nsys", short(rel), text[:6000])


def ncu_seeds():
    # the columns the reader names (a raw-page CSV has one column per metric, thousands)
    known = set(re.findall(r'"([^"]+)"', (ROOT / "src/ingest/ncu.rs").read_text()))
    for rel in NCU:
        text = (CORPUS / rel).read_text(errors="replace")
        rows = list(csv.reader(io.StringIO(text)))
        header = next((i for i, r in enumerate(rows) if r and r[0] == "ID"), 0)
        if len(rows[header]) > 40:
            keep = [i for i, c in enumerate(rows[header]) if i < 12 or c in known]
            rows = rows[:header] + [[r[i] for i in keep if i < len(r)] for r in rows[header:]]
        out = io.StringIO()
        csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows[: header + 30])
        write("ncu", short(rel), out.getvalue().encode()[:6000])


def shrink(v):
    """Every list cut to its first three items, recursively."""
    if isinstance(v, list):
        return [shrink(x) for x in v[:3]]
    if isinstance(v, dict):
        return {k: shrink(x) for k, x in v.items()}
    return v


def report_seeds():
    for rel in REPORTS:
        out = subprocess.run(
            [str(BINARY), "analyze", str(CORPUS / rel), "--format", "json", "--quiet"],
            check=True,
            capture_output=True,
        ).stdout
        rep = shrink(json.loads(out))
        write("report", short(rel), json.dumps(rep, indent=1).encode())


def quote(token):
    """An AFL dictionary value: printable ASCII as is, `"`, `\\` and the rest escaped."""
    out = ""
    for b in token.encode():
        c = chr(b)
        out += c if 32 <= b < 127 and c not in '"\\' else f"\\x{b:02x}"
    return f'"{out}"'


def write_dict(name, tokens):
    DICTS.mkdir(parents=True, exist_ok=True)
    tokens = sorted({t for t in tokens if 0 < len(t.encode()) <= 128})
    text = "".join(f"t{i}={quote(t)}\n" for i, t in enumerate(tokens))
    (DICTS / f"{name}.dict").write_text(f"# {name} target: the format's keys and values\n{text}")


def kineto_dict():
    keys, values = set(), set()
    for rel in KINETO:
        trace = json.loads(read_bytes(CORPUS / rel))
        keys.update(trace.keys())
        for e in trace.get("traceEvents", []):
            keys.update(e.keys())
            keys.update((e.get("args") or {}).keys())
            for k in ("ph", "cat"):
                if isinstance(e.get(k), str):
                    values.add(e[k])
    tokens = {f'"{k}":' for k in keys} | {f'"{v}"' for v in values}
    tokens |= {"ProfilerStep#", '"ProfilerStep#1"', "cudaLaunchKernel", "cudaStreamSynchronize"}
    tokens |= {"cudaDeviceSynchronize", "cudaMemcpyAsync", "Memcpy HtoD", "Memset", "[", "]", "{", "}"}
    tokens |= {"1e308", "-1", "18446744073709551616", "null", "true", "NaN", "\\u0000", '"\\ud800"'}
    write_dict("kineto", tokens)


def nsys_dict(schema_tables, schema_text):
    tokens = {f"@{t}\n" for t in schema_tables}
    tokens |= set(re.findall(r"[(,] (\w+) [A-Z]", schema_text.replace("(", "( ")))
    tokens |= {"\t", "NULL", "-1", "9223372036854775807", "-9223372036854775808", "0.5"}
    write_dict("nsys", tokens)


def ncu_dict():
    tokens = set()
    for rel in NCU:
        for line in (CORPUS / rel).read_text(errors="replace").splitlines()[:200]:
            tokens.update(f'"{c}"' for c in re.findall(r'"([^"]{1,60})"', line))
    tokens |= {"==PROF==", '","', "\n", "n/a", "inf", "-nan", "1,234.5"}
    write_dict("ncu", sorted(tokens)[:2000])


def report_dict():
    tokens = set()
    for p in sorted((SEEDS / "report").iterdir()):
        tokens.update(f'"{k}":' for k in re.findall(r'"([A-Za-z_][\w ]*)":', p.read_text()))
    tokens |= {"null", "-1", "1e400", "NaN", "[]", "{}", '"schema_version": '}
    write_dict("report", tokens)


def main():
    schema_text = (ROOT / "fuzz" / "nsys_schema.sql").read_text()
    tables = re.findall(r"^CREATE TABLE (\w+)", schema_text, re.M)
    kineto_seeds()
    nsys_seeds(tables)
    ncu_seeds()
    report_seeds()
    kineto_dict()
    nsys_dict(tables, schema_text)
    ncu_dict()
    report_dict()


if __name__ == "__main__":
    main()
