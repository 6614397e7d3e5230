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
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $rate/s, $conc in flight, $secs s a run; load $(cut -d' ' -f1-3 /proc/loadavg)"
events='context-switches,raw_syscalls:sys_enter,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_timerfd_settime,syscalls:sys_enter_sendto,syscalls:sys_enter_writev,syscalls:sys_enter_recvfrom,syscalls:sys_enter_write'

# The line of run NAME: its perf stat counts and GNU time (the .json1 run),
# and the user / kernel split of its perf record samples (the .json2 run, the
# same command again right after).
summarize() {
    local name="$1"
    perf report -q -i "$dir/$name.data" --no-children --sort dso 2>/dev/null >"$dir/$name.dso" || true
    perf report -q -i "$dir/$name.data" --no-children --sort dso,sym 2>/dev/null >"$dir/$name.sym" || true
    perf report -i "$dir/$name.data" --stats 2>/dev/null \
        | awk '/SAMPLE events/ {print $3; exit}' >"$dir/$name.samples" || true
    python3 - "$dir" "$name" <<'PY'
import json, sys
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
    print(f"{n}: no result"); sys.exit()
u, s = map(float, open(f"{d}/{n}.time").read().split()[-2:])
c = {}
for l in open(f"{d}/{n}.stat"):
    p = l.strip().split(",")
    if len(p) > 3 and p[0][:1].isdigit():
        c[p[2].split(":")[-1].replace("sys_enter_", "")] = float(p[0])
samples = int(open(f"{d}/{n}.samples").read() or 0)
k = us = 0.0
for l in open(f"{d}/{n}.dso"):
    p = l.split()
    if len(p) >= 2:
        pct = float(p[0].rstrip("%"))
        if "kernel" in p[1]:
            k += pct
        else:
            us += pct
per = samples / 1999 / ops2 * 1e6
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
print(f"{n}: {rate:.0f}/s {wait}; cpu {(u+s)/ops*1e6:.1f} µs/op (time); "
      f"samples {per:.1f} = user {per*us/100:.1f} + kernel {per*k/100:.1f} µs/op "
      f"({rate2:.0f}/s); malloc/free {alloc:.1f} %, memmove {copy:.1f} %; per op: {counts}")
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
            "${cmd[@]}" --summary-json "$dir/$label-r$r.json1" >/dev/null 2>&1 || true
        perf record -q -F 1999 -o "$dir/$label-r$r.data" -- \
            "${cmd[@]}" --summary-json "$dir/$label-r$r.json2" >/dev/null 2>&1 || true
        summarize "$label-r$r"
    done
    if [ "${NO_OHA:-}" != 1 ]; then
        ocmd=(oha -q "$rate" -c "$conc" --latency-correction -z "${secs}s" --no-tui
            --output-format json "$base/slow")
        /usr/bin/time -o "$dir/oha-r$r.time" -f "%U %S" \
            perf stat -x, -o "$dir/oha-r$r.stat" -e "$events" \
            "${ocmd[@]}" >"$dir/oha-r$r.json1" 2>/dev/null || true
        perf record -q -F 1999 -o "$dir/oha-r$r.data" -- \
            "${ocmd[@]}" >"$dir/oha-r$r.json2" 2>/dev/null || true
        summarize "oha-r$r"
    fi
done
