"""Model names to pydantic-ai models: `demo` built in, providers built from settings.

A session's model is `provider:name`: `openai:NAME` and `openai-compatible:NAME` speak
OpenAI chat completions (the latter to the configured `base_url`: vLLM, Ollama, llama.cpp,
LM Studio), `anthropic:NAME` the Anthropic Messages API, `demo` is built in, and any other
name goes to pydantic-ai's `infer_model` (whose providers read their own environment).
Keys and base URLs come only from `ModelAccess`, which the entry point fills from
settings; this module never reads the environment and never logs a key.

The SDK clients are built with their own retries off: `loop.py` retries (with a notice
the client sees), and two retry layers would multiply the waits silently. `ModelPool`
keeps one model (one SDK client) per name, so provider connections are pooled across turns.
`validate_model` is what the core calls when a session names a model; a name that cannot
be served is `INVALID_ARGUMENT` on field `model` in our own words — no library exception
and no library text leaves here; the details go to the log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog
from pydantic_ai import RunContext
from pydantic_ai.exceptions import UserError
from pydantic_ai.models import Model, infer_model
from pydantic_ai.models._abstract import AbstractModel
from pydantic_ai.profiles import ModelProfile

from blitz.agent.demo import DEMO_MODEL_NAME, DemoModel
from blitz.errors import invalid_argument

__all__ = [
    "COMPATIBLE_PROVIDER",
    "ModelAccess",
    "ModelPool",
    "available_models",
    "close_model",
    "context_window",
    "is_free",
    "resolve_model",
    "validate_model",
]

log = structlog.get_logger(__name__)

# The provider name of OpenAI-compatible servers, as sessions write it.
COMPATIBLE_PROVIDER = "openai-compatible"
# The model name sent when a session says just `openai-compatible` (servers that serve
# one model, such as llama.cpp, ignore it).
_DEFAULT_COMPATIBLE_NAME = "default"

# The demo model holds no state between requests, so one instance serves every run.
_DEMO = DemoModel()


@dataclass(frozen=True, kw_only=True)
class ModelAccess:
    """How to reach each provider: keys and base URLs, from settings only."""

    openai_api_key: str = field(default="", repr=False)
    openai_base_url: str = ""
    anthropic_api_key: str = field(default="", repr=False)
    anthropic_base_url: str = ""
    compatible_base_url: str = ""
    compatible_api_key: str = field(default="", repr=False)
    compatible_images: bool = True
    # Tokens assumed for a model whose window is unknown; 0: unknown stays unknown.
    default_context_window: int = 0


def available_models(access: ModelAccess) -> list[str]:
    """The models `access` reaches: `demo`, and `PROVIDER:*` for each provider it has a key
    or an address for. Other providers pydantic-ai knows may work too, given their keys in
    the environment; they are not listed."""
    models = [DEMO_MODEL_NAME]
    if access.openai_api_key:
        models.append("openai:*")
    if access.anthropic_api_key:
        models.append("anthropic:*")
    if access.compatible_base_url:
        models.append(f"{COMPATIBLE_PROVIDER}:*")
    return models


def resolve_model(name: str, access: ModelAccess | None = None) -> Model:
    """The model `name` stands for, reached with `access`."""
    if name == DEMO_MODEL_NAME:
        return _DEMO
    if not name or name != name.strip():
        raise invalid_argument("model", f"invalid model name {name!r}")
    access = access or ModelAccess()
    provider, _, model_name = name.partition(":")
    try:
        if provider == "openai":
            return _openai(model_name, access)
        if provider == "anthropic":
            return _anthropic(model_name, access)
        if provider == COMPATIBLE_PROVIDER:
            return _compatible(model_name or _DEFAULT_COMPATIBLE_NAME, access)
        return infer_model(name)
    except ImportError as exc:
        raise invalid_argument(
            "model", f"model {name!r} needs a provider package that is not installed"
        ) from exc
    except (UserError, ValueError) as exc:
        # Unknown names and missing credentials of the providers pydantic-ai builds itself.
        # Its text may name environment variables and internals: the log gets it, not the
        # client.
        log.warning("model_unavailable", model=name, error=f"{type(exc).__name__}: {exc}")
        raise invalid_argument(
            "model",
            f"model {name!r} is not available: its provider is unknown or not configured "
            f"on this server ({type(exc).__name__})",
        ) from exc


class ModelPool:
    """One model per name, made on first use and kept, so its client's connections are
    pooled across turns; `aclose` closes the clients of those it made."""

    def __init__(self, access: ModelAccess, given: Mapping[str, Model] | None = None) -> None:
        """
        Args:
            access: How to reach the providers.
            given: Models served by name as they are, before any name is resolved (a
                pydantic-ai model of the embedder's own); their owner closes them.
        """
        self._access = access
        self._given = dict(given or {})
        self._made: dict[str, Model] = {}
        # Context windows by model object (a run's model is one of ours, or a given one).
        self._windows: dict[int, int | None] = {}

    def get(self, name: str) -> Model:
        """The model `name` stands for; `BlitzError(INVALID_ARGUMENT)` when it cannot be served."""
        model = self._given.get(name)
        if model is None:
            model = self._made.get(name)
        if model is None:
            model = self._made[name] = resolve_model(name, self._access)
        return model

    def window_of(self, ctx: RunContext[Any]) -> int | None:
        """The context window of the model a run calls (see window.py)."""
        key = id(ctx.model)
        if key not in self._windows:
            self._windows[key] = context_window(ctx.model, self._access)
        return self._windows[key]

    async def aclose(self) -> None:
        """Close the provider clients of every model made so far."""
        made, self._made = list(self._made.values()), {}
        for model in made:
            await close_model(model)


def validate_model(name: str, access: ModelAccess | None = None) -> None:
    """Raise `BlitzError(INVALID_ARGUMENT, field=model)` unless `name` can be served."""
    resolve_model(name, access)


def is_free(model: Model) -> bool:
    """Whether the model's calls are known to cost nothing (priced, at zero)."""
    return isinstance(model, DemoModel)


def context_window(model: AbstractModel, access: ModelAccess | None = None) -> int | None:
    """The model's context window in tokens, if known (or assumed by configuration)."""
    if isinstance(model, DemoModel):
        return None
    known = model.context_window
    if known:
        return known
    default = (access or ModelAccess()).default_context_window
    return default or None


async def close_model(model: Model) -> None:
    """Close the HTTP connections of a model's SDK client, if it has one."""
    client = getattr(model, "client", None)
    close = getattr(client, "close", None)
    if close is not None:
        await close()


def _need(value: str, what: str, *, flag: str, env: str) -> str:
    if not value:
        raise invalid_argument("model", f"{what} is not configured (set {flag} or {env})")
    return value


def _openai(model_name: str, access: ModelAccess) -> Model:
    from openai import AsyncOpenAI
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    _name(model_name, "openai")
    key = _need(
        access.openai_api_key,
        "the OpenAI API key",
        flag="--openai-api-key",
        env="BLITZ_OPENAI_API_KEY",
    )
    client = AsyncOpenAI(api_key=key, base_url=access.openai_base_url or None, max_retries=0)
    return OpenAIChatModel(model_name, provider=OpenAIProvider(openai_client=client))


def _anthropic(model_name: str, access: ModelAccess) -> Model:
    from anthropic import AsyncAnthropic
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    _name(model_name, "anthropic")
    key = _need(
        access.anthropic_api_key,
        "the Anthropic API key",
        flag="--anthropic-api-key",
        env="BLITZ_ANTHROPIC_API_KEY",
    )
    client = AsyncAnthropic(api_key=key, base_url=access.anthropic_base_url or None, max_retries=0)
    return AnthropicModel(model_name, provider=AnthropicProvider(anthropic_client=client))


def _compatible(model_name: str, access: ModelAccess) -> Model:
    from openai import AsyncOpenAI
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai_compatible import OpenAICompatibleProvider

    base_url = _need(
        access.compatible_base_url,
        "the base URL of the OpenAI-compatible server",
        flag="--base-url",
        env="BLITZ_BASE_URL",
    )
    client = AsyncOpenAI(
        # The SDK insists on a key; servers that need none ignore this placeholder.
        api_key=access.compatible_api_key or "api-key-not-set",
        base_url=base_url,
        max_retries=0,
    )
    profile = None if access.compatible_images else ModelProfile(supports_image_input=False)
    provider = OpenAICompatibleProvider(COMPATIBLE_PROVIDER, openai_client=client, profile=profile)
    return OpenAIChatModel(model_name, provider=provider)


def _name(model_name: str, provider: str) -> None:
    if not model_name:
        raise invalid_argument("model", f"name the {provider} model: {provider}:MODEL")
