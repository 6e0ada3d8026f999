"""Shared fixtures: the repository's samples, the corpus and the command to compare with.

The command is ``$STALLSCOPE_BIN`` (scripts/test sets it to the cargo-built
``target/release/stallscope``), else the ``stallscope`` script of the installed wheel.
Corpus files are read from ``../shared/corpus`` (or ``$STALLSCOPE_CORPUS``): when absent the
tests that need them print ``CORPUS ABSENT … test skipped`` and skip, unless
``STALLSCOPE_REQUIRE_CORPUS=1``, which makes them fail (CI).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
# the Kineto traces shipped in samples/ (the .csv files beside them are oracles)
SAMPLE_TRACES = sorted(p for p in SAMPLES.iterdir() if p.name.endswith((".json", ".json.gz")))


def command() -> list[str]:
    """The stallscope command to compare the Python API with."""
    bin_ = os.environ.get("STALLSCOPE_BIN")
    if bin_:
        return [bin_]
    script = shutil.which("stallscope")
    if script:
        return [script]
    return [sys.executable, "-m", "stallscope"]


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Runs the command with ``args``; stdout and stderr as text."""
    p = subprocess.run([*command(), *args], capture_output=True, text=True, check=False)
    if check and p.returncode != 0:
        raise AssertionError(f"stallscope {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p


def cli_json(*args: str) -> dict:
    """``stallscope analyze ARGS --format json`` as a dict."""
    return json.loads(run("analyze", *args, "--format", "json", "--quiet").stdout)


def corpus_file(rel: str) -> Path:
    """A corpus file, or a skip (a failure with STALLSCOPE_REQUIRE_CORPUS=1) when absent."""
    root = Path(os.environ.get("STALLSCOPE_CORPUS", REPO.parent / "shared" / "corpus"))
    required = os.environ.get("STALLSCOPE_REQUIRE_CORPUS") == "1"
    p = root / rel
    if p.exists():
        return p
    if required:
        pytest.fail(f"corpus file missing but STALLSCOPE_REQUIRE_CORPUS=1: {p}")
    print(f"CORPUS ABSENT ({p}): test skipped; set STALLSCOPE_CORPUS to run it", file=sys.stderr)
    pytest.skip(f"CORPUS ABSENT: {p}")
