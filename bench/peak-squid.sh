#!/usr/bin/env bash
# The peak finder against a real Squid (issue 15): `cacheoff peak` finds
# the highest rate Squid (Debian's, forward, 256 MB memory cache, one
# worker) sustains within the limit, then the same workload is run again
# at that rate (it must keep the limit) and at 1.3 times it (it must not).
#
#   bench/peak-squid.sh [LIMIT] [PLATEAU] [OUT]
#   (default 'p99<=50ms' 20s /tmp/peak-squid)
#
# Results: $OUT/peak (peak.json, report.html, a run per step),
# $OUT/at-peak and $OUT/above (the two runs). Figures in bench/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=${1:-p99<=50ms}
plateau=${2:-20s}
out=${3:-/tmp/peak-squid}
command -v squid >/dev/null || [ -x /usr/sbin/squid ] || ops/install-products.sh
PATH=$PATH:/usr/sbin
command -v jq >/dev/null || { apt-get update -qq && apt-get install -y -qq jq >/dev/null; }
cargo build --release -q
bin=${CARGO_TARGET_DIR:-target}/release/cacheoff
rm -rf "$out"
mkdir -p "$out/squid"
chown proxy "$out/squid" 2>/dev/null || true
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
sed -e "s|@PORT@|$port|g" -e "s|@DIR@|$out/squid|g" bench/peak-squid.conf >"$out/squid/squid.conf"
squid -N -f "$out/squid/squid.conf" >"$out/squid/squid.txt" 2>&1 &
squid_pid=$!
trap 'kill "$squid_pid" 2>/dev/null; wait "$squid_pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
echo "$(squid -v | head -1) on 127.0.0.1:$port"
"$bin" peak simple --proxy "127.0.0.1:$port" --rt-limit "$limit" \
  --plateau "$plateau" --label "$(squid -v | head -1)" --out "$out/peak" -q
peak=$(jq -r .peak_rate_xps "$out/peak/peak.json")
for run in "at-peak $peak" "above $(echo "$peak * 1.3" | bc -l)"; do
  set -- $run
  "$bin" run simple --proxy "127.0.0.1:$port" --rate "$2/s" --plateau "$plateau" \
    --out "$out/$1" -q >/dev/null || true
  jq -r --arg name "$1" --arg rate "$2" \
    '.phases[] | select(.name == "meas") | "\($name) \($rate)/s: \(.rate_xps) xact/s, rt mean \(.rt_ms.all.mean) ms, p99 \(.rt_ms.all.p99) ms, errors \(.errors.percent)%"' \
    "$out/$1/summary.json"
done
