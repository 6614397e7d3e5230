#!/usr/bin/env bash
# Where the async http worker's CPU per op goes, beside oha: per op, the
# user and kernel CPU (from `perf record` cpu-clock samples: GNU time's
# tick-sampled user/system split is wrong at these sizes), system calls and
# context switches (`perf stat`, exact counts), against a loopback nginx whose
# /slow answers after 50 ms. Builds given in BASE (and this tree's release
# build) run in alternating rounds, so an A/B shares its minutes.
#
#   benches/http_cpu_split.sh [SECONDS]          (default 5 s a run)
#   RATE=10000 CONC=600 benches/http_cpu_split.sh
#   BASE=/path/to/main/target/release/paceline ROUNDS=3 benches/http_cpu_split.sh
#   NO_OHA=1 ...                                 paceline builds only
#   THREADS=1 ...                                paceline's threads (default 2)
#   KSYMS=1 ...                                  also each run's top kernel
#                                                symbols (% of its samples)
#   BUILDS='main=/tmp/a/paceline;exp=env X=1 /tmp/b/paceline' NO_BUILD=1 ...
#                                                any runs, each "label=command"
#                                                (instead of BASE and this tree)
#
# Needs nginx with the echo module, perf (with the syscalls tracepoints),
# GNU time, python3; oha unless NO_OHA=1. Prints one line per run (with the
# shares of all samples in malloc/free and in memmove/memcpy); record the
# numbers with `lscpu`'s model and the load average in benches/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-5}"
rate="${RATE:-20000}"
conc="${CONC:-1200}"
rounds="${ROUNDS:-2}"
[ -x /usr/bin/time ] || { echo "no /usr/bin/time: apt-get install time"; exit 2; }
command -v perf >/dev/null || { echo "no perf: apt-get install linux-perf"; exit 2; }
if [ "${NO_OHA:-}" != 1 ] && ! command -v oha >/dev/null; then
    echo "no oha: cargo install oha --locked, or NO_OHA=1"; exit 2
fi
[ "${NO_BUILD:-}" = 1 ] || cargo build --release --quiet
builds=()
if [ -n "${BUILDS:-}" ]; then
    IFS=';' read -r -a builds <<<"$BUILDS"
else
    [ -n "${BASE:-}" ] && builds+=("base=$BASE")
    builds+=("this=target/release/paceline")
fi

. benches/http_nginx.sh
nginx_start
dir="$nginx_dir"   # this script's files go with nginx's
echo "cpu: $(cpu_model), $(nproc) cores; $rate/s, $conc in flight, $secs s a run; load $(cut -d' ' -f1-3 /proc/loadavg)"
events='context-switches,raw_syscalls:sys_enter,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_timerfd_settime,syscalls:sys_enter_sendto,syscalls:sys_enter_writev,syscalls:sys_enter_recvfrom,syscalls:sys_enter_write'
# perf stat runs no command when it cannot open an event (perf_event_paranoid,
# no tracefs): say so once, with perf's own message, before any round.
if ! perf stat -x, -e "$events" -o /dev/null true 2>"$dir/perf-check.err"; then
    echo "perf cannot count the events ($events):" >&2
    cat "$dir/perf-check.err" >&2
    exit 2
fi
# cpu-clock samples at a fixed period of 0.5 ms of CPU each (`-c`), not at a
# frequency the kernel may lower under load (perf_event_max_sample_rate): the
# CPU sampled is the sum of the samples' periods, and a run the kernel
# throttled anyway (samples dropped) is said on its line.
period_ns=500000

