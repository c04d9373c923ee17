"""Tools through a real turn: confined to the workspace, bounded commands, errors as results."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from google.protobuf import json_format

from blitz.ports import Completed

if TYPE_CHECKING:
    from conftest import Driver, RecordingIO


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    path = outside / "secret.txt"
    path.write_text("the secret\n")
    return path


@pytest.mark.parametrize(
    ("prompt", "error"),
    [
        ("read ../outside/secret.txt", "contains '..'"),
        ("read {secret}", "is outside the workspace"),
        ("read link/secret.txt", "is outside the workspace"),
        ("ls ..", "contains '..'"),
        ("ls link", "is outside the workspace"),
        ("delete link/secret.txt", "is outside the workspace"),
        ("write link/secret.txt\n```\npwned\n```", "is outside the workspace"),
        ("write ../escape.txt\n```\npwned\n```", "contains '..'"),
    ],
)
async def test_paths_outside_the_workspace_are_refused_to_the_model(
    driver: Driver, io: RecordingIO, secret: Path, prompt: str, error: str
) -> None:
    (driver.workspace / "link").symlink_to(secret.parent)
    done = await driver.run(prompt.format(secret=secret), io=io)
    # Refused before asking anyone, the file untouched, and the model told why.
    assert driver.parks == []
    assert untouched(secret, driver.workspace)
    assert "the secret" not in done.output
    assert error in done.output
    [result] = io.of_kind("tool_result")
    assert error in json_format.MessageToDict(result.tool_result.result)["error"]


async def test_command_timeout_is_reported(
    make_driver: Callable[..., Driver], io: RecordingIO
) -> None:
    done = await make_driver(command_timeout=0.3).run("$ sleep 30", io=io)
    assert "$ sleep 30 -> timed out" in done.output
    [result] = io.of_kind("tool_result")
    fields = json_format.MessageToDict(result.tool_result.result)
    assert fields["timed_out"] is True
    assert fields["exit_code"] is None


async def test_a_command_with_a_nul_is_refused_before_anyone_is_asked(
    driver: Driver, io: RecordingIO
) -> None:
    await driver.run('call run_command {"command": "echo a\\u0000; rm -rf x"}', io=io)
    assert driver.parks == []
    [result] = io.of_kind("tool_result")
    assert "NUL" in json_format.MessageToDict(result.tool_result.result)["error"]


async def test_command_output_is_capped(
    make_driver: Callable[..., Driver], io: RecordingIO
) -> None:
    done = await make_driver(output_cap=64).run("$ seq 1 10000", io=io)
    [result] = io.of_kind("tool_result")
    fields = json_format.MessageToDict(result.tool_result.result)
    assert fields["truncated"] is True
    assert len(fields["output"]) == 64
    assert "(output truncated)" in done.output


async def test_commands_see_a_scrubbed_environment(
    driver: Driver, io: RecordingIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BLITZ_TEST_SECRET", "hunter2")
    done = await driver.run("$ env", io=io)
    assert "hunter2" not in done.output
    assert f"HOME={driver.workspace.resolve()}" in done.output


async def test_read_is_capped_too(
    workspace: Path, make_driver: Callable[..., Driver], io: RecordingIO
) -> None:
    (workspace / "big.txt").write_text("x" * 1000)
    done = await make_driver(output_cap=10).run("read big.txt", io=io)
    assert isinstance(done, Completed)
    [result] = io.of_kind("tool_result")
    assert json_format.MessageToDict(result.tool_result.result) == {
        "path": "big.txt",
        "content": "x" * 10,
        "truncated": True,
    }


def untouched(secret: Path, workspace: Path) -> bool:
    return secret.read_text() == "the secret\n" and not (workspace.parent / "escape.txt").exists()
