"""Taking part in a session's turns from the asyncio client: answering its approval
requests and questions, cancelling or steering the running turn, and reading the
session's commands, usage and rules. `AsyncBlitz` is made of these and its other calls
(`_calls.py`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from blitz.v1 import session_pb2, turn_pb2
from blitz_client._calls import Calls
from blitz_client._requests import DecisionLike, decision_value

__all__ = ["InteractionCalls"]


class InteractionCalls(Calls):
    """The calls of `AsyncBlitz` that answer, cancel and steer turns, and read rules."""

    async def decide(
        self,
        session_id: str,
        request_id: str,
        decision: DecisionLike,
        *,
        reason: str = "",
        command: str = "",
        interrupt: bool = False,
        rule: turn_pb2.RuleMatch | None = None,
    ) -> None:
        """Answer an approval request: "once", "session", "always" or "deny".

        `reason` goes to the model on a deny; `command` replaces a COMMAND's command;
        `interrupt` (with "deny" only) also stops the turn, which ends CANCELLED; `rule`
        (with "session" or "always") is the rule to make instead of the exact scope_label,
        the request's `suggested_rule` say.
        """
        request = session_pb2.DecideRequest(
            session_id=session_id,
            request_id=request_id,
            decision=decision_value(decision),  # type: ignore[arg-type]  # a valid enum int
            reason=reason,
            command=command,
            interrupt=interrupt,
        )
        if rule is not None:
            request.rule.CopyFrom(rule)
        await self._unary("Decide", request)

    async def answer(
        self,
        session_id: str,
        request_id: str,
        answers: str | Sequence[str] = (),
        *,
        values: Mapping[str, Any] | None = None,
        decline: bool = False,
    ) -> None:
        """Answer a question: one answer, or several where it is multi-select; a question
        with a `form` takes `values` (an object its schema validates) or `decline`."""
        chosen = [answers] if isinstance(answers, str) else list(answers)
        request = session_pb2.AnswerRequest(
            session_id=session_id, request_id=request_id, answers=chosen, decline=decline
        )
        if values is not None:
            request.values.update(values)
        await self._unary("Answer", request)

    async def commands(self, session_id: str = "") -> list[session_pb2.SlashCommand]:
        """The server commands (`Turn.command`) offered, with the session's own when given."""
        response: session_pb2.ListCommandsResponse = await self._unary(
            "ListCommands", session_pb2.ListCommandsRequest(session_id=session_id)
        )
        return list(response.commands)

    async def cancel(self, session_id: str, turn_id: str = "") -> str:
        """Cancel the running turn (only if it is `turn_id`, when given); returns its id."""
        request = session_pb2.CancelRequest(session_id=session_id, turn_id=turn_id)
        response: session_pb2.CancelResponse = await self._unary("Cancel", request)
        return response.turn_id

    async def steer(self, session_id: str, text: str, *, expected_turn_id: str = "") -> str:
        """Queue `text` for the running turn's next model call; returns the turn's id.
        With `expected_turn_id`, only if that is the session's turn (else TURN_MISMATCH)."""
        request = session_pb2.SteerRequest(
            session_id=session_id, text=text, expected_turn_id=expected_turn_id
        )
        response: session_pb2.SteerResponse = await self._unary("Steer", request)
        return response.turn_id

    async def usage(self, session_id: str) -> session_pb2.UsageReport:
        """The session's ledger: `total` and one entry per model call."""
        request = session_pb2.GetUsageRequest(session_id=session_id)
        result: session_pb2.UsageReport = await self._unary("GetUsage", request)
        return result

    async def rules(self, session_id: str) -> list[session_pb2.Rule]:
        """The approval rules that apply in the session (SESSION and ALWAYS)."""
        request = session_pb2.ListRulesRequest(session_id=session_id)
        response: session_pb2.ListRulesResponse = await self._unary("ListRules", request)
        return list(response.rules)

    async def revoke_rule(self, session_id: str, rule_id: str) -> None:
        """Remove a rule; the actions it covered ask for approval again."""
        request = session_pb2.RevokeRuleRequest(session_id=session_id, rule_id=rule_id)
        await self._unary("RevokeRule", request)
