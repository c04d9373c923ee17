"""The agent port: what the core and the agent say to each other for one turn.

It belongs to neither side. The core drives turns through `AgentPort` and implements
`TurnIO`; `blitz.agent` implements `AgentPort` and talks back through `TurnIO`; only
`blitz.server` knows both. The core owns the turn (its log, its state, its deadline,
cancellation); the agent owns the conversation with the model and the tools. The core hands
the agent a `TurnIO` and gets back `Completed` or `Parked`. A parked turn is pure data — the
serialized message history plus the open requests — so any process can resume it later
with `AgentPort.resume`, after a restart included. Nothing here may hold a live coroutine
across a park.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from blitz.v1 import turn_pb2

__all__ = [
    "AgentPort",
    "AnswerResult",
    "ApprovalResult",
    "Completed",
    "HookVerdict",
    "ImageInput",
    "ModelCallUsage",
    "Parked",
    "Reshape",
    "Resolution",
    "Rewrites",
    "TurnIO",
    "TurnPolicy",
]


@dataclass(frozen=True)
class ModelCallUsage:
    """One model call, as the ledger records it."""

    model: str
    input: int = 0
    cached: int = 0
    cache_write: int = 0
    output: int = 0
    cost_usd: float = 0.0
    priced: bool = True
    search_queries: int = 0
    search_cost_usd: float = 0.0
    # The provider reported no token counts: the token fields are 0 meaning unknown.
    tokens_unknown: bool = False


class TurnIO(Protocol):
    """Implemented by the core, one per turn run; the agent's only way out."""

    def emit(self, event: turn_pb2.TurnEvent) -> None:
        """Append a streaming event (text chunk, tool call, result, tasks, notice).

        The core fills the envelope (seq, session_id, turn_id, time) and persists it in a
        batch; it does not wait. Adjacent partial text chunks may be coalesced.
        """
        ...

    async def commit(self, event: turn_pb2.TurnEvent) -> None:
        """Append an event and return once it is durable."""
        ...

    async def pace(self) -> None:
        """Return once the turn may emit more: at once, unless the core's event log is far
        behind, and then when it has caught up; now and then after letting other tasks
        run. Call it as events stream: it is where a long stream gives way and is
        cancelled."""
        ...

    async def before_model_call(self) -> list[str]:
        """Call before every model request.

        Raises `BlitzError` (MAX_TURNS, BUDGET_EXCEEDED, ...) when the turn may not make
        another call. Returns steer texts queued since the last call; the agent adds them to
        the request as user text, so the model sees them.
        """
        ...

    async def record_model_call(self, usage: ModelCallUsage) -> None:
        """Record one finished model call in the usage ledger (durable on return), and
        announce it with a `usage` event."""
        ...

    async def before_change(self) -> None:
        """Call before an action that may change the workspace runs, once it may (a
        command, an MCP tool's call; a file tool calls `before_file_change`, which counts
        as one): the first of a turn takes the turn's start checkpoint, for a rewind or a
        fork."""
        ...

    async def before_file_change(self, path: str, content: bytes | None) -> None:
        """Call before a file tool changes a file (writes, edits or deletes it), once it
        may: `path` relative to the workspace, `content` what the file holds now (None: no
        such file). The core keeps the first per session and path, for the session's diff
        (WorkspaceService.GetDiff)."""
        ...

    async def ask_now(self, question: turn_pb2.Question) -> AnswerResult:
        """Ask the user `question` and wait, the turn running, for the answer: for a
        request that cannot park the turn (an MCP server's elicitation, which waits on its
        connection). Stored and announced like a parked turn's question, so any client
        answers it; ended by the approval timeout (no answer) or the turn's end
        (withdrawn: no answer). `question.form` must be a form (blitz.forms)."""
        ...

    async def rule_decides(self, approval: turn_pb2.ApprovalRequest) -> RuleDecision | None:
        """What the stored approval rules say of this action, if any covers it.

        Call before parking on an approval. An allowed action goes ahead without asking, a
        denied one is refused without asking; either way the core has announced it with a
        `notice` and a `resolution` event (via "rule"). None: a person decides.
        """
        ...

    async def pre_tool(
        self,
        approval: turn_pb2.ApprovalRequest,
        tool_input: Mapping[str, Any],
        *,
        rewritable: frozenset[str] = frozenset(),
    ) -> HookVerdict | None:
        """What the session's pre_tool hooks say of this action (docs/hooks.md), before its
        mode and its rules: `approval` is the request a person would see, `tool_input` the
        tool's arguments as hooks are shown them, `rewritable` the keys of it a hook may
        rewrite; a `Rewrites` also says how the request reads once they are rewritten (a
        plain set: as a command's, `command` its line). None: no hook decided, and the
        action goes on as it would have (mode, rules, a person). The core has announced
        what the hooks said (a `hook` event each, and for an allow or a deny a
        `resolution`, via "hook").
        """
        ...


