"""A session's files over time: checkpoints of its workspace, what a rewind puts back, diffs.

`checkpoints.py` takes and keeps each turn's checkpoints (`manifests.py`, `snapshots.py`);
`restoring.py` puts paths back as a checkpoint has them; `diffs.py` is the session's diff.
The RewindSession call itself is the api's (`api/rewind.py`).

Nothing is re-exported here: importing one part never imports the others.
"""
