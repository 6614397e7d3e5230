#!/usr/bin/env bash
# User instructions per transaction (valgrind --tool=callgrind), paceline's
# `postgres` driver beside pgbench (issue 22): pgbench's select-only script
# (-S -M prepared -c 8 -j 2) and each paceline binary given (threads=2
# concurrency=8, the same statement prepared), closed loop and paced, against
# one cluster this script creates on a loopback port. Instruction counts hold
# whatever the machine's load; seconds do not.
#
#   benches/pg_callgrind.sh OUTDIR PACELINE_BIN...
#
# Each client runs twice, a short and a long run, and the figure is the
# difference of their instructions over the difference of their
# transactions: start-up (the clock's calibration, connecting, preparing)
# and the end cancel out. Closed loop: SHORT and LONG transactions (default
# 2000 and 20000; pgbench `-t` per client); paced: RATE per second (default
# 1000, Poisson arrivals for both, paceline's strictness 0 as pgbench -R)
# for PSHORT and PLONG seconds (default 5 and 20). The transactions counted
# are the ones each client reports (pgbench's "actually processed",
# paceline's --summary-json). The long runs' callgrind files stay in OUTDIR
# (cg.LABEL.MODE.long) for `benches/pg_callgrind_split.py`.
#
# NO_PGBENCH=1 leaves pgbench out (paceline binaries only); NO_PACED=1 the
# paced runs. paceline runs under benches/noauxv.c (prctl(PR_GET_AUXV)
# failing, so that rustix reads the aux vector valgrind emulates): any
# release build runs under valgrind, with or without
# `--features rustix/use-libc-auxv`. `benches/pg_callgrind_mallocs.py` counts
# the calls to the allocator per transaction by call site from the long and
# short files.
#
# Needs valgrind, PostgreSQL's server binaries and pgbench; as root the
# cluster runs as the `postgres` user (as pgbench.sh).
set -euo pipefail
out=${1:?outdir}; shift
bins=("$@")
[ ${#bins[@]} -gt 0 ] || { echo "give at least one paceline binary"; exit 2; }
short=${SHORT:-2000}; long=${LONG:-20000}; rate=${RATE:-1000}
pshort=${PSHORT:-5}; plong=${PLONG:-20}
mkdir -p "$out"
. "$(dirname "$0")/lib.sh"
pg_cluster pgcg
gcc -O2 -o "$dir/noauxv" "$(dirname "$0")/noauxv.c"
cg=("$dir/noauxv" valgrind --tool=callgrind --trace-children=no)
# Debian's /usr/bin/pgbench is a wrapper script that execs the real binary, and
# callgrind without --trace-children stops at that exec: run the binary itself.
pgb="$bin/pgbench"
[ -x "$pgb" ] || { echo "no $pgb"; exit 2; }
# run FILE CMD...: one client under callgrind; prints "INSTRUCTIONS TXNS".
run() {
    local file=$1; shift
    "${cg[@]}" --callgrind-out-file="$file" "$@" >"$dir/out" 2>"$dir/err" \
        || { cat "$dir/out" "$dir/err"; exit 1; }
    local ir n
    ir=$(awk '/^(summary|totals):/ {print $2}' "$file" | tail -n1)
    [ -n "$ir" ] || { echo "no instruction total in $file" >&2; cat "$dir/err" >&2; exit 1; }
    if grep -q "actually processed" "$dir/out"; then
        n=$(sed -n 's/.*actually processed: \([0-9]*\).*/\1/p' "$dir/out")
    else
        n=$(python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))["activities"][0]
if a["cycles"].get("errors"): sys.exit("errors: %s" % a.get("first_errors"))
print(a["cycles"]["completed"])' "$dir/pl.json")
    fi
    echo "$ir $n"
}
# pair LABEL MODE SHORTCMD -- LONGCMD: the figure of one client.
pair() {
    local label=$1 mode=$2; shift 2
    local a=() b=() seen=0
    for w in "$@"; do
        if [ "$w" = -- ]; then seen=1; elif [ $seen = 0 ]; then a+=("$w"); else b+=("$w"); fi
    done
    local s l
    s=$(run "$out/cg.$label.$mode.short" "${a[@]}")
    l=$(run "$out/cg.$label.$mode.long" "${b[@]}")
    python3 -c '
import sys
label, mode, (i1, n1), (i2, n2) = sys.argv[1], sys.argv[2], map(int, sys.argv[3].split()), map(int, sys.argv[4].split())
print(f"{label:12s} {mode:7s} txns {n1:6d} / {n2:6d}  instructions/txn {(i2 - i1) / (n2 - n1):9.0f}"
      f"  (whole long run {i2 / n2:9.0f})")' "$label" "$mode" "$s" "$l"
}
pl_args=(threads=2 concurrency=8 --no-progress --summary-json "$dir/pl.json")
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "${NO_PGBENCH:-}" ] || pair pgbench closed "$pgb" -n -S -M prepared -c 8 -j 2 -t $((short / 8)) \
    -- "$pgb" -n -S -M prepared -c 8 -j 2 -t $((long / 8))
[ -n "${NO_PGBENCH:-}${NO_PACED:-}" ] || pair pgbench paced "$pgb" -n -S -M prepared -c 8 -j 2 -R "$rate" -T "$pshort" \
    -- "$pgb" -n -S -M prepared -c 8 -j 2 -R "$rate" -T "$plong"
i=0
for b in "${bins[@]}"; do
    i=$((i + 1))
    pair "paceline$i" closed "$b" run "$dir/select.yaml" "cycles=$short" "${pl_args[@]}" \
        -- "$b" run "$dir/select.yaml" "cycles=$long" "${pl_args[@]}"
    [ -n "${NO_PACED:-}" ] || pair "paceline$i" paced "$b" run "$dir/select.yaml" "rate=$rate,0" arrivals=poisson \
        "duration=${pshort}s" "${pl_args[@]}" \
        -- "$b" run "$dir/select.yaml" "rate=$rate,0" arrivals=poisson "duration=${plong}s" "${pl_args[@]}"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
