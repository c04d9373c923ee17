"""docs/hooks.md's examples run as they are written: the policy hook (its script and its
declaration) against a real server, and the SDK example against the same."""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from pathlib import Path

import pytest
from support.wire import decide, drive, open_wire

from blitz.config import Settings, load_settings
from blitz.server import running_server
from blitz.v1 import turn_pb2 as t

DOC = (Path(__file__).resolve().parents[2] / "docs" / "hooks.md").read_text()
FOLDER = "/opt/blitz-hooks"


def doc_block(lang: str, after: str = "") -> str:
    section = DOC[DOC.index(after) :] if after else DOC
    match = re.search(rf"^```{lang}\n(.*?)^```$", section, re.S | re.M)
    assert match, f"no {lang} block in docs/hooks.md"
    return match.group(1)


@pytest.fixture
def declared(settings: Settings, tmp_path: Path) -> Settings:
    """The docs' configuration, its folder made here, on the test's settings."""
    folder = tmp_path / "blitz-hooks"
    folder.mkdir()
    (folder / "no-force-push.py").write_text(doc_block("python"))
    config = tmp_path / "blitz.toml"
    config.write_text(doc_block("toml").replace(FOLDER, str(folder)))
    loaded = load_settings({}, {}, config=str(config))
    return replace(
        settings,
        command_binds=loaded.command_binds,
        hooks=loaded.hooks,
        tokens="alice:alice-token-1234",
    )


async def test_the_policy_hook_blocks_a_force_push_and_leaves_a_push_to_a_person(
    declared: Settings,
):
    async with running_server(declared) as server:
        wire = open_wire("connect", server, {"authorization": "Bearer alice-token-1234"})
        try:
            session = await wire.create_session()
            forced = await wire.run_all(session.id, "$ git push --force origin main")
            [result] = [e.tool_result for e in forced if e.HasField("tool_result")]
            assert result.result["error"].startswith("Force pushes are not allowed")
            [resolution] = [e.resolution for e in forced if e.HasField("resolution")]
            assert (resolution.via, resolution.resolved_by) == ("hook", "hk_config_no-force-push")
            for sneaky in ("git push -f origin main", "true && git push origin +main"):
                denied = await wire.run_all(session.id, f"$ {sneaky}")
                assert not any(e.HasField("approval_request") for e in denied), sneaky
            plain = await drive(
                wire, session.id, "$ git push origin main", decide(wire, session.id, "deny")
            )
            assert any(e.HasField("approval_request") for e in plain)
            [outcome] = [e.hook for e in plain if e.HasField("hook")]
            assert outcome.decision == t.HOOK_DECISION_NONE
            # The SDK example, as written, against this server.
            example = doc_block("python", after="## Managing hooks")
            example = example.replace("http://127.0.0.1:8080", server.http_url)
            example = example.replace('"alice-token"', '"alice-token-1234"')
            example = example.replace(FOLDER, declared.command_binds[0])
            printed: list[object] = []
            await asyncio.to_thread(exec, example, {"print": printed.append})
            tested = printed[0].outcome  # type: ignore[attr-defined]
            assert tested.decision == t.HOOK_DECISION_DENY
            assert tested.reason.startswith("Force pushes are not allowed")
        finally:
            await wire.close()
