"""`stallscope.summarize` and `stallscope.merge`: the merged report equals the command's
``analyze FOLDER`` (and the Python `analyze`), from paths and from bytes, in any merge tree,
with an unreadable rank listed as skipped."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import stallscope
from conftest import cli_json, run
from rank_sets import built_folder, dlrm_folder, rank_files


def test_dlrm_merge_equals_analyze_folder(tmp_path):
    d = dlrm_folder(tmp_path)
    parts = [stallscope.summarize(p) for p in rank_files(d)]
    merged = stallscope.merge(parts, jobs=2)
    assert merged.to_dict() == cli_json(str(d), "--jobs", "2")
    assert merged.to_json() == stallscope.analyze(d, jobs=2).to_json()
    # the merged report renders like any other
    assert "Communication imbalance" in merged.to_markdown()
    # summaries are plain JSON, kilobytes, and the same as the command's
    assert all(len(json.dumps(p)) < 1 << 20 for p in parts)
    out = tmp_path / "r0.summary.json"
    run("summarize", rank_files(d)[0], "-o", str(out), "-q")
    assert json.loads(out.read_text()) == parts[0]
    # in a tree, in any order, from files
    left = stallscope.merge_summaries(parts[:3])
    right = stallscope.merge_summaries([parts[7], *parts[3:7]])
    assert stallscope.merge_summaries([right, left]) == stallscope.merge_summaries(parts)
    assert (
        stallscope.merge(
            [
                left,
                right,
            ],
            jobs=2,
        ).to_json()
        == merged.to_json()
    )
    assert stallscope.merge([out, *parts[1:]], jobs=2).to_json() == merged.to_json()


def test_bytes_and_an_unreadable_rank(tmp_path):
    d = built_folder(tmp_path)
    files = rank_files(d)
    parts = [stallscope.summarize(open(p, "rb").read(), name=p) for p in files]
    skipped = [p for p in parts if p["skipped"]]
    assert len(skipped) == 1 and skipped[0]["skipped"][0]["path"] == str(d / "rank3.json")
    # the error names the recorded path, not the temporary file
    assert "stallscope-" not in skipped[0]["skipped"][0]["error"]
    assert parts == [stallscope.summarize(p) for p in files]
    report = stallscope.merge(reversed(parts), jobs=2)
    assert report.to_dict() == cli_json(str(d), "--jobs", "2")
    assert [s["path"] for s in report.ranks["skipped"]] == [str(d / "rank3.json")]
    with pytest.raises(ValueError, match="name="):
        stallscope.summarize(b"{}")
    with pytest.raises(stallscope.TraceError, match="not a stallscope summary"):
        stallscope.merge([{"x": 1}])
    with pytest.raises(stallscope.TraceError, match="no rank could be analysed"):
        stallscope.merge([p for p in parts if p["skipped"]])


def test_import_does_not_import_ray():
    code = "import sys, stallscope, stallscope.ray; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
