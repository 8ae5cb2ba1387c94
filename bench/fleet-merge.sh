#!/usr/bin/env bash
# Issue 16: can one coordinator merge 1,000 agents' intervals? Runs
# crates/fleet/examples/merge_sim.rs (release): N simulated agents (10,
# 100, 1000 by default) each send a realistic interval snapshot in the
# wire form `cacheoff agent` sends; prints, per interval, the time to
# parse, rebuild and merge them all on one thread, the bytes per agent
# message and the process's memory (A); the same through the
# coordinator's real fan-in, a reader thread per agent on loopback
# sockets (B); then the real coordinator, `coordinate()`, with N fake
# agents (C), at no added round trip and at 1 ms and 10 ms (1,000 agents):
# the handshakes are serial and an agent waits at most 60 s for the next
# message. Each part runs in its own process, so that memory figures do
# not carry over. The peer is the interval itself: merging must take
# well under one interval (5 s).
#
# Usage: bench/fleet-merge.sh [merge_sim args for A, B and C: --agents
#        10,100,1000 --xacts 20000 --intervals 3]
# Build first, then measure under the bench lock:
#   cargo build --release -p cacheoff-fleet --example merge_sim &&
#   flock -x /tmp/cacheoff-bench.lock bench/fleet-merge.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p cacheoff-fleet --example merge_sim
echo "machine: $(nproc) cores, $(uname -r), $(awk '/MemTotal/ {printf "%.1f GB", $2/1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg); $(rustc --version); commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo +changes)"
sim=${CARGO_TARGET_DIR:-target}/release/examples/merge_sim
for part in A B C; do
  "$sim" --only "$part" "$@"
done
echo "C at a network's round trip (1,000 agents, one interval):"
for rtt in 1 10; do
  "$sim" "$@" --only C --agents 1000 --intervals 1 --rtt-ms "$rtt" | sed -n 5p
done
