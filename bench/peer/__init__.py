"""The peer in the bench: LangGraph's Agent Server, run the way a team would run it on one
machine (`langgraph dev`, in memory), with the same `$ echo` turn as Blitz's, so that the
`peer` scenario can print its figures beside Blitz's.

- `venv.py` makes its own virtual environment (`bench/.peer-venv`) from the pins of
  `requirements.txt`; nothing of it enters Blitz's.
- `graph.py` is the graph the server runs: a deterministic chat model, a tool node whose
  tool asks for approval with `interrupt()`, resumed with `Command(resume=...)`.
- `drive.py` runs in that environment: it starts the server, drives it with
  `langgraph-sdk` and measures it from /proc, as the scenarios measure Blitz.
"""
