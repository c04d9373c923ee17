"""DNS rebinding: the HTTP port answers only the host names it serves and the pages it allows.

A page whose name is rebound to 127.0.0.1 calls the port as its own origin, so CORS never
applies. Each test sends what such a page's browser sends (its Host, its Origin, its
Sec-Fetch-Site) on the four shapes of call a page can make (Connect and gRPC-Web, unary
and streaming) and on the console's page, and checks that nothing reached a handler; the
same calls from the port's own origin, an allowed `--cors-origin` or an `--allowed-host`
go through.
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.rpc import status_pb2
from support.fake_core import FakeCore
from support.servers import make_settings

from blitz.config import Settings, SettingsError, load_settings
from blitz.server import RunningServer, running_server
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

SESSIONS = "/blitz.v1.SessionService/"
SHAPES = ("connect unary", "connect stream", "grpc-web unary", "grpc-web stream")
# gRPC's numbers for the codes these tests meet.
GRPC_CODES = {0: "ok", 3: "invalid_argument", 7: "permission_denied", 16: "unauthenticated"}
ATTACKER = "rebind.attacker.example"
TOKEN = "a-token-of-alice"
# What each kind of refusal is: HTTP status, code, ErrorInfo reason.
FOREIGN_HOST = (400, "invalid_argument", "INVALID_ARGUMENT")
FOREIGN_ORIGIN = (403, "permission_denied", "PERMISSION_DENIED")
OK = (200, "ok", "")


def rebound(port: int) -> dict[str, str]:
    """A page on the attacker's name, rebound to 127.0.0.1: same origin as far as it knows."""
    return {"host": f"{ATTACKER}:{port}", "origin": f"http://{ATTACKER}:{port}"}


def foreign_origin(port: int) -> dict[str, str]:
    """A page elsewhere calling the port by its own name (CSRF, or rebinding behind a proxy)."""
    return {"host": f"127.0.0.1:{port}", "origin": "http://attacker.example"}


def null_origin(port: int) -> dict[str, str]:
    """A sandboxed frame, a file:// page, or a redirect across origins."""
    return {"host": f"127.0.0.1:{port}", "origin": "null"}


def cross_site(port: int) -> dict[str, str]:
    """A browser's request that names no origin but says it comes from another site."""
    return {
        "host": f"localhost:{port}",
        "sec-fetch-site": "cross-site",
        "sec-fetch-mode": "no-cors",
    }


ATTACKS = {
    "foreign host": (rebound, FOREIGN_HOST),
    "foreign origin": (foreign_origin, FOREIGN_ORIGIN),
    "null origin": (null_origin, FOREIGN_ORIGIN),
    "cross-site": (cross_site, FOREIGN_ORIGIN),
}


def envelope(message: bytes) -> bytes:
    return struct.pack(">BI", 0, len(message)) + message


def frames(body: bytes) -> list[tuple[int, bytes]]:
    found = []
    while body:
        flags, size = struct.unpack(">BI", body[:5])
        found.append((flags, body[5 : 5 + size]))
        body = body[5 + size :]
    return found


def reason_of_details(raw: str) -> str:
    status = status_pb2.Status.FromString(base64.b64decode(raw + "=" * (-len(raw) % 4)))
    info = t.ErrorInfo()
    status.details[0].Unpack(info)
    return info.reason


def reason_of_json(error: dict[str, Any]) -> str:
    [detail] = error["details"]
    return str(detail["debug"]["reason"])


