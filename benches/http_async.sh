#!/usr/bin/env bash
# The http driver's async client against thread-per-op and oha, on a loopback
# nginx whose /slow answers after 50 ms (echo module), and `return 200` against
# wrk. Side by side in one run; prints one table per rate (achieved rate, CPU
# per op, RSS, wait and latency p50/p99/max of each tool). Record the numbers
# with `lscpu`'s model in benches/README.md, and say what else ran.
#
#   benches/http_async.sh [SECONDS]        (default 10 s a round)
#   OHA=1 benches/http_async.sh            also `cargo install oha --locked` if missing
#   RATES="2000" benches/http_async.sh 5   fewer rates (default 2000 10000 20000)
#   DONE_WHEN=1 benches/http_async.sh      also issue 21's done-when run (10K/s,
#                                          1000 in flight, 2 threads, 100K cycles)
#   NO_OK=1 benches/http_async.sh          skip the `return 200` rounds
#   CONCS="1000 1200 1600 2000" RATES=20000 NO_OK=1 OHA=0 benches/http_async.sh
#                                          the async runner alone at each
#                                          concurrency (instead of the side by
#                                          side rounds), with its in-flight table
#   PL=/path/to/paceline ...               that build instead of this tree's
#   THREADS=1 CONCS=... ...                the sweep's threads (default 2)
#
# Needs nginx, its echo module (libnginx-mod-http-echo), python3, GNU time
# (/usr/bin/time) and wrk (without it the wrk line says it was skipped);
# paceline is built here in release mode.
#
# The columns: `achieved` ops/s over the run; `errors` the ops that failed
# (paceline's `cycles.errors`, oha's `errorDistribution`: oha counts the
# requests its deadline cut short there too); `cpu/op` the client process's
# user + system CPU (GNU time) over its ops, in µs; `rss` its peak resident
# memory; `wait` paceline's lateness after each op's slot (oha has none of its
# own: `-`); `latency` paceline's response (wait + service, from the slot) and
# oha's latency with `--latency-correction` (also from the slot it was due).
# A figure the run's JSON leaves null is `-`; a run that failed prints its
# exit status and its messages above its table, and its row reads `no result`.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-10}"
[ -x /usr/bin/time ] || { echo "no /usr/bin/time: apt-get install time"; exit 2; }
if [ -n "${PL:-}" ]; then pl="$PL"; else cargo build --release --quiet; pl=target/release/paceline; fi
if ! command -v oha >/dev/null && [ "${OHA:-}" = 1 ]; then cargo install oha --locked --quiet; fi
if [ "${OHA:-}" != 0 ] && command -v oha >/dev/null; then echo "oha: $(oha --version)"; fi

. benches/http_nginx.sh
nginx_start
dir="$nginx_dir"   # this script's files go with nginx's
echo "cpu: $(cpu_model), $(nproc) cores; nginx on $base"

# One paceline run: its JSON summary and GNU time's CPU and RSS, in $dir/NAME.*;
# prints its verdict line, or, when it failed, its exit status and paceline's
# messages (a failed run's row then reads `no result`, or shows its errors).
paceline() {
    local name="$1"; shift
    local rc=0
    /usr/bin/time -o "$dir/$name.time" -f "%U %S %M" \
        "$pl" run driver=http "base_url=$base" --no-progress \
        --summary-json "$dir/$name.json" "$@" >"$dir/$name.out" 2>&1 || rc=$?
    if [ "$rc" != 0 ]; then
        echo "  $name: exit $rc"
        grep -E '^(paceline|error|warning|/usr/bin/time|Command)' "$dir/$name.out" | head -5 | sed "s|^|  $name: |"
        grep -q -E '^(paceline|error|warning|/usr/bin/time|Command)' "$dir/$name.out" \
            || tail -3 "$dir/$name.out" | sed "s|^|  $name: |"
    fi
    grep -m1 -E "^ *verdict|bound|on-schedule" "$dir/$name.out" | sed "s|^ *|  $name: |" || true
}

