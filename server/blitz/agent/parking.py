"""Parking and resuming a run: deferred tool calls to requests, and resolutions back.

A run that ends with pydantic-ai's `DeferredToolRequests` becomes `Parked` (`run_outcome`):
one `approval_request` or `question` event per open call (`park_requests`). A `delegate` call
deferred on a parked sub-agent contributes the sub-agent's requests instead, and its
`Delegation` is kept in the metadata of the parent's last model response (never sent to a
model), so the stored history alone is enough to resume (`keep_delegations`).

On resume, `route_results` checks the resolutions the core hands over against the parked
history — every open request resolved, each with its own kind of result — and splits them
between the run's own calls and each parked sub-agent (`<delegate id>/<sub id>`);
`deferred_results` turns them into pydantic-ai's `DeferredToolResults`. A call a pre_tool
hook rewrote before a person was asked keeps its rewritten arguments in the same metadata
until then, and runs with them once approved. This module only translates; it never runs
a tool or a model.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied

from blitz.agent.handoff import DELEGATE_TOOL, ID_SEPARATOR, Delegation
from blitz.agent.loop import RunResult
from blitz.agent.tools import QUESTION_TOOL
from blitz.errors import BlitzError, Reason, invalid_argument
from blitz.ports.agent import AnswerResult, ApprovalResult, Completed, Parked, Resolution
from blitz.v1 import turn_pb2

__all__ = [
    "Resumption",
    "all_call_ids",
    "current_results",
    "deferred_results",
    "keep_delegations",
    "load_history",
    "park_requests",
    "pending_calls",
    "route_results",
    "run_outcome",
    "take_delegations",
]

# Where a parked parent keeps its sub-agents' runs: its last response's metadata.
_DELEGATIONS_KEY = "blitz_delegations"
# Where a parked run keeps the arguments pre_tool hooks rewrote its asked calls to.
_REWRITES_KEY = "blitz_rewrites"
_COMMAND_TOOL = "run_command"


def load_history(data: bytes) -> list[ModelMessage]:
    """A session history as `start`/`resume` receive it (pydantic-ai's JSON messages)."""
    try:
        return ModelMessagesTypeAdapter.validate_json(data)
    except ValueError as exc:
        raise invalid_argument("history", "the stored message history is unreadable") from exc


def run_outcome(result: RunResult, display_names: Mapping[str, str]) -> Completed | Parked:
    """How a run ended, as plain data; a parked one keeps its parked sub-agents' runs."""
    output = result.output
    if not isinstance(output, DeferredToolRequests):
        return Completed(output=output, history=result.all_messages_json())
    requests, delegations = park_requests(output, display_names)
    messages = result.all_messages()
    if delegations:
        keep_delegations(messages, delegations)
    rewrites = {
        call.tool_call_id: output.metadata[call.tool_call_id]["rewritten"]
        for call in output.approvals
        if "rewritten" in output.metadata.get(call.tool_call_id, {})
    }
    if rewrites:
        # What a hook rewrote and a person is asked to approve: the call runs with it.
        _keep(messages, _REWRITES_KEY, rewrites)
    return Parked(history=ModelMessagesTypeAdapter.dump_json(messages), requests=requests)


def park_requests(
    requests: DeferredToolRequests, display_names: Mapping[str, str] | None = None
) -> tuple[list[turn_pb2.TurnEvent], dict[str, Delegation]]:
    """One event per open request, in call order, and the parked sub-agents by call id."""
    names = display_names or {}
    events: list[turn_pb2.TurnEvent] = []
    delegations: dict[str, Delegation] = {}
    for call in requests.approvals:
        meta = requests.metadata.get(call.tool_call_id, {})
        delegation = meta.get("delegation")
        if isinstance(delegation, Delegation):
            delegations[call.tool_call_id] = delegation
            events.extend(delegation.requests)
            continue
        events.append(
            turn_pb2.TurnEvent(
                approval_request=turn_pb2.ApprovalRequest(
                    request_id=call.tool_call_id,
                    tool=names.get(call.tool_name, call.tool_name),
                    kind=meta.get("kind", turn_pb2.ACTION_KIND_UNSPECIFIED),
                    detail=meta.get("detail") or call.args_as_json_str(),
                    diff=meta.get("diff", ""),
                    scope_label=meta.get("scope_label") or f"tool: {call.tool_name}",
                    task_id=meta.get("task_id", ""),
                )
            )
        )
        if meta.get("hook_edit"):
            # A pre_tool hook rewrote the action: the request shows its edit.
            json_format.ParseDict(meta["hook_edit"], events[-1].approval_request.hook_edit)
        # A pre_tool hook asked for a person: no rule approves it as it parks.
        events[-1].approval_request.asked_by_hook = meta.get("asked_by_hook", "")
    for call in requests.calls:
        meta = requests.metadata.get(call.tool_call_id, {})
        events.append(
            turn_pb2.TurnEvent(
                question=turn_pb2.Question(
                    request_id=call.tool_call_id,
                    question=meta.get("question") or call.args_as_json_str(),
                    options=meta.get("options", []),
                    multi_select=bool(meta.get("multi_select", False)),
                    task_id=meta.get("task_id", ""),
                )
            )
        )
        if meta.get("form"):
            events[-1].question.form.update(meta["form"])
    return events, delegations


def keep_delegations(messages: list[ModelMessage], delegations: Mapping[str, Delegation]) -> None:
    """Store parked sub-agents in the last model response (whose calls they answer)."""
    _keep(messages, _DELEGATIONS_KEY, {call_id: d.to_json() for call_id, d in delegations.items()})


def take_delegations(messages: list[ModelMessage]) -> dict[str, Delegation]:
    """Remove and return what `keep_delegations` stored: the session history keeps none."""
    stored = _take(messages, _DELEGATIONS_KEY)
    if not stored:
        return {}
    try:
        return {call_id: Delegation.from_json(data) for call_id, data in stored.items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise invalid_argument("history", "a parked sub-agent's state is unreadable") from exc


@dataclass
class Resumption:
    """The checked resolutions of one resume: the run's own, and each parked sub-agent's."""

    own: dict[str, Resolution] = field(default_factory=dict)
    # By delegate call id, then by the sub-agent's own call ids.
    delegated: dict[str, dict[str, Resolution]] = field(default_factory=dict)


def route_results(
    messages: list[ModelMessage],
    results: Mapping[str, Resolution],
    delegations: Mapping[str, Delegation],
) -> Resumption:
    """Check `results` against the parked run and split them by who asked (see module doc)."""
    open_calls = pending_calls(messages)
    parked = {call_id: d for call_id, d in delegations.items() if call_id in open_calls}
    own: dict[str, Resolution] = {}
    delegated: dict[str, dict[str, Resolution]] = {call_id: {} for call_id in parked}
    for request_id, resolution in results.items():
        owner = _owner(request_id, parked)
        if owner is None:
            own[request_id] = resolution
        else:
            delegated[owner][request_id[len(owner) + len(ID_SEPARATOR) :]] = resolution
    routed = Resumption(own=current_results(messages, own, delegated=parked))
    for call_id, sub_results in delegated.items():
        routed.delegated[call_id] = current_results(
            load_history(parked[call_id].history),
            sub_results,
            prefix=call_id + ID_SEPARATOR,
        )
    return routed


def current_results(
    messages: list[ModelMessage],
    results: Mapping[str, Resolution],
    *,
    delegated: Collection[str] = (),
    prefix: str = "",
) -> dict[str, Resolution]:
    """The results that resolve the parked response's open requests, checked.

    Results for requests an earlier park of the turn already settled are dropped (the core
    may hand over every resolution of the turn); ids never asked for are REQUEST_NOT_FOUND;
    an open request left unresolved, or resolved with the wrong kind of result, is
    INVALID_ARGUMENT on `results`. `delegated` are open `delegate` calls, which clients
    never see: their sub-agents' requests stand for them. `prefix` is how clients see this
    run's ids (a sub-agent's).
    """
    open_calls = {k: v for k, v in pending_calls(messages).items() if k not in delegated}
    current: dict[str, Resolution] = {}
    earlier: set[str] | None = None
    for request_id, resolution in results.items():
        tool = open_calls.get(request_id)
        if tool is None:
            if earlier is None:
                earlier = all_call_ids(messages)
            settled = request_id in earlier and request_id not in delegated
            if settled or _of_earlier_delegation(request_id, messages):
                continue
            raise BlitzError(
                Reason.REQUEST_NOT_FOUND,
                "no such request in this turn",
                {"request_id": prefix + request_id},
            )
        # A question's tool is ask_user; every other deferred call is an approval.
        if (tool == QUESTION_TOOL) != isinstance(resolution, AnswerResult):
            needs = "an answer" if tool == QUESTION_TOOL else "a decision"
            raise invalid_argument(
                "results",
                f"request {prefix}{request_id} needs {needs}",
                request_id=prefix + request_id,
            )
        current[request_id] = resolution
    for request_id in open_calls:
        if request_id not in current:
            raise invalid_argument(
                "results",
                f"request {prefix}{request_id} is not resolved",
                request_id=prefix + request_id,
            )
    return current


def deferred_results(
    results: Mapping[str, Resolution], messages: list[ModelMessage]
) -> tuple[DeferredToolResults, dict[str, dict[str, Any]]]:
    """pydantic-ai's results for these resolutions of the run parked in `messages`, and the
    arguments approvals replaced: a pre_tool hook's rewrite (taken from the history, which
    keeps it no longer), and a command the user wrote (or a hook's, which the core hands
    back as the resolution's command)."""
    deferred = DeferredToolResults()
    overrides: dict[str, dict[str, Any]] = {}
    rewrites: dict[str, dict[str, Any]] = _take(messages, _REWRITES_KEY) or {}
    calls = _open_calls(messages)
    for request_id, resolution in results.items():
        if isinstance(resolution, ApprovalResult):
            args = rewrites.get(request_id)
            call = calls.get(request_id)
            if not resolution.approved:
                deferred.approvals[request_id] = ToolDenied(
                    resolution.reason or "The user denied this action."
                )
                continue
            if resolution.command and call is not None and call.tool_name == _COMMAND_TOOL:
                # The core takes a command only on COMMAND approvals; the tool then runs
                # what the user wrote, with its other arguments as they were.
                args = {**(args or call.args_as_dict()), "command": resolution.command}
            if args is not None:
                overrides[request_id] = args
                deferred.approvals[request_id] = ToolApproved(override_args=args)
            else:
                deferred.approvals[request_id] = True
        elif isinstance(resolution, AnswerResult):
            deferred.calls[request_id] = answer_result(resolution)
    return deferred, overrides


def all_call_ids(messages: list[ModelMessage]) -> set[str]:
    return {
        part.tool_call_id
        for message in messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart)
    }


def pending_calls(messages: list[ModelMessage]) -> dict[str, str]:
    """The tool calls of the last model response that have no result yet: id -> tool name."""
    answered: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            return {
                part.tool_call_id: part.tool_name
                for part in message.parts
                if isinstance(part, ToolCallPart) and part.tool_call_id not in answered
            }
        # Results that came back in the same step as the park (tools that needed nobody).
        answered.update(p.tool_call_id for p in message.parts if isinstance(p, ToolReturnPart))
    return {}


def _owner(request_id: str, parked: Mapping[str, Delegation]) -> str | None:
    for call_id in parked:
        if request_id.startswith(call_id + ID_SEPARATOR):
            return call_id
    return None


def _of_earlier_delegation(request_id: str, messages: list[ModelMessage]) -> bool:
    """A sub-agent's request from a delegation that has since finished."""
    return any(
        request_id.startswith(part.tool_call_id + ID_SEPARATOR)
        for message in messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart) and part.tool_name == DELEGATE_TOOL
    )


