"""ONNX Runtime's attention contrib ops (com.microsoft Attention, QAttention, MultiHeadAttention,
GroupQueryAttention, RotaryEmbedding, EmbedLayerNormalization, DynamicQuantizeLSTM) against
onnxruntime itself, which defines them: every mask format, the KV caches, rotary, windows,
softcap and sinks, f16 where onnxruntime runs it. The layouts onnxruntime's CPU kernels refuse
(packed Q/K/V in MultiHeadAttention, the 4-D GPT-2 mask) are checked against numpy instead.
Run with PYTHONPATH holding the binding and ONEFLOW_LIBRARY the library."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime defines these ops and is the reference")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import oneflow  # noqa: E402
from test_contrib_ops_vs_onnxruntime import MS, compare, one_node  # noqa: E402

rng = np.random.default_rng(7)


def f32(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def i32(values):
    return np.asarray(values, np.int32)


def ours(data, feeds):
    with oneflow.Session(data) as s:
        return s.run(feeds)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ---- Attention ---------------------------------------------------------------------------------

B, S, N, H = 2, 5, 3, 4


def attention_case(mask=None, past=None, unidirectional=0, v_hidden=None, attention_bias=None, outputs=(0,), **attrs):
    d_in = 10
    qk = N * H
    vh = v_hidden or qk
    inputs = [("input", f32(B, S, d_in)), ("weights", f32(d_in, 2 * qk + vh, scale=0.4)), ("bias", f32(2 * qk + vh)),
              ("mask_index", mask), ("past", past), ("attention_bias", attention_bias)]
    if v_hidden:
        attrs["qkv_hidden_sizes"] = [qk, qk, vh]
    return one_node("Attention", inputs, list(outputs), stored=("weights", "bias"), num_heads=N,
                    unidirectional=unidirectional, **attrs)


@pytest.mark.parametrize("mask", [
    None,
    i32([3, 5]),                                  # [B] key lengths (right padding)
    i32([5, 4, 1, 2]),                            # [2B] ends then starts (left padding)
    i32([4, 2] + [0] * (3 * B + 2 - B)),          # [3B + 2]: its first B values
    i32([[1, 1, 0, 1, 1], [1, 0, 0, 1, 1]]),      # [B, T]
    (rng.random((B, S, S)) > 0.3).astype(np.int32),  # [B, S, T]
    i32([[0, 0, 0, 0, 0], [1, 1, 1, 1, 1]]),      # a row with every key hidden
])
@pytest.mark.parametrize("unidirectional", [0, 1])
def test_attention_masks(mask, unidirectional):
    compare(*attention_case(mask=mask, unidirectional=unidirectional), rtol=1e-4, atol=1e-5)


def test_attention_past_present_and_bias():
    past = f32(2, B, N, 3, H)
    compare(*attention_case(past=past, unidirectional=1, mask=i32([[1] * 8, [1] * 6 + [0, 0]]), outputs=(0, 1)),
            rtol=1e-4, atol=1e-5)
    compare(*attention_case(attention_bias=f32(1, N, S, S), outputs=(0, 1)), rtol=1e-4, atol=1e-5)
    compare(*attention_case(attention_bias=f32(B, 1, S, S), scale=0.3), rtol=1e-4, atol=1e-5)


def test_attention_distinct_value_hidden():
    compare(*attention_case(v_hidden=N * 6), rtol=1e-4, atol=1e-5)


def test_attention_gpt2_square_mask_against_numpy():
    """[B, 1, M, M] (onnxruntime's CPU kernel refuses it): rows past + i, columns j of the square."""
    d_in, M, P = 6, 9, 2
    x, w, bias = f32(B, S, d_in), f32(d_in, 3 * N * H, scale=0.4), f32(3 * N * H)
    past = f32(2, B, N, P, H)
    square = np.tril(np.ones((M, M), np.int32))[None, None].repeat(B, 0)
    square[1, 0, :, 0] = 0  # batch 1 never sees key 0
    data, feeds, outs = one_node("Attention", [("input", x), ("weights", w), ("bias", bias), ("mask_index", square),
                                               ("past", past)], [0, 1], num_heads=N)
    got = ours(data, feeds)
    qkv = x @ w + bias
    split = lambda t: t.reshape(B, S, N, H).transpose(0, 2, 1, 3)  # noqa: E731
    q, k, v = (split(qkv[..., i * N * H:(i + 1) * N * H]) for i in range(3))
    k, v = np.concatenate([past[0], k], 2), np.concatenate([past[1], v], 2)
    T = P + S
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(H)
    visible = square[:, 0, P:P + S, :T][:, None]
    s = np.where(visible > 0, s, s - 10000.0)
    want = (softmax(s) @ v).transpose(0, 2, 1, 3).reshape(B, S, N * H)
    np.testing.assert_allclose(got[outs[0]], want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[outs[1]], np.stack([k, v]), rtol=1e-5, atol=1e-6)


# ---- QAttention --------------------------------------------------------------------------------

@pytest.mark.parametrize("w_type", [np.int8, np.uint8])
@pytest.mark.parametrize("per_column", [False, True])
def test_qattention(w_type, per_column):
    d_in, width = 8, 3 * N * H
    x = rng.integers(0, 256, (B, S, d_in)).astype(np.uint8)
    lo, hi = (-128, 128) if w_type == np.int8 else (0, 256)
    w = rng.integers(lo, hi, (d_in, width)).astype(w_type)
    w_scale = (rng.random(width if per_column else 1) * 0.01 + 0.001).astype(np.float32)
    w_zp = rng.integers(lo // 4 if lo else 100, (hi // 4) if lo else 140, width if per_column else 1).astype(w_type)
    inputs = [("input", x), ("weight", w), ("bias", f32(width)), ("input_scale", np.array(0.02, np.float32)),
              ("weight_scale", w_scale), ("mask_index", i32([5, 3])), ("input_zero_point", np.array(128, np.uint8)),
              ("weight_zero_point", w_zp), ("past", f32(2, B, N, 2, H))]
    compare(*one_node("QAttention", inputs, [0, 1], stored=("weight", "weight_scale", "weight_zero_point"), num_heads=N,
                      unidirectional=1), rtol=1e-4, atol=1e-4)


# ---- MultiHeadAttention ------------------------------------------------------------------------

def mha(inputs, outputs=(0,), **attrs):
    names = ["query", "key", "value", "bias", "key_padding_mask", "attention_bias", "past_key", "past_value",
             "past_sequence_length", "cache_indirection"]
    data, feeds, outs = one_node("MultiHeadAttention", [(n, inputs.get(n)) for n in names], list(outputs),
                                 num_heads=N, **attrs)
    if 3 in outputs:  # qk's type has its own constraint, which onnxruntime cannot infer: declare it
        model = onnx.load_from_string(data)
        qk = next(o for o in model.graph.output if o.name == "out3")
        qk.CopyFrom(helper.make_tensor_value_info("out3", TensorProto.FLOAT, None))
        data = model.SerializeToString()
    return data, feeds, outs


@pytest.mark.parametrize("mask", [None, i32([4, 7]), i32([[1] * 7, [1, 1, 0, 1, 1, 0, 1]]),
                                  (rng.random((B, S, 7)) > 0.3).astype(np.int32)])
@pytest.mark.parametrize("with_bias", [False, True])
def test_mha_cross_attention(mask, with_bias):
    L, hv = 7, 6
    inputs = {"query": f32(B, S, N * H), "key": f32(B, L, N * H), "value": f32(B, L, N * hv),
              "bias": f32(N * (2 * H + hv)) if with_bias else None, "key_padding_mask": mask}
    compare(*mha(inputs, outputs=(0, 1, 2, 3)), rtol=1e-4, atol=1e-5)


def test_mha_self_attention_with_past_and_bias():
    P = 3
    inputs = {"query": f32(B, S, N * H), "key": f32(B, S, N * H), "value": f32(B, S, N * H), "bias": f32(3 * N * H),
              "key_padding_mask": i32([[1] * (P + S), [1] * (P + S - 2) + [0, 0]]),
              "attention_bias": f32(1, N, S, P + S), "past_key": f32(B, N, P, H), "past_value": f32(B, N, P, H)}
    compare(*mha(inputs, outputs=(0, 1, 2, 3), unidirectional=1, scale=0.4), rtol=1e-4, atol=1e-5)


def test_mha_bnsh_cache_as_key_value():
    """key/value as a finished [B, N, L, H] cache: bias adds to Q only, as onnxruntime does."""
    L = 6
    inputs = {"query": f32(B, S, N * H), "key": f32(B, N, L, H), "value": f32(B, N, L, H), "bias": f32(3 * N * H)}
    compare(*mha(inputs, outputs=(0, 1, 2)), rtol=1e-4, atol=1e-5)


def test_mha_shared_buffer_past_sequence_length():
    capacity, pl = 8, 3
    inputs = {"query": f32(B, 2, N * H), "key": f32(B, 2, N * H), "value": f32(B, 2, N * H),
              "past_key": f32(B, N, capacity, H), "past_value": f32(B, N, capacity, H),
              "past_sequence_length": i32([pl])}
    compare(*mha(inputs, outputs=(0, 1, 2)), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("packing", ["qkv", "kv"])
def test_mha_packed_layouts_against_numpy(packing):
    """Packed QKV [B, S, N, 3, H] and packed KV [B, L, N, 2, H] (onnxruntime's CPU kernel refuses both)."""
    L = S if packing == "qkv" else 6
    q = f32(B, S, N, H)
    k, v = f32(B, L, N, H), f32(B, L, N, H)
    if packing == "qkv":
        inputs = {"query": np.stack([q, k, v], 3)}
    else:
        inputs = {"query": q.reshape(B, S, N * H), "key": np.stack([k, v], 3)}
    data, feeds, outs = mha(inputs, unidirectional=int(packing == "qkv"))
    got = ours(data, feeds)[outs[0]]
    s = np.einsum("bsnh,blnh->bnsl", q, k) / np.sqrt(H)
    if packing == "qkv":
        s = np.where(np.triu(np.ones((S, L), bool), 1), np.finfo(np.float32).min, s)
    want = np.einsum("bnsl,blnh->bsnh", softmax(s), v).reshape(B, S, N * H)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# ---- GroupQueryAttention -----------------------------------------------------------------------

NQ, NKV, HD = 4, 2, 16


def gqa(inputs, outputs=(0, 1, 2), **attrs):
    names = ["query", "key", "value", "past_key", "past_value", "seqlens_k", "total_sequence_length", "cos_cache",
             "sin_cache", "position_ids", "attention_bias", "head_sink"]
    return one_node("GroupQueryAttention", [(n, inputs.get(n)) for n in names], list(outputs), num_heads=NQ,
                    kv_num_heads=NKV, **attrs)


def rotary_caches(max_pos, rot, dtype=np.float32):
    inv = 1.0 / (10000 ** (np.arange(0, rot, 2) / rot))
    angles = np.arange(max_pos)[:, None] * inv[None]
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)


@pytest.mark.parametrize("rotary", [None, "half", "interleaved"])
@pytest.mark.parametrize("packed", [False, True])
def test_gqa_prompt_with_right_padding(rotary, packed):
    b, s = 2, 6
    q, k, v = f32(b, s, NQ * HD), f32(b, s, NKV * HD), f32(b, s, NKV * HD)
    inputs = {"seqlens_k": i32([5, 3]), "total_sequence_length": i32(s)}  # row 1 has 4 real tokens
    if packed:
        inputs["query"] = np.concatenate([q, k, v], -1)
    else:
        inputs.update(query=q, key=k, value=v)
    attrs = {}
    if rotary:
        inputs["cos_cache"], inputs["sin_cache"] = rotary_caches(16, HD)
        attrs = {"do_rotary": 1, "rotary_interleaved": int(rotary == "interleaved")}
    compare(*gqa(inputs, **attrs), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("attrs", [{}, {"local_window_size": 3}, {"softcap": 2.0}, {"smooth_softmax": 1},
                                   {"scale": 0.2, "do_rotary": 1}, {"qk_output": 1}, {"qk_output": 2}])
def test_gqa_decode_step_with_cache(attrs):
    """One new token per row against separate past/present buffers, rows of different lengths."""
    b, past = 2, 5
    inputs = {"query": f32(b, 1, NQ * HD), "key": f32(b, 1, NKV * HD), "value": f32(b, 1, NKV * HD),
              "past_key": f32(b, NKV, past, HD), "past_value": f32(b, NKV, past, HD),
              "seqlens_k": i32([5, 3]), "total_sequence_length": i32(past + 1)}
    if attrs.get("do_rotary"):
        inputs["cos_cache"], inputs["sin_cache"] = rotary_caches(32, HD)
    outputs = (0, 1, 2, 3) if attrs.get("qk_output") else (0, 1, 2)
    data, feeds, names = gqa(inputs, outputs=outputs, **attrs)
    if attrs.get("qk_output"):
        # Columns past a row's own length are undefined in onnxruntime's output_qk: compare the rest.
        want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(names, feeds)
        got = ours(data, feeds)
        for name, w in zip(names[:3], want[:3]):
            np.testing.assert_allclose(got[name], w, rtol=1e-4, atol=1e-5, err_msg=name)
        for row, length in enumerate([6, 4]):
            np.testing.assert_allclose(got[names[3]][row, ..., :length], want[3][row, ..., :length], rtol=1e-4, atol=1e-5)
        return
    compare(data, feeds, names, rtol=1e-4, atol=1e-5)


def test_gqa_head_sink_attention_bias_and_no_causal():
    b, s = 1, 4
    inputs = {"query": f32(b, s, NQ * HD), "key": f32(b, s, NKV * HD), "value": f32(b, s, NKV * HD),
              "seqlens_k": i32([3]), "total_sequence_length": i32(s), "attention_bias": f32(1, NQ, s, s),
              "head_sink": f32(NQ)}
    compare(*gqa(inputs), rtol=1e-4, atol=1e-5)
    del inputs["head_sink"]
    compare(*gqa(inputs, causal=0), rtol=1e-4, atol=1e-5)


def test_gqa_f16_and_continued_prompt():
    b, past, s = 1, 4, 3
    h = lambda *shape: f32(*shape).astype(np.float16)  # noqa: E731
    inputs = {"query": h(b, s, NQ * HD), "key": h(b, s, NKV * HD), "value": h(b, s, NKV * HD),
              "past_key": h(b, NKV, past, HD), "past_value": h(b, NKV, past, HD),
              "seqlens_k": i32([past + s - 1]), "total_sequence_length": i32(past + s)}
    compare(*gqa(inputs), rtol=2e-3, atol=2e-3)


def test_gqa_quantized_cache_is_refused():
    inputs = {"query": f32(1, 1, NQ * HD), "key": f32(1, 1, NKV * HD), "value": f32(1, 1, NKV * HD),
              "seqlens_k": i32([0]), "total_sequence_length": i32(1)}
    data, feeds, _ = gqa(inputs, k_quant_type="PER_TENSOR", v_quant_type="PER_TENSOR")
    with pytest.raises(oneflow.OneflowError, match="quantized KV cache"):
        ours(data, feeds)


def test_gqa_bad_lengths_are_errors():
    inputs = {"query": f32(1, 2, NQ * HD), "key": f32(1, 2, NKV * HD), "value": f32(1, 2, NKV * HD),
              "seqlens_k": i32([5]), "total_sequence_length": i32(2)}
    with pytest.raises(oneflow.OneflowError, match=r"seqlens_k\[0\]"):
        ours(*gqa(inputs)[:2])
    inputs.update(seqlens_k=i32([1]), total_sequence_length=i32(3))
    with pytest.raises(oneflow.OneflowError, match="total_sequence_length"):
        ours(*gqa(inputs)[:2])


# ---- RotaryEmbedding (com.microsoft) -----------------------------------------------------------

@pytest.mark.parametrize("layout,num_heads,rot", [("bsh", 2, 0), ("bsh", 0, 0), ("bnsh", 0, 0), ("bsh", 2, 8)])
@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("positions", ["offset", "per_token"])
def test_rotary_embedding(layout, num_heads, rot, interleaved, positions):
    b, s, n, h = 2, 5, 2, 16
    x = f32(b, s, n * h) if layout == "bsh" else f32(b, n, s, h)
    cos, sin = rotary_caches(12, rot or h)
    pos = np.array([3], np.int64) if positions == "offset" else rng.integers(0, 12, (b, s)).astype(np.int64)
    attrs = {"interleaved": interleaved, "num_heads": num_heads}
    if rot:
        attrs["rotary_embedding_dim"] = rot
    inputs = [("input", x), ("position_ids", pos), ("cos_cache", cos), ("sin_cache", sin)]
    compare(*one_node("RotaryEmbedding", inputs, [0], domain=MS, **attrs), rtol=1e-5, atol=1e-5)


def test_rotary_embedding_f16_and_bad_position():
    cos, sin = rotary_caches(8, 16, np.float16)
    x = f32(1, 4, 32).astype(np.float16)
    inputs = [("input", x), ("position_ids", np.array([2], np.int64)), ("cos_cache", cos), ("sin_cache", sin)]
    compare(*one_node("RotaryEmbedding", inputs, [0], domain=MS, num_heads=2), rtol=2e-3, atol=2e-3)
    inputs[1] = ("position_ids", np.array([6], np.int64))  # 6 + 4 positions > 8 cache rows
    data, feeds, _ = one_node("RotaryEmbedding", inputs, [0], domain=MS, num_heads=2)
    with pytest.raises(oneflow.OneflowError, match="exceeds the caches"):
        ours(data, feeds)


# ---- EmbedLayerNormalization -------------------------------------------------------------------

@pytest.mark.parametrize("segments,mask,positions", [(True, True, None), (False, False, None), (True, True, "row"),
                                                     (True, False, "batch")])
def test_embed_layer_normalization(segments, mask, positions):
    b, s, hidden, vocab = 2, 6, 16, 30
    inputs = [("input_ids", rng.integers(0, vocab, (b, s)).astype(np.int32)),
              ("segment_ids", rng.integers(0, 2, (b, s)).astype(np.int32) if segments else None),
              ("word_embedding", f32(vocab, hidden)), ("position_embedding", f32(10, hidden)),
              ("segment_embedding", f32(2, hidden) if segments else None), ("gamma", f32(hidden)),
              ("beta", f32(hidden)), ("mask", i32([[1, 1, 1, 1, 0, 0], [1, 0, 1, 1, 1, 2]]) if mask else None),
              ("position_ids", None if positions is None else
               rng.integers(0, 10, (1 if positions == "row" else b, s)).astype(np.int32))]
    compare(*one_node("EmbedLayerNormalization", inputs, [0, 1, 2], stored=("word_embedding",), epsilon=1e-5),
            rtol=1e-4, atol=1e-5)


def test_embed_layer_normalization_bad_id():
    inputs = [("input_ids", i32([[1, 40]])), ("segment_ids", None), ("word_embedding", f32(30, 8)),
              ("position_embedding", f32(4, 8)), ("segment_embedding", None), ("gamma", f32(8)), ("beta", f32(8))]
    data, feeds, _ = one_node("EmbedLayerNormalization", inputs, [0, 1])
    with pytest.raises(oneflow.OneflowError, match=r"input_ids\[1\] = 40"):
        ours(data, feeds)


# ---- DynamicQuantizeLSTM -----------------------------------------------------------------------

@pytest.mark.parametrize("direction,per_column", [("forward", False), ("bidirectional", True), ("reverse", True)])
def test_dynamic_quantize_lstm(direction, per_column):
    """Ours is the float LSTM on the dequantized weights, checked tightly against onnxruntime's own
    float LSTM on those weights; onnxruntime's DynamicQuantizeLSTM also quantizes the activations
    per step, so it is checked within that rounding."""
    seq, b, inp, hid = 5, 3, 8, 6
    d = 2 if direction == "bidirectional" else 1
    w = rng.integers(-128, 128, (d, inp, 4 * hid)).astype(np.int8)
    r = rng.integers(-128, 128, (d, hid, 4 * hid)).astype(np.int8)
    cols = (d, 4 * hid) if per_column else (d,)
    w_scale, r_scale = (rng.random(cols) * 0.004 + 0.001).astype(np.float32), (rng.random(cols) * 0.004 + 0.001).astype(np.float32)
    w_zp, r_zp = np.zeros(cols, np.int8), np.zeros(cols, np.int8)
    x, bias = f32(seq, b, inp), f32(d, 8 * hid, scale=0.1)
    h0, c0 = f32(d, b, hid, scale=0.1), f32(d, b, hid, scale=0.1)
    lens = i32([5, 3, 4])
    inputs = [("X", x), ("W", w), ("R", r), ("B", bias), ("sequence_lens", lens), ("initial_h", h0), ("initial_c", c0),
              ("P", None), ("W_scale", w_scale), ("W_zero_point", w_zp), ("R_scale", r_scale), ("R_zero_point", r_zp)]
    stored = ("W", "R", "W_scale", "W_zero_point", "R_scale", "R_zero_point")
    data, feeds, names = one_node("DynamicQuantizeLSTM", inputs, [0, 1, 2], stored=stored, hidden_size=hid,
                                  direction=direction)
    got = ours(data, feeds)

    def dequant(q, scale, zp):  # [d, k, 4h] -> ONNX LSTM's [d, 4h, k]
        s = scale.reshape(d, 1, -1) if per_column else scale.reshape(d, 1, 1)
        return ((q.astype(np.float32) - zp.reshape(s.shape)) * s).transpose(0, 2, 1)

    ref_inputs = [("X", x), ("W", dequant(w, w_scale, w_zp)), ("R", dequant(r, r_scale, r_zp)), ("B", bias),
                  ("sequence_lens", lens), ("initial_h", h0), ("initial_c", c0)]
    ref, ref_feeds, ref_names = one_node("LSTM", ref_inputs, [0, 1, 2], domain="", hidden_size=hid, direction=direction)
    want = ort.InferenceSession(ref, providers=["CPUExecutionProvider"]).run(ref_names, ref_feeds)
    for name, w_ in zip(names, want):
        np.testing.assert_allclose(got[name], w_, rtol=1e-5, atol=1e-5, err_msg=name)
    # onnxruntime's per-step uint8 activations move these outputs (|y| < 1) by up to ~5e-3.
    quantized = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(names, feeds)
    for name, q in zip(names, quantized):
        np.testing.assert_allclose(got[name], q, atol=1e-2, err_msg=name)


# ---- A BERT that onnxruntime's transformer optimizer rewrote -----------------------------------

def test_transformer_optimizer_bert(tmp_path):
    """A 2-layer BERT written in torch, exported by torch's exporter and rewritten by onnxruntime's
    transformer optimizer into EmbedLayerNormalization, Attention (with the mask index),
    SkipLayerNormalization and BiasGelu: ours matches onnxruntime on it and torch on the module."""
    torch = pytest.importorskip("torch", reason="PyTorch writes the model")
    optimizer = pytest.importorskip("onnxruntime.transformers.optimizer", reason="onnxruntime's transformers tools")
    import math

    nn = torch.nn
    torch.manual_seed(0)
    hidden, heads, vocab, max_len = 32, 4, 50, 16

    class SelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(hidden, hidden) for _ in range(4))
            self.ln = nn.LayerNorm(hidden, eps=1e-12)

        def split(self, x):
            b, t, _ = x.shape
            return x.view(b, t, heads, hidden // heads).permute(0, 2, 1, 3)

        def forward(self, x, mask):
            q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
            p = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hidden // heads) + mask, -1)
            c = torch.matmul(p, v).permute(0, 2, 1, 3).contiguous().view(x.shape[0], x.shape[1], hidden)
            return self.ln(self.o(c) + x)

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn, self.up, self.down = SelfAttention(), nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)
            self.ln = nn.LayerNorm(hidden, eps=1e-12)

        def forward(self, x, mask):
            a = self.attn(x, mask)
            return self.ln(self.down(nn.functional.gelu(self.up(a))) + a)

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.word, self.pos, self.segment = nn.Embedding(vocab, hidden), nn.Embedding(max_len, hidden), nn.Embedding(2, hidden)
            self.ln = nn.LayerNorm(hidden, eps=1e-12)
            self.layers = nn.ModuleList([Layer(), Layer()])
            self.register_buffer("positions", torch.arange(max_len).unsqueeze(0))

        def forward(self, ids, mask, types):
            x = self.ln(self.word(ids) + self.pos(self.positions[:, :ids.shape[1]]) + self.segment(types))
            bias = (1.0 - mask[:, None, None, :].to(torch.float32)) * -10000.0
            for layer in self.layers:
                x = layer(x, bias)
            return x

    model = Bert().eval()
    ids = torch.randint(0, vocab, (2, 8))
    mask = torch.tensor([[1] * 8, [1] * 5 + [0] * 3])
    types = torch.tensor([[0] * 4 + [1] * 4, [0] * 8])
    src = tmp_path / "bert.onnx"
    torch.onnx.export(model, (ids, mask, types), str(src), input_names=["input_ids", "attention_mask", "token_type_ids"],
                      output_names=["out"], opset_version=14, dynamo=False,
                      dynamic_axes={n: {0: "b", 1: "s"} for n in ["input_ids", "attention_mask", "token_type_ids"]})
    opt = optimizer.optimize_model(str(src), model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=1)
    ops = {(n.domain, n.op_type) for n in opt.model.graph.node}
    for op in ["Attention", "EmbedLayerNormalization", "SkipLayerNormalization"]:
        assert (MS, op) in ops, ops
    data = opt.model.SerializeToString()
    feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy(), "token_type_ids": types.numpy()}
    feeds = {i.name: feeds[i.name].astype(helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type))
             for i in opt.model.graph.input}
    compare(data, feeds, ["out"], rtol=1e-4, atol=1e-4)
    with torch.no_grad():
        want = model(ids, mask, types).numpy()
    got = ours(data, feeds)["out"]
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[1, :5], want[1, :5], rtol=1e-4, atol=1e-4)  # padded positions are don't-care


