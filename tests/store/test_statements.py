"""The statements both engines share: written once with `?`, made each driver's safely."""

from __future__ import annotations

from dataclasses import fields

import pytest

from blitz.store import statements
from blitz.store.records import (
    Checkpoint,
    ImageRecord,
    LedgerRow,
    PendingRecord,
    RuleRecord,
    TokenRecord,
    TurnRecord,
)
from blitz.store.statements import Dialect

# psycopg's placeholder; the fragments do not matter here.
PSYCOPG = Dialect(
    placeholder="%s",
    last_seq="0",
    label_is="FALSE",
    json="?",
    steer_appended="steer",
    ledger_flags="",
)


def test_each_placeholder_becomes_the_drivers_and_nothing_else_changes() -> None:
    assert PSYCOPG.sql("UPDATE t SET a = ?, b = 'x' WHERE c = ?") == (
        "UPDATE t SET a = %s, b = 'x' WHERE c = %s"
    )


@pytest.mark.parametrize(
    "text",
    [
        "SELECT a FROM t WHERE b LIKE 'x%'",  # psycopg would read a placeholder in it
        "SELECT a FROM t WHERE b = '?'",  # a literal, not a parameter
        "SELECT a FROM t WHERE b = ?1",  # numbered: psycopg has no such thing
    ],
)
def test_text_in_which_a_placeholder_could_be_mistaken_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="placeholder"):
        PSYCOPG.sql(text)


@pytest.mark.parametrize(
    ("columns", "record"),
    [
        (statements.TURN_COLUMNS, TurnRecord),
        (statements.PENDING_COLUMNS, PendingRecord),
        (statements.LEDGER_COLUMNS, LedgerRow),
        (statements.RULE_COLUMNS, RuleRecord),
        (statements.IMAGE_COLUMNS, ImageRecord),
        (statements.TOKEN_COLUMNS, TokenRecord),
        (statements.CHECKPOINT_COLUMNS, Checkpoint),
    ],
)
def test_a_records_columns_are_its_fields_in_order(columns: str, record: type) -> None:
    """Rows become records, and records parameters, by position (store/rows.py)."""
    assert [c.strip() for c in columns.split(",")] == [f.name for f in fields(record)]
