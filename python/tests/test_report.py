"""The Python API against the command: same report, same tables, same renderings."""

from __future__ import annotations

import csv
import dataclasses
import gzip
import io
import json
import math
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import stallscope
from conftest import SAMPLE_TRACES, SAMPLES, cli_json, corpus_file, run

RESNET = SAMPLES / "resnet50_v100_num_workers_0.pt.trace.json.gz"

# Report attributes and the JSON report's member each one is.
FIELDS = (
    "schema_version",
    "source",
    "verdict",
    "window",
    "steps",
    "breakdown_us",
    "step_time_us",
    "phases",
    "kernels",
    "ops",
    "gpu_timeline",
    "devices",
    "warnings",
)
OPTIONAL_FIELDS = ("step_timeline", "ncu", "gpu_metrics", "ranks")


def assert_same_report(report: stallscope.Report, expected: dict) -> None:
    """Every field of the Report equals the command's JSON report."""
    assert report.to_dict() == expected
    for name in FIELDS:
        assert getattr(report, name) == expected[name], name
    for name in OPTIONAL_FIELDS:
        assert getattr(report, name) == expected.get(name), name
    assert len(report.findings) == len(expected["findings"])
    for f, e in zip(report.findings, expected["findings"]):
        assert isinstance(f, stallscope.Finding)
        assert dataclasses.asdict(f) == e
        assert f.facts == e["evidence"]["facts"]


@pytest.mark.parametrize("path", SAMPLE_TRACES, ids=lambda p: p.name)
def test_every_field_equals_the_command_json_on_the_samples(path):
    assert_same_report(stallscope.analyze(path), cli_json(str(path)))


def test_resnet_sample_numbers():
    # the TensorBoard plugin's own numbers for this trace (samples/README.md)
    r = stallscope.analyze(RESNET)
    assert len(r.steps) == 6
    assert r.step_time_us == pytest.approx(177592, abs=1)
    assert r.devices[0]["utilization"] == pytest.approx(0.5551, abs=1e-4)
    assert r.findings[0].id == "dataloader-stall"
    assert r.verdict.startswith("DataLoader-bound")


@pytest.mark.parametrize(
    ("kwargs", "flags"),
    [
        ({"steps": "6..8"}, ["--steps", "6..8"]),
        ({"steps": (6, 8)}, ["--steps", "6..8"]),
        ({"steps": 7}, ["--steps", "7"]),
        ({"steps": (9, None)}, ["--steps", "9.."]),
        ({"all_steps": True}, ["--all"]),
        ({"time": (200000.0, 600000.0)}, ["--time", "200000..600000"]),
        ({"focus": "Optimizer.step"}, ["--focus", "Optimizer.step"]),
        ({"steps": "6..8", "threads": 1}, ["--steps", "6..8", "--threads", "1"]),
    ],
)
def test_window_options_equal_the_command_flags(kwargs, flags):
    assert_same_report(stallscope.analyze(RESNET, **kwargs), cli_json(str(RESNET), *flags))


def test_a_folder_of_ranks(tmp_path):
    for i, name in enumerate(["h100_bert_small.json.gz", "mi300x_bert_small.json.gz"]):
        shutil.copy(SAMPLES / name, tmp_path / f"rank-{i}.json.gz")
    r = stallscope.analyze(tmp_path)
    assert_same_report(r, cli_json(str(tmp_path)))
    assert [k["rank"] for k in r.ranks["ranks"]] == [0, 1]
    df = r.to_pandas("ranks")
    assert list(df.columns) == csv_header(str(tmp_path), "ranks")
    assert df["rank"].tolist() == [0, 1]
    with pytest.raises(ValueError, match="no such rank"):
        stallscope.analyze(tmp_path, rank=7)


def test_nsight_systems_sqlite():
    p = corpus_file("nsys/sqlite/generated_nvtx_nested_cpuonly_nsys2023.4.sqlite")
    assert_same_report(stallscope.analyze(p), cli_json(str(p)))


def test_nsight_compute_csv_alone_and_joined():
    p = corpus_file("ncu/csv/esmm_gemm_a10g_page-details.csv")
    r = stallscope.analyze(p)
    assert_same_report(r, cli_json(str(p)))
    assert r.ncu is not None and r.ncu["launches"]
    with pytest.raises(ValueError, match="no HTML report"):
        r.to_html()
    joined = stallscope.analyze(RESNET, ncu=p)
    assert_same_report(joined, cli_json(str(RESNET), "--ncu", str(p)))


# -- tables ---------------------------------------------------------------------------------


