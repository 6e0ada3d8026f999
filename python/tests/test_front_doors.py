"""The Python door agrees with the command: for every corpus file and sample (and every folder
of two or more traces among them), ``stallscope.analyze(path).to_dict()`` equals ``json.load``
of ``stallscope analyze PATH --format json``, or both refuse the input with the same message.
``tests/front_doors.rs`` checks the MCP server's ``analyze`` tool and the library's api the same
way."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import stallscope
from conftest import REPO, SAMPLES, run

CORPUS = Path(os.environ.get("STALLSCOPE_CORPUS", REPO.parent / "shared" / "corpus"))
SUFFIXES = (".json", ".gz", ".sqlite", ".csv")


def inputs() -> list[Path]:
    """The inputs of ``bench/same_output.sh``: files, then folders of two or more traces."""
    roots = [SAMPLES] + ([CORPUS] if CORPUS.is_dir() else [])
    files, folders = [], []
    for root in roots:
        for d, _, names in os.walk(root):
            low = [n.lower() for n in names]
            files += [Path(d) / n for n, lo in zip(names, low) if lo.endswith(SUFFIXES)]
            if sum(lo.endswith((".json", ".json.gz")) for lo in low) >= 2:
                folders.append(Path(d))
    return sorted(files) + sorted(folders)


@pytest.mark.parametrize("path", inputs(), ids=lambda p: str(p.relative_to(p.parents[1])))
def test_to_dict_is_the_command_json(path: Path) -> None:
    p = run("analyze", str(path), "--format", "json", "--threads", "1", "--quiet", check=False)
    if p.returncode == 0:
        expected = json.loads(p.stdout)
        assert stallscope.analyze(path, threads=1).to_dict() == expected
    else:
        assert p.returncode == 2, p.stderr
        with pytest.raises((stallscope.TraceError, ValueError)) as e:
            stallscope.analyze(path, threads=1)
        assert p.stderr.strip().splitlines()[-1] == f"error: {e.value}"
