"""MCP servers from configuration, offered to the model as tools that need MCP approval.

The configuration is a JSON file (`--mcp-config`) in the shape MCP clients share:

    {"mcpServers": {
        "files": {"command": "python", "args": ["server.py"], "env": {"K": "V"}},
        "web":   {"url": "http://127.0.0.1:9000/mcp"}}}

An entry with `command` is launched over stdio (in the session's workspace), one with
`url` is reached over streamable HTTP. `McpConnections` opens every server for one agent run
as one `async with` and closes them all after it; its tools are named `server.tool` for
people (events, approval requests, scope `mcp: server.tool`) and `server__tool` for models,
since providers accept only letters, digits, `_` and `-` in tool names. Every call passes
the policy gate as an ACTION_KIND_MCP action: what an MCP tool changes is unknown. A
server that fails to start is reported to the client in a notice, never fatal to a turn.

A server may ask the user for something while a call of its runs (MCP's elicitation). A
form becomes a `Question` with that `form` (blitz.forms checks it is one a client can
show; one that is not is refused to the server in our words), and a URL to visit becomes
a question of two options whose last two lines are the URL and `opens <host>`, so that
clients can show where it leads apart from the server's words. Only an `https` URL (or
`http` to this machine), with a host, no user name and nothing but printable ASCII, is
asked: any other is declined to the server, and a notice tells the client why, without
the URL. Either is asked while the turn runs (`TurnIO.ask_now`: the
server waits on its connection, so the turn cannot park), and the user's answer goes back
as the server's `accept` (with the form's values), `decline`, or `cancel` when no answer
came. An aside never waits for the user, so its servers' requests are declined.

What the MCP SDK raises is said in our own words — which server, which tool, the
exception's type — to the client and the model; its text, which may carry a server's
internals, goes to the log only.
"""

from __future__ import annotations

import ipaddress
import json
import re
import uuid
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import structlog
from pydantic_ai import RunContext, Tool
from pydantic_ai.toolsets import FunctionToolset

from blitz.agent.deps import ToolDeps
from blitz.agent.policy import Action, Rewrite, gate_input
from blitz.forms import form_problem
from blitz.ports import TurnIO, TurnPolicy
from blitz.v1 import turn_pb2

__all__ = ["McpConnections", "McpServerSpec", "load_mcp_config"]

log = structlog.get_logger(__name__)

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
# What providers accept as a tool name (OpenAI's rule, the strictest).
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# Model-facing name: server and tool joined by a separator providers accept.
_SEP = "__"
# The options of a server's request to visit a URL.
_URL_DONE = "I have done it"
_URL_DECLINE = "Decline"
# The longest URL a server may ask the user to open.
_URL_MAX = 2048


@dataclass(frozen=True)
class McpServerSpec:
    """One configured MCP server: a command to launch over stdio, or a URL."""

    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str = ""


