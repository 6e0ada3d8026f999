#!/usr/bin/env bash
# Instructions per event of the Kineto fast parser, per kind of libkineto event (callgrind
# over the `microbench::parse_profile` aid in src/ingest/kineto/fast.rs: 20,000 parses of one
# event, minus a run of 1). Deterministic, unlike wall-clock time on a shared machine.
#
#   bash bench/parse_instructions.sh                 # cpu_op runtime kernel flow flow_end instant
#   TYPES="kernel flow" bash bench/parse_instructions.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is not installed"; exit 0; }
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
T=$(cargo test --release --lib --no-run 2>&1 | grep -o "$CARGO_TARGET_DIR/release/deps/stallscope-[0-9a-f]*" | head -1)
[[ -x $T ]] || { echo "could not build the library tests"; exit 1; }
count() { # count TYPE N: instructions of a run that parses N events of kind TYPE
    MB_N=$2 MB_ONLY=$1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$T" \
        microbench --ignored 2>&1 | awk '/Collected/ {gsub(",", "", $4); print $4}'
}
for ty in ${TYPES:-cpu_op runtime kernel flow flow_end instant}; do
    base=$(count "$ty" 1)
    big=$(count "$ty" 20001)
    echo "$ty $(((big - base) / 20000)) instructions/event"
done
