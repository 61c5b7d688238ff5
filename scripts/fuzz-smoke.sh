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

# run_fuzzer LABEL FUZZER SECONDS CORPUS SEEDS ARTIFACTS LOG: one libFuzzer campaign; on a finding,
# the log's tail and the inputs' folder, and exit 1.
run_fuzzer() {
  local label=$1 fuzzer=$2 seconds=$3 corpus=$4 seeds=$5 artifacts=$6 log=$7
  echo "fuzz-smoke: running $(basename "$fuzzer") for ${seconds}s"
  # malloc_limit: an input may not make the code under test allocate more than its size could justify.
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  "$fuzzer" "$corpus" "$seeds" \
    -seed="${FUZZ_SEED:-1}" -max_total_time="$seconds" -max_len=65536 -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 2>"$log" || {
    local rc=$?
    tail -n 80 "$log" >&2
    echo "fuzz-smoke: ${label}FINDING (exit $rc); inputs in $artifacts" >&2
    exit 1
  }
  grep -E "^(stat::number_of_executed_units|stat::new_units_added|Done)" "$log" || true
}

SEEDS=$BUILD/seeds
CORPUS=$BUILD/corpus
ARTIFACTS=$BUILD/artifacts
rm -rf "$SEEDS"
mkdir -p "$SEEDS" "$CORPUS" "$ARTIFACTS"
"$PY" "$ROOT/tests/fuzz/make_seed_corpus.py" "$SEEDS"
"$PY" "$ROOT/tests/c_api/make_c_api_fixture.py" "$BUILD/fixture" >/dev/null
find "$BUILD/fixture" -name '*.onnx' -size +0 -exec cp {} "$SEEDS/" \; 2>/dev/null || true

run_fuzzer "" "$FUZZER" "$SECONDS_TO_RUN" "$CORPUS" "$SEEDS" "$ARTIFACTS" "$BUILD/fuzz.log"
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
run_fuzzer "native " "$NATIVE_FUZZER" "$NATIVE_SECONDS" "$NATIVE_CORPUS" "$NATIVE_SEEDS" "$NATIVE_ARTIFACTS" \
  "$BUILD/native-fuzz.log"
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
run_fuzzer "serve " "$SERVE_FUZZER" "$SERVE_SECONDS" "$SERVE_CORPUS" "$SERVE_SEEDS" "$SERVE_ARTIFACTS" \
  "$BUILD/serve-fuzz.log"
echo "fuzz-smoke: serve request decoders: no findings in ${SERVE_SECONDS}s"
