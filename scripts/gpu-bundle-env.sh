# Sourced on the GPU machine: `source gpu-bundle/env.sh` (copied into the bundle as env.sh).
# Puts the bundle's programs on PATH and finds the CUDA libraries the bundle does not carry —
# cuBLAS/cuBLASLt, cuDNN and NCCL — in, first to last:
#   $ONEFLOW_CUDA_LIB_DIRS (colon-separated), the nvidia-* Python wheels of python3 (PyTorch's own
#   copies: nvidia/cu13/lib, nvidia/*/lib), /usr/local/cuda/lib64, /usr/local/cuda/lib, and ldconfig.
# Then checks that every program and library of the bundle resolves all it needs, naming what is
# missing and where it looked. Returns non-zero (without exiting the caller's shell) when something
# is missing. ONEFLOW_BUNDLE_QUIET=1 silences the summary line.
ONEFLOW_BUNDLE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export ONEFLOW_BUNDLE
export PATH="$ONEFLOW_BUNDLE/bin:$PATH"

_of_dirs=()
if [ -n "${ONEFLOW_CUDA_LIB_DIRS:-}" ]; then
  IFS=: read -r -a _of_dirs <<< "$ONEFLOW_CUDA_LIB_DIRS"
fi
_of_site=$(python3 -c 'import os, sys; print("\n".join(p for p in sys.path if p.endswith("-packages") and os.path.isdir(os.path.join(p, "nvidia"))))' 2> /dev/null || true)
for _of_sp in $_of_site; do
  for _of_d in "$_of_sp"/nvidia/cu13/lib "$_of_sp"/nvidia/*/lib; do
    [ -d "$_of_d" ] && _of_dirs+=("$_of_d")
  done
done
for _of_d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do
  [ -d "$_of_d" ] && _of_dirs+=("$_of_d")
done
_of_path=""
for _of_d in "${_of_dirs[@]}"; do
  case ":$_of_path:" in *":$_of_d:"*) ;; *) _of_path="$_of_path${_of_path:+:}$_of_d" ;; esac
done
export LD_LIBRARY_PATH="$_of_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# Every program and library must resolve: name each missing library once, with who needs it.
_of_missing=$(for _of_f in "$ONEFLOW_BUNDLE"/bin/* "$ONEFLOW_BUNDLE"/lib/*.so; do
  ldd "$_of_f" 2> /dev/null | awk -v f="$(basename "$_of_f")" '/not found/ { print $1 " (needed by " f ")" }'
done | sort -u -t' ' -k1,1)
# NCCL is opened at run time (dlopen "libnccl.so.2"), so ldd cannot see it: look for it the same way.
_of_nccl=""
for _of_d in "${_of_dirs[@]}"; do
  [ -e "$_of_d/libnccl.so.2" ] && { _of_nccl="$_of_d/libnccl.so.2"; break; }
done
[ -n "$_of_nccl" ] || ldconfig -p 2> /dev/null | grep -q 'libnccl.so.2 ' && _of_nccl=${_of_nccl:-ldconfig}
_of_rc=0
if [ -n "$_of_missing" ]; then
  echo "gpu-bundle: missing libraries:" >&2
  echo "$_of_missing" | sed 's/^/  /' >&2
  echo "  looked in: ${_of_path:-nothing (no nvidia-* wheels, no /usr/local/cuda)} and the system's ldconfig cache;" \
       "set ONEFLOW_CUDA_LIB_DIRS to the folders that hold them" >&2
  _of_rc=1
fi
if [ -z "$_of_nccl" ]; then
  echo "gpu-bundle: libnccl.so.2 not found (looked in the same places): the NCCL tests will fail" >&2
fi
if [ "${ONEFLOW_BUNDLE_QUIET:-0}" != 1 ] && [ "$_of_rc" = 0 ]; then
  echo "gpu-bundle: $ONEFLOW_BUNDLE; CUDA libraries from ${_of_path:-the system}; NCCL ${_of_nccl:-missing}"
fi
unset _of_dirs _of_site _of_sp _of_d _of_path _of_missing _of_f _of_nccl
(exit $_of_rc)
