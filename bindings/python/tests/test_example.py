"""examples/infer.py runs a model end to end; its saved outputs match numpy's reference."""
import os
import subprocess
import sys

import numpy as np

from conftest import load_f32

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "examples", "infer.py")


def test_infer_example(c_api_fixture, tmp_path):
    x, b = load_f32(c_api_fixture, "x5.f32", (5, 4)), load_f32(c_api_fixture, "b5.f32", (5, 4))
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "b.npy", b)
    out = subprocess.run([sys.executable, EXAMPLE, str(c_api_fixture / "model.onnx"), "--input", f"x={tmp_path / 'x.npy'}",
                          "--input", f"b={tmp_path / 'b.npy'}", "--threads", "1", "--save-dir", str(tmp_path / "out")],
                         capture_output=True, text=True, env=dict(os.environ), check=False)
    assert out.returncode == 0, out.stderr
    assert "output z:0/out: float32[5, 4]" in out.stdout
    np.testing.assert_allclose(np.load(tmp_path / "out" / "0.npy"), load_f32(c_api_fixture, "y5.f32", (5, 4)), rtol=1e-6)


def test_infer_example_with_generated_inputs_and_errors(c_api_fixture):
    ok = subprocess.run([sys.executable, EXAMPLE, str(c_api_fixture / "model.onnx"), "--dim", "batch=2"],
                        capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stderr
    assert "output y: float32[2, 4]" in ok.stdout
    bad = subprocess.run([sys.executable, EXAMPLE, str(c_api_fixture / "unknown_op.onnx")], capture_output=True,
                         text=True, check=False)
    assert bad.returncode == 1 and "UNSUPPORTED" in bad.stderr
