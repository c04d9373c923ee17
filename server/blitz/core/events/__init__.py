"""The event log and its readers.

`event_log.py` is the one pipeline every event passes (stamp, mask, write, fan out), with
`stamping.py` (stamp, mask, cut to size) and `live_readers.py` (each session's readers);
`subscriptions.py` a live reader; `replays.py` reads the store in bounded pages;
`following.py` hears other processes' events where processes share the store.

Nothing is re-exported here: importing one part never imports the others.
"""
