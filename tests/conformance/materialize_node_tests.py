#!/usr/bin/env python3
"""Writes the ONNX backend node test cases of the installed onnx package to a directory.

Recent onnx releases build these cases in memory (onnx.backend.test.case.node) instead of shipping
files, so we materialize them once per onnx version: OUT/<test_name>/model.onnx,
OUT/<test_name>/test_data_set_<k>/{input,output}_<j>.pb and OUT/<test_name>/tolerance.txt
("rtol atol"). A stamp file makes reruns free.
"""
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper


def main(out_dir: str) -> int:
    stamp = os.path.join(out_dir, ".onnx-version")
    if os.path.exists(stamp) and open(stamp).read().strip() == onnx.__version__:
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
                    if isinstance(value, onnx.TensorProto):  # cases that build their data as protos (Cast)
                        proto = onnx.TensorProto()
                        proto.CopyFrom(value)
                        proto.name = infos[j].name
                        with open(os.path.join(ds, f"{prefix}_{j}.pb"), "wb") as f:
                            f.write(proto.SerializeToString())
                        continue
                    if not isinstance(value, np.ndarray) and not np.isscalar(value):
                        continue  # sequences, maps, optionals: the runner reports the case unsupported
                    try:
                        proto = numpy_helper.from_array(np.asarray(value), infos[j].name)
                    except Exception:  # dtypes numpy_helper cannot encode (e.g. float8)
                        continue
                    with open(os.path.join(ds, f"{prefix}_{j}.pb"), "wb") as f:
                        f.write(proto.SerializeToString())
        count += 1
    with open(stamp, "w") as f:
        f.write(onnx.__version__)
    print(f"materialized {count} node tests from onnx {onnx.__version__} into {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "build/onnx-node-tests"))
