"""The SQL both engines run alike, each statement written once, with `?` for a parameter.

`Statements(dialect)` is every such statement in one engine's SQL, built when the engine's
module is imported: the statements of each concept, from its own module, in one object
(`SqlStore._sql`). Per call, an engine picks a statement (one with optional conditions
has a text for each combination of them) and puts its parameters together; it never
builds text. A statement only one engine runs stays in that engine's module, and nothing
here runs one. How the text is written and made each driver's is `sql_dialect.py`'s.

This module is only the index: the text is in

- `session_statements.py`: sessions;
- `turn_statements.py`: turns, their leases and claims;
- `event_statements.py`: a session's events;
- `approval_statements.py`: pending requests and approval rules;
- `ledger_statements.py`: the usage ledger;
- `image_statements.py`: a session's images;
- `token_statements.py`: bearer tokens;
- `key_statements.py`: the server's own keys (approval links');
- `history_statements.py`: agent state (histories, turn histories, workflow runs);
- `workspace_statements.py`: workspace names, file originals, checkpoints.

The webhooks' statements are `webhook_statements.py`'s.
"""

from __future__ import annotations

from blitz.store.approval_statements import PENDING_COLUMNS, RULE_COLUMNS, ApprovalStatements
from blitz.store.event_statements import EventStatements
from blitz.store.history_statements import HistoryStatements
from blitz.store.image_statements import IMAGE_COLUMNS, ImageStatements
from blitz.store.key_statements import KeyStatements
from blitz.store.ledger_statements import LEDGER_COLUMNS, LedgerStatements
from blitz.store.session_statements import SessionStatements
from blitz.store.sql_dialect import FLAGS, Dialect, marks
from blitz.store.token_statements import TOKEN_COLUMNS, TokenStatements
from blitz.store.turn_statements import TURN_COLUMNS, TurnStatements
from blitz.store.workspace_statements import CHECKPOINT_COLUMNS, WorkspaceStatements

__all__ = [
    "CHECKPOINT_COLUMNS",
    "FLAGS",
    "IMAGE_COLUMNS",
    "LEDGER_COLUMNS",
    "PENDING_COLUMNS",
    "RULE_COLUMNS",
    "TOKEN_COLUMNS",
    "TURN_COLUMNS",
    "Dialect",
    "Statements",
    "marks",
]


class Statements(
    SessionStatements,
    TurnStatements,
    EventStatements,
    ApprovalStatements,
    LedgerStatements,
    ImageStatements,
    TokenStatements,
    KeyStatements,
    HistoryStatements,
    WorkspaceStatements,
):
    """Every statement both engines run alike, in one engine's dialect."""

    def __init__(self, dialect: Dialect) -> None:
        SessionStatements.__init__(self, dialect)
        TurnStatements.__init__(self, dialect)
        EventStatements.__init__(self, dialect)
        ApprovalStatements.__init__(self, dialect)
        LedgerStatements.__init__(self, dialect)
        ImageStatements.__init__(self, dialect)
        TokenStatements.__init__(self, dialect)
        KeyStatements.__init__(self, dialect)
        HistoryStatements.__init__(self, dialect)
        WorkspaceStatements.__init__(self, dialect)
        # Whether the database answers at all (`Store.ping`).
        self.ping = dialect.sql("SELECT 1")
