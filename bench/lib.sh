# Shared by the bench scripts that start `cacheoff proxy` themselves.
# Sourcing it installs jq if missing, builds the release binary and sets
# $bin (the cacheoff binary), $work (a scratch directory, removed on exit)
# and $pid (the proxy started, stopped on exit).

command -v jq >/dev/null || { apt-get update -qq && apt-get install -y -qq jq >/dev/null; }
cargo build --release -q
bin=target/release/cacheoff
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT

# start_proxy LOG ARGS...: starts `cacheoff proxy --listen 127.0.0.1:0 ARGS`
# with its console in LOG; sets $pid and $addr (the port it got).
start_proxy() {
  local log=$1
  shift
  "$bin" proxy --listen 127.0.0.1:0 "$@" >"$log" &
  pid=$!
  addr=
  for _ in $(seq 100); do
    addr=$(sed -n 's/.* on \([0-9.]*:[0-9]*\): .*/\1/p' "$log")
    [ -n "$addr" ] && return 0
    sleep 0.1
  done
  echo "cacheoff proxy did not start: $(cat "$log")" >&2
  return 1
}

# stop_proxy: SIGINT, so it prints its counters, then waits for it.
stop_proxy() {
  kill -INT "$pid"
  wait "$pid" || true
  pid=
}
