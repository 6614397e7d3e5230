#!/usr/bin/env bash
# Makes docs/report.png: runs docs/report-demo.yaml with --html (pausing `api`
# for two seconds through the control endpoint), then has headless chromium take
# a screenshot of the page. Needs chromium (Debian: apt-get install chromium) and
# curl; takes about 20 s after the build.
set -euo pipefail
cd "$(dirname "$0")/.."

browser="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$browser" ]; then
    echo "no chromium on PATH (Debian: apt-get install chromium)" >&2
    exit 2
fi
cargo build --quiet
out="$(mktemp -d)"
target/debug/paceline run docs/report-demo.yaml --report-interval 1s --no-progress \
    --control 127.0.0.1:0 --html "$out/report.html" --hdr-log "$out/run.hlog" \
    --summary-json "$out/run.json" >"$out/run.log" 2>"$out/err.log" &
pid=$!
port=""
for _ in $(seq 100); do
    port="$(sed -n 's|.*control endpoint on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$out/err.log")"
    [ -n "$port" ] && break
    sleep 0.1
done
[ -n "$port" ] || { cat "$out/err.log" >&2; kill "$pid"; exit 1; }
sleep 8
curl -fsS -X POST "http://127.0.0.1:$port/activities/api/pause" >/dev/null
sleep 2
curl -fsS -X POST "http://127.0.0.1:$port/activities/api/resume" >/dev/null
wait "$pid"
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --screenshot="$out/report.png" --window-size=1400,2820 "file://$out/report.html" \
    >/dev/null 2>&1
cp "$out/report.png" docs/report.png
echo "docs/report.png: $(wc -c <docs/report.png) bytes (the page and the run's files: $out)"
