"""`stallscope.diff` against `stallscope diff --format json`."""

from __future__ import annotations

import json

import pytest
import stallscope
from conftest import SAMPLES, corpus_file, run

RESNET = SAMPLES / "resnet50_v100_num_workers_0.pt.trace.json.gz"
BERT = SAMPLES / "h100_bert_small.json.gz"


def cli_diff(before, after, *flags: str) -> dict:
    """``stallscope diff BEFORE AFTER FLAGS --format json`` as a dict."""
    p = run("diff", str(before), str(after), *flags, "--format", "json", "--quiet")
    return json.loads(p.stdout)


def test_a_sample_against_itself_is_no_change():
    c = stallscope.diff(RESNET, RESNET)
    assert c.change_us == 0.0
    assert c.change_pct == 0.0
    assert c.judgement in ("within_noise", "too_few_steps")
    assert c.verdicts[0] == c.verdicts[1]
    assert c.resolved == [] and c.new == []
    assert all(f["status"] == "unchanged" for f in c.findings)
    assert all(k["status"] == "unchanged" for k in c.to_dict()["kernels"])
    assert all(r["change_us"] == 0.0 for r in c.contributors)
    # a Report as either side gives the same comparison as its path
    rep = stallscope.analyze(RESNET)
    # a Report made in this process keeps its workload facts (first layer, batch, dtypes), so
    # the comparison, its same-workload check included, is the same as from the trace itself
    assert stallscope.diff(rep, RESNET).to_dict() == c.to_dict()
    assert stallscope.diff(RESNET, rep).step_time == c.step_time


def test_to_dict_equals_the_command_json_on_samples(tmp_path):
    assert stallscope.diff(BERT, RESNET).to_dict() == cli_diff(BERT, RESNET)
    # the sides read one after the other: the same comparison, as the command's flag
    got = stallscope.diff(BERT, RESNET, sequential=True).to_dict()
    assert got == cli_diff(BERT, RESNET, "--sequential")
    assert got == cli_diff(BERT, RESNET)
    # a saved JSON report as a side, and the window options as flags
    saved = tmp_path / "bert.json"
    saved.write_text(run("analyze", str(BERT), "--format", "json").stdout)
    got = stallscope.diff(saved, BERT, all_steps=True).to_dict()
    assert got == cli_diff(saved, BERT, "--all")
    assert (
        stallscope.diff(BERT, BERT, steps="5..8").to_json()
        == run("diff", str(BERT), str(BERT), "--steps", "5..8", "--format", "json").stdout
    )


def test_to_dict_equals_the_command_json_on_the_corpus():
    b = corpus_file(
        "tbprof/tb_plugin__samples__resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz"
    )
    a = corpus_file(
        "tbprof/tb_plugin__samples__resnet50_num_workers_4__worker0.1623212756351.pt.trace.json.gz"
    )
    c = stallscope.diff(b, a)
    assert c.to_dict() == cli_diff(b, a)
    # DataLoader 59262 → 1186 µs per step: faster beyond noise
    assert c.judgement == "faster" and c.change_us < 0
    assert sum(r["change_us"] for r in c.contributors) == pytest.approx(c.change_us, abs=1e-6)


def test_tables_renderings_and_repr():
    c = stallscope.diff(BERT, RESNET)
    d = c.to_dict()
    df = c.to_pandas("contributors")
    assert list(df["name"]) == [r["name"] for r in d["contributors"]]
    assert df["change_us"].sum() == pytest.approx(c.change_us, abs=1e-6)
    k = c.to_pandas("kernels")
    assert len(k) == len(d["kernels"])
    assert set(k["status"]) <= {"added", "removed", "increased", "decreased", "unchanged"}
    added = k[k["status"] == "added"]
    assert added["calls_before"].isna().all() and added["before_us"].isna().all()
    for view in stallscope.DIFF_VIEWS:
        cols, rows = c.table(view)
        if view in ("runs", "check"):
            # one capture per side, no budget: no runs, no budget metrics
            assert rows == [], view
        else:
            assert len(rows) == len(d[view])
    with pytest.raises(ValueError, match="view must be one of"):
        c.table("steps")
    assert c.to_markdown() == run("diff", str(BERT), str(RESNET), "--format", "md").stdout
    assert c.to_html() == run("diff", str(BERT), str(RESNET), "--format", "html").stdout
    frame = c._repr_html_()
    assert frame.startswith('<iframe sandbox="allow-scripts"') and "<script" not in frame
    assert c.summary in repr(c) and c.verdicts[1] in repr(c)


