"""The gateway's JSON lines are python-json-logger's, record for record, whatever a record carries."""

from __future__ import annotations

import datetime
import enum
import logging
import sys

import pytest
from pythonjsonlogger.json import JsonFormatter

from gateway.telemetry.logs import FIELDS, JsonLines


class Colour(enum.Enum):
    RED = "red"


class Opaque:
    def __str__(self) -> str:
        return "opaque"


def _exc_info() -> logging._SysExcInfoType:
    try:
        raise ValueError("boom")
    except ValueError:
        return sys.exc_info()


def _records() -> list[logging.LogRecord]:
    log = logging.getLogger("mcpexec.test.logs")
    extras: list[dict[str, object]] = [
        {},
        {"task": "default/t", "task_uid": "u", "action": "call", "target": "s/t", "duration_ms": 1.5, "outcome": "ok"},
        {"when": datetime.datetime(2024, 5, 6, 7, 8, 9, 123456), "day": datetime.date(2024, 5, 6)},
        {"colour": Colour.RED, "raw": b"\x00\xff", "kind": ValueError, "nested": {"a": [1, 2.5, None, True]}},
        {"_private": 1, "text": 'caf\u00e9 \u2603 "quoted" \\ \n'},
        {"error": ValueError("bad"), "obj": Opaque()},
    ]
    records = []
    for created, extra in zip(
        (0.0, 1.999, 1_700_000_000.25, 1_700_000_000.75, 1_700_000_001.0, 86_399.9), extras, strict=True
    ):
        record = log.makeRecord(log.name, logging.INFO, __file__, 1, "message %s", ("arg",), None, extra=extra)
        record.created, record.msecs = created, (created - int(created)) * 1000
        records.append(record)
    for msg, exc, stack in (
        ({"a dict": "message", "exc_info": "given"}, None, None),
        ("with %d%%", _exc_info(), "stack"),
    ):
        record = log.makeRecord(log.name, logging.ERROR, __file__, 2, msg, (5,) if exc else (), exc, extra={"x": 1})
        record.stack_info, record.created, record.msecs = stack, 1_700_000_002.5, 500.0
        records.append(record)
    return records


@pytest.mark.parametrize("index", range(len(_records())))
def test_same_line_as_python_json_logger(index: int) -> None:
    ours, stock = JsonLines(), JsonFormatter(FIELDS)
    for _ in range(2):  # the second time from what the first remembered (the time of day)
        record, twin = _records()[index], _records()[index]
        assert ours.format(record) == stock.format(twin)


def test_a_date_format_is_honoured() -> None:
    ours, stock = JsonLines(), JsonFormatter(FIELDS)
    ours.datefmt = stock.datefmt = "%Y"
    assert ours.format(_records()[2]) == stock.format(_records()[2])
