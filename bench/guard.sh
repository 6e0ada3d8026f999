#!/usr/bin/env bash
# Speed guard: the reader's throughput and memory of this checkout against a base revision.
#
#   bash bench/guard.sh [BASE_REV]                # wall clock, medians of REPEAT (5) runs
#   GUARD_MODE=instructions bash bench/guard.sh   # instruction counts (valgrind), for a loaded box
#
# BASE_REV defaults to the merge base of HEAD with the last landed main (origin/main if there
# is one, else main). The base is checked out in its own git worktree (target/guard/src) and
# built in its own target directory (target/guard/target); this checkout is built in
# $CARGO_TARGET_DIR (target). Both use the same profile (the repository's release profile
# unless CARGO_PROFILE_RELEASE_* say otherwise: compare like with like).
#
# The traces are made from corpus files by bench/make_traces.sh into $BENCH_DATA
# (/work/bench-data): wall mode uses dfi-1G.json, dfi-1G.json.gz and ranks16/ (~1 GB each);
# instruction mode the small set (dfi-100M.json, its gzip, ranks16-small/).
# Cases, each `stallscope analyze INPUT --format json`:
#   1core   the 1 GB JSON under `taskset -c 0`       2cores  the same on CPUs 0-1
#   gzip    the 1 GB gzip on CPUs 0-1                folder  the 16-rank folder on CPUs 0-1
# The runs alternate base and head (base first in odd rounds, head first in even rounds), each
# after reading its input into the page cache. Every run records wall time, peak RSS
# (/usr/bin/time) and, in instruction mode, the instructions of all threads (valgrind
# --tool=cachegrind --cache-sim=no; one native run beside it gives the RSS).
#
# Noise and verdict: a side's spread is the interquartile range of its runs over their median
# (0 with fewer than 4 runs). A case FAILS when head's median is more than 5 % slower (more
# instructions) than base's AND the change is larger than the spread of either side; or when
# head's median peak RSS is more than 10 % above base's AND larger than the spread of either
# side's RSS. The script exits 1 on any failure, 0 otherwise, 2 on a usage or build error.
# Thresholds: GUARD_TIME_PCT (5), GUARD_RSS_PCT (10). REPEAT sets the runs (5; 1 in
# instruction mode, where counts repeat within ~0.1 %). GUARD_CASES picks cases
# ("1core 2cores gzip folder"). GUARD_SET=small|full picks the traces (default: full for wall
# clock, small for instructions). GUARD_BASE_BIN / GUARD_HEAD_BIN use binaries already built
# (no build, no worktree): e.g. two builds kept from earlier runs; give the base binary's
# revision as BASE_REV so the accepted trades below are judged against the right range.
#
# Accepted trades: bench/guard-accepted.txt (GUARD_ACCEPTED names another file) lists changes
# made on purpose (a commit, a case, time or rss, the largest change accepted, the reason).
# An entry applies when its commit is an ancestor of HEAD and not of the base; a change within
# its bound is reported "accepted" with the reason and does not fail the guard.
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    # the comment block above is the manual
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
    exit 0
fi
cd "$(dirname "$0")/.."
ROOT=$(pwd)
MODE=${GUARD_MODE:-wall}
case $MODE in wall | instructions) ;; *) echo "GUARD_MODE is wall or instructions" >&2; exit 2 ;; esac
if [[ $MODE == instructions ]]; then
    REPEAT=${REPEAT:-1}
    command -v valgrind >/dev/null || { echo "instruction mode needs valgrind" >&2; exit 2; }
else
    REPEAT=${REPEAT:-5}
fi
CASES=${GUARD_CASES:-1core 2cores gzip folder}
DATA=${BENCH_DATA:-/work/bench-data}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
GUARD=$ROOT/target/guard

