#!/usr/bin/env bash
# What sampling a product costs: CPU µs per `Sampler::sample()` for a pid
# target and a cgroup target holding a process with 50 threads and 1,000
# open files, and that as a share of one core at one sample a second and
# one per 5-second interval. The peer, measured in the same run, is the
# least any sampler pays: one read of /proc/PID/stat.
#
# Usage: bench/resources-cost.sh [samples]   (default 1000; root for the cgroup target)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000}
nice -n 19 cargo build --release -q -p cacheoff-resources --example sample_cost
target_dir=${CARGO_TARGET_DIR:-target}
echo "machine: $(nproc) cores, $(uname -r); commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'); $(date -u +%FT%TZ)"
# Timing under the bench lock, never the build.
flock -x /tmp/cacheoff-bench.lock "$target_dir/release/examples/sample_cost" "$n"
