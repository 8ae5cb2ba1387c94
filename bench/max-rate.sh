#!/usr/bin/env bash
# Highest request rates cacheoff sustains on this machine, with no proxy,
# zero think time, keep-alive and 1 KB bodies, beside wrk -> nginx serving a
# 1 KB file and oha's open-loop mode against the same nginx, measured in
# the same script on the same cores.
#
#   (a) open-loop: the highest planned Poisson rate at which every request
#       is sent within 10 ms of its intended time, the 99th percentile
#       within 1 ms, no transaction fails and every body verifies;
#   (b) closed-loop: as fast as possible (--rate max), with two origin
#       servers (each core's robots use that core's server) and with one
#       server for both cores (every worker accepts on it, as nginx's
#       workers share one socket), as wrk -> nginx;
#   (c) oha -q RATE --latency-correction against the same nginx: the
#       highest rate it keeps up with (sends at least 99% of the planned
#       requests, no errors; oha does not report when each request left,
#       so (a)'s rule cannot be applied to it), and cacheoff's highest
#       open-loop rate under that same rule.
#
# Every planned rate is a share of wrk's rate measured first, so the
# script measures on a slow day as on a fast one: steps of 10% of it from
# 30%, then halving the gap between the last pass and the first fail to
# 2.5% of wrk's rate.
#
# Usage: bench/max-rate.sh [seconds-per-step]   (default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
export PATH=$PATH:$HOME/.cargo/bin:/usr/sbin

need=()
command -v nginx >/dev/null || need+=(nginx)
command -v wrk >/dev/null || need+=(wrk)
command -v jq >/dev/null || need+=(jq)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
command -v oha >/dev/null || cargo install --locked -q oha

cargo build --release -q
bin=target/release/cacheoff
work=$(mktemp -d)
trap 'kill $(cat "$work/nginx.pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$work"' EXIT

# --- peer: wrk -> nginx -------------------------------------------------
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$work/www" "$work/tmp"
# nginx's workers run as nobody: they must be able to read the file (a
# private temporary directory would have them answer 403 to every request).
chmod 755 "$work" "$work/www"
head -c 1024 /dev/urandom > "$work/www/1k.bin"
chmod 644 "$work/www/1k.bin"
sed -e "s|@PORT@|$port|g" -e "s|@DIR@|$work|g" bench/nginx.conf > "$work/nginx.conf"
nginx -c "$work/nginx.conf" &
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/1k.bin" 2>/dev/null && break; sleep 0.1; done
url="http://127.0.0.1:$port/1k.bin"
got=$(curl -s -o /dev/null -w '%{http_code} %{size_download}' "$url")
[ "$got" = "200 1024" ] || { echo "nginx does not serve the 1 KB file: $got" >&2; exit 1; }
wrk_out=$(wrk -t2 -c100 -d"${secs}s" "$url")
if grep -q 'Non-2xx' <<<"$wrk_out"; then echo "wrk -> nginx had errors: $wrk_out" >&2; exit 1; fi
wrk_rate=$(awk '/^Requests\/sec:/ {print $2}' <<<"$wrk_out")
echo "wrk -> nginx: $wrk_rate req/s"
share_rate() { jq -n "$wrk_rate * $1 / 100 | floor"; }