# One oha run at `rate` with `conns` connections: its JSON and time, as above;
# prints its exit status and its stderr's tail when it failed.
oha_run() {
    local name="$1" rate="$2" conns="$3" path="$4"
    local rc=0
    /usr/bin/time -o "$dir/$name.time" -f "%U %S %M" \
        oha -q "$rate" -c "$conns" --latency-correction -z "${secs}s" --no-tui \
        --output-format json "$base$path" >"$dir/$name.json" 2>"$dir/$name.err" || rc=$?
    if [ "$rc" != 0 ]; then
        echo "  $name: exit $rc"
        tail -5 "$dir/$name.err" | sed "s|^|  $name: |"
    fi
}

# The table of the runs named after `--` (each NAME.json and NAME.time in $dir).
table() {
    python3 - "$dir" "$@" <<'PY'
import json, sys, os
d, title, names = sys.argv[1], sys.argv[2], sys.argv[3:]
def ms(ns): return "-" if ns is None else f"{ns/1e6:.2f}"
rows = []
# A figure the summary leaves null (not measured) is "-", never a crash.
def get(d, *keys):
    for k in keys:
        d = d.get(k) if isinstance(d, dict) else None
    return d
for n in names:
    try:
        u, s, rss = open(f"{d}/{n}.time").read().split()[-3:]
    except (OSError, ValueError):
        rows.append((n, "no result") ); continue
    cpu = float(u) + float(s)
    try:
        j = json.load(open(f"{d}/{n}.json"))
    except (OSError, ValueError):
        rows.append((n, "no result")); continue
    if "activities" in j:                     # paceline's --summary-json
        a = j["activities"][0]
        ops = get(a, "cycles", "completed") or 0
        errors = get(a, "cycles", "errors") or 0
        rate = get(a, "rate", "achieved")
        wait = tuple(get(a, "wait_ns", k) for k in ("p50", "p99", "max"))
        lat = tuple(get(a, "response_ns", k) for k in ("p50", "p99", "max"))
    else:                                     # oha --output-format json
        sm, p = j.get("summary") or {}, j.get("latencyPercentiles") or {}
        ops = sum((j.get("statusCodeDistribution") or {}).values())
        errors = sum((j.get("errorDistribution") or {}).values())
        rate = sm.get("requestsPerSec")
        wait = (None, None, None)
        sec = lambda v: None if v is None else v * 1e9
        lat = (sec(p.get("p50")), sec(p.get("p99")), sec(sm.get("slowest")))
    per = f"{cpu / ops * 1e6:.1f}" if ops else "-"
    rate = "-" if rate is None else f"{rate:.0f}"
    rows.append((n, f"{rate:>9} {errors:>7} {per:>7} {int(rss)/1024:>7.1f} "
                    f"{ms(wait[0]):>7} {ms(wait[1]):>7} {ms(wait[2]):>7} "
                    f"{ms(lat[0]):>7} {ms(lat[1]):>7} {ms(lat[2]):>7}"))
print(f"\n{title}")
print(f"{'':34} {'achieved':>9} {'errors':>7} {'cpu/op':>7} {'rss':>7} {'wait ms':^23} {'latency ms':^23}")
print(f"{'':34} {'ops/s':>9} {'':>7} {'µs':>7} {'MB':>7} {'p50':>7} {'p99':>7} {'max':>7} {'p50':>7} {'p99':>7} {'max':>7}")
for n, r in rows:
    print(f"{n:34} {r}")
PY
}

