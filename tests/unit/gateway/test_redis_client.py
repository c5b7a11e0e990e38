"""REDIS_URL, one setting for the vault, the session store and the rate limits (gateway/redis_client.py): a plain
URL is redis-py's, a sentinel URL reaches the master a Sentinel names. Building a client connects to nothing (the
real Sentinel: tests/integration/sessions/test_sentinel_store.py, tests/integration/gateway/test_vault_loss.py)."""

from __future__ import annotations

import asyncio

import pytest
from redis.asyncio.sentinel import SentinelConnectionPool

from gateway.redis_client import connect


def test_a_plain_url_is_redis_pys() -> None:
    client = connect("redis://:secret@vault:6380/2", socket_timeout=1.5)
    kwargs = client.connection_pool.connection_kwargs
    assert (kwargs["host"], kwargs["port"], kwargs["db"], kwargs["password"]) == ("vault", 6380, 2, "secret")
    asyncio.run(client.aclose())


def test_a_sentinel_url_names_the_sentinels_the_master_and_the_passwords() -> None:
    client = connect(
        "rediss+sentinel://:p%40ss@s1:26379,[::1]:26380/vault/3?sentinel_password=sp",
        socket_timeout=1.5,
        decode_responses=True,
    )
    pool = client.connection_pool
    assert isinstance(pool, SentinelConnectionPool) and pool.service_name == "vault"
    kwargs = pool.connection_kwargs
    assert (kwargs["db"], kwargs["password"], kwargs["socket_timeout"], kwargs["decode_responses"]) == (
        3,
        "p@ss",
        1.5,
        True,
    )
    sentinels = [s.connection_pool.connection_kwargs for s in pool.sentinel_manager.sentinels]
    assert [(s["host"], s["port"]) for s in sentinels] == [("s1", 26379), ("::1", 26380)]
    assert all(s["password"] == "sp" and s["socket_timeout"] == 1.5 for s in sentinels)
    assert "SSL" in pool.connection_class.__name__
    asyncio.run(client.aclose())


@pytest.mark.parametrize("url", ["redis+sentinel://s1:26379", "redis+sentinel:///vault", "redis+sentinel://s1/v"])
def test_a_sentinel_url_without_sentinels_or_a_master_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="sentinel"):
        connect(url)
