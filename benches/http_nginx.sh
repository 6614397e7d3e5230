# Sourced by benches/http_async.sh and benches/http_cpu_split.sh: the loopback
# nginx both run against. Not a script of its own.

# nginx_start: checks for the echo module, writes a config into a fresh temp
# directory ($dir) with /slow (answers after 50 ms) and /ok (`return 200` at
# once) on a free loopback port, starts nginx (killed, and $dir removed, when
# the calling script exits) and sets $base to its URL.
nginx_start() {
    local module=/usr/lib/nginx/modules/ngx_http_echo_module.so
    [ -f "$module" ] || { echo "no $module: apt-get install libnginx-mod-http-echo"; exit 2; }
    command -v nginx >/dev/null || { echo "no nginx: apt-get install nginx"; exit 2; }
    dir="$(mktemp -d)"
    local port
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
    nginx_pid=$!
    trap 'kill $nginx_pid 2>/dev/null; rm -rf "$dir"' EXIT
    sleep 0.5
    base="http://127.0.0.1:$port"
}
