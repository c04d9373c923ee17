"""HookService, transport-free: the hook port (`blitz.ports.HookPort`) implemented.

`HookCore` serves the calls; which hooks run in whose sessions is the `HookDirectory`'s
(core/hooks/directory.py), which the turn driver's hooks read at each run too.

Whose is what, as for webhooks: a hook belongs to the principal that made it and runs in
that principal's sessions only. A principal sees its own hooks and those that run in its
sessions (server-wide and declared ones), and changes only its own; of any other hook it
is told HOOK_NOT_FOUND, so no id reveals anything. An admin sees and changes every hook
made through the API, and only an admin makes a server-wide one. A declared hook changes
only in the configuration file. An HTTP hook's secret is in CreateHook's answer and
nowhere else, ever. TestHook runs a hook once, deciding nothing: a command hook in one of
the caller's sessions' workspaces, or in an empty folder of its own.
"""

from __future__ import annotations

import asyncio
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import structlog
from google.protobuf import json_format

from blitz.core.api import validation as check
from blitz.core.hook_service import checks
from blitz.core.hooks import payloads
from blitz.core.hooks.directory import HookDirectory
from blitz.core.hooks.running import HookRunner
from blitz.core.hooks.specs import HookSpec, spec_of
from blitz.core.webhooks.checks import target
from blitz.core.webhooks.signing import new_secret
from blitz.errors import BlitzError, Reason, invalid_argument
from blitz.outbound import AddressPolicy
from blitz.ports import CallContext
from blitz.store import SessionRecord, Store
from blitz.v1 import hooks_pb2 as hk

if TYPE_CHECKING:
    from blitz.core.api.service import FindSession

__all__ = ["HookCore"]

log = structlog.get_logger(__name__)


