#!/usr/bin/env bash
# Runs the CUDA backend's checks on a GPU machine from the prebuilt bundle (scripts/gpu-bundle.sh):
# nothing is built there. One step per call, each well inside 8 minutes:
#
#   tests     (a) every GPU test binary (kernels, device layer, sessions, CUDA graphs, training, NCCL
#             on one rank, the C ABI, the CLI); a failing binary is run again with
#             CUDA_LAUNCH_BLOCKING=1 so its first error points at the launch that failed
#   memcheck  (b) compute-sanitizer --tool memcheck over the kernel and session tests
#   bench     (c) GEMM (bf16, f16, tf32) against cuBLAS; the encoder training step and ResNet-18
#             inference against PyTorch, in the same run
#   all       tests, then memcheck and bench
#
# Results go to $OUT (default ./gpu-check-out): summary.txt, and logs.tar.gz with every log and
# JUnit file (the device tool returns at most 8 files). Exit status 0 only when every check ran and
# passed; on a GPU machine a skipped GPU test is a failure.
#
# With the device tool (docs/cuda.md, "Running on a lent GPU"):
#   run(command="bash scripts/gpu-check.sh tests", carry=["gpu-bundle"], timeout_s=480)
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
STEP=${1:-tests}
OUT=${OUT:-$ROOT/gpu-check-out}
BUNDLE=${BUNDLE:-$ROOT/gpu-bundle}
WORK=${WORK:-/tmp/gpu-check-work}
mkdir -p "$OUT" "$WORK/logs"
LOGS=$WORK/logs
SUMMARY=$OUT/summary.txt
START=$(date +%s)
status=0
log() { echo "$*" | tee -a "$SUMMARY"; }
fail() { log "FAIL: $*"; status=1; }
elapsed() { echo "$(( $(date +%s) - START ))s"; }
finish() {
  tar -C "$WORK" -czf "$OUT/logs.tar.gz" logs 2> /dev/null
  log "step $STEP: total $(elapsed); status $status"
  exit $status
}

case "$STEP" in tests | memcheck | bench | all) ;; *)
  echo "usage: $0 tests|memcheck|bench|all" >&2; exit 2 ;;
esac
log "gpu-check $STEP $(date -u +%FT%TZ) at $(git rev-parse --short HEAD 2> /dev/null || echo '?')"
if [ ! -f "$BUNDLE/env.sh" ]; then
  fail "no bundle at $BUNDLE: build it with scripts/gpu-bundle.sh and carry gpu-bundle"; finish
fi
head -n 3 "$BUNDLE/MANIFEST" | sed 's/^/  bundle: /' | tee -a "$SUMMARY"
# shellcheck source=/dev/null
if ! source "$BUNDLE/env.sh" >> "$SUMMARY" 2>&1; then
  tail -n 6 "$SUMMARY"; fail "the bundle's libraries do not resolve (above)"; finish
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader \
  2>&1 | sed 's/^/  gpu: /' | tee -a "$SUMMARY"
grep -m1 "model name" /proc/cpuinfo | sed 's/^.*: /  cpu: /' | tee -a "$SUMMARY"
B=$BUNDLE/bin

# name timeout binary [args...]: a gtest binary; a rerun with CUDA_LAUNCH_BLOCKING=1 when it fails.
run_gtest() {
  local name=$1 limit=$2; shift 2
  timeout "$limit" "$@" --gtest_output="xml:$LOGS/$name.xml" > "$LOGS/$name.log" 2>&1
  local rc=$?
  local line skipped failed
  line=$(grep -E "^\[  (PASSED|FAILED) " "$LOGS/$name.log" | tr '\n' ' ')
  skipped=$(grep -oE "^\[  SKIPPED \] [0-9]+ test" "$LOGS/$name.log" | grep -oE "[0-9]+" || true)
  log "$name: rc=$rc ${line:-(no summary: crashed or timed out)} skipped=${skipped:-0}"
  if [ "$rc" -ne 0 ]; then
    failed=$(grep -E "^\[  FAILED  \] [A-Za-z_0-9]+\.[A-Za-z_0-9/]+" "$LOGS/$name.log" | awk '{print $4}' | sort -u | tr '\n' ':')
    fail "$name ($(echo "$failed" | tr ':' ' '))"
    grep -E -m 12 "Failure|error|Error|what\(\)" "$LOGS/$name.log" | cut -c1-300 | sed 's/^/    /' | tee -a "$SUMMARY"
    # The first failing test again, with synchronous launches: the error lands on its launch.
    local first=${failed%%:*}
    if [ -n "$first" ]; then
      CUDA_LAUNCH_BLOCKING=1 timeout 60 "$@" --gtest_filter="$first" > "$LOGS/$name.blocking.log" 2>&1
      log "    rerun of $first with CUDA_LAUNCH_BLOCKING=1: rc=$?"
      grep -E -m 6 "Failure|error|Error|what\(\)" "$LOGS/$name.blocking.log" | cut -c1-300 | sed 's/^/    /' | tee -a "$SUMMARY"
    fi
  fi
  [ "${skipped:-0}" -eq 0 ] || fail "$name skipped tests on a GPU machine: $(grep -m1 -o 'no CUDA device.*' "$LOGS/$name.log")"
}

