"""The protobuf views of stored schedules and firings: what a client is shown."""

from __future__ import annotations

from blitz.core.api.views import timestamp as _time
from blitz.store import FiringRecord, ScheduleRecord
from blitz.v1 import schedules_pb2 as sc

__all__ = ["firing_view", "schedule_view"]


def firing_view(rec: FiringRecord) -> sc.ScheduleFiring:
    return sc.ScheduleFiring(
        schedule_id=rec.schedule_id,
        tick_time=_time(rec.tick_time),
        fire_time=_time(rec.fire_time),
        via=rec.via,
        session_id=rec.session_id,
        turn_id=rec.turn_id,
        error=rec.error,
    )


def schedule_view(rec: ScheduleRecord, last: FiringRecord | None) -> sc.Schedule:
    """The schedule as its owner asked it, with the server's fields."""
    view = sc.Schedule.FromString(rec.spec)
    view.id = rec.id
    view.state = rec.state  # type: ignore[assignment]
    view.owner = rec.owner
    view.create_time.CopyFrom(_time(rec.create_time))
    view.update_time.CopyFrom(_time(rec.update_time))
    if rec.next_fire is not None and rec.state == sc.SCHEDULE_STATE_ACTIVE:
        view.next_fire_time.CopyFrom(_time(rec.next_fire))
    if last is not None:
        view.last_firing.CopyFrom(firing_view(last))
    return view
