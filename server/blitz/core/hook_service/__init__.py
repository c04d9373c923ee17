"""HookService (docs/hooks.md): `service.py` is `HookCore`, the calls and whose hook is
whose; `checks.py` checks requests, `declared.py` makes the operator's `[[hooks]]`. It
sits with the webhooks, above the turn driver: running hooks is `core/hooks/`'s, which
imports nothing of this room.
"""

from blitz.core.hook_service.service import HookCore

__all__ = ["HookCore"]
