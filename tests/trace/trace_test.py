#!/usr/bin/env python3
"""The timeline profiler's files, parsed with Python's json module and checked as Chrome-trace JSON
(docs/profiling.md): the traceEvents object format, complete ("X") slices with non-negative times,
thread names for every track, and on each track slices that nest or are disjoint, never partially
overlapping (times are compared exactly: the file's microseconds carry nanosecond digits).

    trace_test.py CLI C_API_TEST TRAIN_MODELS_DIR WORK_DIR

1. `oneflow bench --trace` on the transformer bench model (bench/make_models.py): one session-run
   slice per warm-up and timed run, holding one node slice per executor step, each with its op,
   node name and shapes.
2. ONEFLOW_TRACE=path: the same trace written at exit without the option, and a file per rank
   under `oneflow launch` (%r); a bad path is reported on stderr and the run still succeeds;
   --trace while ONEFLOW_TRACE records is an error; an unwritable --trace path fails before the
   model is loaded.
3. The C ABI test's trace (trace_c_api_test): training phases, collectives with their bytes and
   groups, one track per in-process rank.
4. `oneflow serve` under ONEFLOW_TRACE: one request slice per HTTP request with model and protocol,
   batch slices on the model instance's thread, the front end's own slices.
"""
import decimal
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FAILURES = []
SHAPE = re.compile(r"^(none|[a-z0-9]+\[(\d+(,\d+)*)?\])$")


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what, file=sys.stderr)
    return cond


def run(cmd, env=None, timeout=600):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


# ---- The format ---------------------------------------------------------------------------------

def load_trace(path):
    """The parsed file, or None (a failure recorded) when it is no valid Chrome-trace JSON."""
    if not check(os.path.isfile(path), f"{path} was not written"):
        return None
    with open(path, encoding="utf-8") as f:
        try:
            doc = json.load(f, parse_float=decimal.Decimal)  # exact times for the nesting check
        except ValueError as e:
            check(False, f"{path} is not valid JSON: {e}")
            return None
    if not check(isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list),
                 f"{path}: not the traceEvents object format"):
        return None
    events = doc["traceEvents"]
    named_threads, used_threads = set(), set()
    for e in events:
        ok = isinstance(e, dict) and isinstance(e.get("name"), str) and e["name"] != "" and \
            e.get("ph") in ("X", "M") and isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int) and \
            isinstance(e.get("args"), dict)
        if not check(ok, f"{path}: malformed event {e}"):
            return None
        if e["ph"] == "M":
            check(e["name"] in ("process_name", "thread_name", "thread_sort_index"), f"{path}: metadata {e}")
            if e["name"] == "thread_name":
                check(isinstance(e["args"].get("name"), str), f"{path}: thread_name without a name: {e}")
                named_threads.add((e["pid"], e["tid"]))
            continue
        ok = isinstance(e.get("cat"), str) and isinstance(e.get("ts"), (int, decimal.Decimal)) and \
            isinstance(e.get("dur"), (int, decimal.Decimal))
        if not check(ok, f"{path}: slice without cat/ts/dur: {e}"):
            return None
        check(e["ts"] >= 0 and e["dur"] >= 0, f"{path}: negative time in {e}")
        used_threads.add((e["pid"], e["tid"]))
    check(used_threads <= named_threads, f"{path}: tracks without a thread_name: {used_threads - named_threads}")
    check_nesting(path, [e for e in events if e["ph"] == "X"])
    return doc


def check_nesting(path, slices):
    """On each (pid, tid), slices are nested or disjoint: a stack of open slices, by start time."""
    by_track = {}
    for e in slices:
        by_track.setdefault((e["pid"], e["tid"]), []).append(e)
    for track, evs in by_track.items():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in evs:
            end = e["ts"] + e["dur"]
            while stack and stack[-1][0] <= e["ts"]:
                stack.pop()
            if stack and end > stack[-1][0]:
                check(False, f"{path}: on track {track}, {e['name']} [{e['ts']}, {end}] partially overlaps "
                             f"{stack[-1][1]['name']} ending at {stack[-1][0]}")
                return
            stack.append((end, e))


def slices(doc, cat=None, name=None):
    return [e for e in doc["traceEvents"] if e["ph"] == "X" and (cat is None or e["cat"] == cat) and
            (name is None or e["name"] == name)]


def inside(child, parent):
    return child["tid"] == parent["tid"] and parent["ts"] <= child["ts"] and \
        child["ts"] + child["dur"] <= parent["ts"] + parent["dur"]


def thread_names(doc):
    return {e["tid"]: e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}


# ---- 1 and 2: the CLI ---------------------------------------------------------------------------

