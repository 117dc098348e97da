"""structlog set-up: JSON lines on stdout, the request or message id bound for the unit of work."""

from __future__ import annotations

import json as stdlib_json
import logging
import sys
from contextvars import ContextVar
from typing import Any, TextIO

import orjson
import structlog

# The id of the request being served, set by api/middleware.py for the request's whole run: one
# ContextVar set and reset per request, where structlog's bind_contextvars/unbind_contextvars cost a
# name lookup and a dict each; `add_request_id` puts it on each line logged meanwhile.
current_request_id: ContextVar[str | None] = ContextVar("moneyrail_request_id", default=None)


def add_request_id(_logger: Any, _method_name: str, event_dict: Any) -> Any:
    request_id = current_request_id.get()
    if request_id is not None:
        event_dict.setdefault("request_id", request_id)  # a line's own request_id wins, as with contextvars
    return event_dict


# Dataclasses and datetimes as the standard library renders them (their repr), not as orjson would:
# a dataclass's fields kept out of its repr (a card number) stay out of the logs too.
_ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


def _unrendered(value: Any) -> Any:
    """What JSON has no type for: its `__structlog__()` or its repr, as structlog's own renderer does."""
    as_structlog = getattr(value, "__structlog__", None)
    return as_structlog() if as_structlog is not None else repr(value)


def _json_line(event_dict: Any, **_json_options: Any) -> str:
    """One log line's JSON by orjson (several times less CPU than the standard library's `json` on a
    request line); what orjson refuses (an integer past 64 bits) by the standard library."""
    try:
        return orjson.dumps(event_dict, default=_unrendered, option=_ORJSON_OPTIONS).decode()
    except TypeError:
        return stdlib_json.dumps(event_dict, default=_unrendered)


# The standard library's loggers that libraries log through: whatever handlers a library set on them
# (uvicorn's dictConfig, for one) are taken off, so every record reaches the root logger's JSON handler.
LIBRARY_LOGGERS = (
    "sqlalchemy",
    "asyncpg",
    "uvicorn",
    "uvicorn.error",
    "uvicorn.access",
    "uvicorn.asgi",
    "dramatiq",
    "apscheduler",
    "alembic",
    "py.warnings",
)


class JsonLinesHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The root logger's one handler, set by `configure_logging`: a later call replaces it. Without a
    stream of its own it writes to `sys.stderr` as it is at each record (dramatiq's worker processes
    replace it with their pipe to the main process), as the standard library's last-resort handler does."""

    def __init__(self, stream: TextIO | None) -> None:
        super().__init__(stream)
        self.own_stream = stream  # StreamHandler set sys.stderr of now in its place

    @property
    def stream(self) -> TextIO:
        return self.own_stream if self.own_stream is not None else sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        self.own_stream = value


def _shared_processors() -> list[structlog.types.Processor]:
    return [
        structlog.contextvars.merge_contextvars,
        add_request_id,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]


def configure_logging(level: str = "INFO", *, json: bool = True, stream: TextIO | None = None) -> None:
    """structlog's lines on `stream` (default stdout); the standard library's records (uvicorn,
    SQLAlchemy, asyncpg, dramatiq, APScheduler, Alembic, warnings) on `stream` (default stderr) in the
    same format, through structlog's ProcessorFormatter: one line each, a traceback in its `exception`."""
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer(serializer=_json_line)
        if json
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[*_shared_processors(), structlog.processors.format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        # a write and a flush per line, without print()'s own work
        logger_factory=structlog.WriteLoggerFactory(file=stream or sys.stdout),
        cache_logger_on_first_use=True,
    )
    handler = JsonLinesHandler(stream)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*_shared_processors(), structlog.stdlib.add_logger_name],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                # the console renderer prints a traceback itself; JSON carries it as a string field
                *([structlog.processors.format_exc_info] if json else []),
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    for existing in list(root.handlers):
        # an earlier call's handler, or logging.basicConfig's, is replaced
        if isinstance(existing, JsonLinesHandler) or type(existing) is logging.StreamHandler:
            root.removeHandler(existing)
    if not root.handlers:  # others are a host's, such as a test runner's capture: it owns the output
        root.addHandler(handler)
        root.setLevel(level.upper())
    for name in LIBRARY_LOGGERS:
        library_logger = logging.getLogger(name)
        for existing in list(library_logger.handlers):
            library_logger.removeHandler(existing)
        library_logger.propagate = True
    logging.captureWarnings(True)  # a Python warning is a log line too
    # uvicorn's access log stays off: it would print raw paths, and a path may carry a credential
    logging.getLogger("uvicorn.access").disabled = True
    # APScheduler logs every run of every job at INFO (a line a second with the ledger's sealer): the
    # sweeps log what they did themselves, so keep only its warnings (misfires, errors)
    quiet = max(logging.WARNING, logging.getLevelName(level.upper()))
    logging.getLogger("apscheduler.executors.default").setLevel(quiet)
