"""A task whose vault is lost while it runs (issue 31): the runtime, the real gateway over a real redis-server that
is flushed mid-task, and the demo server's outbox. The task ends Failed with a reason starting `vault_lost:`;
nothing it sends after the loss reaches a tool or the model, whatever its code catches."""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.integration.runtime.conftest import runtime_harness
from tests.support.redis_nodes import RedisNode, redis_node, wait_until
from tests.support.scripted_llm import ScriptedLLM


def _wait_for_the_loss(sync: Path) -> str:
    """Agent code that says it has read, then waits until the test has lost the vault."""
    return (
        f"import os, time\nopen({str(sync / 'read')!r}, 'w').close()\n"
        f"while not os.path.exists({str(sync / 'lost')!r}):\n    time.sleep(0.05)\n"
    )


@contextmanager
def _flushed_once_read(node: RedisNode) -> Iterator[Path]:
    """A directory the task's code and the test meet in: once the code has read, the vault is flushed."""
    with tempfile.TemporaryDirectory(prefix="mcpexec-vault-sync-") as tmp:
        sync = Path(tmp)

        def lose() -> None:
            wait_until("the task read its customer", (sync / "read").exists, timeout=120)
            node.client().flushall()
            (sync / "lost").touch()

        flusher = threading.Thread(target=lose, daemon=True)
        flusher.start()
        yield sync
        flusher.join(timeout=1)


def test_a_code_task_whose_vault_is_lost_ends_failed_and_sends_nothing() -> None:
    with redis_node() as node, runtime_harness(redis_url=node.url) as h, _flushed_once_read(node) as sync:
        code = (
            "alice = call_tool('demo/get_customer', {'customer_id': 'C001'})\n"
            + _wait_for_the_loss(sync)
            + "for name, arguments in [('demo/get_customer', {'customer_id': 'C002'}),\n"
            "                         ('demo/send_message', {'to': alice['email'], 'subject': 's', 'body': 'b'})]:\n"
            "    try:\n"
            "        call_tool(name, arguments)\n"
            "    except ToolError as exc:\n"
            "        print('refused:', exc.code)\n"
            "print('the code went on')\n"
        )
        run = h.run(h.task("vault-lost-code", code=code))
        outbox = h.root / "outbox.jsonl"
        assert not outbox.exists() or outbox.read_text() == ""
    assert run.exit_code == 1, run.result
    assert run.result["phase"] == "Failed"
    assert run.result["error"].startswith("vault_lost: this task's vault no longer holds")
    assert run.result["result"] == "refused: vault_lost\nrefused: vault_lost\nthe code went on\n"


def test_an_agent_whose_vault_is_lost_sends_the_model_nothing_more() -> None:
    with redis_node() as node, _flushed_once_read(node) as sync:
        turn = "```python\nalice = call_tool('demo/get_customer', {'customer_id': 'C001'})\nprint(alice['email'])\n"
        turns = [turn + _wait_for_the_loss(sync) + "```", "```final\nnot reached\n```"]
        with ScriptedLLM(turns) as llm, runtime_harness(llm=llm.upstream("k"), redis_url=node.url) as h:
            run = h.run(h.task("vault-lost-agent", code=None, prompt="Mail Alice", maxTurns=5, model="m"))
    assert run.exit_code == 1, run.result
    assert run.result["phase"] == "Failed" and run.result["error"].startswith("vault_lost: ")
    assert len(llm.requests) == 1  # the turn after the loss, which carried [EMAIL_1] back, never left the gateway