step_tests() {
  run_gtest cuda_gpu 100 "$B/oneflow_cuda_tests" --gtest_filter='CudaDevice.*:CudaKernels.*'
  run_gtest cuda_gpu_nn_tensor 100 "$B/oneflow_cuda_tests" --gtest_filter='CudaNnKernels.*:CudaTensorKernels.*:CudaAttention.*'
  run_gtest cuda_gpu_fused_elementwise 60 "$B/oneflow_cuda_tests" --gtest_filter='CudaFusedElementwise.*'
  run_gtest cuda_host 30 "$B/oneflow_cuda_tests" --gtest_filter='CudaErrors.*:CudaRegistry.*'
  run_gtest cuda_allocator 30 "$B/oneflow_cuda_host_tests"
  run_gtest cuda_placement 30 "$B/oneflow_cuda_placement_tests"
  run_gtest cuda_session_gpu 100 "$B/oneflow_cuda_session_tests" --gtest_filter='CudaSession.*'
  # Training on CUDA against the CPU: the bench's small transformer encoder is read from here.
  export ONEFLOW_TRAIN_MODELS=$WORK/train-models
  python3 bench/make_train_models.py "$ONEFLOW_TRAIN_MODELS" --small > "$LOGS/train_models.log" 2>&1 ||
    fail "could not make the training models (train_models.log)"
  run_gtest cuda_train_gpu 120 "$B/oneflow_cuda_train_tests"
  if python3 tests/train/make_train_fixture.py "$WORK/train-fixture" > "$LOGS/train_fixture.log" 2>&1 &&
     timeout 120 "$B/oneflow_mixed_precision_c_api_test" "$WORK/train-fixture" > "$LOGS/train_c_api_cuda.log" 2>&1 &&
     ! grep -q "CUDA training run is skipped" "$LOGS/train_c_api_cuda.log"; then
    log "train_c_api_cuda: passed ($(tail -n 1 "$LOGS/train_c_api_cuda.log"))"
  else
    fail "train_c_api_cuda"; tail -n 8 "$LOGS/train_c_api_cuda.log" "$LOGS/train_fixture.log" 2> /dev/null | sed 's/^/    /' | tee -a "$SUMMARY"
  fi
  # NCCL on one GPU (1-rank communicator, init timeout/abort, CUDA boxing with staged communicators).
  run_gtest nccl_gpu 90 "$B/oneflow_nccl_gpu_tests" --gtest_filter='NcclOneRank.*:NcclTimeout.*:CudaBoxing.*'
  run_gtest nccl_host 30 "$B/oneflow_nccl_host_tests"
  if [ "$(nvidia-smi -L 2> /dev/null | wc -l)" -ge 2 ]; then
    run_gtest nccl_multi_gpu 180 "$B/oneflow_nccl_gpu_tests" --gtest_filter='NcclMultiGpu.*'
  else
    log "nccl_multi_gpu: not run (one GPU; it needs 2-4)"
  fi
  # The C ABI and the CLI on the device.
  local fixture=$WORK/c-api-fixture
  if python3 tests/c_api/make_c_api_fixture.py "$fixture" > "$LOGS/c_api_fixture.log" 2>&1; then
    if timeout 60 "$B/oneflow_cuda_c_api_test" "$fixture/model.onnx" > "$LOGS/cuda_c_api.log" 2>&1; then
      log "cuda_c_api: passed ($(grep -m1 'device 0' "$LOGS/cuda_c_api.log"))"
    else
      fail "cuda_c_api"; tail -n 8 "$LOGS/cuda_c_api.log" | sed 's/^/    /' | tee -a "$SUMMARY"
    fi
    if timeout 120 python3 tests/cuda/cli_device_test.py "$B/oneflow" "$fixture" "$WORK/cli" > "$LOGS/cuda_cli.log" 2>&1; then
      log "cuda_cli: passed ($(tail -n 1 "$LOGS/cuda_cli.log"))"
    else
      fail "cuda_cli"; tail -n 8 "$LOGS/cuda_cli.log" | sed 's/^/    /' | tee -a "$SUMMARY"
    fi
  else
    fail "could not make the C API fixture model (c_api_fixture.log)"
  fi
  log "tests done at $(elapsed)"
}

