"""The README's Dask recipe: a bag of rank paths summarised on the workers and merged in a
tree (`merge_summaries` as the bag's reduction) gives the report of ``analyze FOLDER``."""

from __future__ import annotations

import os

import pytest
import stallscope
from conftest import cli_json
from rank_sets import built_folder, dlrm_folder, rank_files

# scripts/test (CI) installs Dask and sets STALLSCOPE_REQUIRE_ENGINES=1: there it must import
if os.environ.get("STALLSCOPE_REQUIRE_ENGINES") == "1":
    import dask.bag as db
else:
    db = pytest.importorskip("dask.bag")


@pytest.mark.parametrize("folder", [dlrm_folder, built_folder])
def test_dask_bag_tree_merge_equals_analyze_folder(folder, tmp_path):
    d = folder(tmp_path)
    paths = db.from_sequence(rank_files(d), npartitions=3)
    merged = (
        paths.map(stallscope.summarize)
        .reduction(stallscope.merge_summaries, stallscope.merge_summaries, split_every=2)
        .compute(scheduler="threads")
    )
    assert stallscope.merge([merged], jobs=2).to_dict() == cli_json(str(d), "--jobs", "2")