@dataclass
class Page:
    """A browser page's calls to the port: `headers` on each, plus those of the call."""

    http: httpx.AsyncClient
    headers: dict[str, str]

    async def call(
        self, shape: str, *, session_id: str = "s-1", text: str = "hi"
    ) -> tuple[int, str, str]:
        """(HTTP status, code, ErrorInfo reason) of one call of `shape`; CreateSession for a
        unary one, RunTurn for a stream."""
        web = shape.startswith("grpc-web")
        if shape.endswith("unary"):
            method, request = "CreateSession", s.CreateSessionRequest(title="rebound")
        else:
            turn = t.Turn(text=text, mode=t.SESSION_MODE_BYPASS)
            method, request = "RunTurn", s.RunTurnRequest(session_id=session_id, turn=turn)
        headers = dict(self.headers)
        if web:
            headers.update({"content-type": "application/grpc-web+proto", "x-grpc-web": "1"})
            content = envelope(request.SerializeToString())
        elif shape.endswith("unary"):
            headers["content-type"] = "application/proto"
            content = request.SerializeToString()
        else:
            headers["content-type"] = "application/connect+proto"
            content = envelope(request.SerializeToString())
        answer = await self.http.post(SESSIONS + method, content=content, headers=headers)
        return outcome(shape, answer)

    async def get(self, path: str) -> httpx.Response:
        return await self.http.get(path, headers=self.headers)


def outcome(shape: str, answer: httpx.Response) -> tuple[int, str, str]:
    if shape.startswith("grpc-web"):
        trailers = dict(answer.headers)
        for flags, data in frames(answer.content):
            if flags & 0x80:
                for line in data.decode().strip().split("\r\n"):
                    name, _, value = line.partition(": ")
                    trailers[name] = value
        code = GRPC_CODES[int(trailers["grpc-status"])]
        raw = trailers.get("grpc-status-details-bin")
        return answer.status_code, code, reason_of_details(raw) if raw else ""
    if answer.status_code != 200 or shape.endswith("unary"):
        if answer.status_code == 200:
            return OK
        error = answer.json()
        return answer.status_code, error["code"], reason_of_json(error)
    end = json.loads(frames(answer.content)[-1][1])
    if "error" in end:
        return answer.status_code, end["error"]["code"], reason_of_json(end["error"])
    return OK


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """The FakeCore server's: what an operator allows beside the defaults (none of it the
    attacker's)."""
    return make_settings(
        tmp_path,
        allowed_host=("*.blitz.test", "exact.example"),
        cors_origin=("http://dashboard.test:5173",),
        public_url="https://blitz.example.com/console",
    )


@pytest.fixture
async def page(server: RunningServer) -> AsyncIterator[Page]:
    """A page's client of the FakeCore server; `page.headers` says who it is."""
    async with httpx.AsyncClient(base_url=server.http_url) as http:
        yield Page(http, {})


# A rebound page, with tokens required and without, on a real server.


@pytest.fixture(params=[False, True], ids=["no tokens", "tokens required"])
def real_settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    tokens = f"alice:{TOKEN}" if request.param else ""
    return make_settings(tmp_path / "data", tokens=tokens, allow_bypass_mode=True)


@pytest.fixture
async def real(real_settings: Settings) -> AsyncIterator[tuple[RunningServer, Page]]:
    """A real server (the demo model runs `$ …` lines as commands) and its own page, whose
    calls carry the token when one is required."""
    auth = {"authorization": f"Bearer {TOKEN}"} if real_settings.tokens else {}
    async with running_server(real_settings) as server:
        async with httpx.AsyncClient(base_url=server.http_url, timeout=30) as http:
            yield server, Page(http, auth)


async def a_session(own: Page) -> str:
    answer = await own.http.post(
        SESSIONS + "CreateSession",
        json={"title": "mine", "workspace": "mine", "mode": "SESSION_MODE_BYPASS"},
        headers=own.headers,
    )
    assert answer.status_code == 200, answer.text
    return str(answer.json()["id"])


async def titles(own: Page) -> list[str]:
    answer = await own.http.post(SESSIONS + "ListSessions", json={}, headers=own.headers)
    return [session["title"] for session in answer.json().get("sessions", [])]


