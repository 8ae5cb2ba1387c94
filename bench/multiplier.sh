#!/usr/bin/env bash
# The SPE Multiplier's cost to clients and its copying capacity.
#
# Every measurement starts fresh processes on 127.0.0.1: an SPE Collector
# (`cacheoff proxy --collector`), N reference proxies under test (`cacheoff
# proxy --parent COLLECTOR`, each its own process) and the Multiplier
# (`cacheoff multiplier --collector COLLECTOR --proxy refI=...`), then
# drives open-loop load at them with `cacheoff run` (its own origin
# servers, no think time; exp(13KB) objects as in `simple`, but all of them
# cachable, so that the Collector gives the same hits and misses with and
# without the Multiplier: straight to the Collector, it serves uncachable
# replies again; through the Multiplier, only to that request's copies).
#
# 1. Overhead: the robots' response time (measured phase) through the
#    Multiplier against straight to the Collector, at a fixed rate, with
#    1, 3 and 5 proxies under test. Each pair uses the same workload and
#    seed and a fresh Collector for both sides, so both see the same
#    misses (each one fetched from the origin once) and the same hits
#    (replayed with their miss's timing). Pairs run back to back in
#    several rounds, alternating which side goes first, and the medians
#    are compared: on a shared machine single runs vary a lot (p99 most).
# 2. Capacity: with 1 and 3 proxies under test, the open-loop rate is
#    stepped up until the Multiplier drops copies (summary.json
#    `proxies[].dropped`) or the robots see errors; the highest clean step
#    and the first failing one are reported.
# Beside every measurement, each process's CPU time (user + system, from
# /proc) over the run's wall time: robots, Collector, Multiplier and the
# proxies under test share the machine's cores.
#
# Usage: bench/multiplier.sh            (about 7 minutes)
#        QUICK=1 bench/multiplier.sh    (smoke run, about 1 minute)
# Settings (environment): RATE (overhead rate, default 300), PROXIES
# ("1 3 5"), ROUNDS (3), CAP_PROXIES ("1 3"), CAP_RATES ("500 1000 2000
# 4000 8000"), WARMUP/DURATION (overhead phases, 3s/10s), CAP_WARMUP/CAP_DURATION
# (capacity phases, 3s/10s), SEED (1). The binary: the release build in
# ${CARGO_TARGET_DIR:-target}, built first (copied, so other builds cannot
# swap it mid-run).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${QUICK:-}" ]; then
  : "${PROXIES:=1 3}" "${ROUNDS:=1}" "${CAP_PROXIES:=1}" "${CAP_RATES:=500 2000}"
  : "${WARMUP:=2s}" "${DURATION:=5s}" "${CAP_WARMUP:=2s}" "${CAP_DURATION:=5s}"
fi
rate=${RATE:-300}
proxies_list=${PROXIES:-1 3 5}
rounds=${ROUNDS:-3}
cap_proxies=${CAP_PROXIES:-1 3}
cap_rates=${CAP_RATES:-500 1000 2000 4000 8000}
warmup=${WARMUP:-3s}
duration=${DURATION:-10s}
cap_warmup=${CAP_WARMUP:-3s}
cap_duration=${CAP_DURATION:-10s}
seed=${SEED:-1}

command -v jq >/dev/null || { apt-get update -qq && apt-get install -y -qq jq >/dev/null; }
rev="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates src workloads build.rs Cargo.toml Cargo.lock 2>/dev/null || echo +changes)"
cargo build --release -q
work=$(mktemp -d)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$work/bin"
cp "${CARGO_TARGET_DIR:-target}/release/cacheoff" "$work/bin/cacheoff"
bin=$work/bin/cacheoff
started=$SECONDS

# The workload: `simple` with every object cachable. --rate, --warmup,
# --duration and --seed set the rest per run.
cat >"$work/workload.toml" <<'EOF'
name = "multiplier-bench"
description = "exp(13KB) objects, all cachable, uniform popularity, no think time: the Multiplier's overhead and capacity"

[[content]]
name = "object"
share = 1.0
size = "exp(13KB)"
cachable = 1.0

[[phases]]
name = "warm"
duration = "5s"

[[phases]]
name = "meas"
duration = "30s"
measured = true
EOF
"$bin" workload check "$work/workload.toml" >/dev/null

