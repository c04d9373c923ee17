"""Without `--cors-origin`, the HTTP port answers no CORS at all: no page on another origin
can call it (its preflight is refused like any method but POST)."""

from __future__ import annotations

LIST = "/blitz.v1.SessionService/ListSessions"


async def test_without_origins_a_preflight_is_refused_and_nothing_is_allowed(http):
    answer = await http.options(
        LIST,
        headers={
            "origin": "http://localhost:5173",
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type",
        },
    )
    assert answer.status_code == 405
    assert not any(name.startswith("access-control-") for name in answer.headers)

    call = await http.post(
        LIST,
        json={},
        headers={"origin": "http://localhost:5173", "content-type": "application/json"},
    )
    assert not any(name.startswith("access-control-") for name in call.headers)
