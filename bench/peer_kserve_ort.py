#!/usr/bin/env python3
"""The peer of `oneflow serve` in bench/serve_bench.py: a KServe v2 (Open Inference Protocol) server
in Python over onnxruntime, as a competent Python developer would write one for CPU inference today.

* HTTP: FastAPI on uvicorn (one worker by default; uvloop + httptools when installed, as
  `uvicorn[standard]` brings them), access log off. POST /v2/models/{m}/infer takes JSON tensors
  or Triton's binary tensor data extension (Inference-Header-Content-Length; inputs read with
  numpy.frombuffer, no copy) and answers JSON or binary outputs as the request asks
  (`binary_data` per output, `binary_data_output` for all). JSON is parsed and written with orjson
  when installed, else the standard json module. The onnxruntime call runs in Starlette's thread
  pool (onnxruntime releases the GIL), so the event loop keeps reading and parsing other requests
  (--run-in-loop calls it on the event loop instead, one inference at a time).
  GET /v2/health/live, /v2/health/ready, /v2, /v2/models/{m}, /v2/models/{m}/ready.
* gRPC (--grpc-port): inference.GRPCInferenceService with grpcio's thread-pool server, from the
  servicer that tritonclient ships (ModelInfer with raw_input_contents / typed contents,
  raw_output_contents out; ServerLive/Ready, ModelReady, ServerMetadata, ModelMetadata).
* Models: DIR/<model>/<version>/model.onnx (the highest version; config.pbtxt is ignored: no
  dynamic batching, one onnxruntime InferenceSession per model with default session options,
  so intra-op threads = onnxruntime's default, the number of physical cores).

    python3 bench/peer_kserve_ort.py --model-repository DIR [--http-port 8000] [--grpc-port -1]
                                     [--host 127.0.0.1] [--workers 1] [--intra-op-threads 0]
                                     [--run-in-loop]

Prints `HTTP on HOST:PORT` (and `gRPC on HOST:PORT`) on stderr once it serves.
"""
import argparse
import os
import sys

import numpy as np
import onnxruntime as ort

try:
    import orjson

    def _loads(b):
        return orjson.loads(b)

    def _dumps(obj):
        return orjson.dumps(obj)
    JSON_LIB = "orjson " + orjson.__version__
except ImportError:  # pragma: no cover - orjson is optional
    import json

    def _loads(b):
        return json.loads(b)

    def _dumps(obj):
        return json.dumps(obj, separators=(",", ":")).encode()
    JSON_LIB = "json (stdlib)"

KSERVE_TO_NP = {"BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
                "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64, "FP16": np.float16,
                "FP32": np.float32, "FP64": np.float64}
NP_TO_KSERVE = {np.dtype(v): k for k, v in KSERVE_TO_NP.items()}
ORT_TO_KSERVE = {"tensor(bool)": "BOOL", "tensor(uint8)": "UINT8", "tensor(uint16)": "UINT16",
                 "tensor(uint32)": "UINT32", "tensor(uint64)": "UINT64", "tensor(int8)": "INT8",
                 "tensor(int16)": "INT16", "tensor(int32)": "INT32", "tensor(int64)": "INT64",
                 "tensor(float16)": "FP16", "tensor(float)": "FP32", "tensor(double)": "FP64"}


# session.run in Starlette's thread pool (default), or on the event loop itself (--run-in-loop): one
# inference at a time, no thread hand-off, the loop blocked meanwhile (what a plain `async def`
# handler calling session.run does).
OFFLOAD = True


class BadRequest(Exception):
    pass


