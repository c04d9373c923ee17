"""Claude Code and Codex, the real ACP agents from npm, end to end through Blitz.

A whole server on 127.0.0.1 serves a session with the agent declared as an operator
would (`[agents.NAME]`: its program, its environment, the host's network, its folders
bound read-only in the box); clients reach it over real wires, and the agent reaches only
its scripted model server on 127.0.0.1 (support/agent_models.py). The agent reads a file
of the workspace and runs a command once a person approves it (decided from a second
client over Connect while the first streams the turn over gRPC); in the next turn it writes
a file, the diff in the approval; each turn ends with its text. A third turn is cancelled
while its permission waits: it ends CANCELLED and the command never runs. Another
principal sees none of it.

Every variable that sends traffic through a proxy points at a trap on 127.0.0.1 that
counts connections: the agent tried no other host. The agents are installed once into a
cache (support/npm_agents.py); without npm or the registry these tests skip (fail in CI).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support.agent_models import AnthropicModel, Call, ResponsesModel, Turn
from support.npm_agents import Agents, claude_env, codex_env, codex_home, installed
from support.servers import make_settings
from support.wire import Wire, expect_error, open_wire

from blitz.config import Settings
from blitz.config.agents import DeclaredAgent
from blitz.server import RunningServer, running_server
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

pytestmark = [pytest.mark.processes, pytest.mark.timeout(900)]

TOKENS = "alice:alice-token-1234,bob:bob-token-5678"
ALICE = {"authorization": "Bearer alice-token-1234"}
BOB = {"authorization": "Bearer bob-token-5678"}
NOTES = "alpha\nbeta\n"
COMMAND = "wc -l < notes.txt > count.txt"
# Codex's own sandbox for its commands: Landlock. Its default, bubblewrap, cannot nest in
# Blitz's box ("bwrap: setting up uid map: Operation not permitted": the box drops every
# capability), so every sandboxed command of Codex would fail (/tmp/real_e2e_report.md).
CODEX_EXTRA = "[features]\nuse_legacy_landlock = true\n"
# The agent's stderr, copied into a file of its home (Blitz still reads it too).
STDERR_LOG = "agent-stderr.log"
# ONE_PARK: each turn here parks once. A second park in the same turn is resumed as if
# the server had restarted (its agent stopped, the write never done): the driver hands
# the runner every resolution of the turn, the first park's too (/tmp/real_e2e_report.md).
# What would show an attempt to reach a host that is not there.
REFUSED = ("ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "getaddrinfo", "Connection refused")


@pytest.fixture(scope="module")
def agents() -> Agents:
    return installed()


class _Peers:
    """A model server that also records each connection's peer address."""

    peers: list[str]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.peers.append(str(writer.get_extra_info("peername")[0]))
        await super()._handle(reader, writer)  # type: ignore[misc]


class Anthropic(_Peers, AnthropicModel):
    def __init__(self) -> None:
        super().__init__()
        self.peers = []


class Responses(_Peers, ResponsesModel):
    def __init__(self) -> None:
        super().__init__()
        self.peers = []


