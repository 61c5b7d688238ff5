#!/usr/bin/env python3
"""Copies native programs and libraries together with the shared libraries they need that a Linux
machine may lack, so the copy runs elsewhere (the Python wheel, the Java jar; docs/install.md, "What the
packages carry").

    bundle_natives.py --dest DIR [--manifest FILE] FILE[=NAME] ...

Every FILE is copied into DIR (as NAME when given); then every library that `ldd` resolves for them and
that is not "system" (below) is copied into DIR under its SONAME, and each copy's run path is set to
$ORIGIN (patchelf) so that each finds the others in DIR whatever the loader's search path; in a CUDA
build it is followed by the folders where this machine has the CUDA libraries that are not carried, as
the build tree's library has them (a machine without those folders finds them through LD_LIBRARY_PATH or
ldconfig). A library that `ldd` cannot resolve here is an error naming it. --manifest writes the copied file names, one a
line, dependencies before what needs them (a valid load order).

System, never carried: glibc's libraries (libc, libm, libdl, librt, libpthread, the loader), the C++
runtime (libstdc++, libgcc_s; every process that can load us has them: python3, the JVM), the NVIDIA
driver's libraries (libcuda, libnvidia-*; they must match the kernel driver). Not carried either, found
on the target: cuBLAS/cuBLASLt, cuDNN and NCCL of a CUDA build (each 200-800 MB; the CUDA toolkit or
the nvidia-* Python wheels bring them). The CUDA runtime, libcudart, is carried (under 1 MB).
Used by bindings/python/setup.py (imported) and bindings/java/CMakeLists.txt (run).
"""
import argparse
import os
import re
import shutil
import stat
import subprocess
import sys

SYSTEM = re.compile(r"^(linux-vdso|linux-gate|ld-linux[^/]*|libc|libm|libdl|librt|libpthread|libutil|libresolv|"
                    r"libstdc\+\+|libgcc_s|libcuda|libnvidia-[^/]*)\.so")
FROM_TARGET = re.compile(r"^(libcublas|libcublasLt|libcudnn[a-z_]*|libnccl)\.so")


class BundleError(RuntimeError):
    pass


def is_carried(name):
    return not SYSTEM.match(name) and not FROM_TARGET.match(name)


def _run(cmd, **kw):
    try:
        return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout
    except FileNotFoundError as e:
        raise BundleError(f"{cmd[0]} not found: it is needed to bundle native libraries (scripts/setup.sh installs it)") from e
    except subprocess.CalledProcessError as e:
        raise BundleError(f"{' '.join(cmd)} failed: {e.stderr.strip()}") from e


def ldd(path, search_dirs=()):
    """{soname: resolved path or None} of everything `path` loads, transitively, as ldd sees it here."""
    env = dict(os.environ)
    if search_dirs:
        env["LD_LIBRARY_PATH"] = os.pathsep.join([*search_dirs, env.get("LD_LIBRARY_PATH", "")]).rstrip(os.pathsep)
    found = {}
    for line in _run(["ldd", path], env=env).splitlines():
        m = re.match(r"\s*(\S+)\s+=>\s+(not found|\S+)", line)
        if m:
            found[m.group(1)] = None if m.group(2) == "not found" else m.group(2)
    return found


def needed(path):
    """The DT_NEEDED entries of `path`."""
    return [n for n in _run(["patchelf", "--print-needed", path]).split() if n]


def _copy(src, dst):
    shutil.copyfile(src, dst)  # follows symlinks: the copy is the real file under the wanted name
    os.chmod(dst, os.stat(dst).st_mode | stat.S_IWUSR | stat.S_IRUSR | stat.S_IXUSR)


def bundle(files, dest):
    """files: [(source path, name in dest)]. Returns the names copied into dest, in load order."""
    os.makedirs(dest, exist_ok=True)
    names = {}
    for src, name in files:
        if not os.path.isfile(src):
            raise BundleError(f"{src} does not exist")
        _copy(src, os.path.join(dest, name))
        names[name] = src
    # Resolve from the sources' own folders first (a build tree), so the sources' siblings are seen.
    search = sorted({os.path.dirname(os.path.abspath(s)) for s, _ in files})
    deps = {}
    target_dirs = set()  # where this machine has the CUDA libraries left to the target (kept as a fallback)
    for src, _ in files:
        for so, path in ldd(src, search).items():
            if FROM_TARGET.match(so) and path:
                target_dirs.add(os.path.dirname(path))
            if so in names or not is_carried(so):
                continue
            if path is None:
                raise BundleError(f"{src} needs {so}, which is not found on this machine")
            deps.setdefault(so, path)
    for so, path in sorted(deps.items()):
        _copy(path, os.path.join(dest, so))
        names[so] = path
    rpath = ":".join(["$ORIGIN", *sorted(target_dirs)])
    for name in names:
        _run(["patchelf", "--set-rpath", rpath, os.path.join(dest, name)])
    return load_order(dest, list(names))


def load_order(dest, names):
    """names sorted so that every library comes after the bundled libraries it needs."""
    graph = {n: [d for d in needed(os.path.join(dest, n)) if d in names and d != n] for n in names}
    order, state = [], {}

    def visit(n):
        if state.get(n) == 2:
            return
        if state.get(n) == 1:  # a cycle: break it here (the loader copes, RUNPATH finds each)
            return
        state[n] = 1
        for d in graph[n]:
            visit(d)
        state[n] = 2
        order.append(n)

    for n in sorted(names):
        visit(n)
    return order


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dest", required=True)
    ap.add_argument("--manifest")
    ap.add_argument("files", nargs="+", metavar="FILE[=NAME]")
    args = ap.parse_args(argv)
    files = []
    for f in args.files:
        src, _, name = f.partition("=")
        files.append((src, name or os.path.basename(src)))
    try:
        order = bundle(files, args.dest)
    except BundleError as e:
        print(f"bundle_natives: {e}", file=sys.stderr)
        return 1
    if args.manifest:
        with open(args.manifest, "w") as f:
            f.write("".join(n + "\n" for n in order))
    return 0


if __name__ == "__main__":
    sys.exit(main())
