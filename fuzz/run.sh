#!/usr/bin/env bash
# Fuzzes one target with AFL++ (cargo-afl) for SECONDS, then prints its figures.
#   bash fuzz/run.sh TARGET SECONDS [OUTDIR]
# TARGET: kineto, nsys, ncu, report or slice (fuzz/src/targets.rs). The first run starts from
# fuzz/seeds/TARGET and fuzz/corpus/TARGET; a second run with the same OUTDIR (default
# fuzz/out/TARGET) resumes it. Needs `cargo install cargo-afl` and `cargo afl config --build`
# once (docs/fuzzing.md). Exits 1 when the run saved a crash or a hang (over 10 s): minimize it
# with `cargo afl tmin`, fix the bug, commit the input under tests/fuzz/crashes/TARGET/.
set -euo pipefail
cd "$(dirname "$0")"
target="${1:?usage: fuzz/run.sh TARGET SECONDS [OUTDIR]}"
seconds="${2:?usage: fuzz/run.sh TARGET SECONDS [OUTDIR]}"
out="${3:-out/$target}"
[ -d "seeds/$target" ] || { echo "no fuzz target $target (seeds/$target missing)" >&2; exit 2; }
dict="dict/$target.dict"
[ "$target" = slice ] && dict=dict/kineto.dict

cargo afl build --release --quiet --locked --bin "$target"

# the targets write their input to a scratch file: in memory when the machine has /dev/shm
[ -d /dev/shm ] && export TMPDIR=/dev/shm
export AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_UI=1
export AFL_NO_AFFINITY=1 AFL_SKIP_CRASHES=1
if [ -f "$out/default/fuzzer_stats" ]; then
  input=-                                   # resume
else
  input="$(mktemp -d)"
  trap 'rm -rf "$input"' EXIT
  cp "seeds/$target"/* "$input"/
  if [ -d "corpus/$target" ]; then cp "corpus/$target"/* "$input"/; fi
fi
mkdir -p "$out"
# -t 10000: an input that runs over 10 s is a hang; -V: stop after SECONDS
cargo afl fuzz -i "$input" -o "$out" -x "$dict" -t 10000 -V "$seconds" \
  "target/release/$target" >"$out/afl.log" 2>&1 || {
  tail -20 "$out/afl.log" >&2
  exit 2
}
stats="$out/default/fuzzer_stats"
field() { awk -F' *: *' -v k="$1" '$1 == k { print $2 }' "$stats"; }
echo "$target: $(field execs_done) executions in $(field run_time) s ($(field execs_per_sec)/s)," \
  "corpus $(field corpus_count), map density $(field bitmap_cvg), edges $(field edges_found)," \
  "crashes $(field saved_crashes), hangs $(field saved_hangs)"
[ "$(field saved_crashes)" = 0 ] && [ "$(field saved_hangs)" = 0 ]
