"""Commands run as `blitz serve` runs them: on uvloop, beside busy gRPC calls.

uvloop forks to start a process, and gRPC's fork handlers made such children crash before
they ran the command (about one in ten under load). The check needs a fresh process: gRPC
reads its settings once, when it starts.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path

    import blitz  # sets the process up as `blitz serve` has it
    import grpc, uvloop
    from grpc_health.v1 import health, health_pb2, health_pb2_grpc

    from blitz.agent.shell import run_shell

    async def main():
        server = grpc.aio.server()
        health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        stub = health_pb2_grpc.HealthStub(channel)

        async def busy():
            while True:
                await stub.Check(health_pb2.HealthCheckRequest())

        load = [asyncio.create_task(busy()) for _ in range(4)]
        codes = []
        for _ in range(200):
            outcome = await run_shell(
                "echo one", cwd=Path(sys.argv[1]), env={"PATH": "/usr/bin:/bin"},
                time_limit=60, output_cap=100,
            )
            codes.append((outcome.exit_code, outcome.output))
        began = asyncio.get_running_loop().time()
        background = await run_shell(
            "sleep 30 >/dev/null 2>&1 & echo started", cwd=Path(sys.argv[1]),
            env={"PATH": "/usr/bin:/bin"}, time_limit=60, output_cap=100,
        )
        took = asyncio.get_running_loop().time() - began
        for task in load:
            task.cancel()
        await channel.close()
        await server.stop(None)
        bad = [c for c in codes if c != (0, "one\\n")]
        print(f"{len(bad)} of {len(codes)} failed: {bad[:3]}")
        print(f"background job: {took:.1f} s, {background.output.strip()}")

    uvloop.run(main())
    """
)


def test_commands_do_not_crash_while_grpc_calls_are_in_flight(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    failures, background = done.stdout.splitlines()
    assert failures.startswith("0 of 200 failed"), done.stdout
    # uvloop leaves copies of the output pipe in the child, so even a background job whose
    # output goes elsewhere held a finished command to its timeout.
    # (Generous bounds: a loaded machine can stall a process for seconds.)
    seconds = float(background.split()[2])
    assert seconds < 30 and background.endswith("started"), background