# start LOG ARGS...: starts `cacheoff ARGS --listen 127.0.0.1:0` in the
# background with its console in LOG, waits until the port it got accepts
# connections; sets $last_pid and $last_addr.
start() {
  local log=$1
  shift
  "$bin" "$@" --listen 127.0.0.1:0 >"$log" 2>&1 &
  last_pid=$!
  pids+=("$last_pid")
  last_addr=
  for _ in $(seq 100); do
    last_addr=$(sed -n 's/.* on \(127\.0\.0\.1:[0-9]*\)[:,].*/\1/p' "$log" | head -1)
    if [ -n "$last_addr" ] && (exec 3<>"/dev/tcp/${last_addr%:*}/${last_addr#*:}") 2>/dev/null; then
      return 0
    fi
    kill -0 "$last_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "cacheoff $1 did not start: $(cat "$log")" >&2
  return 1
}

# forget PID: waits for a process (already ending) and drops it from $pids.
forget() {
  local i
  wait "$1" 2>/dev/null || true
  for i in "${!pids[@]}"; do
    [ "${pids[$i]}" != "$1" ] || unset 'pids[i]'
  done
}
# stop PID: SIGINT (the Multiplier then writes summary.json), then waits.
stop() {
  kill -INT "$1" 2>/dev/null || true
  forget "$1"
}

# CPU seconds (user + system) a process has used so far.
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$1/stat" 2>/dev/null || echo 0; }

# setup N DIR: a fresh Collector, and with N > 0 N proxies under test and
# the Multiplier in front; sets $target (where robots go), $col_pid,
# $mult_pid (empty for N = 0) and $proxy_pids.
setup() {
  local n=$1 dir=$2 i args=()
  mkdir -p "$dir"
  start "$dir/collector.txt" proxy --collector --mem 1GB
  col_pid=$last_pid
  local col=$last_addr
  target=$col
  mult_pid=
  proxy_pids=()
  [ "$n" -gt 0 ] || return 0
  for i in $(seq "$n"); do
    start "$dir/ref$i.txt" proxy --parent "$col" --mem 1GB
    proxy_pids+=("$last_pid")
    args+=(--proxy "ref$i=$last_addr")
  done
  start "$dir/multiplier.txt" multiplier --collector "$col" "${args[@]}" -q -o "$dir/spe"
  mult_pid=$last_pid
  target=$last_addr
}

