"""The agent layer: the model conversation and the workspace tools of one turn.

`Agent` implements `blitz.ports.AgentPort`: the core calls `start` / `resume` / `compact`
with a `TurnIO`, and `validate_model` when a session names its model. Everything else here
is implementation. The package imports nothing of `blitz.core`, `blitz.store`,
`blitz.transport` or `blitz.server`: it meets them only through `blitz.ports`.

    agent.py        Agent: puts a turn's run together (models, tools, MCP, sub-agents)
    loop.py         the model loop: one pydantic-ai run to its end; retries model calls
    retrying.py     what a failed model call means (retry, overflow, fail) and its words
    subagents.py    what a run shares with its sub-agents, and how each of them runs
    delegation.py   the `delegate` tool;  handoff.py: the types a delegation hands over
    parking.py      deferred calls to requests, and resolutions back on resume
    events.py       pydantic-ai stream events to TurnEvents
    deps.py         what tools act with;  policy.py: the gate every action passes
    tools.py        the workspace tools; shell.py, fetch.py, search.py, diffs.py, tasks.py
    mcp_servers.py  configured MCP servers as tools
    models.py       model names to pydantic-ai models;  window.py: fitting the context
    compaction.py   summarising a history;  ledger.py: a model call to a ledger entry
    demo/           the built-in offline `demo` model
"""

from blitz.agent.agent import Agent
from blitz.agent.box import BoxSpec
from blitz.agent.demo import DEMO_MODEL_NAME, DemoModel
from blitz.agent.deps import FetchLimits
from blitz.agent.mcp_servers import McpServerSpec, load_mcp_config
from blitz.agent.models import ModelAccess, available_models, resolve_model, validate_model
from blitz.agent.retrying import RetryPolicy
from blitz.agent.sandbox import CommandLimits, CommandSandbox, Isolation, isolation

__all__ = [
    "DEMO_MODEL_NAME",
    "Agent",
    "BoxSpec",
    "CommandLimits",
    "CommandSandbox",
    "DemoModel",
    "FetchLimits",
    "Isolation",
    "McpServerSpec",
    "ModelAccess",
    "RetryPolicy",
    "available_models",
    "isolation",
    "load_mcp_config",
    "resolve_model",
    "validate_model",
]
