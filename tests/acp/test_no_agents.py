"""A server that declares no ACP agent never loads the ACP SDK (its schema alone takes
about a third of a second to import, docs/benchmarks.md "Start"), and still tells a
client which agents it has."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_PROBE = """
import asyncio, sys
from blitz.assembly import open_core
from blitz.config import Settings
from blitz.ports import CallContext
from blitz.transport.methods import SESSION_SERVICE
from blitz.v1 import session_pb2 as s

async def main() -> None:
    settings = Settings(data_dir=sys.argv[1])
    async with open_core(settings) as core:
        port = core.ports[SESSION_SERVICE.full_name]
        info = await port.get_server_info(s.GetServerInfoRequest(), CallContext())
        print([a.name for a in info.agents])
    print(sorted(m for m in sys.modules if m == "acp" or m.startswith("acp.")))

asyncio.run(main())
"""


def test_no_agent_declared_no_acp_sdk_loaded(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    agents, loaded = done.stdout.splitlines()[-2:]
    assert agents == "['blitz']"
    assert loaded == "[]"
