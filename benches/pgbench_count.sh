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
# loop out). Per run and per transaction: voluntary
# and involuntary context switches of the whole process (wait4(2)'s
# ru_nvcsw / ru_nivcsw, all threads), perf's context-switches and
# cpu-migrations, system calls of each kind made at least 0.01 times per
# transaction (syscalls:sys_enter_*), and user / system CPU µs (perf's own
# cost is in those: read CPU from benches/pgbench_ab.sh or pgbench.sh).
#
#   CALLGRIND=RATE  instead: each client paced at RATE/s for SECONDS under
#                   valgrind --tool=callgrind (default 1000/s, 20 s are what
#                   both hold under valgrind); prints instructions per
#                   transaction, and paceline's split by component (the self
#                   cost of each function, given to a component by its name);
#                   the callgrind files stay in OUT (default /tmp/pgcount).
#
# Needs PostgreSQL's server binaries, pgbench, perf (and valgrind for
# CALLGRIND). pgbench is run as $bin/pgbench, not through Debian's perl
# wrapper (/usr/bin/pgbench: its start, 40-50 ms of CPU, would count as
# pgbench's, and valgrind would follow the perl, not pgbench). As root the cluster runs as the `postgres` user (as pgbench.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:?seconds}; shift
bins=("$@")
[ ${#bins[@]} -gt 0 ] || { echo "give at least one paceline binary"; exit 2; }
percents="${PERCENTS:-25 75}"
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
[ -x "$bin/initdb" ] || { echo "no initdb under /usr/lib/postgresql/*/bin"; exit 2; }
dir=$(mktemp -d /tmp/paceline-pgcount.XXXXXX); chmod 755 "$dir"
out="${OUT:-/tmp/pgcount}"; mkdir -p "$out"
as_pg=()
if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$dir"; as_pg=(runuser -u postgres --); fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"${as_pg[@]}" "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --no-sync >/dev/null
"${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -o \
    "-p $port -c listen_addresses=127.0.0.1 -k $dir -c fsync=off -c max_connections=100" start >/dev/null
trap '"${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1; rm -rf "$dir"' EXIT
export PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres PGDATABASE=postgres
pgbench -i -q -s 10 >/dev/null 2>&1
cat >"$dir/select.yaml" <<YAML
params: {driver: postgres, url: 'postgres://postgres@127.0.0.1:$port/postgres'}
bindings:
  aid: HashRange(1, 1000000)
ops:
  select: {prepared: 'SELECT abalance FROM pgbench_accounts WHERE aid = {aid}', expect_rows: 1}
YAML

# one LABEL RATE CMD...: one run under perf stat; prints its line, and its
# achieved rate on fd 3.
one() {
    local label=$1 rate=$2; shift 2
    rm -f "$dir/perf"
    python3 - "$dir" "$label" "$secs" "$rate" perf stat -x, -o "$dir/perf" \
        -e 'context-switches,cpu-migrations,syscalls:sys_enter_*' "$@" <<'PY'
import json, os, re, subprocess, sys
d, label, secs, rate, cmd = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5:]
p = subprocess.Popen(cmd, stdout=open(f"{d}/out", "w"), stderr=subprocess.STDOUT)
_, st, ru = os.wait4(p.pid, 0)
if os.waitstatus_to_exitcode(st) != 0:
    sys.exit(f"{label} failed: {open(f'{d}/out').read()}")
out = open(f"{d}/out").read()
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
cs, mig = ev.pop("context-switches", 0), ev.pop("cpu-migrations", 0)
calls = sorted(((v / n, k) for k, v in ev.items() if v >= n / 100), reverse=True)
# wait4's counts include perf's own process; its switches are a few per run.
print(f"{label:11s} {rate:>6s} {n / secs:7.0f}/s  vcs {ru.ru_nvcsw / n:5.3f} ivcs {ru.ru_nivcsw / n:5.3f}"
      f"  cs {cs / n:5.3f} mig {mig / n:5.3f}  calls {sum(v for v, _ in calls):5.2f}:"
      + "".join(f" {k} {v:.3f}" for v, k in calls)
      + f"  user {ru.ru_utime * 1e6 / n:5.2f} sys {ru.ru_stime * 1e6 / n:5.2f} µs", flush=True)
os.write(3, f"{n / secs:.0f}\n".encode())
PY
}
pgb() { # RATE (0: closed loop)
    local args=(-n -S -M prepared -c 8 -j 2 -T "$secs")
    [ "$1" = 0 ] || args+=(-R "$1")
    one pgbench "$1" "$bin/pgbench" "${args[@]}"
}
plr() { # LABEL BIN RATE
    local args=(run "$dir/select.yaml" threads=2 concurrency=8 "duration=${secs}s" --no-progress
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
