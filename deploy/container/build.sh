#!/usr/bin/env bash
# Builds the cacheoff container image from this machine alone: no base
# image, nothing pulled from a registry. Three steps:
#  1. build: cargo build --release (target/release/cacheoff, or
#     $CARGO_TARGET_DIR/release/cacheoff), unless --bin names a binary;
#  2. stage: the image's root filesystem in STAGE/rootfs (STAGE default
#     $CARGO_TARGET_DIR/container, else target/container): /cacheoff (debug
#     info stripped unless --keep-debug), every shared library `ldd` says
#     it links and the dynamic loader, each at its own path, and /etc
#     passwd, group, nsswitch.conf; then checks it, as root: `chroot
#     ROOT /cacheoff --version`, and a 3 s run of the built-in `simple`
#     workload through the reference proxy on loopback as uid 65532
#     (proves the libraries are complete and the non-root user works);
#  3. image: Containerfile (FROM scratch) over STAGE with the first of
#     podman, buildah or docker (whose daemon answers) found, tagged TAG
#     (default localhost/cacheoff:<version>); with --archive FILE it is
#     also saved as a docker-archive tarball for `kind load image-archive`,
#     `minikube image load`, `k3s ctr images import`, `docker load`.
#
# Usage: deploy/container/build.sh [--bin PATH] [--stage DIR] [--tag TAG]
#            [--archive FILE] [--keep-debug] [--stage-only] [--no-check]
# Build with `nice -n 19` on a shared machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD

target=${CARGO_TARGET_DIR:-$repo/target}
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
bin="" stage=$target/container tag=localhost/cacheoff:$version archive=""
keep_debug=0 stage_only=0 check=1
while [ $# -gt 0 ]; do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --stage) stage=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --archive) archive=$2; shift 2 ;;
    --keep-debug) keep_debug=1; shift ;;
    --stage-only) stage_only=1; shift ;;
    --no-check) check=0; shift ;;
    -h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "error: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

# 1. The binary.
if [ -z "$bin" ]; then
  echo "== cargo build --release"
  cargo build --release --locked --bin cacheoff
  bin=$target/release/cacheoff
fi
[ -x "$bin" ] || { echo "error: no executable at $bin" >&2; exit 1; }

# 2. The root filesystem.
root=$stage/rootfs
echo "== staging $root"
rm -rf "$stage"
mkdir -p "$root/etc" "$root/tmp"
chmod 1777 "$root/tmp"
if [ $keep_debug = 1 ]; then
  cp "$bin" "$root/cacheoff"
else
  objcopy --strip-debug "$bin" "$root/cacheoff"
fi
chmod 755 "$root/cacheoff"

# Every library as ldd resolves it on this machine (the one that built the
# binary), copied (symlinks followed) to the path the binary asks for. A
# static binary has none.
libs=$(ldd "$bin" 2>&1 || true)
if grep -q 'not found' <<<"$libs"; then
  echo "error: $bin links libraries this machine lacks:" >&2
  grep 'not found' <<<"$libs" >&2
  exit 1
fi
while read -r path; do
  mkdir -p "$root$(dirname "$path")"
  cp -L "$path" "$root$path"
  echo "   $path"
done < <(sed -n -e 's/^.*=> \(\/[^ ]*\) (0x.*$/\1/p' -e 's/^[[:space:]]*\(\/[^ ]*\) (0x.*$/\1/p' <<<"$libs")

# root for `kubectl debug` sessions' sake, nonroot for running; hosts from
# /etc/hosts first, then DNS (the cluster's resolv.conf is mounted over).
printf 'root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/:/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$root/etc/group"
printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
cp deploy/container/Containerfile "$stage/Containerfile"
echo "   $(du -sh "$root" | cut -f1) in $(find "$root" -type f | wc -l) files"

# The check: the staged tree alone runs cacheoff.
if [ $check = 1 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "== check skipped: chroot needs root"
  else
    echo "== check: chroot $root /cacheoff"
    got=$(chroot "$root" /cacheoff --version)
    [ "$got" = "cacheoff $version" ] || { echo "error: chroot /cacheoff --version said '$got', not 'cacheoff $version'" >&2; exit 1; }
    echo "   $got"
    rm -rf "$root/tmp/check"
    if ! chroot --userspec=65532:65532 "$root" /cacheoff run simple --rate 20/s --warmup 1s --duration 2s \
      --quiet --out /tmp/check >"$stage/check.log" 2>&1; then
      cat "$stage/check.log" >&2
      echo "error: a run in the staged root failed" >&2
      exit 1
    fi
    for f in manifest.json intervals.jsonl summary.json; do
      [ -s "$root/tmp/check/$f" ] || { echo "error: the run in the staged root wrote no $f" >&2; exit 1; }
    done
    # Transactions answered, none in error (the run's own verdict).
    if ! python3 - "$root/tmp/check/summary.json" <<'PY'; then
import json, sys
t = json.load(open(sys.argv[1]))["total"]
print(f"   a 3 s run as uid 65532: {t['xacts']} transactions, {t['errors']['total']} errors")
sys.exit(0 if t["xacts"] > 0 and t["errors"]["total"] == 0 else 1)
PY
      cat "$stage/check.log" >&2
      echo "error: the run in the staged root answered nothing or had errors" >&2
      exit 1
    fi
    rm -rf "$root/tmp/check" "$stage/check.log"
  fi
fi
[ $stage_only = 1 ] && exit 0

# 3. The image.
if command -v podman >/dev/null; then tool=podman
elif command -v buildah >/dev/null; then tool=buildah
elif command -v docker >/dev/null && docker info >/dev/null 2>&1; then tool=docker
else
  echo "error: no podman, buildah or docker (with a daemon) to build the image; the staged context is $stage" >&2
  exit 1
fi
echo "== $tool: building $tag"
"$tool" build --build-arg "VERSION=$version" -f "$stage/Containerfile" -t "$tag" "$stage"
if [ -n "$archive" ]; then
  rm -f "$archive"
  case $tool in
    podman) podman save --format docker-archive -o "$archive" "$tag" ;;
    buildah) buildah push "$tag" "docker-archive:$archive:$tag" ;;
    docker) docker save -o "$archive" "$tag" ;;
  esac
  echo "== saved $tag to $archive ($(du -h "$archive" | cut -f1))"
fi
