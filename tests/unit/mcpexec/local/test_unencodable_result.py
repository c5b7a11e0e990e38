"""A result whose text UTF-8 cannot carry (a lone surrogate, in a JSON escape or as raw bytes) is shown escaped,
neither lost as "not a result" nor a UnicodeEncodeError on the way to the terminal (issue 17)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from mcpexec.api.agenttask import Phase
from mcpexec.local.cli import report
from mcpexec.local.run import LocalOutcome, _read_result
from mcpexec.local.sandbox.base import Completed
from runtime import contract

EXITED = Completed(exit_code=0, stdout="", stderr="", timed_out=False)


def _result_file(workspace: Path, data: bytes) -> None:
    path = workspace / Path(contract.LOCAL_RESULT_FILE).relative_to(contract.WORKSPACE)
    path.parent.mkdir(parents=True)
    path.write_bytes(data)


@pytest.mark.parametrize(
    "data",
    [
        json.dumps({"phase": "Succeeded", "result": "a \ud800 b", "error": "e \udfff"}).encode(),  # \ud800 escapes
        '{"phase": "Succeeded", "result": "a \ud800 b", "error": "e \udfff"}'.encode("utf-8", "surrogatepass"),
    ],
    ids=["escaped", "raw"],
)
def test_a_lone_surrogate_in_the_result_is_escaped(tmp_path: Path, data: bytes) -> None:
    _result_file(tmp_path, data)
    result = _read_result(tmp_path, EXITED)
    assert result is not None and result.phase == Phase.SUCCEEDED, result
    assert (result.result, result.error) == ("a \\ud800 b", "e \\udfff")


def test_a_result_nested_past_the_recursion_limit_is_not_a_result(tmp_path: Path) -> None:
    _result_file(tmp_path, b"[" * 2000 + b"]" * 2000)
    result = _read_result(tmp_path, EXITED)
    assert result is not None and result.phase == Phase.FAILED and "not a result" in str(result.error)


def test_text_a_non_utf8_stdout_cannot_carry_is_shown_escaped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    shown = io.BytesIO()
    stdout = io.TextIOWrapper(shown, encoding="ascii")
    monkeypatch.setattr(sys, "stdout", stdout)
    report(LocalOutcome("Succeeded", "Tōkyō 東京", None, {}, tmp_path, "gvisor"), raw=False)
    stdout.flush()
    assert shown.getvalue() == b"T\\u014dky\\u014d \\u6771\\u4eac\n"