def load_mcp_config(path: str | Path) -> tuple[McpServerSpec, ...]:
    """The servers a config file lists; ValueError naming the file and entry when invalid."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"MCP config {path}: cannot read it: {exc}") from None
    servers = data.get("mcpServers", data.get("servers")) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ValueError(f'MCP config {path}: expected {{"mcpServers": {{NAME: {{...}}}}}}')
    specs: list[McpServerSpec] = []
    for name, entry in servers.items():
        where = f"MCP config {path}: server {name!r}"
        if not _NAME.match(name) or _SEP in name:
            raise ValueError(f"{where}: names are letters, digits, '_' and '-' (no '__')")
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: expected an object")
        command, url = entry.get("command", ""), entry.get("url", "")
        if bool(command) == bool(url):
            raise ValueError(f"{where}: give either 'command' or 'url'")
        args, env = entry.get("args", []), entry.get("env", {})
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ValueError(f"{where}: 'args' must be a list of strings")
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise ValueError(f"{where}: 'env' must map names to strings")
        specs.append(McpServerSpec(name, command=command, args=tuple(args), env=env, url=url))
    return tuple(specs)


class McpConnections:
    """The configured servers, connected for one run; `toolset` offers their tools.
    `io` and `policy` are the run's: its servers' requests to the user go through them."""

    def __init__(
        self,
        specs: tuple[McpServerSpec, ...],
        *,
        cwd: Path,
        io: TurnIO | None = None,
        policy: TurnPolicy | None = None,
    ) -> None:
        self._specs = specs
        self._cwd = cwd
        self._io = io
        self._policy = policy
        self._stack = AsyncExitStack()
        self.tools: list[Tool[ToolDeps]] = []
        # Model-facing name -> `server.tool`.
        self.display_names: dict[str, str] = {}
        # Servers that could not be reached, with why (in our words).
        self.failures: dict[str, str] = {}

    async def __aenter__(self) -> McpConnections:
        await self._stack.__aenter__()
        try:
            for spec in self._specs:
                await self._connect(spec)
        except BaseException:
            await self._stack.aclose()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._stack.__aexit__(exc_type, exc, tb)

    def toolset(self) -> FunctionToolset[ToolDeps]:
        return FunctionToolset[ToolDeps](self.tools)

    def notices(self) -> list[turn_pb2.TurnEvent]:
        """An error notice for each server that could not be reached."""
        return [
            turn_pb2.TurnEvent(
                notice=turn_pb2.Notice(
                    text=f"MCP server {server} is unavailable: {why}", error=True
                )
            )
            for server, why in self.failures.items()
        ]

    async def _connect(self, spec: McpServerSpec) -> None:
        from mcp import Client, StdioServerParameters

        target: Any
        if spec.command:
            target = StdioServerParameters(
                command=spec.command, args=list(spec.args), env=dict(spec.env), cwd=self._cwd
            )
        else:
            target = spec.url
        # Each server in its own stack, so one that fails to start leaves the others up.
        inner = AsyncExitStack()
        try:
            client = await inner.enter_async_context(
                Client(target, elicitation_callback=partial(self._elicit, spec.name))
            )
            listed = await client.list_tools()
        except Exception as exc:
            await inner.aclose()
            log.warning("mcp_server_unavailable", server=spec.name, exc_info=exc)
            how = "could not be started" if spec.command else "could not be reached"
            self.failures[spec.name] = (
                f"it {how} or did not answer ({_kind(exc)}); the server log has the details"
            )
            return
        self._stack.push_async_exit(inner)
        for tool in listed.tools:
            if not _TOOL_NAME.match(f"{spec.name}{_SEP}{tool.name}"):
                log.warning("mcp_tool_skipped", server=spec.name, tool=tool.name)
                continue
            self.tools.append(self._tool(spec.name, client, tool))

    async def _elicit(self, server: str, context: Any, params: Any) -> Any:
        """A server's request to the user, asked while the turn runs (see the module doc)."""
        from mcp import types

        io = self._io
        if io is None or (self._policy is not None and self._policy.aside):
            return types.ElicitResult(action="decline")
        question = turn_pb2.Question(
            request_id=f"mcp_{uuid.uuid4().hex[:16]}", question=params.message, mcp_server=server
        )
        if getattr(params, "mode", "form") == "url":
            host = _url_host(params.url)
            if host is None:
                log.info("mcp_elicitation_refused", server=server, problem="url")
                text = (
                    f"MCP server {server} asked to open a URL that is not https (nor http to "
                    "this machine), or hides where it leads; it was declined"
                )
                io.emit(turn_pb2.TurnEvent(notice=turn_pb2.Notice(text=text)))
                return types.ElicitResult(action="decline")
            question.question = f"{params.message}\n{params.url}\nopens {host}"
            question.options[:] = [_URL_DONE, _URL_DECLINE]
            answer = await io.ask_now(question)
            if not answer.answers:
                return types.ElicitResult(action="cancel")
            done = answer.answers[0] == _URL_DONE
            return types.ElicitResult(action="accept" if done else "decline")
        form = dict(params.requested_schema or {})
        if problem := form_problem(form):
            log.info("mcp_elicitation_refused", server=server, problem=problem)
            return types.ErrorData(
                code=types.INVALID_PARAMS, message=f"Blitz cannot show this form: {problem}"
            )
        question.form.update(form)
        answer = await io.ask_now(question)
        if answer.declined:
            return types.ElicitResult(action="decline")
        if answer.values is None:
            return types.ElicitResult(action="cancel")
        return types.ElicitResult(action="accept", content=_typed(form, answer.values))

    def _tool(self, server: str, client: Any, tool: Any) -> Tool[ToolDeps]:
        shown = f"{server}.{tool.name}"
        model_name = f"{server}{_SEP}{tool.name}"
        self.display_names[model_name] = shown

        schema = tool.input_schema or {"type": "object", "properties": {}}
        properties = schema.get("properties")
        named = frozenset(properties) if isinstance(properties, dict) else frozenset()

        def action(args: dict[str, Any]) -> Action:
            detail = f"{shown} {json.dumps(args, sort_keys=True, default=str)}"
            return Action(turn_pb2.ACTION_KIND_MCP, detail, f"mcp: {shown}")

        async def reshape(rewritten: dict[str, Any]) -> tuple[Action, dict[str, Any]]:
            return action(rewritten), rewritten

        async def call(ctx: RunContext[ToolDeps], **args: Any) -> dict[str, Any]:
            # A pre_tool hook may rewrite any argument the tool takes; the server is called
            # with what it left.
            rewrite = Rewrite(named | frozenset(args), reshape)
            refused, rewritten = await gate_input(
                ctx, action(args), tool_input=args, rewrite=rewrite
            )
            if refused:
                return {"tool": shown, "error": refused}
            if rewritten is not None:
                args = rewritten
            await ctx.deps.io.before_change()  # what an MCP tool changes is unknown
            try:
                result = await client.call_tool(tool.name, args)
            except Exception as exc:
                log.warning("mcp_call_failed", server=server, tool=tool.name, exc_info=exc)
                return {
                    "tool": shown,
                    "error": f"the MCP call to {shown} failed ({_kind(exc)}); "
                    "the server log has the details",
                }
            return _result(shown, result)

        return Tool.from_schema(
            call,
            name=model_name,
            description=tool.description or f"{shown} (MCP tool)",
            json_schema=schema,
            takes_ctx=True,
        )


