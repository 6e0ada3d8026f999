"""`analyze` and the `Report` it returns: the command's report, in-process."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Union

from . import _native
from ._view import PathLike, _NativeView

if TYPE_CHECKING:  # pragma: no cover
    import pandas
    import polars

__all__ = ["Finding", "Report", "TraceError", "analyze", "VIEWS"]

TraceError = _native.TraceError

StepRange = Union[str, int, tuple[Optional[int], Optional[int]]]
TimeRange = Union[str, tuple[Optional[float], Optional[float]]]

#: The tables `Report.to_pandas` and `Report.to_polars` build (`ranks` only for a folder).
VIEWS = ("steps", "kernels", "copies", "ops", "phases", "findings", "ranks")

# Columns of the findings table (the others are the command's CSV views).
_FINDING_COLUMNS = (
    "rank",
    "id",
    "severity",
    "title",
    "recoverable_us",
    "recoverable_basis",
    "facts",
    "advice",
)


@dataclass(frozen=True)
class Finding:
    """One finding: what slows the step, how much time fixing it could recover, and how.

    Attributes:
        id: stable rule id, e.g. ``"dataloader-stall"`` (docs/rules.md lists them).
        severity: ``"high"``, ``"medium"`` or ``"low"``.
        title: one line with the main number.
        recoverable_us: upper bound of the time the fix could save, µs per step.
        recoverable_basis: how ``recoverable_us`` was computed.
        evidence: ``{"facts": [str], "metrics": {name: number}, "locations": [dict]}``
            (``start_us`` of a location is µs since ``source["trace_start_us"]``).
        advice: what to do: concrete APIs, flags and code patterns.
    """

    id: str
    severity: str
    title: str
    recoverable_us: float
    recoverable_basis: str
    evidence: dict[str, Any] = field(repr=False)
    advice: list[str] = field(repr=False)

    @property
    def facts(self) -> list[str]:
        """The evidence's sentences with the numbers, ops, kernels and annotations."""
        return list(self.evidence.get("facts", []))

    @classmethod
    def _from_dict(cls, d: dict[str, Any]) -> Finding:
        return cls(
            id=d["id"],
            severity=d["severity"],
            title=d["title"],
            recoverable_us=d["recoverable_us"],
            recoverable_basis=d["recoverable_basis"],
            evidence=d["evidence"],
            advice=list(d["advice"]),
        )