def check_bench_trace(doc, path, runs):
    nodes = slices(doc, "node")
    check(len(nodes) > 0, f"{path}: no node slices")
    for e in nodes:
        a = e["args"]
        ok = isinstance(a.get("node"), str) and isinstance(a.get("inputs"), list) and \
            isinstance(a.get("outputs"), list) and len(a["outputs"]) > 0 and \
            all(isinstance(s, str) and SHAPE.match(s) for s in a["inputs"] + a["outputs"])
        if not check(ok, f"{path}: node slice without node name or shapes: {e}"):
            break
    ops = {e["name"] for e in nodes}
    for op in ("Softmax", "LayerNormalization", "Transpose"):
        check(op in ops, f"{path}: no {op} slice (ops: {sorted(ops)})")
    check("MatMul" in ops or "FusedMatMul" in ops, f"{path}: no MatMul slice (ops: {sorted(ops)})")
    run_slices = slices(doc, "session", "run")
    check(len(run_slices) == runs, f"{path}: {len(run_slices)} session runs, expected {runs}")
    for r in run_slices:
        inner = [n for n in nodes if inside(n, r)]
        check(len(inner) == r["args"].get("steps"), f"{path}: a run of {r['args'].get('steps')} steps holds "
                                                    f"{len(inner)} node slices")
    check(len(slices(doc, "cli", "timed run")) == runs - 1, f"{path}: timed-run slices")
    check(len(slices(doc, "session", "create session")) == 1, f"{path}: no session creation slice")


