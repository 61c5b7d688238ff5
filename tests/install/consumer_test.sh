#!/usr/bin/env bash
# What a user of an installed OneFlow gets, checked from outside this tree (docs/install.md). Run by
# ctest (tests/install/CMakeLists.txt, label "install"), one step per test:
#
#   install    cmake --install of the build tree into a fresh prefix (the fixture of the steps below)
#   layout     the prefix: header, versioned library (SONAME, symlinks), CLI running from the prefix, CMake
#              package, oneflow.pc, docs, Go sources; no run path into the build tree
#   cmake      examples/c built by a separate CMake project with find_package(OneFlow CONFIG), then run
#   pkgconfig  examples/c built by a plain compiler line with `pkg-config --cflags --libs oneflow`, then run
#   go         a Go program (bindings/go/examples/infer) built against the prefix with only PKG_CONFIG_PATH
#   wheel      `pip wheel ./bindings/python`, installed with numpy alone in a fresh venv: inference, the
#              CLI, and a missing library named in the error
#   maven      the installed jar and pom put into a local Maven repository, a program compiled and run
#              against it with only the JDK, and a missing library named in the error
#
# Every step builds in a fresh temporary directory outside the tree (kept, and named, on failure). A step
# whose tool is missing prints "SKIP: <why>" and exits 77 (ctest: skipped); nothing else skips.
# Environment (set by tests/install/CMakeLists.txt): ONEFLOW_SOURCE_DIR, ONEFLOW_BINARY_DIR, ONEFLOW_PREFIX,
# ONEFLOW_VERSION, ONEFLOW_EXAMPLE_DIR (model.onnx, expected.f32), ONEFLOW_DIGITS_DIR, CMAKE, CMAKE_GENERATOR,
# CC, PYTHON; per step ONEFLOW_LIBRARY and ONEFLOW_CLI (wheel), GO and PKG_CONFIG (go, pkgconfig), JAVA, JAVAC
# and JAR (maven).
set -euo pipefail
step=${1:?usage: consumer_test.sh install|layout|cmake|pkgconfig|go|wheel|maven}
SRC=${ONEFLOW_SOURCE_DIR:?} BIN=${ONEFLOW_BINARY_DIR:?} PREFIX=${ONEFLOW_PREFIX:?} VERSION=${ONEFLOW_VERSION:?}
MODEL=${ONEFLOW_EXAMPLE_DIR:-}/model.onnx EXPECTED=${ONEFLOW_EXAMPLE_DIR:-}/expected.f32
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
# A library no machine has, added to copies of our binaries to check the error names what is missing.
MISSING=liboneflow_missing_test_dependency.so.1

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
have() { [ -n "$1" ] && command -v "$1" > /dev/null 2>&1; }
# expect_in TEXT WHAT: fails unless the last command's output ($out) contains TEXT.
expect_in() { grep -qF -- "$1" <<< "$out" || { printf '%s\n' "$out" >&2; fail "$2: no '$1' in the output above"; }; }

work=$(mktemp -d "${TMPDIR:-/tmp}/oneflow-consumer-$step.XXXXXX")
cleanup() {
  local rc=$?
  if [ "$rc" = 0 ] || [ "$rc" = 77 ]; then rm -rf "$work"; else echo "(work directory kept: $work)" >&2; fi
}
trap cleanup EXIT
cd "$work"

# Where the prefix keeps the library and oneflow.pc (GNUInstallDirs: lib, lib64 or lib/<multiarch>).
prefix_libdir() {
  local pc
  pc=$(find "$PREFIX" -path '*/pkgconfig/oneflow.pc' | head -n 1)
  [ -n "$pc" ] || fail "no oneflow.pc under $PREFIX (did the install step run?)"
  dirname "$(dirname "$pc")"
}
needs_models() { [ -f "$MODEL" ] && [ -f "$EXPECTED" ] || fail "no $MODEL / $EXPECTED (the example_model fixture)"; }

case "$step" in
install)
  rm -rf "$PREFIX"
  "$CMAKE" --install "$BIN" --prefix "$PREFIX" > "$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
  echo "installed $(grep -c '^-- Installing' "$work/install.log") files into $PREFIX"
  ;;

