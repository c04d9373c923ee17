"""The container section of docs/operations.md: what can run here does, against the server.

Docker does not run here, but the recipe that makes a token and its file does, and the
file it writes must be one the server reads, standing for the token it printed.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from blitz.auth import parse_tokens
from blitz.auth.tokens import token_hash

DOC = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text()


def block(after_heading: str, lang: str) -> str:
    """The first fenced block of `lang` after the heading `after_heading`."""
    section = DOC[DOC.index(after_heading) :]
    match = re.search(rf"^```{lang}\n(.*?)^```$", section, re.S | re.M)
    assert match, f"no {lang} block after {after_heading!r}"
    return match.group(1)


def test_the_token_recipe_writes_a_file_the_server_reads(tmp_path: Path):
    recipe = block("### Make a token", "sh")
    done = subprocess.run(
        ["/bin/sh", "-ec", recipe], cwd=tmp_path, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip()
    assert token.startswith("blz_")
    file = tmp_path / "secrets" / "blitz_tokens"
    assert file.stat().st_mode & 0o004, "readable by the container's user"
    (entry,) = parse_tokens(file.read_text(), source=str(file))
    assert entry.principal.name == "ops" and entry.principal.admin
    assert entry.hash == token_hash(token)
    assert token not in file.read_text(), "the file holds the hash only"


def test_the_section_names_the_files_as_they_are():
    section = DOC[DOC.index("## Deploying with the container") :]
    compose = (Path(__file__).resolve().parents[2] / "compose.yaml").read_text()
    for name in ("secrets/blitz_tokens", "/run/secrets/blitz_tokens", "blitz-data"):
        assert name in section and name in compose, name
    dockerfile = (Path(__file__).resolve().parents[2] / "Dockerfile").read_text()
    for fact in ("python:3.11-slim-trixie", "10001", "blitz-healthcheck", "/usr/bin/tini"):
        assert fact in dockerfile, fact
    for fact in ("python:3.11-slim-trixie", "10001", "blitz-healthcheck", "tini"):
        assert fact in section, fact
