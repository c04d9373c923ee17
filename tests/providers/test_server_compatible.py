"""End to end: `blitz serve --model openai-compatible:… --base-url …` runs a coding turn."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import json_format
from support.fake_provider import FakeProvider, openai_text, openai_tool_call
from support.servers import make_settings, serving
from support.wire import decide, drive

from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

MODEL = "qwen-coder"


@pytest.mark.parametrize("transport", ["grpc", "connect"])
async def test_a_multi_step_coding_turn_with_approvals(
    fake: FakeProvider, tmp_path: Path, transport: str
) -> None:
    fake.script(
        openai_tool_call(
            "write_file", {"path": "hello.py", "content": "print('hi')\n"}, model=MODEL
        ),
        openai_tool_call(
            "run_command", {"command": "python3 hello.py"}, call_id="call_2", model=MODEL
        ),
        openai_text("I wrote hello.py ", "and it prints hi.", model=MODEL),
    )
    settings = make_settings(
        tmp_path / "data", model=f"openai-compatible:{MODEL}", base_url=fake.url + "/v1"
    )
    async with serving(settings, transport) as wire:
        session = await wire.create_session()
        events = await drive(
            wire,
            session.id,
            "make a hello script and run it",
            decide(wire, session.id, t.DECISION_ONCE),
        )
        usage = await wire.call("GetUsage", s.GetUsageRequest(session_id=session.id))
    workspace = settings.workspace_root / session.workspace
    assert (workspace / "hello.py").read_text() == "print('hi')\n"
    approvals = [e.approval_request for e in events if e.HasField("approval_request")]
    assert [(a.kind, a.scope_label) for a in approvals] == [
        (t.ACTION_KIND_WRITE, "write: hello.py"),
        (t.ACTION_KIND_COMMAND, "command: python3 hello.py"),
    ]
    results = [
        json_format.MessageToDict(e.tool_result.result) for e in events if e.HasField("tool_result")
    ]
    assert results[1]["output"] == "hi\n" and results[1]["exit_code"] == 0
    live = "".join(e.tool_output.output for e in events if e.HasField("tool_output"))
    assert live == "hi\n"
    finished = events[-1].finished
    assert not finished.HasField("error")
    assert finished.output == "I wrote hello.py and it prints hi."
    assert len(fake.requests) == 3
    assert all(r.json["model"] == MODEL for r in fake.requests)
    # A local model has no known price: counted, but unpriced.
    assert usage.total.calls == 3 and not usage.total.priced


async def test_a_server_that_reuses_tool_call_ids_can_be_approved_again(
    fake: FakeProvider, tmp_path: Path
) -> None:
    # Some servers number tool calls from 0 in every response: two approvals, one id.
    fake.script(
        openai_tool_call("run_command", {"command": "echo one"}, call_id="0", model=MODEL),
        openai_tool_call("run_command", {"command": "echo two"}, call_id="0", model=MODEL),
        openai_text("first turn done", model=MODEL),
        openai_tool_call("run_command", {"command": "echo three"}, call_id="0", model=MODEL),
        openai_text("second turn done", model=MODEL),
    )
    settings = make_settings(
        tmp_path / "data", model=f"openai-compatible:{MODEL}", base_url=fake.url + "/v1"
    )
    async with serving(settings) as wire:
        session = await wire.create_session()
        on_request = decide(wire, session.id, t.DECISION_ONCE)
        first = await drive(wire, session.id, "run two things", on_request)
        second = await drive(wire, session.id, "and one more", on_request)
    outputs = [e.tool_result.result["output"] for e in first + second if e.HasField("tool_result")]
    assert outputs == ["one\n", "two\n", "three\n"]
    assert second[-1].finished.output == "second turn done"


@pytest.mark.parametrize("transport", ["grpc", "connect"])
async def test_a_call_with_no_reported_usage_is_unknown_on_the_wire_not_zero(
    fake: FakeProvider, tmp_path: Path, transport: str
) -> None:
    fake.script(openai_text("ok", model=MODEL, usage=None))
    settings = make_settings(
        tmp_path / "data", model=f"openai-compatible:{MODEL}", base_url=fake.url + "/v1"
    )
    async with serving(settings, transport) as wire:
        session = await wire.create_session()
        events = await wire.run_all(session.id, "hi")
        usage = await wire.call("GetUsage", s.GetUsageRequest(session_id=session.id))
    [call] = [e.usage for e in events if e.HasField("usage")]
    assert call.tokens_unknown and call.calls == 1 and call.input == 0
    assert events[-1].finished.after.tokens_unknown
    assert usage.total.tokens_unknown and usage.entries[0].tokens_unknown
