#!/usr/bin/env bash
# Cost of `stallscope diff` against analyzing both sides (issue 16's bound: diff of two traces
# ≤ 1.2 × analyze of both; a saved report on a side costs nothing measurable).
#
#   bash bench/diff.sh             # REPEAT=3 rounds by default
#
# Uses $BENCH_DATA/dfi-1G.json (made by bench/run.sh's generator if missing) and a copy of it
# as the second side. Each round runs, alternating so that the machine's load hits every case
# alike: analyze A + analyze B (one after the other), diff A B, diff A B --sequential, analyze
# B, diff base.json B; then the peak RSS of analyze A, diff A B and diff A B --sequential (one
# run each). On a shared machine compare the ratios within a round, not the absolute times.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${BENCH_DATA:-/work/bench-data}
BASE=${BENCH_BASE:-../shared/corpus/hta/tests__data__df_index_resolver__df_index_resolver.json.gz}
REPEAT=${REPEAT:-3}
SIZE=${SIZE:-1G}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
BIN=$CARGO_TARGET_DIR/release/stallscope
GEN=$CARGO_TARGET_DIR/release/examples/scale_trace
cargo build --release --quiet --example scale_trace --bin stallscope
mkdir -p "$DATA"
A=$DATA/dfi-$SIZE.json
B=$DATA/dfi-$SIZE-b.json
[[ -s $A && -s $A.meta.json ]] || "$GEN" "$BASE" "$A" --size "$SIZE"
[[ -s $B ]] || cp "$A" "$B"
REP=$DATA/dfi-$SIZE.report.json
"$BIN" analyze "$A" --format json -o "$REP"
cat "$A" "$B" >/dev/null # page cache

t() { # t CMD...: wall seconds
    local s e
    s=$(date +%s.%N)
    "$@" >/dev/null
    e=$(date +%s.%N)
    echo "$e - $s" | bc -l
}
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  nproc: $(nproc)  uptime: $(uptime)"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo '?')  inputs: $A, $B ($(stat -c %s "$A") bytes each)"
printf '%-6s %12s %9s %6s %13s %6s %10s %14s %6s\n' round "analyze A+B" "diff A B" ratio \
    "--sequential" ratio "analyze B" "diff rep.json B" ratio
for r in $(seq "$REPEAT"); do
    ab=$( { t "$BIN" analyze "$A" --format json; t "$BIN" analyze "$B" --format json; } | paste -sd+ | bc -l)
    d=$(t "$BIN" diff "$A" "$B" --format json)
    ds=$(t "$BIN" diff "$A" "$B" --sequential --format json)
    b=$(t "$BIN" analyze "$B" --format json)
    dr=$(t "$BIN" diff "$REP" "$B" --format json)
    printf '%-6s %12.2f %9.2f %6.2f %13.2f %6.2f %10.2f %14.2f %6.2f\n' "$r" "$ab" "$d" \
        "$(echo "$d / $ab" | bc -l)" "$ds" "$(echo "$ds / $ab" | bc -l)" "$b" "$dr" \
        "$(echo "$dr / $b" | bc -l)"
done
rss() { # rss CMD...: peak RSS in MB
    /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1 | awk '{printf "%.0f", $1 / 1024}'
}
echo "peak RSS (MB): analyze A $(rss "$BIN" analyze "$A" --format json -q)," \
    "diff A B $(rss "$BIN" diff "$A" "$B" --format json -q)," \
    "diff A B --sequential $(rss "$BIN" diff "$A" "$B" --sequential --format json -q)"
