"""The store's record of a hook (docs/hooks.md): who made it, where it runs, and its spec.

Plain records as records.py's, apart because they are one idea. The spec is a serialized
`blitz.v1.Hook` holding what a hook is (its event, command or URL, matchers, timeout,
`fail_open`, description, whether it is paused); who it belongs to and how far it reaches
are columns, so that a session's hooks are one indexed read.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HookRecord"]


@dataclass
class HookRecord:
    """A hook made through HookService (the declared ones are never stored)."""

    id: str
    # The principal whose sessions it runs in (its maker).
    owner: str
    # It runs in every principal's sessions (an admin made it so).
    server_wide: bool
    # A serialized blitz.v1.Hook: its event, kind, matchers, timeout, fail_open, description
    # and disabled (id, owner, reach and times are the columns').
    spec: bytes
    # An HTTP hook's signing secret ("whsec_…"; "" for a command hook).
    secret: str
    create_time: float
    update_time: float
