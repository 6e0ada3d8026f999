"""A host-side change, profiled on CPU: the same small MLP trained with a per-sample Python loop
loss (`loop`) or with the vectorized loss (`vector`). Recorded with profile_memory=True and
record_shapes=True, so the captures carry CPU memory events and the input shapes.

    python samples/make_torch_cpu_loss_loop.py loop|vector OUT.json [BATCH]
"""

import sys

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, schedule

torch.manual_seed(0)
torch.set_num_threads(1)

mode, out = sys.argv[1], sys.argv[2]
batch = int(sys.argv[3]) if len(sys.argv) > 3 else 32

model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(batch, 256)
y = torch.randint(0, 10, (batch,))


def loss_of(logits):
    if mode == "loop":
        # one sample at a time, in Python: the slow way
        total = logits.new_zeros(())
        for i in range(logits.shape[0]):
            total = total + nn.functional.cross_entropy(logits[i : i + 1], y[i : i + 1])
        return total / logits.shape[0]
    return nn.functional.cross_entropy(logits, y)


def step():
    opt.zero_grad()
    loss_of(model(x)).backward()
    opt.step()


for _ in range(3):
    step()
with profile(
    activities=[ProfilerActivity.CPU],
    schedule=schedule(wait=1, warmup=1, active=6),
    record_shapes=True,
    profile_memory=True,
    on_trace_ready=lambda p: p.export_chrome_trace(out),
) as p:
    for _ in range(8):
        step()
        p.step()
