#!/usr/bin/env bash
# Response time against offered load for two open-loop load generators,
# cacheoff (`run --rate R/s`) and oha (`-q R --latency-correction`), both
# driving the same nginx on loopback with 100 keep-alive connections, so a
# reader sees where each one's curve bends (its knee).
#
# nginx serves a static 1 KB file to all three, as bench/max-rate.sh's
# peer does. cacheoff checks every reply (its body, and an echo of a
# transaction id that says whether the origin or a cache answered), so the
# files are the objects of cacheoff's own origin servers, as a cache would
# replay them: a short cacheoff run fills an nginx proxy_cache (a second
# server block) with the one 1 KB object of each of its two origin servers;
# their bodies become the static files, one per origin name (Host), served
# for any path (URLs name a per-run nonce; the object and its body do not
# change), and their echo header is added to every reply, so each request
# of a later run is a hit to cacheoff. The ceiling is wrk -t2 -c100 on one
# of these files; the steps are shares of it.
#
# Usage: bench/latency-curve.sh [seconds-per-step]   (default 10: 8-9 min)
# Environment: CURVE_SHARES (default "10 20 ... 110"), CURVE_OUT (default
# bench/curves), CURVE_CEILING (skip wrk and use this rate: for trying the
# script out, never for recorded figures), CACHEOFF_BIN (below).
# Writes $CURVE_OUT/latency-load.{tsv,json,svg} and prints the table.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
shares=${CURVE_SHARES:-10 20 30 40 50 60 70 80 85 90 95 100 110}
out=${CURVE_OUT:-bench/curves}
conns=100           # wrk -c, oha -c, and cacheoff's robots x max-conns
robots=50
per_robot=2

need=()
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx)
command -v wrk >/dev/null || need+=(wrk)
command -v jq >/dev/null || need+=(jq)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
oha=$(command -v oha || echo "$HOME/.cargo/bin/oha")
[ -x "$oha" ] || nice -n 19 cargo install --locked oha
# oha's JSON flag changed names across versions.
if "$oha" --help | grep -q -- '--output-format'; then oha_json=(--output-format json); else oha_json=(--json); fi
# Without it oha counts the requests in flight at the deadline as errors.
oha_wait=()
"$oha" --help | grep -q -- '--wait-ongoing-requests-after-deadline' && oha_wait=(--wait-ongoing-requests-after-deadline)

# CACHEOFF_BIN: a binary built beforehand, so that a run under the bench
# lock does not compile (in a git worktree build.rs always reruns).
if [ -n "${CACHEOFF_BIN:-}" ]; then
  bin=$CACHEOFF_BIN
else
  cargo build --release -q
  bin=${CARGO_TARGET_DIR:-target}/release/cacheoff
fi
work=$(mktemp -d)
trap 'kill $(cat "$work/nginx.pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$work"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
oport=$(free_port)

# One cachable 1 KB object per origin server, revisited by every request
# after the first. No Last-Modified: an object's dates are counted from its
# run's start, so a copy cached by an earlier run would carry an older one
# than the next run's origin and be judged stale; Expires stays ~2 years
# ahead.
cat >"$work/curve.toml" <<'EOF'
name = "curve"
description = "one cachable 1 KB object per origin server, every request after the first a revisit (all hits through a cache)"
[[content]]
name = "object"
share = 1.0
size = "const(1KB)"
cachable = 1.0
life_cycle = { length = "const(730day)", variance = 0.0, with_lmt = 0.0, modified_ago = "1day" }
[popularity]
recurrence = 1.0
[[phases]]
name = "warm"
duration = "2s"
[[phases]]
name = "meas"
duration = "10s"
measured = true
EOF