step_memcheck() {
  if ! command -v compute-sanitizer > /dev/null; then fail "compute-sanitizer is not on PATH"; return; fi
  # A subset that touches every kernel file once at small sizes: memcheck slows kernels 10-100x.
  local filters=('CudaKernels.*' 'CudaTensorKernels.*' 'CudaNnKernels.*' 'CudaFusedElementwise.*' 'CudaAttention.*')
  for f in "${filters[@]}"; do
    local name="memcheck_${f%%.*}"
    timeout "${MEMCHECK_SECONDS:-45}" compute-sanitizer --tool memcheck --leak-check no --error-exitcode 86 --print-limit 20 \
      "$B/oneflow_cuda_tests" --gtest_filter="$f" --gtest_brief=1 > "$LOGS/$name.log" 2>&1
    local rc=$?
    local errors
    errors=$(grep -oE "ERROR SUMMARY: [0-9]+ error" "$LOGS/$name.log" | tail -n 1)
    log "$name: rc=$rc ${errors:-(no summary)}"
    [ "$rc" -eq 0 ] || { fail "$name"; grep -E -m 8 "Invalid|Address|at 0x|by thread|FAILED" "$LOGS/$name.log" | cut -c1-240 | sed 's/^/    /' | tee -a "$SUMMARY"; }
  done
  timeout "${MEMCHECK_SECONDS:-45}" compute-sanitizer --tool memcheck --leak-check no --error-exitcode 86 --print-limit 20 \
    "$B/oneflow_cuda_session_tests" --gtest_filter='CudaSession.*' --gtest_brief=1 > "$LOGS/memcheck_session.log" 2>&1
  local rc=$?
  log "memcheck_session: rc=$rc $(grep -oE 'ERROR SUMMARY: [0-9]+ error' "$LOGS/memcheck_session.log" | tail -n 1)"
  [ "$rc" -eq 0 ] || fail "memcheck_session"
  log "memcheck done at $(elapsed)"
}

step_bench() {
  local dt
  for dt in bf16 f16 tf32; do
    if timeout 40 "$B/oneflow_gpu_gemm_bench" 8192 8192 8192 --dtype "$dt" --reps 20 > "$LOGS/gemm_$dt.log" 2>&1; then
      grep -E "ours|cublas|ratio|TFLOP" "$LOGS/gemm_$dt.log" | sed "s/^/  gemm $dt: /" | tee -a "$SUMMARY"
    else
      fail "gemm bench $dt"; tail -n 5 "$LOGS/gemm_$dt.log" | sed 's/^/    /' | tee -a "$SUMMARY"
    fi
  done
  if python3 -c "import torch; assert torch.cuda.is_available()" > /dev/null 2>&1; then
    if timeout 150 python3 bench/gpu_bench.py --lib "$BUNDLE/lib/liboneflow.so" --models-dir "$WORK/gpu-bench-models" \
         --iters "${BENCH_ITERS:-15}" --json "$OUT/gpu_bench.json" > "$LOGS/gpu_bench.txt" 2> "$LOGS/gpu_bench.log"; then
      cat "$LOGS/gpu_bench.txt" | tee -a "$SUMMARY"
    else
      fail "gpu bench (a check failed or it timed out)"
      tail -n 20 "$LOGS/gpu_bench.txt" "$LOGS/gpu_bench.log" | cut -c1-300 | tee -a "$SUMMARY"
    fi
  else
    fail "gpu bench: python3 cannot use torch with CUDA here"
  fi
  log "bench done at $(elapsed)"
}

case "$STEP" in
  tests) step_tests ;;
  memcheck) step_memcheck ;;
  bench) step_bench ;;
  all) step_tests; step_memcheck; step_bench ;;
esac
finish
