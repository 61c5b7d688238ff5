#!/usr/bin/env python3
"""Loads an ONNX model with the oneflow package, runs it once and prints every output.

  python3 infer.py MODEL.onnx [--input NAME=FILE.npy ...] [--dim SYMBOL=SIZE ...] [--threads N]
                              [--save-dir DIR]

Inputs not given as .npy files are filled with seeded random values of the input's dtype and shape;
a symbolic dim (e.g. "batch") takes its size from --dim, else 1. --save-dir writes each output to
DIR/<index>.npy.
"""
import argparse
import os
import sys

import numpy as np

import oneflow


def parse_pairs(items, what):
    pairs = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            sys.exit(f"{what} must look like NAME=VALUE, got {item!r}")
        pairs[name] = value
    return pairs


def make_input(info, dims, rng):
    if info.shape is None:
        sys.exit(f"input {info.name!r} has an unknown rank; pass it with --input {info.name}=FILE.npy")
    shape = [d if isinstance(d, int) else int(dims.get(d, 1)) if isinstance(d, str) else 1 for d in info.shape]
    dtype = np.dtype(info.dtype)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(0, 10, shape).astype(dtype)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    ap.add_argument("--dim", action="append", default=[], metavar="SYMBOL=SIZE")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--save-dir")
    args = ap.parse_args()
    files, dims = parse_pairs(args.input, "--input"), parse_pairs(args.dim, "--dim")

    print(f"oneflow {oneflow.__version__} (C ABI {oneflow.ABI_VERSION})")
    try:
        with oneflow.Session(args.model, oneflow.SessionOptions(threads=args.threads)) as session:
            rng = np.random.default_rng(0)
            feeds = {}
            for info in session.inputs:
                feeds[info.name] = np.load(files.pop(info.name)) if info.name in files else make_input(info, dims, rng)
                print(f"input  {info.name}: {info.dtype}{list(feeds[info.name].shape)} (model: {info.shape})")
            if files:
                sys.exit(f"the model has no input named {', '.join(files)}")
            outputs = session.run(feeds)
    except oneflow.OneflowError as e:
        sys.exit(f"{e.code_name}: {e}")
    for index, (name, value) in enumerate(outputs.items()):
        flat = value.reshape(-1)
        print(f"output {name}: {value.dtype}{list(value.shape)} first values {flat[:6].tolist()}")
        if args.save_dir:
            os.makedirs(args.save_dir, exist_ok=True)
            np.save(os.path.join(args.save_dir, f"{index}.npy"), value)
    return 0


if __name__ == "__main__":
    sys.exit(main())
