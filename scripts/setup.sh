#!/usr/bin/env bash
# Installs everything the build, the tests and the benchmarks need. Idempotent: packages already
# present are skipped, so a second run costs seconds.
set -euo pipefail

# One line per area, so each area's needs stay visible (and merges stay simple).
APT_PACKAGES=(build-essential cmake ninja-build ccache pkg-config)
APT_PACKAGES+=(protobuf-compiler libprotobuf-dev libdnnl-dev libgtest-dev)  # the engine and its tests
APT_PACKAGES+=(clang libclang-rt-dev)                                       # the fuzzers
APT_PACKAGES+=(python3-dev)                                                 # Python binding
APT_PACKAGES+=(default-jdk-headless junit5)                                 # Java binding
APT_PACKAGES+=(golang-go)                                                   # Go binding
APT_PACKAGES+=(libgloo-dev)                                                 # multi-process collectives
APT_PACKAGES+=(iproute2)                                                    # the multi-host test's network namespaces
APT_PACKAGES+=(patchelf debootstrap)                                        # the GPU bundle and its rootfs test
APT_PACKAGES+=(python3-venv)                                                # the wheel's fresh-venv test (tests/install; patchelf too)
PIP_PACKAGES=("numpy>=1.26" "onnx==1.23.2" "onnxruntime==1.31.1")
PIP_PACKAGES+=("setuptools>=64" "wheel" "pytest")  # the Python binding's build and tests
APT_PACKAGES+=(flatbuffers-compiler libflatbuffers-dev)                      # the native .ofm format
APT_PACKAGES+=(libre2-dev)                                                  # RegexFullMatch (RE2, as the ONNX spec names)
PIP_PACKAGES+=("scikit-learn>=1.3")                 # the digits data of the training demo
PIP_PACKAGES+=("skl2onnx==1.20.0")                   # scikit-learn models converted as users convert them (tests)
APT_PACKAGES+=(libevent-dev rapidjson-dev libgrpc++-dev protobuf-compiler-grpc)  # oneflow serve
PIP_PACKAGES+=("tritonclient[http,grpc]>=2.40")      # the serving tests' clients
APT_PACKAGES+=(wrk)                                                         # bench/serve_bench.py's HTTP load
APT_PACKAGES+=(qemu-user)                                                   # emulated CPUs without AVX-512 or AVX (tests)
APT_PACKAGES+=(abigail-tools)                                               # the C ABI check (tests/abi)
PIP_PACKAGES+=("fastapi>=0.100" "uvicorn[standard]>=0.20" "orjson>=3.8")  # its peer (bench/peer_kserve_ort.py)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

PY=${PYTHON:-python3}
# A bare Debian python3 has no pip: take Debian's.
if ! $PY -m pip --version >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-pip
fi
if ! $PY - "${PIP_PACKAGES[@]}" <<'PYEOF' 2>/dev/null
import sys
from importlib.metadata import version
from packaging.requirements import Requirement
for spec in sys.argv[1:]:
    r = Requirement(spec)
    if not r.specifier.contains(version(r.name), prereleases=True):
        sys.exit(1)
PYEOF
then
  # Debian's own python3 refuses user installs (PEP 668) unless told to; a pyenv/venv python does not.
  $PY -m pip install -q --disable-pip-version-check "${PIP_PACKAGES[@]}" 2>/dev/null ||
    $PY -m pip install -q --disable-pip-version-check --break-system-packages "${PIP_PACKAGES[@]}"
fi
