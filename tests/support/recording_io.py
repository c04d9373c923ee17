"""Test support: a TurnIO that records what the agent says, shared by agent and provider tests."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from blitz.ports import AnswerResult, HookVerdict, ModelCallUsage, RuleDecision
from blitz.v1 import turn_pb2


class RecordingIO:
    """A TurnIO that keeps everything the agent says, and hands over queued steer text.

    `stop_after` makes `before_model_call` raise the given error once that many calls
    were allowed, as the core does for MAX_TURNS or BUDGET_EXCEEDED. `rules` are the
    scope labels a stored rule approves, `denials` those one denies; each approval asked
    about is kept in `asked`.
    """

    def __init__(self) -> None:
        self.events: list[turn_pb2.TurnEvent] = []
        self.usage: list[ModelCallUsage] = []
        self.steer: list[str] = []
        self.model_calls = 0
        self.stop_after: tuple[int, Exception] | None = None
        self.on_model_call: Callable[[int], None] | None = None
        self.rules: set[str] = set()
        self.denials: set[str] = set()
        self.asked: list[turn_pb2.ApprovalRequest] = []
        self.originals: dict[str, bytes | None] = {}
        self.changes = 0
        # What `ask_now` answers, and the questions it was asked.
        self.answer_now = AnswerResult()
        self.asked_now: list[turn_pb2.Question] = []

    def emit(self, event: turn_pb2.TurnEvent) -> None:
        self.events.append(event)

    async def commit(self, event: turn_pb2.TurnEvent) -> None:
        self.events.append(event)

    async def pace(self) -> None:
        pass

    async def before_model_call(self) -> list[str]:
        if self.stop_after is not None and self.model_calls >= self.stop_after[0]:
            raise self.stop_after[1]
        self.model_calls += 1
        if self.on_model_call is not None:
            self.on_model_call(self.model_calls)
        steer, self.steer = self.steer, []
        return steer

    async def record_model_call(self, usage: ModelCallUsage) -> None:
        self.usage.append(usage)

    async def before_change(self) -> None:
        self.changes += 1

    async def before_file_change(self, path: str, content: bytes | None) -> None:
        self.originals.setdefault(path, content)

    async def rule_decides(self, approval: turn_pb2.ApprovalRequest) -> RuleDecision | None:
        self.asked.append(approval)
        if approval.scope_label in self.denials:
            return RuleDecision(allowed=False, rule=approval.scope_label)
        if approval.scope_label in self.rules:
            return RuleDecision(allowed=True, rule=approval.scope_label)
        return None

    async def pre_tool(
        self,
        approval: turn_pb2.ApprovalRequest,
        tool_input: Mapping[str, Any],
        *,
        rewritable: frozenset[str] = frozenset(),
    ) -> HookVerdict | None:
        return None  # no hooks here: tests/hooks runs them against a whole core

    async def ask_now(self, question: turn_pb2.Question) -> AnswerResult:
        self.asked_now.append(question)
        self.events.append(turn_pb2.TurnEvent(question=question))
        return self.answer_now

    # Views that keep the tests short.
    def of_kind(self, kind: str) -> list[turn_pb2.TurnEvent]:
        return [e for e in self.events if e.WhichOneof("kind") == kind]

    def partial_text(self, *, thought: bool = False) -> str:
        return "".join(
            e.text.text
            for e in self.of_kind("text")
            if e.text.partial and e.text.thought == thought
        )

    def final_texts(self, *, thought: bool = False) -> list[str]:
        return [
            e.text.text for e in self.of_kind("text") if e.text.repeat and e.text.thought == thought
        ]