# As bench/nginx.conf: the static server on $port (a file per Host, and
# the echo of the reply it was copied from), the priming cache on
# $pport. Workers run as this user (the default, nobody, cannot enter the
# mktemp directory: every reply would be a 403).
pport=$(free_port)
mkdir -p "$work/tmp" "$work/cache" "$work/www"
echo "map \$host \$curve_echo { default \"\"; }" >"$work/echo.conf"
cat >"$work/nginx.conf" <<EOF
worker_processes 2;
user $(id -un) $(id -gn);
pid $work/nginx.pid;
error_log $work/error.log warn;
daemon off;
events {
    worker_connections 4096;
}
http {
    access_log off;
    sendfile on;
    tcp_nodelay on;
    keepalive_timeout 65;
    keepalive_requests 1000000;
    client_body_temp_path $work/tmp;
    proxy_temp_path $work/tmp;
    fastcgi_temp_path $work/tmp;
    uwsgi_temp_path $work/tmp;
    scgi_temp_path $work/tmp;
    include $work/echo.conf;
    server {
        listen 127.0.0.1:$port backlog=4096;
        root $work/www;
        add_header X-Cacheoff-Echo \$curve_echo;
        location / {
            rewrite ^ /\$host break;
        }
    }
    proxy_cache_path $work/cache levels=1:2 keys_zone=curve:8m max_size=64m inactive=1d use_temp_path=off;
    map \$host \$curve_origin {
        default 127.0.0.1:9;
        s1.bench.tst 127.2.0.1:$oport;
        s2.bench.tst 127.2.0.2:$oport;
    }
    server {
        listen 127.0.0.1:$pport;
        location / {
            proxy_pass http://\$curve_origin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_cache curve;
            proxy_cache_key \$host\$request_uri;
            proxy_cache_valid 200 1d;
            proxy_cache_lock on;
        }
    }
}
EOF
"$nginx_bin" -c "$work/nginx.conf" 2>"$work/nginx.err" &
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done

# meas FIELD DIR: a figure of a cacheoff run's measured phase.
meas() { jq -r ".phases[] | select(.name==\"meas\") | $1" "$2/summary.json"; }
# run_cacheoff RATE DIR [DURATION [PORT]]
run_cacheoff() {
  "$bin" run "$work/curve.toml" --reverse "127.0.0.1:${4:-$port}" --server-port "$oport" --servers 2 \
    --robots "$robots" --max-conns "$per_robot" --rate "$1/s" --warmup 2s --duration "${3:-${secs}s}" \
    -q -o "$2" >"$2.out" 2>&1 || true # exit 1 = a cache-off rule broken; the figures say what
  [ -f "$2/summary.json" ] || { echo "cacheoff run failed: $(tail -5 "$2.out")" >&2; exit 1; }
}

# Prime the cache, then copy what it holds into the static tree: the key
# line of a cache file is "KEY: host/path".
run_cacheoff 200 "$work/prime" 2s "$pport"
[ "$(meas .errors.total "$work/prime")" = 0 ] || { echo "priming run had errors: $(meas .errors.by_kind "$work/prime")" >&2; exit 1; }
echo "map \$host \$curve_echo {" >"$work/echo.conf"
for key in $(grep -rah '^KEY: ' "$work/cache" | cut -c6- | sort); do
  host=${key%%/*} path=/${key#*/}
  curl -s -D "$work/head" -o "$work/www/$host" -H "Host: $host" "http://127.0.0.1:$pport$path"
  echo "    $host $(tr -d '\r' <"$work/head" | awk -F': ' 'tolower($1) == "x-cacheoff-echo" {print $2}');" >>"$work/echo.conf"
done
echo "}" >>"$work/echo.conf"
kill -HUP "$(cat "$work/nginx.pid")" # reload: the echo map
url="http://127.0.0.1:$port$path"
echo "nginx 127.0.0.1:$port serves $(grep -c bench.tst "$work/echo.conf") static 1 KB object(s); wrk and oha ask for $url with Host: $host"
for _ in $(seq 50); do
  curl -s -D "$work/head" -o "$work/body" -H "Host: $host" "$url"
  grep -qi '^x-cacheoff-echo: [0-9a-f]' "$work/head" && break
  sleep 0.1
done
code=$(head -1 "$work/head" | cut -d' ' -f2)
size=$(stat -c %s "$work/body")
grep -qi '^x-cacheoff-echo: [0-9a-f]' "$work/head" && [ "$code" = 200 ] && [ "$size" = 1024 ] \
  || { echo "nginx answered $code with $size bytes, not a 1 KB file with an echo: $(cat "$work/head")" >&2; exit 1; }

# --- ceiling: wrk -> nginx ----------------------------------------------
if [ -n "${CURVE_CEILING:-}" ]; then
  wrk_rate=$CURVE_CEILING
  echo "ceiling given (CURVE_CEILING), not measured: $wrk_rate/s"
else
  wrk_out=$(wrk -t2 -c"$conns" -d"${secs}s" -H "Host: $host" "$url")
  wrk_rate=$(awk '/^Requests\/sec:/ {print $2}' <<<"$wrk_out")
  if grep -q 'Non-2xx' <<<"$wrk_out"; then echo "wrk got errors: $wrk_out" >&2; exit 1; fi
  echo "wrk -t2 -c$conns -> nginx (static 1 KB): $wrk_rate req/s"
fi