def test_a_bad_side_is_a_trace_error_naming_it(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"traceEvents": [')
    with pytest.raises(stallscope.TraceError, match=r"^after side: ") as e:
        stallscope.diff(RESNET, bad)
    assert e.value.path == str(bad) and "broken.json" in str(e.value)
    missing = tmp_path / "missing.json"
    with pytest.raises(stallscope.TraceError, match=r"^before side: ") as e:
        stallscope.diff(missing, RESNET)
    assert e.value.path == str(missing)
    with pytest.raises(TypeError, match="after must be a path or a Report"):
        stallscope.diff(RESNET, 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="steps"):
        stallscope.diff(RESNET, RESNET, steps="x..y")


def _runs():
    stem = "tbprof/tb_plugin__samples__resnet50_num_workers_"
    before = [
        corpus_file(f"{stem}0__worker0.1623143089861.pt.trace.json.gz"),
        corpus_file(f"{stem}0__worker0.1623143566756.pt.trace.json.gz"),
    ]
    after = [
        corpus_file(f"{stem}4__worker0.1623212756351.pt.trace.json.gz"),
        corpus_file(f"{stem}4__worker0.1623213129365.pt.trace.json.gz"),
    ]
    return before, after


def test_repeated_runs_equal_the_command(tmp_path):
    """``diff([...], [...])`` is ``stallscope diff --before A1 A2 --after B1 B2``; ``check``
    is ``stallscope check B1 B2 --baseline A1 A2`` with its outcome and exit code."""
    before, after = _runs()
    p = run(
        "diff",
        "--before",
        *map(str, before),
        "--after",
        *map(str, after),
        "--format",
        "json",
        "--quiet",
    )
    cmd = json.loads(p.stdout)
    c = stallscope.diff(before, after)
    assert c.to_dict() == cmd
    assert c.verdict == cmd["verdict"] and c.verdict["basis"] == "runs"
    assert c.repeats == cmd["repeats"] and c.parity == cmd["parity"]
    assert c.check is None and c.outcome is None
    # a tuple and Reports are sides too
    reps = [stallscope.analyze(x) for x in before]
    assert stallscope.diff(tuple(reps), after).to_dict()["repeats"] == cmd["repeats"]
    # the runs table: one row per capture, the representative marked
    cols, rows = c.table("runs")
    assert cols == ["side", "path", "steps", "mean_us", "stdev_us", "representative"]
    assert [r[1] for r in rows] == [str(x) for x in before + after]
    for side in ("before", "after"):
        got = [r[3] for r in rows if r[0] == side]
        assert got == [x["mean_us"] for x in cmd["repeats"][side]["runs"]]
        assert sum(r[5] for r in rows if r[0] == side) == 1
    # check, 5 % budget: the command's JSON, and its exit code from the outcome
    p = run(
        "check",
        *map(str, after),
        "--baseline",
        *map(str, before),
        "--max-regression",
        "5%",
        "--format",
        "json",
        "--quiet",
        check=False,
    )
    k = stallscope.check(after, before, max_regression=5)
    assert k.to_dict() == json.loads(p.stdout)
    assert p.returncode == {"pass": 0, "regression": 1, "inconclusive": 3}[k.outcome]
    assert p.stderr.strip().splitlines()[-1] == k.check["summary"]
    assert [r[0] for r in k.table("check")[1]] == [m["metric"] for m in k.check["metrics"]]
    with pytest.raises(ValueError, match="empty list"):
        stallscope.diff([], after)


def test_check_inconclusive_and_pass_on_samples():
    """Two steps a side: too few to judge the noise, the outcome is ``inconclusive`` (exit 3);
    all six steps: ``pass``."""
    loop = SAMPLES / "torch_cpu_loss_loop.json.gz"
    assert stallscope.check(loop, loop, steps="3..4").outcome == "inconclusive"
    assert stallscope.check(loop, loop).outcome == "pass"
    p = run("check", str(loop), "--baseline", str(loop), "--steps", "3..4", check=False)
    assert p.returncode == 3
