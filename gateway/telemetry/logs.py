"""JSON logs for the gateway process (one object per line, `extra` fields included)."""

from __future__ import annotations

import logging
import time
from typing import Any

from pythonjsonlogger.json import JsonEncoder, JsonFormatter

FIELDS = "%(asctime)s %(levelname)s %(name)s %(message)s"


class JsonLines(JsonFormatter):
    """python-json-logger's formatter with `FIELDS` and nothing else configured (no renames, defaults, static fields
    or timestamp), its per-record work done once where it can be: one encoder, the time of day formatted once a
    second, extras merged in one pass. Every tool call writes an audit record: the stock path cost about 20 us of
    it, a sixth of what the gateway adds to an `echo` call (make bench gateway_overhead). Same lines as
    `JsonFormatter(FIELDS)` (tests/unit/gateway/telemetry/test_logs.py)."""

    def __init__(self) -> None:
        super().__init__(FIELDS)
        self._encoder = JsonEncoder()  # what json.dumps(cls=JsonEncoder) builds for every record
        self._second = -1
        self._time_of_day = ""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        if datefmt:
            return super().formatTime(record, datefmt)
        second = int(record.created)
        if second != self._second:
            self._time_of_day = time.strftime(self.default_time_format, self.converter(second))
            self._second = second
        msec_format = self.default_msec_format
        return self._time_of_day if msec_format is None else msec_format % (self._time_of_day, record.msecs)

    def add_fields(self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]) -> None:
        fields = record.__dict__
        for field in self._required_fields:
            log_data[field] = fields.get(field)
        log_data.update(message_dict)
        skip = self._skip_fields
        for key, value in fields.items():
            if key not in skip and not (isinstance(key, str) and key.startswith("_")):
                log_data[key] = value

    def jsonify_log_record(self, log_data: dict[str, Any]) -> str:
        return self._encoder.encode(log_data)


def configure(level: int = logging.INFO) -> None:
    """The process's logging: JSON lines on stderr. A record's caller, thread and process are not gathered (the
    logging HOWTO's "Optimization"): no line shows them, and finding the caller walked the stack for every record."""
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    handler = logging.StreamHandler()
    handler.setFormatter(JsonLines())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
