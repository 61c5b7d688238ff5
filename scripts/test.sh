#!/usr/bin/env bash
# The CI entry point: installs dependencies, builds build/ (Release, ccache), runs every ctest
# (unit, C ABI, CLI, ONNX conformance, bindings, and the install/package consumers of tests/install:
# CMake package, pkg-config, wheel, Maven, Go) and a fuzz smoke run. Exits non-zero on any failure.
# Then the unit and C ABI tests again in an ASan + UBSan build, and the concurrency tests in a
# ThreadSanitizer build (scripts/sanitize.sh all).
#   usage: scripts/test.sh            (FUZZ_SECONDS=0 skips the fuzzer, SANITIZE=0 the sanitizer
#                                      build; JOBS sets parallelism)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
JOBS=${JOBS:-2}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
SANITIZE=${SANITIZE:-1}

echo "== setup"
bash scripts/setup.sh

# ccache through its compiler symlinks; CCACHE_DIR keeps ccache's default unless the caller sets it.
[ -d /usr/lib/ccache ] && export PATH=/usr/lib/ccache:$PATH
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}

echo "== configure + build (build/, Release)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
ninja -C build -j"$JOBS"

echo "== ctest"
(cd build && ctest --output-on-failure -j"$JOBS")

# The GPU bundle (docs/cuda.md, "The GPU bundle"): built here, then its host side run inside
# minimal Debian root file systems to prove it needs nothing from this machine.
if command -v nvcc > /dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "== GPU bundle (scripts/gpu-bundle.sh) and its host-side run in minimal root file systems"
  bash scripts/gpu-bundle.sh
  python3 tests/c_api/make_c_api_fixture.py build-gpu-bundle/c_api_fixture > /dev/null
  rc=0
  bash tests/gpu_bundle/rootfs_test.sh gpu-bundle build-gpu-bundle/c_api_fixture || rc=$?
  if [ "$rc" = 77 ]; then echo "(the root-file-system run was skipped: reason above)"; elif [ "$rc" != 0 ]; then exit "$rc"; fi
else
  echo "== GPU bundle: skipped (no CUDA toolkit: nvcc not found)"
fi

if [ "$FUZZ_SECONDS" != 0 ]; then
  echo "== fuzz smoke (${FUZZ_SECONDS}s)"
  bash scripts/fuzz-smoke.sh "$FUZZ_SECONDS"
fi
if [ "$SANITIZE" != 0 ]; then
  echo "== sanitizers (scripts/sanitize.sh all: ASan+UBSan, then TSan)"
  JOBS=$JOBS bash scripts/sanitize.sh all
fi
echo "== all tests passed"
