"""A torch.compile'd model with graph breaks, profiled on CPU (a real capture with several
Torch-Compiled Region ranges per step and eager Python between them).

    python samples/make_torch_cpu_compile_graph_breaks.py OUT.json
"""

import sys

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, schedule

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 256))
        self.b = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 256))
        self.c = nn.Linear(256, 10)

    def forward(self, x):
        x = self.a(x)
        torch._dynamo.graph_break()  # a break the user would find with fullgraph=True
        for _ in range(20):  # eager work between the compiled graphs
            x = x * 1.0001
        torch._dynamo.graph_break()
        x = self.b(x)
        return self.c(x)


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
step = torch.compile(model)
x = torch.randn(64, 256)
y = torch.randint(0, 10, (64,))
for _ in range(3):  # compile outside the capture
    opt.zero_grad()
    nn.functional.cross_entropy(step(x), y).backward()
    opt.step()
with profile(
    activities=[ProfilerActivity.CPU],
    schedule=schedule(wait=1, warmup=1, active=4),
    record_shapes=False,
) as p:
    for _ in range(6):
        opt.zero_grad()
        nn.functional.cross_entropy(step(x), y).backward()
        opt.step()
        p.step()
p.export_chrome_trace(sys.argv[1] if len(sys.argv) > 1 else "cpu_graph_breaks.json")
print("ok")
