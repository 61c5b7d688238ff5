#!/usr/bin/env python3
"""Checks the module layers of src/ against the CMake target graph (docs/architecture.md, "Modules").

    python3 tests/layering/check_layers.py SRC_DIR BUILD_DIR [ARCHITECTURE_MD]

The module graph is read back from CMake itself (`cmake --graphviz` over BUILD_DIR): each top-level
folder of src/ is a target `oneflow_<folder>` (src/CMakeLists.txt), and its links are the modules
it may use. The build already fails on a wrong-way include in a compiled file (each module's include
path holds only the modules below it); this check adds what a build cannot see:
  - every folder of src/ has its target, and the module graph has no cycle;
  - no file (headers included by nothing in this build too, CUDA sources in a CPU-only build)
    includes a module its module does not reach through its links, or another module's private
    `*_internal.h`;
  - the "Modules" table of ARCHITECTURE_MD lists, for each module, exactly the links CMake has;
  - train and c_api call no CUDA runtime function: they go through the device layer.
Prints the layer order; exits 1 on any violation."""
import os
import re
import subprocess
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
DOT_NODE = re.compile(r'^\s*"(node\d+)"\s*\[\s*label\s*=\s*"([^"]+)"')
DOT_EDGE = re.compile(r'^\s*"(node\d+)"\s*->\s*"(node\d+)"')
CUDA_RUNTIME_CALL = re.compile(r'(?<![\w:.>])cuda[A-Z]\w*\s*\(')
NO_RUNTIME_CALLS = {"train", "c_api"}
DOC_ROW = re.compile(r'^\|\s*`src/([a-z_]+)`\s*\|.*\|\s*([^|]*?)\s*\|\s*$')


def module_graph(build, modules):
    """Direct module -> module links from `cmake --graphviz` of the configured build."""
    with tempfile.TemporaryDirectory() as tmp:
        dot = os.path.join(tmp, "targets.dot")
        subprocess.run(["cmake", f"--graphviz={dot}", build], check=True, stdout=subprocess.DEVNULL)
        labels, edges = {}, []
        with open(dot, encoding="utf-8") as f:
            for line in f:
                if m := DOT_NODE.match(line):
                    labels[m.group(1)] = m.group(2)
                elif m := DOT_EDGE.match(line):
                    edges.append((m.group(1), m.group(2)))
    targets = {f"oneflow_{m}": m for m in modules}
    found = {targets[label] for label in labels.values() if label in targets}
    links = {m: set() for m in found}
    for a, b in edges:
        ma, mb = targets.get(labels.get(a, "")), targets.get(labels.get(b, ""))
        if ma and mb:
            links[ma].add(mb)
    return links


def layer_order(links):
    """Modules lowest first, or None when the graph has a cycle."""
    order, done, visiting = [], set(), set()

    def visit(m):
        if m in done:
            return True
        if m in visiting:
            return False
        visiting.add(m)
        if not all(visit(d) for d in sorted(links[m])):
            return False
        visiting.discard(m)
        done.add(m)
        order.append(m)
        return True

    return order if all(visit(m) for m in sorted(links)) else None


def reach(links, m):
    seen, todo = set(), list(links[m])
    while todo:
        d = todo.pop()
        if d not in seen:
            seen.add(d)
            todo.extend(links[d])
    return seen


def include_violations(src, module, allowed, modules):
    out = []
    for root, _, files in os.walk(os.path.join(src, module)):
        for name in sorted(files):
            if not name.endswith((".h", ".cc", ".cu", ".cuh", ".c")):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, os.path.dirname(src))
            with open(path, encoding="utf-8", errors="replace") as f:
                for lineno, line in enumerate(f, 1):
                    if module in NO_RUNTIME_CALLS and not line.lstrip().startswith("//"):
                        if call := CUDA_RUNTIME_CALL.search(line):
                            out.append(f"{rel}:{lineno}: {module} calls the CUDA runtime ({call.group(0).rstrip('( ')}); "
                                       f"use the device layer (src/device)")
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    header = m.group(1)
                    other = header.split("/", 1)[0]
                    if "/" not in header or other not in modules or other == module:
                        continue  # its own module, or generated headers (onnx.pb.h, ofm_generated.h)
                    if header.endswith("_internal.h"):
                        out.append(f"{rel}:{lineno}: includes {header}, private to {other}")
                    elif other not in allowed:
                        out.append(f"{rel}:{lineno}: {module} includes {header}, but oneflow_{module} does not "
                                   f"link oneflow_{other} (src/CMakeLists.txt): {other} is not below it")
    return out


def doc_violations(doc, links):
    rows = {}
    with open(doc, encoding="utf-8") as f:
        for line in f:
            if m := DOC_ROW.match(line):
                rows[m.group(1)] = {x.strip(" `") for x in m.group(2).split(",") if x.strip(" `—-")}
    out = []
    for m in sorted(links):
        want = ", ".join(sorted(links[m])) or "—"
        if m not in rows:
            out.append(f"{doc}: no row `src/{m}` in the Modules table (its links: {want})")
        elif rows[m] != links[m]:
            out.append(f"{doc}: row `src/{m}` lists links {', '.join(sorted(rows[m])) or '—'}; CMake has {want}")
    return out


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    src, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    doc = sys.argv[3] if len(sys.argv) > 3 else None
    modules = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    links = module_graph(build, modules)
    violations = [f"src/{m}: a module without a target oneflow_{m} in src/CMakeLists.txt"
                  for m in modules if m not in links]
    order = layer_order(links)
    if order is None:
        violations.append("the module graph has a cycle: " +
                          "; ".join(f"{m} -> {', '.join(sorted(links[m]))}" for m in sorted(links)))
        order = sorted(links)
    for m in order:
        print(f"{m:10s} links {', '.join(sorted(links[m])) or '-'}")
        violations += include_violations(src, m, reach(links, m), set(modules))
    if doc:
        violations += doc_violations(doc, links)
    if violations:
        print(f"\n{len(violations)} layering violation(s):")
        for v in violations:
            print("  " + v)
        return 1
    print("\nlayer order: " + " < ".join(order) + "\nno layering violations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
