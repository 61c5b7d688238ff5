"""Models exported by PyTorch's TorchScript-based ONNX exporter at opsets 9 and 11 (the opsets of
many published models): a CNN (Conv, BatchNorm, ReLU, MaxPool, nearest and bilinear upsampling,
padding, Linear, Softmax over dim 1) and a small transformer encoder layer (attention with Softmax
over the last dim, LayerNorm and GELU as the exporter decomposes them at these opsets, Split of
the fused QKV projection), run by the
engine (upgraded to opset 13 at import) against onnxruntime on the same file.
Skipped, saying so, where torch is not installed (it is not a test dependency: `pip install torch`).
Run with PYTHONPATH holding the binding and ONEFLOW_LIBRARY the library."""
import io

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch) to export the models")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")

import oneflow  # noqa: E402


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 4, 3)
        self.fc = torch.nn.Linear(4 * 8 * 8, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        x = torch.nn.functional.max_pool2d(x, 2)                                  # 8x8
        x = torch.nn.functional.interpolate(x, scale_factor=2, mode="nearest")    # 16x16
        x = torch.nn.functional.pad(x, (1, 1, 1, 1), value=0.25)                  # 18x18
        x = torch.relu(self.conv2(x))                                             # 16x16
        x = torch.nn.functional.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)  # 32x32
        x = torch.nn.functional.max_pool2d(x, 4)                                  # 8x8
        return torch.softmax(self.fc(x.flatten(1)), dim=1)


class Encoder(torch.nn.Module):
    """One pre-norm encoder layer written out (the exporter cannot lower nn.TransformerEncoderLayer's
    unflatten below opset 13)."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)
        self.norm1 = torch.nn.LayerNorm(d)
        self.norm2 = torch.nn.LayerNorm(d)
        self.ff1 = torch.nn.Linear(d, 64)
        self.ff2 = torch.nn.Linear(64, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        split = lambda t: t.reshape(b, s, self.heads, d // self.heads).transpose(1, 2)  # noqa: E731
        q, k, v = split(q), split(k), split(v)
        att = torch.softmax(q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5, dim=-1)
        x = x + self.out((att @ v).transpose(1, 2).reshape(b, s, d))
        return x + self.ff2(torch.nn.functional.gelu(self.ff1(self.norm2(x))))


def export(module, x, opset):
    torch.manual_seed(0)
    module.eval()
    f = io.BytesIO()
    kwargs = {"dynamo": False} if "dynamo" in torch.onnx.export.__code__.co_varnames else {}
    torch.onnx.export(module, (x,), f, opset_version=opset, input_names=["x"], output_names=["y"], **kwargs)
    return f.getvalue()


@pytest.mark.parametrize("opset", [9, 11])
@pytest.mark.parametrize("name", ["cnn", "encoder"])
def test_torch_export_at_legacy_opset_matches_onnxruntime(name, opset):
    torch.manual_seed(1)
    if name == "cnn":
        module, x = Cnn(), torch.randn(2, 3, 16, 16)
    else:
        module, x = Encoder(), torch.randn(2, 5, 32)
    with torch.no_grad():
        for p in module.parameters():  # non-trivial BatchNorm statistics and weights
            p.copy_(torch.randn_like(p) * 0.3)
        if name == "cnn":
            module.bn.running_mean.copy_(torch.randn(8) * 0.1)
            module.bn.running_var.copy_(torch.rand(8) + 0.5)
    data = export(module, x, opset)
    feed = {"x": x.numpy()}
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feed)[0]
    with oneflow.Session(data) as s:
        got = np.array(s.run(feed)["y"])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
