"""`stallscope.ray.analyze`: the ranks of a job summarised as Ray tasks, merged on the driver.

``import stallscope`` does not import Ray; this module imports it when `analyze` runs. Ray
schedules, stallscope reduces and merges: each file is one task running `stallscope.summarize`
on the node it is assigned to (the file is read there: it must be at the same path on that
node, e.g. a shared file system); the driver merges each summary as it arrives
(`stallscope.merge`, holding one merged summary) and returns the `Report`, equal to
``stallscope.analyze(FOLDER)`` on the same files. A worker that dies is retried by Ray
(``max_retries``); a file that cannot be read is listed under ``ranks["skipped"]``, as
``analyze FOLDER`` lists it. See docs/summary.md.
"""

from __future__ import annotations

import glob as _glob
import json
import os
import sys
from collections.abc import Iterable
from typing import Any, Callable

from . import _native
from ._report import PathLike, Report, StepRange, TimeRange, _steps_arg, _time_arg

__all__ = ["analyze", "list_files"]

#: ``progress(done, total, path)`` after each summary merged.
Progress = Callable[[int, int, str], None]


def list_files(paths_or_glob: PathLike | Iterable[PathLike]) -> list[str]:
    """The trace files `analyze` reads: a folder's ``*.json`` and ``*.json.gz`` files (not
    hidden, not ``*.summary.json``; as ``stallscope analyze FOLDER`` lists them), the
    matches of a glob pattern, or the paths given; sorted by path."""
    if isinstance(paths_or_glob, (str, os.PathLike)):
        p = os.fspath(paths_or_glob)
        if os.path.isdir(p):
            names = [
                n
                for n in os.listdir(p)
                if not n.startswith(".")
                and n.lower().endswith((".json", ".json.gz"))
                and not n.lower().endswith(".summary.json")
                and os.path.isfile(os.path.join(p, n))
            ]
            return sorted(os.path.join(p, n) for n in names)
        if _glob.has_magic(p):
            return sorted(_glob.glob(p))
        return [p]
    return sorted(os.fspath(x) for x in paths_or_glob)


def _summarize_task(
    path: str, opts: dict[str, Any], fn: Callable[..., dict[str, Any]] | None
) -> str:
    """One Ray task: the summary's JSON text of one rank file."""
    if fn is None:
        return _native.summarize(path, **opts)
    return json.dumps(fn(path, **opts))


def _print_progress(done: int, total: int, path: str) -> None:
    # about twenty lines for the whole run, and the last one
    if done == total or done * 20 // total != (done - 1) * 20 // total:
        print(f"stallscope: {done}/{total} ranks summarised", file=sys.stderr, flush=True)


def analyze(
    paths_or_glob: PathLike | Iterable[PathLike],
    *,
    steps: StepRange | None = None,
    time: TimeRange | None = None,
    focus: str | None = None,
    all_steps: bool = False,
    rank: int | None = None,
    max_concurrency_per_node: int | None = None,
    threads: int = 1,
    max_retries: int = 3,
    progress: Progress | bool = True,
    summarize_fn: Callable[..., dict[str, Any]] | None = None,
) -> Report:
    """Analyze the rank files of a job on the Ray cluster this process is connected to.

    Args:
        paths_or_glob: a folder of rank traces, a glob pattern (``"/data/job7/*.json.gz"``),
            or a list of paths; resolved on the driver (`list_files`), read on the workers.
        steps, time, focus, all_steps: the window of every rank, as in `stallscope.analyze`.
        rank: give this rank's full report (default: the slowest rank's).
        max_concurrency_per_node: rank files summarised at once on each node (default: the
            node's CPUs); peak memory on a node is about this × one rank. Each task asks Ray
            for ``threads`` CPUs and is placed on a node by the driver (soft affinity: a
            retried task may run elsewhere).
        threads: parser and analysis threads per task.
        max_retries: how often Ray retries a task whose worker died.
        progress: ``progress(done, total, path)`` after each summary merged; ``True`` prints
            a line to stderr about every 5%; ``False`` nothing.
        summarize_fn: the function a task runs on each path (default `stallscope.summarize`,
            same signature); it must return a summary dict.

    Returns:
        The `Report`, equal to ``stallscope.analyze(FOLDER, jobs=N)`` on the same files, N
        being the tasks run at once over the cluster (``ranks["jobs"]``).

    Raises:
        ValueError: no file matched, or a bad window or option.
        ray.exceptions.RayError: a task failed after its retries.

    Ray must be initialised (``ray.init(...)``) or be initialisable with its defaults.
    """
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    files = list_files(paths_or_glob)
    if not files:
        raise ValueError(f"no rank files in {paths_or_glob!r}")
    if threads < 1 or max_retries < 0:
        raise ValueError("threads must be at least 1 and max_retries at least 0")
    opts = {
        "steps": _steps_arg(steps),
        "time": _time_arg(time),
        "focus": focus,
        "all_steps": all_steps,
        "threads": threads,
    }
    report_progress: Progress | None = _print_progress if progress is True else (progress or None)
    if not ray.is_initialized():
        ray.init()
    nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0]
    if not nodes:
        raise ValueError("the Ray cluster has no node with CPUs")
    slots = {
        n["NodeID"]: max(
            1,
            max_concurrency_per_node
            if max_concurrency_per_node is not None
            else int(n["Resources"]["CPU"]) // threads,
        )
        for n in nodes
    }
    task = ray.remote(_summarize_task)
    fn_ref = None if summarize_fn is None else ray.put(summarize_fn)
    merger = _native.NativeMerger(rank=rank)
    inflight: dict[Any, tuple[str, str]] = {}  # ref -> (node, path)
    busy = dict.fromkeys(slots, 0)
    todo = list(reversed(files))
    done = 0
    while todo or inflight:
        for node, free in slots.items():
            while todo and busy[node] < free:
                path = todo.pop()
                ref = task.options(
                    num_cpus=threads,
                    max_retries=max_retries,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=True),
                ).remote(path, opts, fn_ref)
                inflight[ref] = (node, path)
                busy[node] += 1
        ready, _ = ray.wait(list(inflight), num_returns=1)
        for ref in ready:
            node, path = inflight.pop(ref)
            busy[node] -= 1
            merger.add(ray.get(ref))
            done += 1
            if report_progress:
                report_progress(done, len(files), path)
    return Report(merger.report(min(sum(slots.values()), len(files))))
