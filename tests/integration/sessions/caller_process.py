"""A caller of a session's execution in a process of its own, for a test that kills it (SIGKILL) while it waits, as a
gateway replica dies under a caller: `python -m tests.integration.sessions.caller_process REDIS_URL SCOPE ID CODE`
queues CODE as execution ID in the session SCOPE (Redis at REDIS_URL) and waits for its outcome."""

from __future__ import annotations

import asyncio
import sys

from gateway.executions.broker import ExecutionBroker
from gateway.executions.redis_store import RedisExecutionStore


async def main(url: str, scope: str, execution_id: str, code: str) -> None:
    broker = ExecutionBroker(RedisExecutionStore(url), 1 << 20)
    outcome = await broker.execute(scope, code, 120, execution_id=execution_id)
    print(outcome.model_dump_json(by_alias=True), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
