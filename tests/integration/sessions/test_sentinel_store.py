"""The session store and the vault through one REDIS_URL naming a Sentinel (gateway/redis_client.py): real
redis-server processes (a master, its replica, a Sentinel); both follow a failover to the promoted replica."""

from __future__ import annotations

import asyncio

from gateway.errors import SessionStoreUnavailable, VaultUnavailable
from gateway.executions.broker import ExecutionBroker
from gateway.executions.models import ExecutionOutcome
from gateway.executions.redis_store import RedisExecutionStore
from gateway.pii.vault import RedisVault
from tests.support.redis_nodes import sentinel_set, wait_until


async def _round_trip(broker: ExecutionBroker, scope: str, code: str) -> str:
    waiting = asyncio.create_task(broker.execute(scope, code, 5))
    given = await broker.next(scope, 5)
    assert given is not None and given.code == code
    await broker.complete(scope, given.id, ExecutionOutcome(stdout=f"ran {code}"))
    return (await waiting).stdout


async def _answers(broker: ExecutionBroker, vault: RedisVault, scope: str) -> bool:
    try:
        await vault.ping()
        await broker.next(scope, 0)
    except (SessionStoreUnavailable, VaultUnavailable):
        return False
    return True


def test_the_session_store_and_the_vault_follow_a_failover() -> None:
    with sentinel_set() as nodes:

        async def before() -> tuple[str, list[str]]:
            broker, vault = ExecutionBroker(RedisExecutionStore(nodes.url), 1 << 20), RedisVault(nodes.url)
            try:
                broker.open("ns/s/uid-1")
                return await _round_trip(broker, "ns/s/uid-1", "one"), await vault.tokens_for(
                    "ns/s/uid-1", [("EMAIL", "a@example.org")], 600
                )
            finally:
                await broker.close()
                await vault.close()

        ran, tokens = asyncio.run(before())
        assert ran == "ran one" and tokens == ["[EMAIL_1]"]
        wait_until("the replica has it all", nodes.replicated)
        nodes.fail_over()

        async def after() -> tuple[str, list[str | None]]:
            broker, vault = ExecutionBroker(RedisExecutionStore(nodes.url), 1 << 20), RedisVault(nodes.url)
            try:
                broker.open("ns/s/uid-1")
                deadline = asyncio.get_running_loop().time() + 60
                while not await _answers(broker, vault, "ns/s/uid-1"):
                    assert asyncio.get_running_loop().time() < deadline, "the promoted replica never answered"
                    await asyncio.sleep(0.1)
                return await _round_trip(broker, "ns/s/uid-1", "two"), await vault.values_for(
                    "ns/s/uid-1", ["[EMAIL_1]"]
                )
            finally:
                await broker.close()
                await vault.close()

        ran, values = asyncio.run(after())
        assert nodes.master_port() == nodes.replica.port
        assert ran == "ran two" and values == ["a@example.org"]
