"""A tiny stdio MCP server for the tests: `add` numbers, `note` text, `crash` mid-call."""

import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("notes")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.tool()
def note(text: str) -> str:
    """Append a line to notes.txt in the working directory."""
    with Path("notes.txt").open("a") as f:
        f.write(text + "\n")
    return f"noted: {text}"


@server.tool()
def crash(why: str) -> str:
    """End the server mid-call, as a crashing server does (the client sees no answer)."""
    os._exit(3)


if __name__ == "__main__":
    server.run("stdio")
