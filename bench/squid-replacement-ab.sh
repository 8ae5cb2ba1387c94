#!/usr/bin/env bash
# Squid's cache replacement policies A/B, as the iMimic paper's table but
# with intervals: `cache_replacement_policy lru` (A) against `heap LFUDA`
# (B) on compressed PolyMix-3, rounds in ABBA order (`cacheoff ab`), each
# Squid watched by its pid. Both Squids run the whole time (each round's
# new seed makes its requests new to both).
#   bench/squid-replacement-ab.sh [ROUNDS] [PLATEAU] [RATE] [CACHE]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-4}
PLATEAU=${2:-20s}
RATE=${3:-300/s}
CACHE=${4:-32MB}
command -v squid >/dev/null || ops/install-products.sh
cargo build --release -q
BIN=$PWD/target/release/cacheoff
work=$(mktemp -d /tmp/squid-ab-XXXX)
chmod 777 "$work"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT

# A Squid with a small memory cache and a disk cache a quarter of the
# workload's cache size, so that replacement decides what stays.
start() { # NAME POLICY PORT
  local d=$work/$1
  mkdir -p "$d" && chmod 777 "$d"
  cat > "$d/squid.conf" <<CONF
http_port 127.0.0.1:$3
http_access allow all
cache_mem 4 MB
maximum_object_size_in_memory 512 KB
cache_replacement_policy $2
memory_replacement_policy $2
cache_dir aufs $d/cache 16 16 64
access_log none
cache_log $d/cache.log
pid_filename $d/squid.pid
coredump_dir $d
visible_hostname cacheoff-ab-$1
shutdown_lifetime 1 seconds
max_filedescriptors 16384
CONF
  squid -N -z -f "$d/squid.conf" >/dev/null 2>&1
  squid -N -f "$d/squid.conf" & pids+=($!)
  for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$3) 2>/dev/null && return; sleep 0.1; done
  echo "squid $1 did not start" >&2; exit 2
}
start lru lru 3301
start lfuda "heap LFUDA" 3302
squid -v | head -1
echo "== cacheoff ab polymix-3: A = lru, B = heap LFUDA ($ROUNDS rounds, plateau $PLATEAU, $RATE, cache $CACHE)"
"$BIN" ab polymix-3 --a 127.0.0.1:3301 --b 127.0.0.1:3302 \
  --a-watch "${pids[0]}" --b-watch "${pids[1]}" \
  --rounds "$ROUNDS" --plateau "$PLATEAU" --peak-rate "$RATE" --cache-size "$CACHE" \
  -o "$work/ab"
