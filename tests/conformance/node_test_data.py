"""Reading the materialized node-test data (materialize_node_tests.py) as the model declares each value:
shared by onnxruntime_baseline.py and tests/export/test_export.py."""
import onnx
from onnx import numpy_helper


def read_value(path, type_proto):
    """A test data file as the model declares the value: a TensorProto as an array, a SequenceProto as
    a list of arrays, an OptionalProto as its value or None."""
    with open(path, "rb") as fh:
        data = fh.read()
    kind = type_proto.WhichOneof("value")
    if kind == "sequence_type":
        seq = onnx.SequenceProto()
        seq.ParseFromString(data)
        return numpy_helper.to_list(seq)
    if kind == "optional_type":
        opt = onnx.OptionalProto()
        opt.ParseFromString(data)
        if not opt.HasField("tensor_value") and not opt.HasField("sequence_value"):
            return None  # empty (elem_type still says what it would hold)
        return numpy_helper.to_optional(opt)
    t = onnx.TensorProto()
    t.ParseFromString(data)
    return numpy_helper.to_array(t)
