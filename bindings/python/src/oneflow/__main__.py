"""`python -m oneflow ...` runs the bundled CLI, like the `oneflow` console script."""
from ._cli import main

main()
