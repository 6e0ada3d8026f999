#!/usr/bin/env bash
# stallscope next to HTA (PyPI `traceinsight`) on the same trace: wall time and peak RSS.
#
#   bash bench/hta_compare.sh [FILE]     # default: the ~190 MB trace made by bench/run.sh
#
# HTA runs TraceAnalysis (load) + temporal, idle-time and GPU kernel breakdowns
# (bench/hta_run.py); stallscope runs `analyze FILE --format json`. Both under
# /usr/bin/time -v, best and median of $REPEAT runs (HTA: 1 run by default, it is slow), the
# wall time from bash's clock (ms). The file is read before every run of either tool, so both
# start with it in the page cache: this VM's proactive reclaim (DAMON) pages out idle page
# cache within seconds (12 of 205 MB gone after 20 s idle), and a run that re-reads those
# pages from disk measures the disk, not the tool.
# HTA is looked for in $HTA_PYTHON, then /work/hta-venv, then python3; when it is missing the
# script says how to install it (`pip install traceinsight`) and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${BENCH_DATA:-/work/bench-data}
FILE=${1:-$DATA/dfi-190M.json}
REPEAT=${REPEAT:-3}
HTA_REPEAT=${HTA_REPEAT:-1}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
BIN=$CARGO_TARGET_DIR/release/stallscope

PY=${HTA_PYTHON:-}
if [[ -z $PY ]]; then
    for c in /work/hta-venv/bin/python python3; do
        if command -v "$c" >/dev/null && "$c" -c 'import hta.trace_analysis' 2>/dev/null; then
            PY=$c
            break
        fi
    done
fi
if [[ -z $PY ]]; then
    echo "HTA is not installed: python3 -m venv /work/hta-venv && /work/hta-venv/bin/pip install traceinsight"
    exit 0
fi
[[ -s $FILE ]] || { echo "no $FILE: run bash bench/run.sh first"; exit 1; }
cargo build --release --quiet --bin stallscope

LAST_OUT=$(mktemp)
trap 'rm -f "$LAST_OUT"' EXIT
warm() { # reads FILE so that its pages are in the page cache (see below)
    cat "$FILE" >/dev/null
}
measure() { # measure REPEAT CMD...: prints "best_wall_s median_wall_s peak_rss_kb" (RSS of the
    # best run); stdout of the last run in $LAST_OUT
    local n=$1
    shift
    local walls=() best="" rss_best=0
    for _ in $(seq "$n"); do
        local log t0 t1 wall rss
        log=$(mktemp)
        warm
        t0=$EPOCHREALTIME
        /usr/bin/time -v "$@" >"$LAST_OUT" 2>"$log" || { cat "$log" >&2; return 1; }
        t1=$EPOCHREALTIME
        wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
        rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
        rm -f "$log"
        walls+=("$wall")
        if [[ -z $best ]] || awk "BEGIN{exit !($wall < $best)}"; then
            best=$wall
            rss_best=$rss
        fi
    done
    local median
    median=$(printf '%s\n' "${walls[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    echo "$best $median $rss_best"
}

echo "file: $FILE ($(stat -c %s "$FILE") bytes)"
echo "uptime: $(uptime)"
HTA_VERSION=$("$PY" -c 'import hta.version as v; print(v.__version__)')
echo "HTA $HTA_VERSION ($PY): TraceAnalysis + temporal + idle-time + kernel breakdown"
read -r hta_wall hta_med hta_rss < <(measure "$HTA_REPEAT" "$PY" bench/hta_run.py "$FILE")
echo "HTA's own timing: $(tail -1 "$LAST_OUT")"
echo "stallscope analyze --format json (2 cores)"
read -r ss_wall ss_med ss_rss < <(measure "$REPEAT" "$BIN" analyze "$FILE" --format json)
echo "stallscope analyze --format json (1 core, taskset -c 0)"
read -r ss1_wall ss1_med ss1_rss < <(measure "$REPEAT" taskset -c 0 "$BIN" analyze "$FILE" --format json)
awk -v hw="$hta_wall" -v hm="$hta_med" -v hr="$hta_rss" -v sw="$ss_wall" -v sm="$ss_med" \
    -v sr="$ss_rss" -v s1w="$ss1_wall" -v s1m="$ss1_med" -v s1r="$ss1_rss" 'BEGIN {
    printf "%-28s %10s %10s %12s\n", "", "best s", "median s", "peak RSS MB"
    printf "%-28s %10.3f %10.3f %12.0f\n", "HTA", hw, hm, hr / 1024
    printf "%-28s %10.3f %10.3f %12.0f\n", "stallscope (2 cores)", sw, sm, sr / 1024
    printf "%-28s %10.3f %10.3f %12.0f\n", "stallscope (1 core)", s1w, s1m, s1r / 1024
    printf "ratio HTA/stallscope, 2 cores: %.0fx less wall time (medians: %.0fx), %.1fx less peak memory\n", hw / sw, hm / sm, hr / sr
    printf "ratio HTA/stallscope, 1 core:  %.0fx less wall time (medians: %.0fx), %.1fx less peak memory\n", hw / s1w, hm / s1m, hr / s1r
}'
