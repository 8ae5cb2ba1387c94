#!/usr/bin/env bash
# Issue 15: does a Prometheus scrape disturb a run? The closed-loop max
# rate (`cacheoff run simple --direct --rate max`, 1 KB bodies, as in
# bench/max-rate.sh) without --metrics, and with --metrics and a scraper
# fetching /metrics every second (curl, as Prometheus would), alternated
# in pairs so that drift of a shared machine hits both alike. Prints each
# run, the median rates and their ratio, and the scrape latency under
# load (curl's time_total: connect, request, whole reply).
#
# Usage: bench/metrics.sh [seconds-per-run] [pairs]   (default 10, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
pairs=${2:-3}
command -v jq >/dev/null || { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null; }

cargo build --release -q
bin=${CARGO_TARGET_DIR:-target}/release/cacheoff
work=$(mktemp -d)
scraper=""
trap '[ -n "$scraper" ] && kill "$scraper" 2>/dev/null; rm -rf "$work"' EXIT

common=(--direct --rate max --robots 50 --max-conns 2 --servers 2 --size 1KB --warmup 3s --duration "${secs}s" -q)
meas() { jq -r ".phases[] | select(.name==\"meas\") | $1" "$2/summary.json"; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

off=(); on=()
for i in $(seq "$pairs"); do
  "$bin" run simple "${common[@]}" -o "$work/off-$i" >/dev/null
  off+=("$(meas .rate_xps "$work/off-$i")")
  # The scraper: one GET a second for as long as the run lasts; the run
  # lingers until one scrape after its end, which the scraper provides.
  (
    while true; do
      curl -s -o /dev/null -m 5 -w '%{time_total}\n' "http://127.0.0.1:$port/metrics" >>"$work/latency-$i" || true
      sleep 1
    done
  ) &
  scraper=$!
  "$bin" run simple "${common[@]}" --metrics "127.0.0.1:$port" -o "$work/on-$i" >/dev/null 2>&1
  kill "$scraper"; wait "$scraper" 2>/dev/null || true; scraper=""
  on+=("$(meas .rate_xps "$work/on-$i")")
  printf 'pair %d: without --metrics %10.1f/s (errors %s), with a 1 s scrape %10.1f/s (errors %s)\n' \
    "$i" "${off[-1]}" "$(meas .errors.total "$work/off-$i")" "${on[-1]}" "$(meas .errors.total "$work/on-$i")"
done

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
m_off=$(median "${off[@]}"); m_on=$(median "${on[@]}")
# Scrapes that answered (curl prints 0 when nothing listened yet).
cat "$work"/latency-* | awk '$1 > 0' | sort -g >"$work/lat"
n=$(wc -l <"$work/lat")
pct() { awk -v p="$1" -v n="$n" 'NR == (int(n*p) > 0 ? int(n*p) : 1) {printf "%.2f", $1*1000}' "$work/lat"; }

echo
echo "machine: $(nproc) cores, $(uname -r); $("$bin" --version); load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'closed-loop max rate without --metrics: %10.1f req/s (median of %d)\n' "$m_off" "$pairs"
printf 'closed-loop max rate with a 1 s scrape: %10.1f req/s (median of %d)\n' "$m_on" "$pairs"
printf 'ratio with/without: %.3f\n' "$(jq -n "$m_on / $m_off")"
printf 'scrape latency under load (%d scrapes): p50 %s ms, p99 %s ms, max %s ms\n' "$n" "$(pct 0.5)" "$(pct 0.99)" "$(tail -n1 "$work/lat" | awk '{printf "%.2f", $1*1000}')"
