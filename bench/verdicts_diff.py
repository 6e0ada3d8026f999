#!/usr/bin/env python3
"""Markdown table of the verdicts and first three findings that changed between two snapshots.

Usage: bench/verdicts_diff.py BEFORE/verdicts.tsv AFTER/verdicts.tsv [EXPLAIN.tsv]

The snapshots are those of bench/snap.sh (one line per corpus file: key, verdict,
first three findings). EXPLAIN.tsv, optional, maps a key to the one-line reason of its change
(key<TAB>reason). Files whose verdict and findings are the same are counted, not listed.
"""

import sys


def read(path):
    rows = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            key = parts[0]
            verdict = parts[1] if len(parts) > 1 else ""
            findings = parts[2] if len(parts) > 2 else ""
            rows[key] = (verdict, findings)
    return rows


def cell(text):
    return text.replace("|", "\\|") or "—"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    before, after = read(sys.argv[1]), read(sys.argv[2])
    reasons = read(sys.argv[3]) if len(sys.argv) > 3 else {}
    changed = [k for k in sorted(before) if before[k] != after.get(k)]
    added = [k for k in sorted(after) if k not in before]
    print(
        f"{len(before)} files before, {len(after)} after; {len(changed)} changed, "
        f"{len(added)} new, {len(before) - len(changed)} unchanged.\n"
    )
    print(
        "| file | before: verdict / first findings | after: verdict / first findings | why |"
    )
    print("|---|---|---|---|")
    for k in changed + added:
        b = before.get(k, ("", ""))
        a = after.get(k, ("(missing)", ""))
        why = reasons.get(k, ("", ""))[0]
        print(
            f"| `{k}` | {cell(b[0])}<br>{cell(b[1])} | {cell(a[0])}<br>{cell(a[1])} | "
            f"{cell(why)} |"
        )


if __name__ == "__main__":
    main()
