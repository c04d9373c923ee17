"""Hooks the operator declares (`[[hooks]]` in the configuration file), made specs.

Each is checked as CreateHook checks a hook (its event, its kind, its matchers, its
timeout), and an HTTP hook needs its secret, which the signing library must take. Its id
is `hk_config_` and its name, the same on every replica and after every restart; it runs
in every principal's sessions, or in `principal`'s only, before any hook made through the
API, in the file's order. It is never stored: the file is where it is changed.
"""

from __future__ import annotations

from collections.abc import Sequence

from google.protobuf.duration_pb2 import Duration

from blitz.config.hooks import DeclaredHook
from blitz.core.hook_service import checks
from blitz.core.hooks.specs import EVENT_NAMES, HookSpec
from blitz.core.webhooks.signing import valid_secret
from blitz.errors import BlitzError

__all__ = ["declared_specs"]

# The file names the events as the JSON does.
_EVENTS = {name: event for event, name in EVENT_NAMES.items()}


def declared_specs(declared: Sequence[DeclaredHook]) -> list[HookSpec]:
    """The declared hooks, as they run; ValueError naming one that cannot be."""
    specs = []
    for hook in declared:
        event = _EVENTS[hook.event]
        timeout = None
        if hook.timeout is not None:
            timeout = Duration()
            timeout.FromNanoseconds(round(hook.timeout * 1e9))
        try:
            checks.check_kind(hook.command, hook.url)
            checks.check_matchers(event, hook.tools, hook.commands, hook.paths)
            seconds = checks.check_timeout(timeout)
            checks.check_description(hook.description)
        except BlitzError as exc:
            raise ValueError(f"declared hook {hook.name!r}: {exc.message}") from None
        if hook.url and not valid_secret(hook.secret):
            raise ValueError(
                f"declared hook {hook.name!r}: an HTTP hook needs its secret, whsec_ and"
                " base64 of 16 bytes or more"
            )
        specs.append(
            HookSpec(
                id=f"hk_config_{hook.name}",
                event=event,
                command=hook.command,
                url=hook.url,
                secret=hook.secret,
                tools=hook.tools,
                commands=hook.commands,
                paths=hook.paths,
                timeout=seconds,
                fail_open=hook.fail_open,
                description=hook.description,
                owner=hook.principal,
                server_wide=not hook.principal,
                declared=hook.name,
            )
        )
    return specs
