# Sourced by benches/pgbench.sh, pgbench_ab.sh, pgbench_count.sh,
# pg_callgrind.sh and redis_bench.sh (and through benches/http_nginx.sh by the
# http scripts): what they do around their runs. It only defines functions.
# Not a script of its own.

# bench_setup NAME: builds paceline (release) and sets $pl (its binary; $PL
# when set, and nothing is built),
# $dir (a fresh temp directory, /tmp/paceline-NAME.XXXXXX) and $port (a free
# loopback port: bound to 127.0.0.1:0 and closed; the server started on it
# next takes it).
bench_setup() {
    if [ -n "${PL:-}" ]; then
        pl="$PL"
    else
        cargo build --release --quiet
        pl="$PWD/target/release/paceline"
    fi
    dir="$(mktemp -d "/tmp/paceline-$1.XXXXXX")"
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
}

# cpu_of CMD ARGS...: runs the command, its output to $dir/out, and prints its
# user + system CPU seconds: the process and all its threads, from the
# kernel's accounting at its exit (wait4(2), to the microsecond;
# /proc/PID/stat holds the same sum in 10 ms ticks). Fails when it does.
cpu_of() {
    python3 - "$@" 3>&1 >"$dir/out" 2>&1 <<'PY'
import os, subprocess, sys
p = subprocess.Popen(sys.argv[1:])
_, status, ru = os.wait4(p.pid, 0)
if os.waitstatus_to_exitcode(status) != 0:
    sys.exit(f"{sys.argv[1]} failed ({status})")
os.write(3, f"{ru.ru_utime + ru.ru_stime:.6f}\n".encode())
PY
}

# The CPU as the tables name it: lscpu's model name, family and model (a
# virtual machine's model name alone, "AMD EPYC", says no generation), and
# the hypervisor when there is one.
cpu_model() {
    lscpu | awk -F: '
        { gsub(/^ +| +$/, "", $2) }
        $1 == "Model name" { name = $2 } $1 == "CPU family" { fam = $2 }
        $1 == "Model" { mod = $2 } $1 == "Hypervisor vendor" { hv = $2 }
        END { printf "%s, family %s model %s%s", name, fam, mod, hv ? ", " hv " guest" : "" }'
}

# The machine line that heads a table, and the load line that ends it (the
# tables go to benches/README.md with both).
machine_line() {
    echo "cpu: $(cpu_model), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
}
load_after() {
    echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
}

# pg_find: sets $bin (PostgreSQL's server binaries: $PG_BIN, else the newest
# /usr/lib/postgresql/*/bin) and $pgbench ($PGBENCH, else the pgbench beside
# initdb: Debian's /usr/bin/pgbench is a perl wrapper whose start, 40-50 ms
# of CPU, would count as pgbench's, and which callgrind would follow instead
# of pgbench); exits 2 saying what to install when either is missing.
pg_find() {
    bin="${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}"
    [ -x "$bin/initdb" ] || { echo "no initdb under /usr/lib/postgresql/*/bin: apt-get install postgresql (or set PG_BIN)"; exit 2; }
    pgbench="${PGBENCH:-$bin/pgbench}"
    [ -x "$pgbench" ] || { echo "no pgbench at $pgbench: apt-get install postgresql-contrib (or set PGBENCH)"; exit 2; }
}

# pg_cluster NAME [SCALE]: the cluster the pgbench scripts measure against.
# Uses $dir and $port when set (bench_setup's), else makes
# /tmp/paceline-NAME.XXXXXX and takes a free loopback port; as root runs the
# cluster as the `postgres` user (initdb refuses root; $as_pg is the prefix),
# as tests/support/postgres.rs does. initdb (no fsync), the server on
# 127.0.0.1:$port (socket in $dir, fsync off, 100 connections), PGHOST,
# PGPORT, PGUSER, PGDATABASE exported, `pgbench -i -s SCALE` (default 10);
# sets $accounts (SCALE x 100,000) and $url, and writes $dir/select.yaml:
# pgbench's select-only statement, prepared, for `paceline run`. The EXIT
# trap, set before initdb, stops the server and removes $dir, so that a
# failed set-up leaves no directory or cluster. Exits 1 with the server's log
# or pgbench's output when a step fails.
pg_cluster() {
    local scale="${2:-10}"
    [ -n "${bin:-}" ] || pg_find
    [ -n "${dir:-}" ] || dir="$(mktemp -d "/tmp/paceline-$1.XXXXXX")"
    [ -n "${port:-}" ] ||
        port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
    chmod 755 "$dir"
    as_pg=()
    if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$dir"; as_pg=(runuser -u postgres --); fi
    trap '[ ! -e "$dir/data/postmaster.pid" ] ||
        "${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1; rm -rf "$dir"' EXIT
    "${as_pg[@]}" "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --no-sync >/dev/null
    "${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -o \
        "-p $port -c listen_addresses=127.0.0.1 -k $dir -c fsync=off -c max_connections=100" start >/dev/null ||
        { cat "$dir/log" >&2; exit 1; }
    export PGHOST=127.0.0.1 PGPORT="$port" PGUSER=postgres PGDATABASE=postgres
    "$pgbench" -i -q -s "$scale" >"$dir/init.log" 2>&1 ||
        { echo "pgbench -i failed:" >&2; cat "$dir/init.log" >&2; exit 1; }
    accounts=$((scale * 100000))
    url="postgres://postgres@127.0.0.1:$port/postgres"
    cat >"$dir/select.yaml" <<YAML
# pgbench's built-in select-only script (-S): one random account's balance.
params: {driver: postgres, url: '$url'}
bindings:
  aid: HashRange(1, $accounts)
ops:
  select: {prepared: 'SELECT abalance FROM pgbench_accounts WHERE aid = {aid}', expect_rows: 1}
YAML
}
