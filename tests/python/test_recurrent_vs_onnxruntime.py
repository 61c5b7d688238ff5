"""RNN, GRU and LSTM against onnxruntime: every direction, both layouts, sequence_lens (a length of
0 included), initial states, peepholes, clip, linear_before_reset, input_forget and activations with
alpha/beta; outputs requested alone; the errors of bad attributes and shapes; and models made by
PyTorch's exporter (stacked bidirectional layers), run for inference against onnxruntime and
trained with SGD against PyTorch's own training of the same module. Run with PYTHONPATH holding the
binding and ONEFLOW_LIBRARY the library."""
import io
import zlib

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")
from onnx import helper, numpy_helper, TensorProto  # noqa: E402

import oneflow  # noqa: E402

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
SEQ, BATCH, INPUT, HIDDEN = 5, 3, 4, 6


def layer_model(op, direction="forward", layout=0, bias=True, lens=None, initial=True, peepholes=False,
                outputs=None, opset=14, stored=(), **attrs):
    """One recurrent node; returns (model bytes, feeds, output names). Inputs named in `stored` are
    initializers (weights as a converted model stores them)."""
    rng = np.random.default_rng(zlib.crc32(repr((op, direction, bias, initial, peepholes)).encode()))
    dirs = 2 if direction == "bidirectional" else 1
    gh = GATES[op] * HIDDEN
    f32 = lambda *s, scale=0.5: (rng.standard_normal(s) * scale).astype(np.float32)  # noqa: E731
    # Drawn in layout 0 and transposed for layout 1, so both layouts see the same values.
    batch_major = (lambda a: a.transpose(1, 0, 2).copy()) if layout else (lambda a: a)  # noqa: E731
    arrays = {"X": batch_major(f32(SEQ, BATCH, INPUT, scale=1.0)), "W": f32(dirs, gh, INPUT), "R": f32(dirs, gh, HIDDEN)}
    names = ["X", "W", "R"]
    if bias:
        arrays["B"] = f32(dirs, 2 * gh)
    names.append("B" if bias else "")
    if lens is not None:
        arrays["sequence_lens"] = np.array(lens, np.int32)
    names.append("sequence_lens" if lens is not None else "")
    if initial:
        arrays["initial_h"] = batch_major(f32(dirs, BATCH, HIDDEN))
    names.append("initial_h" if initial else "")
    if op == "LSTM":
        if initial:
            arrays["initial_c"] = batch_major(f32(dirs, BATCH, HIDDEN))
        names.append("initial_c" if initial else "")
        if peepholes:
            arrays["P"] = f32(dirs, 3 * HIDDEN)
        names.append("P" if peepholes else "")
    while names and names[-1] == "":
        names.pop()
    all_outputs = ["Y", "Y_h", "Y_c"][: 3 if op == "LSTM" else 2]
    outputs = outputs or all_outputs
    node_outputs = [o if o in outputs else "" for o in all_outputs]
    while node_outputs[-1] == "":
        node_outputs.pop()
    if layout:
        attrs["layout"] = 1
    attrs.setdefault("hidden_size", HIDDEN)
    node = helper.make_node(op, names, node_outputs, direction=direction, **attrs)
    fed = [n for n in names if n and n not in stored]
    tt = lambda a: helper.np_dtype_to_tensor_dtype(a.dtype)  # noqa: E731
    graph = helper.make_graph(
        [node], "rnn", [helper.make_tensor_value_info(n, tt(arrays[n]), list(arrays[n].shape)) for n in fed],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        [numpy_helper.from_array(arrays[n], n) for n in names if n in stored])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    return m.SerializeToString(), {n: arrays[n] for n in fed}, outputs


