#!/usr/bin/env bash
# Endurance: a long steady run through the reference proxy, with the load
# generator's and the proxy's resident memory sampled every 10 s, and each
# 10-minute window's RSS growth, send lag and errors. Goal: RSS flat (growth
# < 1% per 10 minutes after warm-up), no errors, send lag not drifting.
#
# The proxy runs as its own process (`cacheoff proxy`), so the generator's
# memory is measured apart from the cache's.
#
# Usage: bench/memory.sh [minutes] [rate] [cache] [size]
#   (defaults: 60, 10000/s, 256MB, the workload's own exp(13KB) objects;
#   a 2-core machine that cannot move 10,000 13 KB replies a second through
#   the proxy runs the rate with smaller objects, e.g. 1KB)
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-60}
rate=${2:-10000/s}
cache=${3:-256MB}
size=${4:-}
size_args=()
[ -n "$size" ] && size_args=(--size "$size")
command -v jq >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null; }
cargo build --release -q
bin=$PWD/target/release/cacheoff
out=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" proxy --listen "127.0.0.1:$port" --mem "$cache" >"$out/proxy.log" 2>&1 &
proxy=$!
trap 'kill $proxy 2>/dev/null || true; rm -rf "$out"' EXIT
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done

"$bin" run simple --proxy "127.0.0.1:$port" --rate "$rate" --warmup 60s --duration "${minutes}min" \
  "${size_args[@]}" -q -o "$out/run" >"$out/console.txt" &
run=$!
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || true; }
printf '%8s %14s %14s\n' time_s run_rss_kib proxy_rss_kib
t=0
: >"$out/rss.txt"
while kill -0 "$run" 2>/dev/null; do
  r=$(rss "$run"); p=$(rss "$proxy")
  if [ -n "$r" ]; then
    printf '%8d %14d %14d\n' "$t" "$r" "${p:-0}" | tee -a "$out/rss.txt"
  fi
  sleep 10
  t=$((t + 10))
done
status=0
wait "$run" || status=$?

echo
echo "machine: $(nproc) cores, $(uname -r); $("$bin" --version); commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "run: simple${size:+ with $size objects} through cacheoff proxy (--mem $cache) at $rate for ${minutes}min after a 60 s warm-up (exit $status)"
jq -r '.total | "total: \(.xacts) transactions, \(.errors.total) errors"' "$out/run/summary.json"
echo
# Windows of 10 minutes (1 minute for runs shorter than 20).
win_s=$(( minutes < 20 ? 60 : 600 ))
echo "per $((win_s / 60))-minute window after warm-up (RSS at the window's end; growth against the window's start):"
printf '%10s %12s %9s %14s %9s %16s %16s %8s\n' window run_rss_kib growth% proxy_rss_kib growth% send_lag_p99_ms send_lag_max_ms errors
# Intervals are 5 s of schedule time; warm-up is the first 60 s.
jq -s -r --argjson win_s "$win_s" --slurpfile rss <(awk '{print "[" $1 "," $2 "," $3 "]"}' "$out/rss.txt" | jq -s .) '
  def at(t): ($rss[0] | map(select(.[0] <= t)) | last // [t,0,0]);
  [ .[] | select(.start_s >= 60) ] as $iv
  | ($iv | map(.end_s) | max) as $last
  | [range(60; $last; $win_s)] | .[] as $w
  | ($iv | map(select(.start_s >= $w and .start_s < $w + $win_s))) as $win
  | at($w) as $a | at($w + $win_s) as $b
  | [ "\(($w - 60) / 60 | floor)-\(($w - 60 + $win_s) / 60 | floor)min",
      $b[1], (if $a[1] > 0 then (($b[1] - $a[1]) * 100 / $a[1]) else 0 end),
      $b[2], (if $a[2] > 0 then (($b[2] - $a[2]) * 100 / $a[2]) else 0 end),
      ($win | map(.send_lag_ms.p99) | max), ($win | map(.send_lag_ms.max) | max),
      ($win | map(.errors.total) | add) ]
  | @tsv' "$out/run/intervals.jsonl" |
  awk -F'\t' '{printf "%10s %12d %9.2f %14d %9.2f %16.3f %16.3f %8d\n", $1, $2, $3, $4, $5, $6, $7, $8}'
exit $status
