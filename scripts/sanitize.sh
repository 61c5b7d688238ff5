#!/usr/bin/env bash
# Sanitizer runs (called by scripts/test.sh; each build dir is ccache-backed and incremental):
#   asan  build-asan/: AddressSanitizer + UBSan (-DONEFLOW_SANITIZE=ON, CUDA off), then the unit tests
#         and the C ABI tests; any report fails the run (UBSan does not recover)
#   tsan  build-tsan/: ThreadSanitizer (-DONEFLOW_TSAN=ON, CUDA and oneDNN off: oneDNN's OpenMP runtime
#         is not instrumented), then the concurrency tests: the thread pool with concurrent callers,
#         threaded kernels, several threads running one session through the C ABI, the shared-memory
#         communicator, boxing across threads
#   all   both (the default)
# usage: scripts/sanitize.sh [asan|tsan|all]      (JOBS sets build parallelism)
# The fixtures the C tests read are made by Python (tests/c_api/make_c_api_fixture.py) through ctest.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
MODE=${1:-all}
JOBS=${JOBS:-2}
[ -d /usr/lib/ccache ] && export PATH=/usr/lib/ccache:$PATH
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}
# -O1: sanitized code at -O3 takes about twice as long to compile on CI's two cores, and the tests
# it runs are correctness tests, not timings.
COMMON=(-G Ninja -DCMAKE_BUILD_TYPE=Release "-DCMAKE_C_FLAGS_RELEASE=-O1 -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG"
        -DONEFLOW_WITH_CUDA=OFF -DONEFLOW_BUILD_JAVA=OFF -DONEFLOW_NATIVE_ARCH=ON)

run_asan() {
  echo "== ASan + UBSan: build-asan (unit and C ABI tests)"
  mkdir -p build-asan
  cmake -S . -B build-asan "${COMMON[@]}" -DONEFLOW_SANITIZE=ON > build-asan/configure.log 2>&1 ||
    { tail -n 30 build-asan/configure.log; exit 1; }
  ninja -C build-asan -j"$JOBS" oneflow_unit_tests liboneflow oneflow_c_api_test oneflow_c_api_enum_args_test oneflow_server_c_api_test \
    oneflow_header_c99_test oneflow_header_cxx_test oneflow_tcp_store_tests
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
  # The unit tests (gtest, every case) and the C ABI tests through ctest (fixtures made by Python).
  build-asan/tests/oneflow_unit_tests --gtest_brief=1
  (cd build-asan && ctest --output-on-failure -R '^c_api')
  build-asan/tests/distributed/oneflow_tcp_store_tests --gtest_brief=1  # the rendezvous store: gRPC reactors, exits
  unset UBSAN_OPTIONS ASAN_OPTIONS
}

run_tsan() {
  echo "== TSan: build-tsan (concurrency tests)"
  mkdir -p build-tsan
  cmake -S . -B build-tsan "${COMMON[@]}" -DONEFLOW_TSAN=ON -DONEFLOW_WITH_DNNL=OFF > build-tsan/configure.log 2>&1 ||
    { tail -n 30 build-tsan/configure.log; exit 1; }
  ninja -C build-tsan -j"$JOBS" oneflow_unit_tests liboneflow oneflow_c_api_test oneflow_shm_group_tests
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
  build-tsan/tests/oneflow_unit_tests --gtest_brief=1 \
    --gtest_filter='ExecutorConcurrency.*:ThreadPool.*:TensorOps.*Threaded*:Reduce.*Threads*:Elementwise.UnaryParallelMatchesSerial:SbpBoxing*.*:ConvGrad.Float32MultiThreaded*:ServeScheduler.*'
  (cd build-tsan && ctest --output-on-failure -R '^c_api$')
  build-tsan/tests/distributed/oneflow_shm_group_tests --gtest_brief=1
  unset TSAN_OPTIONS
}

case "$MODE" in
  asan) run_asan ;;
  tsan) run_tsan ;;
  all) run_asan; run_tsan ;;
  *) echo "usage: $0 [asan|tsan|all]" >&2; exit 2 ;;
esac
echo "== sanitizers: passed ($MODE)"
