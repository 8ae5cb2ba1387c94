#!/usr/bin/env bash
# HTTP/2 over TLS: cacheoff's closed-loop rate against h2load (Debian's
# nghttp2-client) on the same nginx (HTTPS + HTTP/2 surrogate with
# proxy_cache, bench/nginx-h2.conf), both 100 connections with 10 streams
# each, both answered from nginx's cache; then TLS handshakes per second,
# a new connection (full handshake, no resumption) per request, both
# through the same nginx. Goal (issue "Today's Web"): cacheoff >= 70% of
# h2load.
#
# Usage: bench/h2load.sh [SECONDS]   (each measurement; default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
need=()
command -v h2load >/dev/null || need+=(nghttp2-client)
command -v nginx >/dev/null || need+=(nginx)
command -v jq >/dev/null || need+=(jq)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
cargo build --release -q
bin=$PWD/target/release/cacheoff
work=$(mktemp -d)
chmod 755 "$work"   # nginx's workers (nobody) write its cache
mkdir -p "$work/tmp" "$work/cache"
trap 'kill $(cat "$work/nginx.pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$work"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
origin_port=$(free_port)
"$bin" tls "$work/tls" >/dev/null
chmod -R a+rX "$work/tls"
sed -e "s|@PORT@|$port|g" -e "s|@DIR@|$work|g" -e "s|@ORIGIN@|127.2.0.1:$origin_port|g" \
  bench/nginx-h2.conf > "$work/nginx.conf"
nginx -c "$work/nginx.conf" &
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done

common=(--reverse "https://127.0.0.1:$port" --server-port "$origin_port" --tls-dir "$work/tls" -q)

# --- cacheoff, closed loop, HTTP/2: 100 robots x 10 streams -------------
# H2LOAD_PERF=FILE records a CPU profile of this run (perf record -g).
perf_wrap=()
[ -n "${H2LOAD_PERF:-}" ] && perf_wrap=(perf record -F 499 ${H2LOAD_PERF_CG:--g} -o "$H2LOAD_PERF" --)
# CPU seconds (user + system) of each generator, per request it made.
cpu_time=(/usr/bin/time -f '%U %S' -o "$work/cacheoff.cpu")
[ -n "${H2LOAD_PERF:-}" ] && cpu_time=()
# H2LOAD_STAT=1: syscalls and context switches of each generator, per
# request (perf stat).
stat_events=task-clock,context-switches,syscalls:sys_enter_write,syscalls:sys_enter_writev,syscalls:sys_enter_sendto,syscalls:sys_enter_sendmsg,syscalls:sys_enter_read,syscalls:sys_enter_recvfrom,syscalls:sys_enter_epoll_wait
stat_wrap() { [ -n "${H2LOAD_STAT:-}" ] && echo perf stat -x, -e "$stat_events" -o "$work/$1.stat" --; }
"${cpu_time[@]}" "${perf_wrap[@]}" $(stat_wrap cacheoff) "$bin" run bench/h2load.toml "${common[@]}" --http 2 --duration "${secs}s" -o "$work/h2" >/dev/null
cx=$(jq -r '.phases[] | select(.name=="meas") | .rate_xps' "$work/h2/summary.json")
cerr=$(jq -r '.total.errors | "\(.total) \(.by_kind | tostring)"' "$work/h2/summary.json")
chit=$(jq -r '.phases[] | select(.name=="meas") | .dhr.measured' "$work/h2/summary.json")
crefused=$(jq -r '.total.counts.h2_refused' "$work/h2/summary.json")
[ "$crefused" = 0 ] || { echo "nginx did not speak HTTP/2 to cacheoff" >&2; exit 1; }

