"""One attempt of a delivery: a POST to the webhook's URL, bounded, and what came of it.

The URL goes through the address checks every outbound request of Blitz passes
(`blitz.outbound`): resolved now, each address checked against the operator's ranges
(`--webhook-allow-private`), cloud metadata never, and the request sent to the address
that was checked. Plain `http` only reaches an address in those ranges; anything else
needs `https`, its certificate checked against the host's name. No redirect is followed,
no proxy of the environment used, no cookie kept.

An attempt cannot hold a worker: it has `--webhook-timeout` in all, connection, request
and answer together, and reads at most `ANSWER_KEPT` bytes of the answer, which it keeps
(as text) for ListDeliveries; the rest is never read. Whatever goes wrong becomes an
`Answer` in our words; nothing here raises but cancellation.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import Mapping
from dataclasses import dataclass

import httpx2

from blitz.outbound import AddressPolicy, Refused, ResolvedUrl, request_to, resolve

__all__ = ["ANSWER_KEPT", "Answer", "Sender", "refusal", "target_problem"]

# Bytes of a receiver's answer kept.
ANSWER_KEPT = 1024
_USER_AGENT = "Blitz-Webhooks/1"


@dataclass(frozen=True)
class Answer:
    """What one attempt got: the status (0: none came), seconds to the answer's headers or
    the failure, why it failed in our words, the answer's first bytes, and the receiver's
    Retry-After in seconds (None: none)."""

    status: int
    latency: float
    error: str = ""
    response: str = ""
    retry_after: float | None = None


def target_problem(resolved: ResolvedUrl, policy: AddressPolicy) -> str:
    """Why Blitz will not POST to a checked address ("" when it will): plain http only to
    an address the operator allows."""
    if not resolved.is_https and not policy.allows(resolved.resolved_ip):
        return "plain http only reaches addresses the operator allows; use https"
    return ""


def refusal(exc: Refused, *, who: str = "webhooks") -> str:
    """A refused address, in our words (`who`: what does not reach it)."""
    if exc.kind == "metadata":
        return f"{exc.host} is a cloud metadata address, which {who} never reach"
    if exc.kind == "private":
        return (
            f"{exc.host} resolves to an internal address ({exc.detail}), which {who} reach"
            " only where the operator allows it (--webhook-allow-private)"
        )
    if exc.kind == "unresolved":
        return f"the host {exc.host} could not be resolved"
    return "the URL's host or port cannot be used"


class Sender:
    """`async with Sender(policy=..., timeout=...)`: POSTs deliveries, one client for all."""

    def __init__(self, *, policy: AddressPolicy, timeout: float) -> None:
        self._policy = policy
        self._timeout = timeout
        self._client = httpx2.AsyncClient(
            timeout=httpx2.Timeout(timeout),
            follow_redirects=False,
            trust_env=False,
            limits=httpx2.Limits(max_connections=256, max_keepalive_connections=64),
        )

    async def __aenter__(self) -> Sender:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._client.aclose()

    async def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> Answer:
        """One POST of `body` to `url` with `headers` (the signature's among them)."""
        started = time.monotonic()

        def failed(error: str) -> Answer:
            return Answer(0, time.monotonic() - started, error)

        try:
            async with asyncio.timeout(self._timeout):
                resolved = await resolve(url, self._policy)
                if problem := target_problem(resolved, self._policy):
                    return failed(problem)
                request = request_to(
                    self._client,
                    resolved,
                    "POST",
                    headers={
                        **headers,
                        "Content-Type": "application/json",
                        "User-Agent": _USER_AGENT,
                        "Accept-Encoding": "identity",
                    },
                    content=body,
                )
                response = await self._client.send(request, stream=True)
                latency = time.monotonic() - started
                try:
                    first = await _first_bytes(response)
                finally:
                    await response.aclose()
        except Refused as exc:
            return failed(refusal(exc))
        except TimeoutError:
            return failed(f"no answer within {self._timeout:g} s")
        except httpx2.RequestError as exc:
            return failed(f"the request failed ({type(exc).__name__})")
        status = response.status_code
        error = ""
        if response.is_redirect:
            error = "a redirect, which webhooks do not follow: give the URL it leads to"
        return Answer(
            status,
            latency,
            error,
            first.decode("utf-8", "replace"),
            _retry_after(response.headers.get("retry-after")),
        )


async def _first_bytes(response: httpx2.Response) -> bytes:
    """At most `ANSWER_KEPT` bytes of the answer; the rest is left unread."""
    kept = b""
    async for chunk in response.aiter_raw():
        kept += chunk
        if len(kept) >= ANSWER_KEPT:
            break
    return kept[:ANSWER_KEPT]


def _retry_after(value: str | None) -> float | None:
    """Retry-After in seconds from now: a number, or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
