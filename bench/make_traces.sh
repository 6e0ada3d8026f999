#!/usr/bin/env bash
# The benchmark traces of bench/guard.sh (and bench/run.sh's 1 GB pair), made from corpus files
# with examples/scale_trace.rs so that anyone can rerun the figures. Never commit them.
#
#   bash bench/make_traces.sh [DATA] [full|small]
#
# full (default; wall-clock runs):
#   DATA/dfi-1G.json       HTA's DDP df_index_resolver trace (53.7 MB, 216k events, 5 steps)
#                          repeated with shifted ids and times to 1 GB
#   DATA/dfi-1G.json.gz    the same, gzip
#   DATA/ranks16/          16 rank files of ~64 MB (~1 GB): the eight DLRM ranks of the corpus
#                          (param/), each scaled to 64 MB, twice, `distributedInfo.rank`
#                          rewritten to 0..15 and world_size 16
# small (instruction counts under valgrind, which runs ~30x slower):
#   DATA/dfi-100M.json, DATA/dfi-100M.json.gz, DATA/ranks16-small/ (16 files of ~6 MB)
#
# Files already there (with their .meta.json) are kept. SCALE_TRACE names the scale_trace
# binary (default target/release/examples/scale_trace); STALLSCOPE_CORPUS the corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-${BENCH_DATA:-/work/bench-data}}
SET=${2:-full}
corpus=${STALLSCOPE_CORPUS:-$(pwd)/../shared/corpus}
scale=${SCALE_TRACE:-${CARGO_TARGET_DIR:-target}/release/examples/scale_trace}
base=$corpus/hta/tests__data__df_index_resolver__df_index_resolver.json.gz
[[ -f $base ]] || { echo "make_traces: corpus file $base is absent (set STALLSCOPE_CORPUS)" >&2; exit 2; }
[[ -x $scale ]] || { echo "make_traces: $scale is not built (cargo build --release --example scale_trace)" >&2; exit 2; }
mkdir -p "$DATA"

gen() { # gen NAME ARGS...: makes DATA/NAME unless it and its meta file exist
    local out=$DATA/$1
    shift
    if [[ ! -s $out || ! -s $out.meta.json ]]; then
        "$scale" "$base" "$out" "$@" >&2
    fi
}

ranks() { # ranks DIR SIZE: 16 rank files from the 8 DLRM ranks scaled to SIZE
    local dir=$DATA/$1 size=$2
    local scaled=$DATA/$1-scaled
    [[ $(ls "$dir"/rank*.json 2>/dev/null | wc -l) -eq 16 ]] && return 0
    mkdir -p "$dir" "$scaled"
    for w in 0 1 2 3 4 5 6 7; do
        local src
        src=$(ls "$corpus"/param/*dlrm_kineto__worker${w}_step_12.*.pt.trace.json.gz)
        [[ -s $scaled/w$w.json ]] || "$scale" "$src" "$scaled/w$w.json" --size "$size" >&2
    done
    for i in $(seq 0 15); do
        local w=$((i % 8))
        sed "s/\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": $w, \"world_size\": 8}/\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": $i, \"world_size\": 16}/" \
            "$scaled/w$w.json" >"$dir/rank$(printf %02d "$i").json"
    done
    if grep -L '"world_size": 16' "$dir"/rank*.json | grep -q .; then
        echo "make_traces: distributedInfo not rewritten in every file of $dir" >&2
        exit 1
    fi
}

case $SET in
full)
    gen dfi-1G.json --size 1G
    gen dfi-1G.json.gz --size 1G --gzip
    ranks ranks16 64M
    ;;
small)
    gen dfi-100M.json --size 100M
    gen dfi-100M.json.gz --size 100M --gzip
    ranks ranks16-small 6M
    ;;
*)
    echo "usage: make_traces.sh [DATA] [full|small]" >&2
    exit 2
    ;;
esac
