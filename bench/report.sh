#!/usr/bin/env bash
# Report generation stays fast and small for long runs. Records a real
# 1-minute run, stretches its intervals into a 12-hour run (8,640
# intervals, times shifted, figures repeated), then times `cacheoff report`
# on both and on the JSON export (median of 3), and prints the file sizes.
# Goal: the 12-hour report in under 2 s and under 5 MB.
#
# Usage: bench/report.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
bin=target/release/cacheoff
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

$bin run simple --rate 200/s --robots 40 --servers 8 --warmup 5s --duration 55s -q -o "$out/short" >/dev/null
mkdir "$out/long"
cp "$out/short/manifest.json" "$out/short/summary.json" "$out/long/"
# 8,640 five-second intervals (30 s warm-up, then measured), cycling
# through the short run's figures.
awk 'BEGIN { n = 0 }
     { rec[n++] = $0 }
     END {
       for (k = 0; k < 8640; k++) {
         line = rec[k % n]
         sub(/"interval":[0-9]+/, "\"interval\":" k, line)
         sub(/"start_s":[0-9.e+-]+/, "\"start_s\":" (k * 5), line)
         sub(/"end_s":[0-9.e+-]+/, "\"end_s\":" (k * 5 + 5), line)
         sub(/"duration_s":[0-9.e+-]+/, "\"duration_s\":5", line)
         sub(/"phase":"[^"]*"/, (k < 6 ? "\"phase\":\"warm\"" : "\"phase\":\"meas\""), line)
         print line
       }
     }' "$out/short/intervals.jsonl" >"$out/long/intervals.jsonl"

median3() { # command... -> median wall seconds of 3 runs
  local t=()
  for _ in 1 2 3; do
    local s e
    s=$(date +%s.%N)
    "$@" >/dev/null
    e=$(date +%s.%N)
    t+=("$(awk -v s="$s" -v e="$e" 'BEGIN { print e - s }')")
  done
  printf '%s\n' "${t[@]}" | sort -n | sed -n 2p
}

short_s=$(median3 $bin report "$out/short")
long_s=$(median3 $bin report "$out/long")
json_s=$(median3 $bin report "$out/long" --format json -o "$out/long/export.json")
size() { stat -c %s "$1"; }
echo "machine: $(nproc) cores, $(uname -r); $($bin --version)"
printf '%-34s %10s %8s %12s\n' "input" "intervals" "seconds" "bytes"
printf '%-34s %10d %8.3f %12d\n' "1-minute run, report.html" "$(wc -l <"$out/short/intervals.jsonl")" "$short_s" "$(size "$out/short/report.html")"
printf '%-34s %10d %8.3f %12d\n' "12-hour run, report.html" 8640 "$long_s" "$(size "$out/long/report.html")"
printf '%-34s %10d %8.3f %12d\n' "12-hour run, --format json" 8640 "$json_s" "$(size "$out/long/export.json")"
awk -v l="$long_s" -v s="$short_s" 'BEGIN { printf "ratio 12-hour / 1-minute report time: %.1f\n", l / s }'
