"""The process's logging configuration, taken and put back exactly (tests/conftest.py).

`configure_logging` and anything a test calls replace global state: the root logger's
handlers, level and filters, named loggers' levels, handlers and `propagate`, the
`logging.disable` level, and structlog's configuration. `LoggingState.take()` keeps all of
it, `restore()` puts it back, so that a test that reconfigures logging leaves nothing
behind for the next one. A logger in its fresh state (NOTSET, no handler or filter,
propagating, enabled) is not kept: one created during a test is put back to that state.

pytest's capture handlers (`LogCaptureHandler`: caplog's and the report's) are not kept:
pytest attaches them for each phase of a test (to the root and to loggers that do not
propagate) and takes them off after it, so whichever are attached stay. Its session-wide
handlers (live and file logging) are kept like any other.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import structlog
from _pytest.logging import LogCaptureHandler

__all__ = ["LoggingState"]


def _per_phase(handler: logging.Handler) -> bool:
    return isinstance(handler, LogCaptureHandler)


@dataclass(frozen=True)
class _LoggerState:
    level: int = logging.NOTSET
    propagate: bool = True
    disabled: bool = False
    handlers: tuple[logging.Handler, ...] = ()
    filters: tuple[Any, ...] = ()

    @classmethod
    def of(cls, logger: logging.Logger) -> _LoggerState:
        return cls(
            level=logger.level,
            propagate=logger.propagate,
            disabled=logger.disabled,
            handlers=tuple(h for h in logger.handlers if not _per_phase(h)),
            filters=tuple(logger.filters),
        )

    def put_on(self, logger: logging.Logger) -> None:
        # Attributes, not setLevel: setLevel clears every logger's cache each time;
        # `restore` clears them once, at the end.
        logger.level = self.level
        logger.propagate = self.propagate
        logger.disabled = self.disabled
        logger.handlers = [*self.handlers, *(h for h in logger.handlers if _per_phase(h))]
        logger.filters = list(self.filters)


_FRESH = _LoggerState()


@dataclass(frozen=True)
class LoggingState:
    """Everything global about logging; equal states log alike."""

    root: _LoggerState
    # Named loggers not in their fresh state, by name.
    loggers: dict[str, _LoggerState]
    disable: int
    structlog_configured: bool
    structlog_config: dict[str, Any]

    @classmethod
    def take(cls) -> LoggingState:
        loggers = {}
        for name, logger in list(logging.root.manager.loggerDict.items()):
            if isinstance(logger, logging.Logger):
                state = _LoggerState.of(logger)
                if state != _FRESH:
                    loggers[name] = state
        config = structlog.get_config()
        config["processors"] = list(config["processors"])
        return cls(
            root=_LoggerState.of(logging.root),
            loggers=loggers,
            disable=logging.root.manager.disable,
            structlog_configured=structlog.is_configured(),
            structlog_config=config,
        )

    def restore(self) -> None:
        self.root.put_on(logging.root)
        for name, logger in list(logging.root.manager.loggerDict.items()):
            if isinstance(logger, logging.Logger):
                self.loggers.get(name, _FRESH).put_on(logger)
        logging.disable(self.disable)  # and clears the loggers' caches of levels
        if self.structlog_configured:
            config = self.structlog_config
            structlog.configure(**{**config, "processors": list(config["processors"])})
        else:
            structlog.reset_defaults()
