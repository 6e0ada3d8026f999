"""A cold torch.compile first call profiled on CPU (a real capture of one-time start-up):
the profiler starts before the first call, so Dynamo tracing, AOTAutograd and Inductor's code
generation and C++ compile are inside it, then two warm calls follow (two steps).

    python samples/make_torch_cpu_cold_compile.py OUT.json
"""

import sys

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.Linear(256, 128))
step = torch.compile(model)
x = torch.randn(32, 128)
with profile(activities=[ProfilerActivity.CPU], with_stack=False) as prof:
    for _ in range(3):
        step(x)
        prof.step()
prof.export_chrome_trace(sys.argv[1])
