"""Slack's buttons: an interactivity request checked, its user mapped, its request answered.

A `slack` webhook's message of an approval or a question carries buttons whose `value` is
the same signed token as the link beside them (`offers.py`). Pressing one makes Slack POST
`payload=<JSON>` (form-encoded) to the app's interactivity URL, `POST /slack/actions`,
signed with the app's signing secret. `SlackActions` implements the Slack port
(`blitz.ports.SlackPort`):

1. The signature and its timestamp are checked by slack-sdk's `SignatureVerifier` (a
   request more than five minutes old is refused as a replay); nothing else is read of
   a request that fails, and it is answered 401.
2. Slack's user is mapped to a principal by the operator's `--slack-users`; a user not in
   it is told, privately (an ephemeral message), that it may not answer, and nothing is
   decided.
3. The token is checked and its request answered as that principal, who must own the
   session or be an admin (`LinkCore.resolve`, `via: "slack"`), through Decide's own path.
4. The message is updated through the `response_url` Slack sent (`replace_original`): its
   buttons and links go, and a line says who decided what; a refusal (expired, not
   valid, not allowed) goes to the user alone.

Slack wants its answer within 3 s, so step 4 is a task of this object's own, after the
answer. A `response_url` is posted to only when it is `https://hooks.slack.com/…`, or an
IP address in the operator's `--webhook-allow-private` ranges (a stand-in for Slack in
tests, or a relay of the operator's), and through `blitz.outbound`'s checks like every
request Blitz makes for someone else: a leaked signing secret cannot turn this into a way
to reach anything else.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

import structlog
from slack_sdk.signature import SignatureVerifier

from blitz.core.links.deciding import LinkCore
from blitz.core.supervisor import Supervisor
from blitz.core.webhooks.payloads import mrkdwn_escaped
from blitz.core.webhooks.sending import Sender
from blitz.outbound import AddressPolicy
from blitz.ports import LinkState, LinkView, SlackAnswer

__all__ = ["ACTION_PREFIX", "SLACK_HOOKS", "SlackActions"]

log = structlog.get_logger(__name__)

# The action_id of every button Blitz puts in a message starts so; its block_ids too.
ACTION_PREFIX = "blitz_"
# Where Slack's response URLs are.
SLACK_HOOKS = "hooks.slack.com"
# Fields of the form, and bytes of the JSON payload, looked at.
_FIELDS_MAX = 16
_PAYLOAD_MAX = 256 * 1024
_MARKS = {
    LinkState.DONE: ":white_check_mark:",
    LinkState.ANSWERED: ":information_source:",
}


class SlackActions:
    """`async with SlackActions(...)`: Slack's interactivity requests (see the module doc)."""

    def __init__(
        self,
        *,
        links: LinkCore,
        signing_secret: str,
        users: Mapping[str, str],
        is_admin: Callable[[str], Awaitable[bool]],
        policy: AddressPolicy,
        timeout: float = 10.0,
    ) -> None:
        """`signing_secret`: the Slack app's ("" takes no request); `users`: Slack user id
        → principal; `is_admin`: whether a principal is an admin; `policy`: the internal
        ranges a response URL other than Slack's may be in."""
        self._links = links
        self._verifier = SignatureVerifier(signing_secret) if signing_secret else None
        self._users = dict(users)
        self._is_admin = is_admin
        self._policy = policy
        self._sender = Sender(policy=policy, timeout=timeout)
        self._tasks = Supervisor("slack-responses")

    async def __aenter__(self) -> SlackActions:
        await self._sender.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self._tasks.aclose()
        finally:
            await self._sender.__aexit__(None, None, None)

    async def slack_action(self, body: bytes, headers: Mapping[str, str]) -> SlackAnswer:
        if self._verifier is None:
            return SlackAnswer(404, "Slack actions are not configured (--slack-signing-secret)")
        if not self._signed(self._verifier, body, headers):
            log.warning("slack_action_refused", why="signature")
            return SlackAnswer(401, "the request's signature does not check")
        payload = _payload(body)
        if payload is None:
            return SlackAnswer(400, "not a Slack interactivity payload")
        action = _our_action(payload)
        if action is None:
            return SlackAnswer(200)  # another app's action, or one of no interest: seen
        response_url = payload.get("response_url")
        response_url = response_url if isinstance(response_url, str) else ""
        user = payload.get("user")
        user_id = user.get("id") if isinstance(user, dict) else None
        principal = self._users.get(user_id) if isinstance(user_id, str) else None
        if principal is None:
            log.warning("slack_action_refused", why="unmapped user", slack_user=str(user_id))
            self._respond(
                response_url,
                _ephemeral(
                    ":no_entry: You are not allowed to answer Blitz's requests: your Slack"
                    " user is not mapped to a principal on this server."
                ),
            )
            return SlackAnswer(200, "not allowed")
        admin = await self._is_admin(principal) if principal else False
        view = await self._links.resolve(action, via="slack", principal=principal, admin=admin)
        log.info("slack_action", state=view.state.value, slack_user=user_id, principal=principal)
        if view.state in _MARKS:
            self._respond(response_url, _updated(view, payload.get("message")))
        else:
            self._respond(response_url, _ephemeral(f":warning: {mrkdwn_escaped(view.message)}"))
        return SlackAnswer(200, view.state.value)

    @staticmethod
    def _signed(verifier: SignatureVerifier, body: bytes, headers: Mapping[str, str]) -> bool:
        try:
            return verifier.is_valid_request(body, headers)
        except (ValueError, UnicodeDecodeError):  # a timestamp that is no number, a body
            return False  # that is no text: not Slack's

    def _respond(self, url: str, message: dict[str, Any]) -> None:
        """Post `message` to Slack's `url`, after the answer (see the module doc)."""
        if not self._may_post(url):
            log.warning("slack_response_refused", why="not a Slack response URL")
            return
        body = json.dumps(message, ensure_ascii=False).encode()
        self._tasks.spawn(self._post(url, body), name="slack-response")

    async def _post(self, url: str, body: bytes) -> None:
        answer = await self._sender.post(url, body, {})
        if answer.error or not 200 <= answer.status < 300:
            log.warning("slack_response_failed", status=answer.status, error=answer.error)

    def _may_post(self, url: str) -> bool:
        try:
            parts = urlsplit(url)
            host, port = parts.hostname or "", parts.port
        except ValueError:
            return False
        if parts.scheme == "https" and host == SLACK_HOOKS and port in (None, 443):
            return True
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        return self._policy.allows(str(address))


