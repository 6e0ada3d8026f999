"""stallscope: why is this GPU workload slow, and what to do about it, from a profile.

The analysis is the ``stallscope`` command's own Rust code, run in this process with the GIL
released::

    import stallscope

    report = stallscope.analyze("trace.pt.trace.json.gz")
    report.verdict                    # one line: what bounds the step
    report.findings[0].advice         # what to do about the biggest problem
    report.to_pandas("kernels")       # the kernel table as a DataFrame
    report.save_html("report.html")   # the HTML report; in Jupyter, just show `report`
    cmp = stallscope.diff("before.json.gz", report)   # paths, saved reports or Reports
    cmp.summary                       # the step-time change and the noise test, in words
    runs = stallscope.diff(["a1.json.gz", "a2.json.gz"], ["b1.json.gz", "b2.json.gz"])
    runs.verdict["kind"]              # judged against the run-to-run spread
    stallscope.check("new.json.gz", baseline="base.json").outcome  # pass/regression/inconclusive

    with stallscope.profile(skip=10, warmup=2, active=5, out="traces/") as prof:
        for batch in loader:
            with stallscope.phase("forward"):
                loss = model(batch)
            ...
            prof.step()

One rank at a time, on any engine's workers (docs/summary.md; `stallscope.ray` runs it on Ray)::

    parts = [stallscope.summarize(p) for p in rank_files]   # small dicts, one per rank
    report = stallscope.merge(parts)                         # = analyze(FOLDER)

Importing stallscope imports neither torch nor pandas nor polars nor ray. See docs/python.md.
"""

from ._capture import phase, profile
from ._diff import DIFF_VIEWS, Comparison, check, diff
from ._native import __version__
from ._report import VIEWS, Finding, Report, TraceError, analyze
from ._summary import Summary, merge, merge_summaries, summarize

__all__ = [
    "DIFF_VIEWS",
    "VIEWS",
    "Comparison",
    "Finding",
    "Report",
    "Summary",
    "TraceError",
    "__version__",
    "analyze",
    "check",
    "diff",
    "merge",
    "merge_summaries",
    "phase",
    "profile",
    "summarize",
]
