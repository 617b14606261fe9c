"""`python -m profiling ...` is the same as the `dlkit-prof` console script."""
from profiling.cli import console_main

console_main()
