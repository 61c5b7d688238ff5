#!/usr/bin/env bash
# Builds the GPU bundle: a self-contained folder that runs the CUDA backend's tests and benchmarks on
# a GPU machine that has the NVIDIA driver, the CUDA math libraries and python3 (numpy, onnx, torch)
# but none of our build dependencies (the lent H200 image; docs/cuda.md, "The GPU bundle").
#
#   gpu-bundle/bin/   the CLI, the GPU test executables, the GPU benchmarks (run path $ORIGIN/../lib)
#   gpu-bundle/lib/   liboneflow.so, liboneflow_core.so (the engine, sm_90 SASS + compute_90 PTX),
#                     and every non-system library they need that the image does not bring
#   gpu-bundle/env.sh finds cuBLAS(Lt), cuDNN and NCCL on the target (the CUDA toolkit or the
#                     nvidia-* Python wheels beside PyTorch) and names whatever is missing
#   gpu-bundle/MANIFEST  what was built, from which commit, with which flags
#
# Carried, not built, on the target: cuBLAS/cuBLASLt (500+ MB), cuDNN (450+ MB) and NCCL (200 MB)
# are far over the bundle's 60 MiB, and the image has them beside its PyTorch. cudart is carried
# (under 1 MB): the bundle then runs on the CUDA runtime it was built against.
#
# The host code targets x86-64-v3 (AVX2+FMA), not this machine's CPU: the target's CPU is not ours;
# the CPU kernels carry an AVX-512 copy beside it, picked at run time (base/cpu_isa.h).
# oneDNN is left out (40 MB): the GPU tests' CPU references use the built-in kernels.
#
# usage: scripts/gpu-bundle.sh            (BUILD_DIR, BUNDLE_DIR, JOBS override the defaults)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BUILD=${BUILD_DIR:-$ROOT/build-gpu-bundle}
BUNDLE=${BUNDLE_DIR:-$ROOT/gpu-bundle}
JOBS=${JOBS:-2}
MAX_MIB=${MAX_MIB:-60}

[ -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc > /dev/null && export PATH=/usr/local/cuda/bin:$PATH
command -v nvcc > /dev/null || { echo "gpu-bundle: nvcc not found (the CUDA toolkit is needed to build the bundle)" >&2; exit 1; }
command -v patchelf > /dev/null || { echo "gpu-bundle: patchelf not found (scripts/setup.sh installs it)" >&2; exit 1; }
[ -d /usr/lib/ccache ] && export PATH=/usr/lib/ccache:$PATH
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}

ARCH_FLAGS="-march=x86-64-v3 (CPU kernels also avx512;avx512_vnni)"
mkdir -p "$BUILD"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DONEFLOW_WITH_CUDA=ON \
  "-DCMAKE_CUDA_ARCHITECTURES=90-real;90-virtual" -DONEFLOW_SHARED_CORE=ON -DONEFLOW_NATIVE_ARCH=OFF \
  -DONEFLOW_WITH_DNNL=OFF -DONEFLOW_BUILD_JAVA=OFF -DONEFLOW_BASELINE_ARCH=x86-64-v3 "-DONEFLOW_CPU_TIERS=avx512;avx512_vnni" \
  > "$BUILD/configure.log" 2>&1 || { tail -n 30 "$BUILD/configure.log"; exit 1; }
grep -q "CUDA backend: on" "$BUILD/configure.log" || { echo "gpu-bundle: the CUDA backend is off:"; grep "CUDA backend" "$BUILD/configure.log"; exit 1; }

# Executables that go into bin/ (test binaries from tests/, benches), then what they need.
GTESTS=(tests/cuda/oneflow_cuda_tests tests/cuda/oneflow_cuda_host_tests tests/cuda/oneflow_cuda_session_tests
        tests/cuda/oneflow_cuda_placement_tests tests/cuda_train/oneflow_cuda_train_tests
        tests/nccl/oneflow_nccl_gpu_tests tests/nccl/oneflow_nccl_host_tests)
PROGRAMS=(oneflow tests/cuda/oneflow_cuda_c_api_test tests/cuda_train/oneflow_mixed_precision_c_api_test
          tests/cuda/oneflow_gpu_gemm_bench)
TARGETS=(liboneflow oneflow_core oneflow_cli)
for p in "${GTESTS[@]}" "${PROGRAMS[@]}"; do
  [ "$p" = oneflow ] || TARGETS+=("$(basename "$p")")
done
ninja -C "$BUILD" -j"$JOBS" "${TARGETS[@]}"

