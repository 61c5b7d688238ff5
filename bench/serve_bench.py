#!/usr/bin/env python3
"""`oneflow serve` against the server a CPU user would pick today: a Python KServe v2 server over
onnxruntime (bench/peer_kserve_ort.py: FastAPI + uvicorn + onnxruntime), same models, same request
bodies, same machine, in the same run.

For each model (default: the bench MLP and ResNet-18 of make_models.py), protocol (HTTP JSON, HTTP
binary tensor extension, and gRPC where our server offers it) and concurrency (1, 8, 32), a real
load generator keeps CONCURRENCY requests in flight for --duration-s seconds against each server,
in blocks that alternate which server goes first. HTTP load: wrk, one connection per wrk thread,
a Lua script that POSTs the prebuilt body, times each request in its request()/response() hooks
and hands the latency histogram to done() (wrk's own histogram is corrected for coordinated
omission, see WRK_LUA); gRPC load: tritonclient.grpc.aio in a subprocess. Before timing, each
server's answer to the exact request body is checked against onnxruntime in this process, and
both servers get one request of every batch size our dynamic batcher can form (untimed).

Prints one table (throughput in requests/s and inferences/s, p50/p99 latency for ours and the
peer, ratios ours/peer), the CPU and ISA, thread counts, then (a) the MLP's throughput through our
server with dynamic batching against the engine in-process (`oneflow bench`) at the server's mean
batch size and (b) each idle server's RSS against the model's weight bytes.

    python3 bench/serve_bench.py [--quick] [--duration-s 10] [--models mlp,resnet18]
                                 [--protocols json,binary,grpc] [--concurrency 1,8,32] [--json FILE]
"""
import argparse
import asyncio
import collections
import datetime
import json
import math
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import make_models  # noqa: E402
from run_bench import build_type  # noqa: E402  (the build dir's CMAKE_BUILD_TYPE)

PEER_SCRIPT = os.path.join(HERE, "peer_kserve_ort.py")
RTOL = 1e-4  # as run_bench.py: max abs err <= RTOL * max(1, max|onnxruntime output|)
PROTOCOL_NAMES = {"json": "http-json", "binary": "http-bin", "grpc": "grpc"}
# Our config.pbtxt max_batch_size per model (--max-batch-size overrides): ResNet-18 batches beyond 8
# buy no throughput on a few cores, and every batch size the batcher forms is one more shape to warm.
DEFAULT_MAX_BATCH = {"mlp": 64, "resnet18": 8}

WRK_LUA = r"""
-- serve_bench.py: POST one prebuilt KServe v2 body from every connection; time each request here.
-- wrk's own latency histogram is not used: before done() sees it, wrk "corrects" it for coordinated
-- omission (stats_correct: synthetic samples below every sample over twice the mean), which is the
-- latency of an open-loop client, not of the requests this closed loop sent (at concurrency 1 it
-- put the p50 above 1 / throughput). So each wrk thread runs ONE connection (-t C -c C), request()
-- and response() strictly alternate on it, and a monotonic clock (LuaJIT FFI) times the pair.
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } sb_timespec;
int clock_gettime(int clk_id, sb_timespec *tp);
]]
local ts = ffi.new("sb_timespec")
local function now_us()
  ffi.C.clock_gettime(1, ts)  -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) * 1000000 + math.floor(tonumber(ts.tv_nsec) / 1000)
end

local threads = {}
function setup(thread) table.insert(threads, thread) end

local req, t0
hist = {}  -- latency in us -> count (read by done() through thread:get)
function init(args)
  local f = assert(io.open(os.getenv("SB_BODY"), "rb"))
  local body = f:read("*a")
  f:close()
  local headers = {["Content-Type"] = os.getenv("SB_CTYPE")}
  local hlen = os.getenv("SB_HLEN")
  if hlen ~= nil and hlen ~= "" then headers["Inference-Header-Content-Length"] = hlen end
  req = wrk.format("POST", nil, headers, body)
end
function request()
  t0 = now_us()
  return req
end
function response(status, headers, body)
  local us = now_us() - t0
  hist[us] = (hist[us] or 0) + 1
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("SB_SUMMARY %d %d %d %d %d %d %d %d\n", summary.duration, summary.requests,
                         summary.bytes, e.connect, e.read, e.write, e.status, e.timeout))
  local parts = {}
  for _, thread in ipairs(threads) do
    for us, n in pairs(thread:get("hist")) do parts[#parts + 1] = us .. ":" .. n end
  end
  io.write("SB_HIST " .. table.concat(parts, " ") .. "\n")
end
"""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---- machine ----------------------------------------------------------------------------------------

