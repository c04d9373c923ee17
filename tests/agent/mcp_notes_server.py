"""A tiny stdio MCP server for the tests: `add` numbers, and `note` text into notes.txt."""

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


if __name__ == "__main__":
    server.run("stdio")
