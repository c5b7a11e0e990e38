"""`mcpexec run` on hostile or broken input files: exit 2 with a message, never a traceback (nothing runs)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mcpexec.local.cli import main
from mcpexec.local.yaml_files import MAX_FILE_BYTES
from tests.support.malformed import agenttask

GOOD = yaml.safe_dump(agenttask("t", mcpServers=["demo"]))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xfe" + GOOD.encode("utf-16-le"), "is not UTF-8 text"),
        (b"spec: " + b"[" * 50_000 + b"]" * 50_000, "nested too deeply"),
        (("a: " + "{b: " * 5000 + "1" + "}" * 5000).encode(), "nested too deeply"),
        (GOOD.encode() + b"kind: AgentTask\n", "keys given twice: ['kind']"),
        (GOOD.replace("timeoutSeconds: 600", "").encode() + b"x: " + b" " * MAX_FILE_BYTES + b"1\n", "is over"),
        (yaml.safe_dump(agenttask("t", timeoutSeconds="60")).encode(), "spec.timeoutSeconds"),
        (yaml.safe_dump(agenttask("t", timeoutSeconds=True)).encode(), "spec.timeoutSeconds"),
        (
            yaml.safe_dump(agenttask("t", pii={"customPatterns": [{"name": "X", "regex": r"(x+)+\1"}]})).encode(),
            "refused",
        ),
        (b"- just\n- a list\n", "exactly one AgentTask"),
        (b"key: [unclosed\n", "is not valid YAML"),
    ],
    ids=[
        "utf16",
        "deep-lists",
        "deep-maps",
        "duplicate-key",
        "oversized",
        "timeout-str",
        "timeout-bool",
        "regex",
        "list",
        "broken",
    ],
)
def test_bad_task_files_exit_2_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, message: str
) -> None:
    task = tmp_path / "task.yaml"
    task.write_bytes(content)
    assert main(["run", str(task)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mcpexec: ") and message in err, err
    assert "Traceback" not in err


def test_a_servers_file_with_a_key_twice_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task, servers = tmp_path / "task.yaml", tmp_path / "servers.yaml"
    task.write_text(GOOD)
    servers.write_text("servers:\n  demo: {transport: stdio, command: [a]}\n  demo: {transport: stdio, command: [b]}\n")
    assert main(["run", str(task), "--servers", str(servers)]) == 2
    assert "keys given twice: ['demo']" in capsys.readouterr().err