def cpu_info():
    model, flags, cores = platform.processor(), set(), set()
    phys = core = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, val = line.partition(":")
                key, val = key.strip(), val.strip()
                if key == "model name" and model in ("", platform.processor()):
                    model = val
                elif key == "flags" and not flags:
                    flags = set(val.split())
                elif key == "physical id":
                    phys = val
                elif key == "core id":
                    core = val
                elif not key and core is not None:
                    cores.add((phys, core))
                    core = None
        if core is not None:
            cores.add((phys, core))
    except OSError:
        pass
    isa = [f for f in ("avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "avx2", "fma") if f in flags]
    return {"cpu": model, "logical_cpus": os.cpu_count(), "physical_cores": len(cores) or None,
            "isa": isa, "avx512f": "avx512f" in flags, "avx2": "avx2" in flags,
            "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None}


def plan_cpus(no_pin, load_cpus):
    """(server CPUs, load-generator CPUs, note). None CPUs: not pinned. The servers (which run one at
    a time) share one set; the load generator gets the rest, so neither steals the other's cores."""
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if no_pin:
        return None, None, "not pinned (--no-pin)"
    if len(allowed) < 4 or not shutil.which("taskset"):
        why = f"only {len(allowed)} CPUs" if len(allowed) < 4 else "no taskset"
        return None, None, (f"NOT pinned ({why}: the servers and the load generator share the cores, so the "
                            f"load generator's CPU time is taken from the server under test)")
    n = load_cpus or max(1, len(allowed) // 4)
    n = min(n, len(allowed) - 1)
    load, server = allowed[:n], allowed[n:]
    return server, load, f"servers pinned to CPUs {cpulist(server)}, load generator to {cpulist(load)} (taskset)"


def cpulist(cpus):
    return ",".join(str(c) for c in cpus)


def taskset(cpus):
    return ["taskset", "-c", cpulist(cpus)] if cpus else []


def tool_version(argv):
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=20)
        return (out.stdout + out.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def dist_version(name):
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def wait_for_binary(path, seconds=180):
    """build/oneflow may be being rebuilt under us: wait for it to be there and executable."""
    deadline = time.time() + seconds
    while not (os.path.isfile(path) and os.access(path, os.X_OK)):
        if time.time() > deadline:
            raise SystemExit(f"error: {path} is missing (build it: ninja -C build oneflow)")
        log(f"waiting for {path} (missing; being rebuilt?)")
        time.sleep(5)
    time.sleep(0.5)


def weight_bytes(path):
    """Bytes of the model's initializers (its weights)."""
    import onnx
    from onnx import helper
    m = onnx.load(path, load_external_data=False)
    total = 0
    for t in m.graph.initializer:
        total += int(np.prod(t.dims, dtype=np.int64)) * np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize
    return total


# ---- servers ------------------------------------------------------------------------------------

class ServerProc:
    """A server subprocess: its stderr is collected by a thread and searched for the ports it logs."""

    PORT_RE = {"http": re.compile(r"HTTP on [^\s;]*:(\d+)"), "grpc": re.compile(r"gRPC on [^\s;]*:(\d+)"),
               "metrics": re.compile(r"metrics on [^\s;]*:(\d+)")}

    def __init__(self, label, argv, cpus=None):
        self.label, self.argv = label, taskset(cpus) + argv
        self.lines, self.ports, self.proc = [], {}, None

    def start(self):
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()
        return self

    def _read(self):
        for line in self.proc.stderr:
            line = line.rstrip("\n")
            self.lines.append(line)
            for key, rx in self.PORT_RE.items():
                m = rx.search(line)
                if m and key not in self.ports:
                    self.ports[key] = int(m.group(1))

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stderr_tail(self, n=15):
        return "\n".join("    " + line for line in self.lines[-n:])

    def wait_ready(self, timeout=180):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if not self.alive():
                raise RuntimeError(f"{self.label} exited with status {self.proc.returncode}:\n{self.stderr_tail()}")
            if "http" in self.ports:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{self.ports['http']}/v2/health/ready",
                                                timeout=5) as r:
                        if r.status == 200:
                            return
                except (urllib.error.URLError, OSError):
                    pass
            time.sleep(0.1)
        raise RuntimeError(f"{self.label} not ready after {timeout} s:\n{self.stderr_tail()}")

    @property
    def pid(self):
        return self.proc.pid

    def rss_bytes(self):
        try:
            with open(f"/proc/{self.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return None

    def os_threads(self):
        try:
            return len(os.listdir(f"/proc/{self.pid}/task"))
        except OSError:
            return None

    def stop(self):
        if not self.alive():
            return
        os.killpg(self.proc.pid, signal.SIGTERM)  # its own session: the server and nothing else
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def metrics_counts(port, model):
    """(inferences, executions) of `model` from our Prometheus endpoint, or None."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except (urllib.error.URLError, OSError):
        return None
    vals = {}
    for name in ("nv_inference_count", "nv_inference_exec_count"):
        m = re.search(rf'^{name}{{model="{re.escape(model)}"[^}}]*}} (\d+)', text, re.M)
        vals[name] = int(m.group(1)) if m else 0
    return vals["nv_inference_count"], vals["nv_inference_exec_count"]


def max_batch_size(args, name):
    return args.max_batch_size or DEFAULT_MAX_BATCH.get(name, 32)


def write_repository(root, name, onnx_path, args):
    """root/<name>/1/model.onnx (a symlink) and root/<name>/config.pbtxt (ours reads it; the peer not)."""
    vdir = os.path.join(root, name, "1")
    os.makedirs(vdir, exist_ok=True)
    os.symlink(os.path.abspath(onnx_path), os.path.join(vdir, "model.onnx"))
    config = f"max_batch_size: {max_batch_size(args, name)}\n"
    if args.queue_delay_us >= 0:
        config += f"dynamic_batching {{ max_queue_delay_microseconds: {args.queue_delay_us} }}\n"
    config += f"instance_group [{{ count: {args.instances} kind: KIND_CPU }}]\n"
    with open(os.path.join(root, name, "config.pbtxt"), "w") as f:
        f.write(config)
    return " ".join(config.split())


# ---- requests and checks -------------------------------------------------------------------------

def make_bodies(model_name, batch, workdir):
    """The request bodies wrk sends: {protocol: (path, content type, header length or None)}."""
    import tritonclient.http as th
    feeds = make_models.make_inputs(model_name, batch)
    out = {}
    for proto, binary in (("json", False), ("binary", True)):
        inputs = []
        for name, arr in feeds.items():
            i = th.InferInput(name, list(arr.shape), "FP32")
            i.set_data_from_numpy(arr, binary_data=binary)
            inputs.append(i)
        body, hlen = th.InferenceServerClient.generate_request_body(inputs)
        # tritonclient asks for binary outputs by default; the JSON rows are JSON both ways.
        header = json.loads(body[:hlen] if hlen else body)
        header["parameters"] = {"binary_data_output": binary}
        hbytes = json.dumps(header, separators=(",", ":")).encode()
        body, hlen = (hbytes + body[hlen:], len(hbytes)) if binary else (hbytes, None)
        path = os.path.join(workdir, f"{model_name}.{proto}.body")
        with open(path, "wb") as f:
            f.write(body)
        out[proto] = (path, "application/octet-stream" if binary else "application/json", hlen if binary else None)
    return feeds, out


def reference_outputs(path, feeds):
    import onnxruntime as ort
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return {o.name: r for o, r in zip(sess.get_outputs(), sess.run(None, feeds))}


def compare(outs, ref):
    """(ok, worst abs err, detail) of {name: array} against the onnxruntime reference."""
    worst, ok, detail = 0.0, True, ""
    for name, r in ref.items():
        a = outs.get(name)
        if a is None:
            return False, math.inf, f"output '{name}' missing"
        if a.shape != r.shape or a.dtype != r.dtype:
            return False, math.inf, f"output '{name}': {a.dtype}{list(a.shape)}, expected {r.dtype}{list(r.shape)}"
        err = float(np.max(np.abs(a.astype(np.float64) - r.astype(np.float64)))) if a.size else 0.0
        tol = RTOL * max(1.0, float(np.max(np.abs(r))))
        if not err <= tol and ok:
            ok, detail = False, f"output '{name}': max abs err {err:.3g} > tol {tol:.3g}"
        worst = max(worst, err)
    return ok, worst, detail


def read_body(body_spec):
    """The request body wrk sends, and its headers."""
    path, ctype, hlen = body_spec
    with open(path, "rb") as f:
        body = f.read()
    headers = {"Content-Type": ctype}
    if hlen is not None:
        headers["Inference-Header-Content-Length"] = str(hlen)
    return body, headers


def check_http(port, model, body_spec, ref):
    """Sends the exact body wrk will send; decodes the answer with tritonclient; compares."""
    import tritonclient.http as th
    body, headers = read_body(body_spec)
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v2/models/{model}/infer", data=body, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            data, rh = r.read(), r.headers.get("Inference-Header-Content-Length")
    except urllib.error.HTTPError as exc:
        return False, math.inf, f"HTTP {exc.code}: {exc.read()[:300].decode(errors='replace')}"
    except (urllib.error.URLError, OSError) as exc:
        return False, math.inf, f"{type(exc).__name__}: {exc}"
    try:
        res = th.InferResult.from_response_body(data, header_length=int(rh) if rh else None)
        outs = {o["name"]: res.as_numpy(o["name"]) for o in res.get_response()["outputs"]}
    except Exception as exc:  # noqa: BLE001 - a malformed answer is what we report
        return False, math.inf, f"undecodable answer ({type(exc).__name__}: {exc}): {data[:200]!r}"
    return compare(outs, ref)


def time_http(port, model, body_spec, runs=2):
    """Seconds of the fastest of `runs` single requests of the body (None if one fails): sizes the
    blocks so that even concurrency 1 completes a few tens of requests in each."""
    body, headers = read_body(body_spec)
    best = None
    for _ in range(runs):
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v2/models/{model}/infer", data=body, headers=headers)
        t0 = time.perf_counter()
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                r.read()
        except (urllib.error.URLError, OSError):
            return None
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return best


def check_grpc(port, model, feeds, ref):
    import tritonclient.grpc as tg
    try:
        client = tg.InferenceServerClient(f"127.0.0.1:{port}")
        inputs = []
        for name, arr in feeds.items():
            i = tg.InferInput(name, list(arr.shape), "FP32")
            i.set_data_from_numpy(arr)
            inputs.append(i)
        res = client.infer(model, inputs, client_timeout=60)
        outs = {o.name: res.as_numpy(o.name) for o in res.get_response().outputs}
        client.close()
    except Exception as exc:  # noqa: BLE001
        return False, math.inf, f"{type(exc).__name__}: {one_line(str(exc))}"
    return compare(outs, ref)


def warm_batch_sizes(port, model, feeds, sizes):
    """One binary HTTP request of each batch size, in turn: each shape our batcher will form runs once
    before timing (what Triton's model_warmup is for). Returns (seconds, error or None)."""
    import tritonclient.http as th
    t0 = time.perf_counter()
    for b in sizes:
        inputs = []
        for name, arr in feeds.items():
            x = np.ascontiguousarray(np.resize(arr, (b,) + arr.shape[1:]))
            i = th.InferInput(name, list(x.shape), "FP32")
            i.set_data_from_numpy(x, binary_data=True)
            inputs.append(i)
        body, hlen = th.InferenceServerClient.generate_request_body(inputs)
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v2/models/{model}/infer", data=body,
                                     headers={"Content-Type": "application/octet-stream",
                                              "Inference-Header-Content-Length": str(hlen)})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                r.read()
        except urllib.error.HTTPError as exc:
            msg = one_line(exc.read()[:300].decode(errors="replace"))
            return time.perf_counter() - t0, f"batch {b}: HTTP {exc.code}: {msg}"
        except (urllib.error.URLError, OSError) as exc:
            return time.perf_counter() - t0, f"batch {b}: {type(exc).__name__}: {exc}"
    return time.perf_counter() - t0, None


# ---- load generators -------------------------------------------------------------------------------

def run_wrk(port, model, body_spec, conc, seconds, cpus, lua_path):
    path, ctype, hlen = body_spec
    env = dict(os.environ, SB_BODY=path, SB_CTYPE=ctype, SB_HLEN="" if hlen is None else str(hlen))
    argv = taskset(cpus) + ["wrk", f"-t{conc}", f"-c{conc}", f"-d{seconds}s", "--timeout",
                            "10s", "-s", lua_path, f"http://127.0.0.1:{port}/v2/models/{model}/infer"]
    try:
        p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=seconds + 60)
    except subprocess.TimeoutExpired:
        return {"requests": 0, "duration_s": seconds, "errors": {"hang": 1}, "hist": {}, "failure": "wrk hung"}
    summary = hist = None
    for line in p.stdout.splitlines():
        if line.startswith("SB_SUMMARY "):
            summary = [int(x) for x in line.split()[1:]]
        elif line.startswith("SB_HIST"):
            hist = collections.Counter()
            for item in line.split()[1:]:
                us, n = item.split(":")
                hist[int(us)] += int(n)
    if summary is None or hist is None:
        return {"requests": 0, "duration_s": seconds, "errors": {"wrk": 1}, "hist": {},
                "failure": f"wrk failed (status {p.returncode}): {one_line(p.stderr or p.stdout)}"}
    dur_us, reqs, _bytes, e_conn, e_read, e_write, e_status, e_timeout = summary
    recorded = sum(hist.values())
    if recorded != reqs:  # every completed response was timed in response()
        log(f"warning: wrk timed {recorded} responses of {reqs}")
    errors = {k: v for k, v in (("connect", e_conn), ("read", e_read), ("write", e_write), ("status", e_status),
                                ("timeout", e_timeout)) if v}
    return {"requests": reqs, "duration_s": dur_us / 1e6, "errors": errors, "hist": hist}


def run_grpc_load(port, model, feeds_path, conc, seconds, cpus):
    argv = taskset(cpus) + [sys.executable, os.path.abspath(__file__), "--grpc-load-worker",
                            f"127.0.0.1:{port}", model, feeds_path, str(conc), str(seconds)]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 90)
    except subprocess.TimeoutExpired:
        return {"requests": 0, "duration_s": seconds, "errors": {"hang": 1}, "hist": {},
                "failure": "gRPC load generator hung"}
    try:
        r = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"requests": 0, "duration_s": seconds, "errors": {"loadgen": 1}, "hist": {},
                "failure": f"gRPC load generator failed (status {p.returncode}): {one_line(p.stderr)}"}
    r["hist"] = collections.Counter({int(k): v for k, v in r["hist"]})
    return r


def grpc_load_worker(url, model, feeds_path, conc, seconds):
    """A closed-loop gRPC load: `conc` coroutines, each sending the next request when its last one is
    answered, for `seconds`. Prints one JSON line (requests, duration, errors, latency histogram in us)."""
    from tritonclient.grpc.aio import InferenceServerClient, InferInput
    feeds = dict(np.load(feeds_path))

    async def go():
        client = InferenceServerClient(url)
        inputs = []
        for name, arr in feeds.items():
            i = InferInput(name, list(arr.shape), "FP32")
            i.set_data_from_numpy(arr)
            inputs.append(i)
        await client.infer(model, inputs)  # connect before the clock starts
        hist, errors, first_error = collections.Counter(), collections.Counter(), []
        deadline = time.perf_counter() + seconds

        async def worker():
            while time.perf_counter() < deadline:
                t0 = time.perf_counter_ns()
                try:
                    await client.infer(model, inputs, client_timeout=10)
                except Exception as exc:  # noqa: BLE001
                    errors["status"] += 1
                    if not first_error:
                        first_error.append(one_line(str(exc)))
                    continue
                hist[(time.perf_counter_ns() - t0) // 1000] += 1

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(conc)))
        duration = time.perf_counter() - t0
        await client.close()
        return {"requests": sum(hist.values()) + sum(errors.values()), "duration_s": duration,
                "errors": dict(errors), "hist": sorted(hist.items()),
                **({"failure": first_error[0]} if first_error else {})}

    print(json.dumps(asyncio.run(go())))
    return 0


