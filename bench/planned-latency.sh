#!/usr/bin/env bash
# Latencies against what the plan makes them: the times the tests assert
# only by count (docs/testing.md), each beside a peer run in this script.
#
#  1. WAN round trips, tests/direct.rs's cases: the median from the
#     connection (Web Polygraph's clock) against the planned one-way delays
#     (new connection 4, reused 2, 100 KB 8; client side; both sides), and
#     the delays the links charged per transaction (counts.link_wait_us);
#     the peer is the same case with no link, what loopback and the
#     machine add anyway.
#  2. Hits against misses through the reference proxy (`cacheoff proxy`),
#     tests/phases.rs's case: DataComm-1, compressed, whose misses pay a
#     norm(3s,1.5s) think time; the peer is the direct run (every reply a
#     miss).
#  3. The same through Debian's Squid on compressed PolyMix-3 (2.5 s think
#     time, 40 ms WAN), tests/squid.rs's case, beside the reference proxy
#     on the same workload; skipped, saying so, when Squid is not here.
#
# Loopback only; about 5 minutes with the defaults.
#   bench/planned-latency.sh [DELAY_MS] [DC_PLATEAU] [PM_PLATEAU]
#   (default 100 24s 10s: the tests' delay and DataComm-1 plateau; their
#   PolyMix-3 plateau is 15s)
set -euo pipefail
cd "$(dirname "$0")/.."
delay=${1:-100}
dc_plateau=${2:-24s}
pm_plateau=${3:-10s}
. bench/lib.sh
squid_pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; [ -n "$squid_pid" ] && kill "$squid_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
PATH=$PATH:/usr/sbin

echo "machine: $(nproc) cores, $(uname -r); $("$bin" --version)"

# ratio A B: A / B to 3 significant digits ("-" when A or B is 0: no
# such replies).
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == 0 || b == 0) print "-"; else printf "%.3g", a / b }'; }
# fig DIR PHASE PATH: a figure of the phase PHASE in DIR's summary.json.
fig() { jq -r --arg p "$2" ".phases[] | select(.name == \$p) | $3" "$1/summary.json"; }

# --- 1. WAN round trips -----------------------------------------------------

# wan NAME REUSE SIZE ROBOT_LINK SERVER_LINK: a direct run of 10 robots
# with one connection each (REUSE transactions per connection), 1/s each,
# to one origin server, SIZE objects; a link is "" or the delay in ms. One
# worker, as the tests: its last snapshot follows the drain of its robots,
# so it holds every wait its server charged them.
wan() {
  local name=$1 reuse=$2 size=$3 rl=$4 sl=$5
  {
    echo "name = \"wan-$name\""
    echo 'peak_rate = "10/s"'
    echo '[robots]'
    echo 'count = 10'
    echo 'max_conns = 1'
    echo "conn_reuse = \"const($reuse)\""
    [ -n "$rl" ] && echo "link = { delay = \"${rl}ms\", loss = 0.0 }"
    echo '[servers]'
    echo 'count = 1'
    [ -n "$sl" ] && echo "link = { delay = \"${sl}ms\", loss = 0.0 }"
    echo '[[content]]'
    echo 'name = "object"'
    echo 'share = 1.0'
    echo "size = \"const($size)\""
    echo 'cachable = 1.0'
    echo '[[phases]]'
    echo 'name = "warm"'
    echo 'duration = "1s"'
    echo '[[phases]]'
    echo 'name = "meas"'
    echo 'duration = "8s"'
    echo 'measured = true'
  } >"$work/wan-$name.toml"
  "$bin" run "$work/wan-$name.toml" --direct --workers 1 -o "$work/wan-$name" -q >/dev/null
}

echo
echo "== 1. WAN round trips: direct, 10 robots x 1/s, one connection each, ${delay} ms one-way delay; meas phase (8 s)"
printf '%-20s %8s %9s %9s %9s %7s %8s %9s %13s\n' \
  case planned p50_ms p99_ms mean_ms p50/pl p50-pl noLink charged/plan
# NAME REUSE SIZE ROBOT_LINK SERVER_LINK LINKS DELAYS MEDIAN BASELINE: a
# transaction crosses LINKS links and needs DELAYS one-way delays on each
# beyond a new connection's handshake (2 more); the median one MEDIAN in
# all; BASELINE is the same case with no link.
cases=(
  "server-new-1KB 1 1KB - $delay 1 2 4 new-1KB"
  "server-reused-1KB 1000 1KB - $delay 1 2 2 reused-1KB"
  "server-reused-100KB 1000 100KB - $delay 1 8 8 reused-100KB"
  "client-new-1KB 1 1KB $delay - 1 2 4 new-1KB"
  "client-reused-100KB 1000 100KB $delay - 1 8 8 reused-100KB"
  "both-reused-1KB 1000 1KB $delay $delay 2 2 4 reused-1KB"
)
for base in "new-1KB 1 1KB" "reused-1KB 1000 1KB" "reused-100KB 1000 100KB"; do
  set -- $base
  wan "nolink-$1" "$2" "$3" "" ""
