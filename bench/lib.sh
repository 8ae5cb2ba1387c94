# Shared by the bench scripts that start `cacheoff proxy` themselves.
# Expects $bin (the cacheoff binary) and $work (a scratch directory).

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
