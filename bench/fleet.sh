#!/usr/bin/env bash
# Issue 16: a run through one local `cacheoff agent` (coordinated by
# `cacheoff run --agents`) against a plain run of the same workload at the
# same rate, on the same cores: the agent's hot path is the plain run's,
# so its figures must be within the plain runs' own spread.
#
#   closed-loop: simple --direct --rate max, 50 robots x 2 conns, 2 servers;
#   open-loop:   200 robots x 4 conns at SHARE% (default 25) of the plain
#                closed-loop rate measured first in this script (on 2
#                cores, open-loop sends on time up to about a quarter of
#                the closed-loop rate: RESULTS.md, issue 22).
#
# Plain and agent runs alternate (A B B A ...) so that both see the same
# machine noise. Each run's figures come from its summary.json, measured
# phase: replies/s, mean and p99 response time (from the intended start),
# send-lag p99. Prints every run, the medians, agent/plain, and the plain
# runs' own spread (max/min) as the yardstick for noise.
#
# Usage: bench/fleet.sh [seconds-per-run] [rounds] [open-loop share %]
#        (defaults: 10 s, 6 rounds, 25%)
# Build first, then measure under the bench lock:
#   cargo build --release && flock -x /tmp/cacheoff-bench.lock bench/fleet.sh
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
rounds=${2:-6}
share=${3:-25}
command -v jq >/dev/null || { apt-get update -qq && apt-get install -y -qq jq >/dev/null; }

cargo build --release -q
bin=${CARGO_TARGET_DIR:-target}/release/cacheoff
work=$(mktemp -d)
agent_pid=
trap '[ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null; rm -rf "$work"' EXIT
workers=$(nproc)

common=(--workers "$workers" --size 1KB --warmup 3s --duration "${secs}s" -q)
closed=(simple --direct --rate max --robots 50 --max-conns 2 --servers 2 "${common[@]}")
open_args() { echo simple --direct --rate "$1/s" --robots 200 --max-conns 4 --servers 2 "${common[@]}"; }
meas() { jq -r ".phases[] | select(.name==\"meas\") | $1" "$2/summary.json"; }

# agent_run DIR ARGS...: the same run through a fresh local agent (one
# run, then it exits), with the agent's own log under $work.
agent_run() {
  local dir=$1 log="$work/agent.log" addr=
  shift
  [ -d "$work/creds/fleet" ] || "$bin" tls "$work/creds" >/dev/null
  "$bin" agent --listen 127.0.0.1:0 --workers "$workers" --runs 1 --data "$work/agent-data" --fleet-dir "$work/creds" >"$log" 2>&1 &
  agent_pid=$!
  for _ in $(seq 100); do
    addr=$(sed -n 's/^cacheoff agent listening on \([0-9.]*:[0-9]*\) .*/\1/p' "$log")
    [ -n "$addr" ] && break
    sleep 0.1
  done
  [ -n "$addr" ] || { echo "cacheoff agent did not start: $(cat "$log")" >&2; exit 1; }
  "$bin" run "$@" --agents "$addr" --fleet-dir "$work/creds" -o "$dir" >/dev/null
  wait "$agent_pid"
  agent_pid=
}

plain_run() {
  local dir=$1
  shift
  "$bin" run "$@" -o "$dir" >/dev/null
}

# The open-loop rate: a share of what a plain closed-loop run does now.
plain_run "$work/calibrate" "${closed[@]}"
max_rate=$(meas .rate_xps "$work/calibrate")
rate=$(jq -n "$max_rate * $share / 100 | floor")
echo "plain closed-loop now: $max_rate replies/s; open-loop rate: $rate/s ($share%)"

declare -A xps rt_mean rt_p99 lag_p99
row() { # MODE SIDE DIR ROUND
  local key="$1-$2" errs
  xps[$key]+="$(meas .rate_xps "$3") "
  rt_mean[$key]+="$(meas .rt_ms.all.mean "$3") "
  rt_p99[$key]+="$(meas .rt_ms.all.p99 "$3") "
  lag_p99[$key]+="$(meas .send_lag_ms.p99 "$3") "
  errs=$(meas .errors.total "$3")
  printf 'round %d %-6s %-5s %10.1f replies/s  rt mean %7.3f ms  p99 %7.3f ms  send lag p99 %7.3f ms  errors %s\n' \
    "$4" "$1" "$2" "$(meas .rate_xps "$3")" "$(meas .rt_ms.all.mean "$3")" "$(meas .rt_ms.all.p99 "$3")" \
    "$(meas .send_lag_ms.p99 "$3")" "$errs"
}

for r in $(seq "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then order="plain agent"; else order="agent plain"; fi
  for mode in closed open; do
    if [ "$mode" = closed ]; then args=("${closed[@]}"); else read -ra args <<<"$(open_args "$rate")"; fi
    for side in $order; do
      d="$work/$mode-$side-$r"
      "${side}_run" "$d" "${args[@]}"
      row "$mode" "$side" "$d" "$r"
    done
  done
done

median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
spread() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk 'NR==1 {lo=$1} {hi=$1} END {if (lo > 0) printf "%.3f", hi/lo; else print "n/a"}'; }
echo
echo "machine: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); $("$bin" --version) ($(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo +changes)); $rounds rounds of ${secs} s"
printf '%-6s %-15s %12s %12s %12s %14s\n' mode figure plain agent agent/plain "plain max/min"
for mode in closed open; do
  for m in xps rt_mean rt_p99 lag_p99; do
    unset -n series 2>/dev/null || true
    declare -n series=$m
    p=$(median "${series[$mode-plain]}"); a=$(median "${series[$mode-agent]}")
    printf '%-6s %-15s %12.3f %12.3f %12s %14s\n' "$mode" "$m" "$p" "$a" \
      "$(jq -n "if $p > 0 then $a / $p * 1000 | round / 1000 else \"n/a\" end")" \
      "$(spread "${series[$mode-plain]}")"
  done
done
