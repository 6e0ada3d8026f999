"""Real multi-process captures for tests/ranks_gloo.rs: torch on CPU, the gloo backend,
DistributedDataParallel over a tiny MLP, a torch.profiler schedule, one Kineto trace per rank.

    python3 tests/gloo_ranks.py OUT_DIR SCENARIO [RANKS]

SCENARIO:
  sleep    rank 1 sleeps DELAY_MS (30) in its forward at every step
  dataset  rank 2's dataset sleeps DELAY_MS before every batch (num_workers=0)
  balanced every rank does the same work
  uneven   rank 1's batches hold 3x the samples (96 against 32; record_shapes=True), and its
           forward's "work" (the BASE_MS sleep) grows with the batch: load imbalance that the
           operators' input shapes show (tests/ranks_gloo.rs)
  hiccup   rank 1 sleeps HICCUP_MS (120) once, after its optimizer step in the third profiled
           step: its own step is the outlier there; the others wait for it at the next step's
           all-reduce, so theirs is the outlier one step later (tests/ranks_gloo.rs: one window)
Every rank's forward also sleeps BASE_MS (20): equal work that does not load the CPU.

Writes OUT_DIR/rank{r}.pt.trace.json for every rank and prints `ok`. Keeps the work small
(2 cores shared): 3 ranks by default, 1 thread each, 4 profiled steps.
"""

import os
import socket
import sys
import time

DELAY_MS = 30.0
# every rank's forward sleeps this long: equal "work" that does not compete for the CPU, so that
# the balanced control stays balanced on a loaded machine (2 cores, other jobs)
BASE_MS = 20.0
WAIT, WARMUP, ACTIVE = 1, 1, 4
HICCUP_MS = 120.0
# the step (0-based loop index) after whose optimizer step rank 1 sleeps in `hiccup`
HICCUP_STEP = WAIT + WARMUP + 2


def worker(rank, world, port, out, scenario):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.profiler import ProfilerActivity, profile, schedule

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)

    slow_forward = scenario == "sleep" and rank == 1
    slow_data = scenario == "dataset" and rank == 2
    hiccup = scenario == "hiccup" and rank == 1
    # samples per batch: 3x on rank 1 in `uneven`
    batch = 96 if scenario == "uneven" and rank == 1 else 32

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Sequential(
                torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)
            )

        def forward(self, x):
            # equal work per sample: the sleep grows with the batch
            work = BASE_MS * x.shape[0] / 32
            time.sleep((work + (DELAY_MS if slow_forward else 0.0)) / 1000.0)
            return self.body(x)

    class Batches(torch.utils.data.Dataset):
        def __len__(self):
            return 64

        def __getitem__(self, i):
            if slow_data:
                time.sleep(DELAY_MS / 1000.0)
            g = torch.Generator().manual_seed(i)
            return torch.randn(batch, 64, generator=g), torch.randint(0, 10, (batch,), generator=g)

    model = DDP(Net())
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(Batches(), batch_size=None, num_workers=0)
    path = os.path.join(out, f"rank{rank}.pt.trace.json")

    def ready(p):
        p.export_chrome_trace(path)

    steps = WAIT + WARMUP + ACTIVE
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1),
        on_trace_ready=ready,
        record_shapes=scenario == "uneven",
    ) as prof:
        for i, (x, y) in enumerate(loader):
            if i == steps:
                break
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            if hiccup and i == HICCUP_STEP:
                time.sleep(HICCUP_MS / 1000.0)
            prof.step()
    dist.barrier()
    dist.destroy_process_group()


def main():
    out, scenario = sys.argv[1], sys.argv[2]
    world = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    assert scenario in ("sleep", "dataset", "balanced", "hiccup", "uneven"), scenario
    os.makedirs(out, exist_ok=True)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(world, port, out, scenario), nprocs=world, join=True)
    for r in range(world):
        assert os.path.exists(os.path.join(out, f"rank{r}.pt.trace.json")), r
    print("ok")


if __name__ == "__main__":
    main()
