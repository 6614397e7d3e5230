# Sourced by benches/pgbench.sh and benches/redis_bench.sh (and through
# benches/http_nginx.sh by the http scripts): what they do around their runs.
# It only defines functions. Not a script of its own.

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
