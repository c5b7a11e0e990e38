"""PII with real components: the Redis vault, the round trip through real tools, and fail-closed behaviour when
Redis goes away mid-run (the detector, tokenizer and in-memory vault alone: tests/unit/gateway/pii/)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import redis

from gateway.pii.vault import RedisVault
from tests.integration.gateway.conftest import GatewayThread, demo_spec, serving
from tests.support.components import redis_server
from tests.support.tasks import make_task


def test_redis_vault_is_scoped_per_task_with_a_ttl(redis_url: str) -> None:
    async def scenario() -> tuple[list[str], list[str], list[str | None], list[str | None]]:
        vault = RedisVault(redis_url)
        try:
            a = await vault.tokens_for("ns/a/1", [("EMAIL", "x@example.com"), ("EMAIL", "y@example.com")], 300)
            b = await vault.tokens_for("ns/b/2", [("EMAIL", "y@example.com")], 300)
            return a, b, await vault.values_for("ns/a/1", a), await vault.values_for("ns/b/2", a)
        finally:
            await vault.close()

    a, b, values_a, values_b = asyncio.run(scenario())
    assert a == ["[EMAIL_1]", "[EMAIL_2]"] and b == ["[EMAIL_1]"]
    assert values_a == ["x@example.com", "y@example.com"] and values_b == ["y@example.com", None]
    client = redis.Redis.from_url(redis_url)
    keys = client.keys("mcpexec:pii:{ns/a/1}:*")
    assert len(keys) == 5 and all(0 < client.ttl(k) <= 300 for k in keys)  # with the chain of mint stamps


def test_pii_round_trip_through_real_tools(gateway: GatewayThread, workdir: Path) -> None:
    """The customer's email is read from one tool tokenized, written to another, and arrives there real."""
    with gateway.client_for(make_task("pii-roundtrip", ["demo", "filesystem"])) as c:
        customer = c.post("/v1/tools/demo/get_customer/call", json={"arguments": {"customer_id": "C001"}}).json()
        text = json.dumps(customer)
        for secret in (
            "alice.martin@example.com",
            "202-555-0143",
            "DE89370400440532013000",
            "4111 1111",
            "123-45-6789",
        ):
            assert secret not in text
        masked = customer["structuredContent"]
        assert masked["email"] == "[EMAIL_1]" and masked["iban"] == "[IBAN_1]" and masked["ssn"] == "[US_SSN_1]"
        body = f"Your IBAN {masked['iban']} is on file. Reply to {masked['email']}."
        sent = c.post(
            "/v1/tools/demo/send_message/call",
            json={"arguments": {"to": masked["email"], "subject": "Account", "body": body}},
        ).json()
        assert sent["structuredContent"]["to"] == "[EMAIL_1]"
        target = workdir / "files" / "note.txt"
        written = c.post(
            "/v1/tools/filesystem/write_file/call",
            json={"arguments": {"path": str(target), "content": f"contact {masked['email']}"}},
        )
        assert written.status_code == 200
        read_back = c.post("/v1/tools/filesystem/read_text_file/call", json={"arguments": {"path": str(target)}})
        assert "contact [EMAIL_1]" in json.dumps(read_back.json())
    last = json.loads((workdir / "outbox.jsonl").read_text().splitlines()[-1])
    assert last["to"] == "alice.martin@example.com"
    assert last["body"] == "Your IBAN DE89370400440532013000 is on file. Reply to alice.martin@example.com."
    assert target.read_text() == "contact alice.martin@example.com"


def test_redis_stopped_mid_run_answers_503_and_leaks_nothing(workdir: Path) -> None:
    with redis_server() as url:
        servers = {"demo": demo_spec(workdir / "outbox-redis-down.jsonl")}
        task = make_task("pii-redis-down", ["demo"])
        with serving(servers, workdir / "gw-redis-down.sock", task, redis_url=url) as (gw, c):
            before = c.post("/v1/tools/demo/get_customer/call", json={"arguments": {"customer_id": "C003"}})
            assert before.status_code == 200 and before.json()["structuredContent"]["email"] == "[EMAIL_1]"
            redis.Redis.from_url(url).shutdown(nosave=True)
            for customer_id in ("C003", "C004"):
                after = c.post("/v1/tools/demo/get_customer/call", json={"arguments": {"customer_id": customer_id}})
                assert after.status_code == 503
                assert after.json()["error"]["code"] == "pii_vault_unavailable"
                assert "@" not in after.text and "IBAN" not in after.text
            search = c.post("/v1/tools/demo/search_customers/call", json={"arguments": {"query": "example"}})
            assert search.status_code == 503 and "@" not in search.text
            with gw.ops_client() as ops:
                assert ops.get("/readyz").status_code == 503
