"""`python3 -m runtime`: the bounded result the operator reads, the full output kept, the exit code."""

from __future__ import annotations

import json

from runtime.contract import RESULT_LIMIT
from tests.integration.runtime.conftest import RuntimeHarness

USAGE_KEYS = {"llmTurns", "tokensIn", "tokensOut", "toolCalls"}


def test_success_and_top_level_await(harness: RuntimeHarness) -> None:
    code = """
import asyncio
await asyncio.sleep(0)
print("awaited", call_tool("demo/get_customer", {"customer_id": "C001"})["id"])
"""
    run = harness.run(harness.task("ok", code=code))
    assert run.exit_code == 0
    assert run.result == {
        "phase": "Succeeded",
        "result": "awaited C001\n",
        "usage": {"llmTurns": 0, "tokensIn": 0, "tokensOut": 0, "toolCalls": 1},
    }


def test_failure_gives_exit_1_the_error_and_the_traceback(harness: RuntimeHarness) -> None:
    run = harness.run(harness.task("boom", code="print('before')\nrecords = {}\nrecords['missing']"))
    assert run.exit_code == 1
    assert run.result["phase"] == "Failed"
    assert run.result["error"] == "KeyError: 'missing'"
    assert "before" in run.result["result"] and "records['missing']" in run.result["result"]
    assert set(run.result["usage"]) == USAGE_KEYS


def test_big_output_is_bounded_in_the_result_and_kept_whole_in_the_log(harness: RuntimeHarness) -> None:
    code = "for i in range(50_000):\n    print(f'line {i:05d}')\nprint('THE END')"
    run = harness.run(harness.task("big", code=code))
    assert run.exit_code == 0
    encoded = json.dumps(run.result, ensure_ascii=False).encode()
    assert len(encoded) <= RESULT_LIMIT
    assert run.result["result"].startswith("line 00000\n") and run.result["result"].endswith("THE END\n")
    assert "truncated" in run.result["result"]
    lines = run.log.splitlines()
    assert len(lines) == 50_001 and lines[25_000] == "line 25000", "output.log holds everything printed"


def test_snippet_timeout_fails_the_task(harness: RuntimeHarness) -> None:
    run = harness.run(harness.task("slow", code="print('working')\nwhile True:\n    pass", timeoutSeconds=2))
    assert run.exit_code == 1
    assert run.result["error"] == "SnippetTimeout: the snippet ran past its time limit"
    assert run.result["result"].startswith("working\n")


def test_a_broken_task_file_still_yields_a_failed_result(harness: RuntimeHarness) -> None:
    run = harness.run(harness.task("broken"), task_json="{not json")
    assert run.exit_code == 1
    assert run.result["phase"] == "Failed"
    assert run.result["error"].startswith("runtime: JSONDecodeError")
