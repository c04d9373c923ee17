"""Under `--workers`, every log line names the process that wrote it; alone, none does."""

from __future__ import annotations

import io
import json
import logging

import structlog

from blitz.logs import configure_logging


def _lines(worker: int | None) -> list[dict[str, object]]:
    out = io.StringIO()
    configure_logging(log_format="json", level="info", stream=out, worker=worker)
    structlog.get_logger("blitz.test").info("turn started", worker=7)
    logging.getLogger("uvicorn.error").info("Started %s", "uvicorn")
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_workers_lines_ours_and_the_libraries_name_it() -> None:
    ours, library = _lines(worker=2)
    assert ours["worker"] == 2, "the writer, whatever a line says of another worker"
    assert library["worker"] == 2


def test_a_single_process_lines_name_no_worker() -> None:
    ours, library = _lines(worker=None)
    assert ours["worker"] == 7, "only what the line itself said"
    assert "worker" not in library