def _open_calls(messages: list[ModelMessage]) -> dict[str, ToolCallPart]:
    """The parked response's tool calls, by id."""
    response = _last_response(messages)
    parts = response.parts if response is not None else []
    return {p.tool_call_id: p for p in parts if isinstance(p, ToolCallPart)}


def _keep(messages: list[ModelMessage], key: str, value: Any) -> None:
    """Keep `value` in the last model response's metadata (never sent to a model)."""
    response = _last_response(messages)
    if response is None:  # pragma: no cover - a deferred call comes from a response
        raise RuntimeError("parked without a model response")
    response.metadata = {**(response.metadata or {}), key: value}


def _take(messages: list[ModelMessage], key: str) -> Any:
    """Remove and return what `_keep` kept under `key` (None: nothing)."""
    response = _last_response(messages)
    if response is None or not response.metadata or key not in response.metadata:
        return None
    metadata = dict(response.metadata)
    value = metadata.pop(key)
    response.metadata = metadata or None
    return value


def _last_response(messages: list[ModelMessage]) -> ModelResponse | None:
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            return message
    return None


def answer_result(answer: AnswerResult) -> dict[str, Any]:
    """What the model is told of an answer: the answers, or a form's values, or why none."""
    if answer.declined:
        return {"declined": True, "note": "the user declined to fill in the form"}
    if answer.values is not None:
        return {"values": {name: _whole(value) for name, value in answer.values.items()}}
    if answer.answers:
        return {"answers": list(answer.answers)}
    return {"answers": [], "note": "no answer came in time"}


def _whole(value: Any) -> Any:
    """3.0 as 3: a form's values came through a Struct, whose numbers are all doubles, and
    a model reads 3.0 seats as something other than what the user typed."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_whole(item) for item in value]
    return value
