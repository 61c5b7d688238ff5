#!/usr/bin/env python3
"""ONNX export round trip: ONNX -> our IR (import + PrepareGraph) -> SaveOnnxModel -> ONNX.

For every case in tests/conformance/expected_pass.txt and every bench model, the export must
  1. be written by the driver (export_roundtrip),
  2. pass onnx.checker.check_model(full_check=True),
  3. say what the source said (same opsets, inputs, outputs, initializer bytes, nodes in order with the
     same op, domain, inputs, outputs and attributes; declared dims kept); a source at opsets 7-12 is
     exported at opset 13, its nodes rewritten, so only its opset and interface are compared,
  4. run in onnxruntime with the expected outputs: a conformance case's reference outputs at its
     tolerance (a model whose inputs or outputs have a narrow type, float8/float4/int4/int2, which
     onnxruntime's Python API cannot pass, or an op newer than onnxruntime's newest opset, runs in
     onnx.reference instead); for a bench model both `oneflow run` and onnxruntime on the original model. Bench
     models are exported twice, inline and with external data.
A case that cannot pass a stage for a reason outside the exporter is listed in roundtrip_exceptions.txt
("case stage reason"); the test checks that it fails exactly there (and, for stage "ort", that
onnxruntime fails on the original model as well), and fails on entries that no longer apply.
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnx.version_converter
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))
from node_test_data import read_value  # noqa: E402  (reads sequence and optional data as well)

STAGES = ("export", "checker", "structure", "ort")


class StageError(Exception):
    def __init__(self, stage, message):
        super().__init__(f"{stage}: {message}")
        self.stage = stage


# ---- structure ---------------------------------------------------------------------------------

def _domain(d):
    return "" if d in ("", "ai.onnx") else d


def _tensor_value(t):
    arr = numpy_helper.to_array(t)
    return ("tensor", arr.dtype.str, arr.shape, arr.tobytes())


def _graph_value(g):
    """What a subgraph says, for comparison: its interface, initializers and nodes (recursively),
    leaving out how the proto spells it (an explicit empty domain, say)."""
    def type_of(vi):
        if vi.type.WhichOneof("value") not in (None, "tensor_type"):  # sequences, optionals
            return ("type", vi.type.SerializeToString(deterministic=True))
        t = vi.type.tensor_type
        return (t.elem_type, tuple((d.dim_value, d.dim_param) for d in t.shape.dim) if t.HasField("shape") else None)
    nodes = tuple((n.op_type, _domain(n.domain), n.name, tuple(n.input), tuple(n.output), n.doc_string,
                   tuple(sorted((a.name, _attr_value(a)) for a in n.attribute))) for n in g.node)
    return ("graph", tuple((i.name, type_of(i)) for i in g.input), tuple((o.name, type_of(o)) for o in g.output),
            tuple(sorted((t.name, _tensor_value(t)) for t in g.initializer)), nodes)


def _attr_value(a):
    v = onnx.helper.get_attribute_value(a)
    if isinstance(v, onnx.TensorProto):
        return _tensor_value(v)
    if isinstance(v, onnx.GraphProto):
        return _graph_value(v)
    if isinstance(v, onnx.TypeProto):  # Optional's `type`
        return ("type", v.SerializeToString(deterministic=True))
    if isinstance(v, list):
        return tuple(v)
    return v


def _same_value(a, b):
    # NaN attributes (e.g. a fill value) compare equal to themselves.
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return True
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return all(_same_value(x, y) for x, y in zip(a, b))
    return a == b


def compare_structure(src, out):
    """Raises StageError('structure') where `out` does not say what `src` said. A source at ONNX
    opset 7-12 is upgraded to opset 13 at import (serialize/onnx_legacy.h): its export must say
    opset 13 and keep the source's interface (inputs, outputs, their types), while its nodes are
    the rewritten ones — they are checked by the checker and the ort stage, not against the source."""
    def fail(msg):
        raise StageError("structure", msg)

    so = {_domain(o.domain): o.version for o in src.opset_import}
    eo = {_domain(o.domain): o.version for o in out.opset_import}
    legacy = so.get("", 13) < 13
    if legacy:
        so[""] = 13
    if so != eo:
        fail(f"opset imports {eo} != {so}")
    sg, eg = src.graph, out.graph
    init_names = {t.name for t in sg.initializer}
    s_inputs = [i for i in sg.input if i.name not in init_names]
    if [i.name for i in s_inputs] != [i.name for i in eg.input]:
        fail(f"inputs {[i.name for i in eg.input]} != {[i.name for i in s_inputs]}")
    if [o.name for o in sg.output] != [o.name for o in eg.output]:
        fail(f"outputs {[o.name for o in eg.output]} != {[o.name for o in sg.output]}")
    for s, e in list(zip(s_inputs, eg.input)) + list(zip(sg.output, eg.output)):
        # The kind (tensor, sequence, optional) must survive; the element type is compared below.
        sk, ek = s.type, e.type
        while sk.WhichOneof("value") in ("sequence_type", "optional_type"):
            kind = sk.WhichOneof("value")
            if ek.WhichOneof("value") != kind:
                fail(f"{s.name}: {kind} became {ek.WhichOneof('value')}")
            sk, ek = getattr(sk, kind).elem_type, getattr(ek, kind).elem_type
        st, et = sk.tensor_type, ek.tensor_type
        if st.elem_type and st.elem_type != et.elem_type:
            fail(f"{s.name}: element type {et.elem_type} != {st.elem_type}")
        if st.HasField("shape"):
            if len(st.shape.dim) != len(et.shape.dim):
                fail(f"{s.name}: rank {len(et.shape.dim)} != {len(st.shape.dim)}")
            for k, (sd, ed) in enumerate(zip(st.shape.dim, et.shape.dim)):
                if sd.HasField("dim_value") and (not ed.HasField("dim_value") or ed.dim_value != sd.dim_value):
                    fail(f"{s.name}: dim {k} is {ed} but was {sd.dim_value}")
                if sd.dim_param and not ed.HasField("dim_value") and ed.dim_param != sd.dim_param:
                    fail(f"{s.name}: dim {k} is {ed.dim_param!r} but was {sd.dim_param!r}")
    if legacy:
        return
    base = None  # external data of the export is read by onnx.load(path); the source is inline here
    s_init = {t.name: numpy_helper.to_array(t, base) for t in sg.initializer}
    e_init = {t.name: numpy_helper.to_array(t, base) for t in eg.initializer}
    if set(s_init) != set(e_init):
        fail(f"initializers {sorted(e_init)} != {sorted(s_init)}")
    for name, arr in s_init.items():
        got = e_init[name]
        if got.dtype != arr.dtype or got.shape != arr.shape or got.tobytes() != arr.tobytes():
            fail(f"initializer {name!r} differs")
    if len(sg.node) != len(eg.node):
        fail(f"{len(eg.node)} nodes, the source has {len(sg.node)}")
    for k, (sn, en) in enumerate(zip(sg.node, eg.node)):
        where = f"node {k} ({sn.op_type} {sn.name!r})"
        if (sn.op_type, _domain(sn.domain), sn.name) != (en.op_type, _domain(en.domain), en.name):
            fail(f"{where}: became {en.op_type} {en.name!r} in domain {en.domain!r}")
        if list(sn.input) != list(en.input) or list(sn.output) != list(en.output):
            fail(f"{where}: inputs/outputs {list(en.input)}/{list(en.output)} != {list(sn.input)}/{list(sn.output)}")
        sa = {a.name: _attr_value(a) for a in sn.attribute}
        ea = {a.name: _attr_value(a) for a in en.attribute}
        if set(sa) != set(ea):
            fail(f"{where}: attributes {sorted(ea)} != {sorted(sa)}")
        for name in sa:
            if not _same_value(sa[name], ea[name]):
                fail(f"{where}: attribute {name!r} is {ea[name]!r}, was {sa[name]!r}")
        if sn.doc_string != en.doc_string:
            fail(f"{where}: doc_string lost")
    if (src.doc_string, sg.doc_string, list(src.metadata_props)) != (out.doc_string, eg.doc_string,
                                                                      list(out.metadata_props)):
        fail("model/graph doc_string or metadata_props lost")


# ---- onnxruntime -------------------------------------------------------------------------------

def ort_session(path):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 4  # failures are reported by the test, not logged
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def allclose_report(got, want, rtol, atol):
    """None when `got` matches `want` (numpy.allclose semantics, NaN == NaN), else a description."""
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != {want.dtype}"
    if _is_bf16(want):
        got, want = got.astype(np.float32), want.astype(np.float32)
    if want.dtype.kind in "biu" or want.dtype == np.bool_:
        return None if np.array_equal(got, want) else "values differ"
    if want.dtype.kind not in "fc":
        return None if np.array_equal(got, want) else "values differ"
    g64, w64 = got.astype(np.float64), want.astype(np.float64)
    ok = np.isclose(g64, w64, rtol=rtol, atol=atol, equal_nan=True)
    if ok.all():
        return None
    return f"{int((~ok).sum())} of {ok.size} values differ (max abs err {np.nanmax(np.abs(g64 - w64)):.3g})"


def load_case_data(case_dir):
    """[(inputs: [value], outputs: [value])] per test_data_set, in graph order."""
    graph = onnx.load(os.path.join(case_dir, "model.onnx"), load_external_data=False).graph
    sets = []
    for ds in sorted(glob.glob(os.path.join(case_dir, "test_data_set_*"))):
        def read(prefix, infos):
            files = sorted(glob.glob(os.path.join(ds, f"{prefix}_*.pb")),
                           key=lambda f: int(os.path.basename(f)[len(prefix) + 1:-3]))
            return [read_value(f, infos[int(os.path.basename(f)[len(prefix) + 1:-3])].type) for f in files]
        sets.append((read("input", graph.input), read("output", graph.output)))
    return sets


def value_report(got, want, rtol, atol):
    """allclose_report through sequences (lists) and empty optionals (None)."""
    if want is None or isinstance(want, list):
        if want is None:
            return None if got is None else f"{type(got).__name__} != None"
        if not isinstance(got, list) or len(got) != len(want):
            return f"{type(got).__name__} != a sequence of {len(want)}"
        for k, (g, w) in enumerate(zip(got, want)):
            diff = value_report(g, w, rtol, atol)
            if diff:
                return f"element {k}: {diff}"
        return None
    return allclose_report(np.asarray(got), want, rtol, atol)


def ort_error(exc):
    """onnxruntime's message without its source-location preamble (the reason is at the end)."""
    text = " ".join(str(exc).split())
    return text if len(text) <= 240 else "..." + text[-240:]


