#!/usr/bin/env bash
# Closed-loop A/B of paceline builds beside pgbench (issue 22): pgbench's
# select-only script (-S -M prepared -c 8 -j 2) and each paceline binary given
# (threads=2 concurrency=8, the same statement prepared), taking turns within
# each round against one cluster this script creates on a loopback port.
# Prints per run: transactions per second, user and system CPU µs per
# transaction (wait4(2) of the client process), and with SYSCALLS=1 the system
# calls per transaction (perf stat's raw_syscalls:sys_enter; perf's own CPU is
# then in the CPU columns: read those from a run without it), and with
# SYSCALLS=each the calls of each kind per transaction (syscalls:sys_enter_*,
# those made at least 0.01 times per transaction); EVENTS=LIST counts perf
# stat's events in LIST per transaction the same way (uprobes on libc's
# malloc or memmove, made with `perf probe -x`, count allocations and copies
# whatever the load).
#
#   benches/pgbench_ab.sh SECONDS ROUNDS PACELINE_BIN...
#
# A build of main for the A side: `git worktree add --detach ../NAME-base main`,
# `cargo build --release` there. Needs PostgreSQL's server binaries and
# pgbench; as root the cluster runs as the `postgres` user (as pgbench.sh).
set -euo pipefail
secs=${1:?seconds}; rounds=${2:?rounds}; shift 2
bins=("$@")
[ ${#bins[@]} -gt 0 ] || { echo "give at least one paceline binary"; exit 2; }
case "${SYSCALLS:-0}" in
    0 | 1 | each) ;;
    *) echo "SYSCALLS=${SYSCALLS}: give 1 (all calls), each (per kind) or 0 (none)"; exit 2 ;;
esac
if [ -n "${EVENTS:-}" ] && [ "${SYSCALLS:-0}" != 0 ]; then
    echo "EVENTS and SYSCALLS both given: perf counts one list per run; give one of them"
    exit 2
fi
. "$(dirname "$0")/lib.sh"
pg_cluster pgab
# one LABEL CMD...: one run's line.
one() {
    local label=$1; shift
    local pre=()
    [ "${SYSCALLS:-0}" = 1 ] && pre=(perf stat -x, -o "$dir/perf" -e raw_syscalls:sys_enter)
    [ "${SYSCALLS:-0}" = each ] && pre=(perf stat -x, -o "$dir/perf" -e 'syscalls:sys_enter_*')
    [ -n "${EVENTS:-}" ] && pre=(perf stat -x, -o "$dir/perf" -e "$EVENTS")
    rm -f "$dir/perf"
    python3 - "$dir" "$label" "$secs" "${pre[@]}" "$@" <<'PY'
import json, os, re, subprocess, sys
d, label, secs, cmd = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]
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
sc = ""
if os.path.exists(f"{d}/perf"):
    for line in open(f"{d}/perf"):
        f = line.split(",")
        if "raw_syscalls:sys_enter" in line:
            sc = f"  syscalls/txn {int(f[0]) / n:.2f}"
        elif len(f) > 2 and f[0].isdigit() and int(f[0]) >= n / 100:
            sc += f"  {f[2].split('sys_enter_')[-1].split(':')[-1]} {int(f[0]) / n:.2f}"
print(f"{label:12s} {n / secs:8.0f}/s  user {ru.ru_utime * 1e6 / n:6.2f}  sys {ru.ru_stime * 1e6 / n:6.2f}  "
      f"total {(ru.ru_utime + ru.ru_stime) * 1e6 / n:6.2f} µs/txn{sc}")
PY
}
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$rounds"); do
    echo "round $r"
    one pgbench pgbench -n -S -M prepared -c 8 -j 2 -T "$secs"
    i=0
    for b in "${bins[@]}"; do
        i=$((i + 1))
        one "paceline $i" "$b" run "$dir/select.yaml" threads=2 concurrency=8 "duration=${secs}s" \
            --no-progress --summary-json "$dir/pl.json"
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
