"""Logging: structlog for our lines, the same renderer for everyone else's.

`configure_logging` is called once, by the entry point. It makes structlog render through
the standard library's logging, so one handler on the root logger writes every line —
ours, uvicorn's, grpc's — in one format: readable in a terminal, one JSON object per line
otherwise. Context bound with `structlog.contextvars.bound_contextvars` (the core binds
`session_id` and `turn_id`) is merged into every line logged under it. Secret-looking
values are masked in every line (`mask_secrets`), ours or a library's, tracebacks included.
Under `blitz serve --workers N` every line, ours or a library's, names the process that
wrote it: `worker` 0 for the first, 1 to N - 1 for the others (`blitz.workers`); a
single process's lines have no `worker`.

Nothing here may be called from library code: modules only do
`log = structlog.get_logger(__name__)`.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import structlog
from structlog.typing import EventDict, Processor

from blitz.redact import MASK, is_secret_name, redact_text

__all__ = ["configure_logging", "mask_secrets"]

# Loggers of libraries that are chatty at INFO about things an operator need not see.
_QUIET_LIBRARIES = {"uvicorn.access": logging.WARNING, "asyncio": logging.WARNING}


def mask_secrets(_logger: Any, _method: str, event_dict: EventDict) -> EventDict:
    """Mask secret-looking values (tokens, keys, passwords, URL credentials) in a log line.

    Strings nested in lists and dicts are masked too: a rendered exception is one. A string
    under a secret-looking name (`password=...`) is masked whole, whatever it looks like.
    """
    for key, value in event_dict.items():
        event_dict[key] = _masked(value, is_secret_name(key))
    return event_dict


def _masked(value: Any, secret: bool = False) -> Any:
    if isinstance(value, str):
        return MASK if secret and value else redact_text(value)
    if isinstance(value, dict):
        return {key: _masked(item, is_secret_name(str(key))) for key, item in value.items()}
    if isinstance(value, list):
        return [_masked(item) for item in value]
    return value


def _naming_worker(number: int) -> Processor:
    """A processor that names worker `number` in every line as its writer (`worker`)."""

    def name(_logger: Any, _method: str, event_dict: EventDict) -> EventDict:
        event_dict["worker"] = number
        return event_dict

    return name


def configure_logging(
    *,
    log_format: str = "auto",
    level: str = "info",
    stream: TextIO | None = None,
    worker: int | None = None,
) -> None:
    """Route structlog and stdlib logging to `stream` (stderr) in one format.

    `log_format` is "console", "json", or "auto" (console when `stream` is a terminal).
    `worker`: this process's number among `--workers`, named in every line (None: the only
    process). Calling it again replaces the previous configuration.
    """
    stream = stream if stream is not None else sys.stderr
    if log_format == "auto":
        log_format = "console" if _isatty(stream) else "json"
    numeric_level = logging.getLevelNamesMapping()[level.upper()]

    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.stdlib.ExtraAdder(),
        *([] if worker is None else [_naming_worker(worker)]),
    ]
    # Masking comes last before rendering, once every line's message is formatted (ours and
    # the libraries') and, in JSON, its traceback is data whose text can be masked too.
    final: list[Processor]
    if log_format == "json":
        # Tracebacks as data, without frame locals: those may hold requests and headers.
        final = [
            structlog.processors.ExceptionRenderer(
                structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
            ),
            mask_secrets,
            structlog.processors.JSONRenderer(),
        ]
    else:
        # The traceback becomes text first, so that it is masked like the rest of the line.
        final = [
            structlog.processors.format_exc_info,
            mask_secrets,
            structlog.dev.ConsoleRenderer(colors=_isatty(stream)),
        ]

    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )

    handler = logging.StreamHandler(stream)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *final],
        )
    )
    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric_level)
    for name, quiet_level in _QUIET_LIBRARIES.items():
        logging.getLogger(name).setLevel(max(quiet_level, numeric_level))
    # uvicorn and grpc log to their own loggers; let them reach the root handler only.
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "grpc"):
        lib_logger = logging.getLogger(name)
        lib_logger.handlers.clear()
        lib_logger.propagate = True


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
