#!/usr/bin/env bash
# 256 rank files for the distributed figures of docs/performance.md ("Per-rank summaries on
# Ray"): the eight DLRM ranks of the corpus, each scaled to about 8 MB by repeating its step
# (examples/scale_trace.rs), copied 32 times with `distributedInfo.rank` rewritten to 0..255
# and world_size 256. Written to OUT (default /tmp/stallscope-r256, ~2 GB; the eight scaled
# ranks in OUT-scaled); never commit them.
#
#   bash bench/ranks256.sh [OUT] [CORPUS]
set -euo pipefail
out=${1:-/tmp/stallscope-r256}
corpus=${2:-${STALLSCOPE_CORPUS:-$(cd "$(dirname "$0")/.." && pwd)/../shared/corpus}}
scale=${SCALE_TRACE:-target/release/examples/scale_trace}
scaled=$out-scaled
mkdir -p "$out" "$scaled"
for w in 0 1 2 3 4 5 6 7; do
    src=$(ls "$corpus"/param/*dlrm_kineto__worker${w}_step_12.*.pt.trace.json.gz)
    [[ -f $scaled/w$w.json ]] || "$scale" "$src" "$scaled/w$w.json" --size 8M >/dev/null
done
for i in $(seq 0 255); do
    w=$((i % 8))
    sed "s/\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": $w, \"world_size\": 8}/\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": $i, \"world_size\": 256}/" \
        "$scaled/w$w.json" >"$out/rank$(printf %03d "$i").json"
done
if grep -L '"world_size": 256' "$out"/rank*.json | grep -q .; then
    echo "distributedInfo not rewritten in every file" >&2
    exit 1
fi
echo "$out: $(ls "$out"/rank*.json | wc -l) files, $(du -sh --apparent-size "$out" | cut -f1)"
