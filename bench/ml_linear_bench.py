#!/usr/bin/env python3
"""scikit-learn's linear models and encoders converted by skl2onnx (LinearClassifier, LinearRegressor,
Normalizer, OneHotEncoder over strings) against onnxruntime, one thread, in one process per
instruction-set tier, as ratios ours/onnxruntime of the median of alternating block medians
(run_bench.time_engines); outputs checked against onnxruntime's first.

Rows (fixed seeds):
  LogisticRegression 10 classes   4096 rows x 100 features, SOFTMAX scores
  LinearRegression 3 targets      4096 rows x 100 features
  Normalizer l2                   4096 rows x 100 features
  OneHotEncoder strings           8192 rows x 4 columns of 20 categories each

    python3 bench/ml_linear_bench.py [--lib build/liboneflow.so] [--isa native,avx2,sse4.2]
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_bench  # noqa: E402  (time_rows_vs_ort, tier_bench_main)


def rows():
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.preprocessing import Normalizer, OneHotEncoder
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4096, 100)).astype(np.float32)
    classes = np.digitize(x[:, :3].sum(1), np.linspace(-3, 3, 9))
    logistic = LogisticRegression(max_iter=200).fit(x, classes)
    linear = LinearRegression().fit(x, np.stack([x[:, 0], x[:, 1] - x[:, 2], x.sum(1)], 1))
    norm = Normalizer(norm="l2").fit(x)
    cats = np.array([[f"c{j}_{v}" for j, v in enumerate(row)] for row in rng.integers(0, 20, (8192, 4))], dtype=object)
    onehot = OneHotEncoder(handle_unknown="ignore").fit(cats)
    f = [("X", FloatTensorType([None, 100]))]
    return [
        ("LogisticRegression 10 classes", convert_sklearn(logistic, initial_types=f,
                                                          options={id(logistic): {"zipmap": False}}), {"X": x}),
        ("LinearRegression 3 targets", convert_sklearn(linear, initial_types=f), {"X": x}),
        ("Normalizer l2", convert_sklearn(norm, initial_types=f), {"X": x}),
        ("OneHotEncoder strings 8192x4", convert_sklearn(onehot, initial_types=[("X", StringTensorType([None, 4]))]),
         {"X": cats}),
    ]


def run_tier(lib, max_seconds):
    run_bench.time_rows_vs_ort(lib, max_seconds, rows(), rtol=1e-4, atol=1e-5)


def main():
    return run_bench.tier_bench_main(__file__, __doc__.splitlines()[0], run_tier)


if __name__ == "__main__":
    sys.exit(main())
