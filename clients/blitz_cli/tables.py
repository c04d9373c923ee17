"""The console the listing commands print to, as wide as where it goes.

Rich takes 80 columns when stdout is not a terminal, so `blitz sessions | less` cut ids
and dates to `upda…`. Piped, a table is as wide as its content (or `COLUMNS`, when set);
on a terminal, as wide as the terminal.
"""

from __future__ import annotations

import os
import sys

from rich.console import Console

__all__ = ["listing_console"]

_UNBOUNDED = 10_000  # columns: a table is then only as wide as its cells


def listing_console() -> Console:
    """A Console for tables: the terminal's width, or unbounded when piped."""
    if sys.stdout.isatty():
        return Console(highlight=False)
    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdecimal() else _UNBOUNDED
    # A height too: with the width alone, rich still takes 80 columns under TERM=dumb.
    return Console(highlight=False, width=width, height=25)
