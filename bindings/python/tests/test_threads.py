"""Runs from several threads: correct results per thread, the GIL released during a run, and close()
racing with runs ends in ValueError for late callers, never a crash."""
import threading
import time

import numpy as np
from onnx import TensorProto

import oneflow
from conftest import load_f32


def test_concurrent_runs_each_get_their_own_results(c_api_fixture):
    errors = []
    with oneflow.Session(c_api_fixture / "model.onnx", oneflow.SessionOptions(threads=1)) as s:
        def worker(seed):
            rng = np.random.default_rng(seed)
            try:
                for _ in range(40):
                    batch = int(rng.integers(1, 9))
                    x = rng.standard_normal((batch, 4), dtype=np.float32)
                    b = rng.standard_normal((batch, 4), dtype=np.float32)
                    y = np.maximum(x + b, 0) + x
                    out = s.run({"x": x, "b": b})
                    np.testing.assert_allclose(out["y"], y, rtol=1e-6, atol=1e-6)
                    np.testing.assert_allclose(out["z:0/out"], np.maximum(y, 0), rtol=1e-6, atol=1e-6)
            except Exception as e:  # reported by the main thread
                errors.append(e)
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors


def test_run_releases_the_gil(models):
    n = 768
    path = models.binary("matmul_big", "MatMul", TensorProto.FLOAT, [n, n])
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    with oneflow.Session(path, oneflow.SessionOptions(threads=1)) as s:
        s.run({"a": a, "b": b})
        start = time.perf_counter()
        for _ in range(3):
            s.run({"a": a, "b": b})
        run_seconds = (time.perf_counter() - start) / 3
        done = threading.Event()
        result = {}

        def worker():
            for _ in range(5):
                result["y"] = s.run({"a": a, "b": b})["y"]
            done.set()

        ticks = 0
        thread = threading.Thread(target=worker)
        thread.start()
        while not done.is_set():  # this loop only advances while the worker does not hold the GIL
            ticks += 1
        thread.join()
    np.testing.assert_allclose(result["y"], a @ b, rtol=1e-3, atol=1e-3)
    # Five runs of ~run_seconds each: a loop iteration takes well under a microsecond, so even a
    # busy machine leaves thousands of iterations; with the GIL held the loop would hardly move.
    assert ticks > 1000, (ticks, run_seconds)


def test_close_while_other_threads_run(c_api_fixture):
    x = load_f32(c_api_fixture, "x5.f32", (5, 4))
    b = load_f32(c_api_fixture, "b5.f32", (5, 4))
    y = load_f32(c_api_fixture, "y5.f32", (5, 4))
    s = oneflow.Session(c_api_fixture / "model.onnx")
    outcomes, bad = [], []
    started = threading.Barrier(5)

    def worker():
        started.wait()
        while True:
            try:
                out = s.run({"x": x, "b": b})
            except ValueError as e:
                outcomes.append("closed" in str(e))
                return
            except Exception as e:  # anything but ValueError is a failure
                bad.append(e)
                return
            if not np.allclose(out["y"], y, rtol=1e-6):
                bad.append("wrong result")

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    started.wait()
    time.sleep(0.05)
    s.close()
    for t in threads:
        t.join()
    assert not bad, bad
    assert outcomes == [True] * 4
