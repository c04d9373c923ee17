"""An HTTP hook's one request: the event's JSON POSTed to its URL, signed as a webhook's
delivery is, and its answer read within bounds.

The URL passes the address checks of every request Blitz makes for someone else
(`blitz.outbound`, with the webhooks' policy: `--webhook-allow-private` ranges, plain http
only to them, cloud metadata never); no redirect is followed, no proxy of the environment
used. The body is signed with the hook's secret by the Standard Webhooks headers
(`webhook-id`, `webhook-timestamp`, `webhook-signature`), so a receiver verifies it with
the same library as a webhook's. At most `ANSWER_MAX` bytes of the answer are read; a
longer one is garbage. The caller bounds the whole in time.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

import httpx2

from blitz.core.hooks.answers import Failed
from blitz.core.webhooks.sending import refusal, target_problem
from blitz.core.webhooks.signing import signed_headers
from blitz.outbound import AddressPolicy, Refused, request_to, resolve

__all__ = ["ANSWER_MAX", "HttpAnswer", "HttpHooks"]

# The most of an HTTP hook's answer that is read (bytes).
ANSWER_MAX = 256 * 1024
_USER_AGENT = "Blitz-Hooks/1"


@dataclass(frozen=True)
class HttpAnswer:
    status: int
    body: str


class HttpHooks:
    """`async with HttpHooks(policy=...)`: POSTs hooks' JSON, one client for all."""

    def __init__(self, *, policy: AddressPolicy) -> None:
        self._policy = policy
        self._client = httpx2.AsyncClient(
            timeout=httpx2.Timeout(None),
            follow_redirects=False,
            trust_env=False,
            limits=httpx2.Limits(max_connections=64, max_keepalive_connections=16),
        )

    async def __aenter__(self) -> HttpHooks:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._client.aclose()

    async def post(self, url: str, body: bytes, *, secret: str) -> HttpAnswer:
        """POST `body` to `url` signed with `secret`; Failed when no answer came (a
        refused address, a failed connection), the answer is a redirect or past its
        bound. The caller's timeout bounds it."""
        try:
            resolved = await resolve(url, self._policy)
        except Refused as exc:
            raise Failed(refusal(exc, who="hooks")) from None
        if problem := target_problem(resolved, self._policy):
            raise Failed(problem)
        message_id = "msg_" + uuid.uuid4().hex
        headers = signed_headers(message_id, body, secrets=[secret], now=time.time())
        request = request_to(
            self._client,
            resolved,
            "POST",
            headers={
                **headers,
                "Content-Type": "application/json",
                "Accept": "application/json",
                "User-Agent": _USER_AGENT,
                "Accept-Encoding": "identity",
            },
            content=body,
        )
        try:
            response = await self._client.send(request, stream=True)
            try:
                kept = b""
                async for chunk in response.aiter_raw():
                    kept += chunk
                    if len(kept) > ANSWER_MAX:
                        raise Failed(f"its answer is longer than {ANSWER_MAX // 1024} KiB")
            finally:
                await response.aclose()
        except httpx2.RequestError as exc:
            raise Failed(f"the request failed ({type(exc).__name__})") from None
        if response.is_redirect:
            raise Failed("it answered with a redirect, which hooks do not follow")
        return HttpAnswer(response.status_code, kept.decode("utf-8", "replace"))
