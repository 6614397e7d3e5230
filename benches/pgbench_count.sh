#!/usr/bin/env bash
# Counts per transaction that hold on a loaded machine, paceline beside
# pgbench (issue 22): the same select-only statement, prepared, 8 connections
# on 2 threads (pgbench -S -M prepared -c 8 -j 2; paceline threads=2
# concurrency=8 arrivals=poisson), one cluster this script creates, the
# clients taking turns in the same minutes.
#
#   benches/pgbench_count.sh SECONDS PACELINE_BIN...
#
# Rows: closed loop, then each of PERCENTS (default "25 75") of R, the lower
# closed-loop maximum of pgbench and the first binary (RATES="1000 5000"
# gives the paced rates in /s instead; with RATES, CLOSED=0 leaves the closed
# loop out). Each client runs twice per row, for SHORT seconds (default a
# third of SECONDS) and for SECONDS, and every count is marginal: (long -
# short) / (long's transactions - short's), so that what a run pays once (its
# start, connections, prepares, summary; an empty paceline run makes about
# 360 system calls) cancels. (Before session 16's review the counts of one
# run were divided by its transactions.) The rate shown is the long run's.
# Per transaction: voluntary and involuntary context switches of the whole
# process (wait4(2)'s ru_nvcsw / ru_nivcsw, all threads), perf's
# context-switches and cpu-migrations, system calls of each kind made at
# least 0.01 times per transaction (syscalls:sys_enter_*), and user / system
# CPU µs (perf's own cost per event is in those: read CPU from
# benches/pgbench_ab.sh or pgbench.sh).
#
#   CALLGRIND=RATE  instead: RATE is the paced rate in /s, e.g. 1000 (no
#                   default; 1000/s for 20 s is what both clients hold under
#                   valgrind): each client paced at RATE for SECONDS under
#                   valgrind --tool=callgrind; prints instructions per
#                   transaction of the whole run (start and summary included)
#                   and paceline's split by component (the self cost of each
#                   function, given to a component by its name); the callgrind
#                   files stay in OUT (default /tmp/pgcount). For the marginal
#                   split, run it twice with two OUTs and two lengths and give
#                   both to benches/callgrind_split.py SHORT_OUT LONG_OUT.
#
# Needs PostgreSQL's server binaries, pgbench, perf (and valgrind and gcc for
# CALLGRIND). pgbench is run as $bin/pgbench, not through Debian's perl
# wrapper (/usr/bin/pgbench: its start, 40-50 ms of CPU, would count as
# pgbench's, and valgrind would follow the perl, not pgbench). As root the
# cluster runs as the `postgres` user (as pgbench.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:?seconds}; shift
bins=("$@")
[ ${#bins[@]} -gt 0 ] || { echo "give at least one paceline binary"; exit 2; }
percents="${PERCENTS:-25 75}"
short=${SHORT:-$((secs / 3))}
[ "$short" -ge 1 ] && [ "$short" -lt "$secs" ] ||
    { echo "SHORT ($short s) must be at least 1 and below SECONDS ($secs)"; exit 2; }
out="${OUT:-/tmp/pgcount}"; mkdir -p "$out"
. benches/lib.sh
pg_cluster pgcount

# one LABEL RATE CMD...: the client run twice under perf stat, for SHORT
# and for SECONDS ({S} in CMD is the length); prints the marginal counts per
# transaction, (long - short) / (long's transactions - short's), and the long
# run's achieved rate on fd 3.
one() {
    local label=$1 rate=$2; shift 2
    python3 - "$dir" "$label" "$short" "$secs" "$rate" "$@" <<'PY'
import json, os, re, subprocess, sys
d, label, rate, cmd = sys.argv[1], sys.argv[2], sys.argv[5], sys.argv[6:]
lengths = float(sys.argv[3]), float(sys.argv[4])

def measure(secs):
    s = f"{secs:g}"
    argv = ["perf", "stat", "-x,", "-o", f"{d}/perf", "-e",
            "context-switches,cpu-migrations,syscalls:sys_enter_*"] + [a.replace("{S}", s) for a in cmd]
    if os.path.exists(f"{d}/perf"):
        os.remove(f"{d}/perf")
    p = subprocess.Popen(argv, stdout=open(f"{d}/out", "w"), stderr=subprocess.STDOUT)
    _, st, ru = os.wait4(p.pid, 0)
    out = open(f"{d}/out").read()
    if os.waitstatus_to_exitcode(st) != 0:
        sys.exit(f"{label} ({s} s) failed: {out}")
    if label == "pgbench":
        n = int(re.search(r"actually processed: (\d+)", out).group(1))
    else:
        a = json.load(open(f"{d}/pl.json"))["activities"][0]
        n = a["cycles"]["completed"]
        if a["cycles"].get("errors"):
            sys.exit(f"{label}: errors {a.get('first_errors')}")
    ev = {}
    for line in open(f"{d}/perf"):
        f = line.split(",")
        if len(f) > 2 and f[0].isdigit():
            ev[f[2].split("sys_enter_")[-1].split(":")[-1]] = int(f[0])
    # wait4's counts include perf's own process; as a fixed cost it cancels.
    ev["vcs"], ev["ivcs"] = ru.ru_nvcsw, ru.ru_nivcsw
    ev["user"], ev["sys"] = ru.ru_utime * 1e6, ru.ru_stime * 1e6
    return n, ev

fixed = ("context-switches", "cpu-migrations", "vcs", "ivcs", "user", "sys")
(n0, e0), (n1, e1) = measure(lengths[0]), measure(lengths[1])
n = n1 - n0
if n <= 0:
    sys.exit(f"{label}: the {lengths[1]:g} s run made no more transactions ({n1}) than the {lengths[0]:g} s one ({n0})")
ev = {k: e1.get(k, 0) - e0.get(k, 0) for k in set(e1) | set(e0)}
per = lambda k: ev.pop(k, 0) / n
cs, mig, vcs, ivcs, user, syst = (per(k) for k in fixed)
calls = sorted(((v / n, k) for k, v in ev.items() if v >= n / 100), reverse=True)
print(f"{label:11s} {rate:>6s} {n1 / lengths[1]:7.0f}/s  vcs {vcs:5.3f} ivcs {ivcs:5.3f}"
      f"  cs {cs:5.3f} mig {mig:5.3f}  calls {sum(v for v, _ in calls):5.2f}:"
      + "".join(f" {k} {v:.3f}" for v, k in calls)
      + f"  user {user:5.2f} sys {syst:5.2f} µs  ({n0} and {n1} txns; the long run whole: vcs"
      f" {e1['vcs'] / n1:5.3f} calls {sum(v for k, v in e1.items() if k not in fixed and v >= n1 / 100) / n1:5.2f})", flush=True)
os.write(3, f"{n1 / lengths[1]:.0f}\n".encode())
PY
}
pgb() { # RATE (0: closed loop)
    local args=(-n -S -M prepared -c 8 -j 2 -T "{S}")
    [ "$1" = 0 ] || args+=(-R "$1")
    one pgbench "$1" "$bin/pgbench" "${args[@]}"
}
plr() { # LABEL BIN RATE
    local args=(run "$dir/select.yaml" threads=2 concurrency=8 "duration={S}s" --no-progress
        --summary-json "$dir/pl.json")
    [ "$3" = 0 ] || args+=("rate=$3,0" arrivals=poisson)
    one "$1" "$3" "$2" "${args[@]}"
}

echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "${CALLGRIND:-}" ]; then
    rate=$CALLGRIND
    # rustix reads the kernel's auxv (prctl PR_GET_AUXV), whose vdso valgrind
    # does not map: the binary would fault at its first clock reading. With
    # that prctl failing it reads /proc/self/auxv, which valgrind emulates.
    gcc -O2 -o "$dir/noauxv" benches/noauxv.c
    vg=("$dir/noauxv" valgrind --tool=callgrind --trace-children=no --log-file="$out/vg.log.%p")
    rm -f "$out"/cg.*
    "${vg[@]}" --callgrind-out-file="$out/cg.pgbench" "$bin/pgbench" -n -S -M prepared -c 8 -j 2 -T "$secs" \
        -R "$rate" >"$dir/out" 2>&1
    n=$(sed -n 's/.*actually processed: \([0-9]*\).*/\1/p' "$dir/out")
    echo "pgbench: $n txns"
    echo "$n" >"$out/n.pgbench"
    i=0
    for b in "${bins[@]}"; do
        i=$((i + 1))
        "${vg[@]}" --callgrind-out-file="$out/cg.pl$i" "$b" run "$dir/select.yaml" threads=2 \
            concurrency=8 "duration=${secs}s" --no-progress --summary-json "$dir/pl.json" \
            "rate=$rate,0" arrivals=poisson >"$dir/out" 2>&1
        n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["activities"][0]["cycles"]["completed"])' "$dir/pl.json")
        echo "paceline $i: $n txns"
        echo "$n" >"$out/n.pl$i"
    done
    python3 benches/callgrind_split.py "$out"
    exit 0
fi
if [ "${CLOSED:-1}" != 0 ]; then
    echo "round closed"
    pgb 0 3>>"$dir/rates"
    i=0
    for b in "${bins[@]}"; do i=$((i + 1)); plr "paceline $i" "$b" 0 3>>"$dir/rates"; done
fi
if [ -n "${RATES:-}" ]; then
    rates="$RATES"
else
    max=$(head -n 2 "$dir/rates" | sort -n | head -n 1)
    rates=""
    for p in $percents; do rates="$rates $((max * p / 100))"; done
    echo "R = $max/s (the lower of pgbench's and paceline 1's closed loop)"
fi
for r in $rates; do
    echo "round $r/s"
    pgb "$r" 3>/dev/null
    i=0
    for b in "${bins[@]}"; do i=$((i + 1)); plr "paceline $i" "$b" "$r" 3>/dev/null; done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
