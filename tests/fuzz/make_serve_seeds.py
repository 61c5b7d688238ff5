#!/usr/bin/env python3
"""Writes seed inputs for serve_request_fuzzer into OUT_DIR: valid and slightly broken KServe v2
requests (HTTP JSON, HTTP binary, gRPC), each prefixed by the fuzzer's mode byte."""
import json
import os
import struct
import sys

import numpy as np


def http_json(payload):
    return b"\x00" + json.dumps(payload).encode()


def http_binary(header, *arrays):
    head = json.dumps(header).encode()
    return b"\x01" + struct.pack("<I", len(head)) + head + b"".join(a.tobytes() for a in arrays)


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    seeds = {}
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    seeds["json_fp32"] = http_json({"id": "1", "inputs": [{"name": "x", "shape": [2, 3], "datatype": "FP32",
                                                              "data": x.tolist()}], "outputs": [{"name": "y"}]})
    seeds["json_types"] = http_json({"inputs": [
        {"name": "a", "shape": [3], "datatype": "INT8", "data": [-128, 0, 127]},
        {"name": "b", "shape": [2], "datatype": "BOOL", "data": [True, False]},
        {"name": "c", "shape": [1], "datatype": "UINT64", "data": [18446744073709551615]},
        {"name": "d", "shape": [2], "datatype": "FP16", "data": [0.5, -2]},
        {"name": "e", "shape": [1, 1], "datatype": "BF16", "data": [[1.25]]}],
        "parameters": {"binary_data_output": True, "timeout": 1000}})
    seeds["binary_fp32"] = http_binary({"inputs": [{"name": "x", "shape": [2, 3], "datatype": "FP32",
                                                    "parameters": {"binary_data_size": x.nbytes}}],
                                        "outputs": [{"name": "y", "parameters": {"binary_data": True}}]}, x)
    seeds["binary_two"] = http_binary({"inputs": [
        {"name": "x", "shape": [2], "datatype": "INT64", "parameters": {"binary_data_size": 16}},
        {"name": "z", "shape": [4], "datatype": "UINT8", "parameters": {"binary_data_size": 4}}]},
        np.array([1, -1], np.int64), np.array([1, 2, 3, 4], np.uint8))
    # BYTES: JSON strings, and binary data packed as Triton packs it (a 4-byte length, then the bytes).
    seeds["json_bytes"] = http_json({"inputs": [{"name": "t", "shape": [1, 2], "datatype": "BYTES",
                                                 "data": [["hello", "w\u00f6rld"]]}]})
    packed = b"".join(struct.pack("<I", len(w)) + w for w in (b"ab", b"", "\u00e9".encode()))
    seeds["binary_bytes"] = http_binary({"inputs": [{"name": "t", "shape": [3], "datatype": "BYTES",
                                                     "parameters": {"binary_data_size": len(packed)}}],
                                         "outputs": [{"name": "u", "parameters": {"binary_data": True}}]},
                                        np.frombuffer(packed, np.uint8))
    # RapidJSON 1.1's full-precision parser once tripped UBSan on a zero significand (clz(0)).
    seeds["json_long_zero"] = b"\x00" + b'{"inputs":[{"name":"x","shape":[1],"datatype":"FP64","data":[0.' + b"0" * 40 + b"]}]}"
    seeds["json_broken"] = b"\x00" + b'{"inputs":[{"name":"x","shape":[2,3],"datatype":"FP32","data":[1,2'
    try:
        from tritonclient.grpc import service_pb2
        req = service_pb2.ModelInferRequest(model_name="m", id="g")
        t = req.inputs.add(name="x", datatype="FP32", shape=[2, 3])
        req.raw_input_contents.append(x.tobytes())
        seeds["grpc_raw"] = b"\x02" + req.SerializeToString()
        req2 = service_pb2.ModelInferRequest(model_name="m")
        t = req2.inputs.add(name="x", datatype="INT32", shape=[3])
        t.contents.int_contents.extend([1, -2, 3])
        t = req2.inputs.add(name="b", datatype="BOOL", shape=[1])
        t.contents.bool_contents.append(True)
        req2.parameters["timeout"].int64_param = 5
        seeds["grpc_typed"] = b"\x02" + req2.SerializeToString()
        req3 = service_pb2.ModelInferRequest(model_name="m")
        t = req3.inputs.add(name="t", datatype="BYTES", shape=[2])
        t.contents.bytes_contents.extend([b"one", b"\xff"])
        t = req3.inputs.add(name="r", datatype="BYTES", shape=[1])
        seeds["grpc_bytes"] = b"\x02" + req3.SerializeToString()
    except ImportError:
        print("make_serve_seeds: tritonclient[grpc] not installed; no gRPC seeds", file=sys.stderr)
    for name, data in seeds.items():
        with open(os.path.join(out_dir, name + ".bin"), "wb") as f:
            f.write(data)
    print(f"make_serve_seeds: {len(seeds)} seeds in {out_dir}")


if __name__ == "__main__":
    main(sys.argv[1])