# The in-flight table of the async runs named after the title: what Little's
# law needs (rate x mean service: an op is in flight from its start to its
# end) against the cap, and where the wait came from.
inflight_table() {
    python3 - "$dir" "$@" <<'PY'
import json, sys
d, title, names = sys.argv[1], sys.argv[2], sys.argv[3:]
print(f"\n{title}")
print(f"{'':16} {'achieved':>9} {'svc mean':>9} {'svc max':>9} {'rate x mean':>11} {'in flight':>9} "
      f"{'cap':>5} {'cap full':>8} {'wait p50':>8} {'p99':>8} {'max':>8} {'runq/op':>8} {'cores':>5}  verdict")
for n in names:
    try:
        a = json.load(open(f"{d}/{n}.json"))["activities"][0]
    except (OSError, ValueError, KeyError, IndexError):
        print(f"{n:16} no result"); continue
    r, w = a.get("service_ns") or {}, a.get("wait_ns") or {}
    f, v = a.get("in_flight") or {}, a.get("verdict") or {}
    rate = (a.get("rate") or {}).get("achieved")
    # A figure the summary leaves null (not measured) is "-", never a crash.
    def fig(x, scale, spec, unit=""):
        return "-" if x is None else format(x * scale, spec) + unit
    need = None if rate is None or r.get("mean") is None else rate * r["mean"] / 1e9
    print(f"{n:16} {fig(rate, 1, '.0f'):>9} {fig(r.get('mean'), 1e-6, '.1f', 'ms'):>9} "
          f"{fig(r.get('max'), 1e-6, '.1f', 'ms'):>9} "
          f"{fig(need, 1, '.0f'):>11} {fig(f.get('max'), 1, 'd'):>9} {fig(f.get('concurrency'), 1, 'd'):>5} "
          f"{fig(f.get('cap_full_share'), 100, '.1f', '%'):>8} {fig(w.get('p50'), 1e-6, '.2f', 'ms'):>8} "
          f"{fig(w.get('p99'), 1e-6, '.2f', 'ms'):>8} {fig(w.get('max'), 1e-6, '.2f', 'ms'):>8} "
          f"{fig(v.get('run_queue_delay_per_op_ns'), 1e-3, '.1f', 'µs'):>8} "
          f"{fig(v.get('generator_cpu_cores'), 1, '.2f'):>5}  {v.get('kind', '-')}")
PY
}

if [ -n "${CONCS:-}" ]; then
    echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
    for rate in ${RATES:-20000}; do
        names=()
        for c in $CONCS; do
            paceline "async-c$c" "op=GET /slow" rate=$rate "threads=${THREADS:-2}" concurrency=$c \
                cycles=$((rate * secs))
            names+=("async-c$c")
        done
        table "$rate/s of 50 ms answers, $secs s, async:" "${names[@]}"
        inflight_table "$rate/s, in flight (rate x mean service = Little's law's need):" "${names[@]}"
    done
    echo "load average after $(cut -d' ' -f1-3 /proc/loadavg)"
    exit 0
fi

for rate in ${RATES:-2000 10000 20000}; do
    inflight=$((rate * 6 / 100))          # 1.2 x rate x 50 ms
    cycles=$((rate * secs))
    names=()
    paceline "async-c$inflight" "op=GET /slow" rate=$rate threads=2 \
        concurrency=$inflight cycles=$cycles
    names+=("async-c$inflight")
    paceline "thread-per-op-t$inflight" "op=GET /slow" rate=$rate \
        threads=$inflight cycles=$cycles
    names+=("thread-per-op-t$inflight")
    if [ "${OHA:-}" != 0 ] && command -v oha >/dev/null; then
        oha_run "oha-c$inflight" "$rate" "$inflight" /slow
        names+=("oha-c$inflight")
    fi
    table "$rate/s of 50 ms answers, $secs s:" "${names[@]}"
done

# `return 200`, no delay: the highest rate each holds.
if [ "${NO_OK:-}" != 1 ]; then
    paceline "async-unpaced-c64" "op=GET /ok" threads=2 concurrency=64 cycles=$((50000 * secs))
    paceline "thread-per-op-unpaced-t2" "op=GET /ok" threads=2 cycles=$((50000 * secs))
    # The same 64 in flight as the async runner and wrk, one thread per op.
    paceline "thread-per-op-unpaced-t64" "op=GET /ok" threads=64 cycles=$((50000 * secs))
    table "return 200, unpaced:" "async-unpaced-c64" "thread-per-op-unpaced-t2" "thread-per-op-unpaced-t64"
    if command -v wrk >/dev/null; then
        wrk -t2 -c64 -d"${secs}s" "$base/ok" >"$dir/wrk.out" 2>&1 || echo "wrk c=64: exit $?"
        grep -E "Requests/sec|Latency|Non-2xx|Socket errors" "$dir/wrk.out" | sed "s/^/wrk c=64: /" \
            || { echo "wrk c=64: no result:"; tail -5 "$dir/wrk.out"; }
    else
        echo "wrk: not installed, skipped (apt-get install wrk)"
    fi
fi

# Issue 21's done-when command, its whole summary.
if [ "${DONE_WHEN:-}" = 1 ]; then
    /usr/bin/time -f "done-when: cpu %U+%S s, max rss %M KB" \
        "$pl" run driver=http "base_url=$base" "op=GET /slow" rate=10K concurrency=1000 \
        threads=2 cycles=100K --no-progress 2>&1 | sed "s/^/done-when: /"
fi
