"""`stallscope.ray.analyze` on a real local Ray cluster (started here with two CPUs, shut
down at the end): the report equals ``stallscope analyze FOLDER --jobs 2``; a worker that
dies mid-run is retried and the report is still exact; an unreadable rank is listed as
skipped as the command lists it."""

from __future__ import annotations

import os
import sys

import pytest
import stallscope
import stallscope.ray
from conftest import cli_json
from rank_sets import built_folder, dlrm_folder

# scripts/test (CI) installs Ray and sets STALLSCOPE_REQUIRE_ENGINES=1: there Ray must import
if os.environ.get("STALLSCOPE_REQUIRE_ENGINES") == "1":
    import ray
else:
    ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, logging_level="error")
    # the functions of this module run on the workers: send them by value
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    ray.shutdown()


def test_dlrm_on_ray_equals_analyze_folder(cluster, tmp_path):
    d = dlrm_folder(tmp_path)
    seen = []
    r = stallscope.ray.analyze(
        str(d / "*.json.gz"),
        max_concurrency_per_node=2,
        progress=lambda done, total, path: seen.append((done, total)),
    )
    assert r.to_dict() == cli_json(str(d), "--jobs", "2")
    assert seen == [(i, 8) for i in range(1, 9)]
    # a folder, and a list of paths, give the same
    assert stallscope.ray.analyze(d, progress=False).to_json() == r.to_json()


def crash_once(marker: str):
    """A summarize that kills its worker process the first time it runs."""

    def summarize(path: str, **opts):
        if not os.path.exists(marker):
            with open(marker, "w") as f:
                f.write(path)
            os._exit(1)
        return stallscope.summarize(path, **opts)

    return summarize


def test_a_dead_worker_is_retried_and_the_report_is_exact(cluster, tmp_path):
    d = built_folder(tmp_path)
    marker = tmp_path / "crashed"
    r = stallscope.ray.analyze(
        d,
        max_concurrency_per_node=2,
        max_retries=2,
        progress=False,
        summarize_fn=crash_once(str(marker)),
    )
    assert marker.exists(), "no worker died: the test did not test the retry"
    want = cli_json(str(d), "--jobs", "2")
    assert r.to_dict() == want
    # the truncated rank is skipped, as the command skips it
    assert [s["path"] for s in r.ranks["skipped"]] == [str(d / "rank3.json")]
    assert r.ranks["skipped"] == want["ranks"]["skipped"]


def test_no_retries_left_raises(cluster, tmp_path):
    d = built_folder(tmp_path)
    with pytest.raises(ray.exceptions.RayError):
        stallscope.ray.analyze(
            d, max_retries=0, progress=False, summarize_fn=crash_once(str(tmp_path / "m"))
        )