# --- oha -> the same nginx, open-loop -----------------------------------
# A step passes if oha sent at least 99% of the planned requests with no
# error (its latency is corrected from each request's intended time).
oha_pass() {
  local rate=$1 out
  out=$(oha -q "$rate" -z "${secs}s" -c 100 --latency-correction --no-tui --output-format json "$url" 2>/dev/null) || return 1
  local got err p99
  got=$(jq '.summary.requestsPerSec' <<<"$out")
  # Errors, and any reply but a 200 (oha's last in-flight requests, cut
  # off by the deadline, are not errors of the rate).
  err=$(jq '([.errorDistribution // {} | to_entries[] | select(.key != "aborted due to deadline") | .value] | add // 0)
    + ([.statusCodeDistribution // {} | to_entries[] | select(.key != "200") | .value] | add // 0)' <<<"$out")
  p99=$(jq '.latencyPercentiles.p99 * 1000' <<<"$out")
  local ok
  ok=$(jq -n --argjson got "$got" --argjson rate "$rate" --argjson err "$err" '$got >= 0.99 * $rate and $err == 0')
  printf 'oha      %7s/s planned (%3s%% of wrk): %9.1f/s achieved, latency p99 %8.3f ms, errors %s -> %s\n' \
    "$rate" "$share" "$got" "$p99" "$err" "$([ "$ok" = true ] && echo pass || echo fail)"
  [ "$ok" = true ]
}

# --- cacheoff, open-loop ------------------------------------------------
# Two origin servers: one per worker, so in a direct run each core's robots
# talk to that core's server (the default placement).
common=(--size 1KB --warmup 3s --duration "${secs}s" -q)
meas() { jq -r ".phases[] | select(.name==\"meas\") | $1" "$2/summary.json"; }

# A step passes if one of up to three attempts sends every request within
# 10 ms (99% within 1 ms) with no errors (a single scheduler hiccup of the
# VM fails a whole attempt); every attempt is printed.
last_lag=""
cacheoff_pass() {
  local rate=$1 attempt dir got err lag p99 ok
  for attempt in 1 2 3; do
    dir="$work/open-$rate-$attempt"
    "$bin" run simple --direct --rate "$rate/s" --robots 200 --max-conns 4 --servers 2 "${common[@]}" -o "$dir" >/dev/null || true
    got=$(meas .rate_xps "$dir"); err=$(meas .errors.total "$dir"); lag=$(meas .send_lag_ms.max "$dir")
    p99=$(meas .send_lag_ms.p99 "$dir")
    ok=$(jq -n --argjson lag "$lag" --argjson p99 "$p99" --argjson err "$err" '$lag <= 10 and $p99 <= 1 and $err == 0')
    printf 'cacheoff %7s/s planned (%3s%% of wrk, attempt %d): %9.1f/s achieved, send lag p99 %7.3f ms max %8.3f ms, errors %s -> %s\n' \
      "$rate" "$share" "$attempt" "$got" "$p99" "$lag" "$err" "$([ "$ok" = true ] && echo pass || echo fail)"
    if [ "$ok" = true ]; then last_lag=$lag; return 0; fi
  done
  return 1
}

# oha's rule for cacheoff, to compare like with like: one attempt sends
# at least 99% of the planned requests with no errors.
cacheoff_sent_pass() {
  local rate=$1 dir="$work/sent-$1" got err rt ok
  "$bin" run simple --direct --rate "$rate/s" --robots 200 --max-conns 4 --servers 2 "${common[@]}" -o "$dir" >/dev/null || true
  got=$(meas .rate_xps "$dir"); err=$(meas .errors.total "$dir"); rt=$(meas .rt_ms.all.p99 "$dir")
  ok=$(jq -n --argjson got "$got" --argjson rate "$rate" --argjson err "$err" '$got >= 0.99 * $rate and $err == 0')
  printf 'cacheoff %7s/s planned (%3s%% of wrk, oha'"'"'s rule): %9.1f/s achieved, latency p99 %8.3f ms, errors %s -> %s\n' \
    "$rate" "$share" "$got" "$rt" "$err" "$([ "$ok" = true ] && echo pass || echo fail)"
  [ "$ok" = true ]
}

# search TOOL: the highest passing share of wrk's rate, in percent; steps
# of 10 from 30, then bisection to 2.5.
search() {
  local tool=$1 lo=0 hi="" best_lag=""
  for share in 30 40 50 60 70 80 90 100 110 120 130 140 150 160 170 180 190 200; do
    if "${tool}_pass" "$(share_rate "$share")"; then lo=$share; best_lag=$last_lag; else hi=$share; break; fi
  done
  if [ -n "$hi" ]; then
    local gap
    while gap=$(jq -n "$hi - $lo") && jq -e -n "$gap > 2.5" >/dev/null; do
      share=$(jq -n "($lo + $hi) / 2")
      if "${tool}_pass" "$(share_rate "$share")"; then lo=$share; best_lag=$last_lag; else hi=$share; fi
    done
  fi
  last_lag=$best_lag
  found_share=$lo
}

search cacheoff
open_share=$found_share
open_rate=$(share_rate "$open_share")
open_lag=$last_lag
search oha
oha_share=$found_share
oha_rate=$(share_rate "$oha_share")
search cacheoff_sent
sent_rate=$(share_rate "$found_share")
kill "$(cat "$work/nginx.pid")"; sleep 0.5

# --- cacheoff, closed-loop ----------------------------------------------
"$bin" run simple --direct --rate max --robots 50 --max-conns 2 --servers 2 "${common[@]}" -o "$work/closed" >/dev/null
closed_rate=$(meas .rate_xps "$work/closed")
closed_err=$(meas .errors.total "$work/closed")
"$bin" run simple --direct --rate max --robots 50 --max-conns 2 --servers 1 "${common[@]}" -o "$work/closed1" >/dev/null
cross_rate=$(meas .rate_xps "$work/closed1")
cross_err=$(meas .errors.total "$work/closed1")

pct() { jq -n "$1 * 100 / $wrk_rate | round"; }
echo
echo "machine: $(nproc) cores, $(uname -r); $("$bin" --version) ($(git rev-parse --short HEAD 2>/dev/null || echo '?')); $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2); nginx $(nginx -v 2>&1 | cut -d/ -f2); $(oha --version)"
printf 'wrk -> nginx (1 KB, keep-alive, 100 conns):  %10.1f req/s\n' "$wrk_rate"
printf 'oha open-loop -> nginx, keeps up:           %10s req/s  (%s%% of wrk->nginx; -q RATE --latency-correction, 100 conns)\n' \
  "$oha_rate" "$(pct "$oha_rate")"
printf 'cacheoff closed-loop (--rate max):          %10.1f req/s  (%s%% of wrk->nginx; errors %s)\n' \
  "$closed_rate" "$(pct "$closed_rate")" "$closed_err"
printf 'cacheoff closed-loop, cross-core (1 server): %10.1f req/s  (%s%% of wrk->nginx; errors %s)\n' \
  "$cross_rate" "$(pct "$cross_rate")" "$cross_err"
of_oha() { jq -n "if $oha_rate > 0 then $1 * 100 / $oha_rate | round else \"n/a\" end"; }
printf 'cacheoff open-loop, oha'"'"'s rule (99%% sent):  %10s req/s  (%s%% of wrk->nginx; %s%% of oha)\n' \
  "$sent_rate" "$(pct "$sent_rate")" "$(of_oha "$sent_rate")"
printf 'cacheoff open-loop, all sent within 10 ms:  %10s req/s  (%s%% of wrk->nginx; %s%% of oha; max lag %s ms)\n' \
  "$open_rate" "$(pct "$open_rate")" "$(of_oha "$open_rate")" "${open_lag:-n/a}"
