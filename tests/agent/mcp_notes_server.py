"""A tiny stdio MCP server for the tests: `add` numbers, `note` text, `crash` mid-call,
`book` a table after asking the user (an elicitation)."""

import os
from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import Elicit, ElicitationResult, MCPServer, Resolve
from pydantic import BaseModel, Field

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


class Booking(BaseModel):
    name: str = Field(description="Whose name the table is in")
    guests: int = Field(ge=1, le=12)
    terrace: bool = False


def _ask_booking() -> Elicit[Booking]:
    return Elicit("Book a table: who, and how many?", Booking)


@server.tool()
async def book(asked: Annotated[ElicitationResult[Booking], Resolve(_ask_booking)]) -> str:
    """Book a table, asking the user for the details."""
    if asked.action != "accept":
        return f"not booked: {asked.action}"
    where = "on the terrace" if asked.data.terrace else "inside"
    return f"booked for {asked.data.name}, {asked.data.guests} guests, {where}"


if __name__ == "__main__":
    server.run("stdio")
