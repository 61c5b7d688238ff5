#!/usr/bin/env python3
"""Shard-on-read: per-rank resident memory of a tensor-parallel transformer on 4 Gloo processes.

A transformer encoder wider than the bench one (4 layers, d=512, FFN 2048: 48 MiB of weights) is
written as a native .ofm file; 4 ranks run it tensor parallel (attention heads and FFN split, the
layer norms and biases broadcast), once with the model's weight pages given back after planning
(the default) and once keeping them (a full load). Each rank prints its resident memory after the
first run, then checks its outputs against its own single-device run (<= 1e-5).

Asserts, per rank: giving the pages back leaves at least 60 % of the model's weight bytes less
resident than the full load (each rank keeps a quarter of the split weights, as its slices and
their packed copies, and the broadcast ones). Prints the table.
Usage: shard_on_read_test.py WORKER ONEFLOW_CLI WORK_DIR
"""
import json
import os
import subprocess
import sys

import onnx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from make_models import make_transformer  # noqa: E402

from gloo_launch import launch_ranks  # noqa: E402

N = 4


def run(worker, model, pages):
    res, _ = launch_ranks(worker, ["shard_rss", model, pages, "2x16x512"], N, "oneflow-shard-", 600, 120000)
    rows = []
    for rank, (rc, out, err) in enumerate(res):
        assert rc == 0, f"{pages}: rank {rank} exited {rc}: {err}"
        rows.append(json.loads(out.strip().splitlines()[-1]))
    return rows


def main():
    worker, cli, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    src, ofm = os.path.join(work, "transformer_wide.onnx"), os.path.join(work, "transformer_wide.ofm")
    onnx.save(make_transformer(seed=7, d=512, ffn=2048), src)
    subprocess.run([cli, "convert", src, ofm], check=True, capture_output=True)
    full, shard = run(worker, ofm, "keep"), run(worker, ofm, "release")
    weights = full[0]["weights_kb"]
    print(f"transformer d=512 ffn=2048, {weights / 1024:.1f} MiB of weights, tensor parallel over {N} Gloo "
          "processes; resident MiB after the first run: VmRSS (file-backed / anonymous, the growth since before "
          f"the load); before the load rank 0 had {full[0]['start_rss_kb'] / 1024:.1f} MiB resident (the library)")
    print("rank | full load               | shard-on-read           | saved")
    failed = []
    for f, s in zip(full, shard):
        saved = f["rss_kb"] - s["rss_kb"]
        row = ""
        for r in (f, s):
            grown = (r['rss_anon_kb'] - r['start_anon_kb']) / 1024
            row += f"{r['rss_kb'] / 1024:7.1f} ({r['rss_file_kb'] / 1024:5.1f} / +{grown:5.1f}) | "
        print(f"{f['rank']:>4} | {row}{saved / 1024:5.1f} ({saved / weights:.0%} of the weights)")
        if saved < 0.6 * weights:
            failed.append(f["rank"])
    assert not failed, f"ranks {failed} kept more than 40% of the model's weight bytes resident"


if __name__ == "__main__":
    main()
