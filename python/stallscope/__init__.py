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

    with stallscope.profile(skip=10, warmup=2, active=5, out="traces/") as prof:
        for batch in loader:
            with stallscope.phase("forward"):
                loss = model(batch)
            ...
            prof.step()

Importing stallscope imports neither torch nor pandas nor polars. See docs/python.md.
"""

from ._capture import phase, profile
from ._diff import DIFF_VIEWS, Comparison, diff
from ._native import __version__
from ._report import VIEWS, Finding, Report, TraceError, analyze

__all__ = [
    "DIFF_VIEWS",
    "VIEWS",
    "Comparison",
    "Finding",
    "Report",
    "TraceError",
    "__version__",
    "analyze",
    "diff",
    "phase",
    "profile",
]
