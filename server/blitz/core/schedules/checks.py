"""Every check of a schedule a client asks for: each failure is INVALID_ARGUMENT naming the
field (`schedule.cron`, `schedule.time_zone`, …), raised before anything is stored.

What is checked here is what can be checked without the owner's sessions: the timing (a
cron expression croniter reads and that fires at all, a time zone zoneinfo knows, an
interval of at least a second), what it runs and the template of its sessions. What only
a firing can tell (a workflow's params, a model, an agent, a workspace's name) is told
by the firing's `error`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterError, croniter
from google.protobuf.duration_pb2 import Duration

from blitz.core.api import validation as check
from blitz.core.schedules.timing import MIN_EVERY, Timing
from blitz.errors import invalid_argument
from blitz.v1 import schedules_pb2 as sc
from blitz.v1 import session_pb2 as s

__all__ = [
    "SCHEDULES_MAX",
    "UPDATABLE",
    "check_mask",
    "check_schedule",
    "check_state",
    "timing_of",
]

# How many schedules one principal may have.
SCHEDULES_MAX = 100
# What UpdateSchedule's mask may name.
UPDATABLE = (
    "title",
    "cron",
    "every",
    "time_zone",
    "prompt",
    "workflow",
    "session_id",
    "session",
    "busy",
    "catch_up",
    "state",
)
_TITLE_MAX = 200
_CRON_MAX = 200
_ZONE = re.compile(r"^[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+){0,3}$")
_ALIASES = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_EVERY_MAX = 366 * 24 * 3600.0
# A turn's and a session's limits, as RunTurn and CreateSession check them (the firing's
# turn and session are theirs).
_PROMPT_MAX = check.CLIENT_LIMITS["turn_text_chars"]
_SESSION_TITLE_MAX = check.CLIENT_LIMITS["title_chars"]
_LABELS_MAX = check.CLIENT_LIMITS["labels"]
_NAME_MAX = 256  # a model's, an agent's, a workspace's or a workflow's name


def _field(name: str) -> str:
    return f"schedule.{name}"


def check_schedule(spec: sc.Schedule, *, now: float) -> sc.Schedule:
    """What the owner asked of `spec`, checked: a Schedule with none of the server's fields
    (the copy that is stored)."""
    asked = sc.Schedule()
    asked.CopyFrom(spec)
    for server_field in (
        "id",
        "state",
        "owner",
        "create_time",
        "update_time",
        "next_fire_time",
        "last_firing",
    ):
        asked.ClearField(server_field)
    if len(asked.title) > _TITLE_MAX:
        raise invalid_argument(
            _field("title"), f"title is at most {_TITLE_MAX} characters", limit=str(_TITLE_MAX)
        )
    timing_of(asked, anchor=now)
    _check_what(asked)
    _check_where(asked)
    if asked.catch_up not in sc.CatchUp.values():
        raise invalid_argument(_field("catch_up"), "catch_up must be SKIP or ONCE")
    return asked


def timing_of(spec: sc.Schedule, *, anchor: float) -> Timing:
    """The schedule's ticks; INVALID_ARGUMENT for a timing that is wrong or never fires."""
    zone = _zone(spec.time_zone)
    which = spec.WhichOneof("when")
    if which == "cron":
        timing = Timing(cron=_cron(spec.cron), zone=zone)
        try:
            timing.next_after(anchor)
        except (CroniterError, ValueError, OverflowError):
            raise invalid_argument(
                _field("cron"), f"cron {spec.cron!r} matches no date to come"
            ) from None
        return timing
    if which == "every":
        return Timing(every=_every(spec.every), zone=zone, anchor=anchor)
    raise invalid_argument(
        _field("cron"), "a schedule needs `cron` (an expression) or `every` (an interval)"
    )


def _zone(name: str) -> str:
    if not name:
        return "UTC"
    if len(name) > 64 or not _ZONE.match(name):
        raise invalid_argument(_field("time_zone"), f"{name!r} is not an IANA time zone")
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise invalid_argument(
            _field("time_zone"), f"{name!r} is not an IANA time zone (Europe/Paris, UTC)"
        ) from None
    return name