class Trap:
    """A TCP listener on 127.0.0.1 that accepts and closes every connection, counting them:
    the agents' proxy, so that anything not sent to the model directly is seen here."""

    def __init__(self) -> None:
        self.connections = 0
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def __aenter__(self) -> Trap:
        async def caught(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            writer.close()

        self._server = await asyncio.start_server(caught, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()


def _offline(env: dict[str, str], trap: Trap) -> dict[str, str]:
    """The env builders' environment for Blitz: no HOME (Blitz sets it), proxies at the trap."""
    env = {k: v for k, v in env.items() if k != "HOME"}
    for key in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY"):
        env[key] = trap.url
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def declared(
    name: str, program: Path, env: dict[str, str], binds: tuple[str, ...], **more: Any
) -> DeclaredAgent:
    """The agent as an operator declares it; its stderr also copied into its home."""
    return DeclaredAgent(
        name=name,
        command="/bin/bash",
        args=("-c", f'exec "$0" 2> >(exec tee -a "$HOME/{STDERR_LOG}" >&2)', str(program)),
        env=env,
        network="host",
        binds=binds,
        start_timeout=120.0,
        **more,
    )


def server_settings(tmp_path: Path, agent: DeclaredAgent) -> Settings:
    """The server's settings with `agent` declared. Its binds are given as the commands'
    binds too: the runner does not bind an agent's own `binds` in its box yet (see
    /tmp/real_e2e_report.md), which the agent could not start without."""
    settings = make_settings(tmp_path / "data", tokens=TOKENS)
    return replace(
        settings,
        agents=(agent,),
        command_binds=agent.binds,
        approval_timeout=0,
        command_timeout=60.0,
    )


@contextlib.asynccontextmanager
async def clients(server: RunningServer) -> AsyncIterator[tuple[Wire, Wire, Wire]]:
    """alice streaming over gRPC, alice deciding over Connect, bob over Connect."""
    wires = (
        open_wire("grpc", server, ALICE),
        open_wire("connect", server, ALICE),
        open_wire("connect", server, BOB),
    )
    try:
        yield wires
    finally:
        for wire in wires:
            await wire.close()


async def approved_turn(
    streamer: Wire, decider: Wire, session_id: str, text: str
) -> tuple[list[t.TurnEvent], list[t.ApprovalRequest]]:
    """A turn streamed by `streamer`, each approval approved once by `decider`."""
    events: list[t.TurnEvent] = []
    approvals: list[t.ApprovalRequest] = []
    async for event in streamer.run(session_id, text):
        events.append(event)
        if event.HasField("approval_request"):
            approvals.append(event.approval_request)
            await decider.decide(session_id, event, "once")
    return events, approvals


async def cancelled_turn(
    streamer: Wire, canceller: Wire, session_id: str, text: str
) -> tuple[list[t.TurnEvent], t.ApprovalRequest]:
    """A turn cancelled from `canceller` while its first approval waits."""
    events: list[t.TurnEvent] = []
    asked: t.ApprovalRequest | None = None
    async for event in streamer.run(session_id, text):
        events.append(event)
        if event.HasField("approval_request") and asked is None:
            asked = event.approval_request
            await canceller.call("Cancel", s.CancelRequest(session_id=session_id))
    assert asked is not None, [e.WhichOneof("kind") for e in events]
    return events, asked


async def nothing_for_bob(bob: Wire, session_id: str) -> None:
    await expect_error(
        bob.call("GetSession", s.GetSessionRequest(session_id=session_id)),
        "not_found",
        "SESSION_NOT_FOUND",
    )
    listed = await bob.call("ListSessions", s.ListSessionsRequest())
    assert list(listed.sessions) == []


def workspace_of(settings: Settings, session: s.Session) -> Path:
    folder = (settings.workspace_root / session.workspace).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def assert_finished(events: list[t.TurnEvent], output: str) -> None:
    finished = events[-1].finished
    assert events[-1].HasField("finished")
    assert not finished.HasField("error"), (finished.error, notices(events))
    assert finished.output == output, notices(events)


def notices(events: list[t.TurnEvent]) -> list[str]:
    return [e.notice.text for e in events if e.HasField("notice")]


def stderr_of(settings: Settings, name: str, session_id: str) -> str:
    log = settings.data_dir / "agents" / name / session_id / "home" / STDERR_LOG
    return log.read_text(errors="replace")  # made by the agent's first start


def assert_offline(model: Any, trap: Trap, stderr: str, events: list[t.TurnEvent]) -> None:
    assert model.peers and set(model.peers) == {"127.0.0.1"}, model.peers
    assert trap.connections == 0, "the agent tried to reach something through the proxy"
    for word in REFUSED:
        assert word not in stderr, stderr[-2000:]
        assert not any(word in text for text in notices(events)), notices(events)


@pytest.fixture
def node_binds(agents: Agents) -> Iterator[tuple[str, ...]]:
    """The npm cache folder, and node's installation where it is outside /usr."""
    binds = [str(agents.root)]
    node = Path(shutil.which("node") or "/usr/bin/node").resolve()
    if not node.is_relative_to("/usr"):
        binds.append(str(node.parent.parent))
    yield tuple(binds)


async def test_claude_code_reads_runs_writes_and_is_cancelled_through_blitz(
    agents: Agents, node_binds: tuple[str, ...], tmp_path: Path
) -> None:
    async with Trap() as trap:
        with Anthropic() as model:
            env = _offline(claude_env(tmp_path, model.url), trap)
            agent = declared("claude", agents.claude, env, node_binds)
            settings = server_settings(tmp_path, agent)
            async with running_server(settings) as server, clients(server) as wires:
                streamer, decider, bob = wires
                session = await streamer.create_session(agent="claude")
                assert session.agent == "claude" and session.model == "acp:claude"
                ws = workspace_of(settings, session)
                (ws / "notes.txt").write_text(NOTES)
                bash = {"command": COMMAND, "timeout": 30000}
                write = {"file_path": str(ws / "out.txt"), "content": "written\n"}
                model.script(
                    Turn(
                        text="Reading.",
                        calls=[Call("mcp__acp__Read", {"file_path": str(ws / "notes.txt")})],
                    ),
                    Turn(calls=[Call("mcp__acp__Bash", bash)]),
                    Turn(text="Counted."),
                    Turn(calls=[Call("mcp__acp__Write", write)]),
                    Turn(text="All done."),
                )
                # The read through fs (no approval), the command once approved, run in
                # Blitz's box through a terminal. One approval per turn: ONE_PARK.
                events, approvals = await approved_turn(streamer, decider, session.id, "Count.")
                assert_finished(events, "Counted.")
                assert [(a.kind, a.detail) for a in approvals] == [(t.ACTION_KIND_COMMAND, COMMAND)]
                assert (ws / "count.txt").read_text().strip() == "2"
                results = [model.tool_results(r) for r in model.conversation[1:3]]
                assert "alpha" in str(results[0]), results[0]
                assert "Exited with code 0" in str(results[1]), results[1]

                # The write: its diff in the approval, then written through fs.
                more, approvals = await approved_turn(streamer, decider, session.id, "Write.")
                events += more
                assert_finished(more, "All done.")
                assert [(a.kind, a.detail) for a in approvals] == [(t.ACTION_KIND_WRITE, "out.txt")]
                assert "+written" in approvals[0].diff and "b/out.txt" in approvals[0].diff
                assert (ws / "out.txt").read_text() == "written\n"
                changed = [e.file_changed for e in more if e.HasField("file_changed")]
                assert [(c.path, c.kind) for c in changed] == [
                    ("out.txt", t.FileChanged.KIND_CREATED)
                ]
                assert len(model.conversation) == 5 and model.exhausted == 0

                # A third turn, cancelled from the other client while its permission waits.
                never = {"command": "touch never.txt", "timeout": 30000}
                model.script(
                    Turn(text="Running.", calls=[Call("mcp__acp__Bash", never)]),
                    Turn(text="too late"),
                )
                cancelled, asked = await cancelled_turn(streamer, decider, session.id, "Again.")
                events += cancelled
                assert (asked.kind, asked.detail) == (t.ACTION_KIND_COMMAND, "touch never.txt")
                assert cancelled[-1].finished.error.reason == "CANCELLED", cancelled[-1]
                await nothing_for_bob(bob, session.id)
            # The server and its agent are stopped now: the command never ran.
            assert not (ws / "never.txt").exists()
            assert_offline(model, trap, stderr_of(settings, "claude", session.id), events)


async def test_codex_reads_runs_patches_and_is_cancelled_through_blitz(
    agents: Agents, node_binds: tuple[str, ...], tmp_path: Path
) -> None:
    patch = "*** Begin Patch\n*** Add File: out.txt\n+written\n*** End Patch\n"
    escalated = {"sandbox_permissions": "require_escalated", "justification": "May I?"}
    async with Trap() as trap:
        with Responses() as model:
            config = codex_home(tmp_path / "codex-config", model.url, extra=CODEX_EXTRA)
            config = config / "config.toml"
            env = _offline(codex_env(tmp_path / "unused-home", model.url), trap)
            env["CODEX_HOME"] = "~/.codex"
            env.pop("PATH", None)  # bwrap is not needed: CODEX_EXTRA
            agent = declared(
                "codex",
                agents.codex,
                env,
                node_binds,
                home_files={".codex/config.toml": str(config)},
            )
            settings = server_settings(tmp_path, agent)
            async with running_server(settings) as server, clients(server) as wires:
                streamer, decider, bob = wires
                session = await streamer.create_session(agent="codex")
                ws = workspace_of(settings, session)
                (ws / "notes.txt").write_text(NOTES)
                model.script(
                    Turn(text="Reading.", calls=[Call("exec_command", {"cmd": "cat notes.txt"})]),
                    Turn(calls=[Call("exec_command", {"cmd": COMMAND, **escalated})]),
                    Turn(text="Counted."),
                    Turn(calls=[Call("apply_patch", patch)]),
                    Turn(text="All done."),
                )
                # The read in Codex's own sandbox (nested in Blitz's box), no approval; the
                # escalated command once approved. One approval per turn: ONE_PARK.
                events, approvals = await approved_turn(streamer, decider, session.id, "Count.")
                assert_finished(events, "Counted.")
                assert [(a.kind, a.detail) for a in approvals] == [(t.ACTION_KIND_COMMAND, COMMAND)]
                assert (ws / "count.txt").read_text().strip() == "2"
                outputs = [model.tool_results(r)[-1]["output"] for r in model.conversation[1:3]]
                assert "alpha\nbeta" in outputs[0], outputs[0]
                assert "exited with code 0" in outputs[1], outputs[1]

                # The patch: its diff in the approval; Codex writes the file itself.
                more, approvals = await approved_turn(streamer, decider, session.id, "Write.")
                events += more
                assert_finished(more, "All done.")
                assert [(a.kind, a.detail) for a in approvals] == [(t.ACTION_KIND_WRITE, "out.txt")]
                assert "+written" in approvals[0].diff and "b/out.txt" in approvals[0].diff
                assert (ws / "out.txt").read_text() == "written\n"
                assert "Success" in model.tool_results(model.conversation[4])[-1]["output"]
                assert len(model.conversation) == 5 and model.exhausted == 0

                model.script(
                    Turn(
                        text="Running.",
                        calls=[Call("exec_command", {"cmd": "touch never.txt", **escalated})],
                    ),
                    Turn(text="too late"),
                )
                cancelled, asked = await cancelled_turn(streamer, decider, session.id, "Again.")
                events += cancelled
                assert (asked.kind, asked.detail) == (t.ACTION_KIND_COMMAND, "touch never.txt")
                assert cancelled[-1].finished.error.reason == "CANCELLED", cancelled[-1]
                await nothing_for_bob(bob, session.id)
            assert not (ws / "never.txt").exists()
            assert_offline(model, trap, stderr_of(settings, "codex", session.id), events)
