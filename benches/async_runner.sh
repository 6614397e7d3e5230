#!/usr/bin/env bash
# The async runner against thread-per-op on `diag latency=50ms` (no server):
# achieved rate, CPU per op, peak RSS and wait p50/p99/max at 2K, 10K and 20K/s,
# with concurrency = 1.2 x rate x 50 ms on 2 threads against that many threads
# running one op each (and, beside them, the async runner on 8 threads). One process per configuration, so its peak RSS is its own.
#
#   cargo build --release --bin paceline && benches/async_runner.sh [SECONDS]
#
# The results, with the machine they came from, are in benches/README.md.
set -euo pipefail
secs=${1:-5}
bin=${PACELINE:-target/release/paceline}
out=$(mktemp -d)
echo "| rate | runner | in flight | achieved/s | CPU µs/op | peak RSS MB | wait p50 | wait p99 | wait max |"
echo "|---|---|---|---|---|---|---|---|---|"
for rate in 2000 10000 20000; do
  n=$(( rate * 6 / 100 ))            # 1.2 x rate x 0.05 s
  cycles=$(( rate * secs ))
  for mode in async async-8 thread-per-op; do
    case $mode in
      async) shape="threads=2 concurrency=$n" ;;
      async-8) shape="threads=8 concurrency=$n" ;;
      *) shape="threads=$n" ;;
    esac
    # shellcheck disable=SC2086
    /usr/bin/time -f '%U %S %M' -o "$out/time" "$bin" run driver=diag latency=50ms \
      rate="$rate" cycles="$cycles" $shape --summary-json "$out/s.json" >/dev/null 2>&1
    python3 - "$out/s.json" "$out/time" "$rate" "$mode" "$n" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["activities"][0]
u, sy, kb = open(sys.argv[2]).read().split()[:3]
ops = max(s["cycles"]["completed"], 1)
w = s["wait_ns"]
ms = lambda n: f"{n / 1e6:.2f} ms"
print(f"| {sys.argv[3]} | {sys.argv[4]} | {sys.argv[5]} | {s['rate']['achieved']:.0f} | "
      f"{(float(u) + float(sy)) * 1e6 / ops:.1f} | {int(kb) / 1024:.0f} | "
      f"{ms(w['p50'])} | {ms(w['p99'])} | {ms(w['max'])} |")
PY
  done
done
rm -rf "$out"
