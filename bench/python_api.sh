#!/usr/bin/env bash
# The Python API against the command on the 1 GB benchmark trace, in alternating runs.
#
#   bash bench/python_api.sh                     # REPEAT=7 pairs
#   PYTHON=/path/to/venv/bin/python bash bench/python_api.sh
#
# PYTHON is an interpreter with the stallscope wheel installed (default: the environment
# scripts/test made, target/python-test-venv). The trace is made like bench/run.sh's (examples/
# scale_trace.rs from HTA's df_index_resolver trace) into $BENCH_DATA. Each pair times, in
# turn, `stallscope analyze FILE --format json -o /dev/null` and a Python process that runs
# `stallscope.analyze(FILE).to_json()`, both whole processes (wall clock, interpreter start and
# import included), the trace read into the page cache before every run; the order inside a
# pair alternates so that a drift in the machine's load hits both alike.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${BENCH_DATA:-/work/bench-data}
BASE=${BENCH_BASE:-../shared/corpus/hta/tests__data__df_index_resolver__df_index_resolver.json.gz}
REPEAT=${REPEAT:-7}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
BIN=$CARGO_TARGET_DIR/release/stallscope
GEN=$CARGO_TARGET_DIR/release/examples/scale_trace
PYTHON=${PYTHON:-$CARGO_TARGET_DIR/python-test-venv/bin/python}
FILE=$DATA/dfi-1G.json

cargo build --release --quiet --example scale_trace --bin stallscope
"$PYTHON" -c 'import stallscope' || {
    echo "no stallscope module in $PYTHON: run bash scripts/test, or set PYTHON" >&2
    exit 1
}
mkdir -p "$DATA"
[[ -s $FILE ]] || "$GEN" "$BASE" "$FILE" --size 1G

echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  nproc: $(nproc)  commit: $(git rev-parse --short HEAD)"
echo "uptime: $(uptime)"
now() { date +%s.%N; }
cli() { "$BIN" analyze "$FILE" --format json -o /dev/null --quiet; }
py() { "$PYTHON" -c 'import sys, stallscope; stallscope.analyze(sys.argv[1]).to_json()' "$FILE"; }
timed() { # timed NAME: wall seconds of one run, trace in the page cache first
    cat "$FILE" >/dev/null
    local t0
    t0=$(now)
    "$1"
    awk "BEGIN{printf \"%.3f\", $(now) - $t0}"
}
c_all=() p_all=()
for i in $(seq "$REPEAT"); do
    if ((i % 2)); then
        c=$(timed cli)
        p=$(timed py)
    else
        p=$(timed py)
        c=$(timed cli)
    fi
    c_all+=("$c") p_all+=("$p")
    echo "pair $i: command $c s, python $p s, ratio $(awk "BEGIN{printf \"%.3f\", $p / $c}")"
done
summary() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END{printf "best %.3f median %.3f", a[1], a[int((NR+1)/2)]}'; }
echo "command: $(summary "${c_all[@]}") s"
echo "python:  $(summary "${p_all[@]}") s"
cb=$(printf '%s\n' "${c_all[@]}" | sort -n | head -1)
pb=$(printf '%s\n' "${p_all[@]}" | sort -n | head -1)
cm=$(printf '%s\n' "${c_all[@]}" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
pm=$(printf '%s\n' "${p_all[@]}" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
echo "python / command: best $(awk "BEGIN{printf \"%.3f\", $pb / $cb}"), median $(awk "BEGIN{printf \"%.3f\", $pm / $cm}")"
echo "uptime at end: $(uptime)"