rm -rf "$BUNDLE.tmp"
mkdir -p "$BUNDLE.tmp/bin" "$BUNDLE.tmp/lib"
for p in "${GTESTS[@]}" "${PROGRAMS[@]}"; do cp "$BUILD/$p" "$BUNDLE.tmp/bin/"; done
cp -P "$BUILD"/liboneflow.so* "$BUILD/liboneflow_core.so" "$BUNDLE.tmp/lib/"

# Non-system dependencies: whatever the binaries resolve outside the C/C++ runtime and the driver,
# except the CUDA libraries that env.sh finds on the target.
is_system() {  # libraries every Linux with a C++ runtime has, and the NVIDIA driver's own
  case "$1" in
    linux-vdso* | ld-linux* | libc.so* | libm.so* | libdl.so* | librt.so* | libpthread.so* | libgcc_s.so* | \
    libstdc++.so* | libcuda.so* | libnvidia-*) return 0 ;;
  esac
  return 1
}
from_target() {  # large CUDA libraries the target brings (env.sh); keep in step with env.sh
  case "$1" in
    libcublas.so* | libcublasLt.so* | libcudnn*.so* | libnccl.so*) return 0 ;;
  esac
  return 1
}
for f in "$BUNDLE.tmp"/bin/* "$BUNDLE.tmp"/lib/liboneflow*.so; do
  LD_LIBRARY_PATH="$BUNDLE.tmp/lib" ldd "$f" | awk '/=>/ { print $1, $3 }'
done | sort -u | while read -r name path; do
  if is_system "$name" || from_target "$name" || [ -e "$BUNDLE.tmp/lib/$name" ]; then continue; fi
  [ "$path" != "not" ] || { echo "gpu-bundle: $name is not found here" >&2; exit 1; }
  cp -L "$path" "$BUNDLE.tmp/lib/$name"
done
strip --strip-unneeded "$BUNDLE.tmp"/bin/* "$BUNDLE.tmp"/lib/*.so* 2> /dev/null || true
for f in "$BUNDLE.tmp"/bin/*; do patchelf --set-rpath '$ORIGIN/../lib' "$f"; done
for f in "$BUNDLE.tmp"/lib/*.so*; do [ -L "$f" ] || patchelf --set-rpath '$ORIGIN' "$f"; done
cp scripts/gpu-bundle-env.sh "$BUNDLE.tmp/env.sh"

{
  echo "commit $(git rev-parse HEAD 2> /dev/null || echo unknown)$(git diff --quiet 2> /dev/null || echo ' (with local changes)')"
  echo "built $(date -u +%FT%TZ) on $(. /etc/os-release && echo "$PRETTY_NAME"), $(nvcc --version | tail -n 1)"
  echo "host flags $ARCH_FLAGS; CUDA architectures 90-real;90-virtual"
  echo "needs from the target: $(ldd "$BUNDLE.tmp/lib/liboneflow_core.so" | awk '/=>/ { print $1 }' |
    grep -E '^lib(cublas|cublasLt|cudnn)' | tr '\n' ' ')libnccl.so.2 (dlopen), libcuda.so.1 (the driver)"
  echo "GLIBC up to $(objdump -T "$BUNDLE.tmp"/bin/* "$BUNDLE.tmp"/lib/*.so* 2> /dev/null | grep -oE 'GLIBC_[0-9.]+' | sort -uV | tail -n 1)," \
       "GLIBCXX up to $(objdump -T "$BUNDLE.tmp"/bin/* "$BUNDLE.tmp"/lib/*.so* 2> /dev/null | grep -oE 'GLIBCXX_[0-9.]+' | sort -uV | tail -n 1)"
  (cd "$BUNDLE.tmp" && find . -type f | sort | xargs du -k | awk '{ printf "%8d KiB  %s\n", $1, $2 }')
} > "$BUNDLE.tmp/MANIFEST"

size_mib=$(( $(du -sk "$BUNDLE.tmp" | cut -f1) / 1024 ))
if [ "$size_mib" -gt "$MAX_MIB" ]; then
  echo "gpu-bundle: $size_mib MiB is over the ${MAX_MIB} MiB limit:" >&2
  sort -k1 -n -r "$BUNDLE.tmp/MANIFEST" | head -n 8 >&2
  exit 1
fi
rm -rf "$BUNDLE"
mv "$BUNDLE.tmp" "$BUNDLE"
echo "gpu-bundle: $BUNDLE ($size_mib MiB)"
