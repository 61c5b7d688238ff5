"""The `oneflow` console script of the package: runs the CLI bundled in oneflow/_native/ (same arguments,
same exit status, same process: it replaces this Python process, so signals reach the CLI itself)."""
import os
import sys


def binary() -> str:
    """The path of the bundled `oneflow` executable."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native", "oneflow")


def main() -> None:
    exe = binary()
    if not os.access(exe, os.X_OK):
        sys.exit(f"oneflow: {exe} is missing or not executable (reinstall the oneflow-engine package)")
    os.execv(exe, ["oneflow", *sys.argv[1:]])


if __name__ == "__main__":
    main()
