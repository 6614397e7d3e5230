#!/usr/bin/env bash
# The http driver's async client against thread-per-op and oha, on a loopback
# nginx whose /slow answers after 50 ms (echo module), and `return 200` against
# wrk. Side by side in one run; prints one line per round. Record the numbers
# with `lscpu`'s model in benches/README.md, and say what else ran.
#
#   benches/http_async.sh [SECONDS]        (default 10 s a round)
#   OHA=1 benches/http_async.sh            also `cargo install oha` if missing
#   RATES="2000" benches/http_async.sh 5   fewer rates (default 2000 10000 20000)
#   DONE_WHEN=1 benches/http_async.sh      also issue 21's done-when run (10K/s,
#                                          1000 in flight, 2 threads, 100K cycles)
#
# Needs nginx, its echo module (libnginx-mod-http-echo) and wrk; paceline is
# built here in release mode.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-10}"
module=/usr/lib/nginx/modules/ngx_http_echo_module.so
[ -f "$module" ] || { echo "no $module: apt-get install libnginx-mod-http-echo"; exit 2; }
cargo build --release --quiet
pl=target/release/paceline
if ! command -v oha >/dev/null && [ "${OHA:-}" = 1 ]; then cargo install oha --quiet; fi

dir="$(mktemp -d)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
cat >"$dir/nginx.conf" <<CONF
load_module $module;
worker_rlimit_nofile 20000;
daemon off; master_process off; worker_processes 1;
pid $dir/nginx.pid; error_log $dir/error.log warn;
events { worker_connections 8192; }
http {
    access_log off; keepalive_requests 1000000; keepalive_timeout 75s;
    client_body_temp_path $dir; proxy_temp_path $dir; fastcgi_temp_path $dir;
    uwsgi_temp_path $dir; scgi_temp_path $dir;
    server {
        listen 127.0.0.1:$port;
        location = /slow { echo_sleep 0.05; echo ok; }
        location = /ok { return 200 "ok\n"; }
    }
}
CONF
nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" &
ng=$!
trap 'kill $ng 2>/dev/null; rm -rf "$dir"' EXIT
sleep 0.5
base="http://127.0.0.1:$port"
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; nginx on $base"

# One paceline run: its summary's rate, wait and service lines, CPU and RSS.
paceline() {
    local label="$1"; shift
    /usr/bin/time -f "$label: cpu %U+%S s, max rss %M KB" \
        "$pl" run driver=http "base_url=$base" --no-progress "$@" 2>&1 \
        | grep -E "ops/s|achieved|wait|service|cpu|rss|in flight" | sed "s|^|$label: |"
}

for rate in ${RATES:-2000 10000 20000}; do
    inflight=$((rate * 6 / 100))          # 1.2 x rate x 50 ms
    cycles=$((rate * secs))
    paceline "async $rate/s c=$inflight" "op=GET /slow" rate=$rate threads=2 \
        concurrency=$inflight cycles=$cycles
    paceline "thread-per-op $rate/s t=$inflight" "op=GET /slow" rate=$rate \
        threads=$inflight cycles=$cycles
    if command -v oha >/dev/null; then
        /usr/bin/time -f "oha $rate/s: cpu %U+%S s, max rss %M KB" \
            oha -q "$rate" -c "$inflight" --latency-correction -z "${secs}s" --no-tui "$base/slow" 2>&1 \
            | grep -E "Requests/sec|Slowest|Fastest|99.00%|cpu" | sed "s/^/oha $rate\/s: /"
    fi
done

# `return 200`, no delay: the highest rate each holds.
paceline "async unpaced c=64" "op=GET /ok" threads=2 concurrency=64 cycles=$((50000 * secs))
paceline "thread-per-op unpaced t=2" "op=GET /ok" threads=2 cycles=$((50000 * secs))
wrk -t2 -c64 -d"${secs}s" "$base/ok" | grep -E "Requests/sec|Latency" | sed "s/^/wrk c=64: /"

# Issue 21's done-when command, its whole summary.
if [ "${DONE_WHEN:-}" = 1 ]; then
    /usr/bin/time -f "done-when: cpu %U+%S s, max rss %M KB" \
        "$pl" run driver=http "base_url=$base" "op=GET /slow" rate=10K concurrency=1000 \
        threads=2 cycles=100K --no-progress 2>&1 | sed "s/^/done-when: /"
fi