# ---- statistics and the table ---------------------------------------------------------------------

def percentile(hist, q):
    total = sum(hist.values())
    if total == 0:
        return None
    rank = max(1, math.ceil(q / 100 * total))
    seen = 0
    for us in sorted(hist):
        seen += hist[us]
        if seen >= rank:
            return us / 1000.0
    return None


def summarize(blocks, batch):
    hist = collections.Counter()
    reqs = dur = 0
    errors = collections.Counter()
    failures = []
    for b in blocks:
        hist.update(b["hist"])
        reqs += b["requests"]
        dur += b["duration_s"]
        errors.update(b["errors"])
        if b.get("failure"):
            failures.append(b["failure"])
    ok = reqs - errors.get("status", 0)  # wrk counts answered requests (status errors too), not timeouts
    rps = ok / dur if dur > 0 else 0.0
    return {"req_s": rps, "inf_s": rps * batch, "p50_ms": percentile(hist, 50), "p90_ms": percentile(hist, 90),
            "p99_ms": percentile(hist, 99), "requests": reqs, "seconds": dur, "errors": dict(errors),
            "failures": failures}


def one_line(msg, limit=200):
    msg = " ".join(str(msg).split())
    return msg if len(msg) <= limit else msg[:limit - 3] + "..."


def fmt(x, width, digits=None):
    if x is None:
        return f"{'-':>{width}}"
    if digits is None:
        digits = 0 if x >= 100 else 1 if x >= 10 else 2 if x >= 1 else 3
    return f"{x:>{width}.{digits}f}"


