"""Structured logs: one JSON object per line, carrying what the line is about.

``log_context`` binds fields (the correlation id, a match or table id) to everything logged
inside it, across awaits, without passing them down; the HTTP layer binds a request's, the
consumers an entry's. Secrets never reach a line: API keys, webhook secrets, bearer tokens and
the password of a database URL are masked, whatever logged them.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import logging.config
import re
import time
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

import msgspec

from shared.domain.messages import new_id

_fields: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar(
    "log_fields", default=MappingProxyType({})
)

SECRETS = re.compile(
    r"(?P<keep>\bpt_|\bwhsec_|\b[Bb]earer\s+|://[^/@\s:]*:)[^\s\"',;@]+"
    r"|(?P<seat>token=)[^\s&\"']+"
)
"""What is masked: an API key (``pt_``), a webhook secret (``whsec_``), a bearer token, a
``?token=`` query parameter and the password of a URL, each keeping its lead-in."""

_encoder = msgspec.json.Encoder()


def mask(text: str) -> str:
    return SECRETS.sub(lambda m: (m.group("keep") or m.group("seat")) + "***", text)


@contextlib.contextmanager
def log_context(**fields: str | None) -> Iterator[None]:
    """Add ``fields`` (the ``None`` ones left out) to every line logged inside the block."""
    token = _fields.set({**_fields.get(), **{k: v for k, v in fields.items() if v is not None}})
    try:
        yield
    finally:
        _fields.reset(token)


def bind(**fields: str) -> None:
    """Add ``fields`` to every line logged from here to the end of the current task."""
    _fields.set({**_fields.get(), **fields})


def correlation_id() -> str:
    """The correlation id of the work under way (a request's, a command's), or a new one."""
    return _fields.get().get("correlation_id") or new_id()


class JsonFormatter(logging.Formatter):
    """A line of JSON: time, level, service, logger, message, the bound fields, and the
    exception, if any."""

    def __init__(self, service: str = "") -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "service": self.service,
            "logger": record.name,
            "message": mask(record.getMessage()),
            **_fields.get(),
        }
        if record.exc_info:
            line["exception"] = mask(self.formatException(record.exc_info))
        return _encoder.encode(line).decode()


def logging_config(level: str, service: str) -> dict[str, Any]:
    """The ``logging.config.dictConfig`` of a process: JSON lines on stderr (also handed to
    uvicorn, which applies it in each worker process it starts)."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": JsonFormatter, "service": service}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "json"}},
        "root": {"level": level.upper(), "handlers": ["stderr"]},
        "loggers": {
            name: {"handlers": [], "propagate": True}
            for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "celery")
        },
    }


def configure_logging(level: str, service: str) -> None:
    logging.config.dictConfig(logging_config(level, service))
