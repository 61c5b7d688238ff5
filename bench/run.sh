#!/usr/bin/env bash
# One command for the bench: builds liboneflow.so (+ the CLI) in Release into build/ if needed,
# generates the models and runs OneFlow vs onnxruntime. Arguments go to run_bench.py, e.g.
#   bench/run.sh --models mlp,cnn --threads 1 --json /tmp/bench.json
# Set BENCH_CHECK_CLI=1 to also run check_outputs.py (`oneflow run` vs onnxruntime) afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}

if command -v ccache >/dev/null && [ -d /usr/lib/ccache ]; then export PATH=/usr/lib/ccache:$PATH; fi
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
bt=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD_DIR/CMakeCache.txt")
[ "$bt" = Release ] || echo "warning: $BUILD_DIR is a '$bt' build; timings are only meaningful for Release" >&2
# Name the library by its file: in Ninja the target name `oneflow` means the CLI binary.
ninja -C "$BUILD_DIR" -j"${BENCH_JOBS:-2}" liboneflow oneflow_cli

python3 bench/make_models.py
rc=0
python3 bench/run_bench.py --lib "$BUILD_DIR/liboneflow.so" "$@" || rc=$?
if [ "${BENCH_CHECK_CLI:-0}" = 1 ]; then
  python3 bench/check_outputs.py --cli "$BUILD_DIR/oneflow" || rc=$?
fi
exit $rc
