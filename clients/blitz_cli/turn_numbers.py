"""A turn as a person names it: its id, or its number in the session (1 the first).

`/rewind TURN`, `/diff TURN`, `blitz diff --turn TURN` and `blitz sessions fork ID
[TURN]` take either (fork, left without one, takes the last finished turn); the number counts
every turn ListTurns lists, oldest first, server commands and asides among them.
"""

from __future__ import annotations

from blitz.v1 import session_pb2
from blitz_client import Blitz

__all__ = ["last_finished_turn_id", "turn_id_in", "turn_id_of"]


def turn_id_of(client: Blitz, session_id: str, turn: str) -> str:
    """The id of `turn`: itself, or the id of the session's turn of that number.
    ValueError for a number no turn has."""
    turn = turn.strip()
    if not turn.isdecimal():
        return turn
    return turn_id_in([each.turn_id for each in client.list_turns(session_id)], turn)


def turn_id_in(turns: list[str], turn: str) -> str:
    """As `turn_id_of`, given the session's turn ids, oldest first."""
    turn = turn.strip()
    if not turn.isdecimal():
        return turn
    if not 1 <= int(turn) <= len(turns):
        many = f"{len(turns)} turn{'s' if len(turns) != 1 else ''}"
        raise ValueError(f"turn {turn}: the session has {many}")
    return turns[int(turn) - 1]


def last_finished_turn_id(client: Blitz, session_id: str) -> str:
    """The id of the session's latest finished turn. ValueError when none has finished."""
    finished = [
        each.turn_id
        for each in client.list_turns(session_id)
        if each.state == session_pb2.TURN_STATE_FINISHED
    ]
    if not finished:
        raise ValueError(f"{session_id} has no finished turn yet")
    return finished[-1]
