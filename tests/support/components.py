"""Real components for the tests and benchmarks: a redis-server on a free port, the reference MCP servers.

Everything here starts the real program installed by tests/setup/install.sh; nothing is simulated.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE_ROOT = Path(
    os.environ.get("MCPEXEC_CACHE", Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mcpexec")
)
NPM_BIN = REPO / "tests" / "mcp-servers" / "node_modules" / ".bin"
PY_SERVERS_BIN = CACHE_ROOT / "mcp-servers-py" / "bin"


def built_by(script: str, *args: str) -> Path:
    """What a build script of the repository (`script`, its path; `args`, its arguments) built: the directory it
    prints last. The scripts build from the Go module proxy once and cache outside the work tree, keyed by version."""
    done = subprocess.run(["bash", str(REPO / script), *args], check=True, capture_output=True, text=True)
    return Path(done.stdout.strip().splitlines()[-1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def reference_server_commands(filesystem_root: Path) -> dict[str, list[str]]:
    """The stdio commands of the five reference MCP servers (npm and PyPI)."""
    return {
        "everything": [str(NPM_BIN / "mcp-server-everything"), "stdio"],
        "memory": [str(NPM_BIN / "mcp-server-memory")],
        "filesystem": [str(NPM_BIN / "mcp-server-filesystem"), str(filesystem_root)],
        "time": [str(PY_SERVERS_BIN / "mcp-server-time"), "--local-timezone", "UTC"],
        "git": [str(PY_SERVERS_BIN / "mcp-server-git")],
    }


def processes_with(entry: str, listing: str) -> set[int]:
    """The processes whose NUL-separated /proc/<pid>/<listing> (`cmdline` or `environ`) holds `entry` whole."""
    found = set()
    for path in Path("/proc").glob(f"[0-9]*/{listing}"):
        try:
            if entry.encode() in path.read_bytes().split(b"\0"):
                found.add(int(path.parent.name))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def time_wait_sockets(port: int) -> int:
    """Closed TCP connections to or from `port` still in TIME_WAIT (they stay there for a minute)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            local, remote, state = row.split()[1:4]
            if state == "06" and port in (int(local.rsplit(":", 1)[1], 16), int(remote.rsplit(":", 1)[1], 16)):
                count += 1
    return count


def wait_for_port(port: int, proc: subprocess.Popen[bytes], what: str, timeout: float = 30) -> None:
    """Until something accepts on 127.0.0.1:port; fails fast if `proc` dies first."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start") from None
            time.sleep(0.05)


@contextmanager
def listening(
    command: list[str], port: int, what: str, env: dict[str, str] | None = None, timeout: float = 30
) -> Iterator[subprocess.Popen[bytes]]:
    """`command` run until the block ends, once it accepts on 127.0.0.1:port; its output discarded."""
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc, what, timeout)
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextmanager
def redis_server() -> Iterator[str]:
    """A real redis-server on a free loopback port, no persistence; yields its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed: run `make install`")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="mcpexec-redis-") as tmp:
        command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tmp]
        with listening(command, port, "redis-server", timeout=10):
            yield f"redis://127.0.0.1:{port}/0"


def everything_over_http(port: int) -> contextlib.AbstractContextManager[subprocess.Popen[bytes]]:
    """The reference server-everything over streamable HTTP (the TypeScript SDK's transport) on `port`."""
    command = [str(NPM_BIN / "mcp-server-everything"), "streamableHttp"]
    return listening(command, port, "server-everything", env={**os.environ, "PORT": str(port)})


def demo_over_http(
    port: int, json_response: bool = False
) -> contextlib.AbstractContextManager[subprocess.Popen[bytes]]:
    """Our demo MCP server (mcpexec/demo_server.py) over streamable HTTP on 127.0.0.1:port; answers come as
    server-sent events, or with `json_response` as JSON bodies."""
    command = [sys.executable, "-m", "mcpexec.demo_server", "--http", str(port), *(["--json-response"] * json_response)]
    return listening(command, port, "demo server")
