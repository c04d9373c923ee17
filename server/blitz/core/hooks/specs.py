"""A hook as the core runs it: declared or stored, one shape (`HookSpec`), and its view.

A stored hook is its record (`blitz.store.HookRecord`, a serialized `blitz.v1.Hook` for
what it is) and a declared one the operator's table; both become a `HookSpec`, which is
what matching and running read. Its view (`blitz.v1.Hook`) never carries its secret.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp

from blitz.store import HookRecord
from blitz.v1 import hooks_pb2 as hk

__all__ = [
    "DEFAULT_TIMEOUT",
    "EVENT_NAMES",
    "MAX_TIMEOUT",
    "TOOL_EVENTS",
    "HookSpec",
    "event_name",
    "spec_of",
]

# A run's time limit when the hook names none, and the most it may name (seconds).
DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 600.0

# The events, as the JSON, the configuration file and `hook` events name them.
EVENT_NAMES = {
    hk.HOOK_EVENT_TURN_START: "turn_start",
    hk.HOOK_EVENT_PRE_TOOL: "pre_tool",
    hk.HOOK_EVENT_POST_TOOL: "post_tool",
    hk.HOOK_EVENT_TURN_END: "turn_end",
    hk.HOOK_EVENT_NOTIFICATION: "notification",
}
# The events whose hooks have matchers (tools, commands, paths).
TOOL_EVENTS = frozenset({hk.HOOK_EVENT_PRE_TOOL, hk.HOOK_EVENT_POST_TOOL})


def event_name(event: int) -> str:
    return EVENT_NAMES.get(event, "")  # type: ignore[call-overload]


@dataclass(frozen=True)
class HookSpec:
    """One hook, as it runs."""

    id: str
    event: int
    command: str = ""
    url: str = ""
    secret: str = field(default="", repr=False)
    tools: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    timeout: float = DEFAULT_TIMEOUT
    fail_open: bool = False
    description: str = ""
    disabled: bool = False
    owner: str = ""
    server_wide: bool = False
    declared: str = ""
    create_time: float = 0.0
    update_time: float = 0.0

    @property
    def event_name(self) -> str:
        return event_name(self.event)

    def view(self) -> hk.Hook:
        """What a client is shown of it: everything but its secret."""
        hook = hk.Hook(
            id=self.id,
            event=self.event,  # type: ignore[arg-type]
            command=self.command,
            url=self.url,
            tools=self.tools,
            commands=self.commands,
            paths=self.paths,
            timeout=_duration(self.timeout),
            fail_open=self.fail_open,
            description=self.description,
            disabled=self.disabled,
            owner=self.owner,
            server_wide=self.server_wide,
            declared=self.declared,
        )
        if self.create_time:
            hook.create_time.CopyFrom(_stamp(self.create_time))
            hook.update_time.CopyFrom(_stamp(self.update_time))
        return hook

    def spec_bytes(self) -> bytes:
        """What the store keeps of it (`HookRecord.spec`): what it is, not whose."""
        return hk.Hook(
            event=self.event,  # type: ignore[arg-type]
            command=self.command,
            url=self.url,
            tools=self.tools,
            commands=self.commands,
            paths=self.paths,
            timeout=_duration(self.timeout),
            fail_open=self.fail_open,
            description=self.description,
            disabled=self.disabled,
        ).SerializeToString()

    def record(self) -> HookRecord:
        return HookRecord(
            id=self.id,
            owner=self.owner,
            server_wide=self.server_wide,
            spec=self.spec_bytes(),
            secret=self.secret,
            create_time=self.create_time,
            update_time=self.update_time,
        )


def spec_of(rec: HookRecord) -> HookSpec:
    """A stored hook, as it runs."""
    hook = hk.Hook.FromString(rec.spec)
    return HookSpec(
        id=rec.id,
        event=hook.event,
        command=hook.command,
        url=hook.url,
        secret=rec.secret,
        tools=tuple(hook.tools),
        commands=tuple(hook.commands),
        paths=tuple(hook.paths),
        timeout=hook.timeout.ToTimedelta().total_seconds() or DEFAULT_TIMEOUT,
        fail_open=hook.fail_open,
        description=hook.description,
        disabled=hook.disabled,
        owner=rec.owner,
        server_wide=rec.server_wide,
        create_time=rec.create_time,
        update_time=rec.update_time,
    )


def _duration(seconds: float) -> Duration:
    duration = Duration()
    duration.FromNanoseconds(round(seconds * 1e9))
    return duration


def _stamp(seconds: float) -> Timestamp:
    stamp = Timestamp()
    stamp.FromNanoseconds(round(seconds * 1e9))
    return stamp
