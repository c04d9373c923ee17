"""A tiny stdio MCP server for the tests: `add` numbers, `note` text, `crash` mid-call,
`book` a table after asking the user (an elicitation), `visit` a URL it asks the user to
open (an elicitation in URL mode)."""

import os
from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import Context, Elicit, ElicitationResult, MCPServer, Resolve
from mcp.types import (
    ElicitRequest,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequiredResult,
)
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


@server.tool()
async def visit(url: str, ctx: Context) -> InputRequiredResult | str:
    """Ask the user to open `url`; says what the client answered."""
    answered = ctx.input_responses
    if not answered:
        params = ElicitRequestURLParams(message="Sign in to continue", url=url, elicitation_id="v1")
        return InputRequiredResult(input_requests={"visit": ElicitRequest(params=params)})
    result = answered["visit"]
    assert isinstance(result, ElicitResult)
    return f"visit: {result.action}"


if __name__ == "__main__":
    server.run("stdio")
