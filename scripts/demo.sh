#!/usr/bin/env bash
# The demo: trains a classifier through the C ABI. Builds liboneflow.so, exports scikit-learn's
# bundled digits data set to .npy, generates an untrained MLP as ONNX, compiles the C program
# examples/c/train_digits.c against the public header and library the way an embedder would, and
# runs it: a progress line per epoch, the test accuracy (>= 97% required), a checkpoint and the
# trained model exported to the native format. Then it serves the exported model with
# `oneflow serve` (KServe v2 over HTTP and gRPC, docs/serving.md), queries it with curl and with
# tritonclient (the whole test set, 32 requests in flight, accuracy >= 97% again), shows the
# metrics and stops the server with SIGTERM.
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

echo "== serving the trained model: oneflow serve over a Triton-style repository"
REPO=$DEMO/models
rm -rf "$REPO" && mkdir -p "$REPO/digits/1"
cp "$DEMO/trained.ofm" "$REPO/digits/1/model.ofm"
cat > "$REPO/digits/config.pbtxt" <<'CONFIG'
max_batch_size: 64
dynamic_batching { max_queue_delay_microseconds: 200 }
instance_group [{ count: 2 kind: KIND_CPU }]
CONFIG
LOG=$DEMO/serve.log
build/oneflow serve --model-repository "$REPO" --http-port 0 --grpc-port 0 --metrics-port 0 2> "$LOG" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q "HTTP on" "$LOG" && break; sleep 0.1; done
cat "$LOG"
HTTP=$(grep -o 'HTTP on [^;]*' "$LOG" | awk '{print $3}')
GRPC=$(grep -o 'gRPC on [^;]*' "$LOG" | awk '{print $3}')
METRICS=$(grep -o 'metrics on [^/]*' "$LOG" | awk '{print $3}')
echo "== curl: the model's metadata, then one digit as JSON"
curl -sf "http://$HTTP/v2/models/digits"; echo
ROW=$("$PY" -c "import numpy as np; print(','.join(f'{v:g}' for v in np.load('$DEMO/test_x.npy')[0]))")
curl -sf -X POST "http://$HTTP/v2/models/digits/infer" -H 'Content-Type: application/json' \
  -d "{\"inputs\":[{\"name\":\"input\",\"shape\":[1,64],\"datatype\":\"FP32\",\"data\":[$ROW]}]}"; echo
echo "== tritonclient: the whole test set over HTTP and gRPC"
"$PY" examples/serve/query_digits.py "$DEMO" --http "$HTTP" --grpc "$GRPC" --min-accuracy 97
echo "== metrics"
curl -sf "http://$METRICS/metrics" | grep -E '^nv_inference_(request_success|count|exec_count)'
echo "== SIGTERM: the server drains and exits"
kill -TERM $SERVER
wait $SERVER
trap - EXIT
tail -n 2 "$LOG"