done
for c in "${cases[@]}"; do
  set -- $c
  rl=$4 sl=$5
  [ "$rl" = - ] && rl=
  [ "$sl" = - ] && sl=
  wan "$1" "$2" "$3" "$rl" "$sl"
  d=$work/wan-$1
  planned=$(($8 * delay))
  p50=$(fig "$d" meas .rt_polygraph_ms.all.p50)
  # What the links charged over the whole run against the plan's delays
  # for its transactions and connections.
  charged=$(jq -r --argjson d "$delay" --argjson links "$6" --argjson per "$7" \
    '.total.counts | "\(.link_wait_us / 1000 / $d) / \($links * (2 * .conns_opened + $per * .xacts))"' \
    "$d/summary.json")
  printf '%-20s %8s %9s %9s %9s %7s %8s %9s %13s\n' "$1" "$planned" "$p50" \
    "$(fig "$d" meas .rt_polygraph_ms.all.p99)" "$(fig "$d" meas .rt_polygraph_ms.all.mean)" \
    "$(ratio "$p50" "$planned")" "$(awk -v a="$p50" -v b="$planned" 'BEGIN { printf "%.1f", a - b }')" \
    "$(fig "$work/wan-nolink-$9" meas .rt_polygraph_ms.all.p50)" "$charged"
done
echo "(planned: the median transaction's one-way delays x ${delay} ms; noLink: the same case's p50 with no"
echo " link; charged/plan: delays the links charged in the whole run / the plan's for its transactions)"

# --- 2 and 3. Hits against misses ---------------------------------------------

# hits_misses LABEL DIR PHASE: one line of a phase's hit and miss times
# (from the intended start, as the tests read them).
hits_misses() {
  local hp50 hmean mp50 mmean hn mn
  hp50=$(fig "$2" "$3" .rt_ms.hit.p50)
  hmean=$(fig "$2" "$3" .rt_ms.hit.mean)
  mp50=$(fig "$2" "$3" .rt_ms.miss.p50)
  mmean=$(fig "$2" "$3" .rt_ms.miss.mean)
  hn=$(fig "$2" "$3" .rt_ms.hit.count)
  mn=$(fig "$2" "$3" .rt_ms.miss.count)
  printf '%-34s %7s %9s %9s %7s %9s %9s %9s %9s\n' "$1" "$hn" "$hp50" "$hmean" "$mn" "$mp50" "$mmean" \
    "$(ratio "$hp50" "$mp50")" "$(ratio "$hmean" "$mmean")"
}
header() {
  printf '%-34s %7s %9s %9s %7s %9s %9s %9s %9s\n' run hits hit_p50 hit_mean misses miss_p50 miss_mean p50_h/m mean_h/m
}
# The reference proxy as its own process, room for every object, a
# client connection limit within this shell's descriptors.
reference_proxy() { start_proxy "$1" --mem "$2" --max-client-connections 5000; }

echo
echo "== 2. Hits against misses: DataComm-1 at 500/s, plateau $dc_plateau, measured phase 'meas' (think time norm(3s,1.5s): a miss's planned mean about 3000 ms, a hit's 0)"
header
"$bin" run datacomm-1 --direct --rate 500/s --plateau "$dc_plateau" -o "$work/dc-direct" -q >/dev/null
hits_misses "direct (no proxy)" "$work/dc-direct" meas
reference_proxy "$work/proxy-dc.log" 1GB
"$bin" run datacomm-1 --proxy "$addr" --rate 500/s --plateau "$dc_plateau" -o "$work/dc-proxy" -q >/dev/null
hits_misses "reference proxy (cacheoff proxy)" "$work/dc-proxy" meas
stop_proxy
grep '^reference proxy:' "$work/proxy-dc.log"

echo
echo "== 3. Hits against misses: PolyMix-3 at 200/s, plateau $pm_plateau, cache 16MB, measured phase 'top2' (think time norm(2.5s,1s) and 40 ms WAN on misses)"
if ! command -v squid >/dev/null; then
  echo "Squid is not installed (apt-get install squid, or ops/install-products.sh): skipped"
  exit 0
fi
echo "$(squid -v | head -1)"
header
# Squid drops root's privileges to its own user, which must reach and
# write its directory.
chmod 711 "$work"
sq=$work/squid
mkdir -p "$sq"
chmod 777 "$sq"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
sed -e "s|@PORT@|$port|g" -e "s|@DIR@|$sq|g" ops/squid/squid.conf >"$sq/squid.conf"
squid -N -f "$sq/squid.conf" >"$sq/squid.txt" 2>&1 &
squid_pid=$!
up=
for _ in $(seq 300); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && up=1 && break
  sleep 0.1
done
[ -n "$up" ] || { echo "squid did not listen on 127.0.0.1:$port:" >&2; tail "$sq/cache.log" >&2; exit 1; }
"$bin" run polymix-3 --proxy "127.0.0.1:$port" --rate 200/s --plateau "$pm_plateau" --cache-size 16MB \
  -o "$work/pm-squid" -q >/dev/null
hits_misses "Squid (ops/squid/squid.conf)" "$work/pm-squid" top2
kill "$squid_pid"
wait "$squid_pid" 2>/dev/null || true
squid_pid=
reference_proxy "$work/proxy-pm.log" 512MB
"$bin" run polymix-3 --proxy "$addr" --rate 200/s --plateau "$pm_plateau" --cache-size 16MB \
  -o "$work/pm-proxy" -q >/dev/null
hits_misses "reference proxy (cacheoff proxy)" "$work/pm-proxy" top2
stop_proxy
grep '^reference proxy:' "$work/proxy-pm.log"