def _cron(expression: str) -> str:
    text = " ".join(expression.split())
    if len(text) > _CRON_MAX:
        raise invalid_argument(_field("cron"), f"cron is at most {_CRON_MAX} characters")
    fields = text.split(" ")
    if text.startswith("@"):
        if text not in _ALIASES:
            raise invalid_argument(_field("cron"), f"{text!r} is none of {', '.join(_ALIASES)}")
    elif len(fields) not in (5, 6):
        raise invalid_argument(
            _field("cron"),
            "cron has 5 fields (minute hour day month weekday), or 6 with seconds first",
        )
    elif any(f.upper().startswith(("H", "R")) and f != "*" for f in fields):
        raise invalid_argument(_field("cron"), "hashed (H) and random (R) fields are not read")
    if not croniter.is_valid(text, second_at_beginning=True):
        raise invalid_argument(_field("cron"), f"{text!r} is not a cron expression")
    return text


def _every(every: Duration) -> float:
    if not 0 <= every.nanos < 1_000_000_000 or every.seconds < 0:
        raise invalid_argument(_field("every"), "every is not a valid duration")
    seconds = every.seconds + every.nanos / 1e9
    if not MIN_EVERY <= seconds <= _EVERY_MAX:
        raise invalid_argument(
            _field("every"), f"every is at least {MIN_EVERY:g} s and at most 366 days"
        )
    return seconds


def _check_what(spec: sc.Schedule) -> None:
    which = spec.WhichOneof("what")
    if which == "prompt":
        if not spec.prompt.strip():
            raise invalid_argument(_field("prompt"), "the prompt is empty")
        if len(spec.prompt) > _PROMPT_MAX:
            raise invalid_argument(
                _field("prompt"),
                f"prompt is at most {_PROMPT_MAX:,} characters",
                limit=str(_PROMPT_MAX),
            )
        return
    if which == "workflow":
        if not spec.workflow.name or len(spec.workflow.name) > _NAME_MAX:
            raise invalid_argument(_field("workflow.name"), "the workflow's name is required")
        if len(spec.workflow.params) > 64:
            raise invalid_argument(_field("workflow.params"), "at most 64 params")
        return
    raise invalid_argument(_field("prompt"), "a schedule runs a `prompt` or a `workflow`")


def _check_where(spec: sc.Schedule) -> None:
    if spec.session_id:
        check.require(spec.session_id, _field("session_id"))
        if spec.HasField("session"):
            raise invalid_argument(
                _field("session"), "a schedule with a session_id makes no sessions"
            )
    template = spec.session
    if len(template.title) > _SESSION_TITLE_MAX:
        raise invalid_argument(
            _field("session.title"),
            f"the title is at most {_SESSION_TITLE_MAX} characters",
            limit=str(_SESSION_TITLE_MAX),
        )
    check.check_labels(template.labels, _field("session.labels"))
    if len(template.labels) >= _LABELS_MAX and "schedule_id" not in template.labels:
        raise invalid_argument(
            _field("session.labels"),
            f"at most {_LABELS_MAX - 1} labels: each session also gets `schedule_id`",
            limit=str(_LABELS_MAX - 1),
        )
    for name in ("model", "agent", "workspace"):
        if len(getattr(template, name)) > _NAME_MAX:
            raise invalid_argument(
                _field(f"session.{name}"),
                f"{name} is at most {_NAME_MAX} characters",
                limit=str(_NAME_MAX),
            )
    # The bypass mode is the server's to allow, when a firing makes the session.
    check.check_mode(template.mode, _field("session.mode"), bypass_allowed=True)
    if spec.busy not in s.BusyStrategy.values():
        raise invalid_argument(_field("busy"), "busy must be REJECT, ENQUEUE or INTERRUPT")


def check_mask(paths: Sequence[str]) -> list[str]:
    """UpdateSchedule's mask: at least one path, each one it may name."""
    if not paths:
        raise invalid_argument(
            "update_mask",
            "update_mask must name the fields to change",
            accepted=", ".join(UPDATABLE),
        )
    for path in paths:
        if path not in UPDATABLE:
            raise invalid_argument(
                "update_mask", f"{path!r} cannot be changed", accepted=", ".join(UPDATABLE)
            )
    return list(dict.fromkeys(paths))


def check_state(state: int) -> int:
    if state not in (sc.SCHEDULE_STATE_ACTIVE, sc.SCHEDULE_STATE_PAUSED):
        raise invalid_argument(_field("state"), "state must be ACTIVE or PAUSED")
    return state