class Report(_NativeView):
    """The report of one analysis: the same data as ``stallscope analyze --format json``.

    Every attribute is the JSON report's member of the same name (docs/json-report.md),
    with µs for ``*_us`` and fractions 0..1 for shares. ``findings`` are `Finding` objects;
    the other lists hold plain dicts. Tables come as DataFrames with `to_pandas` and
    `to_polars`; `save_html` and `to_markdown` give the command's HTML and Markdown reports.
    In Jupyter the report shows as the HTML report in a sandboxed frame.
    """

    __slots__ = ("_native", "_dict")

    def __init__(self, native: _native.NativeReport) -> None:
        self._native = native
        self._dict: dict[str, Any] | None = None

    # -- the JSON report -------------------------------------------------------------------

    @property
    def schema_version(self) -> int:
        """Version of the JSON report (docs/json-report.md)."""
        return self._d()["schema_version"]

    @property
    def source(self) -> dict[str, Any]:
        """The input: ``path``, ``format``, ``bytes``, ``events``, ``trace_start_us``, ..."""
        return self._d()["source"]

    @property
    def verdict(self) -> str:
        """One line: what bounds the step (docs/rules.md)."""
        return self._d()["verdict"]

    @property
    def findings(self) -> list[Finding]:
        """Findings ranked by the time each would recover per step, largest first."""
        return [Finding._from_dict(f) for f in self._d()["findings"]]

    @property
    def window(self) -> dict[str, Any]:
        """The analyzed window: ``start_us``, ``end_us``, ``steps``, ``excluded``, ``spec``,
        ``duration_us``, ``compile_us``, ``compile``, ``focus``, ``notes``."""
        return self._d()["window"]

    @property
    def steps(self) -> list[dict[str, Any]]:
        """One dict per step: ``name``, ``start_us``, ``duration_us``, ``breakdown_us``."""
        return self._d()["steps"]

    @property
    def breakdown_us(self) -> dict[str, float]:
        """The average step's breakdown, µs (kernel, memcpy, ..., other)."""
        return self._d()["breakdown_us"]

    @property
    def step_time_us(self) -> float:
        """Mean step duration, µs."""
        return self._d()["step_time_us"]

    @property
    def phases(self) -> list[dict[str, Any]]:
        """Annotation phases over the window, depth-first (docs/json-report.md)."""
        return self._d()["phases"]

    @property
    def kernels(self) -> list[dict[str, Any]]:
        """The kernel table, by total time: every row."""
        return self._d()["kernels"]

    @property
    def ops(self) -> list[dict[str, Any]]:
        """The operator table, by device self time: every row."""
        return self._d()["ops"]

    @property
    def gpu_timeline(self) -> list[dict[str, Any]]:
        """Per device: computation, exposed communication, exposed memcpy and idle, µs."""
        return self._d()["gpu_timeline"]

    @property
    def devices(self) -> list[dict[str, Any]]:
        """Devices that ran work, with utilization, SM efficiency, occupancy, tensor cores."""
        return self._d()["devices"]

    @property
    def warnings(self) -> list[dict[str, Any]]:
        """Reading warnings: ``message``, ``count``, ``first_offset``."""
        return self._d()["warnings"]

    @property
    def step_timeline(self) -> dict[str, Any] | None:
        """Device timeline of the representative step, or None."""
        return self._d().get("step_timeline")

    @property
    def ncu(self) -> dict[str, Any] | None:
        """The Nsight Compute section (an ncu CSV alone, or ``ncu=`` beside a trace), or None."""
        return self._d().get("ncu")

    @property
    def gpu_metrics(self) -> dict[str, Any] | None:
        """Sampled GPU metrics (Nsight Systems with GPU metrics), or None."""
        return self._d().get("gpu_metrics")

    @property
    def ranks(self) -> dict[str, Any] | None:
        """A folder of per-rank traces: the rank table and cross-rank findings, or None."""
        return self._d().get("ranks")

    # -- tables ----------------------------------------------------------------------------

    def table(self, view: str) -> tuple[list[str], list[list[Any]]]:
        """The columns and rows of one table, without pandas or polars.

        ``view`` is one of `VIEWS`. The columns of ``steps``, ``kernels``, ``copies``,
        ``ops``, ``phases`` and ``ranks`` are those of
        ``stallscope analyze --format csv --view VIEW`` (µs for ``*_us``, fractions 0..1 for
        ``share``, ``gpu_share``, ``utilization``, percent for ``*_pct``); a missing value is
        None. ``findings`` has ``rank`` (1 = the
        most time), ``id``, ``severity``, ``title``, ``recoverable_us``,
        ``recoverable_basis``, ``facts`` and ``advice`` (sentences joined by newlines).
        See docs/python.md.
        """
        if view not in VIEWS:
            raise ValueError(f"view must be one of {', '.join(VIEWS)}, not {view!r}")
        if view == "findings":
            rows = [
                [
                    i + 1,
                    f.id,
                    f.severity,
                    f.title,
                    f.recoverable_us,
                    f.recoverable_basis,
                    "\n".join(f.facts),
                    "\n".join(f.advice),
                ]
                for i, f in enumerate(self.findings)
            ]
            return list(_FINDING_COLUMNS), rows
        columns = self._native.csv_columns(view)
        if view == "ranks":
            section = self.ranks
            records = section["ranks"] if section else []
        elif view == "kernels":
            # kernel rows only, as the CSV view: the JSON's copy and fill rows (those with a
            # `copy` member) have their own columns
            records = [r for r in self._d()["kernels"] if "copy" not in r]
        elif view == "copies":
            # the copy and fill rows of the kernel table, with their `copy` member's columns
            records = [{**r, **r["copy"]} for r in self._d()["kernels"] if "copy" in r]
        else:
            records = self._d()[view]
        return columns, [[_cell(r, c) for c in columns] for r in records]

    def to_pandas(self, view: str = "steps") -> pandas.DataFrame:
        """One table as a pandas DataFrame (columns and units: `table`, docs/python.md)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError(
                "Report.to_pandas needs pandas: pip install pandas (or stallscope[pandas])"
            ) from None
        columns, rows = self.table(view)
        return pd.DataFrame.from_records(rows, columns=columns)

    def to_polars(self, view: str = "steps") -> polars.DataFrame:
        """One table as a polars DataFrame (columns and units: `table`, docs/python.md)."""
        try:
            import polars as pl
        except ImportError:
            raise ImportError(
                "Report.to_polars needs polars: pip install polars (or stallscope[polars])"
            ) from None
        columns, rows = self.table(view)
        return pl.DataFrame(rows, schema=columns, orient="row", infer_schema_length=None)

    # -- renderings ------------------------------------------------------------------------

    def summary(self, width: int = 100) -> str:
        """The verdict and findings as the command's terminal report prints them."""
        return self._native.summary(width)

    def __repr__(self) -> str:
        d = self._d()
        top = d["findings"][:3]
        lines = [f"<stallscope.Report {d['source']['path']!r}>", f"verdict: {d['verdict']}"]
        for i, f in enumerate(top):
            lines.append(
                f"  {i + 1}. [{f['severity']}] {f['title']} (up to {f['recoverable_us']:,.0f} µs"
                " per step)"
            )
        more = len(d["findings"]) - len(top)
        if more > 0:
            lines.append(f"  … and {more} more finding{'s' if more > 1 else ''}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def _cell(record: dict[str, Any], column: str) -> Any:
    """The value of a CSV column in a JSON record: the member of that name, else a part of
    ``breakdown_us`` (``kernel_us`` → ``breakdown_us["kernel"]``), else the top finding of a
    rank (``top_finding`` → its id, ``top_finding_us`` → its recoverable µs)."""
    if column in record:
        v = record[column]
        if column == "top_finding" and isinstance(v, dict):
            return v.get("id")
        return v
    if column.endswith("_us"):
        part = record.get("breakdown_us", {})
        if column[:-3] in part:
            return part[column[:-3]]
    if column == "top_finding_us":
        top = record.get("top_finding")
        return top.get("recoverable_us") if isinstance(top, dict) else None
    raise KeyError(f"column {column!r} is not in the report (stallscope version mismatch?)")


def _steps_arg(steps: StepRange | None) -> str | None:
    if steps is None or isinstance(steps, str):
        return steps
    if isinstance(steps, bool):
        raise TypeError("steps must be a str, an int or a (first, last) tuple")
    if isinstance(steps, int):
        return str(steps)
    first, last = steps
    return f"{'' if first is None else int(first)}..{'' if last is None else int(last)}"


def _time_arg(time: TimeRange | None) -> str | None:
    if time is None or isinstance(time, str):
        return time
    if len(time) != 2:
        raise TypeError("time must be a str or a (start, end) tuple of µs")
    return "..".join("" if t is None else f"{float(t):.3f}" for t in time)


def analyze(
    path: PathLike,
    *,
    steps: StepRange | None = None,
    time: TimeRange | None = None,
    focus: str | None = None,
    all_steps: bool = False,
    ncu: PathLike | None = None,
    threads: int | None = None,
    jobs: int | None = None,
    rank: int | None = None,
    allow_truncated: bool = False,
) -> Report:
    """Analyze a profile in this process, like ``stallscope analyze PATH``, and return the report.

    Args:
        path: a torch.profiler (Kineto) trace (``.json``, gzip detected by content), a folder
            of per-rank traces, an Nsight Systems SQLite export or an Nsight Compute CSV.
        steps: only these ``ProfilerStep#N`` numbers, inclusive: ``"3..6"``, ``5``,
            ``(3, None)`` (``--steps``).
        time: only this range in µs from the start of the trace: ``"1000..2500"`` or
            ``(1000.0, 2500.0)``, either end may be None (``--time``).
        focus: only the time inside annotations of this name (``--focus``).
        all_steps: every step instead of the steady state (``--all``).
        ncu: an Nsight Compute CSV joined to the trace's kernels (``--ncu``).
        threads: parser and analysis threads (default: every core).
        jobs: folder: rank files analyzed at once (``--jobs``).
        rank: folder: the rank whose full report is given (default: the slowest).
        allow_truncated: analyze what was read from a truncated file instead of failing.

    Returns:
        The `Report`: the data of the command's JSON report.

    Raises:
        TraceError: the input could not be read (``.path`` and ``.offset`` say where).
        ValueError: a bad window or option, or a window that matches nothing.

    The analysis runs in Rust with the GIL released, as fast as the command.
    """
    native = _native.analyze(
        os.fspath(path),
        steps=_steps_arg(steps),
        time=_time_arg(time),
        focus=focus,
        all_steps=all_steps,
        ncu=None if ncu is None else os.fspath(ncu),
        threads=threads,
        jobs=jobs,
        rank=rank,
        allow_truncated=allow_truncated,
    )
    return Report(native)
