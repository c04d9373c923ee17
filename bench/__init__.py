"""Blitz's benchmark harness: `make bench`, or `python -m bench [SCENARIO ...] [OPTIONS]`.

Every scenario runs in a client process of its own, beside servers in processes of their
own (`blitz serve`, and the bare servers of `bare_server.py`), and measures them from
outside: latencies at the client, CPU time and memory from /proc. Nothing here imports
the server's internals or fakes any part of it.

- `__main__.py`: runs the scenarios one after the other, prints the table of figures
  beside their targets, writes the JSON and draws the plot.
- `scenarios/`: one module per scenario; `python -m bench.scenarios` runs one of them.
- `servers.py` starts and stops the servers, `procfs.py` reads them, `stats.py` holds
  percentiles and pacing, `results.py` the figures, `targets.py` what they should reach,
  `report.py` the tables and `plot.py` the picture.
- `bare_server.py` is the same stack as Blitz with nothing behind it, for comparison;
  `probe.py` polls `/healthz` from a process of its own.
"""
