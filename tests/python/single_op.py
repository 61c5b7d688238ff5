"""Shared by the op tests: a one-node ONNX model built with onnx.helper, and that model run by
onnxruntime (the reference) and by oneflow on the same feeds."""
import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

import oneflow


def model(op, inputs, opset, stored=(), **attrs):
    """One `op` node with output y. `inputs` is [(name, array or None)]: None leaves the optional
    input out, a name in `stored` becomes an initializer, the rest are graph inputs. Returns the
    serialized model and its feeds."""
    names = [n if a is not None else "" for n, a in inputs]
    fed = [(n, a) for n, a in inputs if a is not None and n not in stored]
    inits = [numpy_helper.from_array(a, n) for n, a in inputs if a is not None and n in stored]
    tt = lambda a: helper.np_dtype_to_tensor_dtype(a.dtype)  # noqa: E731
    graph = helper.make_graph([helper.make_node(op, names, ["y"], **attrs)], op,
                              [helper.make_tensor_value_info(n, tt(a), list(a.shape)) for n, a in fed],
                              [onnx.ValueInfoProto(name="y")], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    return m.SerializeToString(), dict(fed)


def ours(data, feeds):
    with oneflow.Session(data) as s:
        return np.asarray(s.run(feeds)["y"])


def both(data, feeds):
    """(oneflow's y, onnxruntime's y), after checking they agree in dtype and shape."""
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(["y"], feeds)[0]
    got = ours(data, feeds)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    return got, want


def run_both(data, feeds, rtol=1e-5, atol=1e-5):
    """Every output of the model `data` from oneflow, after checking each against onnxruntime's on the same
    feeds: same shape and dtype, strings and integers equal, floats within rtol/atol."""
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    with oneflow.Session(data) as s:
        got = s.run(feeds)
    names = [o.name for o in onnx.load_from_string(data).graph.output]
    got = [np.asarray(got[n]) for n in names]
    for name, g, w in zip(names, got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (name, g.dtype, g.shape, w.dtype, w.shape)
        if w.dtype == object:
            assert g.tolist() == w.tolist(), name
        elif w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=name)
        else:
            np.testing.assert_array_equal(g, w, err_msg=name)
    return got
