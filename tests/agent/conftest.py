"""Shared fixtures for the agent tests: a recording TurnIO, a workspace, a fresh Agent."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from blitz.agent import (
    Agent,
    AnswerResult,
    ApprovalResult,
    Completed,
    ModelCallUsage,
    Parked,
    Resolution,
)
from blitz.v1 import turn_pb2


class RecordingIO:
    """A TurnIO that keeps everything the agent says, and hands over queued steer text.

    `stop_after` makes `before_model_call` raise the given error once that many calls
    were allowed, as the core does for MAX_TURNS or BUDGET_EXCEEDED.
    """

    def __init__(self) -> None:
        self.events: list[turn_pb2.TurnEvent] = []
        self.committed: list[turn_pb2.TurnEvent] = []
        self.usage: list[ModelCallUsage] = []
        self.steer: list[str] = []
        self.model_calls = 0
        self.stop_after: tuple[int, Exception] | None = None
        self.on_model_call: Callable[[int], None] | None = None

    def emit(self, event: turn_pb2.TurnEvent) -> None:
        self.events.append(event)

    async def commit(self, event: turn_pb2.TurnEvent) -> None:
        self.events.append(event)
        self.committed.append(event)

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


@pytest.fixture
def io() -> RecordingIO:
    return RecordingIO()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def agent() -> Agent:
    return Agent(command_timeout=10, output_cap=4096)


Decide = Callable[[turn_pb2.TurnEvent], Resolution]


def approve(request: turn_pb2.TurnEvent) -> Resolution:
    """Approve every approval request; answer every question with its first option."""
    if request.HasField("question"):
        options = request.question.options
        return AnswerResult(answers=(options[0],) if options else ("yes",))
    return ApprovalResult(approved=True)


class Driver:
    """Runs a turn to its end, answering each park with `decide`.

    Every resume goes through a fresh `Agent` given only the parked history bytes, as after
    a restart, so nothing can leak from the run that parked.
    """

    def __init__(self, workspace: Path, **settings: Any) -> None:
        self.workspace = workspace
        self.settings = {"command_timeout": 10, "output_cap": 4096, **settings}
        self.parks: list[Parked] = []

    async def run(
        self,
        prompt: str,
        *,
        io: RecordingIO,
        decide: Decide = approve,
        history: bytes | None = None,
    ) -> Completed:
        outcome = await Agent(**self.settings).start(
            io=io, model="demo", workspace=self.workspace, history=history, prompt=prompt
        )
        while isinstance(outcome, Parked):
            self.parks.append(outcome)
            results = {_request_id(r): decide(r) for r in outcome.requests}
            outcome = await Agent(**self.settings).resume(
                io=io,
                model="demo",
                workspace=self.workspace,
                history=bytes(outcome.history),
                results=results,
            )
        return outcome


def _request_id(event: turn_pb2.TurnEvent) -> str:
    if event.HasField("question"):
        return event.question.request_id
    return event.approval_request.request_id


@pytest.fixture
def driver(workspace: Path) -> Driver:
    return Driver(workspace)


@pytest.fixture
def make_io() -> Callable[[], RecordingIO]:
    """A fresh RecordingIO per call, for tests that run several turns."""
    return RecordingIO


@pytest.fixture
def make_driver(workspace: Path) -> Callable[..., Driver]:
    """A Driver on the test's workspace with other Agent settings."""
    return lambda **settings: Driver(workspace, **settings)
