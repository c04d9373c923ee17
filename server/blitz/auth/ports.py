"""The session and workspace ports behind authentication: the one place a token is checked.

Each wrapper implements its port by checking the call's bearer token, then handing the
call on with the principal in its `CallContext` (`caller`, `admin`). Both transports serve
these wrappers when tokens are required, so no call of either wire reaches the core
unauthenticated. Health checks, reflection and metrics are not behind these ports.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

from blitz.auth.authenticator import Authenticator
from blitz.ports import CallContext, SessionPort, WorkspacePort
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1 import workspace_pb2 as w

__all__ = ["AuthenticatedSessions", "AuthenticatedWorkspaces"]


class _Authenticated:
    def __init__(self, authenticator: Authenticator) -> None:
        self._authenticator = authenticator

    async def _who(self, ctx: CallContext) -> CallContext:
        principal = await self._authenticator.principal(ctx.metadata)
        return replace(ctx, caller=principal.name, admin=principal.admin)


class AuthenticatedSessions(_Authenticated):
    """`SessionPort`, each call authenticated first."""

    def __init__(self, port: SessionPort, authenticator: Authenticator) -> None:
        super().__init__(authenticator)
        self._port = port

    async def create_session(self, req: s.CreateSessionRequest, ctx: CallContext) -> s.Session:
        return await self._port.create_session(req, await self._who(ctx))

    async def get_session(self, req: s.GetSessionRequest, ctx: CallContext) -> s.Session:
        return await self._port.get_session(req, await self._who(ctx))

    async def list_sessions(
        self, req: s.ListSessionsRequest, ctx: CallContext
    ) -> s.ListSessionsResponse:
        return await self._port.list_sessions(req, await self._who(ctx))

    async def close_session(self, req: s.CloseSessionRequest, ctx: CallContext) -> s.Session:
        return await self._port.close_session(req, await self._who(ctx))

    async def run_turn(self, req: s.RunTurnRequest, ctx: CallContext) -> AsyncIterator[t.TurnEvent]:
        events = self._port.run_turn(req, await self._who(ctx))
        try:
            async for event in events:
                yield event
        finally:
            await _closed(events)

    async def accept_plan(
        self, req: s.AcceptPlanRequest, ctx: CallContext
    ) -> AsyncIterator[t.TurnEvent]:
        events = self._port.accept_plan(req, await self._who(ctx))
        try:
            async for event in events:
                yield event
        finally:
            await _closed(events)

    async def reject_plan(self, req: s.RejectPlanRequest, ctx: CallContext) -> s.RejectPlanResponse:
        return await self._port.reject_plan(req, await self._who(ctx))

    async def watch(self, req: s.WatchRequest, ctx: CallContext) -> AsyncIterator[t.TurnEvent]:
        events = self._port.watch(req, await self._who(ctx))
        try:
            async for event in events:
                yield event
        finally:
            await _closed(events)

    async def decide(self, req: s.DecideRequest, ctx: CallContext) -> s.DecideResponse:
        return await self._port.decide(req, await self._who(ctx))

    async def answer(self, req: s.AnswerRequest, ctx: CallContext) -> s.AnswerResponse:
        return await self._port.answer(req, await self._who(ctx))

    async def cancel(self, req: s.CancelRequest, ctx: CallContext) -> s.CancelResponse:
        return await self._port.cancel(req, await self._who(ctx))

    async def steer(self, req: s.SteerRequest, ctx: CallContext) -> s.SteerResponse:
        return await self._port.steer(req, await self._who(ctx))

    async def get_usage(self, req: s.GetUsageRequest, ctx: CallContext) -> s.UsageReport:
        return await self._port.get_usage(req, await self._who(ctx))

    async def list_rules(self, req: s.ListRulesRequest, ctx: CallContext) -> s.ListRulesResponse:
        return await self._port.list_rules(req, await self._who(ctx))

    async def revoke_rule(self, req: s.RevokeRuleRequest, ctx: CallContext) -> s.RevokeRuleResponse:
        return await self._port.revoke_rule(req, await self._who(ctx))

    async def get_server_info(self, req: s.GetServerInfoRequest, ctx: CallContext) -> s.ServerInfo:
        info = await self._port.get_server_info(req, await self._who(ctx))
        info.features[:] = sorted({*info.features, "tokens"})  # this wrapper is why
        return info

    async def list_turns(self, req: s.ListTurnsRequest, ctx: CallContext) -> s.ListTurnsResponse:
        return await self._port.list_turns(req, await self._who(ctx))

    async def update_session(self, req: s.UpdateSessionRequest, ctx: CallContext) -> s.Session:
        return await self._port.update_session(req, await self._who(ctx))

    async def delete_session(
        self, req: s.DeleteSessionRequest, ctx: CallContext
    ) -> s.DeleteSessionResponse:
        return await self._port.delete_session(req, await self._who(ctx))

    async def fork_session(self, req: s.ForkSessionRequest, ctx: CallContext) -> s.Session:
        return await self._port.fork_session(req, await self._who(ctx))


class AuthenticatedWorkspaces(_Authenticated):
    """`WorkspacePort`, each call authenticated first."""

    def __init__(self, port: WorkspacePort, authenticator: Authenticator) -> None:
        super().__init__(authenticator)
        self._port = port

    async def upload_image(
        self, req: w.UploadImageRequest, ctx: CallContext
    ) -> w.UploadImageResponse:
        return await self._port.upload_image(req, await self._who(ctx))

    async def list_files(self, req: w.ListFilesRequest, ctx: CallContext) -> w.ListFilesResponse:
        return await self._port.list_files(req, await self._who(ctx))

    async def read_file(self, req: w.ReadFileRequest, ctx: CallContext) -> w.ReadFileResponse:
        return await self._port.read_file(req, await self._who(ctx))

    async def get_diff(self, req: w.GetDiffRequest, ctx: CallContext) -> w.GetDiffResponse:
        return await self._port.get_diff(req, await self._who(ctx))


async def _closed(events: AsyncIterator[t.TurnEvent]) -> None:
    aclose = getattr(events, "aclose", None)
    if aclose is not None:
        await aclose()
