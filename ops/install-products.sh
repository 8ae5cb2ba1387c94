#!/usr/bin/env bash
# Installs every proxy product a cache-off drives, from Debian: Squid,
# Varnish, nginx (Debian's nginx has proxy_cache), Apache Traffic Server and
# h2o (a baseline surrogate without a cache).
# Idempotent: when all binaries are present it only reports them, without
# apt. cacheoff starts each product itself, in its own directory with its
# own configuration, so the packages' services must not be started by the
# install; any that start anyway are stopped before the script exits.
#
# Usage: ops/install-products.sh [--check]
#        --check only reports; exits 1 listing what is missing.
set -euo pipefail

# product, Debian package, the binary cacheoff runs (paths checked with
# `dpkg -L`: Debian puts traffic_server in /usr/bin, the others in /usr/sbin),
# then the other files a product needs (its product file's `[[requires]]`):
# nginx loads ngx_cache_purge to purge what a POST changes; hitch is the
# TLS terminator in front of Varnish for HTTPS runs.
products=(
  "squid squid /usr/sbin/squid"
  "varnish varnish /usr/sbin/varnishd"
  "nginx nginx /usr/sbin/nginx"
  "trafficserver trafficserver /usr/bin/traffic_server"
  "nginx-cache-purge libnginx-mod-http-cache-purge /usr/lib/nginx/modules/ngx_http_cache_purge_module.so"
  "hitch hitch /usr/sbin/hitch"
  "h2o h2o /usr/bin/h2o"
)
# A binary is executable; a module (.so) is a plain file.
present() { if [[ $1 == *.so ]]; then [ -f "$1" ]; else [ -x "$1" ]; fi; }
# Process names of the products' daemons (traffic_manager supervises
# traffic_server; cache-main is varnishd's child; the varnish package also
# has a varnishncsa logging service).
daemons='^(squid|varnishd|cache-main|varnishncsa|nginx|traffic_server|traffic_manager|hitch|h2o)$'

check_only=false
case "${1:-}" in
  --check) check_only=true ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

# One report line: product, upstream version (e.g. 5.7 for 5.7-2+deb12u6),
# state, then the Debian package and version that provide the binary.
describe() { # name binary state
  local pkg full up
  pkg=$(dpkg-query -S "$2" 2>/dev/null | head -n1 | cut -d: -f1) || true
  full=$(dpkg-query -W -f '${Version}' "$pkg" 2>/dev/null) || true
  if [ -z "$full" ]; then echo "$1 ? $3 ($2, not from a Debian package)"; return 0; fi
  up=${full#*:}
  up=${up%-*}
  up=${up%%+*}
  echo "$1 $up $3 ($pkg $full)"
}

# Pids of running product daemons, one a line.
daemon_pids() { ps -eo pid=,comm= | awk -v re="$daemons" '$2 ~ re { print $1 }'; }

missing=()
for p in "${products[@]}"; do
  read -r name pkg bin <<<"$p"
  present "$bin" || missing+=("$name:$pkg")
done

if [ ${#missing[@]} -eq 0 ]; then
  for p in "${products[@]}"; do
    read -r name pkg bin <<<"$p"
    describe "$name" "$bin" present
  done
  exit 0
fi

if $check_only; then
  for p in "${products[@]}"; do
    read -r name pkg bin <<<"$p"
    if present "$bin"; then describe "$name" "$bin" present
    else echo "$name MISSING ($bin; Debian package $pkg)"; fi
  done
  echo "missing: ${missing[*]%%:*}" >&2
  exit 1
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "error: installing ${missing[*]%%:*} needs root" >&2
  exit 1
fi

# Stop any product daemon the install started despite the policy: new
# since the install began (the pids in $before were already running, e.g.
# another run's own squid), and run as a Debian service (its command line
# names no path outside /etc, /usr, /var, /run) rather than by a cacheoff
# run with its own directory.
service_like() {
  local w words
  read -ra words < <(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null; echo)
  for w in "${words[@]}"; do
    case $w in
      /etc/* | /usr/* | /var/* | /run/*) ;;
      /*) return 1 ;;
    esac
  done
}
stop_strays() {
  local pid stray=() alive=()
  for pid in $(daemon_pids); do
    [[ $before == *" $pid "* ]] && continue
    service_like "$pid" && stray+=("$pid")
  done
  [ ${#stray[@]} -eq 0 ] && return 0
  echo "stopping daemons started by the install:" \
    "$(ps -o comm= -p "$(IFS=,; echo "${stray[*]}")" | sort -u | xargs)"
  kill "${stray[@]}" 2>/dev/null || true
  for _ in $(seq 50); do
    alive=()
    for pid in "${stray[@]}"; do kill -0 "$pid" 2>/dev/null && alive+=("$pid"); done
    [ ${#alive[@]} -eq 0 ] && return 0
    sleep 0.1
  done
  kill -9 "${alive[@]}" 2>/dev/null || true
}

# A temporary policy-rc.d that forbids every service start (101) while
# dpkg runs. An existing one (Docker images ship one) is put back after,
# on every exit path, failures included; only a SIGKILL would leave it
# aside in $saved_policy.
policy=/usr/sbin/policy-rc.d
saved_policy=""
before=""
log=$(mktemp)
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  # Every step runs even if one fails: the policy must go back.
  set +e
  [ -n "$before" ] && stop_strays
  if [ -n "$saved_policy" ]; then mv -f "$saved_policy" "$policy"
  else rm -f "$policy"; fi
  rm -f "$log"
}
if [ -e "$policy" ]; then
  saved_policy=$(mktemp "$policy.cacheoff-saved.XXXXXX")
  cp -p "$policy" "$saved_policy"
fi
trap cleanup EXIT
trap 'exit 130' INT TERM
printf '#!/bin/sh\n# cacheoff ops/install-products.sh: no service starts\nexit 101\n' >"$policy.new"
chmod 755 "$policy.new"
mv -f "$policy.new" "$policy"

before=" $(daemon_pids | xargs) "

pkgs=("${missing[@]#*:}")
echo "== installing ${pkgs[*]} (Debian packages)"
export DEBIAN_FRONTEND=noninteractive
apt_opts=(-qq -o DPkg::Lock::Timeout=300)
# apt's output goes to a log, shown only when it fails.
if ! apt-get "${apt_opts[@]}" update >"$log" 2>&1; then
  tail -n 20 "$log" >&2
  echo "error: apt-get update failed" >&2
  exit 1
fi
if ! apt-get "${apt_opts[@]}" install -y "${pkgs[@]}" >>"$log" 2>&1; then
  tail -n 20 "$log" >&2
  echo "error: apt-get install ${pkgs[*]} failed" >&2
  exit 1
fi
stop_strays

fail=0
for p in "${products[@]}"; do
  read -r name pkg bin <<<"$p"
  if ! present "$bin"; then
    echo "error: $name: $bin still missing after installing $pkg" >&2
    fail=1
    continue
  fi
  if [[ " ${missing[*]} " == *" $name:"* ]]; then state=installed; else state=present; fi
  describe "$name" "$bin" "$state"
done
exit "$fail"