def _is_bf16(arr):
    return arr.dtype.name == "bfloat16"  # ml_dtypes' type, which onnxruntime's numpy bridge rejects


def run_session(sess, in_names, inputs, expected):
    """sess.run, except that bfloat16 tensors go through OrtValues over their uint16 bits (bound
    outputs are sized from the expected outputs; a wrong shape there fails inside onnxruntime)."""
    import onnxruntime as ort
    if not any(isinstance(a, np.ndarray) and _is_bf16(a) for a in list(inputs) + list(expected)):
        return sess.run(None, dict(zip(in_names, inputs)))
    bf16 = onnx.TensorProto.BFLOAT16
    binding = sess.io_binding()
    for name, arr in zip(in_names, inputs):
        value = (ort.OrtValue.ortvalue_from_numpy_with_onnx_type(np.ascontiguousarray(arr).view(np.uint16), bf16)
                 if _is_bf16(arr) else ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(arr)))
        binding.bind_ortvalue_input(name, value)
    buffers = {}
    for out, want in zip(sess.get_outputs(), expected):
        if _is_bf16(want):
            buffers[out.name] = np.zeros(want.shape, dtype=np.uint16)
            value = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(buffers[out.name], bf16)
            binding.bind_ortvalue_output(out.name, value)
        else:
            binding.bind_output(out.name)
    sess.run_with_iobinding(binding)
    values = binding.get_outputs()
    return [buffers[o.name].view(want.dtype) if o.name in buffers else values[k].numpy()
            for k, (o, want) in enumerate(zip(sess.get_outputs(), expected))]