class Model:
    def __init__(self, name, version, path, intra_op_threads=0):
        so = ort.SessionOptions()
        if intra_op_threads > 0:
            so.intra_op_num_threads = intra_op_threads
        self.name, self.version, self.path = name, str(version), path
        self.session = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        self.inputs = self.session.get_inputs()
        self.outputs = self.session.get_outputs()
        self.output_names = [o.name for o in self.outputs]

    def metadata(self):
        def tensors(ts):
            return [{"name": t.name, "datatype": ORT_TO_KSERVE.get(t.type, t.type),
                     "shape": [d if isinstance(d, int) else -1 for d in t.shape]} for t in ts]
        return {"name": self.name, "versions": [self.version], "platform": "onnxruntime_onnx",
                "inputs": tensors(self.inputs), "outputs": tensors(self.outputs)}

    def run(self, feeds, names=None):
        return self.session.run(names or self.output_names, feeds)


def load_repository(root, intra_op_threads=0):
    models = {}
    for name in sorted(os.listdir(root)):
        mdir = os.path.join(root, name)
        if not os.path.isdir(mdir):
            continue
        versions = sorted(int(v) for v in os.listdir(mdir)
                          if v.isdigit() and os.path.exists(os.path.join(mdir, v, "model.onnx")))
        if versions:
            models[name] = Model(name, versions[-1], os.path.join(mdir, str(versions[-1]), "model.onnx"),
                                 intra_op_threads)
    return models


# ---- HTTP (FastAPI) -------------------------------------------------------------------------------

