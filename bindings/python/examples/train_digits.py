#!/usr/bin/env python3
"""Trains a classifier on scikit-learn's digits data set through the `oneflow` package — the Python
counterpart of examples/c/train_digits.c: a TrainingSession with an appended softmax cross-entropy loss,
AdamW with a warm-up + cosine schedule and gradient clipping, one progress line per epoch, the test
accuracy, a checkpoint, the trained model exported (.ofm, and .onnx where the library can) and a
prediction served from the exported file by a plain inference Session.

    train_digits.py DATA_DIR MODEL.onnx OUT_DIR [--epochs N] [--batch B] [--lr X] [--weight-decay W]
                    [--threads T] [--seed S] [--min-accuracy PCT]

DATA_DIR holds train_x/train_y/test_x/test_y.npy (examples/c/make_digits_data.py); MODEL.onnx maps
"input" [N, 64] to "logits" [N, 10] (examples/c/make_digits_models.py). Exits 1 on an engine error or
when the test accuracy is below --min-accuracy.
"""
import argparse
import os
import sys
import time

import numpy as np

import oneflow


def accuracy(logits: np.ndarray, labels: np.ndarray) -> float:
    return 100.0 * float(np.mean(np.argmax(logits, axis=1) == labels))


def evaluate(session: oneflow.TrainingSession, x: np.ndarray, y: np.ndarray) -> float:
    """Test accuracy in eval mode (no labels, nothing kept for backward), as one batch."""
    session.set_run_mode("eval")
    try:
        return accuracy(session.run({"input": x}, outputs=["logits"])["logits"], y)
    finally:
        session.set_run_mode("train")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data_dir")
    ap.add_argument("model")
    ap.add_argument("out_dir")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--weight-decay", type=float, default=1e-4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--min-accuracy", type=float, default=0.0)
    args = ap.parse_args()
    if args.epochs < 1 or args.batch < 1 or args.threads < 1:
        ap.error("--epochs, --batch and --threads must be >= 1")

    data = {name: np.load(os.path.join(args.data_dir, name + ".npy"))
            for name in ("train_x", "train_y", "test_x", "test_y")}
    x_train, y_train, x_test, y_test = data["train_x"], data["train_y"], data["test_x"], data["test_y"]
    os.makedirs(args.out_dir, exist_ok=True)
    steps_per_epoch = -(-len(x_train) // args.batch)
    total_steps = args.epochs * steps_per_epoch
    warmup = total_steps // 20
    print(f"{args.model}: {len(x_train)} train / {len(x_test)} test samples, {args.epochs} epochs of batch "
          f"{args.batch}, {args.threads} threads, oneflow {oneflow.__version__}")

    options = oneflow.TrainingOptions(
        loss="softmax_cross_entropy", logits_output="logits", labels_input="labels",
        optimizer="adamw", learning_rate=args.lr, weight_decay=args.weight_decay,
        lr_schedule="cosine", warmup_steps=warmup, warmup_start_factor=0.1, decay_steps=total_steps - warmup,
        min_lr_factor=0.02, max_grad_norm=5.0, deterministic=True, seed=args.seed)
    rng = np.random.default_rng(args.seed)  # the data order is the caller's; the engine draws nothing
    start = time.perf_counter()
    with oneflow.TrainingSession(args.model, options, oneflow.SessionOptions(threads=args.threads)) as session:
        print("training", len(session.parameter_names), "parameters:", " ".join(session.parameter_names))
        for epoch in range(args.epochs):
            t0, loss_sum, correct = time.perf_counter(), 0.0, 0
            order = rng.permutation(len(x_train))
            for first in range(0, len(order), args.batch):
                idx = order[first:first + args.batch]  # the short last batch is re-planned by the engine
                x, y = x_train[idx], y_train[idx]
                out = session.run({"input": x, "labels": y})  # logits, loss
                session.backward()
                if not session.step():
                    print("warning: a step was skipped (NaN/Inf)", file=sys.stderr)
                loss_sum += float(out["loss"]) * len(idx)
                correct += int(np.sum(np.argmax(out["logits"], axis=1) == y))
            state = session.state
            print(f"epoch {epoch + 1:3d}/{args.epochs}  loss {loss_sum / len(x_train):.4f}  "
                  f"train acc {100.0 * correct / len(x_train):5.1f}%  test acc {evaluate(session, x_test, y_test):5.1f}%  "
                  f"lr {state.learning_rate:.2e}  step {state.step}  {time.perf_counter() - t0:.2f} s", flush=True)

        acc = evaluate(session, x_test, y_test)
        mem = session.memory
        print(f"test accuracy {acc:.2f}% after {time.perf_counter() - start:.1f} s; training step memory: forward "
              f"arena {mem.forward_arena_bytes} B, kept activations {mem.saved_activation_bytes} B, backward arena "
              f"{mem.backward_arena_bytes} B")
        checkpoint = os.path.join(args.out_dir, "final.ckpt")
        session.save_checkpoint(checkpoint)
        print("checkpoint:", checkpoint)
        exported = os.path.join(args.out_dir, "trained.ofm")
        session.export_model(exported)
        print("exported the trained model to", exported)
        try:
            session.export_model(os.path.join(args.out_dir, "trained.onnx"))
            print("exported the trained model to", os.path.join(args.out_dir, "trained.onnx"))
        except oneflow.UnsupportedError as e:
            print("ONNX export is not in this build:", e)

    with oneflow.Session(exported) as served:  # a plain inference session over the exported file
        logits = served.run({"input": x_test[:1]})["logits"][0].astype(np.float64)
        p = np.exp(logits - logits.max())
        print(f"served from {exported}: test sample 0 is a {int(np.argmax(logits))} (p = {p.max() / p.sum():.3f}); "
              f"its label is {int(y_test[0])}")
    if acc < args.min_accuracy:
        print(f"test accuracy {acc:.2f}% is below the required {args.min_accuracy:.2f}%", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except oneflow.OneflowError as e:
        print(f"error: {type(e).__name__} ({e.code_name}): {e}", file=sys.stderr)
        sys.exit(1)
