"""`python -m mlbridge ...` is the `mlbridge` command."""

from mlbridge.cli import main

raise SystemExit(main())
