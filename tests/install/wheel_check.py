"""Run by a fresh venv's python in which only numpy and the oneflow-engine wheel are installed
(tests/install/consumer_test.sh wheel): the package imports from the venv, runs the demo model with
numpy's answer, and every library the package carries is mapped from the package, none from the system.

    wheel_check.py MODEL.onnx EXPECTED.f32
"""
import os
import sys

import numpy as np


def main(model, expected):
    if os.environ.get("ONEFLOW_LIBRARY"):
        sys.exit("ONEFLOW_LIBRARY is set: the bundled library would not be the one tested")
    import oneflow

    pkg = os.path.dirname(os.path.abspath(oneflow.__file__))
    if not pkg.startswith(os.path.realpath(sys.prefix) + os.sep) and not pkg.startswith(sys.prefix + os.sep):
        sys.exit(f"oneflow was imported from {pkg}, not from the venv {sys.prefix}")
    print(f"oneflow {oneflow.__version__} (C ABI {oneflow.ABI_VERSION}) from {pkg}")

    x = ((np.arange(64) % 7) * 0.5 - 1.5).astype(np.float32).reshape(1, 64)  # examples/c/infer.c's input
    with oneflow.Session(model, oneflow.SessionOptions(threads=1)) as session:
        probs = session.run({"x": x})["probs"]
    want = np.fromfile(expected, "<f4").reshape(probs.shape)
    err = float(np.abs(probs - want).max())
    if err > 1e-5:
        sys.exit(f"probs differ from numpy's by {err}")
    print(f"output matches numpy's (max abs error {err:.2e})")

    carried = set(open(os.path.join(pkg, "_native", "MANIFEST")).read().split())
    mapped = {line.split()[-1] for line in open("/proc/self/maps") if len(line.split()) >= 6}
    mapped = {p for p in mapped if os.path.basename(p) in carried}
    outside = sorted(p for p in mapped if os.path.basename(p) in carried and not p.startswith(pkg + os.sep))
    inside = sorted(p for p in mapped if p.startswith(pkg + os.sep))
    if outside:
        sys.exit("libraries the package carries were loaded from elsewhere:\n  " + "\n  ".join(outside))
    if not any(p.endswith("/liboneflow.so") for p in inside):
        sys.exit("liboneflow.so is not mapped from the package")
    print(f"{len(inside)} of the {len(carried)} carried files mapped, all from {pkg}/_native")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: wheel_check.py MODEL.onnx EXPECTED.f32")
    main(sys.argv[1], sys.argv[2])
