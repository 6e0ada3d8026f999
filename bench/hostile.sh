#!/usr/bin/env bash
# Peak memory of `stallscope analyze` on large hostile inputs (issue 21), one run each.
#
#   bash bench/hostile.sh [BINARY]     # default target/release/stallscope
#   HOSTILE_GEN_ONLY=1 bash bench/hostile.sh   # only make the inputs
#
# Inputs are generated into $BENCH_DATA/hostile (default /work/bench-data/hostile; never commit
# them; about 3 GB of disk): a 5 GB whitespace run inside traceEvents (gzip), a 1 GB single
# string, 100 MB of nesting, 300 MB of distinct names, 300 MB of flows without ends, a 200 MB
# deviceProperties, and a 1 GB trace without newlines (from bench/run.sh's dfi-1G.json).
# Each line: input, arguments, exit code, the error or warning line, wall time, peak RSS.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/stallscope}
DATA=${BENCH_DATA:-/work/bench-data}/hostile
mkdir -p "$DATA"
EV='{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1000,"dur":10}'

gen() { # gen NAME: runs make_NAME > $DATA/NAME unless it exists
    if [[ ! -s $DATA/$1 ]]; then
        "make_${1//[.-]/_}" >"$DATA/$1.tmp" && mv -f "$DATA/$1.tmp" "$DATA/$1"
    fi
}
spaces() { head -c "$1" /dev/zero | tr '\0' ' '; }
make_ws5G_json_gz() { { printf '{"traceEvents":[%s,' "$EV"; spaces 5G; printf '%s]}' "$EV"; } | gzip -1; }
make_string1G_json() {
    printf '{"traceEvents":[%s,{"ph":"X","cat":"cpu_op","name":"' "$EV"
    head -c 1G /dev/zero | tr '\0' 'a'
    printf '","pid":1,"tid":1,"ts":5,"dur":1}]}'
}
make_nest100M_json() {
    printf '{"traceEvents":[%s,{"ph":"X","name":"deep","pid":1,"tid":1,"ts":5,"dur":1,"args":{"x":' "$EV"
    head -c 50M /dev/zero | tr '\0' '['
    head -c 50M /dev/zero | tr '\0' ']'
    printf '}}]}'
}
make_names300M_json() {
    printf '{"traceEvents":[\n'
    seq 1 3600000 | awk '{printf "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op_%d\",\"pid\":1,\"tid\":1,\"ts\":%d,\"dur\":1},\n", $1, $1}'
    printf '%s]}' "$EV"
}
make_flows300M_json() {
    printf '{"traceEvents":[\n'
    seq 1 4000000 | awk '{printf "{\"ph\":\"s\",\"cat\":\"ac2g\",\"id\":%d,\"pid\":1,\"tid\":1,\"ts\":%d,\"name\":\"ac2g\"},\n", $1, $1}'
    printf '%s]}' "$EV"
}
make_props200M_json() {
    printf '{"deviceProperties":['
    seq 1 4400000 | awk '{printf "{\"id\":%d,\"name\":\"NVIDIA H100\",\"numSms\":132},", $1}'
    printf '{"id":0}],"traceEvents":[%s]}' "$EV"
}
make_oneline1G_json() { tr -d '\n' <"${BENCH_DATA:-/work/bench-data}/dfi-1G.json"; }

for f in ws5G.json.gz string1G.json nest100M.json names300M.json flows300M.json props200M.json oneline1G.json; do
    gen "$f"
done
[[ ${HOSTILE_GEN_ONLY:-} ]] && exit 0

echo "== $(date -u +%Y-%m-%dT%H:%MZ)  $(git rev-parse --short HEAD)  uptime: $(uptime)"
run() { # run FILE ARGS...
    local f=$1 log
    shift
    log=$(mktemp)
    /usr/bin/time -v "$BIN" analyze "$DATA/$f" --format json "$@" >/dev/null 2>"$log"
    local code=$?
    local rss wall msg
    rss=$(awk -F': ' '/Maximum resident set size/ {print int($2/1024)}' "$log")
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
    msg=$(grep -m1 -E '^(error|warning)' "$log" | cut -c1-150)
    printf '%-16s %-28s exit %s  %8s  peak %5s MB  %s\n' "$f" "$*" "$code" "$wall" "$rss" "$msg"
    rm -f "$log"
}
run ws5G.json.gz
run ws5G.json.gz --max-inflate 100000x
run string1G.json
run string1G.json --limit value-bytes=2G
run nest100M.json
run nest100M.json --limit value-bytes=1G
run names300M.json
run flows300M.json
run props200M.json
run props200M.json --limit value-bytes=1G
run oneline1G.json
