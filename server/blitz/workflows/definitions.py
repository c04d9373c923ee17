"""What a workflow file may say: the pydantic models, declared once.

The YAML loader (`loading.py`) validates a file against `Workflow`; docs/workflows.md
publishes `Workflow.model_json_schema()` so that editors can check files too. Every model
forbids unknown fields, so a misspelt key is an error, not a silently ignored line. This
module knows nothing of the core, the agent or the store.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    model_validator,
)

__all__ = [
    "MAX_STEPS",
    "STEP_TYPES",
    "ApprovalStep",
    "CommandStep",
    "Limits",
    "Param",
    "PromptStep",
    "Retry",
    "Step",
    "SubWorkflowStep",
    "Until",
    "Workflow",
    "parse_duration",
]

MAX_STEPS = 200
STEP_TYPES = ("prompt", "command", "approval", "workflow")

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_SCALE = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(value: Any) -> Any:
    """Seconds from `90`, `1.5`, `"30s"`, `"5m"`, `"1h"` or `"250ms"`; anything else is left
    for pydantic to refuse."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        found = _DURATION.match(value)
        if found:
            return float(found.group(1)) * _SCALE[found.group(2)]
    return value


# Seconds, written as a number or with a unit.
Duration = Annotated[
    float,
    BeforeValidator(parse_duration),
    Field(ge=0, le=7 * 24 * 3600),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "number", "minimum": 0},
                {"type": "string", "pattern": _DURATION.pattern},
            ],
            "description": "seconds, or with a unit: 250ms, 30s, 5m, 1h",
        }
    ),
]
StepId = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")]
WorkflowName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class Param(_Model):
    """One parameter: its type, whether it must be given, and its default."""

    type: Literal["string", "int", "bool", "enum"] = "string"
    required: bool = False
    default: str | int | bool | None = None
    description: str = ""
    # An enum's allowed values.
    values: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _enum_has_values(self) -> Param:
        if self.type == "enum" and not self.values:
            raise ValueError("an enum parameter needs `values`")
        if self.type != "enum" and self.values:
            raise ValueError("only an enum parameter takes `values`")
        return self


class Limits(_Model):
    """Bounds of the whole run, every step's work included."""

    max_cost_usd: float | None = Field(default=None, gt=0)
    timeout: Duration | None = None
    max_turns: int | None = Field(default=None, ge=1, le=10_000)


class Retry(_Model):
    """How often a failed step is tried again, how long between tries (`backoff`, doubled
    each time, at most `max_interval`), and for which error reasons (empty: any reason;
    `SERVER_RESTARTED` covers a crash mid-step)."""

    max_attempts: int = Field(default=1, ge=1, le=20)
    backoff: Duration = 0.0
    max_interval: Duration = 300.0
    on: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _interval_holds_backoff(self) -> Retry:
        if "max_interval" in self.model_fields_set and self.max_interval < self.backoff:
            raise ValueError("`max_interval` is shorter than `backoff`")
        return self

    def wait(self, retry: int) -> float:
        """Seconds before the `retry`th retry (1 for the first): `backoff` doubled each
        time, capped at `max_interval` (a `backoff` above the default cap is its own)."""
        return min(self.backoff * 2.0 ** (retry - 1), max(self.max_interval, self.backoff))


class Until(_Model):
    """A check command run after the step: the step is repeated until it passes."""

    run: str = Field(min_length=1)
    max_attempts: int = Field(default=3, ge=1, le=50)
    backoff: Duration = 0.0


class _Step(_Model):
    id: StepId
    title: str = ""
    # A template expression (`params.fast and steps.plan.status == 'succeeded'`): the step
    # is skipped when it is false.
    if_: str | None = Field(default=None, alias="if")
    retry: Retry = Field(default_factory=Retry)
    timeout: Duration | None = None


class PromptStep(_Step):
    """One agent turn's worth of work from a templated prompt."""

    type: Literal["prompt"]
    prompt: str = Field(min_length=1)
    plan: bool = False
    read_only: bool = False
    model: str | None = None


class CommandStep(_Step):
    """A shell command, behind the usual COMMAND approval and rules."""

    type: Literal["command"]
    run: str = Field(min_length=1)
    expect: Literal["success", "failure"] = "success"
    until: Until | None = None


class ApprovalStep(_Step):
    """A gate: a question to the user with `options`, or accept/reject of the plan step
    named by `of` (a rejection's feedback sends the run back to that step)."""

    type: Literal["approval"]
    question: str | None = None
    options: list[str] = Field(default_factory=list)
    of: StepId | None = None

    @model_validator(mode="after")
    def _question_or_plan(self) -> ApprovalStep:
        if (self.question is None) == (self.of is None):
            raise ValueError("an approval step takes either `question` or `of`")
        if self.of is not None and self.options:
            raise ValueError("`options` go with `question`, not with `of`")
        return self


class SubWorkflowStep(_Step):
    """Another workflow, run with its own params."""

    type: Literal["workflow"]
    workflow: WorkflowName
    params: dict[str, str | int | bool] = Field(default_factory=dict)


Step = Annotated[
    PromptStep | CommandStep | ApprovalStep | SubWorkflowStep, Field(discriminator="type")
]


class Workflow(_Model):
    """A workflow file: `.blitz/workflows/NAME.yaml`, or in the server's --workflows-dir."""

    workflow: WorkflowName
    version: str = Field(default="1", min_length=1, max_length=64)
    title: str = ""
    description: str = ""
    params: dict[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")], Param] = Field(
        default_factory=dict
    )
    limits: Limits = Field(default_factory=Limits)
    steps: list[Step] = Field(min_length=1, max_length=MAX_STEPS)

    @property
    def label(self) -> str:
        """`name@version`, as FlowStep.workflow has it."""
        return f"{self.workflow}@{self.version}"