@pytest.mark.parametrize("attack", ATTACKS)
async def test_a_rebound_page_is_refused_on_every_call_and_no_command_runs(real, attack):
    """The token does not matter: a page that has one (the console's, say) is refused too."""
    server, own = real
    session_id = await a_session(own)
    headers, refusal = ATTACKS[attack]
    attacker = Page(own.http, {**own.headers, **headers(server.http_port)})

    for shape in SHAPES:
        seen = await attacker.call(shape, session_id=session_id, text="$ touch proof")
        assert seen == refusal, shape

    assert await titles(own) == ["mine"], "no session was created"
    assert not list(server.settings.workspace_root.rglob("proof")), "no command ran"


async def test_the_same_turn_from_the_ports_own_page_runs_its_command(real):
    """What the test above would have seen, had a refusal let the command through."""
    server, own = real
    session_id = await a_session(own)
    own.headers.update({"origin": server.http_url, "sec-fetch-site": "same-origin"})

    assert await own.call("connect stream", session_id=session_id, text="$ touch proof") == OK
    assert [p.name for p in server.settings.workspace_root.rglob("proof")] == ["proof"]


# The same on a FakeCore server, which records every call that reaches it.


@pytest.mark.parametrize("attack", ATTACKS)
async def test_no_refused_call_reaches_a_handler(server, page, core: FakeCore, attack):
    headers, refusal = ATTACKS[attack]
    page.headers = headers(server.http_port)
    for shape in SHAPES:
        assert await page.call(shape) == refusal, shape
    assert core.contexts == []


async def test_a_refusal_says_what_would_let_it_through(server, page):
    page.headers = {"host": f"{ATTACKER}:{server.http_port}"}
    answer = await page.http.post(SESSIONS + "ListSessions", json={}, headers=page.headers)
    error = answer.json()
    assert error["details"][0]["debug"]["metadata"] == {"field": "host"}
    assert "--allowed-host" in error["message"]

    page.headers = foreign_origin(server.http_port)
    answer = await page.http.post(SESSIONS + "ListSessions", json={}, headers=page.headers)
    error = answer.json()
    assert error["details"][0]["debug"]["metadata"] == {"origin": "http://attacker.example"}
    assert "--cors-origin" in error["message"]


@pytest.mark.parametrize("attack", ATTACKS)
async def test_the_console_page_is_refused_to_a_rebound_page(server, page, attack):
    headers, (status, _, _) = ATTACKS[attack]
    page.headers = headers(server.http_port)
    for path in ("/", "/healthz"):
        answer = await page.get(path)
        assert answer.status_code == status, path
        assert answer.headers["content-type"] == "text/plain; charset=utf-8"
        assert "<" not in answer.text


async def test_a_link_followed_from_another_site_opens_the_console(server, page):
    """A webhook's link in a chat is a cross-site navigation: the page holds no data, its
    own calls are same-origin, and it cannot be framed."""
    page.headers = {
        "sec-fetch-site": "cross-site",
        "sec-fetch-mode": "navigate",
        "sec-fetch-dest": "document",
    }
    answer = await page.get("/")
    assert answer.status_code == 200
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]

    page.headers["sec-fetch-dest"] = "iframe"
    assert (await page.get("/")).status_code == 403


async def test_a_page_on_another_port_of_the_same_host_is_another_origin(server, page, core):
    page.headers = {"origin": "http://127.0.0.1:5173"}
    assert await page.call("connect unary") == FOREIGN_ORIGIN
    assert core.contexts == []


@pytest.mark.parametrize(
    "host",
    ["localhost", "LocalHost.", "app.localhost", "127.0.0.1", "127.8.9.10", "[::1]", "192.0.2.7"],
)
async def test_loopback_names_and_every_address_are_served(server, page, host):
    """An address cannot be rebound: a browser sending `Host: 192.0.2.7` connected to it,
    and so did a LAN client, a container's neighbour or a kubelet's probe."""
    authority = f"{host}:{server.http_port}"
    for headers in (
        {"host": authority},
        {"host": authority, "origin": f"http://{authority}", "sec-fetch-site": "same-origin"},
    ):
        page.headers = headers
        for shape in SHAPES:
            assert await page.call(shape) == OK, (headers, shape)
        assert (await page.get("/healthz")).status_code == 200


