#!/usr/bin/env bash
# Hit throughput and latency of the reference proxy (`cacheoff proxy`), two
# builds side by side: the build at OLD_REV and the working tree's. Set up
# as in bench/proxies.sh (one nginx origin from bench/proxies/origin.conf,
# the proxy a reverse proxy in front of it with --workers 2, wrk -t1 with
# keep-alive) and run as in bench/ab.sh: rounds alternate between the
# builds (odd rounds old first, even rounds new first) so both see the same
# machine noise, then the medians and the working tree's build over the
# other's. Three cases, each fetched once as a miss before it is measured:
#   1k       a cached 1 KB object
#   11k      a cached 11 KB object
#   1k+lang  the same 1 KB object, requests carrying Accept-Language: en
#            (the origin sends no Vary, so these are hits on the same
#            entry: what the header-dependent part of the lookup costs)
# The origin's access log shows whether the measured replies were hits.
# Besides replies/s and latency, the proxy's own CPU time per reply (user
# + system, from /proc): with wrk on the same two cores the rate moves
# with the machine, the CPU cost per reply much less.
#
# Usage: bench/proxy-ab.sh OLD_REV [seconds] [connections] [rounds]
#        (defaults: 5 s, 50 connections, 3 rounds)
# The old build goes to OLD_REV's worktree's own target directory (removed
# on exit), or to $AB_OLD_TARGET_DIR if set (kept, so reruns are quicker).
set -euo pipefail
cd "$(dirname "$0")/.."
old_rev=${1:?usage: bench/proxy-ab.sh OLD_REV [seconds] [connections] [rounds]}
secs=${2:-5}
conns=${3:-50}
rounds=${4:-3}
old_hash=$(git rev-parse --short --verify "$old_rev^{commit}")

need=()
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx)
command -v wrk >/dev/null || need+=(wrk)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
PATH=$PATH:/usr/sbin