def csv_header(path: str, view: str) -> list[str]:
    out = run("analyze", path, "--format", "csv", "--view", view, "--quiet").stdout
    return next(csv.reader(io.StringIO(out)))


def csv_rows(path: str, view: str) -> list[list[str]]:
    out = run("analyze", path, "--format", "csv", "--view", view, "--quiet").stdout
    return list(csv.reader(io.StringIO(out)))[1:]


def same_cell(value, text: str) -> bool:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return text == ""
    if isinstance(value, bool):
        return text == str(value).lower()
    if isinstance(value, (int, float)):
        return float(text) == pytest.approx(float(value), rel=1e-12, abs=1e-9)
    return str(value) == text


@pytest.mark.parametrize("view", ["steps", "kernels", "copies", "ops", "phases"])
@pytest.mark.parametrize(
    "path", [RESNET, SAMPLES / "h100_bert_small.json.gz"], ids=lambda p: p.name
)
def test_dataframes_are_the_command_csv_views(path, view):
    df = stallscope.analyze(path).to_pandas(view)
    assert list(df.columns) == csv_header(str(path), view)
    rows = csv_rows(str(path), view)
    assert len(df) == len(rows) > 0
    for record, row in zip(df.itertuples(index=False), rows):
        for value, text in zip(record, row):
            assert same_cell(value, text), (view, value, text)


def test_dataframe_units():
    r = stallscope.analyze(RESNET)
    steps = r.to_pandas("steps")
    parts = [c for c in steps.columns if c.endswith("_us") and c not in ("start_us", "duration_us")]
    assert parts == [
        "kernel_us",
        "memcpy_us",
        "memset_us",
        "communication_us",
        "runtime_us",
        "dataloader_us",
        "cpu_exec_us",
        "other_us",
    ]
    # µs: the parts sum to the step, and the mean step is the report's
    assert (steps[parts].sum(axis=1) - steps["duration_us"]).abs().max() < 1e-6
    assert steps["duration_us"].mean() == pytest.approx(r.step_time_us)
    kernels = r.to_pandas("kernels")
    assert kernels["share"].between(0, 1).all()
    assert kernels["share"].sum() == pytest.approx(1.0)
    assert (kernels["mean_us"] * kernels["calls"] - kernels["total_us"]).abs().max() < 1e-6
    assert kernels["occupancy_pct"].dropna().between(0, 100).all()
    assert kernels["tensor_core"].dtype == bool
    ops = r.to_pandas("ops")
    assert ops["device_self_us"].is_monotonic_decreasing
    assert (ops["host_self_us"] <= ops["host_total_us"] + 1e-6).all()
    phases = r.to_pandas("phases")
    assert phases["gpu_share"].between(0, 1).all()
    findings = r.to_pandas("findings")
    assert list(findings.columns) == [
        "rank",
        "id",
        "severity",
        "title",
        "recoverable_us",
        "recoverable_basis",
        "facts",
        "advice",
    ]
    assert findings["rank"].tolist() == list(range(1, len(r.findings) + 1))
    assert findings["id"].tolist() == [f.id for f in r.findings]
    assert findings["recoverable_us"].is_monotonic_decreasing
    assert findings["advice"][0] == "\n".join(r.findings[0].advice)
    with pytest.raises(ValueError, match="view must be one of"):
        r.to_pandas("nope")


def test_polars_tables_equal_pandas():
    pl = pytest.importorskip("polars")
    r = stallscope.analyze(RESNET)
    for view in ("steps", "kernels", "ops", "phases", "findings"):
        p = r.to_polars(view)
        assert isinstance(p, pl.DataFrame)
        assert p.columns == list(r.to_pandas(view).columns)
        assert p.to_dicts() == r.to_pandas(view).to_dict("records")


# -- renderings -----------------------------------------------------------------------------


def test_html_and_markdown_are_the_command_outputs(tmp_path):
    r = stallscope.analyze(RESNET)
    out = tmp_path / "r.html"
    r.save_html(out)
    assert out.read_text(encoding="utf-8") == run("analyze", str(RESNET), "-f", "html").stdout
    assert r.to_markdown() == run("analyze", str(RESNET), "-f", "md").stdout


def test_repr_and_repr_html():
    r = stallscope.analyze(RESNET)
    text = repr(r)
    assert r.verdict in text
    assert r.findings[0].title in text and r.findings[2].title in text
    assert r.findings[3].title not in text
    assert r.verdict in str(r)
    page = r._repr_html_()
    assert page.startswith('<iframe sandbox="allow-scripts"')
    # the whole report is inside the attribute: no raw tag of it reaches the notebook
    assert page.count("<") == 2 and "<script" not in page and "<style" not in page


