#!/usr/bin/env bash
# paceline's `redis` driver beside redis-benchmark (issue 22), against one
# redis-server this script starts on a loopback port (no persistence, as
# tests/support/redis.rs starts it). Prints one table; record it with
# `lscpu`'s model and the load average in benches/README.md.
#
#   benches/redis_bench.sh            the issue's sizes: -n 1000000
#   N=200000 benches/redis_bench.sh   fewer requests per test
#   THREADS=2 ...                     paceline's threads (default 1, as
#                                     redis-benchmark's one thread)
#   STRICTNESS="1.1 1.25" ...         the paced round once per strictness
#                                     (default: the rate spec's own, 1.1)
#   PL=/path/to/paceline ...          that build instead of this tree's
#   BOUND=1 ...                       paceline's key a binding (`key:{k}`,
#                                     k = Div(2); Hash(); Mod(100000), so a
#                                     cycle's GET reads the SET before it):
#                                     the command rendered per op, where the
#                                     default one is fixed text
#
# Rounds:
#   1. `redis-benchmark -c 50 -n N -t set,get -P 1`: closed loop, N SETs then
#      N GETs of its default key `key:__rand_int__` (3-byte value);
#   2. paceline unpaced, `concurrency=50`, the same two commands in turn,
#      2N cycles;
#   3. paceline paced at 80 % of round 2's rate, 2N cycles: achieved rate and
#      wait p99.
# CPU per op is user + system CPU of the client process over all its ops,
# from the kernel's accounting at its exit (wait4(2), to the microsecond;
# /proc/PID/stat holds the same sum in 10 ms ticks).
#
# paceline's commands in flight share each worker thread's one multiplexed
# connection (Redis's own pipelining, docs/drivers.md); redis-benchmark holds
# 50 connections with one command in flight each.
set -euo pipefail
cd "$(dirname "$0")/.."
n="${N:-1000000}"
threads="${THREADS:-1}"
command -v redis-server >/dev/null || { echo "no redis-server: apt-get install redis-server"; exit 2; }
command -v redis-benchmark >/dev/null || { echo "no redis-benchmark: apt-get install redis-tools"; exit 2; }
. benches/lib.sh
bench_setup redis-bench
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
    --loglevel warning --dir "$dir" --logfile "$dir/redis.log" &
rs=$!
trap 'kill $rs 2>/dev/null; wait $rs 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
if [ "${BOUND:-}" = 1 ]; then
    cat >"$dir/setget.yaml" <<YAML
# redis-benchmark's SET and GET tests, the key rendered per op.
params: {driver: redis, url: 'redis://127.0.0.1:$port/0'}
bindings: {k: 'Div(2); Hash(); Mod(100000)'}
ops:
  set: {stmt: 'SET key:{k} xxx', expect_reply: OK}
  get: {stmt: 'GET key:{k}', expect_reply: xxx}
YAML
else
    cat >"$dir/setget.yaml" <<YAML
# redis-benchmark's SET and GET tests: one key, a 3-byte value.
params: {driver: redis, url: 'redis://127.0.0.1:$port/0'}
ops:
  set: {stmt: 'SET key:__rand_int__ xxx', expect_reply: OK}
  get: {stmt: 'GET key:__rand_int__', expect_reply: xxx}
YAML
fi

