"""The agent layer: the model conversation and the workspace tools of one turn.

The core calls `Agent.start` / `Agent.resume` with a `TurnIO` (see `contract.py`), and
`validate_model` when a session names its model. Everything else here is implementation.
"""

from blitz.agent.contract import (
    AnswerResult,
    ApprovalResult,
    Completed,
    ImageInput,
    ModelCallUsage,
    Parked,
    Resolution,
    TurnIO,
    TurnPolicy,
)
from blitz.agent.demo import DEMO_MODEL_NAME, DemoModel
from blitz.agent.deps import FetchLimits
from blitz.agent.html_text import html_to_text
from blitz.agent.mcp_servers import McpServerSpec, load_mcp_config
from blitz.agent.models import ModelAccess, resolve_model, validate_model
from blitz.agent.retrying import RetryPolicy
from blitz.agent.runner import Agent

__all__ = [
    "DEMO_MODEL_NAME",
    "Agent",
    "AnswerResult",
    "ApprovalResult",
    "Completed",
    "DemoModel",
    "FetchLimits",
    "ImageInput",
    "McpServerSpec",
    "ModelAccess",
    "ModelCallUsage",
    "Parked",
    "Resolution",
    "RetryPolicy",
    "TurnIO",
    "TurnPolicy",
    "html_to_text",
    "load_mcp_config",
    "resolve_model",
    "validate_model",
]