# The revision being built, taken before the build: others may commit
# while the rounds run.
new_rev="$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo +changes)"
# Builds the working tree (cargo build --release -q) and gives $work, $pid,
# start_proxy and stop_proxy; its EXIT trap is replaced below.
# shellcheck source=bench/lib.sh
. bench/lib.sh
origin_pid=
cleanup() {
  [ -z "$pid" ] || kill "$pid" 2>/dev/null || true
  [ -z "$origin_pid" ] || kill "$origin_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  git worktree remove --force "$work/old" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# Copies, so that other builds in the same target directories cannot swap
# a binary between rounds.
mkdir -p "$work/bin"
cp "${CARGO_TARGET_DIR:-target}/release/cacheoff" "$work/bin/new"

git worktree add -f --detach "$work/old" "$old_rev" >/dev/null
old_target=${AB_OLD_TARGET_DIR:-$work/old/target}
(cd "$work/old" && CARGO_TARGET_DIR=$old_target cargo build --release -q)
cp "$old_target/release/cacheoff" "$work/bin/old"
declare -A bins=([old]="$work/bin/old" [new]="$work/bin/new")

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
origin_port=$(free_port)
# nginx's worker drops root privileges and must still read the objects.
chmod 755 "$work"
mkdir -p "$work/www" "$work/tmp"
head -c 1024 /dev/urandom >"$work/www/1k"
head -c 11264 /dev/urandom >"$work/www/11k"
sed -e "s|@ORIGIN_PORT@|$origin_port|g" -e "s|@DIR@|$work|g" bench/proxies/origin.conf >"$work/origin.conf"
nginx -c "$work/origin.conf" &
origin_pid=$!
for i in $(seq 100); do
  curl -sf -o /dev/null --max-time 2 "http://127.0.0.1:$origin_port/1k" && break
  [ "$i" = 100 ] && { echo "origin did not start: $(cat "$work/origin-error.log" 2>/dev/null)" >&2; exit 1; }
  sleep 0.2
done

# wrk prints latencies as 812.00us, 1.20ms or 1.01s: in ms.
# proc_cpu PID: user + system CPU time of a process, in clock ticks.
proc_cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
to_ms() { awk '{ v=$1; if (v ~ /us$/) { sub(/us$/, "", v); v/=1000 } else if (v ~ /ms$/) { sub(/ms$/, "", v) } else if (v ~ /s$/) { sub(/s$/, "", v); v*=1000 }; printf "%.3f", v }' <<<"$1"; }

objs=(1k 11k 1k+lang)
path_of() { echo "${1%%+*}"; }
headers_of() { if [[ $1 == *+lang ]]; then echo "Accept-Language: en"; fi; }

# measure SIDE ROUND: one proxy of that build, the three cases; appends
# "side round obj rate p50 p99 origin-requests errors" to $work/results.
measure() {
  local side=$1 r=$2 obj url hdr h before after out rate p50 p99 errs cpu0 cpu1 replies cpu_us
  bin=${bins[$side]} # what start_proxy starts
  start_proxy "$work/proxy-$side-$r.txt" --origin "127.0.0.1:$origin_port" --mem 256MB --workers 2
  for obj in "${objs[@]}"; do
    url="http://$addr/$(path_of "$obj")"
    hdr=$(headers_of "$obj")
    h=()
    [ -n "$hdr" ] && h=(-H "$hdr")
    for _ in 1 2; do
      curl -sf -o /dev/null --max-time 10 "${h[@]}" "$url" || { echo "$side: $url ${hdr:+($hdr) }failed before measuring" >&2; exit 1; }
    done
    before=$(wc -l <"$work/origin-access.log")
    cpu0=$(proc_cpu "$pid")
    out=$(timeout $((secs + 60)) wrk -t1 -c"$conns" -d"${secs}s" --latency "${h[@]}" "$url")
    after=$(wc -l <"$work/origin-access.log")
    cpu1=$(proc_cpu "$pid")
    replies=$(awk '/requests in/ {print $1}' <<<"$out")
    # The proxy's own CPU (user + system) per reply: steadier than the
    # rate when wrk and the proxy share the cores.
    cpu_us=$(awk -v c=$((cpu1 - cpu0)) -v t="$(getconf CLK_TCK)" -v n="${replies:-0}" 'BEGIN {printf "%.2f", (n > 0 ? c * 1e6 / t / n : 0)}')
    rate=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
    p50=$(to_ms "$(awk '$1 == "50%" {print $2}' <<<"$out")")
    p99=$(to_ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")
    errs=$(awk '/Non-2xx|Socket errors/ {print}' <<<"$out" | tr -s ' ' | tr ' ' '_' | paste -sd';' -)
    echo "$side $r $obj ${rate:-0} $p50 $p99 $((after - before)) ${errs:--} $cpu_us" >>"$work/results"
    printf 'round %d %-3s %-8s %9.0f/s  p50 %7.3f ms  p99 %7.3f ms  proxy %6.2f CPU-us/reply  origin %d%s\n' \
      "$r" "$side" "$obj" "${rate:-0}" "$p50" "$p99" "$cpu_us" "$((after - before))" "${errs:+  errors ${errs//_/ }}"
  done
  stop_proxy >/dev/null
}

echo "machine: $(nproc) cores, $(uname -r); old $old_hash, new $new_rev; $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2) -t1 -c$conns, ${secs}s per case, $rounds rounds"
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then order=(old new); else order=(new old); fi
  for side in "${order[@]}"; do
    measure "$side" "$r"
  done
done

col() { awk -v s="$1" -v o="$2" -v c="$3" '$1 == s && $3 == o {print $c}' "$work/results"; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo
echo "machine: $(nproc) cores, $(uname -r); old $old_hash, new $new_rev"
for obj in "${objs[@]}"; do
  ro=$(col old "$obj" 4 | median); rn=$(col new "$obj" 4 | median)
  ao=$(col old "$obj" 5 | median); an=$(col new "$obj" 5 | median)
  qo=$(col old "$obj" 6 | median); qn=$(col new "$obj" 6 | median)
  co=$(col old "$obj" 9 | median); cn=$(col new "$obj" 9 | median)
  printf '%-9s median old %8.0f/s  new %8.0f/s  new/old %.3f   p50 old %.3f ms new %.3f ms   p99 old %.3f ms new %.3f ms   CPU-us/reply old %.2f new %.2f new/old %.3f\n' \
    "$obj" "$ro" "$rn" "$(awk -v n="$rn" -v o="$ro" 'BEGIN {print (o > 0 ? n / o : 0)}')" "$ao" "$an" "$qo" "$qn" \
    "$co" "$cn" "$(awk -v n="$cn" -v o="$co" 'BEGIN {print (o > 0 ? n / o : 0)}')"
done
origin_old=$(awk '$1 == "old" {s += $7} END {print s + 0}' "$work/results")
origin_new=$(awk '$1 == "new" {s += $7} END {print s + 0}' "$work/results")
errors=$(awk '$8 != "-" {n++} END {print n + 0}' "$work/results")
echo "origin requests while measuring: old $origin_old, new $origin_new (0: every measured reply was a hit); runs with errors: $errors"
echo "(medians of each figure over the rounds; p50/p99 from wrk --latency)"