def ort_loadable(path):
    """An onnxruntime session for `path`. onnxruntime 1.31 stops at ai.onnx opset 26 (IR 13) while onnx
    1.23's node tests use up to 28; such a model is run after onnx.version_converter converted it to
    the newest opset onnxruntime supports (the converter refuses what the older opset cannot say, e.g.
    a type it does not allow). Anything else onnxruntime refuses raises StageError('ort')."""
    import re
    try:
        return ort_session(path)
    except Exception as exc:  # noqa: BLE001 -- ORT's load errors have many types
        first_error = exc
    model = onnx.load(path)
    opset = {_domain(o.domain): o for o in model.opset_import}.get("")
    supported = re.search(r"support for domain ai\.onnx is till opset (\d+)", str(first_error))
    if opset is None or ("max supported IR version" not in str(first_error) and not supported):
        raise StageError("ort", f"onnxruntime cannot load it: {ort_error(first_error)}")
    target = int(supported.group(1)) if supported else opset.version
    if "max supported IR version" in str(first_error) and not supported:
        target = 26  # the IR check comes first; probe one opset lower at a time below
    while target >= 1:
        try:
            lowered = onnx.version_converter.convert_version(model, target)
        except Exception as exc:  # noqa: BLE001 -- e.g. a type the older opset does not allow
            raise StageError("ort", f"onnxruntime supports ai.onnx up to opset {target} (the model has "
                             f"{opset.version}) and onnx.version_converter cannot convert it: "
                             f"{' '.join(str(exc).split())[-160:]}")
        lowered.ir_version = onnx.helper.find_min_ir_version_for([onnx.helper.make_opsetid("", target)])
        lowered_path = path[:-len(".onnx")] + f".opset{target}.onnx"
        onnx.save(lowered, lowered_path)
        try:
            return ort_session(lowered_path)
        except Exception as exc:  # noqa: BLE001
            m = re.search(r"support for domain ai\.onnx is till opset (\d+)", str(exc))
            if not m or int(m.group(1)) >= target:
                raise StageError("ort", f"onnxruntime cannot load it (converted to opset {target}): {ort_error(exc)}")
            target = int(m.group(1))
    raise StageError("ort", "no opset onnxruntime accepts")


