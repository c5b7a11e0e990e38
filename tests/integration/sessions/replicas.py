"""Gateway replicas over one real redis-server, in this process, with the real session runtime polling one of them:
a cluster's sessions without Kubernetes. Every replica admits the session sandbox's token (as each of a cluster's
replicas does through TokenReview); a caller reaches any replica's broker."""

from __future__ import annotations

import asyncio
import json
import secrets
import tempfile
import threading
import time
from collections.abc import Coroutine, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from gateway.context import TaskContext
from gateway.core import GatewayBackends, GatewayCore
from gateway.executions.broker import ExecutionBroker
from gateway.executions.redis_store import RedisExecutionStore
from gateway.pii.vault import MemoryVault
from gateway.web.app import create_app
from gateway.web.serving import BackgroundServer
from mcpexec.local.sessions import session_task
from tests.integration.runtime.conftest import RuntimeProcess, runtime_root, start_runtime
from tests.integration.runtime.gateway_process import SharedToken
from tests.support.redis_process import RedisProcess
from tests.support.session_api import lines_in

T = TypeVar("T")


class Replica:
    """One gateway replica: the sandbox API on a loopback port, its sessions' executions in Redis at `redis_url`."""

    def __init__(self, redis_url: str, admitted: SharedToken) -> None:
        store = RedisExecutionStore(redis_url)
        self.core = GatewayCore(GatewayBackends(admitted, dict, MemoryVault(), execution_store=store))
        self._http = BackgroundServer(create_app(self.core))
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="replica", daemon=True)
        self.url = ""

    @property
    def broker(self) -> ExecutionBroker:
        return self.core.executions

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """`coro` on this replica's loop, awaited by the test when it likes."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 180) -> T:
        return self.submit(coro).result(timeout=timeout)

    def __enter__(self) -> Replica:
        self._thread.start()
        self.run(self.core.start())
        self.run(self._http.start())
        self.url = f"http://127.0.0.1:{self._http.port}"
        return self

    def __exit__(self, *_exc: object) -> None:
        self.run(self._http.stop())
        self.run(self.core.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)


@dataclass(frozen=True)
class ReplicatedSession:
    """A session whose runtime polls `polled`, callers on `other`, both over `redis`."""

    redis: RedisProcess
    polled: Replica
    other: Replica
    runtime: RuntimeProcess
    scope: str

    @property
    def workspace(self) -> Path:
        return self.runtime.workspace

    def lines_of(self, name: str) -> int:
        """How many lines the session's code wrote to the workspace file `name` (its side effects, counted)."""
        return lines_in(self.workspace / name)


@contextmanager
def replicated_session() -> Iterator[ReplicatedSession]:
    """Redis (kept on disk, so it can come back with its data), two replicas and a session runtime, polling."""
    with RedisProcess() as redis, tempfile.TemporaryDirectory(prefix="mcpexec-rs-") as tmp:
        root = runtime_root(Path(tmp))
        task = session_task([])
        context = TaskContext(task=task, uid=secrets.token_hex(8), expires_at=time.time() + 3600)
        token = secrets.token_urlsafe()
        admitted = SharedToken(token, context)
        with Replica(redis.url, admitted) as polled, Replica(redis.url, admitted) as other:
            runtime = start_runtime(root, task, polled.url, token=token, task_json=json.dumps({"mode": "session"}))
            try:
                other.run(asyncio.wait_for(other.broker.ready(context.scope), 60))
                yield ReplicatedSession(redis, polled, other, runtime, context.scope)
            finally:
                if runtime.process.poll() is None:
                    runtime.process.kill()
                runtime.process.communicate()


def wait_until(condition: Any, what: str, timeout: float = 60) -> None:
    give_up_at = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < give_up_at, f"timed out waiting for {what}"
        time.sleep(0.05)