# A rewritten tool input -> the request it asks (kind, detail, diff and scope label as the
# tool's own checks make them), or why it may not be done (a path out of the workspace).
Reshape = Callable[[dict[str, Any]], Awaitable["turn_pb2.ApprovalRequest | str"]]


class Rewrites(frozenset[str]):
    """The keys of a tool's input a pre_tool hook may rewrite, and `reshape`: how the tool
    checks a rewritten input and what a person would be asked of it. It is a set of the
    keys, so it goes wherever `TurnIO.pre_tool`'s `rewritable` is passed on unchanged."""

    reshape: Reshape | None

    def __new__(cls, keys: Iterable[str] = (), reshape: Reshape | None = None) -> Rewrites:
        made = super().__new__(cls, keys)
        made.reshape = reshape
        return made


@dataclass(frozen=True)
class RuleDecision:
    """A stored rule's say on an action: allowed, or denied (and by which rule, in words
    the model is told)."""

    allowed: bool
    rule: str


@dataclass(frozen=True)
class HookVerdict:
    """What pre_tool hooks decided of an action: "allow" (it goes ahead, asking no one),
    "deny" (refused, `reason` for the model) or "ask" (a person decides, even where the
    mode or a rule would have approved it). `updated_input`: the tool's input as a hook
    rewrote it (None: as asked). `request`, for "ask": the request to park on, showing the
    rewritten action (`hook_edit`) when there is one."""

    decision: str
    reason: str = ""
    updated_input: Mapping[str, Any] | None = None
    request: turn_pb2.ApprovalRequest | None = None


@dataclass(frozen=True)
class ImageInput:
    """An uploaded image attached to the turn's prompt."""

    data: bytes
    media_type: str


@dataclass(frozen=True)
class TurnPolicy:
    """What the turn allows, from the Turn's fields; the agent enforces it in its tools.

    - `read_only` non-empty: WRITE, DELETE and COMMAND actions are refused without asking,
      and this string is the reason the model receives.
    - `plan`: only read-only tools; the agent ends by proposing a plan (its task list and
      output text) instead of acting.
    - `aside`: a side question; any action that would need approval is refused.
    - `fetch_grants`: hosts fetch_url may reach without a NETWORK approval.
    - `images`: attached to the prompt (vision-capable models only).
    - `approved_kinds`: the ActionKinds the session's mode approves without asking
      (ACCEPT_EDITS: WRITE and DELETE; BYPASS: every kind), and `mode` its name, for the
      notice that says so.
    """

    read_only: str = ""
    plan: bool = False
    aside: bool = False
    fetch_grants: tuple[str, ...] = ()
    images: tuple[ImageInput, ...] = ()
    approved_kinds: frozenset[int] = frozenset()
    mode: str = ""


@dataclass(frozen=True)
class ApprovalResult:
    """The user's decision on an ApprovalRequest."""

    approved: bool
    # Given to the model on a deny.
    reason: str = ""
    # For a COMMAND approval: run this instead of the requested command.
    command: str = ""


@dataclass(frozen=True)
class AnswerResult:
    """The user's answer to a Question; no answers means none came (timed out). For a
    question with a form: the values given, or that the user declined it."""

    answers: tuple[str, ...] = ()
    values: Mapping[str, Any] | None = None
    declined: bool = False


Resolution = ApprovalResult | AnswerResult


@dataclass
class Completed:
    """The turn's agent run ended with an answer."""

    output: str
    # The session's whole message history after the turn, serialized.
    history: bytes


@dataclass
class Parked:
    """The agent run stopped on requests that need a person.

    `requests` holds one `TurnEvent` per open request, with `approval_request` or
    `question` set; its request_id is what `AgentPort.resume` expects back in `results`.
    """

    history: bytes
    requests: list[turn_pb2.TurnEvent] = field(default_factory=list)


class AgentPort(Protocol):
    """What the core asks of an agent (implemented by `blitz.agent.Agent`)."""

    def validate_model(self, name: str) -> None:
        """Raise BlitzError(INVALID_ARGUMENT, field `model`) unless the model can be served."""
        ...

    async def start(
        self,
        *,
        io: TurnIO,
        model: str,
        workspace: Path,
        history: bytes | None,
        prompt: str,
        policy: TurnPolicy = ...,
    ) -> Completed | Parked:
        """Run a turn from `prompt`, after the session's `history` (None: the first turn).

        `workspace` is the folder's real path, as the core opened it (`Workspace.named`):
        the agent takes it as it is, without resolving it again.
        """
        ...

    async def resume(
        self,
        *,
        io: TurnIO,
        model: str,
        workspace: Path,
        history: bytes,
        results: dict[str, Resolution],
        policy: TurnPolicy = ...,
    ) -> Completed | Parked:
        """Continue a parked turn with the resolutions of its requests, by request id
        (`workspace` as for `start`)."""
        ...

    async def compact(self, *, io: TurnIO, model: str, history: bytes) -> tuple[bytes, str]:
        """Summarise the history with one model call: (shorter history, summary)."""
        ...
