"""The sandbox runtime's executor, output bounds and result encoding (pure Python, no sandbox needed)."""

from __future__ import annotations

import json

from runtime.contract import RESULT_LIMIT
from runtime.executor import Executor
from runtime.output import BoundedBuffer, truncate
from runtime.result import Result


def test_namespace_persists_across_snippets_with_top_level_await() -> None:
    executor = Executor({}, output_limit=1000)
    first = executor.run("import asyncio\nawait asyncio.sleep(0)\ncount = 41", timeout_seconds=5)
    second = executor.run("count += 1\nprint(count)", timeout_seconds=5)
    assert first.ok and second.ok
    assert second.output == "42\n"


def test_errors_become_output_with_the_failing_line() -> None:
    outcome = Executor({}, output_limit=1000).run("x = 1\n1 / 0", timeout_seconds=5)
    assert not outcome.ok
    assert outcome.error == "ZeroDivisionError: division by zero"
    assert "1 / 0" in outcome.output


def test_snippet_timeout_stops_a_busy_loop() -> None:
    outcome = Executor({}, output_limit=1000).run("while True:\n    pass", timeout_seconds=0.3)
    assert not outcome.ok
    assert outcome.error is not None and "time limit" in outcome.error


def test_bounded_buffer_keeps_head_and_tail_and_reports_size() -> None:
    buffer = BoundedBuffer(keep=10)
    for chunk in ("HEAD------", "x" * 1000, "------TAIL"):
        buffer.write(chunk)
    text = buffer.getvalue()
    assert text.startswith("HEAD------") and text.endswith("------TAIL")
    assert "[truncated 1000 of 1020 characters]" in text


def test_truncate_is_identity_when_short() -> None:
    assert truncate("short", 100) == "short"
    cut = truncate("a" * 500 + "b" * 500, 200)
    assert len(cut) <= 200 and cut.startswith("a") and cut.endswith("b") and "truncated" in cut


def test_result_always_fits_the_termination_message() -> None:
    encoded = Result(phase="Failed", result="r" * 50_000, error="e" * 50_000).encode()
    assert len(encoded.encode()) <= RESULT_LIMIT
    decoded = json.loads(encoded)
    assert decoded["phase"] == "Failed" and "truncated" in decoded["result"]


def test_stdout_and_stderr_come_apart_and_together() -> None:
    outcome = Executor({}, output_limit=1000).run("import sys\nprint('out')\nprint('err', file=sys.stderr)\n1/0", 5)
    assert outcome.stdout == "out\n"
    assert outcome.stderr.startswith("err\nTraceback") and "ZeroDivisionError" in outcome.stderr
    assert outcome.output.startswith("out\nerr\nTraceback")
