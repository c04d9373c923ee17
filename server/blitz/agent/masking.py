"""The server's own secrets never reach the model through a tool's result.

`ServerSecretsMasked` wraps a toolset: whatever a tool returns — a command's output, a file
it read, a page it fetched, an MCP tool's answer — has the server's configured secrets
(provider keys, bearer tokens: `blitz.redact.add_known_secrets`) replaced by `***` before
it goes into the conversation. Anything else a tool returns is the user's own workspace and
goes to the model as it is (see docs/security.md). The tool itself ran with real values.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.toolsets import WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from blitz.agent.deps import ToolDeps
from blitz.redact import mask_known

__all__ = ["ServerSecretsMasked"]


class ServerSecretsMasked(WrapperToolset[ToolDeps]):
    """A toolset whose results carry none of the server's own secrets."""

    async def call_tool(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[ToolDeps],
        tool: ToolsetTool[ToolDeps],
    ) -> Any:
        return _masked(await super().call_tool(name, tool_args, ctx, tool))


def _masked(value: Any) -> Any:
    if isinstance(value, str):
        return mask_known(value)
    if isinstance(value, dict):
        return {key: _masked(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_masked(item) for item in value]
    return value
