"""How the statements both engines share are written: once, with `?` for a parameter.

A statement module (`session_statements.py` and its neighbours, `webhook_statements.py`)
builds its text when the engine's module is imported, from the engine's `Dialect`: the
few fragments the engines write differently (a session's last seq, a label's test, a
JSON parameter, appending steer text, booleans summed up) come from it, and each `?`
becomes its driver's placeholder. Nothing here runs a statement.

The text is SQLite's own, so every `?` in it is a parameter, and making each a `%s`
(psycopg's) is safe as long as no `?` stands in a quoted literal, no `%` stands anywhere
(psycopg would read it as a placeholder) and no parameter is numbered (`?1`):
`Dialect.sql` refuses such text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["FLAGS", "Dialect", "Shapes", "marks"]

# The values of a statement's optional condition: one text is built for each.
FLAGS = (False, True)


@dataclass(frozen=True, kw_only=True)
class Dialect:
    """What an engine writes its own way in the statements both run, each with `?`."""

    # Its driver's placeholder for a parameter: "?" (sqlite3) or "%s" (psycopg).
    placeholder: str
    # The session's newest seq (0: none yet), as a column of a SELECT from `sessions`.
    last_seq: str
    # Whether a session has a label of this value: parameters the key, then the value.
    label_is: str
    # A parameter of JSON text, as a JSON column (labels, steer) takes it.
    json: str
    # The turn's steer with one more text (a parameter) at its end.
    steer_appended: str
    # Two columns of ledger rows: whether every one was priced, and whether any had its
    # tokens unknown (booleans: SQLite keeps them as integers).
    ledger_flags: str
    # A parameter of a JSON list of strings, as a list a column can be `IN`.
    json_texts: str = "(SELECT value FROM json_each(?))"
    # What ends a SELECT that takes rows for this transaction alone, skipping those
    # another holds, of the table `{alias}` names ("" where one process owns the file).
    lock_skipping: str = ""
    # What ends a SELECT that locks its row until the transaction ends ("": the same).
    lock: str = ""

    def sql(self, text: str) -> str:
        """`text`, written with `?` for each parameter, in this dialect's placeholders."""
        literals = text.split("'")[1::2]
        if "%" in text or any("?" in lit for lit in literals) or re.search(r"\?\d", text):
            raise ValueError(f"a placeholder would be mistaken in {text!r}")
        return text.replace("?", self.placeholder)


class Shapes(dict[tuple[object, ...], str]):
    """A statement whose text depends on more than flags (which fields a change sets, how
    many labels a query tests): built for a shape on its first use, then kept. There are
    few: 2⁸·4 changes at most, and the core lets a query test 64 labels at most."""

    def __init__(self, build: Callable[..., str]) -> None:
        super().__init__()
        self._build = build

    def __missing__(self, shape: tuple[object, ...]) -> str:
        text = self[shape] = self._build(*shape)
        return text


def marks(count: int) -> str:
    """`count` parameters, as a VALUES list takes them."""
    return ", ".join(["?"] * count)
