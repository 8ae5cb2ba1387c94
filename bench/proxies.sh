#!/usr/bin/env bash
# Hits and misses of the reference proxy beside Squid, Varnish, nginx
# (proxy_cache) and Apache Traffic Server, all from Debian, each a reverse
# proxy in front of one nginx origin (configurations in bench/proxies/),
# for a cached 1 KB and a cached 11 KB object. Three measurements, every
# rate derived from rates measured in the same run:
#
#  1. Ceiling: `wrk -t2 -cN` (closed loop, keep-alive) as fast as each
#     proxy answers; replies/s, and the proxy's own CPU time per reply
#     (from /proc), which ranks the proxies by cost whatever the share of
#     the two cores the load generator takes. The generator's headroom is
#     checked first: the same wrk against nginx serving the files from
#     its open-file cache (bench/proxies/static.conf) must get more than
#     any proxy does.
#  2. Latency at the same load: every proxy driven open-loop at one rate,
#     a share (default 70%) of nginx proxy_cache's median ceiling for that
#     object, by `oha -q RATE --latency-correction` (installed with cargo
#     if missing): p50/p99 from each request's intended start.
#  3. Miss cost: one client, every request a new URL (bench/proxies/
#     miss.lua), through the proxy and straight to the origin; the cost is
#     the difference of the medians (what the proxy adds to the origin's
#     time, storing included).
#
# The proxies take turns for several rounds and the median round of each
# is printed; the origin's access log shows whether the measured hits
# were hits.
#
# Usage: bench/proxies.sh [seconds] [connections] [rounds] [share%] [proxies...]
#        (default 5 100 3 70 cacheoff squid varnish nginx trafficserver)
# A proxy named `base` is another cacheoff binary, $CACHEOFF_BASE (an
# earlier build, to measure a change beside its peers in one run).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
conns=${2:-100}
rounds=${3:-3}
share=${4:-70}
shift $(($# < 4 ? $# : 4))
only=" ${*:-cacheoff squid varnish nginx trafficserver} "
want() { [[ $only == *" $1 "* ]]; }

need=()
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx)
command -v wrk >/dev/null || need+=(wrk)
command -v curl >/dev/null || need+=(curl)
command -v jq >/dev/null || need+=(jq)
command -v squid >/dev/null || [ -x /usr/sbin/squid ] || need+=(squid)
command -v varnishd >/dev/null || [ -x /usr/sbin/varnishd ] || need+=(varnish)
command -v traffic_server >/dev/null || need+=(trafficserver)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
PATH=$PATH:/usr/sbin:$HOME/.cargo/bin
command -v oha >/dev/null || cargo install --locked -q oha

cargo build --release -q
bin=${CARGO_TARGET_DIR:-$PWD/target}/release/cacheoff
work=$(mktemp -d)
# Squid and Varnish drop root privileges and must still reach their files.
chmod 755 "$work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  # $PROXIES_RAW: a directory to keep the raw lines of every round in.
  if [ -n "${PROXIES_RAW:-}" ]; then cp "$work"/{ceiling,open,miss} "$PROXIES_RAW"/ 2>/dev/null || true; fi
  sleep 0.5
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
origin_port=$(free_port)
fill() { sed -e "s|@PORT@|$1|g" -e "s|@ORIGIN_PORT@|$origin_port|g" -e "s|@DIR@|$work|g" "$2"; }

mkdir -p "$work/www" "$work/tmp"
head -c 1024 /dev/urandom >"$work/www/1k"
head -c 11264 /dev/urandom >"$work/www/11k"
fill 0 bench/proxies/origin.conf >"$work/origin.conf"
nginx -c "$work/origin.conf" &
pids+=($!)

wait_ready() {
  for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:$1/1k" && return 0
    sleep 0.2
  done
  echo "$2 did not start" >&2
  return 1
}
wait_ready "$origin_port" origin

# wrk prints latencies as 812.00us, 1.20ms or 1.01s: in ms.
to_ms() { awk '{ v=$1; if (v ~ /us$/) { sub(/us$/, "", v); v/=1000 } else if (v ~ /ms$/) { sub(/ms$/, "", v) } else if (v ~ /s$/) { sub(/s$/, "", v); v*=1000 }; printf "%.3f", v }' <<<"$1"; }
wrk_field() { awk -v k="$1" '$1 == k {print $2}' <<<"$2"; }
wrk_errors() { awk '/Non-2xx|Socket errors/ {print}' <<<"$1" | tr -s ' ' | tr ' ' '_' | paste -sd';' -; }

# CPU time (clock ticks, user + system, all threads) of a process and its
# descendants: the proxy's own cost, whatever the load generator takes.
cpu_ticks() {
  local all=($1) next=($1) p kids
  while [ ${#next[@]} -gt 0 ]; do
    kids=()
    for p in "${next[@]}"; do
      kids+=($(cat /proc/"$p"/task/*/children 2>/dev/null || true))
    done
    all+=("${kids[@]}")
    next=("${kids[@]}")
  done
  for p in "${all[@]}"; do awk '{print $14 + $15}' /proc/"$p"/stat 2>/dev/null || true; done |
    awk '{s += $1} END {print s + 0}'
}
hz=$(getconf CLK_TCK)

# The generator's headroom: the same wrk against a server doing less per
# request than any proxy.
static_port=$(free_port)
fill "$static_port" bench/proxies/static.conf >"$work/static.conf"
nginx -c "$work/static.conf" &
pids+=($!)
wait_ready "$static_port" static
declare -A headroom
for obj in 1k 11k; do
  out=$(wrk -t2 -c"$conns" -d"${secs}s" "http://127.0.0.1:$static_port/$obj")
  headroom[$obj]=$(wrk_field Requests/sec: "$out")
done
kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true; unset 'pids[-1]'

# Phase 1, appends "name obj rate p50 p99 origin-requests cpu-us-per-reply
# errors" lines to $work/ceiling.
ceiling() { # name port pid
  local name=$1 port=$2 pid=$3
  for obj in 1k 11k; do
    curl -s -o /dev/null "http://127.0.0.1:$port/$obj"
    curl -s -o /dev/null "http://127.0.0.1:$port/$obj"
    local before after t0 t1 out rate n
    before=$(wc -l <"$work/origin-access.log")
    t0=$(cpu_ticks "$pid")
    out=$(wrk -t2 -c"$conns" -d"${secs}s" --latency "http://127.0.0.1:$port/$obj")
    t1=$(cpu_ticks "$pid")
    after=$(wc -l <"$work/origin-access.log")
    rate=$(wrk_field Requests/sec: "$out")
    n=$(awk '/requests in/ {print $1}' <<<"$out")
    echo "${name// /\~} $obj $rate $(to_ms "$(wrk_field 50% "$out")") $(to_ms "$(wrk_field 99% "$out")") \
$((after - before)) $(awk -v t=$((t1 - t0)) -v hz="$hz" -v n="$n" 'BEGIN {printf "%.2f", t / hz * 1e6 / n}') \
$(e=$(wrk_errors "$out"); echo "${e:--}")" >>"$work/ceiling"
  done
}

# Phase 2, at $rate_1k / $rate_11k: "name obj planned achieved p50 p99 errors" to $work/open.
open_loop() { # name port pid
  local name=$1 port=$2
  for obj in 1k 11k; do
    curl -s -o /dev/null "http://127.0.0.1:$port/$obj"
    local rate=${planned[$obj]} json
    json=$(oha --no-tui --output-format json -z "${secs}s" -c "$conns" -q "$rate" --latency-correction \
      "http://127.0.0.1:$port/$obj" 2>/dev/null || true)
    jq -r --arg n "${name// /\~}" --arg o "$obj" --arg r "$rate" \
      '[$n, $o, $r, (.summary.requestsPerSec|floor), (.latencyPercentiles.p50*1000), (.latencyPercentiles.p99*1000),
        ((.statusCodeDistribution | to_entries | map(select(.key != "200") | .value) | add) // 0)
        + ((.errorDistribution | to_entries | map(.value) | add) // 0)] | @tsv' <<<"$json" |
      tr '\t' ' ' >>"$work/open" || true
  done
}

# Phase 3: "name obj p50-ms misses" to $work/miss; one client, new URLs.
misses() { # name port pid
  local name=$1 port=$2
  for obj in 1k 11k; do
    local out
    out=$(wrk -t1 -c1 -d"${secs}s" --latency -s bench/proxies/miss.lua "http://127.0.0.1:$port/$obj" || true)
    echo "${name// /\~} $obj $(to_ms "$(wrk_field 50% "$out")") $(awk '/requests in/ {print $1}' <<<"$out")" >>"$work/miss"
  done
}

stop_last() {
  kill "${pids[-1]}" 2>/dev/null || true
  wait "${pids[-1]}" 2>/dev/null || true
  unset 'pids[-1]'
  sleep 0.5
}

# One worker: with the load generator on the same two cores, one worker
# served more hits, at less CPU per hit and a lower open-loop p99, than two
# (bench/RESULTS.md, issue 22).
workers=${CACHEOFF_WORKERS:-1}
run_cacheoff() { # phase
  local port; port=$(free_port)
  "$bin" proxy --listen "127.0.0.1:$port" --origin "127.0.0.1:$origin_port" --mem 256MB --workers "$workers" >"$work/cacheoff.txt" &
  pids+=($!)
  wait_ready "$port" cacheoff
  "$1" "cacheoff $("$bin" --version | cut -d' ' -f2)" "$port" "${pids[-1]}"
  stop_last
}

run_base() {
  local port; port=$(free_port)
  "$CACHEOFF_BASE" proxy --listen "127.0.0.1:$port" --origin "127.0.0.1:$origin_port" --mem 256MB --workers "$workers" >"$work/base.txt" &
  pids+=($!)
  wait_ready "$port" base
  "$1" "base-cacheoff" "$port" "${pids[-1]}"
  stop_last
}

run_squid() {
  local port; port=$(free_port)
  fill "$port" bench/proxies/squid.conf >"$work/squid.conf"
  squid -N -f "$work/squid.conf" >"$work/squid.txt" 2>&1 &
  pids+=($!)
  wait_ready "$port" squid
  "$1" "squid $(squid -v | head -1 | awk '{print $4}')" "$port" "${pids[-1]}"
  stop_last
}

run_varnish() {
  local port; port=$(free_port)
  fill "$port" bench/proxies/varnish.vcl >"$work/varnish.vcl"
  rm -rf "$work/varnish"
  varnishd -F -a "127.0.0.1:$port" -f "$work/varnish.vcl" -s malloc,256m -n "$work/varnish" >"$work/varnish.txt" 2>&1 &
  pids+=($!)
  wait_ready "$port" varnish
  "$1" "varnish $(varnishd -V 2>&1 | head -1 | sed 's/.*varnish-\([0-9.]*\).*/\1/')" "$port" "${pids[-1]}"
  stop_last
}

run_nginx() {
  local port; port=$(free_port)
  fill "$port" bench/proxies/nginx-cache.conf >"$work/nginx-cache.conf"
  rm -rf "$work/nginx-cache"
  nginx -c "$work/nginx-cache.conf" &
  pids+=($!)
  wait_ready "$port" nginx-cache
  "$1" "nginx $(nginx -v 2>&1 | cut -d/ -f2) proxy_cache" "$port" "${pids[-1]}"
  stop_last
}

run_trafficserver() {
  local port; port=$(free_port)
  rm -rf "$work/ats"
  mkdir -p "$work/ats/"{etc,share,var,run,log,cache}
  cp -r /etc/trafficserver/. "$work/ats/etc/"
  fill "$port" bench/proxies/ats-records.config >>"$work/ats/etc/records.config"
  fill "$port" bench/proxies/ats-remap.config >"$work/ats/etc/remap.config"
  echo "$work/ats/cache 256M" >"$work/ats/etc/storage.config"
  fill "$port" bench/proxies/ats-runroot.yaml >"$work/ats/runroot.yaml"
  traffic_server --run-root="$work/ats/runroot.yaml" >"$work/ats.txt" 2>&1 &
  pids+=($!)
  wait_ready "$port" trafficserver
  "$1" "trafficserver $(traffic_server -V 2>&1 | grep -o 'Server [0-9.]*' | head -1 | cut -d' ' -f2)" "$port" "${pids[-1]}"
  stop_last
}

# The median of column $3 among the rounds of proxy $1 and object $2 in file $4.
median() { awk -v p="$1" -v o="$2" '$1 ~ "^"p && $2 == o {print $'"$3"'}' "$4" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

for round in $(seq "$rounds"); do
  for p in $only; do "run_$p" ceiling; done
done

# The open-loop rate: a share of nginx's ceiling, or of the slowest
# proxy's if nginx is not in the list.
declare -A planned
for obj in 1k 11k; do
  if want nginx; then base=$(median nginx "$obj" 3 "$work/ceiling"); else base=$(awk -v o="$obj" '$2 == o {print $3}' "$work/ceiling" | sort -n | head -1); fi
  planned[$obj]=$(awk -v b="$base" -v s="$share" 'BEGIN {printf "%d", b * s / 100}')
done
for round in $(seq "$rounds"); do
  for p in $only; do "run_$p" open_loop; done
done

origin_miss() { misses "origin nginx" "$origin_port" 0; }
for round in $(seq "$rounds"); do
  origin_miss
  for p in $only; do "run_$p" misses; done
done

echo "machine: $(nproc) cores, $(uname -r); $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2); $(oha --version); ${secs}s per measurement, median of $rounds rounds"
echo "generator headroom: wrk -t2 -c$conns -> nginx static (open file cache): 1k $(printf %.0f "${headroom[1k]}")/s, 11k $(printf %.0f "${headroom[11k]}")/s"
echo
echo "1. ceiling: wrk -t2 -c$conns, closed loop (cpu: the proxy's own CPU time per reply; per core: replies per CPU-second of the proxy)"
printf '%-26s %4s %10s %7s %8s %10s %7s %8s %8s %7s  %s\n' proxy obj "replies/s" "xnginx" "cpu us" "per core" "xnginx" "p50 ms" "p99 ms" origin "rates of the rounds"
for p in $only; do
  for obj in 1k 11k; do
    nr=$(median nginx "$obj" 3 "$work/ceiling" 2>/dev/null || true)
    nc=$(median nginx "$obj" 7 "$work/ceiling" 2>/dev/null || true)
    awk -v obj="$obj" -v p="$p" '$1 ~ "^"p && $2 == obj' "$work/ceiling" | sort -k3 -n | awk -v nr="${nr:-0}" -v nc="${nc:-0}" '
      { name[NR]=$1; rate[NR]=$3; p50[NR]=$4; p99[NR]=$5; org+=$6; cpu[NR]=$7; all = all sprintf("%.0f ", $3); if ($8 != "-") errs = errs $8 " " }
      END { m = int((NR + 1) / 2); gsub("~", " ", name[m]);
            percore = cpu[m] > 0 ? 1e6 / cpu[m] : 0
            printf "%-26s %4s %10.0f %7s %8.2f %10.0f %7s %8.3f %8.3f %7d  %s%s\n", name[m], "'"$obj"'", rate[m],
              (nr > 0 ? sprintf("%.2f", rate[m] / nr) : "-"), cpu[m], percore,
              (nc > 0 && cpu[m] > 0 ? sprintf("%.2f", nc / cpu[m]) : "-"), p50[m], p99[m], org, all, errs }'
  done
done
echo "(p50/p99: closed loop at the ceiling, of the median round; origin: requests that reached the origin while measuring, all rounds: 0 means all hits)"
echo
echo "2. the same load for all: oha -c$conns -q RATE --latency-correction, RATE = ${share}% of nginx's median ceiling (1k ${planned[1k]}/s, 11k ${planned[11k]}/s)"
printf '%-26s %4s %9s %9s %8s %8s %7s\n' proxy obj planned/s achieved p50-ms p99-ms errors
for p in $only; do
  for obj in 1k 11k; do
    awk -v obj="$obj" -v p="$p" '$1 ~ "^"p && $2 == obj' "$work/open" | sort -k6 -g | awk '
      { name[NR]=$1; r[NR]=$3; a[NR]=$4; p50[NR]=$5; p99[NR]=$6; e+=$7 }
      END { m = int((NR + 1) / 2); gsub("~", " ", name[m]);
            printf "%-26s %4s %9d %9d %8.3f %8.3f %7d\n", name[m], "'"$obj"'", r[m], a[m], p50[m], p99[m], e }'
  done
done
echo "(median round by p99; errors: all rounds)"
echo
echo "3. miss cost: wrk -t1 -c1, every request a new URL; cost = the proxy's median miss minus the origin's median"
printf '%-26s %4s %10s %10s %9s %7s\n' proxy obj "p50 ms" "cost ms" misses xnginx
for obj in 1k 11k; do
  o=$(median origin "$obj" 3 "$work/miss")
  n=$(median nginx "$obj" 3 "$work/miss" 2>/dev/null || true)
  for p in origin $only; do
    m=$(median "$p" "$obj" 3 "$work/miss")
    name=$(awk -v p="$p" '$1 ~ "^"p {print $1; exit}' "$work/miss" | tr '~' ' ')
    cnt=$(median "$p" "$obj" 4 "$work/miss")
    awk -v name="$name" -v obj="$obj" -v m="$m" -v o="$o" -v n="${n:-0}" -v c="$cnt" 'BEGIN {
      cost = m - o; nc = n - o
      printf "%-26s %4s %10.3f %10.3f %9d %7s\n", name, obj, m, cost, c, ((nc > 0 && name !~ /^origin/) ? sprintf("%.2f", cost / nc) : "-") }'
  done
done
