"""Logging: one format for our lines and the libraries', with bound context merged."""

from __future__ import annotations

import io
import json
import logging

import structlog

from blitz.logs import configure_logging


def test_json_lines_carry_bound_context_and_library_lines_share_the_format() -> None:
    out = io.StringIO()
    configure_logging(log_format="json", level="info", stream=out)

    with structlog.contextvars.bound_contextvars(session_id="s-1", turn_id="t-1"):
        structlog.get_logger("blitz.test").info("turn started", model="demo")
    logging.getLogger("uvicorn.error").info("Started %s", "uvicorn")
    structlog.get_logger("blitz.test").debug("not shown at info")

    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["event"] == "turn started"
    assert (first["session_id"], first["turn_id"], first["model"]) == ("s-1", "t-1", "demo")
    assert first["level"] == "info"
    assert second["event"] == "Started uvicorn"
    assert second["logger"] == "uvicorn.error"


def test_json_exceptions_are_structured_without_frame_locals() -> None:
    out = io.StringIO()
    configure_logging(log_format="json", level="info", stream=out)

    password = "hunter2"
    try:
        raise ValueError(f"bad {len(password)}")
    except ValueError:
        structlog.get_logger("blitz.test").exception("failed")

    line = json.loads(out.getvalue())
    assert line["exception"][0]["exc_type"] == "ValueError"
    assert "hunter2" not in out.getvalue(), "frame locals were logged"


def test_auto_is_json_when_not_a_terminal() -> None:
    out = io.StringIO()
    configure_logging(log_format="auto", stream=out)

    structlog.get_logger("blitz.test").warning("hello")

    assert json.loads(out.getvalue())["event"] == "hello"


def test_secrets_are_masked_in_messages_arguments_and_json_tracebacks() -> None:
    out = io.StringIO()
    configure_logging(log_format="json", level="info", stream=out)
    key = "sk-" + "a1b2c3d4" * 4

    log = structlog.get_logger("blitz.test")
    log.info("calling %s", f"https://x/?api_key={key}", url=f"https://user:{key}@host/")
    logging.getLogger("httpx").info("request with token=%s", key)
    try:
        raise RuntimeError(f"Incorrect API key provided: {key}")
    except RuntimeError:
        log.exception("model call failed")

    ours, library, failed = (json.loads(line) for line in out.getvalue().splitlines())
    assert ours["event"] == "calling https://x/?api_key=***"
    assert ours["url"] == "https://user:***@host/"
    assert library["event"] == "request with token=***"
    assert failed["exception"][0]["exc_value"] == "Incorrect API key provided: ***"
    assert key not in out.getvalue()


def test_console_tracebacks_and_values_under_secret_names_are_masked() -> None:
    out = io.StringIO()
    configure_logging(log_format="console", level="info", stream=out)
    key = "sk-" + "a1b2c3d4" * 4

    log = structlog.get_logger("blitz.test")
    log.info("connecting", password="hunter2", input_tokens=12, settings={"db_password": "pw"})
    try:
        raise RuntimeError(f"Incorrect API key provided: {key}")
    except RuntimeError:
        log.exception("model call failed")

    text = out.getvalue()
    assert "hunter2" not in text and "'pw'" not in text
    assert "input_tokens=12" in text
    assert "Traceback (most recent call last)" in text
    assert "Incorrect API key provided: ***" in text
    assert key not in text
