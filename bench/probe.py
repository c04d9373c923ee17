"""`python -m bench.probe PORT INTERVAL OUT`: a health prober in a process of its own.

A scenario starts it with `async with prober(port, interval) as probes:`; once the block
is left, `probes` holds one latency in ms per answered probe, and `probes.errors` counts
those that failed. The prober sends `GET /healthz` to 127.0.0.1:PORT every INTERVAL
seconds, each on a new connection, and appends one line per probe to OUT: the latency in
milliseconds and the status, or `error` and why. It runs until SIGTERM. Being a process
of its own, its figures carry none of the measuring client's load, only the server's.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from bench.servers import ROOT, healthz
from bench.stats import ms, now

__all__ = ["Probes", "prober"]


class Probes(list[float]):
    """Latencies of the answered probes, in ms; `errors`: how many failed or were not 200."""

    errors: int = 0


@asynccontextmanager
async def prober(port: int, interval: float) -> AsyncIterator[Probes]:
    probes = Probes()
    with tempfile.TemporaryDirectory(prefix="blitz-probe-") as tmp:
        out = Path(tmp) / "probes"
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.probe", str(port), str(interval), str(out), cwd=ROOT
        )
        try:
            # The block starts once the prober is up and probing.
            async with asyncio.timeout(30):
                while not out.exists() or not out.stat().st_size:
                    if proc.returncode is not None:
                        raise RuntimeError(f"the prober exited ({proc.returncode})")
                    await asyncio.sleep(0.01)
            yield probes
        finally:
            proc.terminate()
            await proc.wait()
            text = await asyncio.to_thread(out.read_text) if out.exists() else ""
            # The first probe came before the block: it says nothing of what ran in it.
            for line in text.splitlines()[1:]:
                latency, status = line.split()
                if latency == "error" or status != "200":
                    probes.errors += 1
                else:
                    probes.append(float(latency))


async def probe(port: int, interval: float, out: Path) -> None:
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    with out.open("a", buffering=1) as lines:
        while not stop.is_set():
            started = now()
            try:
                status = await healthz(port, within=10.0)
                lines.write(f"{ms(now() - started):.3f} {status}\n")
            except (OSError, TimeoutError, ValueError, IndexError) as exc:
                lines.write(f"error {type(exc).__name__}\n")
            try:
                await asyncio.wait_for(stop.wait(), max(0.0, started + interval - now()))
            except TimeoutError:
                pass


def main() -> None:
    port, interval, out = int(sys.argv[1]), float(sys.argv[2]), Path(sys.argv[3])
    asyncio.run(probe(port, interval, out))


if __name__ == "__main__":
    main()
