"""The runtime against a gateway that breaks its answers on purpose (garbage, half an answer, a close or a reset
after the request): a request that may have run is reported as `gateway_connection_lost` and never sent again, for
every kind of request that is not read-only; a GET is asked again; a long poll keeps its backoff through it all.

The broken gateway is a real server on loopback TCP, answering the runtime (a real `python3 -S -m runtime`) as
each test scripts it, and recording every request it read.
"""

from __future__ import annotations

import json
import socket
import socketserver
import struct
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from mcpexec.api.agenttask import parse_agenttask, runtime_task_config
from tests.integration.runtime.conftest import RuntimeRun, runtime_root, start_runtime
from tests.support.malformed import agenttask

RESET = b"<reset>"  # close with a TCP reset instead of an answer


def answer(status: int, body: Any = None) -> bytes:
    """A complete, well-formed JSON answer (204 when `body` is None)."""
    content = b"" if body is None else json.dumps(body).encode()
    head = f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(content)}\r\n\r\n"
    return head.encode() + content


BROKEN_ANSWERS = {
    "no answer": b"",
    "reset": RESET,
    "garbage": b"SSH-2.0-OpenSSH_9.2p1\r\n",
    "half a head": b"HTTP/1.1 200 OK\r\nContent-Type: appli",
    "half a body": b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"content": [',
    "broken chunks": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    "not json": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 13\r\n\r\n<html>ok</htm",
}
# What the runtime asks before any task code runs: the servers it may use (none here).
NO_SERVERS = {("GET", "/v1/servers"): [answer(200, {"servers": []})]}


class BrokenGateway(socketserver.ThreadingTCPServer):
    """Answers each request with the next of its scripted answers for that method and path (the last one again
    once they run out; 404 for anything unscripted); after a broken answer it closes the connection (with a reset
    for RESET)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, script: dict[tuple[str, str], list[bytes]]) -> None:
        super().__init__(("127.0.0.1", 0), _Exchange)
        self.script = script
        self.requests: list[tuple[str, str]] = []
        self.bodies: list[tuple[str, str, bytes]] = []
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def count(self, method: str, path: str) -> int:
        return self.requests.count((method, path))

    def next_answer(self, method: str, path: str, body: bytes) -> bytes:
        with self._lock:
            seen = self.requests.count((method, path))
            self.requests.append((method, path))
            self.bodies.append((method, path, body))
        answers = self.script.get((method, path)) or [answer(404, {"error": {"code": "not_found", "message": path}})]
        return answers[min(seen, len(answers) - 1)]


class _Exchange(socketserver.StreamRequestHandler):
    server: BrokenGateway

    def handle(self) -> None:
        while request := self.rfile.readline():
            method, target, _version = request.decode().split(" ", 2)
            length = 0
            while (header := self.rfile.readline()) not in (b"\r\n", b""):
                name, _, value = header.decode().partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            body = self.rfile.read(length)
            reply = self.server.next_answer(method, target.partition("?")[0], body)
            if reply == RESET:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
                return
            self.wfile.write(reply)
            self.wfile.flush()
            if reply in BROKEN_ANSWERS.values():
                return


@contextmanager
def broken_gateway(script: dict[tuple[str, str], list[bytes]]) -> Iterator[BrokenGateway]:
    server = BrokenGateway({**NO_SERVERS, **script})
    thread = threading.Thread(target=server.serve_forever, name="broken-gateway", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="module")
def root() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="mcpexec-broken-") as tmp:
        yield runtime_root(Path(tmp))


def _run(root: Path, gateway: BrokenGateway, name: str, config: dict[str, Any], **options: Any) -> RuntimeRun:
    task = parse_agenttask(agenttask(name, mcpServers=["rec"]))
    base = runtime_task_config("default", name, "uid-1", task.spec)
    return start_runtime(
        root, task, gateway.url, token="any", task_json=json.dumps({**base, **config}), **options
    ).wait()


REPORT = """
try:
    {call}
    print("answered")
except ToolError as exc:
    print(exc)
"""


@pytest.mark.parametrize("broken", BROKEN_ANSWERS)
def test_a_tool_call_without_a_complete_answer_is_reported_and_not_sent_again(root: Path, broken: str) -> None:
    call = ("POST", "/v1/tools/rec/record/call")
    with broken_gateway({call: [BROKEN_ANSWERS[broken]]}) as gateway:
        code = REPORT.format(call='call_tool("rec/record", {"label": "x"})')
        run = _run(root, gateway, "call", {"code": code})
    assert run.exit_code == 0, run
    assert run.result["result"].startswith(
        "gateway_connection_lost (502): connection to the gateway was lost during POST /v1/tools/rec/record/call ("
    ), run.result
    assert run.result["result"].endswith("; it may have run and was not resent\n")
    assert gateway.count(*call) == 1


# Every kind of request that is not read-only, through the runtime's own code path for it.
REQUESTS_THAT_MAY_RUN = {
    "model call (ask_llm)": ({"code": REPORT.format(call='ask_llm("hello")')}, "/v1/llm/chat/completions"),
    "skill seal (save_skill)": (
        {"code": REPORT.format(call='save_skill("s", "def f():\\n    return 1\\n", "one")')},
        "/v1/skills/seal",
    ),
    "agent loop's model turn": ({"mode": "prompt", "prompt": "hello"}, "/v1/llm/chat/completions"),
}


@pytest.mark.parametrize("kind", REQUESTS_THAT_MAY_RUN)
def test_no_request_that_may_have_run_is_sent_again(root: Path, kind: str) -> None:
    config, path = REQUESTS_THAT_MAY_RUN[kind]
    with broken_gateway({("POST", path): [BROKEN_ANSWERS["no answer"]]}) as gateway:
        run = _run(root, gateway, "kinds", config)
    said = run.result["result"] if config.get("code") else run.result.get("error", "")
    assert f"gateway_connection_lost (502): connection to the gateway was lost during POST {path} (" in said, run
    assert said.rstrip().endswith("; it may have run and was not resent")
    assert gateway.count("POST", path) == 1


def test_a_sessions_outcome_whose_answer_was_lost_is_posted_again(root: Path) -> None:
    """The outcome post of a session's execution loses its answer: the runtime sends it again (the gateway takes an
    outcome once: docs/contracts.md), and the session goes on to its next poll."""
    execution = {"id": "e1", "code": "print(1)", "timeoutSeconds": 10, "stream": False}
    over = answer(403, {"error": {"code": "no_session", "message": "ended by the test"}})
    script = {
        ("GET", "/v1/session/next"): [answer(200, execution), over],
        ("POST", "/v1/session/executions/e1"): [BROKEN_ANSWERS["half a body"], BROKEN_ANSWERS["reset"], answer(204)],
    }
    with broken_gateway(script) as gateway:
        run = _run(root, gateway, "session", {"mode": "session"})
    assert run.exit_code == 0, run
    assert run.result["result"].startswith("session ended: no_session (403)"), run.result
    assert gateway.count("POST", "/v1/session/executions/e1") == 3


def test_a_session_gives_up_an_outcome_the_gateway_never_takes_after_its_idle_timeout(root: Path) -> None:
    """Every outcome post fails (a lost answer, a store that cannot be reached): the runtime keeps sending it for
    the session's idle timeout (1 s here), then ends the session saying why, never before."""
    execution = {"id": "e2", "code": "print(1)", "timeoutSeconds": 10, "idleTimeoutSeconds": 1}
    unavailable = answer(503, {"error": {"code": "session_store_unavailable", "message": "Redis is away"}})
    script = {
        ("GET", "/v1/session/next"): [answer(200, execution)],
        ("POST", "/v1/session/executions/e2"): [BROKEN_ANSWERS["no answer"], unavailable],
    }
    with broken_gateway(script) as gateway:
        run = _run(root, gateway, "giving-up", {"mode": "session"})
    assert run.exit_code == 1, run
    assert run.result["error"].startswith(
        "gateway: session_store_unavailable (503): the gateway took nothing of execution e2 for 1 s (the session's "
        "idle timeout)"
    ), run.result
    assert gateway.count("POST", "/v1/session/executions/e2") > 2


