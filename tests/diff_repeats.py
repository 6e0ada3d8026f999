"""Repeated captures for `stallscope diff --before A1 A2 A3 --after B1 B2 B3` (tests/diff_repeats.rs).

The same small MLP trained on the CPU with one thread. One process is one run of the
experiment: it captures, in an order that rotates with RUN so that no capture always comes
first,

* `control_a_RUN.json` and `control_b_RUN.json`: the program, twice (the two sides of a control);
* `extra_RUN.json`: the program with one extra matmul per step (a 1024 x 1024 by 1024 x 1024 product
  inside the step, outside the model): the injected regression;
* with BATCH64, `batch64_RUN.json`: the program with a batch of 64 instead of 32.

Each side's runs then come from different processes (what makes CI runs differ), while the two
sides of a run are captured moments apart. Recorded with record_shapes=True, so every capture
carries its first layer's input shape (the batch).

    python tests/diff_repeats.py OUTDIR RUN [BATCH64]
"""

import os
import sys

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, schedule

torch.set_num_threads(1)
out, run = sys.argv[1], int(sys.argv[2])
with_batch64 = len(sys.argv) > 3


def capture(path, extra, batch):
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(batch, 512)
    y = torch.randint(0, 10, (batch,))
    a = torch.randn(1024, 1024)

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        if extra:
            loss = loss + torch.mm(a, a).mean() * 0.0
        loss.backward()
        opt.step()

    for _ in range(5):
        step()
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=1, warmup=2, active=20),
        record_shapes=True,
        on_trace_ready=lambda p: p.export_chrome_trace(path),
    ) as p:
        for _ in range(23):
            step()
            p.step()


jobs = [("control_a", False, 32), ("control_b", False, 32), ("extra", True, 32)]
if with_batch64:
    jobs.append(("batch64", False, 64))
k = run % len(jobs)
for name, extra, batch in jobs[k:] + jobs[:k]:
    capture(os.path.join(out, f"{name}_{run}.json"), extra, batch)
print("ok")
