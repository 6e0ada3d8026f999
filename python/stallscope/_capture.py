"""The capture helper: a good torch.profiler capture in one line, analyzed when it ends.

torch is imported only when `profile` is entered or a `phase` opens, never by
``import stallscope``.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
from types import TracebackType
from typing import Any

from ._report import PathLike, Report, analyze

__all__ = ["profile", "phase"]


def _torch() -> Any:
    try:
        import torch
        import torch.profiler  # noqa: F401
    except ImportError as e:
        raise ImportError(
            "stallscope.profile and stallscope.phase record with torch.profiler, and torch is "
            "not installed in this environment: pip install torch (analyzing a trace you "
            "already have needs no torch: stallscope.analyze(path))"
        ) from e
    return torch


class profile:
    """Record a few steady steps with torch.profiler and analyze them when the block ends.

    ::

        with stallscope.profile(skip=10, warmup=2, active=5, out="traces/") as prof:
            for batch in loader:
                train_step(batch)
                prof.step()
        prof.report  # the stallscope.Report of the trace (also printed)

    The schedule skips ``skip`` steps (compilation, warm-up, caches filling), then warms the
    profiler up for ``warmup`` steps (recorded and thrown away) and records ``active`` steps,
    ``repeat`` times (0 = until the block ends). Each cycle writes one gzip trace
    ``out/HOST_PID.MS.pt.trace.json.gz``, the name TensorBoard's trace handler uses, with
    ``record_shapes`` and ``profile_memory`` on. At the end the newest trace is analyzed in this
    process; the verdict and findings are printed (``print_report=False`` to keep quiet) and the
    report is ``prof.report``. Other keyword arguments go to ``torch.profiler.profile`` and
    win over these defaults (``activities``: CPU, and CUDA when it is available;
    ``record_shapes``, ``profile_memory``, ``with_stack``, ``on_trace_ready``...).

    Attributes:
        traces: the files written, oldest first.
        report: the `Report` of the newest trace, after the block (None before, or when no
            trace was written or the block raised).
        steps: how many times `step` was called.
        profiler: the ``torch.profiler.profile`` object, inside the block.
    """

    def __init__(
        self,
        skip: int = 10,
        warmup: int = 2,
        active: int = 5,
        out: PathLike = "traces/",
        *,
        repeat: int = 1,
        print_report: bool = True,
        **torch_kwargs: Any,
    ) -> None:
        if skip < 0 or warmup < 0 or active < 1 or repeat < 0:
            raise ValueError("profile needs skip >= 0, warmup >= 0, active >= 1, repeat >= 0")
        self.skip, self.warmup, self.active, self.repeat = skip, warmup, active, repeat
        self.out = os.fspath(out)
        self.print_report = print_report
        self.torch_kwargs = torch_kwargs
        self.traces: list[str] = []
        self.report: Report | None = None
        self.steps = 0
        self.profiler: Any = None

    def _write_trace(self, prof: Any) -> None:
        os.makedirs(self.out, exist_ok=True)
        name = f"{socket.gethostname()}_{os.getpid()}.{time.time_ns() // 1_000_000}"
        path = os.path.join(self.out, f"{name}.pt.trace.json.gz")
        while os.path.exists(path):  # two cycles within one millisecond
            name += "_"
            path = os.path.join(self.out, f"{name}.pt.trace.json.gz")
        prof.export_chrome_trace(path)  # gzip because of the .gz name
        self.traces.append(path)

    def __enter__(self) -> profile:
        torch = _torch()
        activities = [torch.profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        kwargs: dict[str, Any] = {
            "activities": activities,
            "schedule": torch.profiler.schedule(
                skip_first=self.skip,
                wait=0,
                warmup=self.warmup,
                active=self.active,
                repeat=self.repeat,
            ),
            "on_trace_ready": self._write_trace,
            "record_shapes": True,
            "profile_memory": True,
        }
        kwargs.update(self.torch_kwargs)
        self.profiler = torch.profiler.profile(**kwargs)
        self.profiler.__enter__()
        return self

    def step(self) -> None:
        """Marks the end of one step (call it once per training or inference step)."""
        self.steps += 1
        self.profiler.step()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.profiler.__exit__(exc_type, exc, tb)
        if exc_type is not None:
            return
        if not self.traces:
            needed = self.skip + self.warmup + 1
            print(
                f"stallscope: no trace was written: the block made {self.steps} step() calls "
                f"and the schedule records from call {needed} on (skip={self.skip}, "
                f"warmup={self.warmup}); lower skip or run more steps",
                file=sys.stderr,
            )
            return
        self.report = analyze(self.traces[-1])
        if self.print_report:
            print(f"stallscope: {self.traces[-1]}")
            print(self.report.summary(), end="")


class phase(contextlib.ContextDecorator):
    """Name a phase of the step: a context manager and a decorator.

    ::

        with stallscope.phase("forward"):
            loss = model(x)

        @stallscope.phase("denoise")
        def denoise(latents): ...

    Opens a ``torch.profiler.record_function`` range, and when CUDA is available an NVTX range
    of the same name, so the phase shows under the same name in Kineto traces (``stallscope
    phases``, ``analyze(focus=...)``) and in Nsight Systems captures.
    """

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("a phase needs a non-empty name")
        self.name = name
        self._range: Any = None
        self._nvtx = False

    def _recreate_cm(self) -> phase:
        # a fresh range for each call of a decorated function (recursion, threads)
        return phase(self.name)

    def __enter__(self) -> phase:
        torch = _torch()
        self._range = torch.profiler.record_function(self.name)
        self._range.__enter__()
        if torch.cuda.is_available():
            try:
                torch.cuda.nvtx.range_push(self.name)
                self._nvtx = True
            except (RuntimeError, AttributeError):
                self._nvtx = False
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._nvtx:
            _torch().cuda.nvtx.range_pop()
            self._nvtx = False
        self._range.__exit__(exc_type, exc, tb)
        self._range = None
