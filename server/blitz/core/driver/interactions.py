"""The calls a person waits on go before agent work.

An interaction is a call whose answer someone is waiting for and whose own work is short:
a RunTurn until its `accepted` is handed to the transport, a Decide or an Answer until it
returns (its `resolution` is in the log by then), a millisecond or two each. Agent work is
everything a turn's run does between them, and it is long: a run to its park costs a few
milliseconds of the loop, a resume more, and a thousand of them can be ready at once.

Agent work gives way at its steps (`give_way`): the start of each run, and each call the
agent makes through its `TurnIO` (turn_io.py: every commit, model call and rule check,
and every few stream events). Two rules make the priority:

- Agent work takes a slice of each turn of the event loop, not the whole of it. A step
  waits its turn, in order, while an interaction is under way, while a burst of them is
  coming in, or while other steps already wait; otherwise it goes at once, unless the
  first step of this turn of the loop began more than `_SLICE` ago (`_QUIET_SLICE` once
  no interaction has begun for `_QUIET` seconds: agent work alone on the loop then goes
  in fewer turns, its commits in fewer, larger transactions; docs/benchmarks.md, "Fourth
  pass").
  Waiting steps go as many per turn of the loop as fill about a slice (one, when a step
  takes a millisecond).
  So whatever else the loop has to do waits for about a slice, never for every ready
  turn: the transport's intake above all. grpc.aio takes in one new call at a time, each
  through a few turns of the loop, so a loop that runs every ready turn in each of its
  turns takes calls in at the rate its spare CPU allows (measured with the floor,
  docs/benchmarks.md): Decides sat for seconds in the transport, unseen, before their
  handler ran for 2 ms.
- Interactions first. While one is under way, no step begins. Nor while a burst of them
  comes in (`_BURST` begun within `_WINDOW` seconds, a rate people sending turns rarely
  reach): between two calls of a burst no interaction is under way, and the steps begun
  there would slow the intake of the next ones.

Two bounds keep it honest. A step waits at most `_MOST` seconds; then, while interactions
go on, the oldest steps go one at a time, the next once the one before has given way
again or ended (or run for `_MOST`, since a step may await a command): interactions that
never stop slow the turns down but cannot starve them, and each waits for one step at
most. And the steps give way only where the agent holds no lock of the core's (the run's
start, and `TurnIO` calls from the agent, which sees no lock), so an interaction waiting
for a session's lock never waits for a step that holds it. How much agent work there is
at all is bounded elsewhere, and visibly: by the run slots (slots.py), past which a turn
waits with a notice or is refused with RATE_LIMITED; the steps waiting here are counted
in the metrics (`blitz_agent_steps_waiting`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Iterator

__all__ = ["Interactions"]

# The longest a step of agent work waits for interactions (seconds).
_MOST = 1.0
# This many interactions begun within the last `_WINDOW` seconds are a burst coming in.
_BURST = 3
_WINDOW = 0.02
# Steps of agent work begin in one turn of the event loop for this long after its first
# (seconds): a stream's events, microseconds each, go on; a step of a millisecond, alone.
_SLICE = 0.0005
# While no interaction has begun for `_QUIET` seconds, the slice is `_QUIET_SLICE`: agent
# work alone on the loop goes in fewer, longer turns, and so in fewer, larger batches of
# the event log (a transaction each). The first call after a quiet spell waits for one
# such slice at most per turn of the loop, and the slices are short again once it begins.
_QUIET = 0.05
_QUIET_SLICE = 0.005
# The most waiting steps let go in one turn of the loop.
_RELEASE_MAX = 64


class Interactions:
    """The interactions under way in this process, and the agent steps waiting for them."""

    def __init__(
        self,
        *,
        most: float = _MOST,
        slice_s: float = _SLICE,
        quiet_slice_s: float = _QUIET_SLICE,
        quiet: float = _QUIET,
        window: float = _WINDOW,
    ) -> None:
        """`most`: the longest a step waits; `slice_s`: for how long after the first of a
        turn of the loop steps may begin in it, and `quiet_slice_s` the same while no
        interaction has begun for `quiet` seconds; `window`: the seconds within which
        `_BURST` interactions begun are a burst."""
        self._most = most
        self._short_slice = slice_s
        self._quiet_slice = max(slice_s, quiet_slice_s)
        self._quiet = quiet
        self._window = window
        self._count = 0
        # When the interactions of the last `window` seconds began (monotonic), oldest first.
        self._began: deque[float] = deque(maxlen=_BURST)
        # When the first step of this turn of the loop began (None: none has).
        self._turn_began: float | None = None
        # How many waiting steps go in one turn of the loop, and when some last went.
        self._release = 1
        self._released_at = 0.0
        # The steps waiting, oldest first: since when (monotonic), and what lets each go.
        self._waiting: deque[tuple[float, asyncio.Task[object] | None, asyncio.Future[None]]] = (
            deque()
        )
        # The one look ahead at the waiting steps, and when it is due (the loop's time; 0:
        # on its next turn).
        self._look: asyncio.Handle | None = None
        self._look_at = 0.0
        # The task of the step let go for having waited its longest while interactions
        # held the rest, until it gives way again or ends; and when it went.
        self._overdue: asyncio.Task[object] | None = None
        self._overdue_at = 0.0

    @property
    def waiting(self) -> int:
        """How many steps of agent work wait now."""
        return len(self._waiting)

    @contextlib.contextmanager
    def under_way(self) -> Iterator[None]:
        """Hold for the block: an interaction is under way."""
        self._began.append(time.monotonic())
        self._count += 1
        try:
            yield
        finally:
            self._count -= 1
            if not self._count and self._waiting:
                self._look_in(0.0)

    def _slice(self, now: float) -> float:
        """This turn of the loop's slice: the short one while interactions come in."""
        if self._count or (self._began and self._began[-1] >= now - self._quiet):
            return self._short_slice
        return self._quiet_slice

    def _held(self, now: float) -> bool:
        """An interaction is under way, or a burst of them is coming in."""
        return bool(self._count) or (
            len(self._began) == _BURST and self._began[0] >= now - self._window
        )

    async def give_way(self) -> None:
        """Return once this step of agent work may go on (see the module doc)."""
        if self._overdue is not None and asyncio.current_task() is self._overdue:
            self._overdue = None  # its step is over
        now = time.monotonic()
        if not self._waiting and not self._held(now):
            began = self._turn_began
            if began is None:
                self._turn_began = now
                self._look_in(0.0)  # the next turn of the loop starts afresh
                return
            if now - began < self._slice(now):
                return
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append((now, asyncio.current_task(), waiter))
        self._look_in(0.0)
        await waiter  # cancelled: it is skipped when its turn comes

    def _let_go(self) -> None:
        """A new turn of the loop: let the oldest waiting steps go if nothing holds them
        (or, overdue, one at a time); look again on the next turn, or when they may go."""
        self._look = None
        self._turn_began = None
        while self._waiting and self._waiting[0][2].done():
            self._waiting.popleft()  # cancelled while waiting
        if not self._waiting:
            return
        now = time.monotonic()
        waited = now - self._waiting[0][0]
        held = self._held(now)
        if held and waited < self._most:
            # Under way: its end looks again; a burst, once it may be over; or the
            # oldest's time running out.
            at = self._most - waited
            if not self._count:
                at = min(at, self._began[0] + self._window - now)
            self._look_in(max(0.0, at))
            return
        if held:
            self._let_overdue_go(now)
            return
        # As many as fill about a slice of the next turn: how long each runs is not known
        # until it gives way again, so the count follows how long the turn after the last
        # release took (everything else the loop did in it included): twice as many after
        # a turn shorter than a slice, half as many after a longer one. Many streams'
        # events go many to a turn; steps of a millisecond, one. This turn's slice is
        # theirs: no step that comes meanwhile goes before them.
        slice_s = self._slice(now)
        if now - self._released_at < slice_s:
            self._release = min(self._release * 2, _RELEASE_MAX)
        else:
            self._release = max(1, self._release // 2)
        for _ in range(min(self._release, len(self._waiting))):
            waiter = self._waiting.popleft()[2]
            if not waiter.done():
                waiter.set_result(None)
        self._released_at = now
        self._turn_began = now - slice_s
        self._look_in(0.0)

    def _let_overdue_go(self, now: float) -> None:
        """Interactions go on, and the oldest step has waited its longest: let it go, one
        at a time. The next goes once it has given way again or ended, so that each
        interaction waits for one step at most; or once it has run for `most` seconds (a
        step may await a command), so that no step holds the others for ever."""
        overdue = self._overdue
        if overdue is not None and not overdue.done() and now - self._overdue_at < self._most:
            self._look_in(self._overdue_at + self._most - now)
            return
        self._overdue = None
        _, task, waiter = self._waiting.popleft()
        waiter.set_result(None)
        if task is not None:
            self._overdue, self._overdue_at = task, now
            task.remove_done_callback(self._ended)  # one is enough, however often it went
            task.add_done_callback(self._ended)
        if self._waiting:
            self._look_in(self._most)

    def _ended(self, task: asyncio.Task[object]) -> None:
        if task is self._overdue:
            self._overdue = None
            if self._waiting:
                self._look_in(0.0)

    def _look_in(self, delay: float) -> None:
        """Look at the waiting steps in `delay` seconds (0: on the loop's next turn), unless
        a look comes sooner. Once per turn of the loop while agent work goes on, so the
        next turn's is a plain callback, not a timer."""
        if self._look is not None and self._look_at == 0.0:
            return  # on the next turn already
        loop = asyncio.get_running_loop()
        if delay <= 0.0:
            if self._look is not None:
                self._look.cancel()
            self._look, self._look_at = loop.call_soon(self._let_go), 0.0
            return
        at = loop.time() + delay
        if self._look is not None:
            if self._look_at <= at:
                return
            self._look.cancel()
        self._look, self._look_at = loop.call_at(at, self._let_go), at
