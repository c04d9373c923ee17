"""The SQL of schedules both engines run alike: schedules and their firings.

Written as `statements.py` writes the rest (SQLite's text, `?` for a parameter); apart
because it is one idea of its own, the part of the store only the scheduler
(core/schedules) reads and writes.
"""

from __future__ import annotations

from blitz.store.schedule_records import FIRINGS_KEPT
from blitz.store.statements import FLAGS, Dialect, marks
from blitz.v1 import schedules_pb2 as sc

__all__ = ["FIRING_COLUMNS", "SCHEDULE_COLUMNS", "ScheduleStatements"]

SCHEDULE_COLUMNS = "id, owner, spec, state, next_fire, anchor, create_time, update_time"
FIRING_COLUMNS = "schedule_id, tick_time, fire_time, via, holder, state, session_id, turn_id, error"
_ACTIVE = sc.SCHEDULE_STATE_ACTIVE


def _columns(table: str, columns: str) -> str:
    """`columns` ("a, b") of the table aliased `table`: "t.a, t.b"."""
    return ", ".join(f"{table}.{name}" for name in columns.split(", "))


class ScheduleStatements:
    """Every schedule statement, in one engine's dialect."""

    def __init__(self, dialect: Dialect) -> None:
        sql = dialect.sql
        schedules = f"SELECT {SCHEDULE_COLUMNS} FROM schedules"
        firings = f"SELECT {FIRING_COLUMNS} FROM schedule_firings"
        self.add_schedule = sql(f"INSERT INTO schedules ({SCHEDULE_COLUMNS}) VALUES ({marks(8)})")
        self.get_schedule = sql(f"{schedules} WHERE id = ?")
        self._schedule_lists = {
            by_owner: sql(
                schedules + (" WHERE owner = ?" if by_owner else "") + " ORDER BY create_time, id"
            )
            for by_owner in FLAGS
        }
        # Each schedule with its latest firing (NULLs: none), in one statement: a listing
        # is one query however many schedules it holds.
        with_last = (
            f"SELECT {_columns('s', SCHEDULE_COLUMNS)}, {_columns('f', FIRING_COLUMNS)}"
            " FROM schedules s LEFT JOIN schedule_firings f ON f.schedule_id = s.id"
            " AND f.tick_time = (SELECT MAX(tick_time) FROM schedule_firings"
            " WHERE schedule_id = s.id)"
        )
        self._schedules_with_last = {
            by_owner: sql(
                with_last
                + (" WHERE s.owner = ?" if by_owner else "")
                + " ORDER BY s.create_time, s.id"
            )
            for by_owner in FLAGS
        }
        self.update_schedule = sql(
            "UPDATE schedules SET spec = ?, state = ?, next_fire = ?, anchor = ?,"
            " update_time = ? WHERE id = ?"
        )
        # An edit that leaves the timing alone: the next tick is the scheduler's to move.
        self.update_schedule_spec = sql(
            "UPDATE schedules SET spec = ?, update_time = ? WHERE id = ?"
        )
        self.delete_schedule = (
            sql("DELETE FROM schedule_firings WHERE schedule_id = ?"),
            sql("DELETE FROM schedules WHERE id = ?"),
        )
        self.due_schedules = sql(
            f"{schedules} WHERE state = {_ACTIVE} AND next_fire <= ? ORDER BY next_fire LIMIT ?"
        )
        self.next_due = sql(f"SELECT MIN(next_fire) FROM schedules WHERE state = {_ACTIVE}")
        # A tick is the claimer's when its schedule's next tick is still the one it read:
        # whoever moves it on first fires it, and no one else.
        self.move_on = sql(
            "UPDATE schedules SET next_fire = ?"
            f" WHERE id = ? AND next_fire = ? AND state = {_ACTIVE}"
        )
        self.add_firing = sql(
            f"INSERT INTO schedule_firings ({FIRING_COLUMNS}) VALUES ({marks(9)})"
            " ON CONFLICT (schedule_id, tick_time) DO NOTHING"
        )
        self.prune_firings = sql(
            "DELETE FROM schedule_firings WHERE schedule_id = ? AND tick_time < ("
            " SELECT tick_time FROM schedule_firings WHERE schedule_id = ?"
            f" ORDER BY tick_time DESC LIMIT 1 OFFSET {FIRINGS_KEPT - 1})"
        )
        self.update_firing = sql(
            "UPDATE schedule_firings SET holder = ?, state = ?, session_id = ?, turn_id = ?,"
            " error = ? WHERE schedule_id = ? AND tick_time = ? AND holder = ?"
        )
        self._firing_pages = {
            paged: sql(
                firings
                + " WHERE schedule_id = ?"
                + (" AND tick_time < ?" if paged else "")
                + " ORDER BY tick_time DESC LIMIT ?"
            )
            for paged in FLAGS
        }
        # A firing whose holder has said nothing since `fire_time` is another's to finish:
        # the first UPDATE to reach the row takes it (the second finds it moved on).
        self.take_over_firings = sql(
            "UPDATE schedule_firings SET holder = ?, fire_time = ?"
            " WHERE state = 'firing' AND fire_time < ?"
            f" RETURNING {FIRING_COLUMNS}"
        )

    def list_schedules(self, owner: str | None) -> tuple[str, tuple[object, ...]]:
        """The statement listing `owner`'s schedules (None: every one), and its arguments."""
        if owner is None:
            return self._schedule_lists[False], ()
        return self._schedule_lists[True], (owner,)

    def list_schedules_with_last_firing(self, owner: str | None) -> tuple[str, tuple[object, ...]]:
        """The statement listing `owner`'s schedules (None: every one), each with its
        latest firing's columns after its own, and its arguments."""
        if owner is None:
            return self._schedules_with_last[False], ()
        return self._schedules_with_last[True], (owner,)

    def list_firings(
        self, schedule_id: str, *, limit: int, before: float | None
    ) -> tuple[str, tuple[object, ...]]:
        """A page of a schedule's firings, newest tick first, those before `before`."""
        if before is None:
            return self._firing_pages[False], (schedule_id, limit)
        return self._firing_pages[True], (schedule_id, before, limit)
