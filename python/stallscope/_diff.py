"""`diff` and the `Comparison` it returns: ``stallscope diff``, in-process."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Union

from . import _native
from ._report import (
    PathLike,
    Report,
    StepRange,
    TimeRange,
    _steps_arg,
    _time_arg,
)
from ._view import _NativeView

if TYPE_CHECKING:  # pragma: no cover
    import pandas

__all__ = ["Comparison", "DIFF_VIEWS", "check", "diff"]

#: The tables `Comparison.to_pandas` builds.
DIFF_VIEWS = (
    "contributors",
    "phase_contributors",
    "op_contributors",
    "kernels",
    "ops",
    "phases",
    "findings",
    "breakdown",
    "runs",
    "check",
)

# Columns of the ``runs`` table: one row per capture of each side (repeated runs).
_RUN_COLUMNS = ("side", "path", "steps", "mean_us", "stdev_us", "representative")

# Columns of the kernels, ops and phases tables: the JSON rows with `before` and `after`
# (calls and µs per step) flattened.
_ITEM_COLUMNS = (
    "name",
    "status",
    "calls_before",
    "calls_after",
    "before_us",
    "after_us",
    "change_us",
    "category",
    "note",
)

Side = Union[PathLike, Report]
#: One side of `diff`: one capture, or several captures of the same program (repeated runs).
Sides = Union[Side, Sequence[Side]]


class Comparison(_NativeView):
    """The comparison of two profiles: the same data as ``stallscope diff --format json``.

    Every figure is per step (window totals divided by the side's steps), in µs, and every
    change is after − before (docs/diff.md, docs/json-report.md). The properties are the key
    members of the JSON; `to_dict` has all of it. In Jupyter the comparison shows as the
    command's HTML page in a sandboxed frame.
    """

    __slots__ = ("_native", "_dict")
    _HTML_TOP = 30

    def __init__(self, native: _native.NativeComparison) -> None:
        self._native = native
        self._dict: dict[str, Any] | None = None

    @property
    def before(self) -> dict[str, Any]:
        """The baseline: ``path``, ``source``, ``kind``, ``verdict``, ``window``, ``steps``,
        ``step_range``, ``devices``."""
        return self._d()["before"]

    @property
    def after(self) -> dict[str, Any]:
        """The new profile, as `before`."""
        return self._d()["after"]

    @property
    def verdicts(self) -> tuple[str, str]:
        """The one-line verdict of each side: ``(before, after)``."""
        return self.before["verdict"], self.after["verdict"]

    @property
    def caveats(self) -> list[str]:
        """What qualifies the comparison: a different GPU, window choice, a side without steps."""
        return self._d()["caveats"]

    @property
    def summary(self) -> str:
        """One sentence: the step-time change and the noise test's result in words."""
        return self._d()["summary"]

    @property
    def verdict(self) -> dict[str, Any]:
        """The typed verdict on the step time: ``kind`` (``regression``, ``within_budget``,
        ``improvement``, ``no_change``, ``inconclusive``), ``basis`` (``runs`` with several
        captures per side, else ``steps``), ``unit`` (``step`` or ``sample``), ``change_pct``,
        ``budget_pct``, ``p_value`` and ``reason`` (one line)."""
        return self._d()["verdict"]

    @property
    def parity(self) -> dict[str, Any]:
        """Whether the sides are the same workload: ``checks`` (device, batch, first-layer
        input, dtype mix, step definition, window kind: ``same``, ``differs``, ``unknown``),
        ``same_workload``, ``normalization`` (per sample) and ``not_comparable``."""
        return self._d()["parity"]

    @property
    def repeats(self) -> dict[str, Any] | None:
        """Several captures per side: each side's ``runs`` and spreads, the change of the run
        means, Welch's ``t``, ``df`` and ``p_value`` on their logarithms; None with one capture
        per side."""
        return self._d().get("repeats")

    @property
    def check(self) -> dict[str, Any] | None:
        """`check` only: ``outcome`` (``pass``, ``regression``, ``inconclusive``: the
        command's exit code 0, 1, 3), ``failed``, the one-line ``summary`` and every budget
        ``metrics`` row; None for `diff`."""
        return self._d().get("check")

    @property
    def outcome(self) -> str | None:
        """`check` only: ``"pass"``, ``"regression"`` or ``"inconclusive"``."""
        c = self.check
        return None if c is None else c["outcome"]

    @property
    def step_time(self) -> dict[str, Any]:
        """``before`` and ``after`` step statistics (``mean_us``, ``median_us``, ``stdev_us``,
        ...), ``change_us``, ``change_pct``, ``median_change_us`` and ``noise``."""
        return self._d()["step_time"]

    @property
    def change_us(self) -> float:
        """Mean step time after − before, µs."""
        return self.step_time["change_us"]

    @property
    def change_pct(self) -> float | None:
        """The change relative to before, percent (None when before is 0)."""
        return self.step_time["change_pct"]

    @property
    def noise(self) -> dict[str, Any]:
        """The Mann–Whitney U test on the per-step durations: ``judgement``, ``p_value``,
        ``method``, ``alpha``, ``u``, ``n_before``, ``n_after``, ``all_after_faster``,
        ``all_after_slower``, and ``reason`` when it could not judge."""
        return self.step_time["noise"]

    @property
    def judgement(self) -> str:
        """The noise test's result: ``"faster"``, ``"slower"``, ``"within_noise"`` or
        ``"too_few_steps"``."""
        return self.noise["judgement"]

    @property
    def contributors(self) -> list[dict[str, Any]]:
        """What explains the step-time change (kernels, copies, host parts, residual), largest
        first; their ``change_us`` add up to `change_us`."""
        return self._d()["contributors"]

    @property
    def phase_contributors(self) -> list[dict[str, Any]]:
        """The same change by top-level phase, with the residual."""
        return self._d()["phase_contributors"]

    @property
    def op_contributors(self) -> list[dict[str, Any]]:
        """The same change by operator (device self time), with the residual."""
        return self._d()["op_contributors"]

    @property
    def findings(self) -> list[dict[str, Any]]:
        """Findings matched by rule id: ``status`` is ``resolved``, ``new``, ``changed`` or
        ``unchanged``, with severity and recoverable µs per step on each side."""
        return self._d()["findings"]

    @property
    def resolved(self) -> list[str]:
        """Ids of the findings of before that after no longer has."""
        return [f["id"] for f in self.findings if f["status"] == "resolved"]

    @property
    def new(self) -> list[str]:
        """Ids of the findings only after has."""
        return [f["id"] for f in self.findings if f["status"] == "new"]

    def table(self, view: str) -> tuple[list[str], list[list[Any]]]:
        """The columns and rows of one table, without pandas.

        ``view`` is one of `DIFF_VIEWS`. The contributor views and ``breakdown`` have the
        JSON rows' members; ``kernels``, ``ops`` and ``phases`` have ``name``, ``status``,
        ``calls_before``, ``calls_after``, ``before_us``, ``after_us``, ``change_us``,
        ``category`` and ``note`` (calls and µs per step; None where a side lacks the row);
        ``findings`` has the JSON rows' members; ``runs`` (repeated runs) has ``side``,
        ``path``, ``steps``, ``mean_us``, ``stdev_us`` and ``representative`` (the run the
        tables compare), one row per capture, empty with one capture per side; ``check`` has
        the budget's metrics (empty for `diff`). See docs/python.md.
        """
        if view not in DIFF_VIEWS:
            raise ValueError(f"view must be one of {', '.join(DIFF_VIEWS)}, not {view!r}")
        if view == "runs":
            rows = []
            for side in ("before", "after"):
                r = (self.repeats or {}).get(side)
                if r is None:
                    continue
                for i, run in enumerate(r["runs"]):
                    rows.append(
                        [
                            side,
                            run["path"],
                            run["steps"],
                            run["mean_us"],
                            run["stdev_us"],
                            i == r["representative"],
                        ]
                    )
            return list(_RUN_COLUMNS), rows
        if view == "check":
            records = (self.check or {}).get("metrics", [])
        else:
            records = self._d()[view]
        if view in ("kernels", "ops", "phases"):
            rows = []
            for r in records:
                b, a = r.get("before") or {}, r.get("after") or {}
                rows.append(
                    [
                        r["name"],
                        r["status"],
                        b.get("calls"),
                        a.get("calls"),
                        b.get("time_us"),
                        a.get("time_us"),
                        r["change_us"],
                        r.get("category"),
                        r.get("note"),
                    ]
                )
            return list(_ITEM_COLUMNS), rows
        columns: list[str] = []
        for r in records:
            columns.extend(k for k in r if k not in columns)
        return columns, [[r.get(c) for c in columns] for r in records]

    def to_pandas(self, view: str = "contributors") -> pandas.DataFrame:
        """One table as a pandas DataFrame (columns: `table`)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError(
                "Comparison.to_pandas needs pandas: pip install pandas (or stallscope[pandas])"
            ) from None
        columns, rows = self.table(view)
        return pd.DataFrame.from_records(rows, columns=columns)

    def to_text(self, top: int = 10) -> str:
        """The terminal tables (``--format table``), without colour, 100 columns."""
        return self._native.table(top)

    def __repr__(self) -> str:
        b, a = self.verdicts
        return "\n".join(
            [
                f"<stallscope.Comparison {self.before['path']!r} -> {self.after['path']!r}>",
                self.summary,
                f"before: {b}",
                f"after:  {a}",
            ]
        )

    def __str__(self) -> str:
        return self.to_text()


def _side(v: Side, which: str) -> Any:
    if isinstance(v, Report):
        return v._native
    if isinstance(v, (str, os.PathLike)):
        return os.fspath(v)
    raise TypeError(f"{which} must be a path or a Report, not {type(v).__name__}")


def _sides(v: Sides, which: str) -> Any:
    """One capture as it is; a list or tuple of captures as a list (repeated runs)."""
    if isinstance(v, (list, tuple)):
        if not v:
            raise ValueError(f"{which}: an empty list of captures")
        return [_side(x, which) for x in v]
    return _side(v, which)


def diff(
    before: Sides,
    after: Sides,
    *,
    steps: StepRange | None = None,
    time: TimeRange | None = None,
    focus: str | None = None,
    all_steps: bool = False,
    threads: int | None = None,
    max_regression: float | None = None,
    sequential: bool = False,
) -> Comparison:
    """Compare two profiles in this process, like ``stallscope diff BEFORE AFTER``.

    Args:
        before: the baseline: a trace, a folder of per-rank traces, an Nsight Systems export,
            a saved JSON report (``stallscope analyze --format json``), or a `Report`; or a
            list of them, several captures of the same program (repeated runs, as
            ``stallscope diff --before A1 A2 A3 --after B1 B2 B3``): the change is then
            judged against the spread between runs (`Comparison.repeats`, ``runs`` table).
        after: the new profile (same kinds).
        steps, time, focus, all_steps: the window of the sides that are analyzed here (as in
            `analyze`; a saved report or a `Report` is compared with its own window).
        threads: parser threads over both sides (default: every core; two traces share them).
        max_regression: the step-time regression the verdict tolerates, percent (default 5,
            as ``--max-regression``).
        sequential: read two traces one after the other, each with every thread, instead
            of side by side (``--sequential``): one trace in memory at a time.

    Returns:
        The `Comparison`: the data of ``stallscope diff --format json``.

    Raises:
        TraceError: a side could not be read; the message starts with ``before side:`` or
            ``after side:`` and ``.path`` is that side's path.
        ValueError: a bad window or option, or an empty list of captures.
        TypeError: a side is neither a path nor a `Report`.
    """
    return _compare(
        _sides(before, "before"),
        _sides(after, "after"),
        steps=steps,
        time=time,
        focus=focus,
        all_steps=all_steps,
        threads=threads,
        max_regression=max_regression,
        sequential=sequential,
    )


def check(
    new: Sides,
    baseline: Sides,
    *,
    max_regression: float | None = None,
    budget: PathLike | None = None,
    steps: StepRange | None = None,
    time: TimeRange | None = None,
    focus: str | None = None,
    all_steps: bool = False,
    threads: int | None = None,
    sequential: bool = False,
) -> Comparison:
    """Judge a profile against a baseline and a budget, like ``stallscope check NEW
    --baseline BASE``.

    ``new`` and ``baseline`` are sides as in `diff` (one capture, or a list of captures:
    repeated runs). ``max_regression`` (percent) overrides the budget file's step-time
    limit; with neither, the step time may grow by 5 %. The returned `Comparison` has
    `Comparison.check` (every budget metric) and `Comparison.outcome`: ``"pass"``,
    ``"regression"`` or ``"inconclusive"`` (the command's exit codes 0, 1 and 3); its
    ``check["summary"]`` is the command's stderr line. ``sequential`` reads two traces one
    after the other, as in `diff`.

    Raises:
        TraceError, TypeError: as `diff`.
        ValueError: as `diff`, or an unreadable or invalid budget file.
    """
    return _compare(
        _sides(baseline, "baseline"),
        _sides(new, "new"),
        steps=steps,
        time=time,
        focus=focus,
        all_steps=all_steps,
        threads=threads,
        max_regression=max_regression,
        budget=None if budget is None else os.fspath(budget),
        check=True,
        sequential=sequential,
    )


def _compare(
    before: Any,
    after: Any,
    *,
    steps: StepRange | None,
    time: TimeRange | None,
    focus: str | None,
    all_steps: bool,
    threads: int | None,
    max_regression: float | None,
    budget: str | None = None,
    check: bool = False,
    sequential: bool = False,
) -> Comparison:
    """The one call of the native comparison behind `diff` and `check`."""
    native = _native.diff(
        before,
        after,
        steps=_steps_arg(steps),
        time=_time_arg(time),
        focus=focus,
        all_steps=all_steps,
        threads=threads,
        max_regression=max_regression,
        budget=budget,
        check=check,
        sequential=sequential,
    )
    return Comparison(native)