# teardown: stops what setup started, the Multiplier first (it writes its
# summary once queued copies are done). Sets $cpu_line: CPU seconds of the
# Collector, the Multiplier and the proxies (summed) over their lives.
teardown() {
  local c_col c_mult=0 c_prox=0 p
  if [ -n "$mult_pid" ]; then
    c_mult=$(cpu_s "$mult_pid")
    # CPU seconds of each Multiplier thread, by name.
    thread_cpu=$(for t in /proc/"$mult_pid"/task/*; do
      awk -v hz="$(getconf CLK_TCK)" -v name="$(cat "$t/comm")" '{ sub(/.*\) /, ""); printf "%s %.2f\n", name, ($12 + $13) / hz }' "$t/stat"
    done 2>/dev/null | awk '{ c[$1] += $2 } END { for (n in c) printf "%s %.2f\n", n, c[n] }' | sort)
    stop "$mult_pid"
    for p in "${proxy_pids[@]}"; do c_prox=$(awk -v a="$c_prox" -v b="$(cpu_s "$p")" 'BEGIN { printf "%.2f", a + b }'); done
  fi
  c_col=$(cpu_s "$col_pid")
  for p in "${proxy_pids[@]}"; do stop "$p"; done
  stop "$col_pid"
  cpu_line="$c_col $c_mult $c_prox"
}

# load DIR RATE WARMUP DURATION: `cacheoff run` at $target, bounded by
# `timeout`; leaves DIR/run/summary.json and sets $run_cpu (robots' CPU
# seconds) and $run_wall (seconds).
load() {
  local dir=$1 r=$2 w=$3 d=$4 t0 out
  t0=$(date +%s.%N)
  out=$( { TIMEFORMAT='%U %S'; time timeout 300 "$bin" run "$work/workload.toml" --proxy "$target" \
    --rate "$r/s" --warmup "$w" --duration "$d" --seed "$seed" -q -o "$dir/run" >"$dir/run.txt" 2>&1 || true; } 2>&1)
  run_wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  run_cpu=$(awk '{ printf "%.2f", $1 + $2 }' <<<"$out")
  [ -s "$dir/run/summary.json" ] || { echo "cacheoff run wrote no summary: $(tail -5 "$dir/run.txt")" >&2; return 1; }
}

# The measured phase of a run: "mean p50 p99 xacts rate errors sent_late%".
meas() {
  jq -r '.measured_phase as $m | .phases[] | select(.name == $m) |
    "\(.rt_ms.all.mean) \(.rt_ms.all.p50) \(.rt_ms.all.p99) \(.xacts) \(.rate_xps) \(.errors.total) \(.sent_late_percent)"' "$1/run/summary.json"
}
# Robot errors by kind, measured phase: "kind:count,..." or "-".
errkinds() {
  jq -r '.measured_phase as $m | .phases[] | select(.name == $m) | .errors.by_kind | to_entries |
    map("\(.key):\(.value)") | join(",") | if . == "" then "-" else . end' "$1/run/summary.json"
}
pct() { awk -v c="$1" -v w="$2" 'BEGIN { printf "%.0f%%", 100 * c / w }'; }

echo "cacheoff $("$bin" --version | cut -d' ' -f2) at $rev; $(nproc) cores, $(uname -r), $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo "load before: $(uptime | sed 's/.*load average/load average/')"
echo

# --- 1. overhead --------------------------------------------------------------
echo "== Overhead: robots' response time, straight to the Collector vs through the Multiplier"
echo "   (open loop ${rate}/s, warm-up $warmup, measured $duration, seed $seed; fresh Collector and proxies for every run;"
echo "    $rounds rounds, each N's pair back to back, direct first in odd rounds, the Multiplier first in even ones)"
printf '%-5s %-7s %-10s %8s %8s %8s %7s %6s %6s  %s\n' round proxies path "mean ms" "p50 ms" "p99 ms" "rate/s" errors "late%" "CPU over the run's wall time: robots, Collector, Multiplier, proxies"
: >"$work/overhead"
for round in $(seq "$rounds"); do
  order="direct multiplier"
  [ $((round % 2)) = 1 ] || order="multiplier direct"
  for n in $proxies_list; do
    for side in $order; do
      dir=$work/oh-$round-$n-$side
      if [ "$side" = direct ]; then setup 0 "$dir"; else setup "$n" "$dir"; fi
      load "$dir" "$rate" "$warmup" "$duration"
      teardown
      read -r mean p50 p99 _ achieved errs late <<<"$(meas "$dir")"
      read -r c_col c_mult c_prox <<<"$cpu_line"
      drops=-
      [ "$side" = direct ] || drops=$(jq '[.proxies[].dropped] | add' "$dir/spe/summary.json")
      echo "$n $side $mean $p50 $p99 $achieved $errs $late $drops" >>"$work/overhead"
      cpu="$(pct "$run_cpu" "$run_wall") $(pct "$c_col" "$run_wall")"
      [ "$side" = direct ] || cpu="$cpu $(pct "$c_mult" "$run_wall") $(pct "$c_prox" "$run_wall"); Collector as the Multiplier timed it, whole run: $(jq -r '.collector.rt_ms.all | "\(.mean)/\(.p50)/\(.p99) ms"' "$dir/spe/summary.json")"
      printf '%-5s %-7s %-10s %8.3f %8.3f %8.3f %7.1f %6s %6.2f  %s\n' "$round" "$n" "$side" "$mean" "$p50" "$p99" "$achieved" "$errs" "$late" "$cpu"
      [ "$errs" = 0 ] || echo "        robot errors: $(errkinds "$dir")"
      [ "$side" = direct ] || [ "$drops" = 0 ] || echo "        Multiplier dropped $drops copies"
    done
  done
done
echo
echo "Medians of the $rounds rounds; the Multiplier's minus direct, and the Multiplier's over direct:"
printf '%-7s %-22s %-22s %-22s %s\n' proxies "mean ms: direct, SPE" "p50 ms: direct, SPE" "p99 ms: direct, SPE" "difference ms (ratio): mean, p50, p99"
for n in $proxies_list; do
  med() { awk -v n="$n" -v side="$1" -v col="$2" '$1 == n && $2 == side { print $col }' "$work/overhead" | sort -g |
    awk '{ v[NR] = $1 } END { printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
  dm=$(med direct 3) d5=$(med direct 4) d9=$(med direct 5)
  mm=$(med multiplier 3) m5=$(med multiplier 4) m9=$(med multiplier 5)
  awk -v n="$n" -v dm="$dm" -v d5="$d5" -v d9="$d9" -v mm="$mm" -v m5="$m5" -v m9="$m9" 'BEGIN {
    printf "%-7s %9.3f %9.3f    %9.3f %9.3f    %9.3f %9.3f    %+.3f (x%.2f), %+.3f (x%.2f), %+.3f (x%.2f)\n",
      n, dm, mm, d5, m5, d9, m9, mm - dm, mm / dm, m5 - d5, m5 / d5, m9 - d9, m9 / d9 }'
done
echo

# --- 2. capacity --------------------------------------------------------------
echo "== Capacity: open-loop steps until the Multiplier drops copies or the robots see errors"
echo "   (warm-up $cap_warmup, measured $cap_duration per step; copies queue up to 8192 per proxy before drops)"
printf '%-7s %7s %9s %7s %6s %8s %8s %8s %11s  %s\n' proxies "rate/s" "achieved" errors "late%" "p99 ms" dropped copied "queue p99" "CPU: robots, Collector, Multiplier, proxies"
: >"$work/capacity"
for n in $cap_proxies; do
  for r in $cap_rates; do
    dir=$work/cap-$n-$r
    setup "$n" "$dir"
    load "$dir" "$r" "$cap_warmup" "$cap_duration"
    teardown
    read -r mean p50 p99 _ achieved errs late <<<"$(meas "$dir")"
    read -r c_col c_mult c_prox <<<"$cpu_line"
    read -r dropped copied qp99 <<<"$(jq -r '"\([.proxies[].dropped] | add) \([.proxies[].copied] | add) \([.proxies[].queue_ms.p99] | max)"' "$dir/spe/summary.json")"
    printf '%-7s %7s %9.1f %7s %6.2f %8.3f %8s %8s %11s  %s %s %s %s\n' "$n" "$r" "$achieved" "$errs" "$late" "$p99" "$dropped" "$copied" "$qp99" \
      "$(pct "$run_cpu" "$run_wall")" "$(pct "$c_col" "$run_wall")" "$(pct "$c_mult" "$run_wall")" "$(pct "$c_prox" "$run_wall")"
    [ "$errs" = 0 ] || echo "        robot errors: $(errkinds "$dir")"
    # The Multiplier's CPU per client request (its client workers: read,
    # Collector relay, facts) and per copy (the copy threads: send, read,
    # compare), from its threads' CPU time over its whole life.
    requests=$(jq .requests "$dir/spe/summary.json")
    awk -v req="$requests" -v cop="$copied" '
      /^multiplier-[0-9]/ { w += $2; wt = wt sprintf(" %s %.2fs", $1, $2) }
      /^copies-/ { c += $2; ct = ct sprintf(" %s %.2fs", $1, $2) }
      END { printf "        Multiplier CPU: %.0f us per client request (%s ), %.0f us per copy (%s )\n", 1e6 * w / (req ? req : 1), wt, 1e6 * c / (cop ? cop : 1), ct }
    ' <<<"$thread_cpu"
    echo "$n $r $dropped $errs $late" >>"$work/capacity"
    if [ "$dropped" != 0 ] || [ "$errs" != 0 ]; then
      break
    fi
  done
done
echo
echo "Capacity, per number of proxies under test:"
awk '
  { seen[$1] = 1
    if ($3 == 0 && $4 == 0) { if (!($1 in fail)) { ok[$1] = $2 "/s"; if ($5 <= 5) ontime[$1] = $2 "/s" } }
    else if (!($1 in fail)) fail[$1] = $2 "/s (" $3 " copies dropped, " $4 " robot errors)" }
  END { for (n in seen) printf "  %s proxies: highest clean step %s (highest with at most 5%% of sends late: %s); first step with drops or errors: %s\n",
          n, (n in ok ? ok[n] : "none"), (n in ontime ? ontime[n] : "none"), (n in fail ? fail[n] : "none up to the last step") }
' "$work/capacity" | sort -n -k1
echo
echo "load after: $(uptime | sed 's/.*load average/load average/')"
echo "script time: $((SECONDS - started)) s"
