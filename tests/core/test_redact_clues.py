"""Texts with no clue of a secret skip the masking patterns, and lose nothing by it
(blitz.redact: `redact_text` against every pattern run on every text)."""

from __future__ import annotations

import random

from blitz.redact import _by_patterns, redact_text

# Pieces of texts: the patterns' keywords and shapes in several cases, what surrounds a
# secret, and plain words.
_PIECES = [
    "token", "TOKEN", "Token", "secret", "passwd", "password", "PassWord", "pwd", "PWD",
    "api_key", "api-key", "ApiKey", "access_key", "private-key", "credential",
    "authorization", "Authorization: ", "Bearer ", "bearer ", "Basic ", "sk-", "sk-ant-",
    "ghp_", "gho_", "github_pat_", "xoxb-", "AKIA", "AIza", "eyJ", "https://", "user:",
    "@host", "?", "&", "=", ": ", "\"", "'", "--", " ", "\n", ".", "/", "-", "_",
    "abcdefghij0123456789", "ABCDEFGHIJKLMNOP", "A1b2C3d4E5f6G7h8I9j0K1l2", "echo", "run",
    "the", "value", "x", "7", "/usr/bin", "true", "***",
]  # fmt: skip


def test_every_text_masks_as_every_pattern_run_on_it_would():
    rng = random.Random(20261205)
    for _ in range(30_000):
        text = "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 12)))
        assert redact_text(text) == _by_patterns(text), text


def test_a_text_with_a_secret_is_masked_and_a_plain_one_left_alone():
    assert redact_text("export OPENAI_API_KEY=abcdef123456") == "export OPENAI_API_KEY=***"
    assert redact_text("curl -H 'Authorization: Bearer abcdefghijkl'") == (
        "curl -H 'Authorization: Bearer ***'"
    )
    assert redact_text("git clone https://me:hunter2hunter2@example.com/r") == (
        "git clone https://me:***@example.com/r"
    )
    assert redact_text("key sk-abcdefghijklmnopqrstuv") == "key ***"
    plain = "$ echo parked-123 in /tmp/workspaces/s_0123"
    assert redact_text(plain) == plain


def test_text_beyond_ascii_always_runs_the_patterns():
    # U+0131, the dotless i, matches 'i' in the patterns' case-insensitive keywords;
    # lowercasing does not make it one, so such a text is never taken for plain.
    text = "ap\u0131_key=abcdef123456"
    assert redact_text(text) == _by_patterns(text)
    assert "abcdef123456" not in redact_text(text)
