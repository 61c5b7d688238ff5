#!/usr/bin/env python3
"""Benchmarks OneFlow (liboneflow.so through its C ABI) against onnxruntime on the same inputs.

For every model, batch size and thread count: both engines run the same numpy inputs; outputs are
compared (max abs error <= 1e-4 * max(1, max|ORT output|)); then both are timed for the same number
of iterations after a warmup, alternating engines block by block so machine drift hits both alike.
Prints a table (p50 latencies and the ratio ours/ORT: < 1.0 means OneFlow is faster) and optionally
writes every number as JSON. Models are generated into bench/models/ on first use.

    python3 bench/run_bench.py [--models mlp,cnn] [--threads 1,2] [--iters N] [--json out.json]
"""
import argparse
import datetime
import json
import math
import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import make_models  # noqa: E402

RTOL = 1e-4
ALLOWED_CPUS = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()


def compare(ours, ref, rtol=None):
    """Returns (ok, max_abs_err, tolerance, detail) for two lists of arrays (ours vs reference);
    `rtol` (of max(1, max|ref|)) defaults to RTOL."""
    rtol = RTOL if rtol is None else rtol
    if len(ours) != len(ref):
        return False, math.inf, 0.0, f"{len(ours)} outputs, reference has {len(ref)}"
    worst, tol_used, detail = 0.0, 0.0, ""
    ok = True
    for i, (a, r) in enumerate(zip(ours, ref)):
        if a.shape != r.shape:
            return False, math.inf, 0.0, f"output {i}: shape {a.shape}, reference {r.shape}"
        if a.dtype != r.dtype:
            return False, math.inf, 0.0, f"output {i}: dtype {a.dtype}, reference {r.dtype}"
        if a.size == 0:
            continue
        a64, r64 = a.astype(np.float64), r.astype(np.float64)
        tol = rtol * max(1.0, float(np.max(np.abs(r64[~np.isnan(r64)]), initial=0.0)))
        if not np.array_equal(np.isnan(a64), np.isnan(r64)):
            err = math.inf
        else:
            err = float(np.nanmax(np.abs(a64 - r64))) if not np.isnan(r64).all() else 0.0
        if err > tol and ok:
            ok = False
            detail = f"output {i}: max abs err {err:.3g} > tol {tol:.3g}"
        if tol_used == 0.0 or err / tol > worst / tol_used:
            worst, tol_used = err, tol
    return ok, worst, tol_used, detail


