"""Alternate release binaries on one trace and print the medians of their timing laps.

For a machine whose wall clock is too noisy for `bench/guard.sh`'s medians: each round runs
every binary once (`analyze TRACE --format json`, `STALLSCOPE_TIMINGS=1`), so slow spells of
the machine fall on all of them alike; the load, analyze and diagnose+report laps and their
sum are read per run, and the median and minimum over the rounds are printed.

    python3 bench/ab_phases.py [--rounds 7] [--one-core] [--trace T] BIN [BIN ...]

`--one-core` runs each binary under `taskset -c 0`. The trace defaults to the 1 GB benchmark
trace of `bench/run.sh` (`$STALLSCOPE_BENCH_DATA`, else `target/bench-data`, `dfi-1G.json`).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys

PHASES = ("load", "analyze", "diagnose+report")
LAP = re.compile(r"timing: (\S.*?) ([0-9.]+) s \(cpu")


def laps(binary: str, trace: str, one_core: bool) -> dict[str, float]:
    """The top-level timing laps of one run, in seconds."""
    cmd = [binary, "analyze", trace, "--format", "json"]
    if one_core:
        cmd = ["taskset", "-c", "0", *cmd]
    env = {**os.environ, "STALLSCOPE_TIMINGS": "1"}
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if p.returncode != 0:
        sys.exit(f"{binary}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    out = {}
    for line in p.stderr.splitlines():
        m = LAP.match(line)
        if m and m.group(1) in PHASES:
            out[m.group(1)] = float(m.group(2))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binaries", nargs="+", metavar="BIN")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--one-core", action="store_true")
    data = os.environ.get("STALLSCOPE_BENCH_DATA", "target/bench-data")
    ap.add_argument("--trace", default=os.path.join(data, "dfi-1G.json"))
    a = ap.parse_args()
    size = os.path.getsize(a.trace)
    runs: dict[str, list[dict[str, float]]] = {b: [] for b in a.binaries}
    for _ in range(a.rounds):
        for b in a.binaries:
            runs[b].append(laps(b, a.trace, a.one_core))
    cores = "one core" if a.one_core else "all cores"
    print(f"{a.trace} ({size:,} bytes), {a.rounds} rounds, {cores}")
    for b in a.binaries:
        print(f"== {b}")
        for ph in PHASES:
            v = [r[ph] for r in runs[b]]
            print(f"  {ph:16} median {statistics.median(v):.3f} s  min {min(v):.3f} s")
        tot = [sum(r[ph] for ph in PHASES) for r in runs[b]]
        med = statistics.median(tot)
        rate = size / med / 1e6
        print(f"  {'total':16} median {med:.3f} s  min {min(tot):.3f} s  ({rate:,.0f} MB/s)")


if __name__ == "__main__":
    main()
