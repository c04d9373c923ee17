"""OpenAI chat completions, end to end through the real SDK against a scripted server."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import structlog
from genai_prices import Usage, calc_price
from google.protobuf import json_format
from support.fake_provider import KEY, FakeProvider, openai_error, openai_text, openai_tool_call
from support.recording_io import RecordingIO

from blitz.agent import Agent
from blitz.errors import BlitzError, Reason
from blitz.ports import Completed


async def test_text_streams_in_chunks_and_the_final_text_repeats_it(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    fake.script(openai_text("Hel", "lo ", "there"))
    done = await make_agent().start(
        io=io, model="openai:gpt-4o", workspace=workspace, history=None, prompt="hi"
    )
    assert isinstance(done, Completed)
    assert done.output == "Hello there"
    assert [e.text.text for e in io.of_kind("text") if e.text.partial] == ["Hel", "lo ", "there"]
    assert io.final_texts() == ["Hello there"]
    [request] = fake.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.json["stream"] is True


async def test_tool_arguments_arrive_in_pieces_as_partial_tool_calls(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("remember the milk\n")
    fake.script(
        openai_tool_call("read_file", {"path": "notes.txt"}, pieces=3),
        openai_text("It says: remember the milk"),
    )
    done = await make_agent().start(
        io=io, model="openai:gpt-4o", workspace=workspace, history=None, prompt="read it"
    )
    assert isinstance(done, Completed)
    partial = [e.tool_call for e in io.of_kind("tool_call") if e.tool_call.partial]
    assert len(partial) >= 3
    assert all(c.id == "call_1" and c.name == "read_file" for c in partial)
    assert json_format.MessageToDict(partial[-1].args) == {"path": "notes.txt"}
    [result] = io.of_kind("tool_result")
    assert json_format.MessageToDict(result.tool_result.result)["content"] == "remember the milk\n"
    # The tool's result went back to the model in the second request.
    second = fake.requests[1].json["messages"]
    assert second[-1]["role"] == "tool" and "remember the milk" in second[-1]["content"]


async def test_usage_with_cached_tokens_is_recorded_and_priced_by_genai_prices(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    fake.script(openai_text("ok", usage=(1000, 200, 400)))
    await make_agent().start(
        io=io, model="openai:gpt-4o", workspace=workspace, history=None, prompt="hi"
    )
    [entry] = io.usage
    assert (entry.model, entry.input, entry.cached, entry.output) == (
        "openai:gpt-4o",
        1000,
        400,
        200,
    )
    expected = calc_price(
        Usage(input_tokens=1000, cache_read_tokens=400, output_tokens=200),
        model_ref="gpt-4o",
        provider_id="openai",
    )
    assert entry.priced
    assert entry.cost_usd == pytest.approx(float(expected.total_price))
    assert entry.cost_usd > 0


async def test_a_model_with_no_known_price_is_unpriced_not_free(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    fake.script(openai_text("ok", model="my-local-llama"))
    await make_agent().start(
        io=io,
        model="openai-compatible:my-local-llama",
        workspace=workspace,
        history=None,
        prompt="hi",
    )
    [entry] = io.usage
    assert (entry.priced, entry.cost_usd, entry.input, entry.output) == (False, 0.0, 10, 5)


async def test_a_server_that_reports_no_usage_is_recorded_as_unknown_not_zero(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    fake.script(openai_text("ok", model="my-local-llama", usage=None))
    await make_agent().start(
        io=io,
        model="openai-compatible:my-local-llama",
        workspace=workspace,
        history=None,
        prompt="hi",
    )
    [entry] = io.usage
    assert entry.tokens_unknown and (entry.input, entry.output) == (0, 0)


async def test_a_rate_limit_is_retried_after_a_transient_notice(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    fake.script(openai_error(429, "slow down", code="rate_limit_exceeded"), openai_text("fine"))
    done = await make_agent().start(
        io=io, model="openai:gpt-4o", workspace=workspace, history=None, prompt="hi"
    )
    assert isinstance(done, Completed) and done.output == "fine"
    [notice] = io.of_kind("notice")
    assert notice.notice.transient
    assert notice.notice.text.startswith("model call failed (429), retrying in")
    assert len(fake.requests) == 2
    # Only the call that answered is in the ledger; the retry was not a second turn call.
    assert len(io.usage) == 1 and io.model_calls == 1


async def test_server_errors_are_retried_then_the_turn_fails(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    fake.script(*[openai_error(503, "overloaded", kind="server_error")] * 3)
    with pytest.raises(BlitzError) as caught:
        await make_agent().start(
            io=io, model="openai:gpt-4o", workspace=workspace, history=None, prompt="hi"
        )
    assert caught.value.reason is Reason.MODEL_ERROR
    assert caught.value.metadata["status"] == "503"
    assert caught.value.metadata["attempts"] == "3"
    assert len(fake.requests) == 3
    assert len(io.of_kind("notice")) == 2


@pytest.mark.parametrize("status", [401, 403, 404])
async def test_auth_and_other_client_errors_fail_at_once_with_the_status(
    fake: FakeProvider,
    make_agent: Callable[..., Agent],
    io: RecordingIO,
    workspace: Path,
    status: int,
) -> None:
    fake.script(openai_error(status, "no", kind="invalid_request_error"), openai_text("never"))
    with pytest.raises(BlitzError) as caught:
        await make_agent().start(
            io=io, model="openai:gpt-4o", workspace=workspace, history=None, prompt="hi"
        )
    assert caught.value.reason is Reason.MODEL_ERROR
    assert caught.value.metadata["status"] == str(status)
    assert len(fake.requests) == 1
    assert io.of_kind("notice") == []


async def test_a_failed_call_tells_the_client_the_status_and_the_log_the_providers_text(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    fake.script(openai_error(400, "unsupported parameter: frobnicate", kind="invalid_request"))
    with structlog.testing.capture_logs() as logs, pytest.raises(BlitzError) as caught:
        await make_agent().start(
            io=io, model="openai:gpt-4o", workspace=workspace, history=None, prompt="hi"
        )
    assert caught.value.message == "the model call failed: the provider answered HTTP 400"
    [logged] = [e for e in logs if e["event"] == "model_call_failed"]
    assert (logged["model"], logged["status"], logged["attempts"]) == ("openai:gpt-4o", 400, 1)
    assert "unsupported parameter: frobnicate" in logged["error"]


async def test_a_model_that_keeps_misusing_tools_fails_in_our_words(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    """pydantic-ai gives up on a tool the model keeps calling wrongly; its text stays in the log."""
    fake.script(*[openai_tool_call("no_such_tool", {}, call_id=f"call_{n}") for n in range(3)])
    with structlog.testing.capture_logs() as logs, pytest.raises(BlitzError) as caught:
        await make_agent().start(
            io=io, model="openai:gpt-4o", workspace=workspace, history=None, prompt="hi"
        )
    assert caught.value.reason is Reason.MODEL_ERROR
    assert caught.value.message == (
        "the model 'openai:gpt-4o' gave an answer that could not be used "
        "(UnexpectedModelBehavior); the server log has the details"
    )
    assert "no_such_tool" not in caught.value.message
    [logged] = [e for e in logs if e["event"] == "model_misbehaved"]
    assert logged["model"] == "openai:gpt-4o"
    assert "'no_such_tool' exceeded max retries" in logged["error"]


async def test_a_stream_cut_midway_is_retried_and_the_client_sees_the_text_once(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    fake.script(
        openai_text("Hello ", "wor", "ld!", cut_after=3),  # role chunk, "Hello ", "wor"
        openai_text("Hello ", "world!"),
    )
    done = await make_agent().start(
        io=io, model="openai:gpt-4o", workspace=workspace, history=None, prompt="hi"
    )
    assert isinstance(done, Completed) and done.output == "Hello world!"
    assert io.partial_text() == "Hello world!"
    assert io.final_texts() == ["Hello world!"]
    [notice] = io.of_kind("notice")
    assert notice.notice.transient and "retrying" in notice.notice.text
    # The retry sent the same conversation again.
    assert fake.requests[0].json["messages"] == fake.requests[1].json["messages"]


async def test_a_retry_that_breaks_again_early_still_owes_what_the_client_saw(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    """The second attempt repeats only part of the shown text before it breaks too."""
    fake.script(
        openai_text("Hello ", "wor", "ld!", cut_after=3),  # shows "Hello wor"
        openai_text("Hello ", "world!", cut_after=2),  # repeats "Hello ", then breaks
        openai_text("Hello ", "world!"),
    )
    done = await make_agent().start(
        io=io, model="openai:gpt-4o", workspace=workspace, history=None, prompt="hi"
    )
    assert isinstance(done, Completed) and done.output == "Hello world!"
    assert io.partial_text() == "Hello world!"
    assert io.final_texts() == ["Hello world!"]
    assert len(io.of_kind("notice")) == 2


async def test_a_retry_that_answers_differently_says_so(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    fake.script(openai_text("Yes, ", "sure", cut_after=3), openai_text("No."))
    done = await make_agent().start(
        io=io, model="openai:gpt-4o", workspace=workspace, history=None, prompt="hi"
    )
    assert isinstance(done, Completed) and done.output == "No."
    assert io.final_texts() == ["No."]
    texts = [e.notice.text for e in io.of_kind("notice")]
    assert any("answered differently" in t for t in texts)


async def test_a_context_length_error_is_context_overflow(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    fake.script(
        openai_error(
            400,
            "This model's maximum context length is 128000 tokens.",
            code="context_length_exceeded",
        )
    )
    with pytest.raises(BlitzError) as caught:
        await make_agent().start(
            io=io, model="openai:gpt-4o", workspace=workspace, history=None, prompt="hi"
        )
    assert caught.value.reason is Reason.CONTEXT_OVERFLOW
    assert caught.value.metadata["status"] == "400"
    assert len(fake.requests) == 1
