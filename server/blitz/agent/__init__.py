"""The agent layer: the model conversation and the workspace tools of one turn.

`Agent` implements `blitz.ports.AgentPort`: the core calls `start` / `resume` with a
`TurnIO`, and `validate_model` when a session names its model. Everything else here is
implementation.
"""

from blitz.agent.demo import DEMO_MODEL_NAME, DemoModel
from blitz.agent.deps import FetchLimits
from blitz.agent.mcp_servers import McpServerSpec, load_mcp_config
from blitz.agent.models import ModelAccess, resolve_model, validate_model
from blitz.agent.retrying import RetryPolicy
from blitz.agent.runner import Agent

__all__ = [
    "DEMO_MODEL_NAME",
    "Agent",
    "DemoModel",
    "FetchLimits",
    "McpServerSpec",
    "ModelAccess",
    "RetryPolicy",
    "load_mcp_config",
    "resolve_model",
    "validate_model",
]
