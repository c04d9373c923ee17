"""MCP servers from configuration: tools named server.tool, each call behind an MCP approval."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import structlog
from google.protobuf import json_format

from blitz.agent import Agent, load_mcp_config
from blitz.ports import AnswerResult, Completed, TurnPolicy
from blitz.v1 import turn_pb2

if TYPE_CHECKING:
    from conftest import Driver, RecordingIO

SCRIPT = Path(__file__).with_name("mcp_notes_server.py")


@pytest.fixture
def mcp_config(tmp_path: Path) -> Path:
    config = tmp_path / "mcp.json"
    servers = {"notes": {"command": sys.executable, "args": [str(SCRIPT)]}}
    config.write_text(json.dumps({"mcpServers": servers}))
    return config


async def test_an_mcp_tool_runs_after_an_mcp_approval(
    mcp_config: Path, make_driver: Callable[..., Driver], io: RecordingIO
) -> None:
    driver = make_driver(mcp_servers=load_mcp_config(mcp_config))
    done = await driver.run('call notes.note {"text": "buy milk"}', io=io)
    request = driver.parks[0].requests[0].approval_request
    assert request.tool == "notes.note"
    assert request.kind == turn_pb2.ACTION_KIND_MCP
    assert request.scope_label == "mcp: notes.note"
    assert (driver.workspace / "notes.txt").read_text() == "buy milk\n"
    calls = [e.tool_call for e in io.of_kind("tool_call") if not e.tool_call.partial]
    assert {c.name for c in calls} == {"notes.note"}
    [result] = io.of_kind("tool_result")
    assert result.tool_result.name == "notes.note"
    assert json_format.MessageToDict(result.tool_result.result)["content"] == "noted: buy milk"
    assert isinstance(done, Completed)


async def test_mcp_calls_are_refused_under_read_only(
    mcp_config: Path, workspace: Path, io: RecordingIO
) -> None:
    agent = Agent(mcp_servers=load_mcp_config(mcp_config))
    await agent.start(
        io=io,
        model="demo",
        workspace=workspace,
        history=None,
        prompt='call notes.add {"a": 2, "b": 3}',
        policy=TurnPolicy(read_only="look only"),
    )
    [result] = io.of_kind("tool_result")
    assert json_format.MessageToDict(result.tool_result.result)["error"] == "look only"
    assert io.asked == []


async def test_a_rule_approves_an_mcp_tool(
    mcp_config: Path, workspace: Path, io: RecordingIO
) -> None:
    io.rules = {"mcp: notes.add"}
    done = await Agent(mcp_servers=load_mcp_config(mcp_config)).start(
        io=io,
        model="demo",
        workspace=workspace,
        history=None,
        prompt='call notes.add {"a": 2, "b": 3}',
    )
    [result] = io.of_kind("tool_result")
    assert json_format.MessageToDict(result.tool_result.result)["content"] == "5"
    assert isinstance(done, Completed)


async def test_an_mcp_server_that_fails_to_start_is_a_notice(
    tmp_path: Path, workspace: Path, io: RecordingIO
) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"gone": {"command": str(tmp_path / "nope")}}}))
    with structlog.testing.capture_logs() as logs:
        done = await Agent(mcp_servers=load_mcp_config(config)).start(
            io=io, model="demo", workspace=workspace, history=None, prompt="hi"
        )
    assert done.output == "You said: hi"
    [notice] = io.of_kind("notice")
    assert notice.notice.error and "MCP server gone is unavailable" in notice.notice.text
    assert notice.notice.text == (
        "MCP server gone is unavailable: it could not be started or did not answer "
        "(FileNotFoundError); the server log has the details"
    )
    [logged] = [e for e in logs if e["event"] == "mcp_server_unavailable"]
    assert logged["server"] == "gone"
    assert "No such file or directory" in str(logged["exc_info"])


async def test_a_failed_mcp_call_is_an_error_result_in_our_words(
    mcp_config: Path, workspace: Path, io: RecordingIO
) -> None:
    """The server dies mid-call: the model and the client learn which call, the log why."""
    io.rules = {"mcp: notes.crash"}
    with structlog.testing.capture_logs() as logs:
        done = await Agent(mcp_servers=load_mcp_config(mcp_config)).start(
            io=io,
            model="demo",
            workspace=workspace,
            history=None,
            prompt='call notes.crash {"why": "test"}',
        )
    assert isinstance(done, Completed)
    [result] = io.of_kind("tool_result")
    error = json_format.MessageToDict(result.tool_result.result)["error"]
    assert error == (
        "the MCP call to notes.crash failed (MCPError); the server log has the details"
    )
    [logged] = [e for e in logs if e["event"] == "mcp_call_failed"]
    assert (logged["server"], logged["tool"]) == ("notes", "crash")
    assert "Connection closed" in str(logged["exc_info"])


@pytest.mark.parametrize(
    "text",
    ['{"servers": 1}', '{"mcpServers": {"a b": {"command": "x"}}}', '{"mcpServers": {"a": {}}}'],
)
def test_invalid_mcp_configs_are_refused(tmp_path: Path, text: str) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(text)
    with pytest.raises(ValueError, match="MCP config"):
        load_mcp_config(config)


async def test_an_mcp_servers_form_is_asked_now_and_its_values_go_back(
    mcp_config: Path, make_driver: Callable[..., Driver], io: RecordingIO
) -> None:
    """The server's elicitation becomes a question with its form, asked while the turn
    runs; the user's values reach the server typed as its schema says."""
    io.answer_now = AnswerResult(values={"name": "Ada", "guests": 4.0, "terrace": True})
    driver = make_driver(mcp_servers=load_mcp_config(mcp_config))
    await driver.run("call notes.book {}", io=io)
    [asked] = io.asked_now
    assert (asked.mcp_server, asked.question) == ("notes", "Book a table: who, and how many?")
    form = json_format.MessageToDict(asked.form)
    assert form["properties"]["guests"]["type"] == "integer"
    assert set(form["required"]) == {"name", "guests"}
    [result] = io.of_kind("tool_result")
    content = json_format.MessageToDict(result.tool_result.result)["content"]
    assert content == "booked for Ada, 4 guests, on the terrace"