layout)
  libdir=$(prefix_libdir)
  needs_models
  [ -f "$PREFIX/include/oneflow_c.h" ] || fail "no include/oneflow_c.h"
  cmp -s "$PREFIX/include/oneflow_c.h" "$SRC/include/oneflow_c.h" || fail "the installed header differs from include/oneflow_c.h"
  major=${VERSION%%.*}
  real="$libdir/liboneflow.so.$VERSION"
  [ -f "$real" ] && [ ! -L "$real" ] || fail "no regular file $real"
  [ "$(readlink "$libdir/liboneflow.so.$major")" = "liboneflow.so.$VERSION" ] || fail "liboneflow.so.$major is not a link to liboneflow.so.$VERSION"
  [ "$(readlink "$libdir/liboneflow.so")" = "liboneflow.so.$major" ] || fail "liboneflow.so is not a link to liboneflow.so.$major"
  out=$(readelf -d "$real"); expect_in "Library soname: [liboneflow.so.$major]" "SONAME of $real"
  for f in "$real" "$PREFIX/bin/oneflow"; do
    if readelf -d "$f" | grep -E 'R(UN)?PATH' | grep -qF "$BIN"; then fail "$f has a run path into the build tree $BIN"; fi
  done
  # The CLI runs from the prefix with a bare environment.
  out=$(env -i PATH=/usr/bin:/bin "$PREFIX/bin/oneflow" --help 2>&1) || fail "oneflow --help: $out"
  expect_in "usage: oneflow" "$PREFIX/bin/oneflow --help"
  out=$(env -i PATH=/usr/bin:/bin "$PREFIX/bin/oneflow" info "$MODEL" 2>&1) || fail "oneflow info: $out"
  expect_in "graph: demo_mlp" "$PREFIX/bin/oneflow info"
  if [ "${ONEFLOW_CMAKE_PACKAGE:-1}" != 0 ]; then
    for f in OneFlowConfig.cmake OneFlowConfigVersion.cmake OneFlowTargets.cmake; do
      [ -f "$libdir/cmake/OneFlow/$f" ] || fail "no $libdir/cmake/OneFlow/$f"
    done
  fi
  [ -f "$libdir/pkgconfig/oneflow.pc" ] || fail "no $libdir/pkgconfig/oneflow.pc"
  grep -qx "prefix=$PREFIX" "$libdir/pkgconfig/oneflow.pc" || fail "oneflow.pc does not say prefix=$PREFIX"
  for f in README.md install.md architecture.md; do
    [ -f "$PREFIX/share/doc/oneflow/$f" ] || fail "no share/doc/oneflow/$f"
  done
  [ -f "$PREFIX/share/gocode/src/github.com/oneflow-engine/oneflow/bindings/go/go.mod" ] || fail "no Go module sources"
  echo "layout of $PREFIX is right; $PREFIX/bin/oneflow runs from the prefix"
  ;;

cmake)
  needs_models
  [ -d "${ONEFLOW_DIGITS_DIR:-}" ] || fail "no digits data (the digits fixture)"
  mkdir -p src
  cp "$SRC/tests/install/consumer/CMakeLists.txt" "$SRC/examples/c/infer.c" "$SRC/examples/c/train_digits.c" src/
  gen=()
  [ -n "${CMAKE_GENERATOR:-}" ] && gen=(-G "$CMAKE_GENERATOR")
  "$CMAKE" -S src -B build "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PREFIX" \
    -DCMAKE_C_COMPILER="$CC" > configure.log 2>&1 || { cat configure.log; fail "configuring the consumer project"; }
  grep "OneFlow $VERSION from" configure.log
  "$CMAKE" --build build > build.log 2>&1 || { cat build.log; fail "building the consumer project"; }
  # It must link the installed library, not the build tree's (CMake gives it a run path to the prefix).
  out=$(ldd build/infer); expect_in "$(prefix_libdir)/liboneflow.so.${VERSION%%.*}" "ldd build/infer"
  out=$(build/infer "$MODEL" "$EXPECTED" 2>&1) || { echo "$out"; fail "infer"; }
  expect_in "output matches" "infer (CMake)"
  echo "$out" | tail -n 1
  out=$(build/train_digits "$ONEFLOW_DIGITS_DIR" "$ONEFLOW_DIGITS_DIR/digits_mlp.onnx" train --epochs 2 \
    --min-accuracy 80 --threads 2 2>&1) || { echo "$out"; fail "train_digits"; }
  echo "$out" | tail -n 2
  # An incompatible version is refused (OneFlowConfigVersion.cmake: SameMajorVersion).
  if "$CMAKE" -S src -B build-wrong "${gen[@]}" -DCMAKE_PREFIX_PATH="$PREFIX" -DONEFLOW_WANT=$((${VERSION%%.*} + 1)).0 \
    -DCMAKE_C_COMPILER="$CC" > wrong.log 2>&1; then
    fail "find_package(OneFlow $((${VERSION%%.*} + 1)).0) accepted version $VERSION"
  fi
  out=$(cat wrong.log); expect_in "compatible with requested version" "find_package of an incompatible version"
  echo "find_package(OneFlow $((${VERSION%%.*} + 1)).0) is refused, as it should be"
  ;;

