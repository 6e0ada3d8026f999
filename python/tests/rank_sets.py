"""Rank folders for the summary and Ray tests: the eight DLRM ranks of the corpus, and a set
built from the samples with a truncated (unreadable) rank file."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import SAMPLES, corpus_file

DLRM = (
    "param/et_replay__tests__inputs__dlrm_kineto.tar.gz__dlrm_kineto__"
    "worker{}_step_12.{}.pt.trace.json.gz"
)
DLRM_STAMPS = [
    "1694128201545",
    "1694128201556",
    "1694128201554",
    "1694128201557",
    "1694128201547",
    "1694128201549",
    "1694128201553",
    "1694128201553",
]


def dlrm_folder(tmp: Path) -> Path:
    """The eight DLRM ranks linked into ``tmp/dlrm`` (a skip without the corpus)."""
    d = tmp / "dlrm"
    d.mkdir()
    for i, stamp in enumerate(DLRM_STAMPS):
        src = corpus_file(DLRM.format(i, stamp))
        os.symlink(src, d / src.name)
    return d


def built_folder(tmp: Path) -> Path:
    """Three sample ranks (one numbered by its place in the folder) and a truncated one."""
    d = tmp / "built"
    d.mkdir()
    os.symlink(SAMPLES / "h100_bert_small.json.gz", d / "a.json.gz")
    os.symlink(SAMPLES / "h100_kineto_2026_format.json", d / "rank1.json")
    os.symlink(SAMPLES / "mi300x_bert_small.json.gz", d / "worker5.json.gz")
    full = (SAMPLES / "h100_kineto_2026_format.json").read_bytes()
    (d / "rank3.json").write_bytes(full[: len(full) // 2])
    return d


def rank_files(d: Path) -> list[str]:
    return sorted(str(d / n) for n in os.listdir(d))
