"""What the server says of itself: GetServerInfo and ListCommands, and the facts behind them.

`ServerInfoCalls` is the part of `SessionCore` (service.py) that answers the same for every
caller: the protocol revision it speaks, its version, models, limits, features, how it
confines commands, and its slash commands. Most of that only the assembled server knows
(`ServerFacts`, handed over by `blitz.assembly`); a feature switched on later (tokens, once
they are required) is added here. Nothing here reads or changes a session, beyond checking
that a caller listing a session's commands may see it.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from blitz.core.api import validation as check
from blitz.core.driver.slash_commands import advertised
from blitz.ports import CallContext
from blitz.size_limits import EVENT_MAX
from blitz.store import SessionRecord, Store
from blitz.v1 import session_pb2 as s

__all__ = ["PROTOCOL_REVISION", "ServerFacts", "ServerInfoCalls"]

try:
    _SERVER_VERSION = importlib.metadata.version("blitz-server")
except importlib.metadata.PackageNotFoundError:  # running from a checkout, not installed
    _SERVER_VERSION = "unknown"


# The revision of blitz.v1 this server speaks (ServerInfo.protocol_revision): 1 was the
# first release; docs/protocol.md ("The server") lists what each later one added.
PROTOCOL_REVISION = 6


def _builtin_only() -> Sequence[s.AgentInfo]:
    return (s.AgentInfo(name="blitz", display_name="Blitz", kind="builtin"),)


@dataclass(frozen=True)
class ServerFacts:
    """What GetServerInfo says that only the assembled server knows (server.py)."""

    models: tuple[str, ...] = ("demo",)
    limits: Mapping[str, int] = field(default_factory=dict)
    features: tuple[str, ...] = ()
    # What confines the agent's commands (`box`, `landlock`, `unconfined`); "" unknown.
    command_isolation: str = ""
    # The agents CreateSession.agent accepts, the built-in one first (their versions
    # change as ACP agents start, hence a call), and the one a session gets by default.
    agents: Callable[[], Sequence[s.AgentInfo]] = _builtin_only
    default_agent: str = "blitz"
    # Sessions may start from a repository (--repo-allow names some sources).
    repositories: bool = False


class ServerInfoCalls:
    """GetServerInfo and ListCommands; `SessionCore` holds what they use."""

    _store: Store
    _default_model: str
    _facts: ServerFacts

    async def session_record(self, session_id: str, ctx: CallContext) -> SessionRecord:
        raise NotImplementedError  # pragma: no cover - sessions.SessionCalls'

    def add_feature(self, feature: str) -> None:
        """Say `feature` in GetServerInfo from now on (tokens, once they are required)."""
        if feature not in self._facts.features:
            self._facts = replace(self._facts, features=(*self._facts.features, feature))

    async def get_server_info(self, req: s.GetServerInfoRequest, ctx: CallContext) -> s.ServerInfo:
        """What this server is and speaks, the same for every caller, and who the caller
        is."""
        facts = self._facts
        features = {*facts.features, *(("replicas",) if self._store.shared else ())}
        return s.ServerInfo(
            protocol="blitz.v1",
            protocol_revision=PROTOCOL_REVISION,
            server_version=_SERVER_VERSION,
            default_model=self._default_model,
            models=facts.models,
            limits={**check.CLIENT_LIMITS, "event_bytes": EVENT_MAX, **facts.limits},
            features=sorted(features),
            command_isolation=facts.command_isolation,
            commands=advertised(),
            agents=facts.agents(),
            default_agent=facts.default_agent,
            repositories=facts.repositories,
            principal=ctx.caller,
            admin=ctx.admin,
        )

    async def list_commands(
        self, req: s.ListCommandsRequest, ctx: CallContext
    ) -> s.ListCommandsResponse:
        """The server's commands; with a session, that session's (the same, for now: no
        command is a session's own yet), after checking the caller may see it."""
        if req.session_id:
            await self.session_record(req.session_id, ctx)
        return s.ListCommandsResponse(commands=advertised())