# -- errors ---------------------------------------------------------------------------------


def test_trace_errors(tmp_path):
    data = gzip.decompress(RESNET.read_bytes())
    truncated = tmp_path / "truncated.json"
    truncated.write_bytes(data[: len(data) // 2])
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    text = tmp_path / "notes.txt"
    text.write_text("these are not the traces you are looking for\n")
    cut_gz = tmp_path / "cut.json.gz"
    cut_gz.write_bytes(RESNET.read_bytes()[:100_000])
    for bad in (truncated, empty, text, cut_gz, tmp_path / "missing.json"):
        with pytest.raises(stallscope.TraceError) as info:
            stallscope.analyze(bad)
        e = info.value
        assert isinstance(e, ValueError)
        assert e.path == str(bad)
        assert str(bad) in str(e)
        # the command says the same, and exits 2
        p = run("analyze", str(bad), check=False)
        assert p.returncode == 2
        assert p.stderr.strip() == f"error: {e}"
    with pytest.raises(stallscope.TraceError) as info:
        stallscope.analyze(truncated)
    assert info.value.offset is not None and 0 < info.value.offset <= len(data) // 2
    with pytest.raises(stallscope.TraceError) as info:
        stallscope.analyze(text)
    assert info.value.offset == 0
    # a truncated file can still be analyzed on request, with a warning
    r = stallscope.analyze(truncated, allow_truncated=True)
    assert r.warnings


def test_bad_options_are_value_errors():
    with pytest.raises(ValueError, match="exclude each other"):
        stallscope.analyze(RESNET, all_steps=True, steps="6..8")
    with pytest.raises(ValueError, match="steps="):
        stallscope.analyze(RESNET, steps="six")
    with pytest.raises(ValueError, match="selects no step"):
        stallscope.analyze(RESNET, steps="50..60")
    with pytest.raises(ValueError, match="at least 1"):
        stallscope.analyze(RESNET, threads=0)
    with pytest.raises(ValueError, match="folder"):
        stallscope.analyze(RESNET, rank=1)


# -- the package ----------------------------------------------------------------------------


def test_import_pulls_in_no_heavy_module():
    code = (
        "import sys, stallscope; "
        "print(sorted(m for m in ('torch', 'pandas', 'polars', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_python_m_stallscope_is_the_command():
    m = [sys.executable, "-m", "stallscope"]
    p = subprocess.run([*m, "analyze", str(RESNET), "-f", "json"], capture_output=True, text=True)
    assert p.returncode == 0
    assert p.stdout == run("analyze", str(RESNET), "-f", "json").stdout
    p = subprocess.run([*m, "analyze", "/nonexistent.json"], capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.startswith("error: /nonexistent.json")
    p = subprocess.run([*m, "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "analyze" in p.stdout
    p = subprocess.run([*m, "frobnicate"], capture_output=True, text=True)
    assert p.returncode == 2
    # the wheel's `stallscope` script, beside the interpreter it was installed for
    script = Path(sys.executable).parent / "stallscope"
    if script.exists():
        p = subprocess.run([str(script), "analyze", str(RESNET), "-f", "json"], capture_output=True)
        assert p.returncode == 0 and json.loads(p.stdout) == stallscope.analyze(RESNET).to_dict()
    else:
        assert os.environ.get("STALLSCOPE_BIN") is None, "no stallscope script in the venv"


def test_help_shows_the_docstrings():
    assert "TraceError" in stallscope.analyze.__doc__
    assert "steady" in stallscope.analyze.__doc__
    assert stallscope.Report.to_pandas.__doc__ and stallscope.profile.__doc__
    # typed: the installed package carries py.typed
    assert (Path(stallscope.__file__).parent / "py.typed").exists()


def test_the_gil_is_released_during_the_analysis():
    # the main thread keeps running while another thread analyzes: no pause near the
    # analysis' own length (which it would be if the GIL were held)
    start = time.perf_counter()
    stallscope.analyze(RESNET, all_steps=True, threads=1).to_json()
    alone = time.perf_counter() - start
    t = threading.Thread(target=stallscope.analyze, args=(RESNET,), kwargs={"threads": 1})
    gaps, last = [], time.perf_counter()
    t.start()
    while t.is_alive():
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
    assert alone > 0.02
    assert max(gaps) < alone / 2, (max(gaps), alone)
