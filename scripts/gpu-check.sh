#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (the target is an H200, sm_90): configures and builds the CUDA
# backend, runs every GPU test, the bf16 GEMM benchmark and bench/gpu_bench.py (encoder training
# step and ResNet-18 vs PyTorch), and writes JUnit XML, logs and a
# summary under $OUT (default ./gpu-check-out). Budget: under 8 minutes (each stage has a timeout).
# Exit status: 0 only when everything built, every GPU test ran (none skipped) and passed, and the
# benchmarks' results were correct. Usage: [OUT=dir] [BUILD_DIR=dir] [JOBS=16] scripts/gpu-check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-check-out}
BUILD=${BUILD_DIR:-$PWD/build-gpu}
JOBS=${JOBS:-16}
mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
START=$(date +%s)
status=0
log() { echo "$*" | tee -a "$SUMMARY"; }
elapsed() { echo $(( $(date +%s) - START ))s; }
fail() { log "FAIL: $*"; status=1; }

log "gpu-check $(date -u +%FT%TZ) at $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || log "nvidia-smi unavailable"
head -n 12 "$OUT/nvidia-smi.txt" | sed 's/^/  /' >> "$SUMMARY"

# The build needs these; name every missing one at once rather than failing midway.
missing=""
for tool in cmake ninja nvcc protoc flatc; do command -v "$tool" > /dev/null || missing="$missing $tool"; done
if [ -n "$missing" ]; then
  fail "missing build tools:$missing (scripts/setup.sh installs them on Debian/Ubuntu)"
  exit 1
fi
if command -v ccache > /dev/null; then export CCACHE_BASEDIR=$PWD; log "ccache: on"; fi

# ---- Configure and build (sm_90 machine code + compute_90 PTX) --------------------------------
if ! timeout 240 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DONEFLOW_WITH_CUDA=ON \
     "-DCMAKE_CUDA_ARCHITECTURES=90-real;90-virtual" -DONEFLOW_BUILD_JAVA=OFF > "$OUT/configure.log" 2>&1; then
  fail "configure (see configure.log)"; tail -n 20 "$OUT/configure.log" | tee -a "$SUMMARY"; exit 1
fi
grep "CUDA backend" "$OUT/configure.log" | tee -a "$SUMMARY"
TARGETS="oneflow_cuda_tests oneflow_cuda_host_tests oneflow_cuda_c_api_test oneflow_gpu_gemm_bench liboneflow
         oneflow_cuda_session_tests oneflow_cuda_placement_tests oneflow_cli"
TARGETS="$TARGETS oneflow_cuda_train_tests"  # training kernels + fused optimizer (docs/training.md)
TARGETS="$TARGETS oneflow_mixed_precision_c_api_test"  # the C ABI's training device fields, on CUDA
TARGETS="$TARGETS oneflow_nccl_gpu_tests oneflow_nccl_host_tests"  # NCCL communicator + CUDA Boxing
if ! timeout 300 ninja -C "$BUILD" -j"$JOBS" $TARGETS > "$OUT/build.log" 2>&1; then
  fail "build (see build.log)"; grep -m 20 -E "error|FAILED" "$OUT/build.log" | tee -a "$SUMMARY"; exit 1
fi
log "built in $(elapsed)"

# ---- Tests: every GPU test must run (a skip on a GPU machine is a failure) ---------------------
run_gtest() {  # name binary [args...]
  local name=$1; shift
  timeout 300 "$@" --gtest_output="xml:$OUT/$name.xml" > "$OUT/$name.log" 2>&1
  local rc=$?
  local line; line=$(grep -E "^\[  (PASSED|FAILED) " "$OUT/$name.log" | tr '\n' ' ')
  local skipped; skipped=$(grep -oE "^\[  SKIPPED \] [0-9]+ test" "$OUT/$name.log" | grep -oE "[0-9]+" || true)
  skipped=${skipped:-0}
  log "$name: rc=$rc $line skipped=$skipped"
  [ "$rc" -eq 0 ] || fail "$name (see $name.log)"
  [ "$skipped" -eq 0 ] || fail "$name skipped tests on a GPU machine: $(grep -m1 'no CUDA device' "$OUT/$name.log")"
}
run_gtest cuda_gpu "$BUILD/tests/cuda/oneflow_cuda_tests" --gtest_filter='CudaDevice.*:CudaKernels.*'
run_gtest cuda_gpu_nn_tensor "$BUILD/tests/cuda/oneflow_cuda_tests" --gtest_filter='CudaNnKernels.*:CudaTensorKernels.*:CudaAttention.*'
run_gtest cuda_host "$BUILD/tests/cuda/oneflow_cuda_tests" --gtest_filter='CudaErrors.*:CudaRegistry.*'
run_gtest cuda_gpu_fused_elementwise "$BUILD/tests/cuda/oneflow_cuda_tests" --gtest_filter='CudaFusedElementwise.*'
run_gtest cuda_allocator "$BUILD/tests/cuda/oneflow_cuda_host_tests"
# Training sessions on CUDA vs the CPU: the bench's small transformer encoder is read from here.
export ONEFLOW_TRAIN_MODELS="$BUILD/gpu-check-train-models"
python3 bench/make_train_models.py "$ONEFLOW_TRAIN_MODELS" --small > "$OUT/train_models.log" 2>&1 ||
  fail "could not make the training models (see train_models.log)"
