"""One run of one hook: its command in the session's box or its signed POST, bounded in
time, and what came of it (docs/hooks.md, "Failures").

A command hook is handed to the `HookCommands` port (the agent's command box, as the
assembly builds it): /bin/sh in the session's workspace, the JSON on stdin, no network,
killed at its timeout; its stdout is read as its answer, its stderr kept for a block's
reason or a failure's. An HTTP hook goes through `http.py`. Whatever goes wrong (it cannot
start, exits other than 0 or 2, times out, answers garbage) is a failure, which the hook's
`fail_open` makes nothing, and otherwise makes what blocking means at its event
(`answers.blocked`): the hook fails closed. Every run is logged (never its output) and
becomes a `HookOutcome`, which the caller announces. Nothing here raises but cancellation.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
from google.protobuf.duration_pb2 import Duration

from blitz import metrics
from blitz.core.hooks.answers import Answer, Failed, blocked, read_answer
from blitz.core.hooks.http import HttpHooks
from blitz.core.hooks.specs import HookSpec
from blitz.ports.hooks import HookCommands
from blitz.v1 import turn_pb2 as t

__all__ = ["SHOWN_MAX", "HookRunner", "Ran"]

log = structlog.get_logger(__name__)

# What TestHook shows of a hook's stdout and stderr (characters).
SHOWN_MAX = 4096
# The events whose hooks can deny something: where failing closed means a deny.
_DENYING = frozenset({"turn_start", "pre_tool", "post_tool"})


@dataclass(frozen=True)
class Ran:
    """What one run came to: the answer Blitz acts on (a failure already made a deny or
    nothing), its outcome as the `hook` event says it, and for TestHook the exit code or
    status and the first of what it wrote."""

    answer: Answer
    outcome: t.HookOutcome
    status: int
    stdout: str
    stderr: str


class HookRunner:
    """Runs hooks: commands through `commands`, HTTP hooks through `http`."""

    def __init__(self, *, commands: HookCommands | None, http: HttpHooks) -> None:
        self._commands = commands
        self._http = http

    async def run(self, spec: HookSpec, payload: dict[str, Any], *, workspace: Path | None) -> Ran:
        """Run `spec` for its event with `payload`; a command hook in `workspace`."""
        event = spec.event_name
        body = json.dumps(payload, ensure_ascii=False, default=str).encode()
        started = time.monotonic()
        # What it wrote and how it ended, kept for TestHook even when it failed.
        seen = _Seen()
        error = ""
        answer = Answer()
        try:
            if spec.command:
                answer = await self._command(spec, event, body, workspace, seen)
            else:
                answer = await self._post(spec, event, body, seen)
        except Failed as exc:
            error = str(exc)
        seconds = time.monotonic() - started
        if error:
            answer = Answer()
            if not spec.fail_open and event in _DENYING:
                answer = blocked(event, f"the hook {spec.id} failed: {error}")
        outcome = t.HookOutcome(
            hook_id=spec.id,
            event=event,
            decision=answer.decision,  # type: ignore[arg-type]
            reason=answer.reason,
            additional_context=answer.context,
            failed=bool(error),
            error=error,
            system_message=answer.system_message,
        )
        if answer.updated_input is not None:
            outcome.updated_input.update(answer.updated_input)
        duration = Duration()
        duration.FromNanoseconds(round(seconds * 1e9))
        outcome.duration.CopyFrom(duration)
        log.info(
            "hook_ran",
            hook_id=spec.id,
            hook_event=event,
            decision=t.HookDecision.Name(answer.decision),
            failed=bool(error),
            seconds=round(seconds, 3),
        )
        decided = t.HookDecision.Name(answer.decision).removeprefix("HOOK_DECISION_").lower()
        kind = "command" if spec.command else "http"
        metrics.hook_ran(event, kind, "failed" if error else decided, seconds)
        return Ran(answer, outcome, seen.status, seen.stdout[:SHOWN_MAX], seen.stderr[:SHOWN_MAX])

    async def _command(
        self, spec: HookSpec, event: str, body: bytes, workspace: Path | None, seen: _Seen
    ) -> Answer:
        if self._commands is None or workspace is None:
            raise Failed("command hooks cannot run here")
        try:
            done = await self._commands.run(
                spec.command, workspace=workspace, stdin=body, time_limit=spec.timeout, event=event
            )
        except OSError as exc:
            raise Failed(f"it could not be started ({exc.strerror or exc})") from None
        seen.status = -1 if done.exit_code is None else done.exit_code
        seen.stdout, seen.stderr = done.stdout, done.stderr
        if done.exit_code is None:
            raise Failed(f"it did not finish within {spec.timeout:g} s")
        if done.exit_code == 2:
            reason = done.stderr.strip() or "blocked by the hook (exit 2)"
            return blocked(event, reason)
        if done.exit_code != 0:
            said = done.stderr.strip().splitlines()
            raise Failed(f"it exited {done.exit_code}" + (f": {said[0][:200]}" if said else ""))
        if done.cut:
            raise Failed("its answer on stdout is too long")
        return read_answer(event, done.stdout)

    async def _post(self, spec: HookSpec, event: str, body: bytes, seen: _Seen) -> Answer:
        try:
            async with asyncio.timeout(spec.timeout):
                got = await self._http.post(spec.url, body, secret=spec.secret)
        except TimeoutError:
            raise Failed(f"it did not answer within {spec.timeout:g} s") from None
        seen.status, seen.stdout = got.status, got.body
        if not 200 <= got.status < 300:
            raise Failed(f"it answered HTTP {got.status}")
        return read_answer(event, got.body)


@dataclass
class _Seen:
    status: int = -1
    stdout: str = ""
    stderr: str = ""