# float8 x4, uint4, int4, float4e2m1, float8e8m0, uint2, int2: onnxruntime's Python API can neither
# feed nor return them (numpy has no such types; it refuses ml_dtypes' arrays).
NARROW_TYPES = set(range(17, 27))


def has_narrow_io(model):
    return any(v.type.tensor_type.elem_type in NARROW_TYPES for v in list(model.graph.input) + list(model.graph.output))


def run_reference_case(path, data_sets, rtol, atol):
    """The runtime stage through onnx.reference, for models onnxruntime's Python API cannot feed."""
    from onnx.reference import ReferenceEvaluator
    try:
        ref = ReferenceEvaluator(onnx.load(path))
    except Exception as exc:  # noqa: BLE001
        raise StageError("ort", f"onnx.reference cannot load it: {' '.join(str(exc).split())[-240:]}")
    in_names = [i.name for i in onnx.load(path).graph.input]
    for k, (inputs, outputs) in enumerate(data_sets):
        got = ref.run(None, dict(zip(in_names, inputs)))
        for j, want in enumerate(outputs):
            if want is None or isinstance(want, list):
                diff = value_report(got[j], want, rtol, atol)
                if diff:
                    raise StageError("ort", f"data set {k} output {j} (onnx.reference): {diff}")
                continue
            g, w = np.asarray(got[j]), want
            if g.dtype != w.dtype or g.shape != w.shape:
                raise StageError("ort", f"data set {k} output {j}: {g.dtype}{g.shape} != {w.dtype}{w.shape}")
            diff = allclose_report(g.astype(np.float32), w.astype(np.float32), rtol, atol)
            if diff:
                raise StageError("ort", f"data set {k} output {j} (onnx.reference): {diff}")