if [[ $# -ge 1 ]]; then
    BASE_REV=$1
else
    main=main
    git rev-parse -q --verify origin/main >/dev/null && main=origin/main
    BASE_REV=$(git merge-base HEAD "$main")
fi
BASE_SHA=$(git rev-parse --verify "$BASE_REV^{commit}") || { echo "no revision $BASE_REV" >&2; exit 2; }
HEAD_SHA=$(git rev-parse HEAD)
dirty=""
git diff --quiet HEAD -- src Cargo.toml Cargo.lock || dirty=" + uncommitted changes"
echo "== guard: base $(git rev-parse --short "$BASE_SHA") against head $(git rev-parse --short HEAD)$dirty ($MODE, $REPEAT run(s) each)"
ACCEPTED_FILE=${GUARD_ACCEPTED:-$ROOT/bench/guard-accepted.txt}
RUNS=$(mktemp)
trap 'rm -f "$RUNS" "$RUNS".*' EXIT
# the accepted trades in range, as "case metric up_to commit reason" lines
: >"$RUNS.accepted"
if [[ -f $ACCEPTED_FILE ]]; then
    n=0
    while IFS= read -r line || [[ -n $line ]]; do
        n=$((n + 1))
        [[ $line =~ ^[[:space:]]*(#|$) ]] && continue
        read -r commit case metric up_to reason <<<"$line"
        if [[ ! $case =~ ^(1core|2cores|gzip|folder)$ || ! $metric =~ ^(time|rss)$ ||
            ! $up_to =~ ^\+?[0-9]+(\.[0-9]+)?$ || -z $reason ]]; then
            echo "$ACCEPTED_FILE:$n: expected COMMIT CASE time|rss UP_TO REASON" >&2
            exit 2
        fi
        sha=$(git rev-parse -q --verify "$commit^{commit}") || {
            echo "$ACCEPTED_FILE:$n: no commit $commit" >&2
            exit 2
        }
        if git merge-base --is-ancestor "$sha" HEAD && ! git merge-base --is-ancestor "$sha" "$BASE_SHA"; then
            echo "$case $metric ${up_to#+} $(git rev-parse --short "$sha") $reason" >>"$RUNS.accepted"
            echo "accepted in range: $case $metric up to +${up_to#+} % ($(git rev-parse --short "$sha"))"
        fi
    done <"$ACCEPTED_FILE"
fi
env | grep -q '^CARGO_PROFILE_RELEASE_' && echo "note: CARGO_PROFILE_RELEASE_* are set; both sides are built with them"

echo "== build"
if [[ -z ${GUARD_HEAD_BIN:-} || ! -x $CARGO_TARGET_DIR/release/examples/scale_trace ]]; then
    cargo build --release --locked --quiet --example scale_trace || exit 2
fi
mkdir -p "$GUARD"
if [[ -n ${GUARD_HEAD_BIN:-} ]]; then
    HEAD_BIN=$GUARD_HEAD_BIN
else
    cargo build --release --locked --quiet --bin stallscope || exit 2
    HEAD_BIN=$GUARD/stallscope-head
    cp "$CARGO_TARGET_DIR/release/stallscope" "$HEAD_BIN"
fi
SRC=$GUARD/src
if [[ -n ${GUARD_BASE_BIN:-} ]]; then
    BASE_BIN=$GUARD_BASE_BIN
elif [[ ! -e $SRC/.git ]]; then
    git worktree add --detach "$SRC" "$BASE_SHA" >/dev/null || exit 2
else
    git -C "$SRC" checkout --quiet --force --detach "$BASE_SHA" || exit 2
fi
if [[ -z ${GUARD_BASE_BIN:-} ]]; then
    # the base's own workspace root (older manifests have none, and cargo would take this one's)
    grep -q '^\[workspace\]' "$SRC/Cargo.toml" || printf '\n[workspace]\n' >>"$SRC/Cargo.toml"
    BASE_BIN=$GUARD/stallscope-$(git rev-parse --short "$BASE_SHA")
    if [[ ! -x $BASE_BIN ]] || [[ -n ${GUARD_REBUILD:-} ]]; then
        (cd "$SRC" && CARGO_TARGET_DIR=$GUARD/target cargo build --release --quiet --bin stallscope) || exit 2
        cp "$GUARD/target/release/stallscope" "$BASE_BIN"
    fi
fi

echo "== traces in $DATA"
SET=${GUARD_SET:-$([[ $MODE == instructions ]] && echo small || echo full)}
if [[ $SET == small ]]; then
    bash bench/make_traces.sh "$DATA" small
    JSON=$DATA/dfi-100M.json GZ=$DATA/dfi-100M.json.gz DIR=$DATA/ranks16-small
else
    bash bench/make_traces.sh "$DATA" full
    JSON=$DATA/dfi-1G.json GZ=$DATA/dfi-1G.json.gz DIR=$DATA/ranks16
fi

ncpu=$(nproc)
two="0-1"
[[ $ncpu -lt 2 ]] && two="0"
input() { case $1 in 1core | 2cores) echo "$JSON" ;; gzip) echo "$GZ" ;; folder) echo "$DIR" ;; esac; }
cpus() { case $1 in 1core) echo 0 ;; *) echo "$two" ;; esac; }
bytes() { # uncompressed bytes of an input
    local f=$1
    if [[ -d $f ]]; then
        du -sb --apparent-size "$f" | cut -f1
    elif [[ -s $f.meta.json ]]; then
        python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['bytes'])" "$f.meta.json"
    else
        stat -c %s "$f"
    fi
}
warm() { if [[ -d $1 ]]; then cat "$1"/* >/dev/null; else cat "$1" >/dev/null; fi; }

one() { # one SIDE BIN CASE: one run, appended to RUNS as "case side wall_s rss_kb instructions"
    local side=$1 bin=$2 c=$3 f
    f=$(input "$c")
    warm "$f"
    local t0 t1 ins=0
    t0=$(date +%s%N)
    /usr/bin/time -f %M -o "$RUNS.rss" taskset -c "$(cpus "$c")" "$bin" analyze "$f" --format json \
        >"$RUNS.out" 2>"$RUNS.err" || { echo "$side failed on $f:" >&2; cat "$RUNS.err" >&2; exit 2; }
    t1=$(date +%s%N)
    if [[ $MODE == instructions ]]; then
        taskset -c "$(cpus "$c")" valgrind --tool=cachegrind --cache-sim=no \
            --cachegrind-out-file=/dev/null "$bin" analyze "$f" --format json >/dev/null 2>"$RUNS.vg" || {
            echo "valgrind failed:" >&2
            cat "$RUNS.vg" >&2
            exit 2
        }
        ins=$(awk '/I[ ]+refs:/ {gsub(",", "", $NF); print $NF}' "$RUNS.vg")
    fi
    echo "$c $side $(awk "BEGIN{print ($t1 - $t0) / 1e9}") $(tail -1 "$RUNS.rss") $ins" >>"$RUNS"
}

echo "== runs (uptime: $(uptime | sed 's/.*load/load/'))"
for c in $CASES; do
    for r in $(seq "$REPEAT"); do
        if ((r % 2)); then
            one base "$BASE_BIN" "$c"
            one head "$HEAD_BIN" "$c"
        else
            one head "$HEAD_BIN" "$c"
            one base "$BASE_BIN" "$c"
        fi
    done
    echo "  $c done"
done

declare -A size
for c in $CASES; do size[$c]=$(bytes "$(input "$c")"); done
sizes=""
for c in $CASES; do sizes+="$c=${size[$c]} "; done
echo "== result (uptime at end: $(uptime | sed 's/.*load/load/'))"
python3 - "$RUNS" "$MODE" "${GUARD_TIME_PCT:-5}" "${GUARD_RSS_PCT:-10}" $sizes <<'EOF'
import statistics, sys
runs, mode, tpct, rpct = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
size = dict(a.split("=") for a in sys.argv[5:])
data = {}
for line in open(runs):
    c, side, wall, rss, ins = line.split()
    d = data.setdefault(c, {}).setdefault(side, {"wall": [], "rss": [], "ins": []})
    d["wall"].append(float(wall)); d["rss"].append(int(rss)); d["ins"].append(int(ins))

def spread(xs):
    """interquartile range over the median (0 under 4 runs)"""
    if len(xs) < 4:
        return 0.0
    q = statistics.quantiles(xs, n=4)
    return (q[2] - q[0]) / statistics.median(xs)

def judge(b, h, pct):
    mb, mh = statistics.median(b), statistics.median(h)
    change = mh / mb - 1
    noise = max(spread(b), spread(h))
    return mb, mh, change, noise, change * 100 > pct and change > noise

accepted = {}  # (case, metric) -> (up_to %, commit, reason)
for line in open(runs + ".accepted"):
    c, metric, up_to, commit, reason = line.rstrip("\n").split(" ", 4)
    prev = accepted.get((c, metric))
    if prev is None or float(up_to) > prev[0]:
        accepted[(c, metric)] = (float(up_to), commit, reason)
notes = []

def verdict_of(c, metric, change, bad, label):
    """label when bad, unless an accepted trade covers the change ("" when not bad)"""
    if not bad:
        return ""
    a = accepted.get((c, metric))
    if a is None:
        return label
    if change * 100 <= a[0]:
        notes.append(f"{c} {metric} {change * 100:+.1f} % accepted (up to +{a[0]:g} %, {a[1]}): {a[2]}")
        return f"{label.lower()} accepted"
    notes.append(f"{c} {metric} {change * 100:+.1f} % is past the accepted +{a[0]:g} % ({a[1]})")
    return label

failed = []
key = "ins" if mode == "instructions" else "wall"
if mode == "instructions":
    print("| case | base Ginstr | head Ginstr | change | noise | base MB/s* | head MB/s* | base RSS MB | head RSS MB | RSS change | verdict |")
else:
    print("| case | base s | head s | change | noise | base MB/s | head MB/s | base RSS MB | head RSS MB | RSS change | verdict |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for c, sides in data.items():
    b, h = sides["base"], sides["head"]
    mb, mh, ch, nz, bad = judge(b[key], h[key], tpct)
    rb, rh, rch, rnz, rbad = judge(b["rss"], h["rss"], rpct)
    wb, wh = statistics.median(b["wall"]), statistics.median(h["wall"])
    mbps = lambda w: int(size[c]) / w / 1e6
    verdict = [v for v in (verdict_of(c, "time", ch, bad, "SLOWER"),
                           verdict_of(c, "rss", rch, rbad, "RSS")) if v]
    if any(v.isupper() for v in verdict):
        failed.append(c)
    fmt = (lambda v: f"{v / 1e9:.3f}") if mode == "instructions" else (lambda v: f"{v:.3f}")
    print(f"| {c} | {fmt(mb)} | {fmt(mh)} | {ch * 100:+.1f} % | {nz * 100:.1f} % | {mbps(wb):,.0f} | {mbps(wh):,.0f} | "
          f"{rb / 1024:.0f} | {rh / 1024:.0f} | {rch * 100:+.1f} % | {' '.join(verdict) or 'ok'} |")
if mode == "instructions":
    print("* MB/s of the native run beside each valgrind run (wall clock, not judged)")
print(f"runs per side: {len(next(iter(data.values()))['base'][key])}; fails past +{tpct:g} % "
      f"{'instructions' if mode == 'instructions' else 'time'} or +{rpct:g} % RSS when the change also exceeds the spread (IQR/median) of either side")
for n in notes:
    print(n)
if failed:
    print("FAIL: " + ", ".join(failed))
    sys.exit(1)
print("PASS")
EOF
