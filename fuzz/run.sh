#!/usr/bin/env bash
# Runs one fuzz target until its fuzzer process has used CPU_MINUTES of CPU
# time (not wall time: the run may share the machine), then prints libFuzzer's
# final figures. The corpus grows in target/fuzz-corpus/TARGET, seeded from
# fuzz/seeds/TARGET; crashes land in fuzz/artifacts/TARGET/.
#   usage: fuzz/run.sh TARGET [CPU_MINUTES=30] [NICE=19]
set -euo pipefail
cd "$(dirname "$0")"
target=${1:?usage: fuzz/run.sh TARGET [CPU_MINUTES] [NICE]}
minutes=${2:-30}
niceness=${3:-19}

cargo +nightly fuzz build -O "$target" >&2
bin=target/x86_64-unknown-linux-gnu/release/$target
corpus=../target/fuzz-corpus/$target
mkdir -p "$corpus" "artifacts/$target"
log=../target/fuzz-$target.log

nice -n "$niceness" "$bin" "$corpus" "seeds/$target" \
  -artifact_prefix="artifacts/$target/" -print_final_stats=1 -max_len=8192 \
  -timeout=10 -rss_limit_mb=2048 >"$log" 2>&1 &
pid=$!
started=$(date +%s)
ticks=$(getconf CLK_TCK)
limit=$((minutes * 60 * ticks))
cpu=0
while kill -0 "$pid" 2>/dev/null; do
  # utime + stime of the fuzzer, in clock ticks.
  cpu=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo "$cpu")
  if [ "$cpu" -ge "$limit" ]; then
    kill -INT "$pid"
    break
  fi
  sleep 5
done
status=0
wait "$pid" || status=$?
wall=$(($(date +%s) - started))
echo "== $target: $((cpu / ticks)) CPU-s in ${wall} s wall, exit $status"
grep -E '^(stat::|#[0-9]+ +(DONE|INITED))|ERROR|panicked|SUMMARY' "$log" | tail -12
echo "corpus: $(ls "$corpus" | wc -l) inputs; artifacts: $(ls "artifacts/$target" | wc -l)"
echo "full log: target/fuzz-$target.log"
