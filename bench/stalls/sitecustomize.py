"""Loaded by a Blitz server that `bench/servers.py` starts with BLITZ_BENCH_STALLS set (it
puts this folder first on PYTHONPATH): what held the server's event loop up.

A callback on the loop notes the time every millisecond; a thread looks every 2 ms, and
when the loop has not turned for more than `BLITZ_BENCH_STALL_MS` (12 by default) it
takes the loop thread's stack, once per stall. Each garbage collection is timed too. Both
go to files in the folder BLITZ_BENCH_STALLS names, one pair per server process
(`stalls-PID.txt`, `gc-PID.txt`); `python -m bench.stalls FOLDER` sums them up. The
watching thread costs the server CPU (the idle server's 10 ms a second became 40 with the
stall probe of docs/benchmarks.md) and takes the interpreter from the loop now and then:
never cite a CPU or latency figure from a run with it.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
import traceback

_FOLDER = os.environ.get("BLITZ_BENCH_STALLS", "")


def _install() -> None:
    import uvloop

    pid = os.getpid()
    stalls = open(f"{_FOLDER}/stalls-{pid}.txt", "a", buffering=1)
    collections = open(f"{_FOLDER}/gc-{pid}.txt", "a", buffering=1)
    bound = float(os.environ.get("BLITZ_BENCH_STALL_MS", "12")) / 1000
    beat = [time.perf_counter()]
    began: list[float] = []
    main = threading.main_thread().ident or 0

    def timed(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            began.append(time.perf_counter())
        elif began:
            ms = (time.perf_counter() - began.pop()) * 1000
            collections.write(f"{time.time():.3f} {info['generation']} {ms:.3f}\n")

    def watch() -> None:
        sampled = None
        while True:
            time.sleep(0.002)
            lag = time.perf_counter() - beat[0]
            if lag > bound and sampled != beat[0]:
                sampled = beat[0]
                frame = sys._current_frames().get(main)
                if frame is None:
                    continue
                stack = [
                    f"{f.filename.rsplit('site-packages/', 1)[-1].rsplit('server/', 1)[-1]}"
                    f":{f.lineno} {f.name}"
                    for f in traceback.extract_stack(frame)[-16:]
                ]
                stalls.write(f"== {time.time():.3f} {lag * 1000:.1f}\n" + "\n".join(stack) + "\n")

    def new_loop() -> uvloop.Loop:
        loop = uvloop.new_event_loop()

        def turn() -> None:
            beat[0] = time.perf_counter()
            loop.call_later(0.001, turn)

        loop.call_soon(turn)
        return loop

    run = uvloop.run

    def watched_run(main_coro, **kwargs):  # type: ignore[no-untyped-def]
        kwargs["loop_factory"] = new_loop
        return run(main_coro, **kwargs)

    uvloop.run = watched_run  # type: ignore[assignment]
    gc.callbacks.append(timed)
    threading.Thread(target=watch, name="bench-stalls", daemon=True).start()


if _FOLDER and "serve" in sys.argv:
    _install()
