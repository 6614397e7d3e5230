#!/usr/bin/env bash
# paceline's `postgres` driver beside pgbench (issue 22): the same select-only
# statement, prepared, 8 connections on 2 threads, against one PostgreSQL
# cluster this script creates on a loopback port, the two clients taking turns
# within the same minutes. Prints one table; record it with `lscpu`'s model
# and the load average in benches/README.md.
#
#   benches/pgbench.sh [SECONDS]     (default 10 s a run, as the issue's -T 10)
#
#   ARRIVALS=uniform benches/pgbench.sh    paceline's arrivals (default poisson,
#                                          as pgbench -R draws them)
#   SCALE=10       pgbench -i scale (100,000 accounts per unit; default 10)
#   STRICTNESS=0   paceline's strictness when paced (default 0, average: a
#                  late transaction starts at once and its lag counts from its
#                  own slot, as pgbench -R does; paceline's own default, 1.1,
#                  catches a backlog up at 1.1 x the rate instead)
#   PERCENTS="25 50 75 90"   the paced rates, in % of the closed-loop maximum
#   SYSCALLS=each  under each row, that run's system calls of each kind and
#                  its context switches per transaction (perf stat's
#                  syscalls:sys_enter_* and context-switches; those made at
#                  least 0.01 times per transaction); perf's own CPU is then
#                  in the CPU column: read CPU from a run without it. These
#                  are one run's counts over its transactions (its start and
#                  summary included), and pgbench's include the buffered
#                  `write`s of its per-transaction log (-l), which paceline
#                  does not keep: benches/pgbench_count.sh gives marginal
#                  counts without the log
#   PGBENCH=/usr/bin/pgbench   the pgbench binary (default: the one beside
#                  initdb; Debian's /usr/bin/pgbench is a perl wrapper whose
#                  start, 40-50 ms of CPU, counted as pgbench's)
#
# Rounds: each client unpaced (closed loop: `pgbench -c 8 -j 2`, paceline
# `threads=2 concurrency=8`); R = the lower of the two maxima; then at each
# percent of R, pgbench `-R` and paceline `rate=`, one after the other.
#
# Columns: achieved rate; pgbench's schedule lag against paceline's wait
# (mean, p99); pgbench's latency against paceline's response (p50, p99), both
# from the scheduled start; CPU per transaction of each client process (user +
# system, from the kernel's accounting of the whole process at its exit,
# wait4(2), to the microsecond: /proc/PID/stat's utime and stime hold the
# same sum in 10 ms ticks). pgbench's percentiles come from its per-transaction
# log (`-l`), paceline's from its `--summary-json`.
#
# Needs PostgreSQL's server binaries and pgbench (Debian: postgresql,
# postgresql-contrib). Run as root, the cluster is created and run as the
# `postgres` user (initdb refuses root), as tests/support/postgres.rs does.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-10}"
arrivals="${ARRIVALS:-poisson}"
strictness="${STRICTNESS:-0}"
scale="${SCALE:-10}"
percents="${PERCENTS:-25 50 75 90}"
. benches/lib.sh
pg_find
case "${SYSCALLS:-0}" in
    0 | each) ;;
    *) echo "SYSCALLS=${SYSCALLS}: give each (per kind) or 0 (none)"; exit 2 ;;
esac
# counted: sets `perf` to perf stat's words before a client's command when
# SYSCALLS=each, else to none (an array: `syscalls:sys_enter_*` is never
# globbed against the working directory).
counted() {
    perf=()
    [ "${SYSCALLS:-0}" = each ] || return 0
    rm -f "$dir/perf"
    perf=(perf stat -x, -o "$dir/perf" -e 'context-switches,syscalls:sys_enter_*')
}
# counts_row TXNS: the counts of the run just made, per transaction.
counts_row() {
    [ "${SYSCALLS:-0}" = each ] || return 0
    python3 - "$dir/perf" "$1" <<'PY'
import sys
n = int(sys.argv[2])
ev = []
for line in open(sys.argv[1]):
    f = line.split(",")
    if len(f) > 2 and f[0].isdigit() and int(f[0]) >= n / 100:
        ev.append((int(f[0]) / n, f[2].split("sys_enter_")[-1]))
print("|           |          | per txn: " + ", ".join(f"{k} {v:.2f}" for v, k in sorted(ev, reverse=True)) + " |")
PY
}
bench_setup pgbench
pg_cluster pgbench "$scale"

