"""The error catalog in docs/protocol.md is the one in the code, with the same statuses."""

from __future__ import annotations

import re
from pathlib import Path

from blitz.errors import Reason

DOC = (Path(__file__).resolve().parents[1] / "docs" / "protocol.md").read_text()


def test_every_reason_is_documented_with_its_status():
    rows = dict(re.findall(r"^\| `([A-Z_]+)` \| ([a-z_]+) \|", DOC, re.M))
    assert rows == {reason.wire: reason.status.value for reason in Reason}
