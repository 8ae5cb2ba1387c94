#!/usr/bin/env bash
# Memory stays flat over a long steady run: no per-request records are
# kept. Runs `simple` at a steady rate and samples the process's resident
# set size (VmRSS) every 10 s.
#
# Usage: bench/memory.sh [minutes] [rate]   (defaults: 10, 10000/s)
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-10}
rate=${2:-10000/s}
cargo build --release -q
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
target/release/cacheoff run simple --direct --rate "$rate" --warmup 10s --duration "${minutes}min" -q -o "$out/run" >"$out/console.txt" &
pid=$!
samples=()
printf '%8s %12s\n' "time_s" "rss_kib"
t=0
while kill -0 "$pid" 2>/dev/null; do
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  if [ -n "$rss" ]; then
    printf '%8d %12d\n' "$t" "$rss"
    samples+=("$rss")
  fi
  sleep 10
  t=$((t + 10))
done
wait "$pid"
n=${#samples[@]}
first_min=${samples[6]:-${samples[0]}}   # after the first minute (warm-up, connections opened)
last=${samples[$((n - 1))]}
max=$(printf '%s\n' "${samples[@]}" | sort -n | tail -1)
echo
echo "machine: $(nproc) cores, $(uname -r); $(target/release/cacheoff --version)"
echo "run: simple at $rate for ${minutes}min: $(jq -r '.total | "\(.xacts) transactions, \(.errors.total) errors"' "$out/run/summary.json")"
echo "RSS after 1 min: ${first_min} KiB; at the end: ${last} KiB; max: ${max} KiB; growth after minute 1: $(( last - first_min )) KiB"
