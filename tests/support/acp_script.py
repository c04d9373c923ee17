"""Scripts for the scripted ACP agent (support/scripted_agent.py), and what it recorded.

A test writes a script (`write_script`), starts the agent with `agent_command(script)` and
`agent_env(home)` (its HOME, where it keeps each session's history for session/load), and
reads afterwards what the agent received and was answered (`read_record`). The script is
re-read on every request, so `write_script` again between turns changes what comes next.
The script's format and the steps are in scripted_agent.py's docstrings.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["AGENT", "agent_command", "agent_env", "read_record", "record_path", "write_script"]

AGENT = Path(__file__).with_name("scripted_agent.py")


def write_script(path: Path, **fields: Any) -> Path:
    """Write the script `fields` to `path` (JSON), recording beside it in `record.jsonl`
    unless `record` is given; the path, for `agent_command`. The file is replaced whole, so
    that an agent re-reading it never sees half of it."""
    fields.setdefault("record", str(path.with_name("record.jsonl")))
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(fields, indent=1))
    os.replace(partial, path)
    return path


def script_of(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def record_path(script: Path) -> Path:
    """Where the agent run with `script` records."""
    return Path(script_of(script)["record"])


def read_record(path: Path) -> list[dict[str, Any]]:
    """The agent's record, one dict a message: `path` is the record, or the script naming it.
    Empty while nothing has been recorded."""
    if path.suffix == ".json":
        path = record_path(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def agent_command(script_path: Path) -> list[str]:
    """The agent's argv: this Python, the agent, the script."""
    return [sys.executable, str(AGENT), str(script_path)]


def agent_env(home: Path) -> dict[str, str]:
    """Environment for the agent: a HOME of the test's own, where its sessions are saved."""
    return {"HOME": str(home)}