class HookCore:
    """Every HookService call, and the hooks of each principal's sessions."""

    def __init__(
        self,
        *,
        store: Store,
        directory: HookDirectory,
        runner: HookRunner,
        find_session: FindSession,
        open_workspace: Callable[[SessionRecord], Path],
        policy: AddressPolicy,
        scratch: Path,
    ) -> None:
        """`directory`: which hooks run where (the declared ones among them);
        `find_session`: the caller's session (TestHook's `session_id`); `open_workspace`: a
        session's folder, where a command hook runs; `policy`: what internal addresses an
        HTTP hook may reach (the webhooks'); `scratch`: where TestHook makes a folder for a
        command hook run in no session's."""
        self._store = store
        self._directory = directory
        self._runner = runner
        self._find_session = find_session
        self._open_workspace = open_workspace
        self._policy = policy
        self._scratch = scratch
        self._declared = directory.declared

    async def _hook(self, hook_id: str, ctx: CallContext) -> HookSpec:
        """A hook that runs in the caller's sessions (any, for an admin), or HOOK_NOT_FOUND."""
        check.require(hook_id, "hook_id")
        for spec in self._declared:
            if spec.id == hook_id and (ctx.admin or spec.server_wide or spec.owner == ctx.caller):
                return spec
        rec = await self._store.get_hook(hook_id)
        if rec is None or not (ctx.admin or rec.server_wide or rec.owner == ctx.caller):
            raise BlitzError(Reason.HOOK_NOT_FOUND, f"no hook {hook_id!r}", {"hook_id": hook_id})
        return spec_of(rec)

    async def _mutable(self, hook_id: str, ctx: CallContext) -> HookSpec:
        spec = await self._hook(hook_id, ctx)
        if spec.declared:
            raise checks.read_only(spec.declared)
        if not ctx.admin and spec.owner != ctx.caller:
            raise checks.not_yours(spec.id)
        return spec

    async def create_hook(
        self, req: hk.CreateHookRequest, ctx: CallContext
    ) -> hk.CreateHookResponse:
        event = checks.check_event(req.event)
        checks.check_kind(req.command, req.url)
        checks.check_matchers(event, req.tools, req.commands, req.paths)
        timeout = checks.check_timeout(req.timeout if req.HasField("timeout") else None)
        checks.check_description(req.description)
        if req.server_wide and not ctx.admin:
            raise checks.server_wide_refused()
        if req.url:
            await target(req.url, self._policy)
        owned = [r for r in await self._store.list_hooks(ctx.caller) if r.owner == ctx.caller]
        if len(owned) >= checks.HOOKS_MAX:
            raise invalid_argument(
                "event",
                f"a principal has at most {checks.HOOKS_MAX} hooks: delete one first",
                limit=str(checks.HOOKS_MAX),
            )
        now = time.time()
        secret = new_secret() if req.url else ""
        spec = HookSpec(
            id="hk_" + uuid.uuid4().hex[:24],
            event=event,
            command=req.command,
            url=req.url,
            secret=secret,
            tools=tuple(req.tools),
            commands=tuple(req.commands),
            paths=tuple(req.paths),
            timeout=timeout,
            fail_open=req.fail_open,
            description=req.description,
            owner=ctx.caller,
            server_wide=req.server_wide,
            create_time=now,
            update_time=now,
        )
        await self._store.add_hook(spec.record())
        self._directory.changed()
        log.info(
            "hook_created",
            hook_id=spec.id,
            hook_event=spec.event_name,
            kind="command" if spec.command else "http",
            server_wide=spec.server_wide,
        )
        return hk.CreateHookResponse(hook=spec.view(), secret=secret)

    async def get_hook(self, req: hk.GetHookRequest, ctx: CallContext) -> hk.Hook:
        return (await self._hook(req.hook_id, ctx)).view()

    async def list_hooks(self, req: hk.ListHooksRequest, ctx: CallContext) -> hk.ListHooksResponse:
        if ctx.admin:
            specs = await self._directory.every()
        else:
            specs = await self._directory.hooks_for(ctx.caller)
        return hk.ListHooksResponse(hooks=[spec.view() for spec in specs])

    async def update_hook(self, req: hk.UpdateHookRequest, ctx: CallContext) -> hk.Hook:
        spec = await self._mutable(req.hook_id, ctx)
        changes: dict[str, object] = {}
        paths = checks.check_mask(req.update_mask.paths)
        for path in paths:
            if path == "command":
                if not spec.command:
                    raise invalid_argument(
                        "command", "an HTTP hook has no command: make a new hook"
                    )
                changes["command"] = checks.check_command(req.command)
            elif path == "url":
                if not spec.url:
                    raise invalid_argument("url", "a command hook has no URL: make a new hook")
                changes["url"] = checks.check_url(req.url)
                await target(req.url, self._policy)
            elif path in ("tools", "commands", "paths"):
                changes[path] = tuple(getattr(req, path))
            elif path == "timeout":
                has = req.HasField("timeout")
                changes["timeout"] = checks.check_timeout(req.timeout if has else None)
            elif path == "description":
                changes["description"] = checks.check_description(req.description)
            else:
                changes[path] = getattr(req, path)  # fail_open, disabled
        spec = _replaced(spec, changes, now=time.time())
        checks.check_matchers(spec.event, spec.tools, spec.commands, spec.paths)
        if not await self._store.update_hook(spec.record()):
            raise BlitzError(Reason.HOOK_NOT_FOUND, f"no hook {spec.id!r}", {"hook_id": spec.id})
        self._directory.changed()
        log.info("hook_updated", hook_id=spec.id, fields=paths)
        return spec.view()

    async def delete_hook(
        self, req: hk.DeleteHookRequest, ctx: CallContext
    ) -> hk.DeleteHookResponse:
        spec = await self._mutable(req.hook_id, ctx)
        await self._store.delete_hook(spec.id)
        self._directory.changed()
        log.info("hook_deleted", hook_id=spec.id)
        return hk.DeleteHookResponse()

    async def test_hook(self, req: hk.TestHookRequest, ctx: CallContext) -> hk.TestHookResponse:
        spec = await self._hook(req.hook_id, ctx)
        folder: Path | None = None
        if req.session_id:
            workspace = self._open_workspace(await self._find_session(req.session_id, ctx))
        else:
            folder = workspace = self._scratch / f".hook-test-{uuid.uuid4().hex[:12]}"
            await asyncio.to_thread(folder.mkdir, parents=True)
        try:
            if req.HasField("input"):
                payload = json_format.MessageToDict(req.input)
            else:
                payload = payloads.sample(spec.event_name, workspace=str(workspace))
            ran = await self._runner.run(spec, payload, workspace=workspace)
        finally:
            if folder is not None:
                await asyncio.to_thread(shutil.rmtree, folder, True)
        log.info("hook_tested", hook_id=spec.id)
        return hk.TestHookResponse(
            outcome=ran.outcome, status=ran.status, stdout=ran.stdout, stderr=ran.stderr
        )


def _replaced(spec: HookSpec, changes: dict[str, object], *, now: float) -> HookSpec:
    return replace(spec, update_time=now, **changes)  # type: ignore[arg-type]
