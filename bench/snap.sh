#!/usr/bin/env bash
# Snapshot of the diagnosis on every corpus file and sample, for before/after comparisons of a
# change to the verdict or the findings (see docs/verdicts/):
#
#   bash bench/snap.sh BINARY OUTDIR
#
# writes OUTDIR/KEY.json (`analyze --format json --threads 1`), OUTDIR/KEY.err (stderr and the
# exit code) and OUTDIR/verdicts.tsv (key, verdict, first three findings with severities).
# Two snapshots compare with `python3 bench/verdicts_diff.py A/verdicts.tsv B/verdicts.tsv`;
# identical *.json files mean a change moved no figure (`diff -r -q A B`).
set -u
BIN=$(realpath "$1"); OUT=$2; mkdir -p "$OUT"
cd "$(dirname "$0")/.."
CORPUS=${STALLSCOPE_CORPUS:-../shared/corpus}
: > "$OUT/verdicts.tsv"
find "$CORPUS" samples -type f \( -name '*.json' -o -name '*.gz' -o -name '*.sqlite' -o -name '*.csv' \) \
  | sort | while read -r f; do
  key=$(echo "$f" | sed "s#^$CORPUS/##; s#/#__#g")
  timeout 120 "$BIN" analyze "$f" --format json --threads 1 > "$OUT/$key.json" 2> "$OUT/$key.err"
  echo "rc=$?" >> "$OUT/$key.err"
  python3 - "$OUT/$key.json" "$key" >> "$OUT/verdicts.tsv" <<'PY'
import json
import sys

try:
    d = json.load(open(sys.argv[1]))
except Exception:
    print(sys.argv[2] + "\t(error)")
    sys.exit()
fs = d.get("findings") or []
ids = "; ".join(f"{x.get('id')}({x.get('severity')})" for x in fs[:3])
print(f"{sys.argv[2]}\t{d.get('verdict')}\t{ids}")
PY
done
