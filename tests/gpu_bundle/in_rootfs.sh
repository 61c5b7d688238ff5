#!/usr/bin/env bash
# Runs inside a minimal root file system (tests/gpu_bundle/rootfs_test.sh): the GPU bundle's host
# side on a system with no compiler, no -dev package and no GPU. Every program must load; host tests
# pass; GPU tests skip with "no CUDA device"; the CLI and the C ABI say there is no device.
# usage: in_rootfs.sh BUNDLE_DIR FIXTURE_DIR
set -uo pipefail
BUNDLE=$1 FIXTURE=$2
failures=0
check() {  # description, then a command that must succeed
  local what=$1; shift
  if "$@" > /tmp/check.log 2>&1; then echo "ok   $what"; else echo "FAIL $what:"; tail -n 15 /tmp/check.log | sed 's/^/     /'; failures=$((failures + 1)); fi
}
# The root file system is what it claims: no toolchain, no headers.
for tool in cc gcc g++ c++ clang nvcc ld protoc flatc; do
  if command -v "$tool" > /dev/null; then echo "FAIL the root file system has $tool"; failures=$((failures + 1)); fi
done
[ ! -e /usr/include/google/protobuf ] || { echo "FAIL the root file system has the protobuf headers"; failures=$((failures + 1)); }

# shellcheck source=/dev/null
check "env.sh resolves every library of the bundle" source "$BUNDLE/env.sh"
source "$BUNDLE/env.sh" > /dev/null 2>&1
for f in "$BUNDLE"/bin/*; do
  check "$(basename "$f") loads" bash -c "! ldd '$f' | grep 'not found'"
done

gtest_host() {  # binary filter: host tests run and pass
  "$BUNDLE/bin/$1" --gtest_filter="$2" > /tmp/gt.log 2>&1 || { cat /tmp/gt.log; return 1; }
  grep -q "^\[  PASSED  \]" /tmp/gt.log || { cat /tmp/gt.log; return 1; }
  ! grep -q "^\[  SKIPPED \]" /tmp/gt.log || { echo "host tests skipped"; cat /tmp/gt.log; return 1; }
}
gtest_gpu_skips() {  # binary filter: GPU tests exist and each skips naming the missing device
  "$BUNDLE/bin/$1" --gtest_filter="$2" > /tmp/gt.log 2>&1 || { cat /tmp/gt.log; return 1; }
  local ran skipped
  ran=$(grep -oE "^\[==========\] [0-9]+ tests? from .* ran" /tmp/gt.log | grep -oE "[0-9]+" | head -n 1)
  skipped=$(grep -oE "^\[  SKIPPED \] [0-9]+ test" /tmp/gt.log | grep -oE "[0-9]+")
  [ "${ran:-0}" -gt 0 ] && [ "$ran" = "${skipped:-0}" ] && grep -q "no CUDA device" /tmp/gt.log ||
    { echo "ran=$ran skipped=$skipped"; cat /tmp/gt.log; return 1; }
}
check "cuda host tests" gtest_host oneflow_cuda_tests 'CudaErrors.*:CudaRegistry.*:CudaNoDevice.*'
check "caching allocator tests" gtest_host oneflow_cuda_host_tests '*'
check "placement tests" gtest_host oneflow_cuda_placement_tests '*'
check "session no-device tests" gtest_host oneflow_cuda_session_tests 'CudaNoDevice.*'
check "NCCL host tests" gtest_host oneflow_nccl_host_tests '*'
check "CUDA kernel tests skip" gtest_gpu_skips oneflow_cuda_tests 'CudaKernels.*:CudaNnKernels.*:CudaTensorKernels.*'
check "CUDA session tests skip" gtest_gpu_skips oneflow_cuda_session_tests 'CudaSession.*'
check "CUDA training tests skip" gtest_gpu_skips oneflow_cuda_train_tests '-CudaTrainKernels.Registered'
check "oneflow info" "$BUNDLE/bin/oneflow" info "$FIXTURE/model.onnx"
check "oneflow bench --device cuda names the missing device" bash -c \
  "! '$BUNDLE/bin/oneflow' bench '$FIXTURE/model.onnx' --shape x=2x4 --shape b=2x4 --device cuda --iters 1 2> /tmp/err.txt && grep -q 'no CUDA device' /tmp/err.txt"
check "oneflow bench on the CPU" "$BUNDLE/bin/oneflow" bench "$FIXTURE/model.onnx" --shape x=2x4 --shape b=2x4 --iters 3
check "the C ABI test (no device)" "$BUNDLE/bin/oneflow_cuda_c_api_test" "$FIXTURE/model.onnx"
check "the GEMM bench says it measured nothing" bash -c \
  "'$BUNDLE/bin/oneflow_gpu_gemm_bench' 64 64 64; test \$? -eq 2"
echo "in_rootfs: $failures failed"
[ "$failures" -eq 0 ]
