"""JSON logs for the gateway process (one object per line, `extra` fields included)."""

from __future__ import annotations

import logging

from pythonjsonlogger.json import JsonFormatter


def configure(level: int = logging.INFO) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
