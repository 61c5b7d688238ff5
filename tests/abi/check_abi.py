#!/usr/bin/env python3
"""The C ABI check: the built liboneflow.so against the committed baseline (docs/abi.md).

abidw (Debian's abigail-tools) writes the library's ABI as XML: every exported function and the
types of include/oneflow_c.h it uses, read from the debug information of the C ABI's wrappers
(src/CMakeLists.txt builds them with -g). abidiff then compares it with tests/abi/oneflow_abi.xml.
Any removed function or changed function, struct, enum or typedef fails; an added function is
allowed (the ABI only grows). An intended addition is recorded with --update, in the same commit
that bumps ONEFLOW_API_VERSION and tags the declarations.

    python3 tests/abi/check_abi.py LIB [--baseline tests/abi/oneflow_abi.xml] [--update]

Exit status: 0 compatible, 1 an ABI break (abidiff's report printed), 77 abigail-tools missing.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HEADERS = os.path.join(ROOT, "include")

# abidiff's exit status is a bit field (abidiff(1)): 1 error, 2 usage error, 4 an ABI change,
# 8 an incompatible ABI change.
ABIDIFF_ERROR, ABIDIFF_USAGE, ABIDIFF_CHANGE, ABIDIFF_INCOMPATIBLE = 1, 2, 4, 8


def dump(lib, out):
    """The library's ABI as abidw XML: the exported functions and the public header's types only, with
    no paths, source locations or DT_NEEDED entries (so clones and CUDA/CPU builds compare equal)."""
    subprocess.run(["abidw", "--headers-dir", HEADERS, "--exported-interfaces-only", "--drop-private-types",
                    "--no-show-locs", "--no-elf-needed", "--no-corpus-path", "--no-comp-dir-path",
                    "--drop-undefined-syms", "--type-id-style", "hash", "--out-file", out, lib], check=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lib", help="the built liboneflow.so")
    ap.add_argument("--baseline", default=os.path.join(HERE, "oneflow_abi.xml"))
    ap.add_argument("--update", action="store_true", help="write the library's ABI as the new baseline")
    args = ap.parse_args(argv)
    if shutil.which("abidw") is None or shutil.which("abidiff") is None:
        print("SKIP: abidw/abidiff not installed (Debian: abigail-tools)")
        return 77
    with tempfile.TemporaryDirectory(prefix="oneflow_abi_") as tmp:
        current = os.path.join(tmp, "current.xml")
        dump(args.lib, current)
        with open(current) as f:
            if "<function-decl" not in f.read():
                print(f"FAIL: abidw found no function types in {args.lib}: it lacks the C ABI's debug information")
                return 1
        if args.update:
            shutil.copyfile(current, args.baseline)
            print(f"wrote {args.baseline}")
            return 0
        proc = subprocess.run(["abidiff", "--headers-dir1", HEADERS, "--headers-dir2", HEADERS, "--no-added-syms",
                               args.baseline, current], capture_output=True, text=True)
        report = (proc.stdout + proc.stderr).strip()
        if proc.returncode & (ABIDIFF_ERROR | ABIDIFF_USAGE):
            print(f"FAIL: abidiff could not compare (exit {proc.returncode}):\n{report}")
            return 1
        if proc.returncode & (ABIDIFF_CHANGE | ABIDIFF_INCOMPATIBLE):
            print("FAIL: the C ABI changed against tests/abi/oneflow_abi.xml (only additions are allowed; "
                  "see docs/abi.md):\n" + report)
            return 1
        print(f"the C ABI of {args.lib} is compatible with {os.path.relpath(args.baseline, ROOT)}"
              + (f"\n{report}" if report else ""))
        return 0


if __name__ == "__main__":
    sys.exit(main())