run_gtest cuda_train_gpu "$BUILD/tests/cuda_train/oneflow_cuda_train_tests"
TRAIN_FIXTURE="$BUILD/gpu-check-train-fixture"
if python3 tests/train/make_train_fixture.py "$TRAIN_FIXTURE" > "$OUT/train_fixture.log" 2>&1 &&
   timeout 120 "$BUILD/tests/cuda_train/oneflow_mixed_precision_c_api_test" "$TRAIN_FIXTURE" > "$OUT/train_c_api_cuda.log" 2>&1 &&
   ! grep -q "CUDA training run is skipped" "$OUT/train_c_api_cuda.log"; then
  log "train_c_api_cuda: passed ($(tail -n 1 "$OUT/train_c_api_cuda.log"))"
else
  fail "train_c_api_cuda (see train_c_api_cuda.log, train_fixture.log)"
fi
# NCCL on one GPU (1-rank communicator, init timeout/abort, boxing table with staged communicators);
# the NcclMultiGpu.* tests need 2-4 GPUs and run only where there are that many.
NCCL_FILTER='NcclOneRank.*:NcclTimeout.*:CudaBoxing.*'
grep -q "NCCL ON" "$OUT/configure.log" || { log "NCCL not found: only the staged CUDA boxing table runs"; NCCL_FILTER='CudaBoxing.*'; }
run_gtest nccl_gpu "$BUILD/tests/nccl/oneflow_nccl_gpu_tests" --gtest_filter="$NCCL_FILTER"
run_gtest nccl_host "$BUILD/tests/nccl/oneflow_nccl_host_tests"
if [ "$NCCL_FILTER" != 'CudaBoxing.*' ] && [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -ge 4 ]; then
  run_gtest nccl_multi_gpu "$BUILD/tests/nccl/oneflow_nccl_gpu_tests" --gtest_filter='NcclMultiGpu.*'
fi
run_gtest cuda_session_gpu "$BUILD/tests/cuda/oneflow_cuda_session_tests" --gtest_filter='CudaSession.*'
run_gtest cuda_placement "$BUILD/tests/cuda/oneflow_cuda_placement_tests"
FIXTURE="$BUILD/gpu-check-fixture"
if python3 tests/c_api/make_c_api_fixture.py "$FIXTURE" > "$OUT/c_api_fixture.log" 2>&1; then
  if timeout 60 "$BUILD/tests/cuda/oneflow_cuda_c_api_test" "$FIXTURE/model.onnx" > "$OUT/cuda_c_api.log" 2>&1; then
    log "cuda_c_api: passed ($(grep -m1 'device 0' "$OUT/cuda_c_api.log"))"
  else
    fail "cuda_c_api (see cuda_c_api.log)"
  fi
else
  fail "could not make the C API fixture model (python3 with onnx; see c_api_fixture.log)"
fi
# The CLI on the device: `oneflow run --device cuda` writes what the CPU run writes; bench times it.
if [ -f "$FIXTURE/model.onnx" ] && timeout 120 python3 - "$BUILD/oneflow" "$FIXTURE" "$OUT/cli" > "$OUT/cuda_cli.log" 2>&1 <<'PY'
import os, subprocess, sys
import numpy as np
bin_, fixture, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
b = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
np.save(f"{work}/x.npy", x); np.save(f"{work}/b.npy", b)
for dev in ("cpu", "cuda", "cuda:0"):
    subprocess.run([bin_, "run", f"{fixture}/model.onnx", "--input", f"x={work}/x.npy", "--input", f"b={work}/b.npy",
                    "--output-dir", f"{work}/{dev.replace(':', '_')}", "--device", dev], check=True)
y = np.maximum(x + b, 0) + x
for dev in ("cpu", "cuda", "cuda_0"):
    assert np.array_equal(np.load(f"{work}/{dev}/y.npy"), y), dev
print(subprocess.run([bin_, "bench", f"{fixture}/model.onnx", "--shape", "x=64x4", "--shape", "b=64x4", "--device", "cuda",
                      "--cuda-graphs", "on"], check=True, capture_output=True, text=True).stdout.strip())
print("cuda_cli: passed")
PY
then
  log "cuda_cli: passed ($(grep -m1 p50_ms "$OUT/cuda_cli.log"))"
else
  fail "cuda_cli (see cuda_cli.log)"
fi
log "tests done at $(elapsed)"

# ---- Benchmark: bf16 GEMM 8192^3, ours vs cuBLAS in the same run -----------------------------
if timeout 180 "$BUILD/tests/cuda/oneflow_gpu_gemm_bench" 8192 8192 8192 --reps 20 --out "$OUT/gemm_bench.txt" \
     > "$OUT/gemm_bench.log" 2>&1; then
  cat "$OUT/gemm_bench.txt" | tee -a "$SUMMARY"
else
  fail "gemm bench (see gemm_bench.log)"; tail -n 5 "$OUT/gemm_bench.log" | tee -a "$SUMMARY"
fi

# ---- Benchmark: encoder training step and ResNet-18 inference, ours vs PyTorch CUDA (same run) ---
if python3 -c "import torch; assert torch.cuda.is_available()" > /dev/null 2>&1; then
  if timeout 200 python3 bench/gpu_bench.py --lib "$BUILD/liboneflow.so" --models-dir "$BUILD/gpu-bench-models" \
       --iters 20 --json "$OUT/gpu_bench.json" > "$OUT/gpu_bench.txt" 2> "$OUT/gpu_bench.log"; then
    cat "$OUT/gpu_bench.txt" | tee -a "$SUMMARY"
  else
    fail "gpu bench (a check failed or it timed out; see gpu_bench.txt, gpu_bench.log)"
    tail -n 20 "$OUT/gpu_bench.txt" "$OUT/gpu_bench.log" | tee -a "$SUMMARY"
  fi
else
  fail "gpu bench: python3 cannot use torch with CUDA here"
fi

log "total $(elapsed); status $status"
exit $status
