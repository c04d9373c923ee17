"""Anthropic Messages, end to end through the real SDK against a scripted server."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price
from google.protobuf import json_format
from support.fake_provider import KEY, FakeProvider, anthropic_error, anthropic_stream
from support.recording_io import RecordingIO
from support.servers import make_settings, serving

from blitz.agent import Agent
from blitz.errors import BlitzError, Reason
from blitz.ports import Completed
from blitz.v1 import session_pb2 as s

MODEL = "anthropic:claude-sonnet-4-6"


async def test_thinking_text_and_tool_arguments_stream_as_they_arrive(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    args = json.dumps({"path": "a.txt"})
    fake.script(
        anthropic_stream(
            [
                {"thinking": ["Let me ", "look."]},
                {"text": ["Reading ", "it."]},
                {
                    "tool_use": "read_file",
                    "id": "toolu_1",
                    "json": [args[:5], args[5:12], args[12:]],
                },
            ],
            stop_reason="tool_use",
        ),
        anthropic_stream([{"text": ["It says ", "alpha."]}]),
    )
    done = await make_agent().start(
        io=io, model=MODEL, workspace=workspace, history=None, prompt="go"
    )
    assert isinstance(done, Completed) and done.output == "It says alpha."
    assert io.partial_text(thought=True) == "Let me look."
    assert io.final_texts(thought=True) == ["Let me look."]
    assert io.partial_text() == "Reading it.It says alpha."
    partial = [e.tool_call for e in io.of_kind("tool_call") if e.tool_call.partial]
    assert len(partial) >= 3 and partial[0].id == "toolu_1"
    assert json_format.MessageToDict(partial[-1].args) == {"path": "a.txt"}
    first = fake.requests[0]
    assert first.path == "/v1/messages"
    assert KEY in " ".join(first.headers.values()), first.headers
    # The thinking block (with its signature) goes back to the model with the tool result.
    second = fake.requests[1].json["messages"]
    assert second[1]["content"][0]["type"] == "thinking"
    assert second[2]["content"][0]["type"] == "tool_result"


async def test_cache_reads_and_writes_are_recorded_and_priced_by_genai_prices(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    fake.script(
        anthropic_stream(
            [{"text": ["ok"]}],
            usage={
                "input_tokens": 300,
                "cache_read_input_tokens": 2000,
                "cache_creation_input_tokens": 500,
            },
            output_tokens=40,
        )
    )
    await make_agent().start(io=io, model=MODEL, workspace=workspace, history=None, prompt="hi")
    [entry] = io.usage
    # pydantic-ai counts all prompt tokens as input, the cached ones included.
    assert (entry.input, entry.cached, entry.cache_write, entry.output) == (2800, 2000, 500, 40)
    expected = calc_price(
        Usage(input_tokens=2800, cache_read_tokens=2000, cache_write_tokens=500, output_tokens=40),
        model_ref="claude-sonnet-4-6",
        provider_id="anthropic",
    )
    assert entry.priced and entry.cost_usd == pytest.approx(float(expected.total_price))


@pytest.mark.parametrize("transport", ["grpc", "connect"])
async def test_the_last_prompt_counts_cached_tokens_once(
    fake: FakeProvider, tmp_path: Path, transport: str
) -> None:
    # 300 fresh + 2,000 read from the cache + 500 written to it: a prompt of 2,800.
    fake.script(
        anthropic_stream(
            [{"text": ["ok"]}],
            usage={
                "input_tokens": 300,
                "cache_read_input_tokens": 2000,
                "cache_creation_input_tokens": 500,
            },
            output_tokens=40,
        )
    )
    settings = make_settings(
        tmp_path / "data", model=MODEL, anthropic_api_key=KEY, anthropic_base_url=fake.url
    )
    async with serving(settings, transport) as wire:
        session = await wire.create_session()
        events = await wire.run_all(session.id, "hi")
        usage = await wire.call("GetUsage", s.GetUsageRequest(session_id=session.id))
        listed = await wire.call("ListTurns", s.ListTurnsRequest(session_id=session.id))
    assert (usage.total.input, usage.total.cached, usage.total.cache_write) == (2800, 2000, 500)
    assert usage.total.last_prompt == 2800
    assert events[-1].finished.after.last_prompt == 2800
    # The call's own usage event, and the turn as ListTurns sums it, say the same.
    [call] = [e.usage for e in events if e.HasField("usage")]
    assert (call.input, call.last_prompt) == (2800, 2800)
    assert listed.turns[0].usage.last_prompt == 2800


@pytest.mark.parametrize("transport", ["grpc", "connect"])
async def test_web_searches_the_provider_ran_are_counted_and_priced(
    fake: FakeProvider, tmp_path: Path, transport: str
) -> None:
    fake.script(
        anthropic_stream(
            [{"text": ["found it"]}],
            usage={"input_tokens": 1000, "server_tool_use": {"web_search_requests": 3}},  # type: ignore[dict-item]
            output_tokens=50,
        )
    )
    settings = make_settings(
        tmp_path / "data", model=MODEL, anthropic_api_key=KEY, anthropic_base_url=fake.url
    )
    async with serving(settings, transport) as wire:
        session = await wire.create_session()
        await wire.run_all(session.id, "look it up")
        usage = await wire.call("GetUsage", s.GetUsageRequest(session_id=session.id))
    assert usage.total.search_queries == 3
    # Anthropic's web search costs $10 per thousand, on top of the tokens.
    assert usage.total.search_cost_usd == pytest.approx(0.03)
    tokens = calc_price(
        Usage(input_tokens=1000, output_tokens=50),
        model_ref="claude-sonnet-4-6",
        provider_id="anthropic",
    )
    assert usage.total.cost_usd == pytest.approx(float(tokens.total_price) + 0.03)


async def test_an_anthropic_auth_error_fails_at_once(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    fake.script(anthropic_error(401, "authentication_error", "invalid x-api-key"))
    with pytest.raises(BlitzError) as caught:
        await make_agent().start(io=io, model=MODEL, workspace=workspace, history=None, prompt="hi")
    assert caught.value.reason is Reason.MODEL_ERROR
    assert caught.value.metadata["status"] == "401"
    assert KEY not in caught.value.message
    assert len(fake.requests) == 1


async def test_an_overloaded_anthropic_is_retried(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    fake.script(
        anthropic_error(529, "overloaded_error", "Overloaded"), anthropic_stream([{"text": ["ok"]}])
    )
    done = await make_agent().start(
        io=io, model=MODEL, workspace=workspace, history=None, prompt="hi"
    )
    assert isinstance(done, Completed) and done.output == "ok"
    assert "(529)" in io.of_kind("notice")[0].notice.text
