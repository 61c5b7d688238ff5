#!/usr/bin/env python3
"""Two "hosts" on one machine: network namespaces joined by a veth pair, each with its own
address on that private link only (10.213.0.1 and 10.213.0.2) and no shared directory between the
ranks. Each host runs `oneflow launch --nnodes 2 --node-rank R --master-addr 10.213.0.1 -n 2`, so
the job has 4 ranks, 2 per host; they meet through the TCP store rank 0 serves, and their
collectives cross hosts over TCP (ranks on one host share memory; the hosts' mount namespaces
differ, so they cannot).

Checks: every collective; distributed inference (data parallel and auto-planned) of the bench MLP
and transformer against each rank's single-device run; data- and tensor-parallel training of the
MLP against the single-device loss curve and parameters (train_worker.cc, <= 1e-5); `oneflow
serve` of a model sharded over the 4 ranks of both hosts, queried over HTTP on host A, against
onnxruntime, then drained by SIGTERM on host A (host B's ranks stop with it); killing
every rank of host B in the middle of a loop of all-reduces makes host A's ranks fail within the
timeout, naming ranks 2 and 3 and their host; a job whose host B never starts fails within the
timeout naming ranks 2 and 3 as never joined.

Needs root (CAP_NET_ADMIN) and iproute2; otherwise it skips (exit 77) saying why.
Usage: multihost_netns_test.py ONEFLOW_CLI GLOO_WORKER TRAIN_WORKER DIST_MODELS TRAIN_MODELS
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

SKIP = 77
SUBNET = "10.213.0"
MASTER = f"{SUBNET}.1"


def sh(*cmd, check=True):
    return subprocess.run(list(cmd), capture_output=True, text=True, check=check)


class TwoHosts:
    def __init__(self):
        tag = str(os.getpid())
        self.ns = [f"of-a-{tag}", f"of-b-{tag}"]
        self.veth = [f"ofa{tag}"[:15], f"ofb{tag}"[:15]]

    def __enter__(self):
        try:
            for n in self.ns:
                sh("ip", "netns", "add", n)
            sh("ip", "link", "add", self.veth[0], "type", "veth", "peer", "name", self.veth[1])
            for i, (n, v) in enumerate(zip(self.ns, self.veth)):
                sh("ip", "link", "set", v, "netns", n)
                sh("ip", "netns", "exec", n, "ip", "addr", "add", f"{SUBNET}.{i + 1}/24", "dev", v)
                sh("ip", "netns", "exec", n, "ip", "link", "set", v, "up")
                sh("ip", "netns", "exec", n, "ip", "link", "set", "lo", "up")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        for n in self.ns:
            self.kill(n)
            sh("ip", "netns", "del", n, check=False)  # takes its end of the veth pair with it

    @staticmethod
    def kill(ns, sig=signal.SIGKILL):
        r = sh("ip", "netns", "pids", ns, check=False)
        for pid in r.stdout.split():
            try:
                os.kill(int(pid), sig)
            except ProcessLookupError:
                pass


def launch_on(ns, node_rank, cli, program, env):
    cmd = ["ip", "netns", "exec", ns, cli, "launch", "--nnodes", "2", "--node-rank", str(node_rank),
           "--master-addr", MASTER, "--master-port", "29500", "--grace-s", "2", "-n", "2", "--", *program]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_job(hosts, cli, program, env, limit=600):
    """Runs `program` as the 4-rank job on both hosts; returns [(returncode, stdout, stderr)] per host."""
    procs = [launch_on(ns, r, cli, program, env) for r, ns in enumerate(hosts.ns)]
    out = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise AssertionError(f"{program}: hung past {limit}s")
        out.append((p.returncode, o, e))
    return out


def http_in(ns, port, method, path, body=None):
    """An HTTP request made from inside namespace `ns` (the server listens on its 127.0.0.1)."""
    code = ("import sys, urllib.request\n"
            f"r = urllib.request.Request('http://127.0.0.1:{port}{path}', method='{method}', data=sys.stdin.buffer.read() or None)\n"
            "try:\n"
            "    resp = urllib.request.urlopen(r, timeout=30); print(resp.status); sys.stdout.write(resp.read().decode())\n"
            "except urllib.error.HTTPError as e:\n"
            "    print(e.code); sys.stdout.write(e.read().decode())\n"
            "except OSError as e:\n"
            "    print(0); sys.stdout.write(str(e))\n")
    r = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", code], input=body or b"", capture_output=True,
                       timeout=60)
    status, _, text = r.stdout.decode().partition("\n")
    return int(status or 0), text


def serve_across_hosts(hosts, cli, models, env, work):
    """A model sharded over both hosts' ranks behind `oneflow serve`; returns a summary line."""
    import numpy as np
    import onnxruntime as ort
    repo = os.path.join(work, "repository")
    os.makedirs(os.path.join(repo, "mlp_sharded", "1"), exist_ok=True)
    shutil.copy(os.path.join(models, "mlp.onnx"), os.path.join(repo, "mlp_sharded", "1", "model.onnx"))
    with open(os.path.join(repo, "mlp_sharded", "config.pbtxt"), "w") as f:
        f.write('max_batch_size: 16\ndynamic_batching { }\n'
                'parameters { key: "placement" value { string_value: "cpu:0-3" } }\n'
                'parameters { key: "plan_mode" value { string_value: "data" } }\n')
    port = 18000
    serve = [cli, "serve", "--model-repository", repo, "--host", "127.0.0.1", "--http-port", str(port),
             "--grpc-port", "-1", "--metrics-port", "-1", "--threads", "1"]
    procs = [launch_on(ns, r, cli, serve, env) for r, ns in enumerate(hosts.ns)]
    try:
        deadline = time.time() + 120
        while http_in(hosts.ns[0], port, "GET", "/v2/health/ready")[0] != 200:
            assert time.time() < deadline and all(p.poll() is None for p in procs), "the sharded server never got ready"
            time.sleep(0.5)
        x = np.random.default_rng(5).standard_normal((6, 784)).astype(np.float32)
        body = json.dumps({"inputs": [{"name": "input", "shape": list(x.shape), "datatype": "FP32",
                                       "data": x.ravel().tolist()}]}).encode()
        status, text = http_in(hosts.ns[0], port, "POST", "/v2/models/mlp_sharded/infer", body)
        assert status == 200, text
        out = json.loads(text)["outputs"][0]
        got = np.array(out["data"], np.float32).reshape(out["shape"])
        want = ort.InferenceSession(os.path.join(models, "mlp.onnx"), providers=["CPUExecutionProvider"]).run(
            None, {"input": x})[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        procs[0].send_signal(signal.SIGTERM)  # the launcher passes it on; rank 0's drain stops host B's ranks
        outs = [p.communicate(timeout=120) for p in procs]
        for host, (p, (o, e)) in zip("AB", zip(procs, outs)):
            assert p.returncode == 0, f"host {host}'s server exited {p.returncode}:\n{e}"
        assert "stopped by rank 0" in outs[1][1], outs[1][1]
        return f"oneflow serve sharded over 2 hosts x 2 ranks: HTTP answer equals onnxruntime's, drained by SIGTERM"
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()


def expect_ok(what, res):
    for host, (rc, o, e) in zip("AB", res):
        assert rc == 0, f"{what}: host {host} exited {rc}:\n{o}\n{e}"


def main():
    if len(sys.argv) != 6:
        print(__doc__)
        return 2
    cli, gloo_worker, train_worker, models, train_models = sys.argv[1:]
    if shutil.which("ip") is None:
        print("skipped: iproute2's `ip` is not installed")
        return SKIP
    probe = subprocess.run(["ip", "netns", "add", f"of-probe-{os.getpid()}"], capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"skipped: cannot create network namespaces here (needs root / CAP_NET_ADMIN): {probe.stderr.strip()}")
        return SKIP
    sh("ip", "netns", "del", f"of-probe-{os.getpid()}")

    timeout_ms = 10000
    env = dict(os.environ, ONEFLOW_COMM_TIMEOUT_MS=str(timeout_ms))
    for k in ["ONEFLOW_GLOO_STORE", "ONEFLOW_GLOO_HOST", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"]:
        env.pop(k, None)
    with TwoHosts() as hosts:
        start = time.time()
        expect_ok("collectives", run_job(hosts, cli, [gloo_worker, "collectives"], env))
        for model, mode, dims in [("mlp", "data", "8x784"), ("mlp", "auto", "8x784"),
                                  ("transformer", "auto", "2x8x256")]:
            expect_ok(f"{model} {mode}", run_job(hosts, cli, [gloo_worker, "model", f"{models}/{model}.onnx", mode, dims], env))
        res = run_job(hosts, cli, [train_worker, "check", train_models, "mlp", "20", "data", "tensor"], env)
        expect_ok("training", res)
        print(res[0][1], end="")
        print(f"collectives, inference and training across 2 hosts x 2 ranks: ok in {time.time() - start:.1f}s")
        print(serve_across_hosts(hosts, cli, models, env, os.path.dirname(os.path.abspath(train_models))))

        # Host B's ranks die in the middle of the job.
        procs = [launch_on(ns, r, cli, [gloo_worker, "loop", "120"], env) for r, ns in enumerate(hosts.ns)]
        time.sleep(3)
        assert all(p.poll() is None for p in procs), "the loop ended before host B was killed"
        killed = time.time()
        TwoHosts.kill(hosts.ns[1])
        o, e = procs[0].communicate(timeout=timeout_ms / 1000 + 60)
        took = time.time() - killed
        procs[1].communicate(timeout=30)
        assert procs[0].returncode != 0, f"host A survived the loss of host B:\n{e}"
        for rank in (0, 1):
            line = next((l for l in e.splitlines() if l.startswith(f"rank error: rank {rank}:")), None)
            assert line, f"rank {rank} did not report the failure:\n{e}"
            for lost in (2, 3):
                assert f"{lost} on {SUBNET}.2" in line, f"rank {rank} does not name rank {lost} on host B: {line}"
        assert took < timeout_ms / 1000 + 30, took
        print(f"host B killed: host A's ranks failed after {took:.1f}s: {line}")

        # Host B never starts.
        started = time.time()
        p = launch_on(hosts.ns[0], 0, cli, [gloo_worker, "collectives"], dict(env, ONEFLOW_COMM_TIMEOUT_MS="3000"))
        o, e = p.communicate(timeout=120)
        took = time.time() - started
        assert p.returncode != 0, "a job missing half its ranks succeeded"
        line = next((l for l in e.splitlines() if l.startswith("rank error: rank 0:")), "")
        assert "2 (never joined)" in line and "3 (never joined)" in line, e
        print(f"host B never started: host A's ranks failed after {took:.1f}s: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
