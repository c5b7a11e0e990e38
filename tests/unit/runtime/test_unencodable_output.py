"""Output UTF-8 cannot carry (a lone surrogate the task printed) is written escaped: the runtime's result and
output.log keep it as `\\udXXX` instead of losing the result to a UnicodeEncodeError (issue 17)."""

from __future__ import annotations

import json
from pathlib import Path

from runtime.contract import RESULT_LIMIT
from runtime.output import OutputLog
from runtime.result import Result, write


def test_the_result_escapes_a_lone_surrogate(tmp_path: Path) -> None:
    write(tmp_path / "result.json", Result("Failed", "out \ud800\n", "ValueError: \udfff"))
    body = json.loads((tmp_path / "result.json").read_bytes())
    assert (body["result"], body["error"]) == ("out \\ud800\n", "ValueError: \\udfff")


def test_a_truncated_result_of_lone_surrogates_still_fits() -> None:
    encoded = Result("Succeeded", "\ud800" * 10_000, "\udfff" * 10_000).encode().encode()
    assert len(encoded) <= RESULT_LIMIT
    assert "\\ud800" in json.loads(encoded)["result"]


def test_output_log_escapes_a_lone_surrogate(tmp_path: Path) -> None:
    log = OutputLog(tmp_path / "output.log")
    log.write("before \ud800 after\n")
    log.close()
    assert (tmp_path / "output.log").read_text() == "before \\ud800 after\n"
