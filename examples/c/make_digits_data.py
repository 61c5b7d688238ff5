#!/usr/bin/env python3
"""Exports scikit-learn's bundled digits data set (1797 8x8 images, 10 classes; shipped inside the
package, nothing is downloaded) as .npy files for examples/c/train_digits.c:

    OUT_DIR/train_x.npy  float32 [N, 64], pixels scaled to [0, 1]
    OUT_DIR/train_y.npy  int64   [N]
    OUT_DIR/test_x.npy, OUT_DIR/test_y.npy   the held-out 20%, stratified, fixed seed

    python3 make_digits_data.py OUT_DIR
"""
import os
import sys

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)
    for name, arr in [("train_x", x_tr), ("train_y", y_tr), ("test_x", x_te), ("test_y", y_te)]:
        np.save(os.path.join(out, name + ".npy"), np.ascontiguousarray(arr))
    print(f"digits: {len(y_tr)} train, {len(y_te)} test samples -> {out}")


if __name__ == "__main__":
    main()
