"""One ACP agent process: a child in its box, its connection, its inbox, its end.

`AgentProcess.open` starts the agent (docs/agents.md, "The box"), drains its stderr into
a ring all the time (an undrained pipe blocks the agent), and speaks `initialize` and
`session/new` or `session/load` (B1, B3, B4) within the agent's start timeout. From then
on everything the agent sends for the session arrives in `inbox`, in the order it was
sent: what `AgentClient` (client.py) makes of its requests and updates (`Update`, `Ask`),
terminal output (`Output`) and the prompt's end (`PromptEnd`). The runner consumes the
inbox; while a turn is parked nothing does, and the agent's pending request simply waits
for its future. `cancel`, `withdraw` and `stop` answer what is still open `cancelled`;
`stop` ends the child and its box. What the agent asks is answered in client.py and
decided in decisions.py: this module keeps the process, its connection and its inbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import os
import shlex
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
from acp import PROTOCOL_VERSION, RequestError
from acp.client.router import build_client_router
from acp.connection import Connection

from blitz.acp.client import AgentClient, Ask, Output, Update
from blitz.acp.mapping import TurnMapper
from blitz.acp.terminals import Terminal, TerminalLimits
from blitz.acp.transport import BoundedTransport, StderrRing
from blitz.agent.sandbox import CommandSandbox, Launch
from blitz.agent.shell import clean_up
from blitz.config.agents import DeclaredAgent
from blitz.errors import BlitzError, Reason
from blitz.redact import mask_known

__all__ = ["AgentProcess", "Item", "PromptEnd"]

log = structlog.get_logger(__name__)

_STOP_GRACE_S = 2.0


@dataclass
class PromptEnd:
    """`session/prompt` answered (`response`) or failed (`error`)."""

    response: dict[str, Any] | None = None
    error: BaseException | None = None


Item = Update | Ask | Output | PromptEnd


class AgentProcess:
    """One agent's child process for one session."""

    def __init__(
        self,
        *,
        spec: DeclaredAgent,
        session_id: str,
        workspace: Path,
        home: Path,
        sandbox: CommandSandbox,
        terminals: TerminalLimits,
        mcp_servers: list[dict[str, Any]] | None = None,
    ) -> None:
        self.spec = spec
        self.session_id = session_id
        self.workspace = workspace
        self.home = home
        self._sandbox = sandbox
        self._terminal_limits = terminals
        self._mcp_servers = mcp_servers or []
        self.inbox: asyncio.Queue[Item] = asyncio.Queue()
        self.acp_session_id = ""
        self.load_session = False
        self.agent_version = ""
        self.modes: dict[str, Any] | None = None
        self.prompt_capabilities: dict[str, Any] = {}
        self.commands: list[dict[str, Any]] = []
        # Parked asks by request id (the turn waits for a person on them).
        self.parked: dict[str, Ask] = {}
        # Requests the agent waits on Blitz for: while any is open the agent may be silent.
        self.owed = 0
        self.terminals: dict[str, Terminal] = {}
        # The turn using it: its mapper, and what its approved permissions cover (a write
        # to these paths; each of these command lines once), for fs and terminal calls.
        self.mapper: TurnMapper | None = None
        self.approved_paths: set[str] = set()
        self.approved_commands: list[str] = []
        self.busy = False
        self.last_used = time.monotonic()
        self._stderr = StderrRing()
        self._replaying = False
        self._proc: asyncio.subprocess.Process | None = None
        self._launch: Launch | None = None
        self._transport: BoundedTransport | None = None
        # The JSON-RPC connection (the SDK's), its requests answered by `AgentClient`. Blitz
        # speaks it in the wire's own JSON: what the tables map is what the agent sent.
        self._rpc: Connection | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._prompt: asyncio.Task[Any] | None = None
        self.stopped = False

    # Starting

    async def open(self, acp_session_id: str = "") -> bool:
        """Start the process and its ACP session: `session/load` of `acp_session_id` where
        the agent offers it, else a new one. True when the session was loaded."""
        await self._spawn()
        try:
            async with asyncio.timeout(self.spec.start_timeout):
                await self._initialize()
                if acp_session_id and self.load_session:
                    with contextlib.suppress(RequestError):
                        await self._load(acp_session_id)
                        return True
                await self._new()
                return False
        except TimeoutError:
            await self.stop()
            raise BlitzError(
                Reason.AGENT_TIMEOUT,
                f"the agent {self.spec.name!r} did not start within {self.spec.start_timeout:g} s"
                + self.stderr_note(),
            ) from None
        except BlitzError:
            await self.stop()
            raise
        except (ConnectionError, RequestError, OSError) as exc:
            fault = self.fault(exc)
            await self.stop()
            raise BlitzError(
                Reason.AGENT_UNAVAILABLE if fault.reason is Reason.AGENT_CRASHED else fault.reason,
                f"the agent {self.spec.name!r} could not start: {fault.message}",
                fault.metadata,
            ) from None

    def _environment(self) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "HOME": str(self.home),
        }
        for key, value in self.spec.env.items():
            env[key] = str(self.home) + value[1:] if value.startswith("~/") else value
        return env

    async def _spawn(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        for inside, source in self.spec.home_files.items():
            target = self.home / inside
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        line = "exec " + shlex.join([self.spec.command, *self.spec.args])
        launch = self._sandbox.launch(
            line,
            workspace=self.workspace,
            env=self._environment(),
            network=self.spec.network == "host",
            writable=True,
            also_writable=(self.home,),
        )
        self._launch = launch
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *launch.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=launch.env,
                cwd=self.workspace,
                preexec_fn=launch.preexec_fn,
                start_new_session=True,
                limit=256 * 1024,
            )
        except OSError as exc:
            await asyncio.to_thread(clean_up, launch)
            raise BlitzError(
                Reason.AGENT_UNAVAILABLE,
                f"the agent {self.spec.name!r} could not be started: {exc.strerror or exc}",
            ) from None
        assert self._proc.stdout and self._proc.stdin and self._proc.stderr
        self._transport = BoundedTransport(self._proc.stdout, self._proc.stdin)
        self._spawn_task(self._stderr.drain(self._proc.stderr), "stderr")
        self._rpc = Connection(build_client_router(AgentClient(self)), self._transport)  # type: ignore[arg-type]
        log.info("acp_agent_started", agent=self.spec.name, pid=self._proc.pid)

    async def _initialize(self) -> None:
        answer = await self.rpc.send_request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "clientCapabilities": {
                    "fs": {
                        "readTextFile": self.spec.client_fs,
                        "writeTextFile": self.spec.client_fs,
                    },
                    "terminal": self.spec.client_terminal,
                },
                "clientInfo": {"name": "blitz", "title": "Blitz", "version": _version()},
            },
        )
        answer = answer or {}
        if answer.get("protocolVersion") != PROTOCOL_VERSION:
            raise BlitzError(
                Reason.AGENT_UNAVAILABLE,
                f"the agent {self.spec.name!r} speaks ACP {answer.get('protocolVersion')!r},"
                f" not {PROTOCOL_VERSION}",
            )
        capabilities = answer.get("agentCapabilities") or {}
        self.load_session = bool(capabilities.get("loadSession"))
        self.prompt_capabilities = capabilities.get("promptCapabilities") or {}
        info = answer.get("agentInfo") or {}
        self.agent_version = str(info.get("version") or "")

    async def _new(self) -> None:
        try:
            answer = await self.rpc.send_request(
                "session/new", {"cwd": str(self.workspace), "mcpServers": self._mcp_servers}
            )
        except RequestError as exc:
            raise BlitzError(
                Reason.AGENT_UNAVAILABLE,
                f"the agent {self.spec.name!r} refused a new session: {_said(exc)}",
                {"auth": "required"} if exc.code == -32000 else {},
            ) from None
        answer = answer or {}
        self.acp_session_id = str(answer.get("sessionId", ""))
        self.modes = answer.get("modes")

    async def _load(self, acp_session_id: str) -> None:
        # The agent replays the conversation before it answers: the log has it (U1).
        self._replaying = True
        try:
            answer = await self.rpc.send_request(
                "session/load",
                {
                    "sessionId": acp_session_id,
                    "cwd": str(self.workspace),
                    "mcpServers": self._mcp_servers,
                },
            )
        finally:
            self._replaying = False
        self.acp_session_id = acp_session_id
        self.modes = (answer or {}).get("modes")

    @property
    def rpc(self) -> Connection:
        assert self._rpc is not None, "the agent's process is not started"
        return self._rpc

    # A turn

    def prompt(self, blocks: list[dict[str, Any]]) -> None:
        """Send `session/prompt`: it runs as a task of the process, which can outlive a
        park; its end arrives in the inbox."""

        async def run() -> None:
            try:
                answer = await self.rpc.send_request(
                    "session/prompt", {"sessionId": self.acp_session_id, "prompt": blocks}
                )
            except BaseException as exc:
                self.inbox.put_nowait(PromptEnd(error=exc))
                if isinstance(exc, asyncio.CancelledError):
                    raise
            else:
                self.inbox.put_nowait(PromptEnd(response=answer or {}))

        self._prompt = self._spawn_task(run(), "prompt")

    @property
    def prompting(self) -> bool:
        return self._prompt is not None and not self._prompt.done()

    async def set_mode(self, mode_id: str) -> None:
        await self.rpc.send_request(
            "session/set_mode", {"sessionId": self.acp_session_id, "modeId": mode_id}
        )

    async def cancel(self, *, wait: float = 10.0) -> bool:
        """`session/cancel` (B11): every open ask answered cancelled, then up to `wait`
        seconds for the prompt's answer. False when it never came (F9)."""
        self.withdraw()
        if not self.prompting:
            return True
        with contextlib.suppress(Exception):
            await self.rpc.send_notification("session/cancel", {"sessionId": self.acp_session_id})
        assert self._prompt is not None
        done, _ = await asyncio.wait({self._prompt}, timeout=wait)
        return bool(done)

    def withdraw(self) -> None:
        """Answer every ask still open `cancelled` (the spec's MUST after a cancel)."""
        for ask in self.parked.values():
            ask.cancel()
        self.parked.clear()
        while not self.inbox.empty():
            item = self.inbox.get_nowait()
            if isinstance(item, Ask):
                item.cancel()
            elif isinstance(item, PromptEnd):
                self.inbox.put_nowait(item)  # kept: the prompt's end is still to be read
                break

    def drain(self) -> None:
        """Drop what the inbox holds of a turn that ended (its asks answered cancelled)."""
        while not self.inbox.empty():
            item = self.inbox.get_nowait()
            if isinstance(item, Ask):
                item.cancel()

    async def release_terminals(self) -> None:
        for terminal in list(self.terminals.values()):
            await terminal.kill()
        self.terminals.clear()

    # Its health

    @property
    def alive(self) -> bool:
        return (
            not self.stopped
            and self._proc is not None
            and self._proc.returncode is None
            and (self._transport is None or self._transport.fault is None)
        )

    def silent_for(self) -> float:
        assert self._transport is not None
        return time.monotonic() - self._transport.last_heard

    def fault(self, exc: BaseException | None = None) -> BlitzError:
        """Why the connection ended (table F): a protocol fault the transport recorded,
        else the process's exit."""
        if self._transport is not None and self._transport.fault is not None:
            fault = self._transport.fault
            return BlitzError(fault.reason, fault.message + self.stderr_note(), fault.metadata)
        code = self._proc.returncode if self._proc is not None else None
        metadata: dict[str, str] = {}
        if code is not None and code < 0:
            metadata["signal"] = signal.Signals(-code).name
        elif code is not None:
            metadata["exit_code"] = str(code)
        ended = f"with {metadata}" if metadata else "(its stdout closed)"
        return BlitzError(
            Reason.AGENT_CRASHED,
            f"the agent {self.spec.name!r} ended {ended}" + self.stderr_note(),
            metadata,
        )

    async def exited(self, within: float) -> bool:
        if self._proc is None:
            return True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._proc.wait(), within)
        return self._proc.returncode is not None

    def stderr_tail(self, lines: int = 20) -> list[str]:
        return self._stderr.tail(lines)

    def stderr_note(self) -> str:
        tail = self.stderr_tail()
        return ("; its stderr ended with:\n" + "\n".join(tail)) if tail else ""

    # Stopping

    async def stop(self) -> None:
        """Stdin closed, SIGTERM after 2 s, SIGKILL after 2 more; its box goes with it."""
        if self.stopped:
            return
        self.stopped = True
        self.withdraw()
        await self.release_terminals()
        proc = self._proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(Exception):
                if proc.stdin is not None:
                    proc.stdin.close()
            if not await self.exited(_STOP_GRACE_S):
                _signal_group(proc.pid, signal.SIGTERM)
                if not await self.exited(_STOP_GRACE_S):
                    _signal_group(proc.pid, signal.SIGKILL)
                    await self.exited(_STOP_GRACE_S)
        if self._rpc is not None:
            with contextlib.suppress(Exception):
                await self._rpc.close()
        for task in list(self._tasks):
            task.cancel()
        if self._launch is not None:
            await asyncio.to_thread(clean_up, self._launch, proc.pid if proc else None)
        log.info("acp_agent_stopped", agent=self.spec.name)

    def _spawn_task(self, work: Any, name: str) -> asyncio.Task[Any]:
        task = asyncio.create_task(work, name=f"acp-{self.spec.name}-{name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # What the agent calls (through AgentClient) and the turn's terminals

    def put(self, item: Item) -> None:
        self.last_used = time.monotonic()
        if isinstance(item, Update) and self._replaying:
            return
        self.inbox.put_nowait(item)

    def start_terminal(self, params: dict[str, Any], cwd: Path) -> Terminal:
        """Start an approved `terminal/create` (A4); its output comes into the inbox."""
        terminal = Terminal.open(
            params,
            cwd=cwd,
            home=self.workspace,
            limits=self._terminal_limits,
            heard=lambda terminal_id, text: self.put(Output(terminal_id, text)),
        )
        self.terminals[terminal.id] = terminal
        return terminal


def _said(exc: RequestError) -> str:
    return mask_known(str(exc))[:512]


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _version() -> str:
    try:
        return importlib.metadata.version("blitz-server")
    except importlib.metadata.PackageNotFoundError:  # a checkout, not installed
        return "unknown"
