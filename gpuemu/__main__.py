"""`python -m gpuemu ...`: the same command line as the `gpuemu` script."""
import sys

from gpuemu.cli import main

sys.exit(main())
