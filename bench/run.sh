#!/usr/bin/env bash
# Ingest and end-to-end benchmark of stallscope on real-workload traces.
#
#   bash bench/run.sh            # generate inputs if missing, run everything
#   REPEAT=5 bash bench/run.sh   # more runs per case (best and median are printed)
#
# Inputs are made by examples/scale_trace.rs from a real corpus trace (HTA's DDP
# df_index_resolver trace: 53.7 MB, 216k events, 5 steps) into $BENCH_DATA (default
# /work/bench-data; never commit them): 100 MB, 1 GB, 1 GB gzip, and ~190 MB for HTA.
# Take numbers when the machine is quiet (`uptime`): other builds on a 2-core box skew them.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${BENCH_DATA:-/work/bench-data}
BASE=${BENCH_BASE:-../shared/corpus/hta/tests__data__df_index_resolver__df_index_resolver.json.gz}
REPEAT=${REPEAT:-3}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
BIN=$CARGO_TARGET_DIR/release/stallscope
GEN=$CARGO_TARGET_DIR/release/examples/scale_trace

cargo build --release --quiet --example scale_trace --bin stallscope
mkdir -p "$DATA"
gen() { # gen NAME ARGS...: makes $DATA/NAME unless it and its meta file exist
    local out=$DATA/$1
    shift
    if [[ ! -s $out || ! -s $out.meta.json ]]; then
        "$GEN" "$BASE" "$out" "$@"
    fi
}
gen dfi-100M.json --size 100M
gen dfi-190M.json --size 190M
gen dfi-1G.json --size 1G
gen dfi-1G.json.gz --size 1G --gzip

echo "== machine"
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  nproc: $(nproc)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs)"
free -g | head -2
echo "uptime: $(uptime)"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo '?')"

echo "== ingest (stallscope::ingest::load), each run in a fresh process"
cargo bench --quiet --bench ingest -- --repeat "$REPEAT" \
    "$DATA/dfi-100M.json" "$DATA/dfi-1G.json" "$DATA/dfi-1G.json.gz"

echo "== end to end: stallscope analyze FILE --format json"
if ! "$BIN" analyze --help >/dev/null 2>&1; then
    echo "the CLI has no 'analyze' yet: only load was measured (above)"
    exit 0
fi
e2e() { # e2e LABEL FILE [taskset args]
    local label=$1 file=$2
    shift 2
    local best="" bestline=""
    for _ in $(seq "$REPEAT"); do
        local log
        log=$(mktemp)
        cat "$file" >/dev/null # in the page cache (see bench/hta_compare.sh)
        "$@" /usr/bin/time -v "$BIN" analyze "$file" --format json >/dev/null 2>"$log" || {
            echo "analyze failed on $file:"
            cat "$log"
            return 1
        }
        local wall rss cpu
        wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$log")
        rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
        cpu=$(awk -F': ' '/User time|System time/ {s+=$2} END {printf "%.2f", s}' "$log")
        rm -f "$log"
        if [[ -z $best ]] || awk "BEGIN{exit !($wall < $best)}"; then
            best=$wall
            bestline="$wall s (CPU $cpu s), peak RSS $((rss / 1024)) MB"
        fi
    done
    local bytes
    bytes=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['bytes'])" "$file.meta.json")
    printf '%-22s %-8s best of %s: %s, %s MB/s\n' "$(basename "$file")" "$label" "$REPEAT" "$bestline" \
        "$(awk "BEGIN{printf \"%.0f\", $bytes / $best / 1e6}")"
}
for f in "$DATA/dfi-100M.json" "$DATA/dfi-1G.json" "$DATA/dfi-1G.json.gz"; do
    e2e 1core "$f" taskset -c 0
    e2e 2cores "$f" env
done
echo "uptime at end: $(uptime)"
