"""The error catalog in docs/protocol.md is the one in the code, with the same statuses,
and the SDK's advice on retrying is the one the catalog gives."""

from __future__ import annotations

import re
from pathlib import Path

from blitz.errors import Reason
from blitz_client import RETRY, BlitzError

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "protocol.md").read_text()


def test_every_reason_is_documented_with_its_status():
    rows = dict(re.findall(r"^\| `([A-Z_]+)` \| ([a-z_]+) \|", DOC, re.M))
    assert rows == {reason.wire: reason.status.value for reason in Reason}


def test_the_sdk_retries_as_the_catalog_says():
    rows = dict(re.findall(r"^\| `([A-Z_]+)` \| [a-z_]+ \| ([a-z]+) \|", DOC, re.M))
    assert rows == dict(RETRY)
    assert set(rows.values()) == {"no", "retry", "resume", "after"}
    assert BlitzError("unavailable", "UNAVAILABLE", "connection refused").retry == "resume"
    assert BlitzError("unknown", "UNKNOWN", "a proxy's error").retry == "no"


def test_the_typescript_client_retries_as_the_catalog_says():
    """blitz-client for TypeScript carries the same table (clients/typescript/src/errors.ts)."""
    source = (ROOT / "clients" / "typescript" / "src" / "errors.ts").read_text()
    table = source[source.index("export const RETRY") : source.index("});")]
    carried = dict(re.findall(r'^\s+([A-Z_]+): "([a-z]+)",$', table, re.M))
    rows = dict(re.findall(r"^\| `([A-Z_]+)` \| [a-z_]+ \| ([a-z]+) \|", DOC, re.M))
    assert carried == rows
