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
# (/usr/bin/time) and wrk; paceline is built here in release mode.
#
# The columns: `achieved` ops/s over the run; `cpu/op` the client process's
# user + system CPU (GNU time) over its ops, in µs; `rss` its peak resident
# memory; `wait` paceline's lateness after each op's slot (oha has none of its
# own: `-`); `latency` paceline's response (wait + service, from the slot) and
# oha's latency with `--latency-correction` (also from the slot it was due).
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-10}"
[ -x /usr/bin/time ] || { echo "no /usr/bin/time: apt-get install time"; exit 2; }
if [ -n "${PL:-}" ]; then pl="$PL"; else cargo build --release --quiet; pl=target/release/paceline; fi
if ! command -v oha >/dev/null && [ "${OHA:-}" = 1 ]; then cargo install oha --locked --quiet; fi
if [ "${OHA:-}" != 0 ] && command -v oha >/dev/null; then echo "oha: $(oha --version)"; fi

. benches/http_nginx.sh
nginx_start
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; nginx on $base"

# One paceline run: its JSON summary and GNU time's CPU and RSS, in $dir/NAME.*;
# prints its verdict line.
paceline() {
    local name="$1"; shift
    /usr/bin/time -o "$dir/$name.time" -f "%U %S %M" \
        "$pl" run driver=http "base_url=$base" --no-progress \
        --summary-json "$dir/$name.json" "$@" >"$dir/$name.out" 2>&1 || true
    grep -m1 -E "^ *verdict|bound|on-schedule" "$dir/$name.out" | sed "s|^ *|  $name: |" || true
}

# One oha run at `rate` with `conns` connections: its JSON and time, as above.
oha_run() {
    local name="$1" rate="$2" conns="$3" path="$4"
    /usr/bin/time -o "$dir/$name.time" -f "%U %S %M" \
        oha -q "$rate" -c "$conns" --latency-correction -z "${secs}s" --no-tui \
        --output-format json "$base$path" >"$dir/$name.json" 2>"$dir/$name.err" || true
}

# The table of the runs named after `--` (each NAME.json and NAME.time in $dir).
table() {
    python3 - "$dir" "$@" <<'PY'
import json, sys, os
d, title, names = sys.argv[1], sys.argv[2], sys.argv[3:]
def ms(ns): return "-" if ns is None else f"{ns/1e6:.2f}"
rows = []
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
        ops = a["cycles"]["completed"]
        rate = a["rate"]["achieved"]
        w, r = a["wait_ns"], a["response_ns"]
        wait = (w["p50"], w["p99"], w["max"])
        lat = (r["p50"], r["p99"], r["max"])
    else:                                     # oha --output-format json
        sm, p = j["summary"], j.get("latencyPercentiles", {})
        ops = sum(j.get("statusCodeDistribution", {}).values())
        rate = sm["requestsPerSec"]
        wait = (None, None, None)
        sec = lambda v: None if v is None else v * 1e9
        lat = (sec(p.get("p50")), sec(p.get("p99")), sec(sm.get("slowest")))
    per = cpu / ops * 1e6 if ops else float("nan")
    rows.append((n, f"{rate:>9.0f} {per:>7.1f} {int(rss)/1024:>7.1f} "
                    f"{ms(wait[0]):>7} {ms(wait[1]):>7} {ms(wait[2]):>7} "
                    f"{ms(lat[0]):>7} {ms(lat[1]):>7} {ms(lat[2]):>7}"))
print(f"\n{title}")
print(f"{'':34} {'achieved':>9} {'cpu/op':>7} {'rss':>7} {'wait ms':^23} {'latency ms':^23}")
print(f"{'':34} {'ops/s':>9} {'µs':>7} {'MB':>7} {'p50':>7} {'p99':>7} {'max':>7} {'p50':>7} {'p99':>7} {'max':>7}")
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
    r, w, f, v = a["service_ns"], a["wait_ns"], a["in_flight"], a["verdict"]
    rate = a["rate"]["achieved"]
    print(f"{n:16} {rate:>9.0f} {r['mean']/1e6:>7.1f}ms {r['max']/1e6:>7.1f}ms "
          f"{rate * r['mean'] / 1e9:>11.0f} {f['max']:>9} {f['concurrency']:>5} "
          f"{f['cap_full_share']*100:>7.1f}% {w['p50']/1e6:>6.2f}ms {w['p99']/1e6:>6.2f}ms "
          f"{w['max']/1e6:>6.2f}ms {v.get('run_queue_delay_per_op_ns', 0)/1e3:>6.1f}µs "
          f"{v.get('generator_cpu_cores', 0):>5.2f}  {v['kind']}")
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
        wrk -t2 -c64 -d"${secs}s" "$base/ok" | grep -E "Requests/sec|Latency" | sed "s/^/wrk c=64: /"
    fi
fi

# Issue 21's done-when command, its whole summary.
if [ "${DONE_WHEN:-}" = 1 ]; then
    /usr/bin/time -f "done-when: cpu %U+%S s, max rss %M KB" \
        "$pl" run driver=http "base_url=$base" "op=GET /slow" rate=10K concurrency=1000 \
        threads=2 cycles=100K --no-progress 2>&1 | sed "s/^/done-when: /"
fi
