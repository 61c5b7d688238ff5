#!/usr/bin/env bash
# Proves the GPU bundle (scripts/gpu-bundle.sh) self-contained: runs tests/gpu_bundle/in_rootfs.sh
# inside minimal Debian root file systems (debootstrap --variant=minbase: no compiler, no -dev
# package, no GPU) for each suite in $ROOTFS_SUITES (default: bookworm, trixie — the oldest and the
# newest C/C++ runtime the bundle is likely to meet). The CUDA libraries the target image brings
# (cuBLAS, cuDNN, NCCL; the bundle does not carry them) are bind-mounted read-only where that image
# has them, /usr/local/cuda/lib64 and /usr/local/cuda/lib; the driver (libcuda) is absent, as on a
# machine without a GPU.
#
# Needs root (debootstrap, mount, chroot) and Debian's archive; root file systems are cached in
# $ROOTFS_CACHE (default /var/cache/oneflow-rootfs). Exit 0 passed, 1 failed, 77 skipped (with the
# reason on stdout: ctest's SKIP_RETURN_CODE).
# usage: rootfs_test.sh BUNDLE_DIR FIXTURE_DIR
set -uo pipefail
BUNDLE=$(cd "$1" && pwd) FIXTURE=$(cd "$2" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${ROOTFS_CACHE:-/var/cache/oneflow-rootfs}
SUITES=${ROOTFS_SUITES:-bookworm trixie}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
skip() { echo "SKIPPED: $*"; exit 77; }

[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, mount, chroot)"
command -v debootstrap > /dev/null || skip "debootstrap is not installed (scripts/setup.sh installs it)"
[ -f "$BUNDLE/env.sh" ] || { echo "FAIL: no bundle at $BUNDLE"; exit 1; }
mkdir -p "$CACHE"

MOUNTS=()
cleanup() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount -l "${MOUNTS[$i]}" 2> /dev/null; done
  MOUNTS=()
}
trap cleanup EXIT

bind_ro() {  # source target
  mkdir -p "$2"
  mount --bind "$1" "$2" && MOUNTS+=("$2") && mount -o remount,bind,ro "$2"
}

status=0
for suite in $SUITES; do
  root=$CACHE/$suite
  if [ ! -x "$root/bin/bash" ]; then
    rm -rf "$root.tmp"
    echo "== debootstrap $suite (minbase) into $root"
    if ! debootstrap --variant=minbase "$suite" "$root.tmp" "$MIRROR" > "$CACHE/$suite.log" 2>&1; then
      tail -n 5 "$CACHE/$suite.log"
      rm -rf "$root.tmp"
      if [ "$suite" = "${SUITES%% *}" ]; then skip "debootstrap $suite failed (no archive reachable?); see $CACHE/$suite.log"; fi
      echo "FAIL: debootstrap $suite"; status=1; continue
    fi
    mv "$root.tmp" "$root"
  fi
  echo "== $suite: $(. "$root/etc/os-release" && echo "$PRETTY_NAME"), $(chroot "$root" ldd --version | head -n 1)"
  rm -rf "$root/opt/gpu-bundle" "$root/tmp/fixture"
  cp -a "$BUNDLE" "$root/opt/gpu-bundle"
  cp -a "$FIXTURE" "$root/tmp/fixture"
  cp "$HERE/in_rootfs.sh" "$root/opt/in_rootfs.sh"
  mkdir -p "$root/proc"
  mount -t proc proc "$root/proc" && MOUNTS+=("$root/proc") || skip "cannot mount /proc in the root file system"
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do
    [ -d "$d" ] || continue
    bind_ro "$(readlink -f "$d")" "$root$d" || skip "cannot bind-mount $d into the root file system"
  done
  if chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root bash /opt/in_rootfs.sh /opt/gpu-bundle /tmp/fixture; then
    echo "== $suite: passed"
  else
    echo "== $suite: FAILED"; status=1
  fi
  cleanup
done
exit $status
