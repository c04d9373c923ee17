"""Model names, keys from configuration only, images, and keys never logged."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import structlog
from support.fake_provider import KEY, FakeProvider, openai_error, openai_text
from support.recording_io import RecordingIO

from blitz.agent import Agent, ModelAccess, validate_model
from blitz.config import load_settings
from blitz.errors import BlitzError, Reason
from blitz.ports import ImageInput, TurnPolicy

PNG = bytes.fromhex("89504e470d0a1a0a") + b"\x00" * 60


@pytest.mark.parametrize(
    ("name", "access", "says"),
    [
        ("openai:gpt-4o", ModelAccess(), "OpenAI API key is not configured"),
        ("anthropic:claude-sonnet-4-6", ModelAccess(), "Anthropic API key is not configured"),
        (
            "openai-compatible:llama3",
            ModelAccess(),
            "base URL of the OpenAI-compatible server is not configured",
        ),
        ("openai:", ModelAccess(openai_api_key="k"), "name the openai model"),
        ("nonsense-provider:thing", ModelAccess(), "not available"),
    ],
)
def test_models_that_cannot_be_served_are_refused_on_the_model_field(
    name: str, access: ModelAccess, says: str
) -> None:
    with pytest.raises(BlitzError) as caught:
        validate_model(name, access)
    assert caught.value.reason is Reason.INVALID_ARGUMENT
    assert caught.value.metadata["field"] == "model"
    assert says in caught.value.message


def test_an_unknown_provider_is_refused_in_our_words_and_logged_in_pydantic_ais() -> None:
    with structlog.testing.capture_logs() as logs, pytest.raises(BlitzError) as caught:
        validate_model("nonsense-provider:thing")
    assert caught.value.message == (
        "model 'nonsense-provider:thing' is not available: its provider is unknown or not "
        "configured on this server (UserError)"
    )
    [logged] = [e for e in logs if e["event"] == "model_unavailable"]
    assert logged["model"] == "nonsense-provider:thing"
    assert "Unknown model: nonsense-provider:thing" in logged["error"]


def test_configured_providers_validate_without_any_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    access = ModelAccess(
        openai_api_key="k", anthropic_api_key="k", compatible_base_url="http://127.0.0.1:9/v1"
    )
    for name in (
        "openai:gpt-4o",
        "anthropic:claude-sonnet-4-6",
        "openai-compatible:x",
        "openai-compatible",
    ):
        validate_model(name, access)


def test_standard_key_variables_are_read_at_the_entry_point_and_hidden() -> None:
    settings = load_settings({}, {"OPENAI_API_KEY": KEY, "BLITZ_ANTHROPIC_API_KEY": "a-" + KEY})
    assert settings.openai_api_key == KEY
    assert settings.anthropic_api_key == "a-" + KEY
    assert KEY not in repr(settings)
    flagged = load_settings({"openai_api_key": "from-flag"}, {"OPENAI_API_KEY": KEY})
    assert flagged.openai_api_key == "from-flag"


async def test_keys_never_reach_the_logs(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    fake.script(openai_error(429, "slow"), openai_error(401, f"bad key {KEY[:6]}..."))
    with structlog.testing.capture_logs() as logs, pytest.raises(BlitzError) as caught:
        await make_agent().start(
            io=io, model="openai:gpt-4o", workspace=workspace, history=None, prompt="hi"
        )
    assert KEY not in repr(logs)
    assert KEY not in repr(caught.value)
    notices = io.of_kind("notice")
    assert notices, "the 429 was retried, and a notice said so"
    assert all(KEY not in e.notice.text for e in notices)


async def test_images_go_to_the_model_as_image_content(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    fake.script(openai_text("a pixel"))
    policy = TurnPolicy(images=(ImageInput(data=PNG, media_type="image/png"),))
    await make_agent().start(
        io=io,
        model="openai:gpt-4o",
        workspace=workspace,
        history=None,
        prompt="what?",
        policy=policy,
    )
    [message] = [m for m in fake.requests[0].json["messages"] if m["role"] == "user"]
    kinds = [part["type"] for part in message["content"]]
    assert kinds == ["text", "image_url"]
    assert message["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")


async def test_images_for_a_model_that_cannot_see_are_refused_on_image_ids(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    policy = TurnPolicy(images=(ImageInput(data=PNG, media_type="image/png"),))
    with pytest.raises(BlitzError) as caught:
        await make_agent(compatible_images=False).start(
            io=io,
            model="openai-compatible:text-only",
            workspace=workspace,
            history=None,
            prompt="what?",
            policy=policy,
        )
    assert caught.value.reason is Reason.INVALID_ARGUMENT
    assert caught.value.metadata["field"] == "turn.image_ids"
    assert "does not accept images" in caught.value.message
    assert fake.requests == []
