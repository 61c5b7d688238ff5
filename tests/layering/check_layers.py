#!/usr/bin/env python3
"""Fails when a module of src/ includes a header of a module it may not use (docs/architecture.md,
"Modules"): the layer order the folders promise, kept by a test rather than by convention.

    python3 tests/layering/check_layers.py [SRC_DIR]

Each top-level folder of src/ is a module; ALLOWED lists, for each, the modules its files may
include (its own always). An include of a module not listed, or a file in an unknown module, is
reported as `file:line: <module> includes <header> (<other module>), which is not below it`.
Exits 1 on any violation, 0 otherwise; prints the module graph either way."""
import os
import re
import sys

# Lowest first. A module may include the ones listed, never one above it.
ALLOWED = {
    "base": [],
    "device": ["base"],
    "comm": ["base", "device"],
    "graph": ["base"],
    "serialize": ["base", "graph"],
    "kernels": ["base", "device", "comm", "graph"],
    "plan": ["base", "graph", "kernels"],
    "engine": ["base", "device", "comm", "graph", "serialize", "plan", "kernels"],
    "train": ["base", "device", "comm", "graph", "serialize", "plan", "kernels", "engine"],
    "c_api": ["base", "device", "comm", "graph", "serialize", "plan", "kernels", "engine", "train"],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def main():
    src = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "src"))
    modules = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    violations, edges = [], {}
    for module in modules:
        if module not in ALLOWED:
            violations.append(f"src/{module}: a module missing from ALLOWED in {__file__}: place it in the layer order")
            continue
        for root, _, files in os.walk(os.path.join(src, module)):
            for name in sorted(files):
                if not name.endswith((".h", ".cc", ".cu", ".cuh", ".c")):
                    continue
                path = os.path.join(root, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        header = m.group(1)
                        other = header.split("/", 1)[0]
                        if header.endswith("_internal.h") and other != module and other in ALLOWED:
                            rel = os.path.relpath(path, os.path.dirname(src))
                            violations.append(f"{rel}:{lineno}: includes {header}, private to {other}")
                        if "/" not in header or other not in ALLOWED or other == module:
                            continue  # same module, generated headers, or files beside the includer
                        edges.setdefault(module, set()).add(other)
                        if other not in ALLOWED[module]:
                            rel = os.path.relpath(path, os.path.dirname(src))
                            violations.append(f"{rel}:{lineno}: {module} includes {header} ({other}), which is not below it")
    for module in ALLOWED:
        print(f"{module:10s} -> {', '.join(sorted(edges.get(module, []))) or '-'}")
    if violations:
        print(f"\n{len(violations)} layering violation(s):")
        for v in violations:
            print("  " + v)
        return 1
    print("\nno layering violations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
