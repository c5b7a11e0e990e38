"""A session whose vault is lost (issue 31): `mcpexec serve`'s session core over a real redis-server flushed between
two executions, the runtime in session mode as a real subprocess, the demo server's outbox. The execution that would
have sent C001's token on ends the session with a reason starting `vault_lost:`; nothing reaches the tool, and the
session's sandbox ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.errors import NoSession, SessionEnded
from mcpexec.local.sandbox.process import UnsafeProcessSandbox
from mcpexec.local.sessions import LocalSessions
from tests.integration.sessions.conftest import session_servers
from tests.support.redis_nodes import redis_node, wait_until
from tests.support.sessions import SessionsThread


def test_a_session_whose_vault_is_lost_ends_with_the_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPEXEC_HOME", str(tmp_path / "home"))
    with (
        redis_node() as node,
        SessionsThread(LocalSessions(session_servers(tmp_path), UnsafeProcessSandbox(), redis_url=node.url)) as threads,
    ):
        session = threads.claim_ready()
        read = threads.execute(
            session, "c = call_tool('demo/get_customer', {'customer_id': 'C001'})\nprint(c['email'])"
        )
        assert read.error is None and read.stdout == "[EMAIL_1]\n", read.stderr
        node.client().flushall()
        send = "call_tool('demo/send_message', {'to': c['email'], 'subject': 'hi', 'body': 'x'})"
        with pytest.raises(SessionEnded, match=r"^vault_lost: this task's vault no longer holds"):
            threads.execute(session, send)
        with pytest.raises((SessionEnded, NoSession)):
            threads.execute(session, "print('still here')")
        assert session.sandbox is not None
        wait_until("the session's sandbox ended", session.sandbox.done)
    outbox = tmp_path / "outbox.jsonl"
    assert not outbox.exists() or outbox.read_text() == ""