def decode_http_request(body, header_length):
    """(request JSON, {input name: ndarray}) from a KServe v2 HTTP body, JSON or binary extension."""
    if header_length is not None:
        header_length = int(header_length)
        if header_length < 0 or header_length > len(body):
            raise BadRequest(f"Inference-Header-Content-Length {header_length} outside the body")
        req = _loads(body[:header_length])
        binary = memoryview(body)[header_length:]
    else:
        req = _loads(body)
        binary = None
    feeds, offset = {}, 0
    for inp in req.get("inputs", []):
        try:
            name, shape, dtype = inp["name"], inp["shape"], KSERVE_TO_NP[inp["datatype"]]
        except KeyError as exc:
            raise BadRequest(f"input without a valid {exc}")
        size = (inp.get("parameters") or {}).get("binary_data_size")
        if size is not None:
            if binary is None or offset + size > len(binary):
                raise BadRequest(f"input '{name}': binary data past the end of the body")
            arr = np.frombuffer(binary, dtype=dtype, count=size // np.dtype(dtype).itemsize, offset=offset)
            offset += size
        else:
            arr = np.asarray(inp["data"], dtype=dtype)
        try:
            feeds[name] = arr.reshape(shape)
        except ValueError as exc:
            raise BadRequest(f"input '{name}': {exc}")
    return req, feeds


def encode_http_response(model, req, names, outs):
    """(body bytes, headers) for the outputs, binary where the request asked for it."""
    params = req.get("parameters") or {}
    all_binary = bool(params.get("binary_data_output", False))
    wanted = {o["name"]: bool((o.get("parameters") or {}).get("binary_data", all_binary))
              for o in req.get("outputs") or []}
    meta, blobs = [], []
    for name, arr in zip(names, outs):
        arr = np.ascontiguousarray(arr)
        entry = {"name": name, "datatype": NP_TO_KSERVE[arr.dtype], "shape": list(arr.shape)}
        if wanted.get(name, all_binary):
            blob = arr.tobytes()
            entry["parameters"] = {"binary_data_size": len(blob)}
            blobs.append(blob)
        else:
            entry["data"] = arr.ravel().tolist()
        meta.append(entry)
    resp = {"model_name": model.name, "model_version": model.version, "outputs": meta}
    if "id" in req:
        resp["id"] = req["id"]
    header = _dumps(resp)
    if not blobs:
        return header, {"content-type": "application/json"}
    return b"".join([header] + blobs), {"content-type": "application/octet-stream",
                                        "inference-header-content-length": str(len(header))}


def create_app(models):
    from fastapi import FastAPI, Request, Response
    from starlette.concurrency import run_in_threadpool

    app = FastAPI(title="peer KServe v2 over onnxruntime")

    def error(status, message):
        return Response(_dumps({"error": message}), status_code=status, media_type="application/json")

    @app.get("/v2/health/live")
    async def live():
        return Response(status_code=200)

    @app.get("/v2/health/ready")
    async def ready():
        return Response(status_code=200)

    @app.get("/v2")
    async def server_metadata():
        return {"name": "peer-kserve-ort", "version": ort.__version__, "extensions": ["binary_tensor_data"]}

    @app.get("/v2/models/{name}")
    async def model_metadata(name: str):
        m = models.get(name)
        return Response(_dumps(m.metadata()), media_type="application/json") if m else \
            error(404, f"unknown model '{name}'")

    @app.get("/v2/models/{name}/ready")
    async def model_ready(name: str):
        return Response(status_code=200 if name in models else 404)

    async def infer_impl(name, request):
        model = models.get(name)
        if model is None:
            return error(404, f"unknown model '{name}'")
        body = await request.body()
        try:
            req, feeds = decode_http_request(body, request.headers.get("inference-header-content-length"))
        except (BadRequest, ValueError) as exc:
            return error(400, str(exc))
        names = [o["name"] for o in req.get("outputs") or []] or model.output_names
        try:
            outs = await run_in_threadpool(model.run, feeds, names) if OFFLOAD else model.run(feeds, names)
        except Exception as exc:  # onnxruntime's errors: wrong shape, dtype, name
            return error(400, f"{type(exc).__name__}: {exc}")
        content, headers = encode_http_response(model, req, names, outs)
        return Response(content, headers=headers)

    @app.post("/v2/models/{name}/infer")
    async def infer(name: str, request: Request):
        return await infer_impl(name, request)

    @app.post("/v2/models/{name}/versions/{version}/infer")
    async def infer_version(name: str, version: str, request: Request):
        return await infer_impl(name, request)

    return app


def app_factory():
    """For `--workers N` (uvicorn imports the app in each worker process)."""
    global OFFLOAD
    OFFLOAD = os.environ.get("PEER_RUN_IN_LOOP") != "1"
    return create_app(load_repository(os.environ["PEER_MODEL_REPOSITORY"],
                                      int(os.environ.get("PEER_INTRA_OP_THREADS", "0"))))


# ---- gRPC ------------------------------------------------------------------------------------------

def start_grpc(models, host, port):
    from concurrent import futures

    import grpc
    from tritonclient.grpc import service_pb2, service_pb2_grpc

    contents_field = {"BOOL": "bool_contents", "INT8": "int_contents", "INT16": "int_contents",
                      "INT32": "int_contents", "INT64": "int64_contents", "UINT8": "uint_contents",
                      "UINT16": "uint_contents", "UINT32": "uint_contents", "UINT64": "uint64_contents",
                      "FP32": "fp32_contents", "FP64": "fp64_contents"}

    class Servicer(service_pb2_grpc.GRPCInferenceServiceServicer):
        def ServerLive(self, request, context):
            return service_pb2.ServerLiveResponse(live=True)

        def ServerReady(self, request, context):
            return service_pb2.ServerReadyResponse(ready=True)

        def ModelReady(self, request, context):
            return service_pb2.ModelReadyResponse(ready=request.name in models)

        def ServerMetadata(self, request, context):
            return service_pb2.ServerMetadataResponse(name="peer-kserve-ort", version=ort.__version__)

        def ModelMetadata(self, request, context):
            m = models.get(request.name)
            if m is None:
                context.abort(grpc.StatusCode.NOT_FOUND, f"unknown model '{request.name}'")
            md = m.metadata()
            t = lambda ts: [service_pb2.ModelMetadataResponse.TensorMetadata(**x) for x in ts]  # noqa: E731
            return service_pb2.ModelMetadataResponse(name=md["name"], versions=md["versions"],
                                                     platform=md["platform"], inputs=t(md["inputs"]),
                                                     outputs=t(md["outputs"]))

        def ModelInfer(self, request, context):
            m = models.get(request.model_name)
            if m is None:
                context.abort(grpc.StatusCode.NOT_FOUND, f"unknown model '{request.model_name}'")
            feeds = {}
            try:
                for i, inp in enumerate(request.inputs):
                    dtype = KSERVE_TO_NP[inp.datatype]
                    if i < len(request.raw_input_contents):
                        arr = np.frombuffer(request.raw_input_contents[i], dtype=dtype)
                    else:
                        arr = np.asarray(getattr(inp.contents, contents_field[inp.datatype]), dtype=dtype)
                    feeds[inp.name] = arr.reshape(list(inp.shape))
                names = [o.name for o in request.outputs] or m.output_names
                outs = m.run(feeds, names)
            except Exception as exc:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{type(exc).__name__}: {exc}")
            resp = service_pb2.ModelInferResponse(model_name=m.name, model_version=m.version, id=request.id)
            for name, arr in zip(names, outs):
                arr = np.ascontiguousarray(arr)
                resp.outputs.add(name=name, datatype=NP_TO_KSERVE[arr.dtype], shape=list(arr.shape))
                resp.raw_output_contents.append(arr.tobytes())
            return resp

    server = grpc.server(futures.ThreadPoolExecutor(), options=[("grpc.max_receive_message_length", 1 << 30),
                                                                 ("grpc.max_send_message_length", 1 << 30)])
    service_pb2_grpc.add_GRPCInferenceServiceServicer_to_server(Servicer(), server)
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"cannot bind gRPC to {host}:{port}")
    server.start()
    return server, bound


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-repository", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--http-port", type=int, default=8000)
    ap.add_argument("--grpc-port", type=int, default=-1, help="-1: no gRPC front end (default); 0: any free port")
    ap.add_argument("--workers", type=int, default=1, help="uvicorn worker processes (default 1)")
    ap.add_argument("--intra-op-threads", type=int, default=0,
                    help="onnxruntime intra-op threads per session; 0: onnxruntime's default (default)")
    ap.add_argument("--run-in-loop", action="store_true",
                    help="call session.run on the event loop instead of in Starlette's thread pool")
    args = ap.parse_args(argv)
    global OFFLOAD
    OFFLOAD = not args.run_in_loop
    if args.run_in_loop:
        os.environ["PEER_RUN_IN_LOOP"] = "1"  # for --workers N

    import uvicorn
    if args.http_port == 0:  # uvicorn reports no bound port: pick a free one
        import socket
        with socket.socket() as s:
            s.bind((args.host, 0))
            args.http_port = s.getsockname()[1]
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    if args.workers > 1:
        if args.grpc_port >= 0:
            ap.error("--grpc-port needs --workers 1")
        os.environ["PEER_MODEL_REPOSITORY"] = args.model_repository
        os.environ["PEER_INTRA_OP_THREADS"] = str(args.intra_op_threads)
        log(f"peer: FastAPI {_version('fastapi')} + uvicorn {uvicorn.__version__} x{args.workers} workers, "
            f"onnxruntime {ort.__version__}, {JSON_LIB}; HTTP on {args.host}:{args.http_port}")
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        uvicorn.run("peer_kserve_ort:app_factory", factory=True, host=args.host, port=args.http_port,
                    workers=args.workers, log_level="warning", access_log=False)
        return 0
    models = load_repository(args.model_repository, args.intra_op_threads)
    if not models:
        log(f"peer: no DIR/<model>/<version>/model.onnx under {args.model_repository}")
        return 1
    grpc_note = ""
    if args.grpc_port >= 0:
        _server, port = start_grpc(models, args.host, args.grpc_port)
        grpc_note = f"; gRPC on {args.host}:{port}"
    log(f"peer: FastAPI {_version('fastapi')} + uvicorn {uvicorn.__version__} (1 worker), onnxruntime "
        f"{ort.__version__} (default session options), {JSON_LIB}; models {', '.join(models)}; "
        f"HTTP on {args.host}:{args.http_port}{grpc_note}")
    uvicorn.run(create_app(models), host=args.host, port=args.http_port, log_level="warning", access_log=False)
    return 0


def _version(dist):
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
