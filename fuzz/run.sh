#!/usr/bin/env bash
# Runs one fuzz target until its fuzzer process has used CPU_MINUTES of CPU
# time (not wall time: the run may share the machine), then prints libFuzzer's
# final figures. CPU_MINUTES 0 runs every seed and past crash once (CI does).
# The corpus grows in target/fuzz-corpus/TARGET, seeded from fuzz/seeds/TARGET
# (and the built-in workloads for workload_file); crashes land in
# fuzz/artifacts/TARGET/.
#   usage: fuzz/run.sh TARGET [CPU_MINUTES=30] [NICE=19]
set -euo pipefail
cd "$(dirname "$0")"
target=${1:?usage: fuzz/run.sh TARGET [CPU_MINUTES] [NICE]}
minutes=${2:-30}
niceness=${3:-19}

# cargo-fuzz needs a nightly compiler's flags; without a nightly toolchain
# the stable one is asked for them (RUSTC_BOOTSTRAP). Running the seeds once
# (CI) needs no optimised build, which takes several times longer to make.
if [ "$minutes" = 0 ]; then
  profile=(--dev) dir=debug
else
  profile=(-O) dir=release
fi
if rustup run nightly rustc --version >/dev/null 2>&1; then
  cargo +nightly fuzz build "${profile[@]}" "$target" >&2
else
  RUSTC_BOOTSTRAP=1 cargo fuzz build "${profile[@]}" "$target" >&2
fi
bin=target/x86_64-unknown-linux-gnu/$dir/$target
seeds=("seeds/$target")
[ "$target" = workload_file ] && seeds+=(../workloads)
[ "$target" = pgl_file ] && seeds+=(../crates/pgl/tests/pgl ../crates/pgl/tests/pgl/include)

if [ "$minutes" = 0 ]; then
  "$bin" -runs=0 "${seeds[@]}" 2>&1 | tail -1
  exit
fi

corpus=../target/fuzz-corpus/$target
mkdir -p "$corpus" "artifacts/$target"
log=../target/fuzz-$target.log
nice -n "$niceness" "$bin" "$corpus" "${seeds[@]}" \
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
