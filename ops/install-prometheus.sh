#!/usr/bin/env bash
# Installs Prometheus from Debian (package `prometheus`, 2.42 in Debian 12)
# for tests/prometheus.rs, which starts its own Prometheus with its own
# configuration and storage in a temporary directory. The package's
# service must not start: a policy-rc.d forbids every service start while
# dpkg runs (an existing one is put back after), and a prometheus daemon
# the install started anyway is stopped. Idempotent: with the binary
# present it only reports its version.
#
# Usage: ops/install-prometheus.sh [--check]
#        --check only reports; exits 1 when it is missing.
set -euo pipefail

bin=/usr/bin/prometheus
report() { echo "prometheus $($bin --version 2>&1 | head -n1 | awk '{print $3}') $1 ($(dpkg-query -W -f '${Package} ${Version}' prometheus 2>/dev/null))"; }

if [ -x "$bin" ]; then report present; exit 0; fi
if [ "${1:-}" = --check ]; then echo "prometheus MISSING ($bin; Debian package prometheus)"; exit 1; fi
if [ "$(id -u)" -ne 0 ]; then echo "error: installing prometheus needs root" >&2; exit 1; fi

policy=/usr/sbin/policy-rc.d
saved_policy=""
log=$(mktemp)
before=" $(pgrep -x prometheus | xargs || true) "
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  set +e
  local pid
  # A daemon the install started despite the policy: new since it began,
  # and not one of ours (tests give theirs a --storage.tsdb.path in /tmp).
  for pid in $(pgrep -x prometheus); do
    [[ $before == *" $pid "* ]] && continue
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- '--storage.tsdb.path=/tmp' || kill "$pid"
  done
  if [ -n "$saved_policy" ]; then mv -f "$saved_policy" "$policy"; else rm -f "$policy"; fi
  rm -f "$log"
}
if [ -e "$policy" ]; then
  saved_policy=$(mktemp "$policy.cacheoff-saved.XXXXXX")
  cp -p "$policy" "$saved_policy"
fi
trap cleanup EXIT
trap 'exit 130' INT TERM
printf '#!/bin/sh\n# cacheoff ops/install-prometheus.sh: no service starts\nexit 101\n' >"$policy.new"
chmod 755 "$policy.new"
mv -f "$policy.new" "$policy"

echo "== installing prometheus (Debian package)"
export DEBIAN_FRONTEND=noninteractive
apt_opts=(-qq -o DPkg::Lock::Timeout=300)
if ! { apt-get "${apt_opts[@]}" update && apt-get "${apt_opts[@]}" install -y --no-install-recommends prometheus; } >"$log" 2>&1; then
  tail -n 20 "$log" >&2
  echo "error: apt-get install prometheus failed" >&2
  exit 1
fi
[ -x "$bin" ] || { echo "error: $bin still missing after installing prometheus" >&2; exit 1; }
report installed
