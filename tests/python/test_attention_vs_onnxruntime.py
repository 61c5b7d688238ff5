"""ONNX Attention (opset 23) and RotaryEmbedding (23) against onnxruntime on shapes the node tests
leave out: longer sequences, grouped-query heads with a KV cache, boolean and float masks with
causal masking, softcap and every qk_matmul_output mode; and the errors of bad head counts, masks
and caches. The ONNX node tests (tests/conformance) check both against onnx.reference as well. Run
with PYTHONPATH holding the binding and ONEFLOW_LIBRARY the library."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")
from onnx import TensorProto, helper  # noqa: E402

import oneflow  # noqa: E402

rng = np.random.default_rng(23)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def model(op, inputs, n_outputs, opset=23, **attrs):
    names = [n if a is not None else "" for n, a in inputs]
    while names and not names[-1]:
        names.pop()
    outs = [f"out{k}" for k in range(n_outputs)]
    fed = [(n, a) for n, a in inputs if a is not None]
    tt = lambda a: helper.np_dtype_to_tensor_dtype(a.dtype)  # noqa: E731
    graph = helper.make_graph([helper.make_node(op, names, outs, **attrs)], op,
                              [helper.make_tensor_value_info(n, tt(a), list(a.shape)) for n, a in fed],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    return m.SerializeToString(), dict(fed), outs


def compare(data, feeds, outputs, rtol=1e-4, atol=1e-5):
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(outputs, feeds)
    # onnxruntime writes a masked score (qk_matmul_output mode 2) as the lowest float, the spec
    # and onnx.reference as -inf (what we write): the same masking, two spellings.
    lowest = np.finfo(np.float32).min
    want = [np.where(w == lowest, -np.inf, w) if w.dtype == np.float32 else w for w in want]
    with oneflow.Session(data) as s:
        got = s.run(feeds)
    for name, w in zip(outputs, want):
        g = np.asarray(got[name])
        assert g.shape == w.shape, (name, g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=name)


def test_4d_grouped_query_with_cache_and_causal_mask():
    b, hq, hkv, sq, past, d = 2, 8, 2, 5, 7, 16
    inputs = [("Q", f32(b, hq, sq, d)), ("K", f32(b, hkv, sq, d)), ("V", f32(b, hkv, sq, d)), ("attn_mask", None),
              ("past_key", f32(b, hkv, past, d)), ("past_value", f32(b, hkv, past, d))]
    compare(*model("Attention", inputs, 3, is_causal=1))


def test_3d_float_mask_softcap_scale():
    b, s, kv, h = 2, 9, 11, 4
    mask = f32(b, 1, s, kv)
    inputs = [("Q", f32(b, s, h * 8)), ("K", f32(b, kv, h * 8)), ("V", f32(b, kv, h * 6)), ("attn_mask", mask)]
    compare(*model("Attention", inputs, 1, q_num_heads=h, kv_num_heads=h, softcap=2.5, scale=0.2))


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_qk_matmul_output_modes_with_bool_mask(mode):
    b, h, s, d = 1, 2, 6, 8
    mask = rng.random((s, s + 2)) > 0.3  # over the 2 past keys and the 6 new ones
    mask[:, 0] = True
    inputs = [("Q", f32(b, h, s, d)), ("K", f32(b, h, s, d)), ("V", f32(b, h, s, d)), ("attn_mask", mask),
              ("past_key", f32(b, h, 2, d)), ("past_value", f32(b, h, 2, d))]
    compare(*model("Attention", inputs, 4, qk_matmul_output_mode=mode))


def test_errors():
    data, feeds, _ = model("Attention", [("Q", f32(1, 3, 4, 8)), ("K", f32(1, 2, 4, 8)), ("V", f32(1, 2, 4, 8))], 1)
    with pytest.raises(oneflow.OneflowError, match="not a multiple of kv_num_heads"):
        oneflow.Session(data)
    data, feeds, _ = model("Attention", [("Q", f32(1, 4, 8)), ("K", f32(1, 4, 8)), ("V", f32(1, 4, 8))], 1)
    with pytest.raises(oneflow.OneflowError, match="need q_num_heads and kv_num_heads"):
        oneflow.Session(data)
    data, feeds, _ = model("Attention", [("Q", f32(1, 2, 4, 8)), ("K", f32(1, 2, 4, 8)), ("V", f32(1, 2, 4, 8)),
                                         ("attn_mask", f32(3, 4, 4))], 1)
    with pytest.raises(oneflow.OneflowError, match="attn_mask"):
        with oneflow.Session(data) as s:
            s.run(feeds)


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("rank", [3, 4])
def test_rotary_embedding(interleaved, rank):
    b, h, s, d, rot, max_pos = 2, 3, 5, 16, 8, 12
    x = f32(b, s, h * d) if rank == 3 else f32(b, h, s, d)
    pos = rng.integers(0, max_pos, size=(b, s)).astype(np.int64)
    attrs = dict(interleaved=interleaved, rotary_embedding_dim=rot)
    if rank == 3:
        attrs["num_heads"] = h
    inputs = [("X", x), ("cos_cache", f32(max_pos, rot // 2)), ("sin_cache", f32(max_pos, rot // 2)),
              ("position_ids", pos)]
    compare(*model("RotaryEmbedding", inputs, 1, **attrs))
    data, feeds, _ = model("RotaryEmbedding", inputs, 1, **attrs)
    bad = pos.copy()
    bad[0, 0] = max_pos
    with oneflow.Session(data) as sess:
        with pytest.raises(oneflow.OneflowError, match="position id 12 is outside"):
            sess.run(dict(feeds, position_ids=bad))
