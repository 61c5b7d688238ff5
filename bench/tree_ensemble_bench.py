#!/usr/bin/env python3
"""scikit-learn tree ensembles converted by skl2onnx (TreeEnsembleRegressor / TreeEnsembleClassifier)
against onnxruntime, one thread, in one process per instruction-set tier, as ratios ours/onnxruntime
of the median of alternating block medians (run_bench.time_engines). Outputs are checked against
onnxruntime's first.

Rows (float32 X of 2048 rows x 20 features, fixed seeds):
  RandomForestRegressor      100 trees of depth 8
  GradientBoostingClassifier 100 trees of depth 3, two classes (LOGISTIC, one score)
  RandomForestClassifier     50 trees of depth 8, four classes

    python3 bench/tree_ensemble_bench.py [--lib build/liboneflow.so] [--isa native,avx2,sse4.2]
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_bench  # noqa: E402  (time_rows_vs_ort, tier_bench_main)


def rows():
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier, RandomForestRegressor
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4000, 20)).astype(np.float32)
    y = x[:, 0] * 2 + np.sin(x[:, 1] * 3) - x[:, 2] * x[:, 3]
    models = [
        ("RandomForestRegressor 100x8", RandomForestRegressor(n_estimators=100, max_depth=8, random_state=0), y),
        ("GradientBoosting binary 100x3", GradientBoostingClassifier(n_estimators=100, max_depth=3, random_state=0),
         (y > 0).astype(np.int64)),
        ("RandomForestClassifier 4-class 50x8", RandomForestClassifier(n_estimators=50, max_depth=8, random_state=0),
         np.digitize(y, [-1, 0, 1]).astype(np.int64)),
    ]
    out = []
    for name, model, target in models:
        model.fit(x, target)
        options = {id(model): {"zipmap": False}} if hasattr(model, "predict_proba") else None
        onx = convert_sklearn(model, initial_types=[("X", FloatTensorType([None, 20]))], options=options)
        out.append((name, onx, {"X": rng.standard_normal((2048, 20)).astype(np.float32)}))
    return out


def run_tier(lib, max_seconds):
    """Times every row in this process (its ONEFLOW_MAX_ISA already set); prints JSON rows."""
    run_bench.time_rows_vs_ort(lib, max_seconds, rows(), rtol=1e-5, atol=1e-5)


def main():
    return run_bench.tier_bench_main(__file__, __doc__.splitlines()[0], run_tier)


if __name__ == "__main__":
    sys.exit(main())
