#!/usr/bin/env bash
# Two builds of cacheoff side by side on bench/max-rate.sh's measures, in
# alternating rounds so that both see the same machine noise: closed-loop
# (2 servers, and 1 server so every transaction crosses cores) and
# open-loop at a fixed rate (send lag). Prints every round, the medians and
# the ratio of the working tree's build to the other's.
#
# Usage: bench/ab.sh OLD_REV [rounds] [seconds-per-run] [open-loop rate]
#        (defaults: 3 rounds, 10 s, 100000/s)
set -euo pipefail
cd "$(dirname "$0")/.."
old_rev=${1:?usage: bench/ab.sh OLD_REV [rounds] [seconds] [rate]}
rounds=${2:-3}
secs=${3:-10}
rate=${4:-100000}
command -v jq >/dev/null || { apt-get update -qq && apt-get install -y -qq jq >/dev/null; }

work=$(mktemp -d)
trap 'git worktree remove --force "$work/old" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add -f --detach "$work/old" "$old_rev" >/dev/null
(cd "$work/old" && cargo build --release -q)
cargo build --release -q
declare -A bins=([old]="$work/old/target/release/cacheoff" [new]=target/release/cacheoff)

common=(--size 1KB --warmup 3s --duration "${secs}s" -q)
meas() { jq -r ".phases[] | select(.name==\"meas\") | $1" "$2/summary.json"; }
declare -A closed cross lag_p99 lag_max open_rate
for r in $(seq "$rounds"); do
  for side in old new; do
    bin=${bins[$side]}
    d="$work/$side-$r"
    "$bin" run simple --direct --rate max --robots 50 --max-conns 2 --servers 2 "${common[@]}" -o "$d-closed" >/dev/null
    "$bin" run simple --direct --rate max --robots 50 --max-conns 2 --servers 1 "${common[@]}" -o "$d-cross" >/dev/null
    "$bin" run simple --direct --rate "$rate/s" --robots 200 --max-conns 4 --servers 2 "${common[@]}" -o "$d-open" >/dev/null
    closed[$side]+="$(meas .rate_xps "$d-closed") "
    cross[$side]+="$(meas .rate_xps "$d-cross") "
    open_rate[$side]+="$(meas .rate_xps "$d-open") "
    lag_p99[$side]+="$(meas .send_lag_ms.p99 "$d-open") "
    lag_max[$side]+="$(meas .send_lag_ms.max "$d-open") "
    errs=$(( $(meas .errors.total "$d-closed") + $(meas .errors.total "$d-cross") + $(meas .errors.total "$d-open") ))
    printf 'round %d %-3s closed %9.0f/s  cross-core %9.0f/s  open %s/s: %9.0f/s lag p99 %6.3f ms max %7.3f ms  errors %d\n' \
      "$r" "$side" "$(meas .rate_xps "$d-closed")" "$(meas .rate_xps "$d-cross")" "$rate" \
      "$(meas .rate_xps "$d-open")" "$(meas .send_lag_ms.p99 "$d-open")" "$(meas .send_lag_ms.max "$d-open")" "$errs"
  done
done

median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo
echo "machine: $(nproc) cores, $(uname -r); old $old_rev, new $(git rev-parse --short HEAD)$(git diff --quiet || echo +changes)"
for m in closed cross open_rate lag_p99 lag_max; do
  unset -n series 2>/dev/null || true
  declare -n series=$m
  o=$(median "${series[old]}"); n=$(median "${series[new]}")
  printf '%-10s median old %10.3f  new %10.3f  new/old %.3f\n' "$m" "$o" "$n" "$(jq -n "$n / $o")"
done
