"""The agent layer: the model conversation and the workspace tools of one turn.

The core calls `Agent.start` / `Agent.resume` with a `TurnIO` (see `contract.py`), and
`validate_model` when a session names its model. Everything else here is implementation.
"""

from blitz.agent.contract import (
    AnswerResult,
    ApprovalResult,
    Completed,
    ModelCallUsage,
    Parked,
    Resolution,
    TurnIO,
)
from blitz.agent.demo import DEMO_MODEL_NAME, DemoModel
from blitz.agent.models import resolve_model, validate_model
from blitz.agent.runner import Agent

__all__ = [
    "DEMO_MODEL_NAME",
    "Agent",
    "AnswerResult",
    "ApprovalResult",
    "Completed",
    "DemoModel",
    "ModelCallUsage",
    "Parked",
    "Resolution",
    "TurnIO",
    "resolve_model",
    "validate_model",
]
