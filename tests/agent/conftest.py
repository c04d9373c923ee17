"""Shared fixtures for the agent tests: a recording TurnIO, a workspace, a fresh Agent."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.recording_io import RecordingIO

from blitz.agent import Agent
from blitz.ports import AnswerResult, ApprovalResult, Completed, Parked, Resolution
from blitz.v1 import turn_pb2

__all__ = ["Decide", "Driver", "RecordingIO", "approve"]


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
