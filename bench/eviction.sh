#!/usr/bin/env bash
# S3-FIFO against LRU in the reference proxy: the same workload
# (bench/eviction.toml: PolyMix content, hot set, Zipf popularity, same
# seed) through `cacheoff proxy --policy s3fifo` and `--policy lru` with a
# memory store smaller than the working set; prints offered and measured
# document and byte hit ratios of the measured phase for each.
#
# Usage: bench/eviction.sh [cache-size] [duration]   (default 32MB 60s)
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-32MB}
duration=${2:-60s}
. bench/lib.sh

echo "machine: $(nproc) cores, $(uname -r); $("$bin" --version); memory store $size, measured $duration"
printf '%-8s %8s %8s %8s %8s %8s\n' policy "DHR off" "DHR meas" "BHR off" "BHR meas" errors
for policy in s3fifo lru; do
  start_proxy "$work/$policy.txt" --mem "$size" --policy "$policy"
  "$bin" run bench/eviction.toml --proxy "$addr" --seed 7 --duration "$duration" -q -o "$work/run-$policy" >/dev/null
  stop_proxy
  jq -r --arg p "$policy" '.phases[] | select(.name == "meas") |
    [$p, .dhr.offered, .dhr.measured, .bhr.offered, .bhr.measured, .errors.total] | @tsv' \
    "$work/run-$policy/summary.json" | awk -F'\t' '{ printf "%-8s %8.2f %8.2f %8.2f %8.2f %8d\n", $1, $2, $3, $4, $5, $6 }'
done