# pgbench, paced at $1/s (0: unpaced): a table row's numbers.
pgbench_run() {
    local rate="$1" args=(-n -S -M prepared -c 8 -j 2 -T "$secs" -l --log-prefix="$dir/pgb")
    [ "$rate" = 0 ] || args+=(-R "$rate")
    rm -f "$dir"/pgb.*
    local cpu
    counted
    cpu="$(cpu_of "${perf[@]}" "$pgbench" "${args[@]}")" || { cat "$dir/out"; exit 1; }
    python3 - "$dir" "$cpu" "$secs" <<'PY'
import glob, sys
d, cpu, secs = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
out = open(f"{d}/out").read()
tps = float(out.split("tps = ")[1].split()[0])
lat, lag = [], []
for f in glob.glob(f"{d}/pgb.*"):
    for line in open(f):
        w = line.split()
        # client txn latency_us script epoch_s epoch_us [lag_us]
        lat.append(int(w[2]))
        if len(w) > 6:
            lag.append(int(w[6]))
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100 * len(v)))] if v else float("nan")
n = len(lat)
mean = lambda v: sum(v) / len(v) if v else float("nan")
print(f"{tps:.0f} {mean(lag):.0f} {pct(lag, 99):.0f} {pct(lat, 50):.0f} {pct(lat, 99):.0f} {cpu * 1e6 / n:.1f} {n}")
PY
}

# paceline, paced at $1/s (0: unpaced).
paceline_run() {
    local rate="$1" args=(run "$dir/select.yaml" threads=2 concurrency=8 "duration=${secs}s"
        --no-progress --summary-json "$dir/pl.json")
    [ "$rate" = 0 ] || args+=("rate=$rate,$strictness")
    [ "$rate" = 0 ] || [ "$arrivals" = uniform ] || args+=("arrivals=$arrivals")
    local cpu
    counted
    cpu="$(cpu_of "${perf[@]}" "$pl" "${args[@]}")" || { cat "$dir/out"; exit 1; }
    python3 - "$dir/pl.json" "$cpu" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["activities"][0]
cpu = float(sys.argv[2])
n = a["cycles"]["completed"]
w, r = a["wait_ns"], a["response_ns"]
us = lambda ns: ns / 1000 if ns is not None else float("nan")
errors = a["cycles"].get("errors", 0)
if errors:
    sys.exit(f"paceline: {errors} errors: {a.get('first_errors')}")
print(f"{a['rate']['achieved']:.0f} {us(w['mean']):.0f} {us(w['p99']):.0f} {us(r['p50']):.0f} {us(r['p99']):.0f} {cpu * 1e6 / n:.1f} {n}")
PY
}

row() { # label client target numbers...
    printf '| %-9s | %-8s | %6s | %7s | %8s | %8s | %8s | %8s | %7s |\n' "$@"
}
machine_line
echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port, scale $scale; ${secs} s a run; paceline arrivals: $arrivals, strictness $strictness"
row run client target 'ops/s' 'lag/wait' 'p99' 'lat p50' 'p99' 'CPU µs'
row '' '' '/s' '' 'mean µs' 'µs' 'µs' 'µs' '/txn'
pg0="$(pgbench_run 0)"
row unpaced pgbench - ${pg0% *}
counts_row "${pg0##* }"
pl0="$(paceline_run 0)"
row unpaced paceline - ${pl0% *}
counts_row "${pl0##* }"
pg_max=${pg0%% *} pl_max=${pl0%% *}
max=$(( pg_max < pl_max ? pg_max : pl_max ))
echo "closed-loop maximum: pgbench $pg_max/s, paceline $pl_max/s; R = $max/s"
for p in $percents; do
    rate=$((max * p / 100))
    r="$(pgbench_run "$rate")"
    row "$p %" pgbench "$rate" ${r% *}
    counts_row "${r##* }"
    r="$(paceline_run "$rate")"
    row "$p %" paceline "$rate" ${r% *}
    counts_row "${r##* }"
done
load_after
