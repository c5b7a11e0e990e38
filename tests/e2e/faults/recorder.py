"""An MCP server on the host that counts the calls it receives: tests/integration/runtime/recording_server.py's
`record(label, seconds)` (on disk before it waits) served over streamable HTTP on the node's address, which the
gateway pods reach, so a test reads from the host how many times a call reached the tool, whichever replica sent it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.e2e.node_network import host_ip
from tests.integration.runtime.recording_server import records
from tests.support.components import REPO, free_port

SERVE = """
import sys
from tests.integration.runtime.recording_server import server
server.run("streamable-http", host=sys.argv[1], port=int(sys.argv[2]))
"""


@dataclass(frozen=True)
class Recorder:
    url: str
    record: Path

    def labels(self) -> list[str]:
        return records(self.record)

    def count(self, label: str) -> int:
        return Counter(self.labels())[label]

    def wait_for(self, label: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while label not in self.labels():
            assert time.monotonic() < deadline, f"no call recorded as {label!r}: {self.labels()}"
            time.sleep(0.05)


@contextmanager
def recorder(directory: Path) -> Iterator[Recorder]:
    host, port = host_ip(), free_port()
    record = directory / "record"
    env = {**os.environ, "RECORD_FILE": str(record), "PYTHONPATH": str(REPO)}
    with (directory / "recorder.log").open("wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-c", SERVE, host, str(port)], stdout=log, stderr=subprocess.STDOUT, env=env
        )
        try:
            deadline = time.monotonic() + 30
            while True:
                assert server.poll() is None, (directory / "recorder.log").read_text()
                try:
                    socket.create_connection((host, port), timeout=1).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, "the recording MCP server did not listen"
                    time.sleep(0.1)
            yield Recorder(f"http://{host}:{port}/mcp", record)
        finally:
            server.terminate()
            try:
                server.wait(timeout=5)
            except subprocess.TimeoutExpired:  # uvicorn waits for the gateways' open streams to close
                server.kill()
                server.wait()
