#!/usr/bin/env bash
# The demo: builds liboneflow.so, generates a small ONNX model from numpy weights, compiles the C
# example examples/c/infer.c against the public header and library the way an embedder would, and
# runs it (checking its output against numpy's).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PY=${PYTHON:-python3}

bash scripts/setup.sh
[ -d /usr/lib/ccache ] && export PATH=/usr/lib/ccache:$PATH
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build -j"${JOBS:-2}" liboneflow oneflow_cli

DEMO=build/demo
mkdir -p "$DEMO"
echo "== generating the model (numpy weights -> ONNX)"
"$PY" examples/c/make_model.py "$DEMO"
echo "== compiling examples/c/infer.c against include/oneflow_c.h and liboneflow.so"
cc -std=c99 -Wall -Wextra -O2 examples/c/infer.c -Iinclude -Lbuild -loneflow -Wl,-rpath,"$ROOT/build" -lm \
  -o "$DEMO/infer"
echo "== running"
"$DEMO/infer" "$DEMO/model.onnx" "$DEMO/expected.f32"
echo "== the same model through the CLI"
build/oneflow info "$DEMO/model.onnx"
