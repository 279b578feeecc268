"""``python -m mlbridge.aot``: same as ``mlbridge-aot``."""

import sys

from mlbridge.aot.cli import main

sys.exit(main())