# ---- Bad input ---------------------------------------------------------------------------------

def test_bad_inputs_are_errors_naming_the_problem():
    data, feeds, _ = attention_case(mask=i32([[1, 1, 1], [1, 1, 1]]))  # [B, 3] is no mask format for T = 5
    with pytest.raises(oneflow.OneflowError, match=r"mask \[2,3\] is none of"):
        ours(data, feeds)
    data, feeds, _ = attention_case(mask=i32([-1, 5]))
    with pytest.raises(oneflow.OneflowError, match="negative"):
        ours(data, feeds)
    inputs = {"query": f32(B, S, N * H), "key": f32(B, S, N * H), "value": f32(B, S, N * H), "bias": f32(7)}
    with pytest.raises(oneflow.OneflowError, match="bias must have"):
        ours(*mha(inputs)[:2])
    d_in, width = 4, 3 * N * H
    q_inputs = [("input", rng.integers(0, 256, (B, S, d_in)).astype(np.uint8)),
                ("weight", rng.integers(-128, 128, (d_in, width)).astype(np.int8)), ("bias", f32(width)),
                ("input_scale", np.array(0.0, np.float32)), ("weight_scale", np.array(0.01, np.float32))]
    with pytest.raises(oneflow.OneflowError, match="input_scale holds 0"):
        ours(*one_node("QAttention", q_inputs, [0], num_heads=N)[:2])


def test_dynamic_quantize_lstm_bad_scale():
    d, inp, hid = 1, 3, 2
    inputs = [("X", f32(2, 1, inp)), ("W", np.ones((d, inp, 4 * hid), np.int8)), ("R", np.ones((d, hid, 4 * hid), np.int8)),
              ("B", None), ("sequence_lens", None), ("initial_h", None), ("initial_c", None), ("P", None),
              ("W_scale", np.array([np.nan], np.float32)), ("W_zero_point", np.zeros(1, np.int8)),
              ("R_scale", np.array([0.1], np.float32)), ("R_zero_point", np.zeros(1, np.int8))]
    data, feeds, _ = one_node("DynamicQuantizeLSTM", inputs, [0], stored=("W", "R", "W_scale", "W_zero_point"),
                              hidden_size=hid)
    with pytest.raises(oneflow.OneflowError, match="W's scale nan must be finite"):
        ours(data, feeds)