def _payload(body: bytes) -> dict[str, Any] | None:
    """The JSON of a signed request's `payload` field; None when there is none."""
    try:
        form = parse_qs(body.decode(), max_num_fields=_FIELDS_MAX)
        texts = form.get("payload", [])
        if len(texts) != 1 or len(texts[0]) > _PAYLOAD_MAX:
            return None
        payload = json.loads(texts[0])
    except ValueError:  # UnicodeDecodeError and JSONDecodeError among them
        return None
    return payload if isinstance(payload, dict) else None


def _our_action(payload: dict[str, Any]) -> str | None:
    """The token of the first of Blitz's buttons in a `block_actions` payload."""
    if payload.get("type") != "block_actions" or not isinstance(payload.get("actions"), list):
        return None
    for action in payload["actions"]:
        if not isinstance(action, dict):
            continue
        action_id, value = action.get("action_id"), action.get("value")
        if isinstance(action_id, str) and action_id.startswith(ACTION_PREFIX):
            return value if isinstance(value, str) else None
    return None


def _ephemeral(text: str) -> dict[str, Any]:
    """A message only the user who pressed sees; the original stays as it is."""
    return {"response_type": "ephemeral", "replace_original": False, "text": text}


def _updated(view: LinkView, original: object) -> dict[str, Any]:
    """The original message without its buttons and links, and a line of what happened."""
    blocks: list[Any] = []
    if isinstance(original, dict) and isinstance(original.get("blocks"), list):
        blocks = [
            block
            for block in original["blocks"]
            if not (
                isinstance(block, dict) and str(block.get("block_id", "")).startswith(ACTION_PREFIX)
            )
        ]
    line = f"{_MARKS[view.state]} *{mrkdwn_escaped(view.message)}*"
    blocks.append(
        {
            "type": "section",
            "block_id": ACTION_PREFIX + "outcome",
            "text": {"type": "mrkdwn", "text": line},
        }
    )
    return {"replace_original": True, "text": mrkdwn_escaped(view.message), "blocks": blocks}