pkgconfig)
  have "$PKG_CONFIG" || skip "no pkg-config (install pkg-config)"
  needs_models
  libdir=$(prefix_libdir)
  export PKG_CONFIG_PATH=$libdir/pkgconfig
  [ "$("$PKG_CONFIG" --modversion oneflow)" = "$VERSION" ] || fail "pkg-config --modversion oneflow is not $VERSION"
  [ "$("$PKG_CONFIG" --variable=libdir oneflow)" = "$libdir" ] || fail "pkg-config's libdir is not $libdir"
  [ "$("$PKG_CONFIG" --variable=includedir oneflow)" = "$PREFIX/include" ] || fail "pkg-config's includedir is not $PREFIX/include"
  flags=$("$PKG_CONFIG" --cflags --libs oneflow)
  echo "pkg-config --cflags --libs oneflow: $flags"
  # shellcheck disable=SC2086  # the flags are words
  "$CC" -std=c99 -Wall -Wextra -Werror -O2 -o infer "$SRC/examples/c/infer.c" $flags -lm
  # shellcheck disable=SC2086
  "$CC" -std=c99 -Wall -Wextra -Werror -O2 -o train_digits "$SRC/examples/c/train_digits.c" $flags -lm
  # No run path (pkg-config gives none): the loader finds the prefix through LD_LIBRARY_PATH.
  out=$(LD_LIBRARY_PATH=$libdir ldd ./infer); expect_in "$libdir/liboneflow.so.${VERSION%%.*}" "ldd ./infer"
  out=$(LD_LIBRARY_PATH=$libdir ./infer "$MODEL" "$EXPECTED" 2>&1) || { echo "$out"; fail "infer"; }
  expect_in "output matches" "infer (pkg-config)"
  echo "$out" | tail -n 1
  ;;

go)
  have "${GO:-}" || skip "no Go toolchain (install golang-go)"
  have "$PKG_CONFIG" || skip "no pkg-config, which cgo needs (install pkg-config)"
  needs_models
  libdir=$(prefix_libdir)
  module=github.com/oneflow-engine/oneflow/bindings/go
  modsrc=$PREFIX/share/gocode/src/$module
  [ -f "$modsrc/go.mod" ] || fail "no Go module at $modsrc"
  mkdir -p app
  cp "$SRC/bindings/go/examples/infer/main.go" app/
  # The module as a user writes it: the binding required by its path, resolved offline to the installed
  # copy by a replace directive (docs/install.md, "Go").
  cat > app/go.mod <<EOF
module example.com/oneflow-consumer

go 1.19

require $module v$VERSION

replace $module => $modsrc
EOF
  # Only PKG_CONFIG_PATH says where OneFlow is: no CGO_CFLAGS / CGO_LDFLAGS.
  (cd app && env -u CGO_CFLAGS -u CGO_LDFLAGS -u CGO_CPPFLAGS PKG_CONFIG="$PKG_CONFIG" PKG_CONFIG_PATH="$libdir/pkgconfig" \
     CGO_ENABLED=1 CC="$CC" GOFLAGS=-mod=mod GOPROXY=off GOSUMDB=off GOTOOLCHAIN=local GO111MODULE=on \
     GOCACHE="${ONEFLOW_GOCACHE:-$work/gocache}" GOPATH="$work/gopath" "$GO" build -o ../infer .) ||
    fail "go build against $PREFIX"
  out=$(LD_LIBRARY_PATH=$libdir ldd ./infer); expect_in "$libdir/liboneflow.so.${VERSION%%.*}" "ldd ./infer (Go)"
  out=$(LD_LIBRARY_PATH=$libdir ./infer "$MODEL" "$EXPECTED" 2>&1) || { echo "$out"; fail "the Go program"; }
  expect_in "matches the expected output" "the Go program"
  echo "$out" | tail -n 2
  ;;