def run_ort_case(path, data_sets, rtol, atol):
    """Raises StageError('ort') unless onnxruntime on `path` reproduces every data set's outputs
    (onnx.reference instead where the model's inputs or outputs have a narrow type)."""
    if has_narrow_io(onnx.load(path)):
        return run_reference_case(path, data_sets, rtol, atol)
    try:
        sess = ort_loadable(path)
    except StageError as err:
        # An op newer than onnxruntime's opsets, or of ai.onnx.preview.training (onnxruntime's CPU
        # build registers none of that domain): onnx.reference runs those.
        if "No Previous Version of" not in str(err) and "ai.onnx.preview.training" not in str(err):
            raise
        return run_reference_case(path, data_sets, rtol, atol)
    in_names = [i.name for i in sess.get_inputs()]
    for k, (inputs, outputs) in enumerate(data_sets):
        try:
            got = run_session(sess, in_names, inputs, outputs)
        except Exception as exc:  # noqa: BLE001
            raise StageError("ort", f"onnxruntime cannot run it: {ort_error(exc)}")
        for j, want in enumerate(outputs):
            diff = value_report(got[j], want, rtol, atol)
            if diff:
                raise StageError("ort", f"data set {k} output {j}: {diff}")


# ---- conformance cases -------------------------------------------------------------------------

VIA_NATIVE = False  # set by --via-native: the driver goes ONNX -> native -> ONNX


def run_driver(driver, jobs, work, external=False):
    """Exports [(src, dst)] in one driver process; returns {src: None | error text}."""
    list_file = os.path.join(work, "jobs.txt")
    with open(list_file, "w") as f:
        for src, dst in jobs:
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            f.write(f"{src}\t{dst}\n")
    cmd = [driver] + (["--external"] if external else []) + (["--via-native"] if VIA_NATIVE else []) + ["--list", list_file]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    result = {src: "no report from the driver (crash?): " + proc.stderr[-300:] for src, _ in jobs}
    dst_to_src = {dst: src for src, dst in jobs}
    for line in proc.stdout.splitlines():
        if line.startswith("OK "):
            result[dst_to_src[line[3:]]] = None
        elif line.startswith("ERROR "):
            for src, _ in jobs:
                if f" {src}: " in line:
                    result[src] = line[6:]
    return result


def check_case(case_dir, exported, export_error):
    """Runs the stages in order; raises StageError at the first that fails."""
    if export_error:
        raise StageError("export", export_error)
    try:
        onnx.checker.check_model(exported, full_check=True)
    except Exception as exc:  # noqa: BLE001
        raise StageError("checker", str(exc).splitlines()[0][:300])
    compare_structure(onnx.load(os.path.join(case_dir, "model.onnx")), onnx.load(exported))
    run_ort_case(exported, load_case_data(case_dir), *read_tol(case_dir))


def read_exceptions(path):
    entries = {}
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        case, stage, reason = (line.split(None, 2) + ["", ""])[:3]
        if stage not in STAGES or not reason:
            raise SystemExit(f"{path}: bad line {line!r} (want: case stage reason; stage in {STAGES})")
        entries[case] = (stage, reason)
    return entries


def conformance(args, exceptions):
    cases = [l.strip() for l in open(args.expected) if l.strip() and not l.startswith("#")]
    if args.filter:
        cases = [c for c in cases if args.filter in c]
    work = os.path.join(args.work, "conformance")
    jobs = [(os.path.join(args.node_tests, c, "model.onnx"), os.path.join(work, c, "model.onnx")) for c in cases]
    exported = run_driver(args.driver, jobs, args.work)
    problems, passed, listed = [], 0, 0
    for case, (src, dst) in zip(cases, jobs):
        case_dir = os.path.dirname(src)
        entry = exceptions.get(case)
        try:
            check_case(case_dir, dst, exported[src])
        except StageError as err:
            if entry is None:
                problems.append(f"{case}: {err}")
            elif entry[0] != err.stage:
                problems.append(f"{case}: listed as failing at '{entry[0]}' but fails at {err}")
            elif not source_fails_too(err.stage, src, dst, case_dir):
                problems.append(f"{case}: listed as failing at '{entry[0]}' for a reason outside the exporter, "
                                f"but the source model passes that stage and the export does not ({err})")
            else:
                listed += 1
            if args.verbose:
                print(f"  {case}: {err}")
            continue
        if entry is not None:
            problems.append(f"{case}: listed in {os.path.basename(args.exceptions)} ({entry[0]}: {entry[1]}) "
                            "but now passes every stage; remove the entry")
        else:
            passed += 1
    stale = sorted(set(exceptions) - set(cases))
    if stale and not args.filter:
        problems += [f"{c}: listed in {os.path.basename(args.exceptions)} but not an expected-pass case" for c in stale]
    print(f"conformance: {len(cases)} cases, {passed} round-trip through every stage, {listed} listed exceptions "
          f"fail where listed, {len(problems)} problems")
    return problems


