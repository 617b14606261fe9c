import sys

from small_files.cli import main

sys.exit(main())