wheel)
  have "$PYTHON" || skip "no python3"
  "$PYTHON" -m pip --version > /dev/null 2>&1 || skip "no pip for $PYTHON (install python3-pip)"
  "$PYTHON" -c "import ensurepip, venv" 2> /dev/null || skip "no venv/ensurepip for $PYTHON (install python3-venv)"
  have patchelf || skip "no patchelf, which the wheel's build needs (install patchelf)"
  needs_models
  # The wheel, from this build's library and CLI. --no-build-isolation: the build's own setuptools and
  # numpy (scripts/setup.sh) instead of downloading them into an isolated environment.
  (cd "$SRC" && ONEFLOW_LIBRARY=${ONEFLOW_LIBRARY:?} ONEFLOW_CLI=${ONEFLOW_CLI:?} "$PYTHON" -m pip wheel --quiet \
     --disable-pip-version-check --no-deps --no-build-isolation -w "$work/dist" ./bindings/python) || fail "pip wheel"
  wheel=$(ls "$work"/dist/oneflow_engine-"$VERSION"-*.whl)
  echo "built $(basename "$wheel") ($(du -m "$wheel" | cut -f1) MB)"
  "$PYTHON" - "$wheel" <<'EOF'
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
for want in ("oneflow/__init__.py", "oneflow/_native/liboneflow.so", "oneflow/_native/oneflow", "oneflow/_native/MANIFEST"):
    if want not in names:
        sys.exit(f"the wheel has no {want}")
ep = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
if not ep or "oneflow = oneflow._cli:main" not in zipfile.ZipFile(sys.argv[1]).read(ep[0]).decode():
    sys.exit("the wheel has no `oneflow` console script")
print(f"the wheel carries {sum(n.startswith('oneflow/_native/') for n in names)} native files")
EOF
  # A fresh venv with numpy alone (from PyPI), then the wheel with no index at all.
  "$PYTHON" -m venv "$work/venv"
  vpy=$work/venv/bin/python
  if ! "$vpy" -m pip install --quiet --disable-pip-version-check numpy > pip-numpy.log 2>&1; then
    cat pip-numpy.log
    if ! "$PYTHON" -c "import urllib.request; urllib.request.urlopen('https://pypi.org/simple/numpy/', timeout=20)" 2> /dev/null; then
      skip "numpy cannot be installed into the fresh venv: PyPI is not reachable from this machine"
    fi
    fail "pip install numpy into the fresh venv"
  fi
  "$vpy" -m pip install --quiet --disable-pip-version-check --no-index "$wheel" || fail "pip install of the wheel"
  out=$("$vpy" -m pip list --format=freeze --disable-pip-version-check 2>/dev/null)
  echo "venv: $(tr '\n' ' ' <<< "$out")"
  # Away from the tree, without the test's overrides.
  clean=(env -u ONEFLOW_LIBRARY -u PYTHONPATH -u LD_LIBRARY_PATH -u LD_PRELOAD)
  "${clean[@]}" "$vpy" "$SRC/tests/install/wheel_check.py" "$MODEL" "$EXPECTED" || fail "inference from the venv"
  out=$("${clean[@]}" "$work/venv/bin/oneflow" --help 2>&1) || { echo "$out"; fail "venv/bin/oneflow --help"; }
  expect_in "usage: oneflow" "the venv's oneflow command"
  out=$("${clean[@]}" "$work/venv/bin/oneflow" info "$MODEL" 2>&1) || { echo "$out"; fail "venv/bin/oneflow info"; }
  expect_in "graph: demo_mlp" "the venv's oneflow info"
  out=$("${clean[@]}" "$vpy" -m oneflow --help 2>&1) || { echo "$out"; fail "python -m oneflow --help"; }
  expect_in "usage: oneflow" "python -m oneflow"
  echo "the oneflow command runs from the venv (console script and python -m oneflow)"
  # A machine without one of the libraries: the error names it (the library, then the CLI).
  native=$("$vpy" -c "import os, sysconfig; print(os.path.join(sysconfig.get_paths()['platlib'], 'oneflow', '_native'))")
  patchelf --add-needed "$MISSING" "$native/liboneflow.so"
  if out=$("${clean[@]}" "$vpy" -c "import oneflow" 2>&1); then fail "import oneflow succeeded without $MISSING"; fi
  expect_in "$MISSING" "import oneflow without a library"
  echo "without a library, import says: $(tail -n 1 <<< "$out" | cut -c1-160)..."
  patchelf --add-needed "$MISSING" "$native/oneflow"
  if out=$("${clean[@]}" "$native/oneflow" --help 2>&1); then fail "the CLI started without $MISSING"; fi
  expect_in "$MISSING" "the CLI without a library"
  ;;