def test_a_read_only_request_is_asked_again(root: Path) -> None:
    """A GET runs nothing: one whose answer broke is sent again, and the code gets the second answer."""
    listing = ("GET", "/v1/tools")
    tools = answer(200, {"detail": "name", "tools": ["rec/record"], "tokens": 3})
    with broken_gateway({listing: [BROKEN_ANSWERS["garbage"], BROKEN_ANSWERS["reset"], tools]}) as gateway:
        run = _run(root, gateway, "listing", {"code": 'print(search_tools("record", detail="name"))'})
    assert run.exit_code == 0, run
    assert run.result["result"] == "['rec/record']\n"
    assert gateway.count(*listing) == 3


def test_a_pool_sandbox_waits_for_its_task_through_lost_answers_and_errors(root: Path) -> None:
    """The assignment long poll: a lost answer, a 503 and a broken head are each asked again after a backoff,
    then the task runs."""
    assignment = ("GET", "/v1/assignment")
    task = parse_agenttask(agenttask("assigned", code="print('assigned')"))
    config = runtime_task_config("default", "assigned", "uid-2", task.spec)
    unavailable = answer(503, {"error": {"code": "server_unavailable", "message": "starting"}})
    script = {
        assignment: [BROKEN_ANSWERS["no answer"], unavailable, BROKEN_ANSWERS["half a head"], answer(200, config)]
    }
    with broken_gateway(script) as gateway:
        run = _run(root, gateway, "pool", {}, await_assignment=True)
    assert run.exit_code == 0, run
    assert run.result["result"] == "assigned\n"
    assert gateway.count(*assignment) == 4


