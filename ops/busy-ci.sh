#!/usr/bin/env bash
# The test suite on a busy machine (issue 22): the tests assert what
# follows from their plans (every planned request issued and answered,
# counts, ratios, verdicts), never how fast this machine is today, so
# they must pass beside a CPU hog on every core.
#
# Installs what .ci/run installs for the tests (the products, Prometheus,
# chromium) and stress-ng (Debian), builds the tests, then starts
# `stress-ng --cpu $(nproc)` at the tests' own priority (nice 0 unless this
# script was started niced: both inherit it) and runs every test .ci/run
# runs, in one stream: `cargo test --workspace -q -- --include-ignored`. The hog is killed
# when the script exits, however it exits; the script exits with the
# tests' status and prints the wall time and the hog's settings.
#
# Usage: ops/busy-ci.sh [CARGO TEST ARGS...]
#   With arguments they replace `--workspace -q --no-fail-fast -- --include-ignored`,
#   e.g. `ops/busy-ci.sh --test runs direct::` for one test file.
# Environment: BUSY_CI_HOGS (default: nproc) stressors; BUSY_CI_LIMIT
#   (default 4h) the hog's own time limit, should the trap never run.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$#" -gt 0 ]; then
  args=("$@")
else
  # --no-fail-fast: one failing binary must not hide how the others fare.
  args=(--workspace -q --no-fail-fast -- --include-ignored)
fi

# What .ci/run installs before its tests.
ops/install-products.sh
ops/install-prometheus.sh
export DEBIAN_FRONTEND=noninteractive
need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
command -v stress-ng >/dev/null || need+=(stress-ng)
if [ "${#need[@]}" -gt 0 ]; then
  echo "== installing ${need[*]} (Debian packages)"
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi

# Built before the hog starts: it is the tests that must hold on a busy
# machine, and compiling beside it only takes longer.
echo "== cargo test --no-run ${args[*]}"
cargo test --no-run "${args[@]}"

hogs=${BUSY_CI_HOGS:-$(nproc)}
limit=${BUSY_CI_LIMIT:-4h}
settings="stress-ng --cpu $hogs --timeout $limit (nice $(nice))"
stress-ng --cpu "$hogs" --timeout "$limit" --quiet &
hog=$!
# shellcheck disable=SC2317 # called by the EXIT trap
stop_hog() {
  # stress-ng ends its stressors on SIGTERM.
  kill -TERM "$hog" 2>/dev/null || true
  wait "$hog" 2>/dev/null || true
}
trap stop_hog EXIT
sleep 1
if ! kill -0 "$hog" 2>/dev/null; then
  echo "error: the CPU hog did not start ($settings)" >&2
  exit 1
fi

echo "== cargo test ${args[*]}, beside $settings"
start=$(date +%s)
status=0
cargo test "${args[@]}" || status=$?
took=$(($(date +%s) - start))
stop_hog
trap - EXIT
echo "== busy-ci: tests exited $status after ${took}s of wall time, beside $settings on $(nproc) cores"
exit "$status"
