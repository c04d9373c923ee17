"""Approvals and questions: parking a turn on its requests, and how each one ends.

`pending.py` stores and announces a turn's requests and resumes it once all are resolved
(`answered.py`: what the driver is told then; `by_rule.py`: a request decided by a rule
as it is asked; `request_events.py`: what a request's event says); `rules.py` and
`approvals.py` say what a rule covers and how a request ended; `plans.py` is a plan-mode
turn's proposal; `deadlines.py` the timers of parked turns. The calls that decide and
answer (Decide, Answer) are the api's (`api/decisions.py`).

Nothing is re-exported here: importing one part never imports the others.
"""
