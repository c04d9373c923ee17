"""Model names to pydantic-ai models: `demo` built in, anything else through pydantic-ai.

`validate_model` is what the core calls when a session names a model; `resolve_model` is
what a run uses. A name that cannot be served is `INVALID_ARGUMENT` on field `model`; the
library's own exception never leaves this module.
"""

from __future__ import annotations

from pydantic_ai.exceptions import UserError
from pydantic_ai.models import Model, infer_model

from blitz.agent.demo import DEMO_MODEL_NAME, DemoModel
from blitz.errors import invalid_argument

__all__ = ["is_free", "resolve_model", "validate_model"]

# The demo model holds no state between requests, so one instance serves every run.
_DEMO = DemoModel()


def resolve_model(name: str) -> Model:
    """The model `name` stands for: `demo`, or a pydantic-ai name such as `openai:gpt-4o`."""
    if name == DEMO_MODEL_NAME:
        return _DEMO
    if not name or name != name.strip():
        raise invalid_argument("model", f"invalid model name {name!r}")
    try:
        return infer_model(name)
    except (UserError, ImportError, ValueError) as exc:
        # Unknown names, providers whose package is not installed, missing credentials.
        raise invalid_argument("model", f"model {name!r} is not available: {exc}") from exc


def validate_model(name: str) -> None:
    """Raise `BlitzError(INVALID_ARGUMENT, field=model)` unless `name` can be served."""
    resolve_model(name)


def is_free(model: Model) -> bool:
    """Whether the model's calls are known to cost nothing (priced, at zero)."""
    return isinstance(model, DemoModel)