# --- the steps: cacheoff, then oha, at each share of the ceiling --------
tsv=$work/rows.tsv
printf 'tool\tshare_pct\toffered_rps\tachieved_rps\tp50_ms\tp90_ms\tp99_ms\tp99_9_ms\terrors\trequests\n' >"$tsv"
for share in $shares; do
  rate=$(jq -n "$wrk_rate * $share / 100 | round")

  dir=$work/cacheoff-$share
  run_cacheoff "$rate" "$dir"
  # p90 and p99.9 come from the response-time CDF's fixed points.
  cdf() { jq -r ".distributions.rt_ms.all[] | select(.[1] == $1) | .[0]" "$dir/summary.json" | head -1; }
  printf 'cacheoff\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$share" "$rate" "$(meas .rate_xps "$dir")" \
    "$(meas .rt_ms.all.p50 "$dir")" "$(cdf 90)" "$(meas .rt_ms.all.p99 "$dir")" "$(cdf 99.9)" \
    "$(meas .errors.total "$dir")" "$(meas '.xacts + .errors.total' "$dir")" >>"$tsv"

  j=$work/oha-$share.json
  "$oha" -q "$rate" --latency-correction -z "${secs}s" -c "$conns" --no-tui "${oha_json[@]}" "${oha_wait[@]}" \
    --host "$host" "$url" >"$j" 2>"$work/oha-$share.err" || true
  # oha's latencies are in seconds; errors are failed requests plus
  # replies other than 200.
  jq -r --arg share "$share" --arg rate "$rate" '
    [ "oha", $share, $rate, .summary.requestsPerSec,
      (.latencyPercentiles | .p50, .p90, .p99, .["p99.9"] | . * 1000),
      (([.errorDistribution[]] | add // 0)
        + ([.statusCodeDistribution | to_entries[] | select(.key != "200") | .value] | add // 0)),
      (([.statusCodeDistribution[]] | add // 0) + ([.errorDistribution[]] | add // 0)) ] | @tsv' "$j" >>"$tsv"
  echo "cacheoff step $share%: $(meas .dhr.measured "$dir")% hits, send lag p99 $(meas .send_lag_ms.p99 "$dir") ms, errors by kind $(meas '.errors.by_kind | tojson' "$dir")"
  tail -2 "$tsv" | awk -F'\t' '{printf "%-8s %4s%% %8d/s offered %10.1f/s achieved  p50 %8.3f p90 %8.3f p99 %8.3f p99.9 %8.3f ms  errors %s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9}'
done

# --- figures, drawing, table --------------------------------------------
commit=$(git rev-parse --short HEAD)
machine="$(nproc) cores, Linux $(uname -r)"
versions="$("$bin" --version) ($commit); $("$oha" --version); wrk $(wrk -v 2>&1 | head -1 | cut -d' ' -f2); nginx $("$nginx_bin" -v 2>&1 | cut -d/ -f2)"
when=$(date -u '+%Y-%m-%d %H:%M UTC')
mkdir -p "$out"
cp "$tsv" "$out/latency-load.tsv"
jq -R -s --argjson wrk "$wrk_rate" --arg machine "$machine" --arg versions "$versions" --arg when "$when" \
  --arg secs "$secs" --arg conns "$conns" --arg robots "$robots" --arg per "$per_robot" --arg cmd "bench/latency-curve.sh $secs" '
  (split("\n") | map(select(length > 0) | split("\t"))) as $t
  | ($t[0]) as $h
  | {
      title: "Response time against offered load: cacheoff and oha -> nginx",
      subtitle: [
        "nginx serving a static 1 KB file (a cacheoff object) on loopback, keep-alive, \($conns) connections per generator (cacheoff: \($robots) robots x \($per)); \($secs) s per step",
        "\($machine); \($versions); \($when)"
      ],
      notes: ["cacheoff: Poisson arrivals;", "oha -q: evenly spaced;", "both time each request", "from its intended send."],
      command: $cmd, date: $when, machine: $machine, versions: $versions, wrk_rps: $wrk,
      rows: [ $t[1:][] | [$h, .] | transpose | map({key: (.[0] | sub("_ms$"; "")), value: .[1]}) | from_entries
              | with_entries(if .key == "tool" then . else .value |= tonumber end) ]
    }' "$tsv" >"$out/latency-load.json"
python3 bench/plot-curve.py "$out/latency-load.json" "$out/latency-load.svg"
echo
echo "machine: $machine; $versions; $when"
printf 'wrk -t2 -c%s -> nginx (static 1 KB): %.1f req/s\n' "$conns" "$wrk_rate"
echo "figures: $out/latency-load.tsv, $out/latency-load.json; drawing: $out/latency-load.svg"