# The line of run NAME: its perf stat counts and GNU time (the .json1 run),
# and the user / kernel split of its perf record samples (the .json2 run, the
# same command again right after).
summarize() {
    local name="$1"
    perf report -q -i "$dir/$name.data" --no-children --sort dso 2>/dev/null >"$dir/$name.dso" || true
    perf report -q -i "$dir/$name.data" --no-children --sort dso,sym 2>/dev/null >"$dir/$name.sym" || true
    perf script -i "$dir/$name.data" -F period 2>/dev/null \
        | awk '{s += $1} END {print s + 0}' >"$dir/$name.period" || true
    perf report -i "$dir/$name.data" --stats 2>/dev/null \
        | awk '/THROTTLE events/ {print $3; exit}' >"$dir/$name.throttle" || true
    python3 - "$dir" "$name" <<'PY' || echo "$name: the summary failed (above)"
import json, os, sys
d, n = sys.argv[1], sys.argv[2]
def ops_rate(path):
    try:
        j = json.load(open(path))
    except (OSError, ValueError):
        return None, None, ""
    if "activities" in j:
        a = j["activities"][0]
        w = a["wait_ns"]
        return (a["cycles"]["completed"], a["rate"]["achieved"],
                f"wait p50 {w['p50']/1e6:.2f} p99 {w['p99']/1e6:.2f} ms")
    return (sum(j.get("statusCodeDistribution", {}).values()),
            j["summary"]["requestsPerSec"], "")
ops, rate, wait = ops_rate(f"{d}/{n}.json1")
ops2, rate2, _ = ops_rate(f"{d}/{n}.json2")
if not ops or not ops2:
    # Why: the runs' exit status and the tail of their stderr.
    print(f"{n}: no result")
    for run in ("1", "2"):
        try:
            tail = open(f"{d}/{n}.err{run}", errors="replace").read().strip().splitlines()[-5:]
        except OSError:
            tail = ["(no stderr kept)"]
        for l in tail:
            print(f"  {n} run {run}: {l}")
    sys.exit()
u, s = map(float, open(f"{d}/{n}.time").read().split()[-2:])
c = {}
for l in open(f"{d}/{n}.stat"):
    p = l.strip().split(",")
    if len(p) > 3 and p[0][:1].isdigit():
        c[p[2].split(":")[-1].replace("sys_enter_", "")] = float(p[0])
def first_int(path):
    try:
        return int(float(open(path).read().split()[0]))
    except (OSError, ValueError, IndexError):
        return 0
sampled_ns, throttled = first_int(f"{d}/{n}.period"), first_int(f"{d}/{n}.throttle")
k = us = 0.0
for l in open(f"{d}/{n}.dso"):
    p = l.split()
    if len(p) >= 2:
        pct = float(p[0].rstrip("%"))
        if "kernel" in p[1]:
            k += pct
        else:
            us += pct
per = sampled_ns / 1e3 / ops2
# The allocator's and the copies' shares of all samples (malloc and free with
# glibc's inner functions; memmove / memcpy, whichever glibc picked).
alloc = copy = 0.0
for l in open(f"{d}/{n}.sym"):
    p = l.split()
    if len(p) >= 3 and p[0].endswith("%") and "libc" in p[1]:
        sym = p[-1]
        if any(x in sym for x in ("malloc", "free", "realloc", "tcache")):
            alloc += float(p[0].rstrip("%"))
        elif "memmove" in sym or "memcpy" in sym:
            copy += float(p[0].rstrip("%"))
counts = " ".join(f"{key} {v/ops:.3f}" for key, v in c.items())
warn = (f"; perf THROTTLED {throttled} times: samples were dropped, the samples' "
        f"µs/op are low" if throttled else "")
print(f"{n}: {rate:.0f}/s {wait}; cpu {(u+s)/ops*1e6:.1f} µs/op (time); "
      f"samples {per:.1f} = user {per*us/100:.1f} + kernel {per*k/100:.1f} µs/op "
      f"({rate2:.0f}/s); malloc/free {alloc:.1f} %, memmove {copy:.1f} %; per op: {counts}{warn}")
PY
    if [ "${KSYMS:-}" = 1 ]; then
        grep -F '[k]' "$dir/$name.sym" | head -12 | awk '{printf "%s %s, ", $NF, $1} END {print ""}' \
            | sed "s/^/  $name kernel: /" || true
    fi
}

for r in $(seq 1 "$rounds"); do
    for b in "${builds[@]}"; do
        label="${b%%=*}"; read -r -a bin <<<"${b#*=}"
        cmd=("${bin[@]}" run driver=http "base_url=$base" "op=GET /slow" "rate=$rate" "threads=${THREADS:-2}"
            "concurrency=$conc" "cycles=$((rate * secs))" --no-progress)
        /usr/bin/time -o "$dir/$label-r$r.time" -f "%U %S" \
            perf stat -x, -o "$dir/$label-r$r.stat" -e "$events" \
            "${cmd[@]}" --summary-json "$dir/$label-r$r.json1" >/dev/null 2>"$dir/$label-r$r.err1" \
            || echo "exit $?" >>"$dir/$label-r$r.err1"
        perf record -q -e cpu-clock -c "$period_ns" -o "$dir/$label-r$r.data" -- \
            "${cmd[@]}" --summary-json "$dir/$label-r$r.json2" >/dev/null 2>"$dir/$label-r$r.err2" \
            || echo "exit $?" >>"$dir/$label-r$r.err2"
        summarize "$label-r$r"
    done
    if [ "${NO_OHA:-}" != 1 ]; then
        ocmd=(oha -q "$rate" -c "$conc" --latency-correction -z "${secs}s" --no-tui
            --output-format json "$base/slow")
        /usr/bin/time -o "$dir/oha-r$r.time" -f "%U %S" \
            perf stat -x, -o "$dir/oha-r$r.stat" -e "$events" \
            "${ocmd[@]}" >"$dir/oha-r$r.json1" 2>"$dir/oha-r$r.err1" || echo "exit $?" >>"$dir/oha-r$r.err1"
        perf record -q -e cpu-clock -c "$period_ns" -o "$dir/oha-r$r.data" -- \
            "${ocmd[@]}" >"$dir/oha-r$r.json2" 2>"$dir/oha-r$r.err2" || echo "exit $?" >>"$dir/oha-r$r.err2"
        summarize "oha-r$r"
    fi
done