def test_cli(cli, work):
    models = os.path.join(work, "models")
    model = os.path.join(models, "transformer.onnx")
    if not os.path.exists(model):
        rc, out, err = run([sys.executable, os.path.join(ROOT, "bench", "make_models.py"), "--models", "transformer",
                            "--out", models, "--no-verify"])
        if not check(rc == 0, f"make_models.py failed: {err}"):
            return
    bench = [cli, "bench", model, "--shape", "input=2x64x256", "--warmup", "1", "--iters", "2", "--threads", "2"]
    env = {k: v for k, v in os.environ.items() if k != "ONEFLOW_TRACE"}

    path = os.path.join(work, "bench.json")
    rc, out, err = run(bench + ["--trace", path], env=env)
    if check(rc == 0, f"bench --trace failed: {err}"):
        check("trace written to " + path in err, f"bench --trace does not say where the trace went: {err!r}")
        check(json.loads(out).get("trace") == path, f"bench JSON lacks the trace path: {out}")
        doc = load_trace(path)
        if doc:
            check_bench_trace(doc, path, runs=3)
            names = thread_names(doc)
            check({names[e["tid"]] for e in slices(doc, "node")} == {"main"}, f"{path}: node slices off 'main'")

    env_path = os.path.join(work, "env.json")
    rc, out, err = run(bench, env=dict(env, ONEFLOW_TRACE=env_path))
    if check(rc == 0, f"bench under ONEFLOW_TRACE failed: {err}"):
        check("trace written to " + env_path in err, f"no exit message for ONEFLOW_TRACE: {err!r}")
        doc = load_trace(env_path)
        if doc:
            check_bench_trace(doc, env_path, runs=3)

    # `oneflow launch` under ONEFLOW_TRACE with %r: a file per rank; the launcher, which traces
    # nothing, must not replace rank 0's.
    rc, out, err = run([cli, "launch", "-n", "2", "--", *bench], env=dict(env, ONEFLOW_TRACE=os.path.join(work, "launch-%r.json")))
    if check(rc == 0, f"bench under oneflow launch failed: {err}"):
        for rank in (0, 1):
            rank_path = os.path.join(work, f"launch-{rank}.json")
            doc = load_trace(rank_path)
            if doc:
                check_bench_trace(doc, rank_path, runs=3)
                names = [e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"]
                check(names and names[0].endswith(f"rank {rank}"), f"{rank_path}: process name {names}")

    rc, out, err = run(bench, env=dict(env, ONEFLOW_TRACE="/nonexistent-oneflow-dir/t.json"))
    check(rc == 0 and "ONEFLOW_TRACE=/nonexistent-oneflow-dir/t.json" in err and "no trace is recorded" in err,
          f"a bad ONEFLOW_TRACE must be reported and not fail the run: rc {rc}, {err!r}")
    rc, out, err = run(bench + ["--trace", os.path.join(work, "other.json")], env=dict(env, ONEFLOW_TRACE=env_path))
    check(rc == 1 and "already being recorded" in err and "ONEFLOW_TRACE" in err,
          f"--trace under ONEFLOW_TRACE: rc {rc}, {err!r}")
    rc, out, err = run([cli, "bench", "/nonexistent-model.onnx", "--trace", "/nonexistent-oneflow-dir/t.json"], env=env)
    check(rc == 1 and "cannot write a trace to '/nonexistent-oneflow-dir/t.json'" in err and err.count("\n") == 1,
          f"an unwritable --trace path must fail first, in one line: rc {rc}, {err!r}")
    rc, out, err = run([cli, "bench", model, "--trace="], env=env)
    check(rc == 2 and "--trace" in err, f"an empty --trace: rc {rc}, {err!r}")


# ---- 3: the C ABI -------------------------------------------------------------------------------

def test_c_api(c_api_test, train_models, work):
    path = os.path.join(work, "c_api.json")
    rc, out, err = run([c_api_test, train_models, path], env={k: v for k, v in os.environ.items() if k != "ONEFLOW_TRACE"})
    if not check(rc == 0, f"trace_c_api_test failed: {out}{err}"):
        return
    doc = load_trace(path)
    if not doc:
        return
    for phase in ("forward", "backward", "step", "train step", "forward+backward", "reduce gradients"):
        check(slices(doc, "train", phase), f"{path}: no training phase '{phase}'")
    single = [e for e in slices(doc, "train", "forward") if "step" in e["args"]]
    check(len(single) == 2 and sorted(e["args"]["step"] for e in single) == [0, 1],
          f"{path}: the training session's forward slices {single}")
    for f in single:
        check(any(inside(r, f) for r in slices(doc, "session", "run")), f"{path}: a forward without its session run")
    comm = slices(doc, "comm")
    check(comm and all(isinstance(e["args"].get("bytes"), int) and e["args"].get("world_size") == 2 and
                       e["args"].get("backend") == "in-process" for e in comm), f"{path}: collective slices {comm[:3]}")
    reduces = [e for e in comm if e["name"] == "all-reduce"]
    check(reduces and all(e["args"].get("group") == [0, 1] and e["args"]["bytes"] > 0 for e in reduces),
          f"{path}: all-reduce slices {reduces[:3]}")
    names = thread_names(doc)
    check(list(names.values()).count("rank 1") == 1, f"{path}: one track for rank 1 expected: {names}")
    check({names[e["tid"]] for e in comm} == {"main", "rank 1"}, f"{path}: collectives on {set(names[e['tid']] for e in comm)}")


# ---- 4: serving ---------------------------------------------------------------------------------

def write_repository(repo):
    import onnx
    from onnx import TensorProto, helper
    path = os.path.join(repo, "relu", "1", "model.onnx")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu0")], "relu", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


def test_serve(cli, work):
    repo = os.path.join(work, "repository")
    write_repository(repo)
    path = os.path.join(work, "serve.json")
    env = dict(os.environ, ONEFLOW_TRACE=path)
    proc = subprocess.Popen([cli, "serve", "--model-repository", repo, "--host", "127.0.0.1", "--http-port", "0",
                             "--grpc-port", "-1", "--metrics-port", "-1", "--threads", "1"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=env)
    lines, port = [], threading.Event()
    found = {}

    def read():
        for line in proc.stderr:
            lines.append(line)
            m = re.search(r"HTTP on [^\s;]+:(\d+)", line)
            if m:
                found["port"] = int(m.group(1))
                port.set()
    threading.Thread(target=read, daemon=True).start()
    try:
        if not check(port.wait(60), "oneflow serve did not start: " + "".join(lines)):
            return
        body = json.dumps({"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", "data": [-1, 2, -3, 4]}]})
        for i in range(3):
            req = urllib.request.Request(f"http://127.0.0.1:{found['port']}/v2/models/relu/infer",
                                         data=body.encode(), headers={"Content-Type": "application/json"})
            answer = json.loads(urllib.request.urlopen(req, timeout=30).read())
            check(answer["outputs"][0]["data"] == [0, 2, 0, 4], f"serve answered {answer}")
    finally:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(60)
    check(rc == 0, f"oneflow serve exited with {rc}: {''.join(lines)}")
    time.sleep(0.1)  # the reader thread has the last lines
    check(any("trace written to " + path in ln for ln in lines), f"serve wrote no trace: {''.join(lines)}")
    doc = load_trace(path)
    if not doc:
        return
    requests = slices(doc, "serve", "request relu")
    check(len(requests) == 3 and all(e["args"].get("protocol") == "http" and e["args"].get("model") == "relu" and
                                     e["args"].get("status") for e in requests), f"{path}: request slices {requests}")
    names = thread_names(doc)
    check(all(names[e["tid"]].startswith("requests relu") for e in requests), f"{path}: request tracks {names}")
    batches = slices(doc, "serve", "batch")
    check(len(batches) == 3 and all(names[e["tid"]].startswith("serve relu v1 instance") for e in batches),
          f"{path}: batch slices {batches} on {names}")
    for b in batches:
        check(any(inside(n, b) for n in slices(doc, "node", "Relu")), f"{path}: a batch without its Relu node slice")
    check(len(slices(doc, "serve", "http infer")) == 3, f"{path}: front-end slices")


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    cli, c_api_test, train_models, work = sys.argv[1:]
    os.makedirs(work, exist_ok=True)
    test_cli(cli, work)
    test_c_api(c_api_test, train_models, work)
    test_serve(cli, work)
    if FAILURES:
        print(f"trace_test: {len(FAILURES)} failure(s)", file=sys.stderr)
        return 1
    print("trace_test: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