@pytest.mark.parametrize(
    ("answer", "said"),
    [(AnswerResult(declined=True), "not booked: decline"), (AnswerResult(), "not booked: cancel")],
)
async def test_a_declined_or_unanswered_form_is_the_servers_decline_or_cancel(
    mcp_config: Path,
    make_driver: Callable[..., Driver],
    io: RecordingIO,
    answer: AnswerResult,
    said: str,
) -> None:
    io.answer_now = answer
    driver = make_driver(mcp_servers=load_mcp_config(mcp_config))
    await driver.run("call notes.book {}", io=io)
    [result] = io.of_kind("tool_result")
    assert json_format.MessageToDict(result.tool_result.result)["content"] == said


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://auth.example.com/login?next=%2F", "auth.example.com"),
        ("http://127.0.0.1:8765/callback", "127.0.0.1"),
        ("http://[::1]/callback", "::1"),
        ("http://localhost:9000/", "localhost"),
    ],
)
async def test_a_url_to_open_is_asked_with_its_host_on_a_line_of_its_own(
    mcp_config: Path, make_driver: Callable[..., Driver], io: RecordingIO, url: str, host: str
) -> None:
    io.answer_now = AnswerResult(("I have done it",))
    driver = make_driver(mcp_servers=load_mcp_config(mcp_config))
    await driver.run(f"call notes.visit {json.dumps({'url': url})}", io=io)
    [asked] = io.asked_now
    assert asked.question.split("\n") == ["Sign in to continue", url, f"opens {host}"]
    assert list(asked.options) == ["I have done it", "Decline"]
    [result] = io.of_kind("tool_result")
    assert json_format.MessageToDict(result.tool_result.result)["content"] == "visit: accept"


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/login",  # plain http off this machine
        "javascript:alert(1)",
        "file:///etc/passwd",
        "https://bank.example.com@evil.example/",  # a user name dressed as the host
        "https://exa\u043cple.com/",  # not ASCII: shown one way, opened another
        "https:///no-host",
        "https://example.com/a b",
        "https://example.com:99999/",
    ],
)
async def test_a_url_that_is_not_https_or_hides_its_host_is_declined_with_a_notice(
    mcp_config: Path, make_driver: Callable[..., Driver], io: RecordingIO, url: str
) -> None:
    driver = make_driver(mcp_servers=load_mcp_config(mcp_config))
    await driver.run(f"call notes.visit {json.dumps({'url': url})}", io=io)
    assert io.asked_now == []
    [result] = io.of_kind("tool_result")
    assert json_format.MessageToDict(result.tool_result.result)["content"] == "visit: decline"
    [notice] = [e.notice.text for e in io.of_kind("notice") if "open a URL" in e.notice.text]
    assert "MCP server notes asked to open a URL" in notice
    assert url not in notice
