"""`blitz serve` serves the console itself: its page at `/`, its assets under `/console/`,
from the files that ship in the package, each answer under the security headers."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import blitz
from blitz.transport.console import CONTENT_SECURITY_POLICY

BUILT = Path(blitz.__file__).parent / "console"


def csp(answer) -> dict[str, str]:  # type: ignore[no-untyped-def]
    directives = (
        part.strip().split(" ", 1) for part in answer.headers["content-security-policy"].split(";")
    )
    return {name: value for name, value in directives}


async def test_the_page_is_served_at_the_root_under_a_strict_policy(http):
    answer = await http.get("/")

    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/html; charset=utf-8"
    assert answer.text == (BUILT / "index.html").read_text()
    policy = csp(answer)
    assert policy["script-src"] == "'self'"  # no inline script, no eval
    assert policy["connect-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'"
    assert policy["default-src"] == "'none'"
    assert "unsafe" not in CONTENT_SECURITY_POLICY
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["x-frame-options"] == "DENY"
    assert answer.headers["referrer-policy"] == "no-referrer"


async def test_the_page_has_no_inline_script_or_style():
    page = (BUILT / "index.html").read_text()
    assert "<script>" not in page and "<style" not in page
    assert not re.search(r"\son[a-z]+\s*=", page, re.I)  # no event handler attribute
    assert '<script src="/console/console.js" defer></script>' in page


async def test_assets_are_served_gzipped_and_revalidated(http):
    answer = await http.get("/console/console.js", headers={"accept-encoding": "gzip"})

    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/javascript; charset=utf-8"
    assert answer.headers["content-encoding"] == "gzip"
    assert answer.content == (BUILT / "console.js").read_bytes()  # httpx decodes it
    assert "content-security-policy" in answer.headers
    again = await http.get("/console/console.js", headers={"if-none-match": answer.headers["etag"]})
    assert again.status_code == 304
    assert again.content == b""


async def test_an_unknown_asset_is_404_and_other_methods_405(http):
    assert (await http.get("/console/../blitz.db")).status_code == 404
    assert (await http.get("/console/nothing.js")).status_code == 404
    refused = await http.post("/", content=b"")
    assert refused.status_code == 405
    assert refused.headers["allow"] == "GET, HEAD"
    head = await http.head("/")
    assert head.status_code == 200 and head.content == b""


def test_the_stored_assets_are_plain_gzip_of_the_files():
    """gzip with no timestamp: the same files give the same answer on every server."""
    from blitz.transport.console import ConsoleApp

    app = ConsoleApp()
    for name, asset in app._assets.items():
        assert gzip.decompress(asset.gzipped) == (BUILT / name).read_bytes()
        assert asset.gzipped[4:8] == b"\0\0\0\0"
