"""`blitz serve` as a process on fixed ports of 127.0.0.1, for clients outside this process
(a browser): started as an operator would, stopped with SIGTERM, started again on the same
ports and data folder, so a page that was connected finds it back.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import httpx

from support.servers import free_port

__all__ = ["BlitzServe"]


class BlitzServe:
    """One `blitz serve` on a SQLite file in `data_dir`; `extra` are more of its flags."""

    def __init__(self, data_dir: Path, *extra: str) -> None:
        self.data_dir = data_dir
        self.extra = extra
        self.grpc_port = free_port()
        self.http_port = free_port()
        self.log_path = data_dir.parent / f"{data_dir.name}-serve.log"
        self.process: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def grpc_target(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    async def start(self, *, within: float = 60) -> BlitzServe:
        """Start it and wait until `/readyz` answers 200."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("BLITZ_")}
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as sink:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "blitz.cli", "serve",
                f"--grpc-port={self.grpc_port}", f"--http-port={self.http_port}",
                f"--data-dir={self.data_dir}", "--log-format=json", "--drain-timeout=2",
                *self.extra,
                env=env, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL, stderr=sink,
            )  # fmt: skip
        deadline = asyncio.get_running_loop().time() + within
        async with httpx.AsyncClient() as client:
            while True:
                assert self.process.returncode is None, f"blitz serve exited:\n{self.log()}"
                try:
                    if (await client.get(self.url + "/readyz", timeout=2)).status_code == 200:
                        return self
                except httpx.HTTPError:
                    pass
                assert asyncio.get_running_loop().time() < deadline, f"not ready:\n{self.log()}"
                await asyncio.sleep(0.1)

    async def stop(self, *, within: float = 30) -> None:
        """SIGTERM, and wait for it to drain and exit (SIGKILL past `within`)."""
        process, self.process = self.process, None
        if process is None or process.returncode is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), within)
        except TimeoutError:
            process.kill()
            await process.wait()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
