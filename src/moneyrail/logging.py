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


def configure_logging(level: str = "INFO", *, json: bool = True, stream: TextIO | None = None) -> None:
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer(serializer=_json_line)
        if json
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            add_request_id,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        # a write and a flush per line, without print()'s own work
        logger_factory=structlog.WriteLoggerFactory(file=stream or sys.stdout),
        cache_logger_on_first_use=True,
    )
    # Libraries that log through the standard library (uvicorn, dramatiq, alembic) go to stderr as usual,
    # but uvicorn's access log is off: it would print raw paths, and a path may carry a credential.
    logging.basicConfig(
        level=level.upper(), stream=stream or sys.stderr, format="%(levelname)s %(name)s %(message)s"
    )
    logging.getLogger("uvicorn.access").disabled = True
    # APScheduler logs every run of every job at INFO (a line a second with the ledger's sealer): the
    # sweeps log what they did themselves, so keep only its warnings (misfires, errors)
    quiet = max(logging.WARNING, logging.getLevelName(level.upper()))
    logging.getLogger("apscheduler.executors.default").setLevel(quiet)
