"""The capture helper end to end with a real torch (CPU): train, record, read back.

Needs torch; without it these tests skip, unless STALLSCOPE_REQUIRE_TORCH=1 (scripts/test
sets it), which makes them fail. ``python python/tests/test_capture.py DIR`` writes one such
trace to DIR (how samples/torch_cpu_mlp_two_phases.pt.trace.json.gz was made).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import stallscope

SAMPLE = (
    Path(__file__).resolve().parents[2] / "samples" / "torch_cpu_mlp_two_phases.pt.trace.json.gz"
)
PHASES = ("forward", "update")


def need_torch():
    if os.environ.get("STALLSCOPE_REQUIRE_TORCH") == "1":
        import torch

        return torch
    return pytest.importorskip("torch")


def train(out, steps=8, skip=2, warmup=1, active=3, **kwargs) -> stallscope.profile:
    """A small MLP trained for `steps` steps under stallscope.profile, with two phases: the
    forward pass (a context manager) and the update (a decorator)."""
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = torch.randn(64, 64), torch.randint(0, 10, (64,))

    @stallscope.phase("update")
    def update(loss):
        opt.zero_grad()
        loss.backward()
        opt.step()

    with stallscope.profile(skip=skip, warmup=warmup, active=active, out=out, **kwargs) as prof:
        for _ in range(steps):
            with stallscope.phase("forward"):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            update(loss)
            prof.step()
    return prof


def check_trace(path: Path, first_step: int, active: int) -> None:
    """The trace read back: `active` steps from ProfilerStep#first_step, both phases in each."""
    with gzip.open(path) as f:
        json.load(f)  # a complete gzip JSON trace
    r = stallscope.analyze(path, all_steps=True)
    assert r.window["steps"] == [f"ProfilerStep#{first_step + i}" for i in range(active)]
    assert len(r.steps) == active
    roots = {p["name"]: p for p in r.phases if p["depth"] == 0}
    for name in PHASES:
        assert roots[name]["calls"] == active, name
        assert roots[name]["cpu_total_us"] > 0
    # the optimizer's own annotation sits inside the update phase
    assert any(
        p["path"].startswith("update/") and p["name"].startswith("Optimizer.step") for p in r.phases
    )


def test_profile_writes_a_trace_that_reads_back_with_its_steps_and_phases(tmp_path, capsys):
    need_torch()
    prof = train(tmp_path / "traces", steps=8, skip=2, warmup=1, active=3)
    assert prof.steps == 8
    assert len(prof.traces) == 1
    trace = Path(prof.traces[0])
    assert trace.parent == tmp_path / "traces" and trace.name.endswith(".pt.trace.json.gz")
    check_trace(trace, first_step=3, active=3)
    # at the end: analyzed in-process, verdict and findings printed, report kept
    assert isinstance(prof.report, stallscope.Report)
    assert prof.report.to_dict() == stallscope.analyze(trace).to_dict()
    out = capsys.readouterr().out
    assert f"stallscope: {trace}" in out and prof.report.verdict in out


def test_repeat_writes_one_trace_per_cycle_and_options_pass_through(tmp_path, capsys):
    need_torch()
    prof = train(
        tmp_path,
        steps=9,
        skip=1,
        warmup=1,
        active=2,
        repeat=2,
        print_report=False,
        record_shapes=False,
    )
    assert len(prof.traces) == 2
    check_trace(Path(prof.traces[0]), first_step=2, active=2)
    check_trace(Path(prof.traces[1]), first_step=5, active=2)
    assert capsys.readouterr().out == ""
    # record_shapes=False went through: no input shapes in the trace
    with gzip.open(prof.traces[1]) as f:
        events = json.load(f)["traceEvents"]
    assert not any("Input Dims" in e.get("args", {}) for e in events)


def test_too_few_steps_write_no_trace_and_say_why(tmp_path, capsys):
    need_torch()
    prof = train(tmp_path, steps=3, skip=5, warmup=1, active=2)
    assert prof.traces == [] and prof.report is None
    err = capsys.readouterr().err
    assert "no trace was written" in err and "3 step() calls" in err


def test_without_torch_the_helper_says_so():
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import stallscope\n"
        "try:\n"
        "    stallscope.profile().__enter__()\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "torch is not installed" in p.stdout and "pip install torch" in p.stdout


def test_the_shipped_capture_sample():
    # made with the function above and torch 2.15.0 (CPU); no torch needed to check it
    check_trace(SAMPLE, first_step=3, active=3)


if __name__ == "__main__":
    print(train(sys.argv[1] if len(sys.argv) > 1 else "traces/").traces[-1])