def make_ort_session(path, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def stats(samples_ns):
    ms = np.asarray(samples_ns, dtype=np.float64) / 1e6
    return {"p50_ms": float(np.percentile(ms, 50)), "p90_ms": float(np.percentile(ms, 90)),
            "mean_ms": float(ms.mean()), "min_ms": float(ms.min()), "iters": int(ms.size)}


def load_binding(lib_path):
    """The `oneflow` Python package (bindings/python), running `lib_path`. ORT is timed through its
    compiled binding, so we are too: a ctypes wrapper would add ~10 us per run to our side only.
    Found installed, or in the build tree where ctest's python_binding_install puts it."""
    os.environ["ONEFLOW_LIBRARY"] = lib_path
    try:
        import oneflow
    except ImportError:
        sys.path.insert(0, os.path.join(os.path.dirname(lib_path), "tests", "python", "site"))
        import oneflow
    return oneflow


def error_status(exc):
    code_name = getattr(exc, "code_name", None)  # the binding's OneflowError and its subclasses
    if code_name is not None:
        kind = "UNSUPPORTED" if code_name == "UNSUPPORTED" else f"ERROR {code_name}"
        return kind, str(exc)
    return "ERROR", f"{type(exc).__name__}: {exc}"


def bench_one(lib, lib_error, name, path, batch, threads, iters, warmup, max_seconds, log, blocks=30, pin=True,
              min_seconds=0.0):
    """One table row: both engines on one (model, batch, threads). A failure of either engine
    (unsupported op, load error) is recorded in the row and the other engine is still timed."""
    row = {"model": name, "batch": batch, "threads": threads, "ours": None, "ort": None, "ratio_p50": None,
           "ours_status": "OK", "ours_message": "", "ort_status": "OK", "ort_message": "", "check": None,
           "cpus": pin_threads(threads) if pin else None}
    feeds = make_models.make_inputs(name, batch)
    ort_sess = ref = None
    try:
        ort_sess = make_ort_session(path, threads)
        ort_names = [o.name for o in ort_sess.get_outputs()]
        ref = ort_sess.run(ort_names, feeds)
    except Exception as exc:
        row["ort_status"], row["ort_message"] = "ERROR", f"{type(exc).__name__}: {exc}"
        ort_sess = None

    ours = None
    if lib is None:
        row["ours_status"], row["ours_message"] = "ERROR", lib_error
    else:
        try:
            ours = lib.Session(path, lib.SessionOptions(threads=threads))
            got = ours.run(feeds)
            if ref is not None:
                got = [got[n] for n in ort_names]  # by name, in ORT's order
                ok, err, tol, detail = compare(got, ref, make_models.MODELS[name].get("rtol"))
                row["check"] = {"ok": ok, "max_abs_err": err, "tol": tol, "detail": detail}
        except Exception as exc:  # an unsupported op must give a row, not end the bench
            row["ours_status"], row["ours_message"] = error_status(exc)
            if ours is not None:
                ours.close()
            ours = None

    engines = []
    if ort_sess is not None:
        engines.append(("ort", lambda: ort_sess.run(ort_names, feeds)))
    if ours is not None:
        engines.append(("ours", lambda: ours.run(feeds)))
    n = 0
    try:
        n = time_engines(engines, iters, warmup, max_seconds, row, blocks=blocks, min_seconds=min_seconds)
    except Exception as exc:  # a failure while timing (after a good first run) is still a row
        key = "ours" if isinstance(exc, lib.OneflowError) else "ort"
        row[key] = None
        row[key + "_status"], row[key + "_message"] = error_status(exc)
    if ours is not None:
        ours.close()
    if row["ours"] and row["ort"]:
        row["ratio_p50"] = row["ours"]["p50_ms"] / row["ort"]["p50_ms"]
    desc = lambda k: (f"{row[k]['p50_ms']:.3f} ms" if row[k] else row[k + "_status"])  # noqa: E731
    ratio = f", ratio {row['ratio_p50']:.2f}" if row["ratio_p50"] else ""
    log(f"  {name} batch={batch} threads={threads}: ORT {desc('ort')}, ours {desc('ours')}{ratio} ({n} iters)")
    return row


def time_engines(engines, iters, warmup, max_seconds, row, blocks=30, rest=0.1, warm_seconds=0.02, min_seconds=0.0):
    """Warms up, then times every engine for the same number of runs in interleaved blocks (the
    engine that goes first alternates); stores stats in row[key]. The headline p50 is the median
    of the per-block medians: a block that a burst of machine load hit moves it far less than it
    moves the pooled percentiles. Returns the number of timed runs per engine."""
    if not engines:
        return 0
    per_iter = {}
    for key, fn in engines:
        t0 = time.perf_counter()
        fn()
        first = time.perf_counter() - t0
        # A very slow engine gets fewer warmup runs (at most ~20% of the time budget).
        extra = warmup - 1 if max_seconds <= 0 else min(warmup - 1, int(0.2 * max_seconds / max(first, 1e-9)))
        t0 = time.perf_counter()
        for _ in range(max(0, extra)):
            fn()
        per_iter[key] = (time.perf_counter() - t0) / extra if extra > 0 else first
    # Size the timed run: at least min_seconds for the slower engine, so that each block of a fast
    # row spans tens of milliseconds (a block of twenty 50 us runs lasts 1 ms: a burst of load from
    # elsewhere on the host then hits whole blocks of one engine and not the other's, and the
    # median of block medians follows the bursts instead of the engines); and no engine more than
    # max_seconds (but >= 5 runs).
    slowest = max(max(per_iter.values()), 1e-9)
    n = iters
    if min_seconds > 0:
        n = max(n, int(min_seconds / slowest))
    if max_seconds > 0:
        n = max(min(iters, 5), min(n, int(max_seconds / slowest)))
    blocks = max(1, min(blocks, n))
    block_warmup = 3 if max(per_iter.values()) < 0.01 else 1
    samples = {key: [] for key, _ in engines}
    block_medians = {key: [] for key, _ in engines}
    for b in range(blocks):
        count = n // blocks + (1 if b < n % blocks else 0)
        order = engines if b % 2 == 0 else engines[::-1]  # alternate who goes first
        for key, fn in order:
            time.sleep(rest)  # let the other engine's worker threads go idle before timing (ORT spins ~50 ms)
            # ...then bring this engine back to steady state (threads awake, caches and clocks warm)
            # with untimed runs: the same for both engines, and what a busy service sees. A few runs
            # are not enough for a ~50 us model: after the rest the host's cores come back slowly
            # (measured: a 2-thread cnn at batch 1 still ran at ~80 us twenty runs after a 100 ms
            # rest, ~45 us in a steady loop, for both engines), so warm for a fixed time as well.
            t_warm = time.perf_counter()
            runs = 0
            while runs < block_warmup or time.perf_counter() - t_warm < warm_seconds:
                fn()
                runs += 1
            block = []
            for _ in range(count):
                t0 = time.perf_counter_ns()
                fn()
                block.append(time.perf_counter_ns() - t0)
            samples[key].extend(block)
            block_medians[key].append(float(np.median(block)) / 1e6)
    for key, s in samples.items():
        row[key] = stats(s)
        bm = np.asarray(block_medians[key])
        row[key]["p50_ms"] = float(np.median(bm))  # the headline: median of the block medians
        row[key]["pooled_p50_ms"] = float(np.percentile(np.asarray(s, dtype=np.float64) / 1e6, 50))
        row[key]["block_medians_ms"] = [float(x) for x in bm]
        row[key]["blocks"] = int(bm.size)
    # How steady the comparison was: the spread of the per-block ratios (a pair of blocks runs
    # back to back, so both engines saw about the same machine load).
    if len(engines) == 2 and "ours" in block_medians and "ort" in block_medians:
        r = np.asarray(block_medians["ours"]) / np.asarray(block_medians["ort"])
        row["block_ratio_p25"], row["block_ratio_p75"] = float(np.percentile(r, 25)), float(np.percentile(r, 75))
    return n


def pin_threads(threads):
    """Pins this thread (and the engine threads that sessions created after this start) to the first
    `threads` CPUs this process may use, for both engines alike: no migrations between cores in the
    middle of a timed block. Returns the CPUs, or None where affinity cannot be set."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(ALLOWED_CPUS)
    cpus = set(allowed[:max(1, min(threads, len(allowed)))])
    os.sched_setaffinity(0, cpus)
    return sorted(cpus)


def _finite(obj):
    """JSON has no Infinity/NaN: they become null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def fmt_ms(x):
    return f"{x:.3f}" if x < 10 else f"{x:.2f}" if x < 100 else f"{x:.1f}"


def one_line(msg, limit=240):
    """A message fit for a table cell: whitespace collapsed, long ones cut (JSON keeps them whole)."""
    msg = " ".join(str(msg).split())
    return msg if len(msg) <= limit else msg[:limit - 3] + "..."


def print_table(rows, out=sys.stdout):
    head = f"{'model':<12} {'batch':>5} {'thr':>3} {'ours p50 ms':>12} {'ORT p50 ms':>11} {'ours/ORT':>9}  " \
           f"{'blk IQR':>11} {'ours p90':>9} {'ORT p90':>9} {'iters':>6}  check"
    print(head, file=out)
    print("-" * len(head), file=out)
    for r in rows:
        ours, ort = r["ours"], r["ort"]
        cell = lambda st, key, w: f"{fmt_ms(st[key]) if st else '-':>{w}}"  # noqa: E731
        ratio = f"{r['ratio_p50']:>9.2f}" if r["ratio_p50"] else f"{'-':>9}"
        iqr = f"{r['block_ratio_p25']:.2f}-{r['block_ratio_p75']:.2f}" if r.get("block_ratio_p25") else "-"
        iters = (ours or ort or {}).get("iters", 0)
        notes = []
        if r["ort"] is None:
            notes.append(f"ORT: {r['ort_status']}: {one_line(r['ort_message'])}")
        if ours is None:
            notes.append(f"ours: {r['ours_status']}: {one_line(r['ours_message'])}")
        elif r["check"] is not None:
            c = r["check"]
            notes.append(f"ok (err {c['max_abs_err']:.1e})" if c["ok"] else f"MISMATCH: {c['detail']}")
        print(f"{r['model']:<12} {r['batch']:>5} {r['threads']:>3} {cell(ours, 'p50_ms', 12)} "
              f"{cell(ort, 'p50_ms', 11)} {ratio}  {iqr:>11} {cell(ours, 'p90_ms', 9)} {cell(ort, 'p90_ms', 9)} "
              f"{iters:>6}  {'; '.join(notes)}", file=out)


def print_model_checks(rows, out=sys.stdout):
    """One line per model: do our outputs agree with onnxruntime's (worst case over its rows)?"""
    print("\nOutput agreement with onnxruntime (max abs err <= 1e-4 * max(1, max|ref|)):", file=out)
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == model]
        failed = [r for r in mine if r["check"] is None]
        checks = [r["check"] for r in mine if r["check"] is not None]
        if failed and not checks:
            f0 = failed[0]
            why = one_line(f"ours: {f0['ours_status']}: {f0['ours_message']}" if f0["ours_status"] != "OK"
                           else f"ORT: {f0['ort_status']}: {f0['ort_message']}")
            print(f"  {model:<12} NOT RUN  ({why})", file=out)
            continue
        bad = [c for c in checks if not c["ok"]]
        worst = max(checks, key=lambda c: c["max_abs_err"] / c["tol"] if c["tol"] else math.inf)
        verdict = "MISMATCH" if bad else "OK      "
        extra = f"  {bad[0]['detail']}" if bad else ""
        if failed:
            extra += "  (some rows not compared)"
        print(f"  {model:<12} {verdict} max abs err {worst['max_abs_err']:.2e} (tol {worst['tol']:.2e}){extra}",
              file=out)


