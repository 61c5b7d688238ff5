#!/usr/bin/env bash
# The demo: trains a classifier through the C ABI. Builds liboneflow.so, exports scikit-learn's
# bundled digits data set to .npy, generates an untrained MLP as ONNX, compiles the C program
# examples/c/train_digits.c against the public header and library the way an embedder would, and
# runs it: a progress line per epoch, the test accuracy (>= 97% required), a checkpoint, the
# trained model exported to the native format and a prediction served from the exported file.
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
echo "== exporting the digits data set (scikit-learn) and generating the untrained MLP (ONNX)"
"$PY" examples/c/make_digits_data.py "$DEMO"
"$PY" examples/c/make_digits_models.py "$DEMO"
echo "== compiling examples/c/train_digits.c against include/oneflow_c.h and liboneflow.so"
cc -std=c99 -Wall -Wextra -O2 examples/c/train_digits.c -Iinclude -Lbuild -loneflow -Wl,-rpath,"$ROOT/build" -lm \
  -o "$DEMO/train_digits"
echo "== training"
"$DEMO/train_digits" "$DEMO" "$DEMO/digits_mlp.onnx" "$DEMO" --epochs 30 --min-accuracy 97
echo "== the exported model through the CLI"
build/oneflow info "$DEMO/trained.ofm"
