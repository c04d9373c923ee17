"""What Blitz keeps of an ACP session between turns: the runner's state, as the history.

An ACP agent holds its own conversation; Blitz keeps only what it needs to find it again
and to go on after a restart: the agent's session id, whether it can load it, the agent's
commands (U10), the cost it last reported (U13), and what a parked turn waits on. It is
stored where the built-in agent's message history is (`Completed.history`,
`Parked.history`), as JSON with a prefix of its own, so no store change is needed for it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["AcpState"]

_PREFIX = b"acp1:"


@dataclass
class AcpState:
    agent: str
    acp_session_id: str = ""
    load_session: bool = False
    commands: list[dict[str, Any]] = field(default_factory=list)
    # The session's cost the agent last reported (USD), for each turn's difference.
    cost_seen: float = 0.0
    # What a parked turn waits on, by request id: kind, title and the agent's input, for
    # the prompt that tells a reloaded agent what was decided.
    parked: dict[str, dict[str, Any]] = field(default_factory=dict)
    # One-use grants a reloaded agent's next permission request is answered with.
    grants: list[dict[str, Any]] = field(default_factory=list)

    def dump(self) -> bytes:
        return _PREFIX + json.dumps(asdict(self), separators=(",", ":")).encode()

    @classmethod
    def load(cls, data: bytes | None, agent: str) -> AcpState:
        """The state in `data`, or a fresh one (none yet, or the history of another
        agent)."""
        if not data or not data.startswith(_PREFIX):
            return cls(agent=agent)
        try:
            found = json.loads(data[len(_PREFIX) :])
        except ValueError:
            return cls(agent=agent)
        if not isinstance(found, dict) or found.get("agent") != agent:
            return cls(agent=agent)
        known = {k: v for k, v in found.items() if k in cls.__dataclass_fields__}
        return cls(**known)
