"""CORS on the HTTP port: the origins of `--cors-origin` may call it from a page, others not.

The browser suite (tests/browser/test_cors.py) checks the same with a real browser; these
check the headers themselves, and that a server with no origin configured answers CORS
nothing at all.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.servers import make_settings

from blitz.config import Settings, SettingsError, load_settings
from blitz.transport.cors import ALLOWED_HEADERS, EXPOSED_HEADERS

LIST = "/blitz.v1.SessionService/ListSessions"
ALLOWED = "http://allowed.test:5173"
OTHER = "http://elsewhere.test"
# What connect-es's clients send (Connect and gRPC-Web), and the token.
CLIENT_HEADERS = (
    "authorization, content-type, connect-protocol-version, connect-timeout-ms,"
    " x-grpc-web, x-user-agent, grpc-timeout"
)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path, cors_origin=(ALLOWED, "https://second.test"))


def preflight(origin: str) -> dict[str, str]:
    return {
        "origin": origin,
        "access-control-request-method": "POST",
        "access-control-request-headers": CLIENT_HEADERS,
    }


async def test_a_preflight_from_an_allowed_origin_allows_what_connect_and_grpc_web_send(http):
    answer = await http.options(LIST, headers=preflight(ALLOWED))

    assert answer.status_code == 200
    assert answer.headers["access-control-allow-origin"] == ALLOWED
    assert answer.headers["access-control-allow-methods"] == "POST"
    allowed = {h.strip().lower() for h in answer.headers["access-control-allow-headers"].split(",")}
    assert {h.strip() for h in CLIENT_HEADERS.split(",")} <= allowed
    assert "access-control-allow-credentials" not in answer.headers


async def test_a_preflight_from_another_origin_is_refused(http):
    answer = await http.options(LIST, headers=preflight(OTHER))

    assert answer.status_code == 400
    assert "access-control-allow-origin" not in answer.headers


async def test_a_call_from_an_allowed_origin_may_read_the_grpc_web_status(http):
    answer = await http.post(
        LIST, json={}, headers={"origin": ALLOWED, "content-type": "application/json"}
    )

    assert answer.headers["access-control-allow-origin"] == ALLOWED
    exposed = {
        h.strip().lower() for h in answer.headers["access-control-expose-headers"].split(",")
    }
    assert {"grpc-status", "grpc-message", "grpc-status-details-bin"} <= exposed
    assert "origin" in answer.headers["vary"].lower()


async def test_a_call_from_another_origin_gets_no_allow_origin(http):
    answer = await http.post(
        LIST, json={}, headers={"origin": OTHER, "content-type": "application/json"}
    )

    assert "access-control-allow-origin" not in answer.headers


def test_the_headers_are_the_ones_connect_es_names() -> None:
    """connect-es's `cors.allowedHeaders` and `exposedHeaders`, lower-cased, with the token."""
    assert {"x-grpc-web", "x-user-agent", "grpc-timeout", "connect-protocol-version"} <= set(
        ALLOWED_HEADERS
    )
    assert "authorization" in ALLOWED_HEADERS
    assert {"grpc-status", "grpc-message", "grpc-status-details-bin"} <= set(EXPOSED_HEADERS)


def test_origins_are_repeatable_or_comma_separated() -> None:
    settings = load_settings(
        {"cors_origin": ["http://a.test", "https://b.test:8443,http://c.test/"]}, {}
    )
    assert settings.cors_origin == ("http://a.test", "https://b.test:8443", "http://c.test")
    from_env = load_settings({}, {"BLITZ_CORS_ORIGIN": "http://a.test, http://[::1]:3000"})
    assert from_env.cors_origin == ("http://a.test", "http://[::1]:3000")
    assert load_settings({}, {}).cors_origin == ()


@pytest.mark.parametrize("bad", ["*", "localhost:3000", "http://a.test/app", "ftp://a.test"])
def test_a_cors_origin_must_be_an_origin(bad: str) -> None:
    with pytest.raises(SettingsError, match="--cors-origin"):
        load_settings({"cors_origin": [bad]}, {})
