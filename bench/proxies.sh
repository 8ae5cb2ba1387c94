#!/usr/bin/env bash
# Hit throughput and latency of the reference proxy beside Squid, Varnish,
# nginx (proxy_cache) and Apache Traffic Server, all from Debian, each a
# reverse proxy in front of one nginx origin, all measured with the same
# load generator (wrk: keep-alive, closed loop, one thread) on the same
# cores: replies/s and p50/p99 latency for a cached 1 KB and a cached 11 KB
# object. Configurations are in bench/proxies/. Each object is fetched once
# before it is measured (the miss); the origin's access log then shows
# whether the measured replies were hits. The proxies take turns for
# several rounds and the median of each is printed: on a small machine
# one load generator is near its own limit and single runs vary by ~5%.
#
# Usage: bench/proxies.sh [seconds] [connections] [rounds] [proxies...]
#        (default 5 50 3 cacheoff squid varnish nginx trafficserver)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
conns=${2:-50}
rounds=${3:-3}
shift $(($# < 3 ? $# : 3))
only=" ${*:-cacheoff squid varnish nginx trafficserver} "
want() { [[ $only == *" $1 "* ]]; }

need=()
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx)
command -v wrk >/dev/null || need+=(wrk)
command -v curl >/dev/null || need+=(curl)
command -v squid >/dev/null || [ -x /usr/sbin/squid ] || need+=(squid)
command -v varnishd >/dev/null || [ -x /usr/sbin/varnishd ] || need+=(varnish)
command -v traffic_server >/dev/null || need+=(trafficserver)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
PATH=$PATH:/usr/sbin

cargo build --release -q
bin=$PWD/target/release/cacheoff
work=$(mktemp -d)
# Squid and Varnish drop root privileges and must still reach their files.
chmod 755 "$work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
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

# Appends "name obj rate p50 p99 origin-requests errors" lines to $work/results.
measure() { # name port
  local name=$1 port=$2
  for obj in 1k 11k; do
    curl -s -o /dev/null "http://127.0.0.1:$port/$obj"
    curl -s -o /dev/null "http://127.0.0.1:$port/$obj"
    local before after out rate p50 p99 errs
    before=$(wc -l <"$work/origin-access.log")
    out=$(wrk -t1 -c"$conns" -d"${secs}s" --latency "http://127.0.0.1:$port/$obj")
    after=$(wc -l <"$work/origin-access.log")
    rate=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
    p50=$(to_ms "$(awk '$1 == "50%" {print $2}' <<<"$out")")
    p99=$(to_ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")
    errs=$(awk '/Non-2xx|Socket errors/ {print}' <<<"$out" | tr -s ' ' | tr ' ' '_' | paste -sd';' -)
    echo "${name// /~} $obj $rate $p50 $p99 $((after - before)) ${errs:--}" >>"$work/results"
  done
}

stop_last() {
  kill "${pids[-1]}" 2>/dev/null || true
  wait "${pids[-1]}" 2>/dev/null || true
  unset 'pids[-1]'
  sleep 0.5
}

run_cacheoff() {
  local port; port=$(free_port)
  "$bin" proxy --listen "127.0.0.1:$port" --origin "127.0.0.1:$origin_port" --mem 256MB --workers 2 >"$work/cacheoff.txt" &
  pids+=($!)
  wait_ready "$port" cacheoff
  measure "cacheoff $("$bin" --version | cut -d' ' -f2)" "$port"
  stop_last
}

run_squid() {
  local port; port=$(free_port)
  fill "$port" bench/proxies/squid.conf >"$work/squid.conf"
  squid -N -f "$work/squid.conf" >"$work/squid.txt" 2>&1 &
  pids+=($!)
  wait_ready "$port" squid
  measure "squid $(squid -v | head -1 | awk '{print $4}')" "$port"
  stop_last
}

run_varnish() {
  local port; port=$(free_port)
  fill "$port" bench/proxies/varnish.vcl >"$work/varnish.vcl"
  rm -rf "$work/varnish"
  varnishd -F -a "127.0.0.1:$port" -f "$work/varnish.vcl" -s malloc,256m -n "$work/varnish" >"$work/varnish.txt" 2>&1 &
  pids+=($!)
  wait_ready "$port" varnish
  measure "varnish $(varnishd -V 2>&1 | head -1 | sed 's/.*varnish-\([0-9.]*\).*/\1/')" "$port"
  stop_last
}

run_nginx() {
  local port; port=$(free_port)
  fill "$port" bench/proxies/nginx-cache.conf >"$work/nginx-cache.conf"
  rm -rf "$work/nginx-cache"
  nginx -c "$work/nginx-cache.conf" &
  pids+=($!)
  wait_ready "$port" nginx-cache
  measure "nginx $(nginx -v 2>&1 | cut -d/ -f2) proxy_cache" "$port"
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
  measure "trafficserver $(traffic_server -V 2>&1 | grep -o 'Server [0-9.]*' | head -1 | cut -d' ' -f2)" "$port"
  stop_last
}

for round in $(seq "$rounds"); do
  for p in $only; do
    "run_$p"
  done
done

echo "machine: $(nproc) cores, $(uname -r); $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2), -t1 -c$conns, ${secs}s per object, median of $rounds rounds"
printf '%-26s %4s %12s %9s %9s %8s  %s\n' proxy obj "replies/s" "p50 ms" "p99 ms" "origin" "rates of the rounds"
for p in $only; do
  for obj in 1k 11k; do
    awk -v obj="$obj" -v p="$p" '$1 ~ "^"p && $2 == obj' "$work/results" | sort -k3 -n | awk -v n="$rounds" '
      { name[NR]=$1; rate[NR]=$3; p50[NR]=$4; p99[NR]=$5; org+=$6; all = all sprintf("%.0f ", $3); if ($7 != "-") errs = errs $7 " " }
      END { m = int((NR + 1) / 2); gsub("~", " ", name[m]);
            printf "%-26s %4s %12.0f %9.3f %9.3f %8d  %s%s\n", name[m], "'"$obj"'", rate[m], p50[m], p99[m], org, all, errs }'
  done
done
echo "(p50/p99: of the median round; origin: requests that reached the origin while measuring, all rounds; 0 means every measured reply was a hit)"
