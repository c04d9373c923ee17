"""The turn driver: starting, driving, parking, resuming and ending turns.

`turns.Turns` is the driver (with `holds.py`, `endings.py`, `queue.py` and `parking.py`,
which it inherits); `runners.py` is the seam behind which the agent, the slash commands and the
workflow runs each carry out their kind of turn; `recovery.py` and `leases.py` settle what
a dead process left; `turn_io.py` is the agent's view of a running turn.

Nothing is re-exported here: importing one part never imports the others.
"""
