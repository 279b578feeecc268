"""A progress bar on stderr for the commands that work through many items."""

from __future__ import annotations

import sys
from typing import Any, Optional


def progress_bar(total: int, what: str, unit: str, show: bool = True) -> Optional[Any]:
    """A tqdm bar of ``total`` items on stderr, or None when not ``show``,
    when stderr is not a terminal or when tqdm is not installed."""
    if not show or not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=what, unit=unit, file=sys.stderr)
