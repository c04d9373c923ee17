"""The suite puts logging back exactly after each test (conventions 18, tests/conftest.py)."""

from __future__ import annotations

import io
import logging

import structlog
from support.logging_state import LoggingState

from blitz.logs import configure_logging


def test_a_reconfigured_process_logs_as_before_once_restored() -> None:
    before = LoggingState.take()
    configure_logging(log_format="json", level="debug", stream=io.StringIO())
    logging.getLogger().addFilter(logging.Filter("blitz"))
    logging.getLogger("blitz.test.made_here").setLevel(logging.ERROR)
    logging.getLogger("grpc").propagate = False
    logging.disable(logging.WARNING)
    assert LoggingState.take() != before

    before.restore()
    assert LoggingState.take() == before
    assert structlog.is_configured() == before.structlog_configured
    assert logging.getLogger("blitz.test.made_here").getEffectiveLevel() == (
        logging.getLogger().getEffectiveLevel()
    ), "a logger made during the test is fresh again"
