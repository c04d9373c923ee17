"""A session's files over time: checkpoints of its workspace, rewinds to them, and diffs.

`checkpoints.py` takes and keeps each turn's checkpoints (`manifests.py`, `snapshots.py`);
`rewind.py` is RewindSession, `restoring.py` its blocking half; `diffs.py` the session's
diff.

Nothing is re-exported here: importing one part never imports the others.
"""