RESULT_REPORT = ("POST", "/v1/task/result")
REPORT_FAILURES = {
    **{name: BROKEN_ANSWERS[name] for name in ("reset", "no answer", "half a body")},  # it may have arrived
    "refused": answer(503, {"error": {"code": "task_status_unavailable", "message": "the API server is away"}}),
    "not served": answer(404, {"error": {"code": "not_found", "message": "no such route"}}),
}


def test_a_result_taken_by_the_gateway_is_the_termination_messages_document(root: Path) -> None:
    """In a cluster the runtime reports its result to the gateway before it writes its termination message."""
    with broken_gateway({RESULT_REPORT: [answer(204)]}) as gateway:
        run = _run(root, gateway, "reported", {"code": "print(6 * 7)"}, report=True)
    assert (run.exit_code, run.result["result"], run.stderr) == (0, "42\n", ""), run
    (reported,) = [body for method, path, body in gateway.bodies if (method, path) == RESULT_REPORT]
    assert json.loads(reported) == run.result


@pytest.mark.parametrize("failure", REPORT_FAILURES)
def test_a_result_report_is_sent_once_and_the_termination_message_written_whatever_its_answer(
    root: Path, failure: str
) -> None:
    with broken_gateway({RESULT_REPORT: [REPORT_FAILURES[failure]]}) as gateway:
        run = _run(root, gateway, "reported", {"code": "raise ValueError('no')"}, report=True)
    assert run.exit_code == 1 and run.result["phase"] == "Failed", run
    assert "ValueError: no" in run.result["error"]
    assert gateway.count(*RESULT_REPORT) == 1
    assert run.stderr.startswith("runtime: result not reported to the gateway ("), run.stderr


def test_no_result_is_reported_where_it_is_not_asked_nor_for_a_session(root: Path) -> None:
    """Local mode (no MCPEXEC_REPORT_RESULT: the host reads the result file), and an interactive session (no task)."""
    over = answer(403, {"error": {"code": "no_session", "message": "ended by the test"}})
    with broken_gateway({RESULT_REPORT: [answer(204)], ("GET", "/v1/session/next"): [over]}) as gateway:
        local = _run(root, gateway, "local", {"code": "print(1)"})
        session = _run(root, gateway, "session", {"mode": "session"}, report=True)
    assert (local.exit_code, session.exit_code) == (0, 0), (local, session)
    assert gateway.count(*RESULT_REPORT) == 0
