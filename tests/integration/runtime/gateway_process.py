"""A gateway in a process of its own (uvicorn serving the gateway app, as `python -m gateway` does), for tests that
kill it, start another on the same address, or make it listen late; its one MCP server is recording_server.py.

`python -m tests.integration.runtime.gateway_process --task NAME --token T --record R (--uds PATH | --port N)
--ready-file READY [--keep-alive S] [--listen-when FILE]`: admits bearer token T as task NAME (server `rec`), as
every replica of a cluster admits a task's token (there, through the API server's TokenReview); waits for FILE to
exist if given (READY.waiting marks that wait), then serves; READY appears once it accepts connections. Tests start
it with `gateway_process()`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from gateway.context import TaskContext
from gateway.core import GatewayBackends, GatewayCore
from gateway.errors import Unauthenticated
from gateway.pii.vault import MemoryVault
from gateway.web.app import create_app
from gateway.web.serving import HTTP
from mcpexec.api.agenttask import AgentTask, parse_agenttask
from mcpexec.api.mcpserver import MCPServerSpec
from tests.support.malformed import agenttask

RECORDING_SERVER = Path(__file__).with_name("recording_server.py")
REPOSITORY = Path(__file__).resolve().parents[3]


def recording_task(name: str, code: str = "print('hello')") -> AgentTask:
    """The task the gateway process admits (by name: its code is the runtime's) and the runtime's task.json."""
    return parse_agenttask(agenttask(name, code=code, mcpServers=["rec"], timeoutSeconds=120))


def recording_spec(record: Path) -> MCPServerSpec:
    return MCPServerSpec(
        transport="stdio",
        command=[sys.executable, str(RECORDING_SERVER)],
        env={"RECORD_FILE": str(record)},
        call_timeout_seconds=120,
    )


@dataclass(frozen=True)
class SharedToken:
    """Admits one bearer token as one task, the same in every gateway process given it."""

    token: str
    context: TaskContext

    async def authenticate(self, token: str) -> TaskContext:
        if token != self.token:
            raise Unauthenticated("invalid token")
        return self.context


async def serve(args: argparse.Namespace) -> None:
    context = TaskContext(task=recording_task(args.task), uid="uid-1", expires_at=time.time() + 600)
    servers = {"rec": recording_spec(args.record)}
    core = GatewayCore(GatewayBackends(SharedToken(args.token, context), lambda: servers, MemoryVault()))
    await core.start()
    config = uvicorn.Config(
        create_app(core),
        uds=args.uds,
        port=args.port or 8000,
        log_level="warning",
        lifespan="off",
        http=HTTP,
        timeout_keep_alive=args.keep_alive,
    )
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve())
    while not server.started:
        if serving.done():
            serving.result()
            raise RuntimeError("uvicorn exited before it started")
        await asyncio.sleep(0.01)
    args.ready_file.touch()
    await serving


@dataclass(frozen=True)
class GatewayProcess:
    process: subprocess.Popen[bytes]
    ready_file: Path
    log: Path

    def wait_ready(self, timeout: float = 60) -> None:
        """Until it accepts connections (with `listen_when`: once that file exists)."""
        self._wait_for(self.ready_file, timeout)

    def wait_waiting(self, timeout: float = 60) -> None:
        """Until it is started and waits for its `listen_when` file, not listening yet."""
        self._wait_for(self.ready_file.with_name(self.ready_file.name + ".waiting"), timeout)

    def _wait_for(self, marker: Path, timeout: float) -> None:
        give_up_at = time.monotonic() + timeout
        while not marker.exists():
            if self.process.poll() is not None or time.monotonic() > give_up_at:
                raise RuntimeError(f"the gateway process did not start: {self.log.read_text()[-2000:]}")
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: no shutdown, its connections reset or closed by the kernel, as a replica's crash."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


@contextmanager
def gateway_process(
    root: Path,
    name: str,
    task: str,
    record: Path,
    token: str,
    *,
    uds: Path | None = None,
    port: int | None = None,
    keep_alive: int = 5,
    listen_when: Path | None = None,
) -> Iterator[GatewayProcess]:
    """A gateway process on `uds` or `port` admitting `token` as `task`; stopped on exit if still up."""
    ready, log = root / f"{name}.ready", root / f"{name}.log"
    command = [sys.executable, "-m", "tests.integration.runtime.gateway_process", "--task", task]
    command += [f"--token={token}", "--record", str(record), "--ready-file", str(ready)]
    command += ["--uds", str(uds)] if uds is not None else ["--port", str(port)]
    command += ["--keep-alive", str(keep_alive)]
    command += ["--listen-when", str(listen_when)] if listen_when is not None else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPOSITORY), os.environ.get("PYTHONPATH", "")])}
    with log.open("wb") as output:
        process = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        yield GatewayProcess(process, ready, log)
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--record", type=Path, required=True)
    parser.add_argument("--ready-file", type=Path, required=True)
    parser.add_argument("--uds")
    parser.add_argument("--port", type=int)
    parser.add_argument("--keep-alive", type=int, default=5)  # uvicorn's default, the gateway's
    parser.add_argument("--listen-when", type=Path)
    args = parser.parse_args()
    if args.listen_when is not None:
        args.ready_file.with_name(args.ready_file.name + ".waiting").touch()
        while not args.listen_when.exists():
            time.sleep(0.05)
    asyncio.run(serve(args))


if __name__ == "__main__":
    main()
