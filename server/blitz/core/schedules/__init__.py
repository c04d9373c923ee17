"""Schedules: turns and workflow runs that start on a cron expression or an interval.

`ScheduleCore` (service.py) serves ScheduleService and owns the `Scheduler`
(scheduler.py), which fires each tick once across the processes sharing the store; a
firing (firing.py) starts its turn through the session and workflow calls, as the
schedule's owner. `timing.py` is when a schedule's ticks fall, `checks.py` every check of
a request, `views.py` what a client is shown (docs/schedules.md).
"""

from blitz.core.schedules.firing import Firings
from blitz.core.schedules.service import ScheduleCore

__all__ = ["Firings", "ScheduleCore"]
