"""Size limits: a request body or a tool result over the gateway's limit is refused with a precise error, and the
gateway goes on serving. Real server-filesystem reads the files; the gateway is real, on its Unix socket."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway.settings import Limits
from mcpexec.api.mcpserver import MCPServerSpec
from tests.integration.gateway.conftest import GatewayThread, serving, start_gateway
from tests.support.components import demo_over_http, free_port, processes_with, reference_server_commands
from tests.support.tasks import make_task

MAX_REQUEST = 64 * 1024
MAX_RESULT = 32 * 1024
CALL = "/v1/tools/filesystem/read_text_file/call"


@pytest.fixture(scope="module")
def files(workdir: Path) -> Path:
    root = workdir / "sized"
    root.mkdir()
    # server-filesystem answers a file's text twice (content and structuredContent): these sizes hold either way.
    (root / "small.txt").write_text("x" * (MAX_RESULT // 4))
    (root / "large.txt").write_text("x" * (MAX_RESULT + 1))
    # Fewer characters than the limit, even twice; more UTF-8 bytes, even once: the limit is on bytes.
    (root / "wide.txt").write_text("€" * 12_000)
    return root


@pytest.fixture(scope="module")
def sized_gateway(files: Path, workdir: Path) -> Iterator[GatewayThread]:
    command = reference_server_commands(files)["filesystem"]
    servers = {"filesystem": MCPServerSpec(transport="stdio", command=command)}
    limits = Limits(max_request_bytes=MAX_REQUEST, max_result_bytes=MAX_RESULT)
    with start_gateway(servers, workdir / "gw-sized.sock", limits=limits) as gw:
        yield gw


def _raw_request(gw: GatewayThread, head: str, chunks: Iterator[bytes]) -> str:
    """Send a request's head, then body chunks only while the gateway has not answered; the answer's status line
    and body. Stopping early shows the gateway answered without waiting for the rest of the body."""
    assert gw.socket_path is not None
    with socket.socket(socket.AF_UNIX) as conn:
        conn.connect(str(gw.socket_path))
        conn.sendall(head.encode())
        conn.settimeout(0.05)
        answer = b""
        for chunk in chunks:
            try:
                answer = conn.recv(65536)
                break
            except TimeoutError:
                pass
            try:
                conn.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):  # answered and closed: the answer is there to read
                break
        conn.settimeout(30)
        while b"\r\n\r\n" not in answer or not answer.endswith(b"}"):
            more = conn.recv(65536)
            if not more:
                break
            answer += more
    return answer.decode()


def _head(gw: GatewayThread, path: str, framing: str, authorized: bool = True) -> str:
    token = gw.token(make_task("sized-raw", ["filesystem"])) if authorized else "forged"
    return (
        f"POST {path} HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\n{framing}\r\n\r\n"
    )


def _forever(chunk: bytes) -> Iterator[bytes]:
    """Far more than the limit, or (an empty chunk) 10 s of waiting: either way the gateway must answer first."""
    for _ in range(200):
        yield chunk


def test_a_declared_body_over_the_limit_is_refused_before_any_of_it_is_sent(sized_gateway: GatewayThread) -> None:
    for path in (CALL, "/v1/llm/chat/completions"):
        head = _head(sized_gateway, path, f"Content-Length: {100 * MAX_REQUEST}")
        answer = _raw_request(sized_gateway, head, _forever(b""))  # nothing of the body is ever sent
        assert answer.startswith("HTTP/1.1 413"), answer
        assert '"code":"request_too_large"' in answer and str(MAX_REQUEST) in answer
    # Refused first for its token, the answer is still the gateway's JSON error, not a plain-text 413.
    forged = _raw_request(sized_gateway, _head(sized_gateway, CALL, "Content-Length: 99999999", False), _forever(b""))
    assert forged.startswith("HTTP/1.1 401") and '"code":"unauthenticated"' in forged, forged


def test_a_chunked_body_is_cut_off_once_it_passes_the_limit(sized_gateway: GatewayThread) -> None:
    head = _head(sized_gateway, CALL, "Transfer-Encoding: chunked")
    piece = b"a" * 8192
    sent = 0

    def chunks() -> Iterator[bytes]:
        nonlocal sent
        for chunk in _forever(b"%x\r\n%s\r\n" % (len(piece), piece)):
            sent += len(piece)
            yield chunk

    answer = _raw_request(sized_gateway, head, chunks())
    assert answer.startswith("HTTP/1.1 413"), answer
    assert '"code":"request_too_large"' in answer
    assert MAX_REQUEST < sent < 100 * MAX_REQUEST  # answered long before the (never finished) body ended


def test_a_body_within_the_limit_is_served(sized_gateway: GatewayThread, files: Path) -> None:
    padding = "p" * (MAX_REQUEST - 1024)  # an unknown argument: the schema lets it through, the tool ignores it
    with sized_gateway.client_for(make_task("sized-ok", ["filesystem"])) as c:
        answer = c.post(CALL, json={"arguments": {"path": str(files / "small.txt"), "pad": padding}})
    assert answer.status_code == 200, answer.text
    assert answer.json()["content"][0]["text"] == "x" * (MAX_RESULT // 4)


def _refused_calls(metrics: str, server: str, tool: str) -> list[float]:
    refused = {"server": server, "tool": tool, "outcome": "result_too_large"}
    return [
        sample.value
        for family in text_string_to_metric_families(metrics)
        for sample in family.samples
        if sample.name == "mcpexec_gateway_tool_calls_total" and sample.labels == refused
    ]


def test_a_stdio_answer_over_the_limit_is_a_502_and_the_server_keeps_running(
    sized_gateway: GatewayThread, files: Path
) -> None:
    with sized_gateway.client_for(make_task("sized-result", ["filesystem"])) as c:
        assert c.post(CALL, json={"arguments": {"path": str(files / "small.txt")}}).status_code == 200
        servers = processes_with(str(files), "cmdline")
        for name in ("large.txt", "wide.txt"):
            answer = c.post(CALL, json={"arguments": {"path": str(files / name)}})
            assert answer.status_code == 502, (name, answer.text)
            error = answer.json()["error"]
            assert error["code"] == "result_too_large"
            assert "filesystem/read_text_file" in error["message"] and str(MAX_RESULT) in error["message"]
            assert "xxx" not in answer.text and "€" not in answer.text
        after = c.post(CALL, json={"arguments": {"path": str(files / "small.txt")}})
        assert after.status_code == 200 and after.json()["content"][0]["text"] == "x" * (MAX_RESULT // 4)
        # Only the one answer was dropped: the same server processes (catalog's and task's) serve on.
        assert servers and processes_with(str(files), "cmdline") == servers
        assert _refused_calls(sized_gateway.metrics(), "filesystem", "read_text_file") == [2.0]


@pytest.mark.parametrize("answers", ["sse", "json"])
def test_streamable_http_answers_up_to_the_limit_pass_and_larger_ones_are_a_502(workdir: Path, answers: str) -> None:
    """The limit is 2 MiB: the first outbox (1.2 MB of text, twice) is over the SDK's own 1 MiB limit on one
    server-sent event, which the gateway raises to its own; the second (2.4 MB) is over the gateway's."""
    port = free_port()
    spec = MCPServerSpec(transport="streamableHttp", url=f"http://127.0.0.1:{port}/mcp")
    limits = Limits(max_result_bytes=2 << 20)
    task = make_task(f"sized-http-{answers}", ["crm"])
    json_response = answers == "json"
    with (
        demo_over_http(port, json_response=json_response),
        serving({"crm": spec}, workdir / f"gw-sized-{answers}.sock", task, limits=limits) as (gw, c),
    ):

        def send(body: str) -> None:
            message = {"to": "ann@example.com", "subject": "large", "body": body}
            raw = json.dumps({"arguments": message}, ensure_ascii=False).encode()  # UTF-8, not \u escapes
            sent = c.post("/v1/tools/crm/send_message/call", content=raw, headers={"Content-Type": "application/json"})
            assert sent.status_code == 200, sent.text

        send("x" * 600_000)
        outbox = c.post("/v1/tools/crm/sent_messages/call", json={"arguments": {}})
        assert outbox.status_code == 200, outbox.text[:500]
        assert outbox.json()["structuredContent"]["result"][0]["body"] == "x" * 600_000
        (owner,) = gw.gateway.core.upstreams.owners()  # this task's connections
        connection = gw.gateway.core.upstreams.connection(owner, "crm")
        generation = connection.generation
        send("€" * 200_000)
        refused = c.post("/v1/tools/crm/sent_messages/call", json={"arguments": {}})
        assert refused.status_code == 502, refused.text[:500]
        error = refused.json()["error"]
        assert error["code"] == "result_too_large" and "crm/sent_messages" in error["message"]
        assert str(2 << 20) in error["message"] and "€" not in refused.text
        send("after")  # the same session: only the one answer was dropped
        assert connection.generation == generation and connection.connected
        assert _refused_calls(gw.metrics(), "crm", "sent_messages") == [1.0]
