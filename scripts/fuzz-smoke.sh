#!/usr/bin/env bash
# Builds the ONNX loader fuzzer (clang, libFuzzer + ASan + UBSan) in build-fuzz/ and runs it for
# SECONDS (default 60) from a generated seed corpus, then the native (.ofm) loader fuzzer for
# NATIVE_FUZZ_SECONDS (default 30) from the same seeds converted to .ofm, then the inference
# server's request decoders for SERVE_FUZZ_SECONDS (default 30). Exits non-zero on any
# finding; the crashing input is left in build-fuzz/artifacts/ (native-artifacts/). The seed is fixed (FUZZ_SEED, default 1) so CI runs repeat;
# set FUZZ_SEED=0 for a random one in longer local campaigns.
#   usage: scripts/fuzz-smoke.sh [SECONDS]   (or FUZZ_SECONDS=N in the environment)
set -euo pipefail

SECONDS_TO_RUN=${1:-${FUZZ_SECONDS:-60}}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
PY=${PYTHON:-python3}
[ -d /usr/lib/ccache ] && export PATH=/usr/lib/ccache:$PATH

if ! command -v clang++ >/dev/null; then
  echo "fuzz-smoke: clang++ not found (scripts/setup.sh installs it)" >&2
  exit 1
fi

if [ ! -f "$BUILD/build.ninja" ]; then
  mkdir -p "$BUILD"
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DONEFLOW_BUILD_FUZZERS=ON -DONEFLOW_BUILD_TESTS=OFF -DONEFLOW_WITH_DNNL=OFF -DONEFLOW_WITH_CUDA=OFF >"$BUILD/configure.log" 2>&1 ||
    { cat "$BUILD/configure.log" >&2; exit 1; }
fi
ninja -C "$BUILD" -j"${FUZZ_JOBS:-2}" onnx_loader_fuzzer native_loader_fuzzer native_seed_writer serve_request_fuzzer
FUZZER=$BUILD/tests/fuzz/onnx_loader_fuzzer
[ -x "$FUZZER" ] || { echo "fuzz-smoke: $FUZZER was not built" >&2; exit 1; }

SEEDS=$BUILD/seeds
CORPUS=$BUILD/corpus
ARTIFACTS=$BUILD/artifacts
rm -rf "$SEEDS"
mkdir -p "$SEEDS" "$CORPUS" "$ARTIFACTS"
"$PY" "$ROOT/tests/fuzz/make_seed_corpus.py" "$SEEDS"
"$PY" "$ROOT/tests/c_api/make_c_api_fixture.py" "$BUILD/fixture" >/dev/null
find "$BUILD/fixture" -name '*.onnx' -size +0 -exec cp {} "$SEEDS/" \; 2>/dev/null || true

echo "fuzz-smoke: running onnx_loader_fuzzer for ${SECONDS_TO_RUN}s"
# malloc_limit: a model may not make the loader allocate more than its own size could justify.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
"$FUZZER" "$CORPUS" "$SEEDS" \
  -seed="${FUZZ_SEED:-1}" -max_total_time="$SECONDS_TO_RUN" -max_len=65536 -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
  -artifact_prefix="$ARTIFACTS/" -print_final_stats=1 2>"$BUILD/fuzz.log" || {
  rc=$?
  tail -n 80 "$BUILD/fuzz.log" >&2
  echo "fuzz-smoke: FINDING (exit $rc); inputs in $ARTIFACTS" >&2
  exit 1
}
grep -E "^(stat::number_of_executed_units|stat::new_units_added|Done)" "$BUILD/fuzz.log" || true
echo "fuzz-smoke: no findings in ${SECONDS_TO_RUN}s"

# ---- The native-format loader: seeds are the ONNX seeds converted to .ofm, plus a checkpoint. ----
NATIVE_SECONDS=${NATIVE_FUZZ_SECONDS:-30}
NATIVE_FUZZER=$BUILD/tests/fuzz/native_loader_fuzzer
NATIVE_SEEDS=$BUILD/native-seeds
NATIVE_CORPUS=$BUILD/native-corpus
NATIVE_ARTIFACTS=$BUILD/native-artifacts
rm -rf "$NATIVE_SEEDS"
mkdir -p "$NATIVE_SEEDS" "$NATIVE_CORPUS" "$NATIVE_ARTIFACTS"
ASAN_OPTIONS=detect_leaks=0 "$BUILD/tests/fuzz/native_seed_writer" "$NATIVE_SEEDS" "$SEEDS"/*.onnx >/dev/null
# Inputs that once found a defect, so every run re-checks them first (see the README there).
cp "$ROOT"/tests/fuzz/native_regressions/*.bin "$NATIVE_SEEDS/"
echo "fuzz-smoke: running native_loader_fuzzer for ${NATIVE_SECONDS}s"
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
"$NATIVE_FUZZER" "$NATIVE_CORPUS" "$NATIVE_SEEDS" \
  -seed="${FUZZ_SEED:-1}" -max_total_time="$NATIVE_SECONDS" -max_len=65536 -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
  -artifact_prefix="$NATIVE_ARTIFACTS/" -print_final_stats=1 2>"$BUILD/native-fuzz.log" || {
  rc=$?
  tail -n 80 "$BUILD/native-fuzz.log" >&2
  echo "fuzz-smoke: native FINDING (exit $rc); inputs in $NATIVE_ARTIFACTS" >&2
  exit 1
}
grep -E "^(stat::number_of_executed_units|stat::new_units_added|Done)" "$BUILD/native-fuzz.log" || true
echo "fuzz-smoke: native loader: no findings in ${NATIVE_SECONDS}s"

# ---- The inference server's request decoders (HTTP JSON/binary, gRPC messages -> tensors). ------
SERVE_SECONDS=${SERVE_FUZZ_SECONDS:-30}
SERVE_FUZZER=$BUILD/tests/fuzz/serve_request_fuzzer
SERVE_SEEDS=$BUILD/serve-seeds
SERVE_CORPUS=$BUILD/serve-corpus
SERVE_ARTIFACTS=$BUILD/serve-artifacts
rm -rf "$SERVE_SEEDS"
mkdir -p "$SERVE_SEEDS" "$SERVE_CORPUS" "$SERVE_ARTIFACTS"
"$PY" "$ROOT/tests/fuzz/make_serve_seeds.py" "$SERVE_SEEDS"
echo "fuzz-smoke: running serve_request_fuzzer for ${SERVE_SECONDS}s"
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
"$SERVE_FUZZER" "$SERVE_CORPUS" "$SERVE_SEEDS" \
  -seed="${FUZZ_SEED:-1}" -max_total_time="$SERVE_SECONDS" -max_len=65536 -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
  -artifact_prefix="$SERVE_ARTIFACTS/" -print_final_stats=1 2>"$BUILD/serve-fuzz.log" || {
  rc=$?
  tail -n 80 "$BUILD/serve-fuzz.log" >&2
  echo "fuzz-smoke: serve FINDING (exit $rc); inputs in $SERVE_ARTIFACTS" >&2
  exit 1
}
grep -E "^(stat::number_of_executed_units|stat::new_units_added|Done)" "$BUILD/serve-fuzz.log" || true
echo "fuzz-smoke: serve request decoders: no findings in ${SERVE_SECONDS}s"