def source_fails_too(stage, src, exported, case_dir):
    """Whether the source model fails `stage` as well (so the exporter is not to blame)."""
    if stage == "checker":
        try:
            onnx.checker.check_model(src, full_check=True)
            return False
        except Exception:  # noqa: BLE001
            return True
    if stage == "ort":
        # Stamped with the export's IR version: onnxruntime refuses onnx 1.23's IR 14 stamp outright,
        # which says nothing about the op that fails in the export.
        model = onnx.load(src)
        model.ir_version = onnx.load(exported).ir_version
        restamped = os.path.join(os.path.dirname(exported), "source_restamped.onnx")
        onnx.save(model, restamped)
        try:
            run_ort_case(restamped, load_case_data(case_dir), *read_tol(case_dir))
            return False
        except StageError:
            return True
    return False


def read_tol(case_dir):
    """The case's (rtol, atol); the conformance runner's defaults when it has no tolerance.txt."""
    tol_file = os.path.join(case_dir, "tolerance.txt")
    if os.path.exists(tol_file):
        return tuple(float(x) for x in open(tol_file).read().split())
    return 1e-3, 1e-7


# ---- bench models ------------------------------------------------------------------------------

def cli_outputs(cli, model, feeds, out_names, work):
    """Our `oneflow run` outputs of `model` on `feeds`, in `out_names` order."""
    import re
    in_dir, out_dir = os.path.join(work, "in"), os.path.join(work, "out")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(in_dir)
    os.makedirs(out_dir)
    cmd = [cli, "run", model, "--output-dir", out_dir]
    for name, arr in feeds.items():
        f = os.path.join(in_dir, re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".npy")
        np.save(f, arr)
        cmd += ["--input", f"{name}={f}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"`oneflow run` failed: {proc.stderr[-500:]}")
    return [np.load(os.path.join(out_dir, re.sub(r"[^A-Za-z0-9._-]", "_", n) + ".npy")) for n in out_names]


def bench(args):
    import make_models
    from run_bench import compare
    names = list(make_models.DEFAULT_MODELS) + ["tiny"]
    paths = make_models.ensure(names, args.models_dir, log=lambda m: print(m, file=sys.stderr))
    problems = []
    for external in (False, True):
        kind = "external data" if external else "inline"
        work = os.path.join(args.work, "bench_external" if external else "bench_inline")
        shutil.rmtree(work, ignore_errors=True)
        jobs = [(paths[n], os.path.join(work, n + ".onnx")) for n in names]
        exported = run_driver(args.driver, jobs, args.work, external=external)
        for name, (src, dst) in zip(names, jobs):
            try:
                if exported[src]:
                    raise StageError("export", exported[src])
                data_files = glob.glob(dst + ".*.data")
                big = any(numpy_helper.to_array(t).nbytes >= 1024 for t in onnx.load(src).graph.initializer)
                if external and big and len(data_files) != 1:
                    raise StageError("export", f"expected one external data file next to it, found {data_files}")
                if (not external or not big) and data_files:
                    raise StageError("export", f"unexpected external data {data_files}")
                onnx.checker.check_model(dst, full_check=True)
                compare_structure(onnx.load(src), onnx.load(dst))
                ref_sess, exp_sess = ort_session(src), ort_session(dst)
                out_names = [o.name for o in ref_sess.get_outputs()]
                for batch in make_models.MODELS[name]["batches"]:
                    feeds = make_models.make_inputs(name, batch)
                    got = exp_sess.run(out_names, feeds)
                    for ref_name, ref in (("onnxruntime on the original", ref_sess.run(out_names, feeds)),
                                          ("`oneflow run` on the original",
                                           cli_outputs(args.cli, src, feeds, out_names, os.path.join(work, "run")))):
                        ok, err, tol, detail = compare(got, ref)
                        if not ok:
                            raise StageError("ort", f"batch {batch} vs {ref_name}: {detail}")
                print(f"  bench {name:<12} {kind:<13} PASS")
            except (StageError, onnx.checker.ValidationError, RuntimeError) as err:
                problems.append(f"bench {name} ({kind}): {err}")
                print(f"  bench {name:<12} {kind:<13} FAIL {err}")
    return problems


def big_model(args):
    """Opt-in (--big): a model with 3.2 GB of weights (two 1.6 GB initializers, so the second lies past
    2 GB in the data file) is exported (external data, automatically) and onnxruntime gathers from it."""
    from onnx import TensorProto, helper
    work = os.path.join(args.work, "big")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    n = 400_000_000
    idx = np.array([0, 1, 12345, n // 2, n - 2, n - 1], dtype=np.int64)
    weights = {"W1": np.arange(n, dtype=np.float32) * 0.5, "W2": -np.arange(n, dtype=np.float32)}
    expected = [w[idx] for w in weights.values()]
    graph = helper.make_graph(
        [helper.make_node("Gather", [w, "idx"], [w + "_rows"]) for w in weights],
        "big", [helper.make_tensor_value_info("idx", TensorProto.INT64, [len(idx)])],
        [helper.make_tensor_value_info(w + "_rows", TensorProto.FLOAT, [len(idx)]) for w in weights],
        [numpy_helper.from_array(w, name) for name, w in weights.items()])
    del weights
    src = os.path.join(work, "src.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), src,
              save_as_external_data=True, location="src.onnx.data")
    del graph
    dst = os.path.join(work, "exported.onnx")
    err = run_driver(args.driver, [(src, dst)], work)[src]
    if err:
        return [f"big model: export failed: {err}"]
    data_files = glob.glob(dst + ".*.data")
    if len(data_files) != 1 or os.path.getsize(data_files[0]) < 2 * n * 4:
        return [f"big model: expected one data file of >= {2 * n * 4} bytes, found {data_files}"]
    got = ort_session(dst).run(None, {"idx": idx})
    problems = [f"big model: output {k} is {g}, expected {e}" for k, (g, e) in enumerate(zip(got, expected))
                if not np.array_equal(g, e)]
    print(f"  big model (3.2 GB of weights, external data): {'FAIL' if problems else 'PASS'}")
    shutil.rmtree(work, ignore_errors=True)
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--driver", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--node-tests", required=True)
    ap.add_argument("--expected", required=True)
    ap.add_argument("--exceptions", required=True)
    ap.add_argument("--models-dir", required=True)
    ap.add_argument("--work", default=None)
    ap.add_argument("--filter", default="", help="only conformance cases containing this")
    ap.add_argument("--skip-bench", action="store_true", help="conformance cases only (for quick local runs)")
    ap.add_argument("--big", action="store_true", help="also export a 3.2 GB model (writes ~7 GB; opt-in)")
    ap.add_argument("--via-native", action="store_true",
                    help="export each model after a trip through the native format (ONNX -> .ofm -> ONNX)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    global VIA_NATIVE
    VIA_NATIVE = args.via_native
    args.work = args.work or tempfile.mkdtemp(prefix="oneflow_export_")
    os.makedirs(args.work, exist_ok=True)
    problems = conformance(args, read_exceptions(args.exceptions))
    if not args.skip_bench:
        problems += bench(args)
    if args.big:
        problems += big_model(args)
    for p in problems:
        print("FAIL", p)
    print("all exports round-trip" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
