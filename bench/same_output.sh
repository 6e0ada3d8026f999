#!/usr/bin/env bash
# Every output of one binary on every corpus file and sample, in every format, for proving that a
# change (a refactor) moved no byte:
#
#   bash bench/same_output.sh BINARY OUTDIR
#   diff -r BASE_OUTDIR HEAD_OUTDIR && echo identical
#
# Per input: analyze in table (no colour), json, md and html; csv of every view; parquet (each
# file's sha256); phases; memory (json); summarize. Per folder of ranks in the corpus and
# samples: analyze json/table/md/html. Diff of the paired corpus captures in table, json, md and
# html; check; merge of the summaries. Standard error and the exit code of each command are kept
# beside its output (KEY.err), so a changed error message or exit code shows too. Runs with
# --threads 1 and NO_COLOR so that the bytes do not depend on the machine.
set -u
BIN=$(realpath "$1"); OUT=$(realpath -m "$2"); mkdir -p "$OUT"
cd "$(dirname "$0")/.."
CORPUS=${STALLSCOPE_CORPUS:-../shared/corpus}
export NO_COLOR=1 COLUMNS=100
run() { # KEY ARGS...: stdout to KEY.out, stderr and the exit code to KEY.err
  local key=$1; shift
  timeout 300 "$BIN" "$@" > "$OUT/$key.out" 2> "$OUT/$key.err"
  echo "rc=$?" >> "$OUT/$key.err"
}
files=$(find "$CORPUS" samples -type f \( -name '*.json' -o -name '*.gz' -o -name '*.sqlite' \
  -o -name '*.csv' \) | sort)
for f in $files; do
  key=$(echo "$f" | sed "s#^$CORPUS/##; s#/#__#g")
  for fmt in table json md html; do
    run "$key.analyze.$fmt" analyze "$f" --format "$fmt" --threads 1
  done
  for view in kernels ops steps phases ranks memory; do
    run "$key.csv.$view" analyze "$f" --format csv --view "$view" --threads 1
  done
  pq="$OUT/$key.parquet.d"; rm -rf "$pq"
  run "$key.parquet" analyze "$f" --format parquet -o "$pq" --threads 1 --job same
  if [ -d "$pq" ]; then (cd "$pq" && sha256sum ./* >> "$OUT/$key.parquet.out"); rm -rf "$pq"; fi
  run "$key.phases" phases "$f"
  run "$key.memory" memory "$f" --format json
  run "$key.summarize" summarize "$f" -o "$OUT/$key.summary.json"
  run "$key.slice" slice "$f" -o "$OUT/$key.slice.json" --threads 1
done
# folders of ranks: every directory with two or more traces
for d in $(find "$CORPUS" samples -type d | sort); do
  n=$(find "$d" -maxdepth 1 -type f \( -name '*.json' -o -name '*.json.gz' \) | wc -l)
  [ "$n" -ge 2 ] || continue
  key=$(echo "$d" | sed "s#^$CORPUS/##; s#/#__#g").folder
  for fmt in table json md html; do
    run "$key.analyze.$fmt" analyze "$d" --format "$fmt" --threads 1
  done
done
# diff and check of the paired captures
pairs="hta/tests__data__trace_compare__base__base.json.gz:hta/tests__data__trace_compare__test__test.json.gz
hta/tests__data__trace_diff__control__control.json.gz:hta/tests__data__trace_diff__test__test.json.gz
tbprof/docs__traces__before_fix_trace.json:tbprof/docs__traces__after_fix_trace.json"
i=0
for p in $pairs; do
  a="$CORPUS/${p%%:*}"; b="$CORPUS/${p##*:}"; i=$((i + 1))
  for fmt in table json md html; do
    run "pair$i.diff.$fmt" diff "$a" "$b" --format "$fmt" --threads 1
  done
  run "pair$i.check" check "$b" --baseline "$a"
done
for fmt in table json md html; do
  run "samples.diff.$fmt" diff samples/torch_cpu_loss_loop.json.gz \
    samples/torch_cpu_loss_vector.json.gz --format "$fmt" --threads 1
done
sums=$(ls "$OUT"/param__*worker*.summary.json 2>/dev/null)
[ -n "$sums" ] && run "param.merge" merge $sums --format json
# the summaries name no path of OUT: keep them as outputs too
echo "wrote $(ls "$OUT" | wc -l) files into $OUT"
