"""``python -m mlbridge.cli``: the ``mlbridge`` command."""

import sys

from mlbridge.cli import main

sys.exit(main())