@pytest.mark.parametrize("host", ["", "a:b:c", "localhost:http", "[localhost]:80", "[::1"])
async def test_a_malformed_host_is_refused(server, page, host):
    page.headers = {"host": host}
    assert await page.call("connect unary") == FOREIGN_HOST


# What the operator allows (the `settings` fixture above).


@pytest.mark.parametrize(
    ("host", "served"),
    [
        ("api.blitz.test", True),
        ("a.b.blitz.test", True),
        ("blitz.test", False),
        ("evilblitz.test", False),
        ("exact.example", True),
        ("sub.exact.example", False),
        ("blitz.example.com", True),
    ],
)
async def test_allowed_host_patterns_and_the_public_urls_host_are_served(
    server, page, host, served
):
    authority = f"{host}:{server.http_port}"
    page.headers = {"host": authority, "origin": f"http://{authority}"}
    for shape in SHAPES:
        assert await page.call(shape) == (OK if served else FOREIGN_HOST), shape


async def test_an_allowed_cors_origin_may_call_from_another_site(server, page):
    page.headers = {"origin": "http://dashboard.test:5173", "sec-fetch-site": "cross-site"}
    for shape in SHAPES:
        assert await page.call(shape) == OK, shape

    page.headers["origin"] = "http://dashboard.test:5174"
    assert await page.call("connect unary") == FOREIGN_ORIGIN


async def test_the_public_urls_origin_is_the_ports_own_behind_a_proxy(server, page):
    """A proxy that ends TLS: the page is https, the port hears http, maybe another Host."""
    for host in ("blitz.example.com", f"127.0.0.1:{server.http_port}"):
        page.headers = {"host": host, "origin": "https://blitz.example.com"}
        for shape in SHAPES:
            assert await page.call(shape) == OK, (host, shape)


async def test_a_preflight_is_answered_for_an_allowed_origin_only_on_a_served_host(server, page):
    preflight = {
        "origin": "http://dashboard.test:5173",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type",
    }
    allowed = await page.http.options(SESSIONS + "ListSessions", headers=preflight)
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "http://dashboard.test:5173"

    rebound_host = {**preflight, "host": f"{ATTACKER}:{server.http_port}"}
    refused = await page.http.options(SESSIONS + "ListSessions", headers=rebound_host)
    assert refused.status_code == 400
    assert "access-control-allow-origin" not in refused.headers


async def test_a_star_serves_every_host(settings, core):
    any_host_settings = replace(settings, allowed_host=("*",))
    async with running_server(any_host_settings, ports=core.ports) as any_host:
        async with httpx.AsyncClient(base_url=any_host.http_url) as http:
            attacker = Page(http, rebound(any_host.http_port))
            assert await attacker.call("connect unary") == OK
            attacker.headers["origin"] = "http://attacker.example"
            assert await attacker.call("connect unary") == FOREIGN_ORIGIN


def test_allowed_hosts_are_repeatable_or_comma_separated() -> None:
    settings = load_settings({"allowed_host": ["Blitz.Example.com.", "*.a.test,*"]}, {})
    assert settings.allowed_host == ("blitz.example.com", "*.a.test", "*")
    from_env = load_settings({}, {"BLITZ_ALLOWED_HOST": "blitz, blitz-a"})
    assert from_env.allowed_host == ("blitz", "blitz-a")
    assert load_settings({}, {}).allowed_host == ()


@pytest.mark.parametrize(
    "bad", ["http://a.test", "a.test:8080", "a.test/x", "*.", "a*.test", "*a.test", "::1"]
)
def test_an_allowed_host_must_be_a_name_or_a_pattern(bad: str) -> None:
    with pytest.raises(SettingsError, match="--allowed-host"):
        load_settings({"allowed_host": [bad]}, {})
