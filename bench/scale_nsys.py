"""A large Nsight Systems export for benchmarks, made from a corpus export.

    python3 bench/scale_nsys.py SRC.sqlite DST.sqlite DOUBLINGS

Copies SRC to DST and doubles the rows of its CUDA (runtime, kernel, sync, memcpy) and OS
(OSRT_API, SCHED_EVENTS, COMPOSITE_EVENTS, SAMPLING_CALLCHAINS) tables DOUBLINGS times, each
copy shifted past the previous ones in time, correlation ids and sample ids. From pipit's
cloverleaf export (2.1 MB), 10 doublings make an 823 MB export of 3.1 M runtime calls, 1.3 M
kernels, 1.9 M OS calls, 1.3 M context switches and 1.6 M CPU samples (docs/performance.md).
The copies restart the program, so the analysis sees its start-up 1,024 times: a throughput
input, not a workload to diagnose. Never commit the output.
"""

from __future__ import annotations

import shutil
import sqlite3
import sys

TABLES = (
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "OSRT_API",
    "SCHED_EVENTS",
    "COMPOSITE_EVENTS",
    "SAMPLING_CALLCHAINS",
)


def main() -> None:
    src, dst, doublings = sys.argv[1], sys.argv[2], int(sys.argv[3])
    shutil.copy(src, dst)
    con = sqlite3.connect(dst)

    def cols(table: str) -> list[str]:
        return [r[1] for r in con.execute(f'pragma table_info("{table}")')]

    tables = [t for t in TABLES if cols(t)]
    timed = [t for t in tables if "start" in cols(t)]
    lo = min(con.execute(f'select min(start) from "{t}"').fetchone()[0] for t in timed)
    hi = max(
        con.execute(f'select max({"end" if "end" in cols(t) else "start"}) from "{t}"').fetchone()[
            0
        ]
        for t in timed
    )
    span = hi - lo + 1_000_000
    corr = 1_000_000
    ids = (con.execute("select max(id) from COMPOSITE_EVENTS").fetchone()[0] or 0) + 1
    for i in range(doublings):
        k = 1 << i
        for t in tables:
            names = cols(t)

            listed = ", ".join(f'"{c}"' for c in names)
            shifts = {"start": span * k, "end": span * k, "correlationId": corr * k}
            if t in ("COMPOSITE_EVENTS", "SAMPLING_CALLCHAINS"):
                shifts["id"] = ids * k
            picked = ", ".join(f'"{c}" + {shifts[c]}' if c in shifts else f'"{c}"' for c in names)
            con.execute(f'INSERT INTO "{t}" ({listed}) SELECT {picked} FROM "{t}"')
        con.commit()
    con.execute("VACUUM")
    con.close()


if __name__ == "__main__":
    main()
