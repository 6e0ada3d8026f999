"""The Parquet tables of `stallscope analyze --format parquet`, read back with DuckDB.

Run by tests/parquet.rs: `python duckdb_queries.py --bin STALLSCOPE --corpus PARAM_DIR`.
Two jobs are written: the eight DLRM ranks of the corpus (job `dlrm-a`), and a copy of them
in which rank 5's all-reduce kernels last 500 µs longer each (job `dlrm-b`). Then the
queries a platform team would write run over the files, and every figure is checked against
the JSON reports of the same inputs (`--format json`, per rank and per folder). Prints
`PARQUET DUCKDB OK` at the end; any mismatch raises.
"""

import argparse
import functools
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

import duckdb

GROWN_RANK = 5
GROWN_US = 500
GROWN_KERNEL = "ncclKernel_AllReduce"


def run(binary, *args):
    out = subprocess.run([binary, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{binary} {' '.join(args)}: exit {out.returncode}\n{out.stderr}")
    return out.stdout


@functools.lru_cache(maxsize=None)
def report(binary, path):
    return json.loads(run(binary, "analyze", path, "--format", "json", "-q"))


def ns(us):
    return round(us * 1000)


def make_jobs(corpus, tmp):
    """The two folders: the DLRM ranks, and the same with rank 5's all-reduces longer."""
    a = os.path.join(tmp, "dlrm-a")
    b = os.path.join(tmp, "dlrm-b")
    os.makedirs(a)
    os.makedirs(b)
    names = sorted(n for n in os.listdir(corpus) if "dlrm_kineto__worker" in n)
    assert len(names) == 8, names
    for n in names:
        os.symlink(os.path.join(corpus, n), os.path.join(a, n))
        if f"worker{GROWN_RANK}_" in n:
            with gzip.open(os.path.join(corpus, n), "rt") as f:
                t = json.load(f)
            grown = 0
            for e in t["traceEvents"]:
                if e.get("cat") == "kernel" and e.get("name", "").startswith(GROWN_KERNEL):
                    e["dur"] = e["dur"] + GROWN_US
                    grown += 1
            assert grown > 0, "no all-reduce kernel to grow"
            with gzip.open(os.path.join(b, n), "wt") as f:
                json.dump(t, f)
        else:
            shutil.copy(os.path.join(corpus, n), os.path.join(b, n))
    return a, b


def check_tables_against_reports(binary, folder, pq, job):
    """Row by row, each rank's tables equal its own JSON report."""
    for n in sorted(os.listdir(folder)):
        r = report(binary, os.path.join(folder, n))
        rank = r["source"]["distributed"]["rank"]

        def rows(table, cols, order):
            return duckdb.sql(
                f"SELECT {cols} FROM '{pq}/{table}.parquet' "
                f"WHERE job = '{job}' AND rank = {rank} ORDER BY {order}"
            ).fetchall()

        steps = rows("steps", "step, duration_ns, kernel_ns, communication_ns", "step_index")
        want = [
            (s["name"], ns(s["duration_us"]), ns(s["breakdown_us"]["kernel"]),
             ns(s["breakdown_us"]["communication"]))
            for s in r["steps"]
        ]
        assert steps == want, (n, steps, want)
        kernels = rows("kernels", "name, calls, total_ns, max_ns", "total_ns DESC, name")
        # the Parquet kernels table holds kernel rows only; the report's copy and fill rows
        # (those with a `copy` member) have no place in it
        want = sorted(
            ((k["name"], k["calls"], ns(k["total_us"]), ns(k["max_us"]))
             for k in r["kernels"] if "copy" not in k),
            key=lambda k: (-k[2], k[0]),
        )
        assert kernels == want, n
        colls = rows("collectives", "name, total_ns", "total_ns DESC, name")
        want = sorted(
            ((k["name"], ns(k["total_us"])) for k in r["kernels"]
             if k["category"] == "communication"),
            key=lambda k: (-k[1], k[0]),
        )
        assert colls and colls == want, (n, colls, want)
        ops = rows("ops", "count(*), sum(device_self_ns), sum(host_total_ns)", "1")
        assert ops == [(
            len(r["ops"]),
            sum(ns(o["device_self_us"]) for o in r["ops"]),
            sum(ns(o["host_total_us"]) for o in r["ops"]),
        )], n
        findings = rows("findings", "id, recoverable_ns", "position")
        want = [(f["id"], ns(f["recoverable_us"])) for f in r["findings"]]
        assert findings == want, (n, findings, want)
        tl = rows("gpu_timeline", "device, exposed_comm_ns, idle_ns", "device")
        want = [(t["device"], ns(t["exposed_comm_us"]), ns(t["idle_us"])) for t in r["gpu_timeline"]]
        assert tl == want, n


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--corpus", required=True, help="the corpus' param folder")
    args = p.parse_args()
    binary = args.bin
    tmp = tempfile.mkdtemp(prefix="stallscope-parquet-")
    try:
        a, b = make_jobs(args.corpus, tmp)
        pa, pb = os.path.join(tmp, "pq-a"), os.path.join(tmp, "pq-b")
        run(binary, "analyze", a, "--format", "parquet", "-o", pa, "-q")
        run(binary, "analyze", b, "--format", "parquet", "--job", "dlrm-b", "-o", pb, "-q")
        folder_a = report(binary, a)

        # every file says its schema version
        for t in ("steps", "gpu_timeline", "kernels", "ops", "collectives", "findings", "ranks"):
            kv = dict(duckdb.sql(
                f"SELECT decode(key), decode(value) FROM parquet_kv_metadata('{pa}/{t}.parquet')"
            ).fetchall())
            assert kv["schema_version"] == "1" and kv["table"] == t and kv["job"] == "dlrm-a", kv

        # 1. the ten slowest ranks of a job, from the steps table
        slowest = duckdb.sql(
            f"SELECT rank, avg(duration_ns) AS step_ns FROM '{pa}/steps.parquet' "
            "WHERE job = 'dlrm-a' GROUP BY rank ORDER BY step_ns DESC, rank LIMIT 10"
        ).fetchall()
        want = sorted(
            ((k["rank"], k["step_time_us"]) for k in folder_a["ranks"]["ranks"]),
            key=lambda k: (-k[1], k[0]),
        )
        assert [r for r, _ in slowest] == [r for r, _ in want], (slowest, want)
        for (_, got), (_, w) in zip(slowest, want):
            assert abs(got / 1000 - w) < 1e-6, (got, w)
        assert slowest[0][0] == folder_a["ranks"]["slowest_rank"]
        # the same from the ranks table
        ranks = duckdb.sql(
            f"SELECT rank, step_time_ns, exposed_comm_ns FROM '{pa}/ranks.parquet' "
            "ORDER BY step_time_ns DESC, rank LIMIT 10"
        ).fetchall()
        by_rank = {k["rank"]: k for k in folder_a["ranks"]["ranks"]}
        assert [r for r, _, _ in ranks] == [r for r, _ in want]
        for r, step, comm in ranks:
            assert step == ns(by_rank[r]["step_time_us"])
            assert comm == ns(by_rank[r]["exposed_comm_us"])
        print("ten slowest ranks:", [(r, round(s / 1e6, 3)) for r, s in slowest])

        # cross-rank findings: rank null, scope job
        job_findings = duckdb.sql(
            f"SELECT id FROM '{pa}/findings.parquet' WHERE scope = 'job' AND rank IS NULL "
            "ORDER BY position"
        ).fetchall()
        assert [i for (i,) in job_findings] == [f["id"] for f in folder_a["ranks"]["findings"]]

        # every rank's rows equal its own report
        check_tables_against_reports(binary, a, pa, "dlrm-a")
        check_tables_against_reports(binary, b, pb, "dlrm-b")

        # 2. the kernels whose time grew most between two jobs
        grown = duckdb.sql(
            f"""
            SELECT name,
                   coalesce(sum(total_ns) FILTER (WHERE job = 'dlrm-b'), 0)
                 - coalesce(sum(total_ns) FILTER (WHERE job = 'dlrm-a'), 0) AS grown_ns
            FROM read_parquet(['{pa}/kernels.parquet', '{pb}/kernels.parquet'])
            GROUP BY name ORDER BY grown_ns DESC, name LIMIT 5
            """
        ).fetchall()
        totals = {}
        for job, folder in (("a", a), ("b", b)):
            for n in os.listdir(folder):
                for k in report(binary, os.path.join(folder, n))["kernels"]:
                    if "copy" in k:
                        continue  # copy and fill rows are not in the kernels table
                    t = totals.setdefault(k["name"], {"a": 0, "b": 0})
                    t[job] += ns(k["total_us"])
        want = sorted(((n, t["b"] - t["a"]) for n, t in totals.items()), key=lambda x: (-x[1], x[0]))
        assert grown == want[:5], (grown, want[:5])
        assert grown[0][0].startswith(GROWN_KERNEL) and grown[0][1] > 0, grown
        # only rank 5 changed: its all-reduce calls × 500 µs, no more (a kernel longer than
        # the window would be cut; these are not)
        calls = duckdb.sql(
            f"SELECT sum(calls) FROM '{pa}/kernels.parquet' "
            f"WHERE rank = {GROWN_RANK} AND name = ?", params=[grown[0][0]]
        ).fetchall()[0][0]
        print(f"grew most: {grown[0][0][:50]} +{grown[0][1] / 1e3:.0f} us ({calls} calls)")
        assert grown[0][1] == calls * GROWN_US * 1000, (grown[0][1], calls)

        # 3. a single trace: rank from distributedInfo, job from the file name
        one = sorted(os.listdir(a))[3]
        p1 = os.path.join(tmp, "pq-one")
        run(binary, "analyze", os.path.join(a, one), "--format", "parquet", "-o", p1, "-q")
        r1 = report(binary, os.path.join(a, one))
        got = duckdb.sql(f"SELECT DISTINCT job, rank FROM '{p1}/kernels.parquet'").fetchall()
        assert got == [(one, r1["source"]["distributed"]["rank"])], got
        assert not os.path.exists(os.path.join(p1, "ranks.parquet"))
        print("PARQUET DUCKDB OK")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
