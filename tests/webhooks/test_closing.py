"""At close the dispatcher lets go of the deliveries in flight, so that the next process
takes them at once; when the store refuses, a log line says so (they then wait for their
leases to end, which is only slower)."""

from __future__ import annotations

from typing import Any

import pytest
import structlog
from support.webhooks import create
from support.wire import open_wire

from blitz.config import Settings
from blitz.server import running_server


async def test_a_failed_let_go_at_close_is_logged(
    hooked_settings: Settings, store_class: type[Any], silent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def refuse(self: object, owner: str, ids: object) -> None:
        raise RuntimeError("the store is gone")

    monkeypatch.setattr(store_class, "release_deliveries", refuse)
    with structlog.testing.capture_logs() as logs:
        async with running_server(hooked_settings) as server:
            wire = open_wire("grpc", server)
            try:
                await create(wire, silent.url, ["finished"])
                session = await wire.create_session()
                await wire.run_all(session.id, "hello")
                await silent.wait_for_open(1)
            finally:
                await wire.close()
    [failed] = [e for e in logs if e["event"] == "webhook_release_failed"]
    assert failed["log_level"] == "error" and failed["deliveries"] == 1
