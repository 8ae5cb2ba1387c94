#!/usr/bin/env bash
# Scale: PolyMix-4 with 10,000 robots (0.4/s each, 4,000 req/s at peak)
# through the reference proxy, time-compressed to a few minutes, robots
# keeping their keep-alive connections open between requests (at most 4
# each, PolyMix-4's own limit), so that 20,000 or more robot connections
# can be open at once. Samples the run's and the proxy's resident memory,
# open robot and upstream connections (the kernel's count, `ss`) and both
# processes' descriptors every 2 s, and prints the run's send lag and
# errors.
#
# Each process needs a descriptor per connection end: the run holds the
# robots' ends, the origin servers' ends of the proxy's upstream
# connections and a listener per server; the proxy holds the other two.
# So that the robots get most of them, the defaults use 100 origin
# servers (PolyMix: 1,500), a 250 ms server think time (PolyMix: 2.5 s,
# which keeps ~10x more upstream connections busy) and at most 2 idle
# upstream connections per origin in the proxy's pool.
#
# The proxy is its own process (`cacheoff proxy`) with the client
# connection limit it needs and its descriptor limit at what it needs or
# the hard limit; `cacheoff run` raises its own descriptor limit (the hard
# one too where it may) and stops with an error naming the limit if it
# runs out.
#
# Usage: bench/scale.sh [robots] [max_conns] [plateau] [extra run args...]
#   (defaults: 10000, 4, 1min, --servers 100 --think-time 'norm(250ms,100ms)');
#   PROXY_ARGS (default "--pool-per-origin 2") replaces the proxy's.
# Ends with: robots N, connections N, rss_mb N, errors N
# where connections is the most robot connections to the proxy the
# kernel held established at once (`ss`, sampled every 2 s).
set -euo pipefail
cd "$(dirname "$0")/.."
robots=${1:-10000}
max_conns=${2:-4}
plateau=${3:-1min}
shift $(($# < 3 ? $# : 3))
extra=("$@")
[ ${#extra[@]} -gt 0 ] || extra=(--servers 100 --think-time 'norm(250ms,100ms)')
proxy_args=${PROXY_ARGS---pool-per-origin 2}
command -v jq >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null; }
command -v ss >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 >/dev/null; }
cargo build --release -q
bin=${CARGO_TARGET_DIR:-$PWD/target}/release/cacheoff
out=$(mktemp -d)
proxy=
trap '[ -n "$proxy" ] && kill "$proxy" 2>/dev/null; rm -rf "$out"' EXIT

# PolyMix-4's rate per robot; the proxy gets a client slot per robot
# connection and two descriptors for each (client and origin side).
rate=$((robots * 2 / 5))
proxy_conns=$((robots * max_conns + 1000))
proxy_fds=$((2 * proxy_conns + 1000))
hard=$(ulimit -Hn)
[ "$hard" != unlimited ] && [ "$hard" -lt "$proxy_fds" ] && proxy_fds=$hard
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
# One port for every origin server, so their connections from the proxy
# can be told from other runs' on this machine.
server_port=$(free_port)
prlimit --nofile="$proxy_fds:$proxy_fds" -- "$bin" proxy --listen "127.0.0.1:$port" \
  --max-client-connections "$proxy_conns" $proxy_args >"$out/proxy.log" 2>&1 &
proxy=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done

# Every PolyMix-4 phase kept, compressed so each 4 h peak lasts $plateau;
# the fill phase ends once 2 x 64 MB went through the proxy.
"$bin" run polymix-4 --proxy "127.0.0.1:$port" --robots "$robots" --rate "$rate/s" \
  --max-conns "$max_conns" --cache-size 64MB --plateau "$plateau" --server-port "$server_port" "${extra[@]}" \
  -q -o "$out/run" >"$out/console.txt" 2>&1 &
run=$!
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || true; }
# Robot connections to the proxy, and the proxy's to the origin servers.
conns() { ss -Htn state established "( dport = :$port )" 2>/dev/null | wc -l; }
upstream() { ss -Htn state established "( dport = :$server_port )" 2>/dev/null | wc -l; }
fds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
printf '%6s %12s %14s %12s %9s %8s %10s\n' time_s run_rss_kib proxy_rss_kib connections upstream run_fds proxy_fds |
  tee "$out/samples.txt"
t=0
while kill -0 "$run" 2>/dev/null; do
  r=$(rss "$run")
  [ -n "$r" ] && printf '%6d %12d %14d %12d %9d %8d %10d\n' "$t" "$r" "$(rss "$proxy")" "$(conns)" \
    "$(upstream)" "$(fds "$run")" "$(fds "$proxy")" | tee -a "$out/samples.txt"
  sleep 2
  t=$((t + 2))
done
status=0
wait "$run" || status=$?
cat "$out/console.txt" | grep -v '^$' | tail -n 5

echo
echo "machine: $(nproc) cores, $(uname -r), $(free -g | awk '/^Mem:/ {print $2}') GB; $("$bin" --version); commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "limits: fs.file-max $(cat /proc/sys/fs/file-max), fs.nr_open $(cat /proc/sys/fs/nr_open), somaxconn $(cat /proc/sys/net/core/somaxconn), ports $(tr '\t' - </proc/sys/net/ipv4/ip_local_port_range); shell nofile $(ulimit -Sn)/$(ulimit -Hn)"
echo "run: polymix-4 --robots $robots --rate $rate/s --max-conns $max_conns --cache-size 64MB --plateau $plateau ${extra[*]} through cacheoff proxy --max-client-connections $proxy_conns $proxy_args (nofile $proxy_fds); exit $status (1 also for the cache-off's DHR rule)"
if [ ! -f "$out/run/summary.json" ]; then
  # Stopped (e.g. out of descriptors): the intervals it wrote still count.
  echo "no summary: the run failed: $(grep 'run failed' "$out/console.txt" || tail -n 1 "$out/console.txt")"
  errors=$(jq -s 'map(.errors.total) | add // 0' "$out/run/intervals.jsonl" 2>/dev/null || echo 0)
  awk -v r="$robots" -v e="$errors" 'NR > 1 && $2 > k {k = $2} NR > 1 && $4 > c {c = $4}
    END {printf "robots %d, connections %d, rss_mb %d, errors %d\n", r, c, k / 1024, e}' "$out/samples.txt"
  exit 1
fi
max() { awk -v c="$1" 'NR > 1 && $c > m {m = $c} END {print m + 0}' "$out/samples.txt"; }
run_kib=$(max 2)
proxy_kib=$(max 3)
conns_max=$(max 4)
up_max=$(max 5)
fds_max=$(max 6)
pfds_max=$(max 7)
jq -r '.phases[] | select(.name == "top2") |
  "top2 (measured): \(.duration_s) s, \(.xacts) xacts, \(.rate_xps) xact/s, dhr measured \(.dhr.measured)% of \(.dhr.offered)% offered, errors \(.errors.total)\n" +
  "send lag p50 \(.send_lag_ms.p50) ms, p99 \(.send_lag_ms.p99) ms, max \(.send_lag_ms.max) ms; sent >10 ms late \(.sent_late_percent)%, issued late \(.issued_late_percent)%\n" +
  "response time mean \(.rt_ms.all.mean) ms, p99 \(.rt_ms.all.p99) ms"' "$out/run/summary.json"
jq -r '.total | "whole run: \(.xacts) xacts, robot connections opened \(.conns.opened), open at an interval end up to \(.conns.open_max); errors \(.errors.total) \(.errors.by_kind)"' "$out/run/summary.json"
echo "proxy: $(grep -v '^$' "$out/proxy.log" | tail -n 2 | tr '\n' ' ')"
echo "peak: run RSS $((run_kib / 1024)) MB, proxy RSS $((proxy_kib / 1024)) MB; established (ss) $conns_max robot->proxy, $up_max proxy->origin; descriptors: run $fds_max, proxy $pfds_max"
awk -v r="$run_kib" -v c="$conns_max" -v n="$robots" \
  'BEGIN {printf "run RSS per robot %.1f KiB, per open connection %.1f KiB (whole RSS divided, an upper bound)\n", r / n, (c > 0 ? r / c : 0)}'
errors=$(jq -r '.total.errors.total' "$out/run/summary.json")
echo "robots $robots, connections $conns_max, rss_mb $((run_kib / 1024)), errors $errors"