# paceline over 2N cycles, rate $1 (0: unpaced): ops/s, wait p99 µs, response p50/p99 µs, CPU µs/op.
# Where a paced run's waits came from goes to $dir/pl.json.detail: queueing at
# the cap against the worker's own lateness (dispatch), the thread's run-queue
# delay (it was runnable, the machine ran something else), the core it used.
# A figure the summary leaves null (not measured) shows as "-". It runs inside
# `$(...)`: on a failure its messages go to stderr and it exits non-zero.
paceline_run() {
    local args=(run "$dir/setget.yaml" "threads=$threads" concurrency=50 "cycles=$((2 * n))"
        --no-progress --summary-json "$dir/pl.json")
    [ "$1" = 0 ] || args+=("rate=$1")
    # No earlier round's summary or detail may stand in for this one's.
    rm -f "$dir/pl.json" "$dir/pl.json.detail"
    local cpu
    cpu="$(cpu_of "$pl" "${args[@]}")" || { cat "$dir/out" >&2; exit 1; }
    python3 - "$dir/pl.json" "$cpu" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["activities"][0]
n = a["cycles"]["completed"]
if a["cycles"].get("errors"):
    sys.exit(f"paceline: errors: {a.get('first_errors')}")
w, r = a["wait_ns"], a["response_ns"]
us = lambda ns: f"{ns / 1000:.0f}" if ns is not None else "-"
# A null figure (not measured: the verdict's run-queue delay, a mean of no ops) is "-".
def fig(x, scale, spec):
    return "-" if x is None else format(x / scale, spec)
print(f"{a['rate']['achieved']:.0f} {us(w['p99'])} {us(r['p50'])} {us(r['p99'])} {float(sys.argv[2]) * 1e6 / n:.1f}")
q, d, v = a.get("queue_ns"), a.get("dispatch_ns"), a.get("verdict", {})
if q is None or d is None:  # an unpaced run has no slots to be late for
    sys.exit()
with open(sys.argv[1] + ".detail", "w") as f:
    f.write(f"wait p50 {us(w['p50'])} p99 {us(w['p99'])} max {us(w['max'])} µs; "
            f"queue mean {fig(q.get('mean'), 1e3, '.1f')} p99 {us(q.get('p99'))} µs; "
            f"dispatch mean {fig(d.get('mean'), 1e3, '.1f')} p99 {us(d.get('p99'))} µs; "
            f"run-queue delay {fig(v.get('run_queue_delay_per_op_ns'), 1e3, '.2f')} µs/op; "
            f"generator {fig(v.get('generator_cpu_cores'), 1, '.2f')} cores; "
            f"in flight max {(a.get('in_flight') or {}).get('max', '-')}; verdict {v.get('kind')}\n")
PY
}

row() { printf '| %-30s | %8s | %9s | %9s | %9s | %7s |\n' "$@"; }
machine_line
echo "$(redis-server --version | awk '{print $1, $2, $3}') on 127.0.0.1:$port; N = $n; paceline threads=$threads${BOUND:+; key bound}"
row client 'ops/s' 'wait p99' 'resp p50' 'resp p99' 'CPU µs'
row '' '' 'µs' 'µs' 'µs' '/op'

cpu="$(cpu_of redis-benchmark -p "$port" -c 50 -n "$n" -t set,get -P 1 --csv)" || { cat "$dir/out" >&2; exit 1; }
python3 - "$dir/out" "$cpu" "$n" <<'PY' >"$dir/rb"
import csv, sys
rows = {r[0]: r for r in csv.reader(open(sys.argv[1])) if r and r[0] in ("SET", "GET")}
n, cpu = int(sys.argv[3]), float(sys.argv[2])
rps = {k: float(v[1]) for k, v in rows.items()}
# Both tests' requests over both tests' time.
overall = 2 * n / sum(n / r for r in rps.values())
p50 = "/".join(f"{float(rows[k][4]) * 1000:.0f}" for k in ("SET", "GET"))
p99 = "/".join(f"{float(rows[k][6]) * 1000:.0f}" for k in ("SET", "GET"))
print(f"{overall:.0f} - {p50} {p99} {cpu * 1e6 / (2 * n):.1f} {rps['SET']:.0f} {rps['GET']:.0f}")
PY
read -r rb_rate rb_wait rb_p50 rb_p99 rb_cpu rb_set rb_get <"$dir/rb"
row "redis-benchmark c=50 closed" "$rb_rate" "$rb_wait" "$rb_p50" "$rb_p99" "$rb_cpu"
echo "  (redis-benchmark: SET $rb_set/s, GET $rb_get/s; latencies SET/GET)"
# Each paceline round's line is taken whole first: a failed round stops the
# script with paceline's message (on stderr), never a row of error words.
line="$(paceline_run 0)" || { echo "redis_bench: the unpaced paceline round failed (above)" >&2; exit 1; }
read -r pl_rate rest <<<"$line"
[[ "$pl_rate" =~ ^[0-9]+$ ]] || { echo "redis_bench: the unpaced round gave no rate: $line" >&2; exit 1; }
row "paceline c=50 unpaced" "$pl_rate" $rest
paced=$((pl_rate * 8 / 10))
for st in ${STRICTNESS:-default}; do
    spec="$paced"; [ "$st" = default ] || spec="$paced,$st"
    line="$(paceline_run "$spec")" || { echo "redis_bench: the round at rate=$spec failed (above)" >&2; exit 1; }
    row "paceline c=50 rate=$spec (80 %)" $line
    if [ -f "$dir/pl.json.detail" ]; then
        echo "  ($(cat "$dir/pl.json.detail"))"
    else
        echo "  (no detail: the summary had no queue or dispatch figures)"
    fi
done
load_after
