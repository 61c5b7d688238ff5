#!/usr/bin/env python3
"""Classifies the digits test set through a running `oneflow serve`, as a client would: tritonclient
over HTTP (binary tensors) and gRPC, 32 requests in flight, then checks the accuracy.

    python3 examples/serve/query_digits.py DATA_DIR --http localhost:8000 --grpc localhost:8001 --min-accuracy 97
"""
import argparse
import concurrent.futures
import os
import sys
import threading

import numpy as np


def classify(client_module, url, x, batch, concurrency):
    # tritonclient's HTTP client is not shared across threads (gevent): one client per thread.
    local = threading.local()

    def one(start):
        if not hasattr(local, "client"):
            local.client = client_module.InferenceServerClient(url)
        rows = x[start:start + batch]
        inp = client_module.InferInput("input", list(rows.shape), "FP32")
        if client_module.__name__.endswith("http"):
            inp.set_data_from_numpy(rows, binary_data=True)
        else:
            inp.set_data_from_numpy(rows)
        return start, local.client.infer("digits", [inp]).as_numpy("logits").argmax(axis=1)

    predictions = np.empty(len(x), np.int64)
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        for start, labels in pool.map(one, range(0, len(x), batch)):
            predictions[start:start + len(labels)] = labels
    return predictions


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("data_dir")
    p.add_argument("--http", help="host:port of the HTTP front end")
    p.add_argument("--grpc", help="host:port of the gRPC front end")
    p.add_argument("--batch", type=int, default=1, help="rows per request (the server batches them)")
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--min-accuracy", type=float, default=0.0)
    a = p.parse_args()
    x = np.load(os.path.join(a.data_dir, "test_x.npy")).astype(np.float32)
    y = np.load(os.path.join(a.data_dir, "test_y.npy"))
    ok = True
    for name, url in (("http", a.http), ("grpc", a.grpc)):
        if not url:
            continue
        import importlib
        module = importlib.import_module(f"tritonclient.{name}")
        accuracy = 100.0 * float((classify(module, url, x, a.batch, a.concurrency) == y).mean())
        print(f"{name:4s} {url}: {len(x)} test digits, {a.concurrency} requests in flight, accuracy {accuracy:.2f}%")
        ok &= accuracy >= a.min_accuracy
    if not ok:
        print(f"accuracy below {a.min_accuracy}%", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
