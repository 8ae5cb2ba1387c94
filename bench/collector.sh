#!/usr/bin/env bash
# How closely the SPE Collector's hits replay their misses. Robots fetch
# objects (half of the requests revisit one) through `cacheoff proxy
# --collector` from origin servers with think time and 40 ms WAN delays
# (bench/collector.toml). The Collector compares every hit's service time
# with its object's miss (|miss - hit|) and with the object's previous hit
# (|hit - hit|); the robots' mean hit and miss response times are printed
# beside it. The SPE paper's modified Squid: mean 7.44 ms, median 6.34 ms.
#
# Usage: bench/collector.sh [duration]   (default 60s)
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-60s}
. bench/lib.sh
start_proxy "$work/collector.txt" --collector

"$bin" run bench/collector.toml --proxy "$addr" --duration "$duration" -q -o "$work/run" >/dev/null
stop_proxy

echo "machine: $(nproc) cores, $(uname -r); $("$bin" --version)"
grep -h "collector replay" "$work/collector.txt"
grep -h "reference proxy:" "$work/collector.txt" | sed 's/reference proxy/collector/'
jq -r '.phases[] | select(.name == "meas") |
  "robots: \(.xacts) xacts, \(.errors.total) errors \(.errors.by_kind); mean response time hit \(.rt_ms.hit.mean) ms (\(.rt_ms.hit.count)), miss \(.rt_ms.miss.mean) ms (\(.rt_ms.miss.count))"' \
  "$work/run/summary.json"