maven)
  have "${JAVA:-}" && have "${JAVAC:-}" && have "${JAR:-}" || skip "no JDK (java, javac, jar: install default-jdk-headless)"
  have patchelf || skip "no patchelf, which the jar's build needs (install patchelf)"
  needs_models
  jar=$PREFIX/share/java/oneflow-$VERSION.jar pom=$PREFIX/share/java/oneflow-$VERSION.pom
  [ -f "$jar" ] && [ -f "$pom" ] || fail "no $jar / $pom in the prefix (was the Java binding built?)"
  repo=$work/m2/repository
  installed=$("$PYTHON" "$SRC/bindings/java/maven_install.py" --jar "$jar" --pom "$pom" --repo "$repo") ||
    fail "maven_install.py"
  artifact_dir=$repo/io/github/oneflow-engine/oneflow
  [ "$installed" = "$artifact_dir/$VERSION/oneflow-$VERSION.jar" ] || fail "installed at $installed, not under the coordinates"
  for f in "$VERSION/oneflow-$VERSION.pom" "$VERSION/_remote.repositories" maven-metadata-local.xml; do
    [ -f "$artifact_dir/$f" ] || fail "no $artifact_dir/$f"
  done
  grep -q "<version>$VERSION</version>" "$artifact_dir/maven-metadata-local.xml" || fail "maven-metadata-local.xml lacks $VERSION"
  echo "installed io.github.oneflow-engine:oneflow:$VERSION into $repo"
  # Only the JDK, the artifact from the repository, nothing on java.library.path: the natives come from the jar.
  mkdir -p classes empty
  "$JAVAC" --release 17 -Xlint:all -Werror -d classes -cp "$installed" "$SRC/tests/install/JarConsumer.java" \
    "$SRC/bindings/java/examples/Infer.java" || fail "javac against the installed artifact"
  run_java() { env -u LD_LIBRARY_PATH "$JAVA" -Djava.library.path="$work/empty" -Djava.io.tmpdir="$work" "$@"; }
  out=$(run_java -cp "$installed:classes" JarConsumer "$MODEL" "$EXPECTED" 2>&1) || { echo "$out"; fail "JarConsumer"; }
  echo "$out"
  out=$(run_java -cp "$installed:classes" Infer "$MODEL" "$EXPECTED" 2>&1) || { echo "$out"; fail "Infer (the example)"; }
  expect_in "matches the expected output" "the Java example"
  # A machine without one of the libraries: the load error names it.
  mkdir -p patched
  cp "$installed" patched.jar
  native=org/oneflow/native/linux-$(uname -m)
  (cd patched && "$JAR" xf ../patched.jar "$native/liboneflow.so.0")
  patchelf --add-needed "$MISSING" "patched/$native/liboneflow.so.0"
  "$JAR" uf patched.jar -C patched "$native/liboneflow.so.0"
  if out=$(run_java -cp "patched.jar:classes" JarConsumer "$MODEL" "$EXPECTED" 2>&1); then
    fail "the binding loaded without $MISSING"
  fi
  expect_in "$MISSING" "loading the jar's natives without a library"
  echo "without a library, the load fails naming it: $(grep -m1 -oE "[^ ]*${MISSING}[^)]*" <<< "$out" | head -c 160)"
  ;;

*)
  fail "unknown step $step"
  ;;
esac