def _url_host(url: str) -> str | None:
    """The host a URL to open leads to; None when it may not be asked (see the module doc).

    Printable ASCII only (an international name comes as punycode), so that what is shown
    is what is opened; no user name, which `https://bank.example@evil.example` uses to
    look like another host.
    """
    if not 0 < len(url) <= _URL_MAX or not url.isascii() or not url.isprintable() or " " in url:
        return None
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not one
    except ValueError:
        return None
    host = parts.hostname
    if not host or parts.username is not None or parts.password is not None:
        return None
    if parts.scheme == "https" or (parts.scheme == "http" and _loopback(host)):
        return host
    return None


def _loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _typed(form: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """The values as the form's types say: JSON numbers arrive as floats, integers too."""
    properties = form.get("properties", {})
    typed: dict[str, Any] = {}
    for name, value in values.items():
        kind = properties.get(name, {}).get("type")
        if kind == "integer" and isinstance(value, float) and value.is_integer():
            value = int(value)
        typed[name] = value
    return typed


def _result(shown: str, result: Any) -> dict[str, Any]:
    texts: list[str] = []
    for item in result.content:
        text = getattr(item, "text", None)
        texts.append(text if isinstance(text, str) else f"({item.type} content)")
    out: dict[str, Any] = {"tool": shown, "content": "\n".join(texts)}
    if result.structured_content is not None:
        out["structured"] = result.structured_content
    if result.is_error:
        out["error"] = out["content"] or "the MCP tool reported an error"
    return out


def _kind(exc: BaseException) -> str:
    """The exception's type name; of the first one inside, for a group (anyio raises those)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return type(exc).__name__
