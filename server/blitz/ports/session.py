"""The session port: what the transports ask of the core, and the context of each call.

Both transports depend on `SessionPort`, `WorkspacePort` and `WorkflowPort` only, never on
the core's classes, so that a test double needs no `type: ignore`. Each method is an RPC of the
service, named as the RPC in snake_case: the transports find it by that name
(`blitz.transport.methods`). Every method takes a request message and a
`CallContext`, and returns a response message or, for streams, an async iterator of
events; failures are `blitz.errors.BlitzError`. Nothing here knows a wire format.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1 import workflow_pb2 as f
from blitz.v1 import workspace_pb2 as w

__all__ = ["Authenticate", "CallContext", "SessionPort", "WorkflowPort", "WorkspacePort"]


@dataclass(frozen=True)
class CallContext:
    """Who is calling and how, as the transport saw it (and authentication made it).

    `caller` is the authenticated principal ("" when the server runs without tokens);
    `admin` whether that principal may see and act on every principal's sessions;
    `deadline` is the call's absolute deadline on `time.monotonic()`'s clock, if any;
    `metadata` holds the request headers (lower-case keys).
    """

    caller: str = ""
    admin: bool = False
    deadline: float | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    peer: str = ""


# Who a call is from: its context with the principal filled in (`caller`, `admin`), or a
# BlitzError (UNAUTHENTICATED). The transports ask it before any call reaches a port.
Authenticate = Callable[[CallContext], Awaitable[CallContext]]


class SessionPort(Protocol):
    """`blitz.v1.SessionService`, transport-free (implemented by `blitz.core.SessionCore`)."""

    async def create_session(self, req: s.CreateSessionRequest, ctx: CallContext) -> s.Session: ...
    async def get_session(self, req: s.GetSessionRequest, ctx: CallContext) -> s.Session: ...
    async def list_sessions(
        self, req: s.ListSessionsRequest, ctx: CallContext
    ) -> s.ListSessionsResponse: ...
    async def close_session(self, req: s.CloseSessionRequest, ctx: CallContext) -> s.Session: ...
    def run_turn(self, req: s.RunTurnRequest, ctx: CallContext) -> AsyncIterator[t.TurnEvent]:
        """The turn's events, `accepted` first and `finished` last."""
        ...

    def accept_plan(self, req: s.AcceptPlanRequest, ctx: CallContext) -> AsyncIterator[t.TurnEvent]:
        """The events of the turn that carries out the proposed plan, as run_turn's."""
        ...

    async def reject_plan(
        self, req: s.RejectPlanRequest, ctx: CallContext
    ) -> s.RejectPlanResponse: ...

    def watch(self, req: s.WatchRequest, ctx: CallContext) -> AsyncIterator[t.TurnEvent]:
        """The session's events after `after_seq`, then (with `follow`) live ones."""
        ...

    def watch_sessions(
        self, req: s.WatchSessionsRequest, ctx: CallContext
    ) -> AsyncIterator[s.SessionsUpdate]:
        """The caller's sessions, then each change of them."""
        ...

    async def decide(self, req: s.DecideRequest, ctx: CallContext) -> s.DecideResponse: ...
    async def answer(self, req: s.AnswerRequest, ctx: CallContext) -> s.AnswerResponse: ...
    async def cancel(self, req: s.CancelRequest, ctx: CallContext) -> s.CancelResponse: ...
    async def steer(self, req: s.SteerRequest, ctx: CallContext) -> s.SteerResponse: ...
    async def get_usage(self, req: s.GetUsageRequest, ctx: CallContext) -> s.UsageReport: ...
    async def list_rules(
        self, req: s.ListRulesRequest, ctx: CallContext
    ) -> s.ListRulesResponse: ...
    async def revoke_rule(
        self, req: s.RevokeRuleRequest, ctx: CallContext
    ) -> s.RevokeRuleResponse: ...
    async def get_server_info(
        self, req: s.GetServerInfoRequest, ctx: CallContext
    ) -> s.ServerInfo: ...

    async def list_turns(
        self, req: s.ListTurnsRequest, ctx: CallContext
    ) -> s.ListTurnsResponse: ...
    async def get_turn(self, req: s.GetTurnRequest, ctx: CallContext) -> s.TurnSummary: ...
    async def rewind_session(
        self, req: s.RewindSessionRequest, ctx: CallContext
    ) -> s.RewindSessionResponse: ...
    async def update_session(self, req: s.UpdateSessionRequest, ctx: CallContext) -> s.Session: ...
    async def delete_session(
        self, req: s.DeleteSessionRequest, ctx: CallContext
    ) -> s.DeleteSessionResponse: ...
    async def fork_session(self, req: s.ForkSessionRequest, ctx: CallContext) -> s.Session: ...
    async def list_commands(
        self, req: s.ListCommandsRequest, ctx: CallContext
    ) -> s.ListCommandsResponse: ...


class WorkspacePort(Protocol):
    """`blitz.v1.WorkspaceService`, transport-free (implemented by `blitz.core.WorkspaceCore`)."""

    async def upload_image(
        self, req: w.UploadImageRequest, ctx: CallContext
    ) -> w.UploadImageResponse: ...
    async def list_files(
        self, req: w.ListFilesRequest, ctx: CallContext
    ) -> w.ListFilesResponse: ...
    async def read_file(self, req: w.ReadFileRequest, ctx: CallContext) -> w.ReadFileResponse: ...
    async def get_diff(self, req: w.GetDiffRequest, ctx: CallContext) -> w.GetDiffResponse: ...
    async def export_changes(
        self, req: w.ExportChangesRequest, ctx: CallContext
    ) -> w.ExportChangesResponse: ...


class WorkflowPort(Protocol):
    """`blitz.v1.WorkflowService`, transport-free (implemented by `blitz.core.WorkflowCore`)."""

    def run_workflow(
        self, req: f.RunWorkflowRequest, ctx: CallContext
    ) -> AsyncIterator[t.TurnEvent]:
        """The run's events, as run_turn's: `accepted` first and `finished` last."""
        ...

    async def list_workflows(
        self, req: f.ListWorkflowsRequest, ctx: CallContext
    ) -> f.ListWorkflowsResponse: ...
    async def get_workflow(self, req: f.GetWorkflowRequest, ctx: CallContext) -> f.Workflow: ...
