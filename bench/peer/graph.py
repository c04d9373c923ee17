"""The graph LangGraph's dev server runs for the comparison: the `$ echo` turn, as a team
would write it with LangGraph.

It is loaded by `langgraph dev` in the peer's own virtual environment (bench/peer/venv.py),
never by Blitz's: nothing here may import Blitz or the rest of the harness. The turn it
runs is the one Blitz's demo model runs for `$ echo parked-I`:

1. `agent`: a deterministic chat model (`EchoModel`, a real langchain-core chat model, no
   network) answers a prompt `$ COMMAND` with one tool call, `shell(command=COMMAND)`;
2. `tools`: langgraph's `ToolNode` calls `shell`, which asks for approval with
   `interrupt()`: the run ends there, `interrupted`, and the thread is parked;
3. resumed with `Command(resume="approve")`, `shell` runs the command (a subprocess, as
   Blitz's does) and returns its output;
4. `agent` again: the model answers the tool's output with a final message.
"""

from __future__ import annotations

import asyncio
import shlex
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import interrupt

__all__ = ["graph"]


class EchoModel(BaseChatModel):
    """A chat model that answers from the conversation alone: `$ COMMAND` → a `shell` tool
    call, a tool's output → "Ran it: OUTPUT", anything else → the same text back."""

    @property
    def _llm_type(self) -> str:
        return "blitz-bench-echo"

    def _answer(self, messages: list[BaseMessage]) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            message = AIMessage(content=f"Ran it: {str(last.content).strip()}")
        elif isinstance(last, HumanMessage) and str(last.content).startswith("$ "):
            command = str(last.content)[2:]
            call = {"name": "shell", "args": {"command": command}, "id": f"call-{len(messages)}"}
            message = AIMessage(content="", tool_calls=[call])
        else:
            message = AIMessage(content=str(last.content))
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        return self._answer(messages)

    async def _agenerate(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> ChatResult:
        # Its own, so that the model is called on the loop, not in a thread (the default).
        return self._answer(messages)


@tool
async def shell(command: str) -> str:
    """Run a shell command once the user approves it."""
    decision = interrupt({"command": command, "question": "Run this command?"})
    if decision != "approve":
        return f"not run: {decision}"
    proc = await asyncio.create_subprocess_exec(
        *shlex.split(command), stdout=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.DEVNULL
    )
    output, _ = await proc.communicate()
    return output.decode()


_model = EchoModel()


async def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
    return {"messages": [await _model.ainvoke(state["messages"])]}


_builder = StateGraph(MessagesState)
_builder.add_node("agent", agent)
_builder.add_node("tools", ToolNode([shell]))
_builder.add_edge(START, "agent")
_builder.add_conditional_edges("agent", tools_condition)  # a tool call → tools, else the end
_builder.add_edge("tools", "agent")
graph = _builder.compile()
