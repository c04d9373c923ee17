"""Hooks (docs/hooks.md): HookService, and running hooks at their points of a turn.

`service.py` is `HookCore`, the calls and whose hook is whose; `turn_hooks.py` is what the
driver, the turn's channel and the pending requests ask at each event (`pre_tool.py`: at
the gate, what pre_tool hooks say of an action and how they rewrite it); `running.py` runs
one hook (`commands`: in the session's box through the port the assembly hands over;
`http.py`: a signed POST through `blitz.outbound`), `answers.py` reads what it answered,
`payloads.py` is the JSON it is sent and `matching.py` says which hooks an action calls.
This room sits between the requests and the driver: it imports nothing of either above
it, and nothing of `blitz.agent`.
"""
