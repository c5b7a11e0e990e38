"""PII vaults without a store: the in-memory vault's TTL, and a Redis vault with nothing to reach (the real Redis
vault is tests/integration/gateway/test_pii.py's)."""

from __future__ import annotations

import asyncio

import pytest

from gateway.errors import VaultUnavailable
from gateway.pii.vault import MemoryVault, RedisVault


def test_memory_vault_honours_ttl() -> None:
    vault = MemoryVault()
    assert asyncio.run(vault.tokens_for("s", [("EMAIL", "x@example.com")], ttl_seconds=0)) == ["[EMAIL_1]"]
    assert asyncio.run(vault.values_for("s", ["[EMAIL_1]"])) == [None]


def test_vault_errors_are_vault_unavailable() -> None:
    vault = RedisVault("redis://127.0.0.1:1/0", timeout_seconds=0.5)
    with pytest.raises(VaultUnavailable):
        asyncio.run(vault.tokens_for("s", [("EMAIL", "x@example.com")], 60))