def compare(data, feeds, outputs, rtol=1e-4, atol=1e-5):
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(outputs, feeds)
    with oneflow.Session(data) as s:
        got = s.run(feeds)
    for name, w in zip(outputs, want):
        g = np.asarray(got[name])
        assert g.shape == w.shape, name
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=name)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_directions(op, direction):
    compare(*layer_model(op, direction, lens=[5, 2, 0]))


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_batch_major_layout(op, direction):
    """layout 1 (opset 14; onnxruntime's CPU kernels refuse it): against onnxruntime on the same
    values in layout 0, its outputs transposed to batch-major."""
    data0, feeds0, outputs = layer_model(op, direction, lens=[5, 2, 0])
    data1, feeds1, _ = layer_model(op, direction, layout=1, lens=[5, 2, 0])
    want = ort.InferenceSession(data0, providers=["CPUExecutionProvider"]).run(outputs, feeds0)
    with oneflow.Session(data1) as s:
        got = s.run(feeds1)
    for name, w in zip(outputs, want):
        w = w.transpose(2, 0, 1, 3) if name == "Y" else w.transpose(1, 0, 2)  # [S,D,N,H] -> [N,S,D,H]; [D,N,H] -> [N,D,H]
        np.testing.assert_allclose(np.asarray(got[name]), w, rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_no_bias_no_initial_state_and_stored_weights(op):
    compare(*layer_model(op, "bidirectional", bias=False, initial=False, stored=("W", "R")))


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("which", ["Y", "Y_h"])
def test_one_output_requested(op, which):
    compare(*layer_model(op, "bidirectional", lens=[3, 5, 1], outputs=[which]))


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_gru_linear_before_reset(direction):
    compare(*layer_model("GRU", direction, lens=[4, 5, 2], linear_before_reset=1))


def test_lstm_peepholes_and_input_forget():
    compare(*layer_model("LSTM", "bidirectional", peepholes=True, lens=[5, 1, 3]))
    compare(*layer_model("LSTM", "forward", peepholes=True, input_forget=1))


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_clip(op):
    compare(*layer_model(op, "bidirectional", clip=0.4, peepholes=op == "LSTM"))


# Activations with alpha/beta: consumed in order by the functions that read them.
@pytest.mark.parametrize("op,acts,alpha,beta", [
    ("RNN", ["Relu"], [], []),
    ("RNN", ["LeakyRelu", "ThresholdedRelu"], [0.2, 0.3], []),
    ("RNN", ["Affine"], [0.7], [0.1]),
    ("RNN", ["ScaledTanh", "Elu"], [1.4, 0.6], [0.9]),
    ("GRU", ["HardSigmoid", "Softsign", "Sigmoid", "Softplus"], [0.3], [0.4]),
    ("LSTM", ["Sigmoid", "Softsign", "Relu", "HardSigmoid", "Tanh", "Elu"], [0.25, 0.5], [0.45]),
])
def test_activations(op, acts, alpha, beta):
    direction = "bidirectional" if len(acts) > {"RNN": 1, "GRU": 2, "LSTM": 3}[op] else "forward"
    attrs = {"activations": acts}
    if alpha:
        attrs["activation_alpha"] = alpha
    if beta:
        attrs["activation_beta"] = beta
    compare(*layer_model(op, direction, **attrs))


def test_opset_7_form():
    compare(*layer_model("LSTM", "bidirectional", opset=7, lens=[2, 5, 4]))
    compare(*layer_model("GRU", "reverse", opset=9))


def test_float64():
    data, feeds, outputs = layer_model("GRU", "bidirectional")
    m = onnx.load_from_string(data)
    for v in list(m.graph.input) + list(m.graph.output):
        v.type.tensor_type.elem_type = TensorProto.DOUBLE
    feeds = {k: v.astype(np.float64) for k, v in feeds.items()}
    with oneflow.Session(m.SerializeToString()) as s:
        got = s.run(feeds)
    f32_data, f32_feeds, _ = layer_model("GRU", "bidirectional")
    want = ort.InferenceSession(f32_data, providers=["CPUExecutionProvider"]).run(outputs, f32_feeds)
    for name, w in zip(outputs, want):
        assert got[name].dtype == np.float64
        np.testing.assert_allclose(got[name], w, rtol=1e-4, atol=1e-5)


# ---- Errors -------------------------------------------------------------------------------------

@pytest.mark.parametrize("attrs,message", [
    ({"activations": ["Tanh", "Tanh"]}, "activations lists 2 functions"),
    ({"activations": ["Swish"]}, "unknown activation 'Swish'"),
    ({"direction": "sideways"}, "direction must be forward, reverse or bidirectional"),
    ({"clip": -1.0}, "clip must be a positive threshold"),
    ({"hidden_size": 5}, r"W must have shape \[1, 5, 4\], got float32\[1,6,4\]"),
    # Found by the native-format fuzzer: 3 * hidden_size overflowed int64 in shape inference (UBSan).
    ({"hidden_size": 8165870549352841218}, "hidden_size must be positive and at most 2\\^40"),
])
def test_bad_attributes_are_refused(attrs, message):
    data, feeds, _ = layer_model("RNN", **attrs)
    with pytest.raises(oneflow.OneflowError, match=message):
        with oneflow.Session(data) as s:
            s.run(feeds)


def test_bad_shapes_and_lengths_are_refused():
    data, feeds, _ = layer_model("GRU", lens=[1, 2, 3])
    with oneflow.Session(data) as s:
        bad = dict(feeds, sequence_lens=np.array([1, 9, 3], np.int32))
        with pytest.raises(oneflow.OneflowError, match=r"sequence_lens\[1\] = 9 is outside \[0, 5\]"):
            s.run(bad)
        with pytest.raises(oneflow.OneflowError):
            s.run(dict(feeds, X=feeds["X"][:, :, :3]))  # input size 3, W has 4 columns
    m = onnx.load_from_string(layer_model("LSTM", lens=[1, 2, 3])[0])
    m.graph.input[4].type.tensor_type.elem_type = TensorProto.INT64
    with pytest.raises(oneflow.OneflowError, match="sequence_lens must be int32"):
        oneflow.Session(m.SerializeToString())


# ---- Models made by PyTorch's exporter ----------------------------------------------------------

torch = None


def _torch():
    global torch
    if torch is None:
        torch = pytest.importorskip("torch", reason="PyTorch makes the exported models")
    return torch


def export(module, x, opset=14):
    t = _torch()
    f = io.BytesIO()
    kwargs = {"dynamo": False} if "dynamo" in t.onnx.export.__code__.co_varnames else {}
    t.onnx.export(module, (x,), f, opset_version=opset, input_names=["x"], output_names=["logits"], **kwargs)
    return f.getvalue()


def classifier(kind):
    t = _torch()

    class Classifier(t.nn.Module):
        def __init__(self):
            super().__init__()
            cls = t.nn.LSTM if kind == "LSTM" else t.nn.GRU
            self.rnn = cls(INPUT, 16, num_layers=2, bidirectional=True, batch_first=True)
            self.head = t.nn.Linear(32, 3)

        def forward(self, x):
            y, _ = self.rnn(x)
            return self.head(y[:, -1])

    t.manual_seed(7)
    return Classifier()


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("opset", [11, 14])
def test_torch_export_matches_onnxruntime(kind, opset):
    t = _torch()
    module = classifier(kind).eval()
    x = t.randn(BATCH, 7, INPUT)
    data = export(module, x, opset)
    assert kind.encode() in data
    feeds = {"x": x.numpy()}
    compare(data, feeds, ["logits"])


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_torch_export_trains_like_torch(kind, tmp_path):
    """Five SGD steps on the exported classifier: the loss at each step and the logits after match
    PyTorch training the same module (its autograd is the reference for backpropagation through time)."""
    t = _torch()
    module = classifier(kind)
    x = t.randn(4, 6, INPUT, generator=t.Generator().manual_seed(3))
    labels = t.tensor([0, 2, 1, 2])
    path = tmp_path / "model.onnx"
    path.write_bytes(export(module, x))
    module.train()
    opt = t.optim.SGD(module.parameters(), lr=0.5)
    want = []
    for _ in range(5):
        opt.zero_grad()
        loss = t.nn.functional.cross_entropy(module(x), labels)
        want.append(float(loss))
        loss.backward()
        opt.step()
    got = []
    opts = oneflow.TrainingOptions(logits_output="logits", optimizer="sgd", learning_rate=0.5)
    with oneflow.TrainingSession(str(path), opts) as s:
        for _ in range(5):
            got.append(float(s.run({"x": x.numpy(), "labels": labels.numpy()})["loss"]))
            s.backward()
            s.step()
        logits = s.run({"x": x.numpy(), "labels": labels.numpy()})["logits"]
    np.testing.assert_allclose(got, want, rtol=2e-4)
    assert want[-1] < want[0]  # it learned: the comparison is not of two constant curves
    with t.no_grad():
        np.testing.assert_allclose(logits, module(x).numpy(), rtol=1e-3, atol=1e-4)
