# Sourced by benches/http_async.sh and benches/http_cpu_split.sh: the loopback
# nginx both run against. Not a script of its own.

# cpu_model and the other helpers of benches/lib.sh (it only defines functions).
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# nginx_start: checks for the echo module, writes a config into a fresh temp
# directory ($nginx_dir) with /slow (answers after 50 ms) and /ok (`return
# 200` at once) on a free loopback port, starts nginx ($nginx_pid), waits up
# to 5 s for it to listen, and sets $base to its URL. If nginx exits or does
# not listen in time, it prints nginx's error.log and exits 2.
#
# It sets the EXIT trap to nginx_stop (kills nginx, removes $nginx_dir): a
# caller that needs its own clean-up sets its trap after nginx_start and calls
# nginx_stop from it. It sets no other globals; callers may keep their files
# in $nginx_dir, which goes with it.
nginx_start() {
    local module=/usr/lib/nginx/modules/ngx_http_echo_module.so
    [ -f "$module" ] || { echo "no $module: apt-get install libnginx-mod-http-echo"; exit 2; }
    command -v nginx >/dev/null || { echo "no nginx: apt-get install nginx"; exit 2; }
    nginx_dir="$(mktemp -d /tmp/paceline-nginx.XXXXXX)"
    local dir="$nginx_dir" port
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
    nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" 2>>"$dir/error.log" &
    nginx_pid=$!
    trap nginx_stop EXIT
    local waited=0
    until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
        if ! kill -0 "$nginx_pid" 2>/dev/null; then
            echo "nginx exited before it listened on 127.0.0.1:$port; its error.log:" >&2
            cat "$dir/error.log" >&2
            exit 2
        fi
        if [ "$waited" -ge 50 ]; then
            echo "nginx did not listen on 127.0.0.1:$port within 5 s; its error.log:" >&2
            cat "$dir/error.log" >&2
            exit 2
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
    base="http://127.0.0.1:$port"
}

# nginx_stop: kills the nginx of nginx_start (if it still runs) and removes
# $nginx_dir. As the EXIT trap it keeps the script's exit status: nothing in it
# may fail under `set -e`.
nginx_stop() {
    if [ -n "${nginx_pid:-}" ]; then
        kill "$nginx_pid" 2>/dev/null || true
        wait "$nginx_pid" 2>/dev/null || true
    fi
    if [ -n "${nginx_dir:-}" ]; then rm -rf "$nginx_dir"; fi
}
