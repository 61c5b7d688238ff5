#!/usr/bin/env python3
"""Writes the models and reference data the C API and CLI tests use into OUT_DIR.

The reference outputs come from numpy (an implementation independent of the engine). Raw tensors
are little-endian float32 files (*.f32) with shapes the C test knows:
  model.onnx        x, b: float32[batch,4] -> y = Relu(x + b) + x, "z:0/out" = Relu(y)
  const_model.onnx  x: float32[2,3] -> y = Relu(x + W), W an initializer
  ext/model.onnx    const_model with W stored as external data in ext/weights.bin
  escape/model.onnx W's external data location is "../outside.bin" (outside.bin exists)
  missing_ext.onnx  W's external data file does not exist
  unknown_op.onnx   a com.example::FrobnicateOp node (opset 3)
  unknown_onnx_op.onnx  an ai.onnx::NotARealOp node (opset 17)
  opset29.onnx / opset6.onnx / opset12.onnx  a Relu model importing ONNX opset 29 (refused) / 6 / 12
  opset6_prelu.onnx  a PRelu at opset 6, whose older form the import refuses
                                            (upgraded to opset 13 at import)
  sequence_model.onnx  s: seq(float32), o: optional(float32) -> cat = ConcatFromSequence(s, axis 0),
                       n = SequenceLength(s), has = OptionalHasElement(o), same = Identity(s)
  string_model.onnx  text: string[n] -> shout = StringConcat(text, "!"), words = StringSplit(text)'s counts,
                     greeting = RegexFullMatch(text, "(?i)hello.*"), id = LabelEncoder(text) over
                     {"a": 1, "b": 2} (default -1); the tests compute what each should be themselves
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IR_VERSION = 8


def save(model, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def raw(path, arr):
    np.ascontiguousarray(arr, dtype="<f4").tofile(path)


def main_model(opset=17):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    z = helper.make_tensor_value_info("z:0/out", TensorProto.FLOAT, ["batch", 4])
    nodes = [
        helper.make_node("Add", ["x", "b"], ["t"], name="add0"),
        helper.make_node("Relu", ["t"], ["r"], name="relu0"),
        helper.make_node("Add", ["r", "x"], ["y"], name="add1"),
        helper.make_node("Relu", ["y"], ["z:0/out"], name="relu1"),
    ]
    g = helper.make_graph(nodes, "c_api_main", [x, b], [y, z])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION,
                             producer_name="oneflow-tests")


def relu_model(opset, op="Relu"):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    inputs = ["x", "x"] if op == "PRelu" else ["x"]
    g = helper.make_graph([helper.make_node(op, inputs, ["y"])], op.lower(), [x], [y])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION)


def const_model(w, external_location=None):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    init = numpy_helper.from_array(w, "W")
    if external_location is not None:
        init.ClearField("raw_data")
        init.data_location = TensorProto.EXTERNAL
        for k, v in (("location", external_location), ("offset", "0"), ("length", str(w.nbytes))):
            e = init.external_data.add()
            e.key, e.value = k, v
    nodes = [helper.make_node("Add", ["x", "W"], ["t"]), helper.make_node("Relu", ["t"], ["y"])]
    g = helper.make_graph(nodes, "const", [x], [y], initializer=[init])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=IR_VERSION)


def unknown_op_model(domain, op, opset):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node(op, ["r"], ["y"], domain=domain, name="frob")]
    imports = [helper.make_opsetid("", 17)]
    if domain:
        imports.append(helper.make_opsetid(domain, opset))
    g = helper.make_graph(nodes, "unknown_op", [x], [y])
    return helper.make_model(g, opset_imports=imports, ir_version=IR_VERSION)


def sequence_model():
    f = TensorProto.FLOAT
    nodes = [helper.make_node("ConcatFromSequence", ["s"], ["cat"], axis=0),
             helper.make_node("SequenceLength", ["s"], ["n"]),
             helper.make_node("OptionalHasElement", ["o"], ["has"]),
             helper.make_node("Identity", ["s"], ["same"])]
    inputs = [helper.make_tensor_sequence_value_info("s", f, None),
              helper.make_value_info("o", helper.make_optional_type_proto(helper.make_tensor_type_proto(f, None)))]
    outputs = [helper.make_tensor_value_info("cat", f, None), helper.make_tensor_value_info("n", TensorProto.INT64, []),
               helper.make_tensor_value_info("has", TensorProto.BOOL, []),
               helper.make_tensor_sequence_value_info("same", f, None)]
    m = helper.make_model(helper.make_graph(nodes, "sequences", inputs, outputs),
                          opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = IR_VERSION  # no onnx.checker: onnx 1.23's wants shapes on outputs, and cat's is data-dependent
    return m


def string_model():
    s = TensorProto.STRING
    bang = helper.make_tensor("bang", s, [], [b"!"])
    nodes = [helper.make_node("StringConcat", ["text", "bang"], ["shout"]),
             helper.make_node("StringSplit", ["text"], ["pieces", "words"]),
             helper.make_node("RegexFullMatch", ["text"], ["greeting"], pattern="(?i)hello.*"),
             helper.make_node("LabelEncoder", ["text"], ["id"], domain="ai.onnx.ml", keys_strings=["a", "b"],
                              values_int64s=[1, 2], default_int64=-1)]
    inputs = [helper.make_tensor_value_info("text", s, ["n"])]
    outputs = [helper.make_tensor_value_info("shout", s, ["n"]), helper.make_tensor_value_info("words", TensorProto.INT64, ["n"]),
               helper.make_tensor_value_info("greeting", TensorProto.BOOL, ["n"]),
               helper.make_tensor_value_info("id", TensorProto.INT64, ["n"])]
    m = helper.make_model(helper.make_graph(nodes, "strings", inputs, outputs, [bang]),
                          opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid("ai.onnx.ml", 4)])
    m.ir_version = IR_VERSION
    onnx.checker.check_model(m)
    return m


def main(out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(1234)

    save(main_model(), os.path.join(out, "model.onnx"))
    for batch in (3, 5):
        x = rng.standard_normal((batch, 4)).astype(np.float32)
        b = rng.standard_normal((batch, 4)).astype(np.float32)
        y = np.maximum(x + b, 0) + x
        z = np.maximum(y, 0)
        for name, arr in (("x", x), ("b", b), ("y", y), ("z", z)):
            raw(os.path.join(out, f"{name}{batch}.f32"), arr)

    w = rng.standard_normal((2, 3)).astype(np.float32)
    xc = rng.standard_normal((2, 3)).astype(np.float32)
    raw(os.path.join(out, "xc.f32"), xc)
    raw(os.path.join(out, "yc.f32"), np.maximum(xc + w, 0))
    save(const_model(w), os.path.join(out, "const_model.onnx"))
    save(const_model(w, "weights.bin"), os.path.join(out, "ext", "model.onnx"))
    w.astype("<f4").tofile(os.path.join(out, "ext", "weights.bin"))
    save(const_model(w, "../outside.bin"), os.path.join(out, "escape", "model.onnx"))
    w.astype("<f4").tofile(os.path.join(out, "outside.bin"))
    save(const_model(w, "nonexistent_weights.bin"), os.path.join(out, "missing_ext.onnx"))

    save(unknown_op_model("com.example", "FrobnicateOp", 3), os.path.join(out, "unknown_op.onnx"))
    save(unknown_op_model("", "NotARealOp", 17), os.path.join(out, "unknown_onnx_op.onnx"))
    save(relu_model(29), os.path.join(out, "opset29.onnx"))
    save(relu_model(12), os.path.join(out, "opset12.onnx"))
    save(relu_model(6), os.path.join(out, "opset6.onnx"))
    save(relu_model(6, "PRelu"), os.path.join(out, "opset6_prelu.onnx"))
    save(sequence_model(), os.path.join(out, "sequence_model.onnx"))
    save(string_model(), os.path.join(out, "string_model.onnx"))
    open(os.path.join(out, "empty.onnx"), "wb").close()
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_c_api_fixture.py OUT_DIR")
    sys.exit(main(sys.argv[1]))
