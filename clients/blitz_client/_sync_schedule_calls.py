"""ScheduleService's calls of the blocking client, each `AsyncBlitz`'s (`_schedule_calls.py`)
run on the client's loop: `Blitz` is made of them and its own calls (`_sync.py`)."""

from __future__ import annotations

from blitz.v1 import schedules_pb2
from blitz_client._blocking import BlockingCalls, Stream

__all__ = ["BlockingScheduleCalls"]


class BlockingScheduleCalls(BlockingCalls):
    """The schedule calls of `Blitz`."""

    def create_schedule(
        self, schedule: schedules_pb2.Schedule | None = None, **fields: object
    ) -> schedules_pb2.Schedule:
        """A new schedule; see `AsyncBlitz.create_schedule`."""
        return self._runner.run(self._client.create_schedule(schedule, **fields))

    def schedules(self) -> list[schedules_pb2.Schedule]:
        """Your schedules, oldest first."""
        return self._runner.run(self._client.schedules())

    def schedule(self, schedule_id: str) -> schedules_pb2.Schedule:
        """One schedule."""
        return self._runner.run(self._client.schedule(schedule_id))

    def update_schedule(
        self, schedule_id: str, *, paused: bool | None = None, **fields: object
    ) -> schedules_pb2.Schedule:
        """Change what is given; see `AsyncBlitz.update_schedule`."""
        return self._runner.run(self._client.update_schedule(schedule_id, paused=paused, **fields))

    def pause_schedule(self, schedule_id: str) -> schedules_pb2.Schedule:
        """Stop firing."""
        return self._runner.run(self._client.pause_schedule(schedule_id))

    def resume_schedule(self, schedule_id: str) -> schedules_pb2.Schedule:
        """Fire again, from the next tick to come."""
        return self._runner.run(self._client.resume_schedule(schedule_id))

    def delete_schedule(self, schedule_id: str) -> None:
        """Delete a schedule and its firings."""
        self._runner.run(self._client.delete_schedule(schedule_id))

    def run_schedule(self, schedule_id: str) -> schedules_pb2.ScheduleFiring:
        """Fire it now, once."""
        return self._runner.run(self._client.run_schedule(schedule_id))

    def firings(
        self, schedule_id: str, *, page_size: int = 0
    ) -> Stream[schedules_pb2.ScheduleFiring]:
        """The schedule's firings, the latest first, a page at a time."""
        return self._stream(self._client.firings(schedule_id, page_size=page_size))
