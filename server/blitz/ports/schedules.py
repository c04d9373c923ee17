"""The schedule port: `blitz.v1.ScheduleService` as the transports ask it of the core.

Like the session port (`session.py`), each method is an RPC named in snake_case, takes the
request message and the call's `CallContext`, and returns the response message; failures
are `blitz.errors.BlitzError`. Nothing here knows a wire format or how a tick is fired.
"""

from __future__ import annotations

from typing import Protocol

from blitz.ports.session import CallContext
from blitz.v1 import schedules_pb2 as sc

__all__ = ["SchedulePort"]


class SchedulePort(Protocol):
    """`blitz.v1.ScheduleService`, transport-free (implemented by `blitz.core.ScheduleCore`)."""

    async def create_schedule(
        self, req: sc.CreateScheduleRequest, ctx: CallContext
    ) -> sc.Schedule: ...
    async def get_schedule(self, req: sc.GetScheduleRequest, ctx: CallContext) -> sc.Schedule: ...
    async def list_schedules(
        self, req: sc.ListSchedulesRequest, ctx: CallContext
    ) -> sc.ListSchedulesResponse: ...
    async def update_schedule(
        self, req: sc.UpdateScheduleRequest, ctx: CallContext
    ) -> sc.Schedule: ...
    async def delete_schedule(
        self, req: sc.DeleteScheduleRequest, ctx: CallContext
    ) -> sc.DeleteScheduleResponse: ...
    async def run_schedule(
        self, req: sc.RunScheduleRequest, ctx: CallContext
    ) -> sc.ScheduleFiring: ...
    async def list_firings(
        self, req: sc.ListFiringsRequest, ctx: CallContext
    ) -> sc.ListFiringsResponse: ...
