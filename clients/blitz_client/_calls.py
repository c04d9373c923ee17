"""`Calls`: what every part of `AsyncBlitz` stands on, the client's `Resumer`.

`AsyncBlitz` (`_async.py`) is made of one class of calls per part of the API:
`_session_calls.py`, `_turn_calls.py`, `_interaction_calls.py`, `_workspace_calls.py`
and `_webhook_calls.py`, each a subclass of this one. Every call goes through
`_unary` here or, for a stream, through `_resume` itself, so that what is sent again
after the server goes away is decided in one place (`_resume.py`). It holds no state of
its own: `AsyncBlitz.__init__` sets `_resume`.
"""

from __future__ import annotations

from typing import Any

from blitz_client._resume import Resumer

__all__ = ["Calls"]


class Calls:
    """The base of the client's calls; `AsyncBlitz.__init__` sets `_resume`."""

    _resume: Resumer

    async def _unary(self, method: str, request: Any) -> Any:
        """One call, sent again (maybe elsewhere) where `_resume.py` finds it safe."""
        return await self._resume.call(method, lambda t: t.unary(method, request))
