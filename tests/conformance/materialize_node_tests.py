#!/usr/bin/env python3
"""Writes the ONNX backend node test cases of the installed onnx package to a directory.

Recent onnx releases build these cases in memory (onnx.backend.test.case.node) instead of shipping
files, so we materialize them once per onnx version: OUT/<test_name>/model.onnx,
OUT/<test_name>/test_data_set_<k>/{input,output}_<j>.pb and OUT/<test_name>/tolerance.txt
("rtol atol"). A value is a TensorProto, or a SequenceProto / OptionalProto where the model declares
a sequence or an optional there (as onnx's own stored test data has them). A stamp file makes reruns
free.
"""
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper


# Bumped when what is written changes, so existing directories are written again.
FORMAT = "2 (sequences and optionals)"


def tensor_proto(value, name: str) -> onnx.TensorProto:
    if isinstance(value, onnx.TensorProto):  # cases that build their data as protos (Cast)
        proto = onnx.TensorProto()
        proto.CopyFrom(value)
        proto.name = name
        return proto
    return numpy_helper.from_array(np.asarray(value), name)


def sequence_proto(values, name: str) -> onnx.SequenceProto:
    proto = onnx.SequenceProto(name=name, elem_type=onnx.SequenceProto.TENSOR)
    for v in values:
        proto.tensor_values.append(tensor_proto(v, ""))
    return proto


def value_proto(value, type_proto: onnx.TypeProto, name: str):
    """The proto of `value` as the model declares it, or None for what this runner cannot encode."""
    kind = type_proto.WhichOneof("value")
    if kind == "sequence_type":
        return sequence_proto(value, name) if isinstance(value, list) else None
    if kind == "optional_type":
        inner = type_proto.optional_type.elem_type
        if inner.WhichOneof("value") == "sequence_type":
            proto = onnx.OptionalProto(name=name, elem_type=onnx.OptionalProto.SEQUENCE)
            if value is not None:
                proto.sequence_value.CopyFrom(sequence_proto(value, ""))
        else:
            proto = onnx.OptionalProto(name=name, elem_type=onnx.OptionalProto.TENSOR)
            if value is not None:
                proto.tensor_value.CopyFrom(tensor_proto(value, ""))
        return proto
    if not isinstance(value, (np.ndarray, onnx.TensorProto)) and not np.isscalar(value):
        return None  # maps: the runner reports the case unsupported
    return tensor_proto(value, name)


def main(out_dir: str) -> int:
    stamp = os.path.join(out_dir, ".onnx-version")
    version = f"{onnx.__version__} format {FORMAT}"
    if os.path.exists(stamp) and open(stamp).read().strip() == version:
        return 0
    warnings.filterwarnings("ignore")
    np.seterr(all="ignore")
    from onnx.backend.test.case import node  # noqa: PLC0415 (slow import, only when needed)

    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    count = 0
    for case in node.collect_testcases():
        case_dir = os.path.join(out_dir, case.name)
        os.makedirs(case_dir, exist_ok=True)
        with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        with open(os.path.join(case_dir, "tolerance.txt"), "w") as f:
            f.write(f"{case.rtol} {case.atol}\n")
        for k, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(case_dir, f"test_data_set_{k}")
            os.makedirs(ds, exist_ok=True)
            for prefix, values, infos in (("input", inputs, case.model.graph.input),
                                          ("output", outputs, case.model.graph.output)):
                for j, value in enumerate(values):
                    try:
                        proto = value_proto(value, infos[j].type, infos[j].name)
                    except Exception:  # dtypes numpy_helper cannot encode (e.g. float8)
                        continue
                    if proto is None:
                        continue
                    with open(os.path.join(ds, f"{prefix}_{j}.pb"), "wb") as f:
                        f.write(proto.SerializeToString())
        count += 1
    with open(stamp, "w") as f:
        f.write(version)
    print(f"materialized {count} node tests from onnx {onnx.__version__} into {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "build/onnx-node-tests"))