# --- h2load on the same nginx: one URL of the run, cached ---------------
kill -USR1 "$(cat "$work/nginx.pid")"; sleep 0.5   # flush the access log
url=$(awk '/^\// && !/cacheoff-preflight/ {print; exit}' "$work/access.log")
[ -n "$url" ] || { echo "no URL in nginx's log" >&2; exit 1; }
target="https://127.0.0.1:$port$url"
code=$(curl -sk -o /dev/null -w '%{http_code}' --http2 "$target")
[ "$code" = 200 ] || { echo "nginx answers $code for $url" >&2; exit 1; }
h2_out=$(/usr/bin/time -f '%U %S' -o "$work/h2load.cpu" $(stat_wrap h2load) h2load -D "$secs" -c 100 -m 10 -t 2 "$target" 2>&1)
hx=$(awk '/^finished in/ {gsub(",",""); print $4}' <<<"$h2_out")
hfail=$(awk '/^requests:/ {print $10 + $12}' <<<"$h2_out")
proto=$(awk -F': ' '/Application protocol/ {print $2}' <<<"$h2_out")
[ "$proto" = h2 ] || { echo "h2load did not speak h2: $h2_out" >&2; exit 1; }

# --- TLS handshakes per second: a new connection per request ------------
# cacheoff: every connection carries one transaction (conn_reuse 1), no
# session resumed; h2load: as many clients as requests, one each.
sed -e '0,/^name = .*/s//name = "handshakes"/' \
  -e 's/^max_conns = 10$/max_conns = 1\nconn_reuse = "const(1)"/' bench/h2load.toml > "$work/handshakes.toml"
"$bin" run "$work/handshakes.toml" "${common[@]}" --http 2 --tls-resume off --duration "${secs}s" -o "$work/hs" >/dev/null
hs_meas=$(jq -r '.phases[] | select(.name=="meas") | "\(.counts.tls_handshakes / .duration_s) \(.errors.total) \(.counts.tls_resumed)"' "$work/hs/summary.json")
read -r chs chs_err chs_resumed <<<"$hs_meas"
n=$(awk -v r="$chs" -v s="$secs" 'BEGIN { n = int(r * s); if (n < 2000) n = 2000; if (n > 10000) n = 10000; print n }')
hs_out=$(h2load -n "$n" -c "$n" -m 1 -t 2 "$target" 2>&1 || true)
hhs=$(awk '/^finished in/ {gsub(",",""); print $4}' <<<"$hs_out")

# Microseconds of CPU per request: cacheoff's over all its transactions
# (warm-up included), h2load's over the requests it finished.
cxacts=$(jq -r '.total.xacts' "$work/h2/summary.json")
hxacts=$(awk '/^requests:/ {print $8}' <<<"$h2_out")
us_per() { [ -s "$1" ] && awk -v n="$2" '{ if (n > 0) printf "%.1f", ($1 + $2) * 1e6 / n; else print "?" }' "$1" || echo "?"; }
ccpu=$(us_per "$work/cacheoff.cpu" "$cxacts")
hcpu=$(us_per "$work/h2load.cpu" "$hxacts")

pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", (b > 0 ? 100 * a / b : 0) }'; }
echo "machine: $(nproc) cores, $(uname -r); $("$bin" --version) ($(git rev-parse --short HEAD 2>/dev/null || echo '?')); $(h2load --version 2>&1 | head -1); nginx $(nginx -v 2>&1 | cut -d/ -f2)"
printf 'h2load -> nginx (HTTPS, h2, 100 conns x 10 streams, 1 URL cached): %10.1f req/s (failed %s)\n' "$hx" "$hfail"
printf 'cacheoff closed-loop -> nginx (same shape, hits %s%%):             %10.1f req/s (%s%% of h2load; errors %s)\n' \
  "$chit" "$cx" "$(pct "$cx" "$hx")" "$cerr"
printf 'CPU per request (user + system): h2load %s us, cacheoff %s us\n' "$hcpu" "$ccpu"
if [ -n "${H2LOAD_STAT:-}" ]; then
  for g in h2load cacheoff; do
    n=$([ "$g" = h2load ] && echo "$hxacts" || echo "$cxacts")
    echo "$g, per request:"
    awk -F, -v n="$n" '$3 != "" && $1 ~ /^[0-9.]+$/ { sub("syscalls:sys_enter_", "", $3); printf "  %-18s %8.3f\n", $3, $1 / n }' "$work/$g.stat"
  done
fi
printf 'h2load TLS handshakes (a connection per request):                 %10.1f /s\n' "$hhs"
printf 'cacheoff TLS handshakes (conn_reuse 1, no resumption):            %10.1f /s (%s%% of h2load; errors %s, resumed %s)\n' \
  "$chs" "$(pct "$chs" "$hhs")" "$chs_err" "$chs_resumed"
