"""Builds the `oneflow._oneflow` extension against include/oneflow_c.h and bundles what CMake built (the
package never builds the engine itself): liboneflow.so, the `oneflow` CLI and every shared library they
need that a Linux machine may lack (tools/bundle_natives.py), all in oneflow/_native/ with run path
$ORIGIN, so the wheel (`pip wheel ./bindings/python`) runs on a machine without our build dependencies.

Where things are found (environment variables override the repository layout):
  ONEFLOW_LIBRARY      liboneflow.so to bundle      default: <repo>/build/liboneflow.so
  ONEFLOW_CLI          the `oneflow` CLI to bundle  default: `oneflow` beside the library
  ONEFLOW_INCLUDE_DIR  directory with oneflow_c.h   default: <repo>/include
The version is the one CMakeLists.txt declares, so the package and the library never disagree.
The distribution is `oneflow-engine` (PyPI's `oneflow` is another project); the import name is `oneflow`
(docs/install.md, "Python wheel").
"""
import importlib.util
import os
import re
import shutil
from pathlib import Path

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def _path_from_env(var, default):
    value = os.environ.get(var)
    return Path(value).resolve() if value else default


LIBRARY = _path_from_env("ONEFLOW_LIBRARY", REPO / "build" / "liboneflow.so")
INCLUDE_DIR = _path_from_env("ONEFLOW_INCLUDE_DIR", REPO / "include")
CLI = _path_from_env("ONEFLOW_CLI", LIBRARY.parent / "oneflow")


def _bundler():
    """tools/bundle_natives.py, the copier the Java jar uses too."""
    spec = importlib.util.spec_from_file_location("bundle_natives", REPO / "tools" / "bundle_natives.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _version():
    cmake = REPO / "CMakeLists.txt"
    match = re.search(r"project\(\s*oneflow\s+VERSION\s+([0-9.]+)", cmake.read_text()) if cmake.exists() else None
    if match is None:
        raise RuntimeError(f"cannot read the project version from {cmake}")
    return match.group(1)


class BuildExtBundlingLibrary(build_ext):
    """Compiles the extension, then fills oneflow/_native/: liboneflow.so, the CLI and their dependencies."""

    def run(self):
        if not (INCLUDE_DIR / "oneflow_c.h").exists():
            raise RuntimeError(f"oneflow_c.h not found in {INCLUDE_DIR}; set ONEFLOW_INCLUDE_DIR")
        if not LIBRARY.exists():
            raise RuntimeError(
                f"{LIBRARY} not found: build the library first "
                "(cmake -S . -B build -G Ninja && ninja -C build liboneflow) or set ONEFLOW_LIBRARY")
        if not CLI.exists():
            raise RuntimeError(f"{CLI} not found: build the CLI first (ninja -C build oneflow_cli) or set ONEFLOW_CLI")
        super().run()
        # Beside the extension, wherever this build puts it (a wheel's tree or, editable, src/oneflow).
        native_dir = Path(self.get_ext_fullpath("oneflow._oneflow")).parent / "_native"
        shutil.rmtree(native_dir, ignore_errors=True)  # nothing stale from an earlier build
        bundler = _bundler()
        try:
            carried = bundler.bundle([(str(LIBRARY.resolve()), "liboneflow.so"), (str(CLI.resolve()), "oneflow")],
                                     str(native_dir))
        except bundler.BundleError as e:
            raise RuntimeError(f"bundling the native libraries: {e}") from e
        (native_dir / "MANIFEST").write_text("".join(name + "\n" for name in carried))


extension = Extension(
    "oneflow._oneflow",
    sources=[str(p.relative_to(HERE)) for p in sorted((HERE / "ext").glob("*.c"))],
    include_dirs=[str(INCLUDE_DIR), numpy.get_include()],
    libraries=["dl"],
    extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers",
                        "-fvisibility=hidden"],
    # The C ABI header too: its structs' layout is compiled in (a stale build would write past them).
    depends=[str(p.relative_to(HERE)) for p in (HERE / "ext").glob("*.h")] + [str(INCLUDE_DIR / "oneflow_c.h")],
)

setup(version=_version(), ext_modules=[extension], cmdclass={"build_ext": BuildExtBundlingLibrary})
