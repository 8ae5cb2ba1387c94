#!/usr/bin/env bash
# Does the engine keep up with PolyMix-3's robot population? Runs
# bench/polymix-load.toml (1000 req/s, 2,500 robots, ~750 servers, think
# times, WAN emulation) with no proxy and reports how closely the robots
# kept their plan: the share of requests sent more than 10 ms after their
# intended time, the send lag, and the achieved rate.
#
# Usage: bench/polymix-load.sh [plateau]   (default 2min)
set -euo pipefail
cd "$(dirname "$0")/.."
plateau=${1:-2min}
command -v jq >/dev/null || { apt-get update -qq && apt-get install -y -qq jq >/dev/null; }
cargo build --release -q
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
target/release/cacheoff run bench/polymix-load.toml --direct --plateau "$plateau" -q -o "$out/run" >/dev/null
echo "machine: $(nproc) cores, $(uname -r); $(target/release/cacheoff --version)"
jq -r '"robots \(.workload.robots.count), servers \(.workload.servers.count), peak \(.workload.peak_rate)"' "$out/run/manifest.json"
jq -r '.phases[] | select(.name == "top") |
  "top phase: \(.duration_s) s, \(.xacts) xacts, \(.rate_xps) xact/s, errors \(.errors.total) (\(.errors.by_kind))\n" +
  "issued by the pacer more than 10 ms late (the engine fell behind): \(.issued_late_percent)%\n" +
  "sent more than 10 ms late (incl. waiting for one of the robot'"'"'s 4 connections): \(.sent_late_percent)% of \(.sent) requests; send lag p50 \(.send_lag_ms.p50) ms, p99 \(.send_lag_ms.p99) ms, max \(.send_lag_ms.max) ms\n" +
  "response time: all \(.rt_ms.all.mean) ms, hit \(.rt_ms.hit.mean) ms, miss \(.rt_ms.miss.mean) ms; open connections up to \(.conns.open_max)"' \
  "$out/run/summary.json"