def print_table(rows, out=sys.stdout):
    head = (f"{'model':<9} {'protocol':<9} {'conc':>4} | {'ours req/s':>10} {'inf/s':>8} {'p50 ms':>7} "
            f"{'p99 ms':>7} {'batch':>5} | {'peer req/s':>10} {'inf/s':>8} {'p50 ms':>7} {'p99 ms':>7} | "
            f"{'thr o/p':>7} {'p99 o/p':>7}  notes")
    print(head, file=out)
    print("-" * len(head), file=out)
    for r in rows:
        o, p = r["ours"], r["peer"]
        notes = list(r.get("notes", []))
        for side, s in (("ours", o), ("peer", p)):
            if s and s["errors"]:
                notes.append(f"{side} errors " + ",".join(f"{k}={v}" for k, v in s["errors"].items()))
            if s and s["failures"]:
                notes.append(f"{side}: {one_line(s['failures'][0], 120)}")

        def side(s, with_batch):
            if s is None:
                return f"{'-':>10} {'-':>8} {'-':>7} {'-':>7}" + (f" {'-':>5}" if with_batch else "")
            cells = f"{fmt(s['req_s'], 10)} {fmt(s['inf_s'], 8)} {fmt(s['p50_ms'], 7)} {fmt(s['p99_ms'], 7)}"
            if with_batch:
                cells += f" {fmt(s.get('mean_batch'), 5, 1)}"
            return cells
        print(f"{r['model']:<9} {PROTOCOL_NAMES[r['protocol']]:<9} {r['concurrency']:>4} | {side(o, True)} | "
              f"{side(p, False)} | {fmt(r.get('thr_ratio'), 7, 2)} {fmt(r.get('p99_ratio'), 7, 2)}  "
              f"{'; '.join(notes)}", file=out)


def geomean(xs):
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def mb(n):
    return f"{n / 2**20:.1f} MiB" if n is not None else "-"


def _finite(obj):
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


# ---- the run -----------------------------------------------------------------------------------

