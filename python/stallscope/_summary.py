"""`summarize` and `merge`: one rank reduced to a summary, summaries merged into the report.

They are the two halves of ``stallscope analyze FOLDER`` (docs/summary.md): run `summarize`
where each rank's trace is (a worker of Ray, Spark, Dask, …), ship the small dicts, and
`merge` them anywhere into exactly the report ``analyze FOLDER`` gives on the traces.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from typing import Any, Union

from . import _native
from ._report import PathLike, Report, StepRange, TimeRange, _steps_arg, _time_arg

__all__ = ["Summary", "merge", "merge_summaries", "summarize"]

#: A summary as `summarize` returns it: the JSON object of docs/summary.md.
Summary = dict[str, Any]

#: What `merge` accepts for one summary: the dict, its JSON text as bytes, or the path of a
#: ``*.summary.json`` file.
SummaryLike = Union[Summary, bytes, PathLike]


def summarize(
    path_or_bytes: PathLike | bytes,
    *,
    name: str | None = None,
    steps: StepRange | None = None,
    time: TimeRange | None = None,
    focus: str | None = None,
    all_steps: bool = False,
    threads: int | None = None,
    allow_truncated: bool = False,
) -> Summary:
    """Summarise one rank's trace, like ``stallscope summarize``; returns the summary dict.

    Args:
        path_or_bytes: the trace file's path, or its bytes (``.json`` or gzip, detected by
            content), e.g. a ``binaryFile`` row's ``content`` on Spark.
        name: the path the summary records for the rank (its rank table row, its errors; a
            ``rank3``/``worker3`` in it gives the rank when the trace records none). Default:
            the path; for bytes, required.
        steps, time, focus, all_steps: the window, as in `analyze`; give every rank the same.
        threads: parser and analysis threads (default: every core).
        allow_truncated: analyze what was read from a truncated file instead of failing.

    Returns:
        A dict of plain JSON values (kilobytes to a few MB: the rank's facts and its report,
        never the timeline), picklable and JSON-serialisable, for `merge`.

    A trace that cannot be read does not raise: its summary lists it under ``skipped`` with
    the error, and the merged report lists it as ``analyze FOLDER`` does.
    """
    opts: dict[str, Any] = {
        "steps": _steps_arg(steps),
        "time": _time_arg(time),
        "focus": focus,
        "all_steps": all_steps,
        "threads": threads,
        "allow_truncated": allow_truncated,
    }
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        if name is None:
            raise ValueError("summarize(bytes) needs name=: the path the summary records")
        with tempfile.NamedTemporaryFile(prefix="stallscope-", suffix=".trace") as f:
            f.write(path_or_bytes)
            f.flush()
            text = _native.summarize(f.name, name=name, **opts)
    else:
        text = _native.summarize(os.fspath(path_or_bytes), name=name, **opts)
    return json.loads(text)


def _merger(summaries: Iterable[SummaryLike], rank: int | None) -> _native.NativeMerger:
    m = _native.NativeMerger(rank=rank)
    for s in summaries:
        if isinstance(s, dict):
            m.add(json.dumps(s))
        elif isinstance(s, (bytes, bytearray)):
            m.add(bytes(s).decode())
        else:
            with open(os.fspath(s), encoding="utf-8") as f:
                m.add(f.read())
    return m


def merge(summaries: Iterable[SummaryLike], *, rank: int | None = None, jobs: int = 1) -> Report:
    """Merge summaries into the folder's report, like ``stallscope merge``.

    Args:
        summaries: summaries from `summarize` or `merge_summaries` (dicts, their JSON bytes,
            or ``*.summary.json`` paths), in any order; only the running merge is held.
        rank: give this rank's full report (default: the slowest rank's).
        jobs: the ``ranks.jobs`` the report states (how many ranks were summarised at once).

    Returns:
        The `Report`, equal to ``stallscope.analyze(FOLDER, jobs=jobs)`` on the traces (its
        ``ranks["folder"]`` is the traces' common parent folder).

    Raises:
        TraceError: a summary is not one (or of another version), or no rank could be read.
        ValueError: ``rank`` names no rank, or one whose report the summaries do not keep.
    """
    if jobs < 1:
        raise ValueError("jobs must be at least 1")
    return Report(_merger(summaries, rank).report(jobs))


def merge_summaries(summaries: Iterable[SummaryLike], *, rank: int | None = None) -> Summary:
    """Merge summaries into one summary (``stallscope merge --summary``), to merge again.

    Merging is associative and commutative: merging the results of a tree of merges gives
    the same summary, and the same report, as merging every rank at once.
    """
    return json.loads(_merger(summaries, rank).summary())
