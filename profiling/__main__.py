"""`python -m profiling ...` is the same as the `dlkit-prof` console script."""
import sys

from profiling.cli import main

sys.exit(main())