def grpc_offered(oneflow):
    """Whether this build of `oneflow serve` takes --grpc-port (its help text names it)."""
    try:
        p = subprocess.run([oneflow, "help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return "--grpc-port" in (p.stdout + p.stderr)


def start_ours(args, repo, cpus, threads, want_grpc):
    base = [args.oneflow, "serve", "--model-repository", repo, "--http-port", "0", "--metrics-port", "0",
            "--threads", str(threads)]
    if args.http_threads:
        base += ["--http-threads", str(args.http_threads)]
    tries = [base + ["--grpc-port", "0" if want_grpc else "-1"], base] if args.grpc_flag else [base]
    last = None
    for argv in tries:
        wait_for_binary(args.oneflow)
        s = ServerProc("ours (oneflow serve)", argv, cpus).start()
        try:
            s.wait_ready()
            return s
        except RuntimeError as exc:
            last = exc
            s.stop()
            if s.proc.returncode == 2 and argv is not tries[-1]:  # usage error: an older binary without --grpc-port
                log("note: oneflow serve refused --grpc-port; starting it without gRPC")
                continue
            break
    raise last


def start_peer(args, repo, cpus, want_grpc):
    argv = [sys.executable, PEER_SCRIPT, "--model-repository", repo, "--http-port", "0",
            "--grpc-port", "0" if want_grpc else "-1", "--workers", str(args.peer_workers)]
    if args.peer_intra_op_threads:
        argv += ["--intra-op-threads", str(args.peer_intra_op_threads)]
    if args.peer_run_in_loop:
        argv += ["--run-in-loop"]
    s = ServerProc("peer (FastAPI + uvicorn + onnxruntime)", argv, cpus).start()
    s.wait_ready()
    return s


def bench_model(args, name, plan, lua_path, workdir, results, order_state):
    server_cpus, load_cpus = plan
    onnx_path = make_models.model_path(name, args.models_dir)
    repo = os.path.join(workdir, f"repo-{name}")
    config = write_repository(repo, name, onnx_path, args)
    feeds, bodies = make_bodies(name, args.request_batch, workdir)
    feeds_path = os.path.join(workdir, f"{name}.feeds.npz")
    np.savez(feeds_path, **feeds)
    ref = reference_outputs(onnx_path, feeds)
    info = {"model": name, "onnx": onnx_path, "weight_bytes": weight_bytes(onnx_path), "ours_config": config}
    results["models"][name] = info

    want_grpc = "grpc" in args.protocol_list
    threads = args.threads or (len(server_cpus) if server_cpus else os.cpu_count())
    log(f"[{name}] starting both servers ({config})")
    ours = start_ours(args, repo, server_cpus, threads, want_grpc)
    try:
        peer = start_peer(args, repo, server_cpus, want_grpc)
    except Exception:
        ours.stop()
        raise
    try:
        info["ours_threads_flag"] = threads
        info["ours_log"] = [line for line in ours.lines if "ready" in line or "serving" in line]
        info["peer_log"] = [line for line in peer.lines if line.startswith("peer:")]
        time.sleep(1.0)  # let start-up work (and onnxruntime's spinning threads) settle
        info["ours_rss_idle_start"], info["peer_rss_idle_start"] = ours.rss_bytes(), peer.rss_bytes()

        protocols = []
        for proto in args.protocol_list:
            if proto != "grpc":
                protocols.append(proto)
            elif not args.grpc_flag or "grpc" not in ours.ports:
                results["notes"].append(
                    "gRPC skipped: " + ("this build of `oneflow serve` takes no --grpc-port" if not args.grpc_flag
                                        else "our server reported no gRPC port"))
            elif "grpc" not in peer.ports:
                results["notes"].append("gRPC skipped: the peer reported no gRPC port")
            else:
                protocols.append(proto)

        checks = {}
        for proto in protocols:
            for label, srv in (("ours", ours), ("peer", peer)):
                if proto == "grpc":
                    checks[(proto, label)] = check_grpc(srv.ports["grpc"], name, feeds, ref)
                else:
                    checks[(proto, label)] = check_http(srv.ports["http"], name, bodies[proto], ref)
                ok, err, detail = checks[(proto, label)]
                log(f"[{name}] {PROTOCOL_NAMES[proto]} {label}: "
                    + (f"output ok (max abs err {err:.1e})" if ok else f"OUTPUT CHECK FAILED: {detail}"))
        info["checks"] = {f"{p}/{lbl}": {"ok": c[0], "max_abs_err": c[1], "detail": c[2]}
                          for (p, lbl), c in checks.items()}

        if not args.no_shape_warmup:
            top = min(max_batch_size(args, name), max(args.concurrency_list) * args.request_batch)
            sizes = list(range(1, top + 1))
            info["shape_warmup_sizes"] = top
            for label, srv in (("ours", ours), ("peer", peer)):
                secs, err = warm_batch_sizes(srv.ports["http"], name, feeds, sizes)
                info[f"{label}_shape_warmup_s"] = secs
                log(f"[{name}] {label}: one request of each batch 1..{top}: {secs:.1f} s"
                    + (f" FAILED {err}" if err else ""))
                if err:
                    results["server_failures"].append(f"{name}: {label} failed the batch-size warm-up: {err}")
            info["ours_rss_after_warmup"], info["peer_rss_after_warmup"] = ours.rss_bytes(), peer.rss_bytes()

        def load(srv, proto, conc, seconds):
            if proto == "grpc":
                return run_grpc_load(srv.ports["grpc"], name, feeds_path, conc, seconds, load_cpus)
            return run_wrk(srv.ports["http"], name, bodies[proto], conc, seconds, load_cpus, lua_path)

        block_s = max(1, int(round(args.duration_s / args.blocks)))
        single = {}  # protocol -> seconds of one request on the slower server, after the warm-up
        for proto in protocols:
            spec = bodies["binary" if proto == "grpc" else proto]
            times = [time_http(srv.ports["http"], name, spec) for srv in (ours, peer)]
            single[proto] = max([t for t in times if t] or [0.0])
        for proto in protocols:
            # At least ~20 requests per block at concurrency 1 (at most 5 s): --quick's 1 s blocks
            # would otherwise see a handful of ResNet-18 JSON requests, or none.
            proto_block_s = max(block_s, min(5, math.ceil(20 * single[proto])))
            if proto_block_s > block_s:
                log(f"[{name}] {PROTOCOL_NAMES[proto]}: {proto_block_s} s blocks (one request takes "
                    f"{1000 * single[proto]:.0f} ms)")
            pair = [("ours", ours), ("peer", peer)]
            if args.warmup_s > 0:  # each server's caches, pools and allocators warm at the top concurrency
                for label, srv in pair:
                    load(srv, proto, max(args.concurrency_list), args.warmup_s)
            for conc in args.concurrency_list:
                blocks = {"ours": [], "peer": []}
                batches = [0, 0]
                for b in range(args.blocks):
                    order = pair if order_state[0] % 2 == 0 else pair[::-1]
                    order_state[0] += 1
                    for label, srv in order:
                        if not srv.alive():
                            blocks[label].append({"requests": 0, "duration_s": 0, "errors": {"died": 1}, "hist": {},
                                                  "failure": f"server exited ({srv.proc.returncode}):\n"
                                                             f"{srv.stderr_tail()}"})
                            continue
                        time.sleep(args.rest_s)  # the other server's idle threads stop spinning
                        before = metrics_counts(srv.ports["metrics"], name) if label == "ours" and \
                            "metrics" in srv.ports else None
                        blocks[label].append(load(srv, proto, conc, proto_block_s))
                        after = metrics_counts(srv.ports["metrics"], name) if before else None
                        if before and after:
                            batches[0] += after[0] - before[0]
                            batches[1] += after[1] - before[1]
                row = {"model": name, "protocol": proto, "concurrency": conc, "notes": []}
                for label in ("ours", "peer"):
                    row[label] = summarize(blocks[label], args.request_batch)
                    ok, _err, detail = checks[(proto, label)]
                    if not ok:
                        row["notes"].append(f"{label} WRONG OUTPUT: {detail}")
                    if row[label]["req_s"] == 0:
                        row["notes"].append(f"{label}: no request answered in {row[label]['seconds']:.0f} s")
                if batches[1]:
                    row["ours"]["mean_batch"] = batches[0] / batches[1]
                o, p = row["ours"], row["peer"]
                row["thr_ratio"] = o["inf_s"] / p["inf_s"] if p["inf_s"] else None
                row["p99_ratio"] = o["p99_ms"] / p["p99_ms"] if o["p99_ms"] and p["p99_ms"] else None
                log(f"[{name}] {PROTOCOL_NAMES[proto]:<9} c={conc:<3} ours {o['req_s']:8.1f} req/s p99 "
                    f"{o['p99_ms'] or 0:7.2f} ms | peer {p['req_s']:8.1f} req/s p99 {p['p99_ms'] or 0:7.2f} ms")
                results["rows"].append(row)
        time.sleep(1.0)
        info["ours_rss_idle_after"], info["peer_rss_idle_after"] = ours.rss_bytes(), peer.rss_bytes()
        info["ours_os_threads"], info["peer_os_threads"] = ours.os_threads(), peer.os_threads()
        for label, srv in (("ours", ours), ("peer", peer)):
            if not srv.alive():
                results["server_failures"].append(f"{name}: {label} exited with status {srv.proc.returncode}:\n"
                                                  f"{srv.stderr_tail()}")
    finally:
        ours.stop()
        peer.stop()
        if ours.proc.returncode not in (0, None, -signal.SIGTERM):
            results["server_failures"].append(f"{name}: ours stopped with status {ours.proc.returncode}:\n"
                                              f"{ours.stderr_tail()}")


def in_process(args, model, batch, threads, cpus, seconds):
    """The engine alone (`oneflow bench`), at `batch`: inferences/s from its p50 and mean."""
    path = make_models.model_path(model, args.models_dir)
    dims = "x".join(str(d) for d in (batch,) + make_models.make_inputs(model, 1)["input"].shape[1:])
    wait_for_binary(args.oneflow)
    probe = [args.oneflow, "bench", path, "--shape", f"input={dims}", "--threads", str(threads)]
    try:
        p = subprocess.run(taskset(cpus) + probe + ["--warmup", "3", "--iters", "10"], capture_output=True,
                           text=True, timeout=300)
        first = json.loads(p.stdout.strip().splitlines()[-1])
        iters = max(20, int(seconds / max(first["mean_ms"] / 1000, 1e-6)))
        p = subprocess.run(taskset(cpus) + probe + ["--warmup", "20", "--iters", str(iters)], capture_output=True,
                           text=True, timeout=300)
        r = json.loads(p.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError, KeyError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    r["batch"] = batch
    r["inf_s_p50"] = batch / (r["p50_ms"] / 1000)
    r["inf_s_mean"] = batch / (r["mean_ms"] / 1000)
    return r


def main(argv=None):
    ap = argparse.ArgumentParser(description="oneflow serve vs a Python KServe v2 server over onnxruntime",
                                 epilog="thr o/p = ours/peer inferences/s (> 1: ours serves more); "
                                        "p99 o/p = ours/peer p99 latency (< 1: ours answers faster).")
    ap.add_argument("--models", default="mlp,resnet18",
                    help="comma-separated, from make_models.py (default %(default)s)")
    ap.add_argument("--protocols", default="json,binary,grpc",
                    help="json (HTTP JSON tensors), binary (HTTP binary tensor extension), grpc (default %(default)s)")
    ap.add_argument("--concurrency", default="1,8,32", help="requests in flight (default %(default)s)")
    ap.add_argument("--duration-s", type=float, default=10.0, help="timed seconds per server and row (default 10)")
    ap.add_argument("--blocks", type=int, default=2,
                    help="blocks per server and row, alternating which server goes first (default 2)")
    ap.add_argument("--warmup-s", type=int, default=2,
                    help="untimed load per server and protocol at the top concurrency (default 2)")
    ap.add_argument("--rest-s", type=float, default=0.2, help="pause before each block (default 0.2)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 s per server and row, 1 block, 1 s warm-up")
    ap.add_argument("--request-batch", type=int, default=1, help="batch size of each request (default 1)")
    ap.add_argument("--max-batch-size", type=int, default=0,
                    help="ours: config.pbtxt max_batch_size (default: mlp 64, resnet18 8, others 32)")
    ap.add_argument("--no-shape-warmup", action="store_true",
                    help="skip the untimed requests of every batch size 1..B sent to both servers before timing")
    ap.add_argument("--queue-delay-us", type=int, default=100,
                    help="ours: dynamic_batching max_queue_delay_microseconds; -1: no dynamic batching (default 100)")
    ap.add_argument("--instances", type=int, default=1, help="ours: instance_group count (default 1)")
    ap.add_argument("--threads", type=int, default=0,
                    help="ours: --threads (default: the servers' CPUs, i.e. every core when not pinned)")
    ap.add_argument("--http-threads", type=int, default=0, help="ours: --http-threads (default: the server's)")
    ap.add_argument("--peer-workers", type=int, default=1, help="peer: uvicorn workers (default 1)")
    ap.add_argument("--peer-intra-op-threads", type=int, default=0,
                    help="peer: onnxruntime intra-op threads (default: onnxruntime's default)")
    ap.add_argument("--peer-run-in-loop", action="store_true",
                    help="peer: call session.run on the event loop, not in Starlette's thread pool")
    ap.add_argument("--load-cpus", type=int, default=0, help="CPUs for the load generator when pinning (default n/4)")
    ap.add_argument("--no-pin", action="store_true", help="never pin with taskset")
    ap.add_argument("--oneflow", default=os.path.join(ROOT, "build", "oneflow"), help="the oneflow binary")
    ap.add_argument("--models-dir", default=make_models.DEFAULT_OUT)
    ap.add_argument("--json", metavar="FILE", help="also write every number as JSON")
    ap.add_argument("--grpc-load-worker", nargs=5, metavar=("URL", "MODEL", "NPZ", "CONC", "SECONDS"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.grpc_load_worker:
        url, model, npz, conc, seconds = args.grpc_load_worker
        return grpc_load_worker(url, model, npz, int(conc), float(seconds))
    if args.quick:
        args.duration_s, args.blocks, args.warmup_s = 1.0, 1, 1
    args.model_list = [m for m in args.models.split(",") if m]
    args.protocol_list = [p for p in args.protocols.split(",") if p]
    args.concurrency_list = [int(c) for c in args.concurrency.split(",") if c]
    for p in args.protocol_list:
        if p not in PROTOCOL_NAMES:
            ap.error(f"unknown protocol {p!r}")
    if not os.path.isabs(args.oneflow) and not os.path.exists(args.oneflow):
        args.oneflow = os.path.join(ROOT, args.oneflow)

    notes = []
    if "json" in args.protocol_list or "binary" in args.protocol_list:
        if not shutil.which("wrk"):
            raise SystemExit("error: wrk is not installed (apt-get install wrk, or scripts/setup.sh)")
    for mod in ("fastapi", "uvicorn", "tritonclient"):
        if dist_version(mod) is None:
            raise SystemExit(f"error: the Python package {mod} is missing (scripts/setup.sh)")

    wait_for_binary(args.oneflow)
    args.grpc_flag = grpc_offered(args.oneflow)
    server_cpus, load_cpus, pin_note = plan_cpus(args.no_pin, args.load_cpus)
    machine = cpu_info()
    import onnxruntime as ort
    versions = {"oneflow": tool_version([args.oneflow, "--version"]), "oneflow_build_type": build_type(args.oneflow),
                "onnxruntime": ort.__version__, "fastapi": dist_version("fastapi"), "uvicorn": dist_version("uvicorn"),
                "uvloop": dist_version("uvloop"), "httptools": dist_version("httptools"),
                "orjson": dist_version("orjson"), "tritonclient": dist_version("tritonclient"),
                "wrk": tool_version(["wrk", "--version"])}
    if versions["oneflow_build_type"] not in (None, "Release"):
        log(f"warning: {args.oneflow} comes from a '{versions['oneflow_build_type']}' build; timings are only "
            "meaningful for Release")
    make_models.ensure(args.model_list, args.models_dir, log=log)

    results = {"rows": [], "models": {}, "notes": notes, "server_failures": []}
    t_start = time.time()
    order_state = [0]
    with tempfile.TemporaryDirectory(prefix="serve-bench-") as workdir:
        lua_path = os.path.join(workdir, "post.lua")
        with open(lua_path, "w") as f:
            f.write(WRK_LUA)
        for name in args.model_list:
            try:
                bench_model(args, name, (server_cpus, load_cpus), lua_path, workdir, results, order_state)
            except RuntimeError as exc:
                results["server_failures"].append(f"{name}: {exc}")
                log(f"[{name}] FAILED: {exc}")
    # (a) the MLP through the server vs the engine in-process at the server's batch size.
    threads = args.threads or (len(server_cpus) if server_cpus else os.cpu_count())
    inproc = {}
    mlp_rows = [r for r in results["rows"] if r["model"] == "mlp" and r["ours"]["inf_s"] > 0]
    if mlp_rows:
        best = max(mlp_rows, key=lambda r: r["ours"]["inf_s"])
        batch = max(1, int(round(best["ours"].get("mean_batch") or 1))) * args.request_batch
        c1 = [r for r in mlp_rows
              if r["concurrency"] == min(args.concurrency_list) and r["protocol"] == best["protocol"]]
        log(f"[mlp] in-process: oneflow bench at batch {batch} and {args.request_batch}, {threads} threads")
        inproc["best"] = {"row": best, "bench": in_process(args, "mlp", batch, threads, server_cpus,
                                                           max(1.0, args.duration_s / 4))}
        if c1:
            inproc["c1"] = {"row": c1[0], "bench": in_process(args, "mlp", args.request_batch, threads, server_cpus,
                                                              max(1.0, args.duration_s / 4))}
    elapsed = time.time() - t_start

    # ---- report -----------------------------------------------------------------------------------
    print()
    isa = ", ".join(f"{f} {'yes' if machine[f] else 'NO'}" for f in ("avx512f", "avx2"))
    load_end = list(os.getloadavg()) if hasattr(os, "getloadavg") else []
    print(f"CPU: {machine['cpu']}, {machine['logical_cpus']} logical CPUs ({machine['physical_cores']} physical "
          f"cores); {isa}; ISA flags {' '.join(machine['isa'])}; 1-min load average "
          f"{(machine['loadavg'] or [0])[0]:.2f} at the start, {(load_end or [0])[0]:.2f} at the end")
    print(f"Pinning: {pin_note}")
    first = next(iter(results["models"].values()), {})
    ours_threads = first.get("ours_threads_flag", threads)
    print(f"ours: oneflow serve ({versions['oneflow'] or '?'}, {versions['oneflow_build_type'] or 'build type ?'}) "
          f"--threads {ours_threads}, HTTP I/O threads {args.http_threads or 'default min(4, cores)'}; "
          f"config.pbtxt: " + "; ".join(f"{n}: {i['ours_config']}" for n, i in results["models"].items()))
    peer_desc = (first.get("peer_log") or ["peer: ?"])[0]
    where_run = "on the event loop" if args.peer_run_in_loop else "in Starlette's thread pool"
    ort_threads = args.peer_intra_op_threads or f"default (= physical cores, {machine['physical_cores']})"
    peer_desc = peer_desc[len("peer: "):].split("; models")[0]
    print(f"peer: bench/peer_kserve_ort.py = {peer_desc}; onnxruntime intra-op threads {ort_threads}, "
          f"session.run {where_run}, no batching")
    wrk_version = (versions["wrk"] or "?").split(" Copyright")[0]
    print(f"load: HTTP by {wrk_version} (one connection per wrk thread, keep-alive, each request timed in the "
          f"Lua hooks; closed loop: each connection sends its next request when the last is answered), gRPC by "
          f"tritonclient.grpc.aio "
          f"{versions['tritonclient']} in one Python process; {args.duration_s:g} s per server and row in "
          f"{args.blocks} block(s) alternating which server goes first, {args.warmup_s} s warm-up per server and "
          f"protocol; requests of batch {args.request_batch}")
    for n in dict.fromkeys(results["notes"]):
        print(f"note: {n}")
    print()
    print_table(results["rows"])
    thr = geomean([r.get("thr_ratio") for r in results["rows"]])
    p99 = geomean([r.get("p99_ratio") for r in results["rows"]])
    if thr:
        print(f"\nGeometric means over {len(results['rows'])} rows: throughput ours/peer {thr:.2f} "
              f"({'more' if thr >= 1 else 'less'} than the peer), p99 ours/peer {p99:.2f}.")
    print("thr o/p > 1: ours serves more inferences/s; p99 o/p < 1: ours has the lower tail latency. "
          "batch: the mean batch our dynamic batcher executed (from /metrics).")
    if "grpc" in [r["protocol"] for r in results["rows"]]:
        print("gRPC rows: the load generator is Python (tritonclient.grpc.aio); for fast models it, not the server, "
              "may set the pace, for both servers alike.")
    if not load_cpus:
        print("Unpinned on a small machine: wrk (and the gRPC client) take CPU from whichever server is measured.")

    print("\n(a) MLP through our server (dynamic batching) vs the engine in-process (`oneflow bench`, "
          f"{threads} threads, same CPUs):")
    if not inproc:
        print("  not measured (no MLP rows)")
    for key, what in (("best", "best row"), ("c1", "lowest concurrency")):
        if key not in inproc:
            continue
        row, b = inproc[key]["row"], inproc[key]["bench"]
        if "error" in b:
            print(f"  {what}: oneflow bench failed: {b['error']}")
            continue
        pct = 100 * row["ours"]["inf_s"] / b["inf_s_p50"]
        print(f"  {what} ({PROTOCOL_NAMES[row['protocol']]}, concurrency {row['concurrency']}, mean executed batch "
              f"{row['ours'].get('mean_batch') or 0:.1f}): server {row['ours']['inf_s']:.0f} inf/s vs in-process "
              f"batch {b['batch']} {b['inf_s_p50']:.0f} inf/s (p50 {b['p50_ms']:.3f} ms; from the mean "
              f"{b['inf_s_mean']:.0f}) = {pct:.0f}%")
    print("\n(b) Idle RSS (/proc/PID/status VmRSS) vs the model's weights (initializer bytes):")
    for name, info in results["models"].items():
        w = info["weight_bytes"]
        parts = []
        for label in ("ours", "peer"):
            cells = [(info.get(f"{label}_rss_idle_start"), "at start"),
                     (info.get(f"{label}_rss_after_warmup"), "after the batch-size warm-up"),
                     (info.get(f"{label}_rss_idle_after"), "after the load")]
            cells = [f"{mb(v)} = {v / w:.1f}x {what}" for v, what in cells if v]
            if cells:
                parts.append(f"{label} " + ", ".join(cells))
        print(f"  {name:<9} weights {mb(w)}: " + "; ".join(parts))
        print(f"  {'':<9} OS threads after the load: ours {info.get('ours_os_threads')}, peer "
              f"{info.get('peer_os_threads')}")
        if info.get("shape_warmup_sizes"):
            print(f"  {'':<9} batch-size warm-up before timing (one request of each batch 1.."
                  f"{info['shape_warmup_sizes']}, binary HTTP): ours {info.get('ours_shape_warmup_s', 0):.1f} s, "
                  f"peer {info.get('peer_shape_warmup_s', 0):.1f} s")

    failures = results["server_failures"]
    bad_checks = [(n, k, c) for n, i in results["models"].items() for k, c in i.get("checks", {}).items()
                  if not c["ok"]]
    errors = [(r["model"], r["protocol"], r["concurrency"]) for r in results["rows"] if r["ours"]["errors"]]
    if failures or bad_checks or errors:
        print("\nPROBLEMS:")
        for f in failures:
            print(f"  server failure: {f}")
        for n, k, c in bad_checks:
            print(f"  {n} {k}: wrong output: {c['detail']}")
        for e in errors:
            print(f"  ours: request errors in {e}")
    print(f"\nBench time {elapsed:.0f} s.")
    if args.json:
        meta = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": machine,
                "versions": versions, "pinning": pin_note, "server_cpus": server_cpus, "load_cpus": load_cpus,
                "args": {k: v for k, v in vars(args).items() if k != "grpc_load_worker"}, "elapsed_s": elapsed}
        for r in results["rows"]:
            for side in ("ours", "peer"):
                r[side].pop("hist", None)
        with open(args.json, "w") as f:
            json.dump(_finite({"meta": meta, **results, "in_process": inproc}), f, indent=1)
        log(f"wrote {args.json}")
    ours_bad = failures or [c for c in bad_checks if c[1].endswith("/ours")] or errors
    return 1 if ours_bad else 0


if __name__ == "__main__":
    sys.exit(main())