def machine_info():
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpu": cpu, "isa": isa_info(), "logical_cpus": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version(), "numpy": np.__version__,
            "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None}


def isa_info():
    """The CPU's widest instruction-set tier (as base/cpu_isa.h names them) from /proc/cpuinfo, and
    the ONEFLOW_MAX_ISA cap when set: every figure says which kernels produced it."""
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    tier = "sse4.2"
    if {"avx2", "fma", "bmi2", "f16c"} <= flags:
        tier = "avx2"
        if {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd"} <= flags:
            tier = "avx512_vnni" if "avx512_vnni" in flags else "avx512"
    cap = os.environ.get("ONEFLOW_MAX_ISA")
    return f"{tier}, capped at {cap} (ONEFLOW_MAX_ISA)" if cap else tier


def build_type(lib_path):
    """CMAKE_BUILD_TYPE of the build dir holding the library, when it is one (else None)."""
    cache = os.path.join(os.path.dirname(os.path.abspath(lib_path)), "CMakeCache.txt")
    try:
        with open(cache) as f:
            for line in f:
                if line.startswith("CMAKE_BUILD_TYPE:"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return None


def time_rows_per_tier(script, lib, tiers, max_seconds, label_width=36, extra_args=()):
    """Runs `script --tier-child` once per instruction-set tier (the host's, then each cap through
    ONEFLOW_MAX_ISA, so every compiled copy of our kernels is timed) and prints its rows, which the
    child prints as one JSON list of {row, ours_ms, ort_ms}, as ratios ours/onnxruntime. Returns 1
    when a tier fails."""
    import json
    import subprocess
    print(f"{'row':{label_width}} {'tier':8} {'ours ms':>9} {'ort ms':>9} {'ours/ort':>9}")
    for tier in tiers:
        env = dict(os.environ)
        env.pop("ONEFLOW_MAX_ISA", None)
        if tier != "native":
            env["ONEFLOW_MAX_ISA"] = tier
        res = subprocess.run([sys.executable, script, "--lib", lib, "--max-seconds", str(max_seconds), "--tier-child",
                              *extra_args], env=env, capture_output=True, text=True)
        if res.returncode != 0:
            print(f"tier {tier} failed:\n{res.stderr[-2000:]}")
            return 1
        for r in json.loads(res.stdout.strip().splitlines()[-1]):
            print(f"{r['row']:{label_width}} {tier:8} {r['ours_ms']:9.3f} {r['ort_ms']:9.3f} "
                  f"{r['ours_ms'] / r['ort_ms']:9.2f}")
    return 0


def time_rows_vs_ort(lib, max_seconds, rows, rtol, atol):
    """For per-tier bench scripts: each row (name, onnx model, feeds) runs in both engines on one
    thread, every output checked against onnxruntime's (rtol/atol), then timed in alternating
    blocks; prints the rows as one JSON list of {row, ours_ms, ort_ms}."""
    import json
    import tempfile
    import onnx
    oneflow = load_binding(lib)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, feeds in rows:
            path = os.path.join(tmp, "m.onnx")
            onnx.save(model, path)
            outs = [o.name for o in model.graph.output]
            ort_sess = make_ort_session(path, 1)
            ours_sess = oneflow.Session(path, oneflow.SessionOptions(threads=1))
            got, want = ours_sess.run(feeds), ort_sess.run(outs, feeds)
            for o, w in zip(outs, want):
                if w.dtype == object:  # strings match exactly
                    assert np.asarray(got[o]).tolist() == w.tolist(), f"{name}: {o}"
                else:
                    np.testing.assert_allclose(got[o], w, rtol=rtol, atol=atol, err_msg=f"{name}: {o}")
            row = {"row": name}
            time_engines([("ours", lambda: ours_sess.run(feeds)), ("ort", lambda: ort_sess.run(outs, feeds))],
                         iters=50, warmup=5, max_seconds=max_seconds, row=row, blocks=10, min_seconds=0.5)
            results.append({"row": name, "ours_ms": row["ours"]["p50_ms"], "ort_ms": row["ort"]["p50_ms"]})
            ours_sess.close()
    print(json.dumps(results))


def tier_bench_main(script, description, run_tier):
    """The command line of a per-tier bench script: with --tier-child, run_tier(lib, max_seconds)
    times the rows in this process; otherwise print the machine and run one child per tier
    (time_rows_per_tier)."""
    import argparse
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--lib", default="build/liboneflow.so")
    ap.add_argument("--isa", default="native,avx2,sse4.2", help="tiers to time, comma-separated")
    ap.add_argument("--max-seconds", type=float, default=3.0)
    ap.add_argument("--tier-child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    lib = resolve_lib(a.lib)
    if a.tier_child:
        run_tier(lib, a.max_seconds)
        return 0
    import onnxruntime as ort
    info = machine_info()
    print(f"CPU: {info['cpu']}; instruction set: {info['isa']}; onnxruntime {ort.__version__}; 1 thread")
    return time_rows_per_tier(script, lib, a.isa.split(","), a.max_seconds)


def resolve_lib(path):
    if os.path.isabs(path) or os.path.exists(path):
        return path
    return os.path.join(ROOT, path)  # "build/liboneflow.so" also works from outside the repo root


def main(argv=None):
    ap = argparse.ArgumentParser(description="OneFlow vs onnxruntime latency benchmark",
                                 epilog="ratio = ours p50 / ORT p50; < 1.0 means OneFlow is faster.")
    ap.add_argument("--models", default=",".join(make_models.DEFAULT_MODELS),
                    help=f"comma-separated, from: {', '.join(list(make_models.GROUPS) + list(make_models.MODELS))} "
                         "(default: %(default)s)")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default: %(default)s)")
    ap.add_argument("--batches", default=None, help="comma-separated batch sizes overriding each model's")
    ap.add_argument("--iters", type=int, default=None,
                    help="timed iterations per engine and row (default: per model, mlp/cnn 200, transformer 30, "
                         "resnet18 50)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed runs per engine before timing (default 5)")
    ap.add_argument("--max-seconds", type=float, default=10.0,
                    help="cap on the timed seconds per engine and row: fewer iterations (>= 5) for slow "
                         "engines; 0 disables (default %(default)s)")
    ap.add_argument("--min-seconds", type=float, default=1.0,
                    help="timed seconds per engine and row at least (more iterations for fast rows, so each "
                         "block lasts tens of ms); 0 disables (default %(default)s)")
    ap.add_argument("--blocks", type=int, default=30,
                    help="interleaved timing blocks per row; the headline p50 is the median of the block "
                         "medians (default %(default)s)")
    ap.add_argument("--no-pin", action="store_true",
                    help="do not pin each row to its first THREADS allowed CPUs (pinning applies to both engines)")
    ap.add_argument("--lib", default="build/liboneflow.so", help="path to liboneflow.so (default %(default)s)")
    ap.add_argument("--models-dir", default=make_models.DEFAULT_OUT, help="where models are generated")
    ap.add_argument("--json", metavar="FILE", help="also write all results as JSON")
    args = ap.parse_args(argv)

    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    names = make_models.expand([m for m in args.models.split(",") if m])
    threads = [int(t) for t in args.threads.split(",") if t]
    paths = make_models.ensure(names, args.models_dir, log=log)

    import onnxruntime as ort
    lib, lib_error, lib_version = None, "", None
    lib_path = resolve_lib(args.lib)
    try:
        lib = load_binding(lib_path)
        lib_version = lib.__version__
    except (OSError, ImportError) as exc:
        lib_error = f"cannot load {lib_path}: {exc}"
        log(f"warning: {lib_error}; timing onnxruntime only")
    btype = build_type(lib_path)
    if btype not in (None, "Release"):
        log(f"warning: {lib_path} comes from a '{btype}' build; timings are only meaningful for Release")
    log(f"OneFlow {lib_version or '-'} ({lib_path}, {btype or 'build type unknown'}) vs onnxruntime {ort.__version__}")
    info = machine_info()
    print(f"CPU: {info['cpu']}, {info['logical_cpus']} logical CPUs; instruction set: {info['isa']}")

    rows = []
    t_start = time.time()
    for name in names:
        spec = make_models.MODELS[name]
        batches = [int(b) for b in args.batches.split(",")] if args.batches else spec["batches"]
        for batch in batches:
            for t in threads:
                rows.append(bench_one(lib, lib_error, name, paths[name], batch, t, args.iters or spec["iters"],
                                      args.warmup, args.max_seconds, log, blocks=args.blocks, pin=not args.no_pin,
                                      min_seconds=args.min_seconds))
    elapsed = time.time() - t_start

    print()
    print_table(rows)
    print_model_checks(rows)
    ratios = [r["ratio_p50"] for r in rows if r["ratio_p50"]]
    if ratios:
        gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        print(f"\nGeometric mean of ours/ORT p50 over {len(ratios)} rows: {gm:.2f} "
              f"({'faster' if gm < 1 else 'slower'} than onnxruntime overall). Bench time {elapsed:.0f} s.")

    if args.json:
        meta = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "oneflow_version": lib_version,
                "oneflow_lib": os.path.abspath(lib_path), "oneflow_build_type": btype,
                "onnxruntime_version": ort.__version__,
                "rtol": RTOL, "args": vars(args), "machine": machine_info(), "elapsed_s": elapsed}
        with open(args.json, "w") as f:
            json.dump(_finite({"meta": meta, "rows": rows}), f, indent=1)
        log(f"wrote {args.json}")
    # Wrong numbers are a failure; an op we do not support yet is reported but is not.
    mismatched = [r for r in rows if r["check"] is not None and not r["check"]["ok"]]
    return 1 if mismatched else 0


if __name__ == "__main__":
    sys.exit(main())
