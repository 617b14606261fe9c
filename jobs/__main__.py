"""`python -m jobs ...` is the same as the `dljobs` console script."""
import sys

from jobs.cli import main

sys.exit(main())
