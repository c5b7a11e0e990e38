"""A hostile task against the PII promise, with real tools and the Redis vault: tokens glued to other text, values
echoed or stored by a tool and read back later, from another gateway replica too. The invariant: no value the
vault holds for a task ever leaves the gateway toward that task (what detection alone would miss is caught by
exact match: gateway/pii/known_values.py)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

from gateway.context import TaskContext
from gateway.pii.protection import DEFAULT_MINIMUM, protection_for
from gateway.pii.tokenizer import PiiTokenizer
from gateway.pii.vault import RedisVault
from tests.integration.gateway.conftest import GatewayThread, demo_spec, serving
from tests.support.tasks import make_task

ALICE = ("alice.martin@example.com", "202-555-0143", "DE89370400440532013000", "123-45-6789")


def _leaks(answer: Any) -> list[str]:
    text = json.dumps(answer, ensure_ascii=False).lower()
    return [secret for secret in ALICE if secret.lower() in text]


def test_glued_and_echoed_tokens_come_back_tokenized(gateway: GatewayThread) -> None:
    with gateway.client_for(make_task("pii-glue", ["demo", "everything", "memory"])) as c:
        customer = c.post("/v1/tools/demo/get_customer/call", json={"arguments": {"customer_id": "C001"}}).json()
        masked = customer["structuredContent"]
        tokens = [masked["email"], masked["phone"], masked["iban"], masked["ssn"]]
        assert not _leaks(customer) and all(t.startswith("[") for t in tokens)
        for token in tokens:
            for message in (f"{token}_", f"x{token}9", f"{token}{token}", f"0{token}0", f"{token}.sig", token):
                echo = c.post("/v1/tools/everything/echo/call", json={"arguments": {"message": message}})
                assert echo.status_code == 200 and not _leaks(echo.json()), message
                assert token in json.dumps(echo.json()), message  # the same token, not a new one
        # Stored by one call, read by another: the memory server holds the raw value in a shape no detector finds.
        entity = {
            "name": "pii-glue-note",
            "entityType": "note",
            "observations": [f"{masked['email']}_and_{tokens[2]}9"],
        }
        made = c.post("/v1/tools/memory/create_entities/call", json={"arguments": {"entities": [entity]}})
        assert made.status_code == 200 and not _leaks(made.json())
        graph = c.post("/v1/tools/memory/open_nodes/call", json={"arguments": {"names": ["pii-glue-note"]}})
        assert graph.status_code == 200 and not _leaks(graph.json())
        assert f"{masked['email']}_and_{tokens[2]}9" in json.dumps(graph.json())
        # Errors after de-tokenizing: the schema error names the caller's own keys and the server's rules only.
        wrong = c.post(
            "/v1/tools/demo/get_customer/call", json={"arguments": {"customer_id": f"{masked['email']}_"} | {"x": 1}}
        )
        assert not _leaks(wrong.json())


def test_another_replica_catches_values_it_never_minted(redis_url: str) -> None:
    """Replica A minted the task's values; replica B (its own tokenizer over its own Redis client) meets one of them
    glued to a word, as a tool that stored it would return it, and tokenizes it all the same."""
    task = make_task("pii-replicas", ["memory"])
    ctx = TaskContext(task=task, uid="uid-replicas", expires_at=2**40)
    protection = protection_for(DEFAULT_MINIMUM, lambda _ctx, _name: None)

    async def scenario() -> tuple[Any, Any, Any]:
        a, b = RedisVault(redis_url), RedisVault(redis_url)
        try:
            replica_a, replica_b = PiiTokenizer(a, 600, protection), PiiTokenizer(b, 600, protection)
            first = await replica_a.tokenize(ctx, {"row": "alice.martin@example.com, 202-555-0143"})
            real = await replica_a.detokenize(ctx, {"note": "[EMAIL_1]_x"})
            return first, real, await replica_b.tokenize(ctx, {"stored": "ALICE.MARTIN@EXAMPLE.COM_x, 202-555-0143"})
        finally:
            await a.close()
            await b.close()

    first, real, later = asyncio.run(scenario())
    assert first == {"row": "[EMAIL_1], [PHONE_1]"}
    assert real == {"note": "alice.martin@example.com_x"}
    assert not _leaks(later) and later["stored"].endswith("_x, [PHONE_1]")


def test_a_task_crafting_slow_scans_does_not_hold_up_another(gateway: GatewayThread) -> None:
    """Task A has a tool echo 6 MB of mixed digits and punctuation (the detector's worst shape found by the
    linear-time test: about 2.5 MB/s, seconds for this value); while A's call is still being scanned, in a worker
    process, task B's calls, small and digit-dense alike, are all answered, and then A's comes back whole.
    Before, A's scan held the event loop (values up to 32 KiB) or the GIL (larger ones) the whole time."""
    crafted = "12 34-56.78/90(12)34 " * 300_000
    a_done = threading.Event()
    a_answer: list[Any] = []

    def task_a() -> None:
        with gateway.client_for(make_task("pii-slow-a", ["everything"])) as c:
            a_answer.append(c.post("/v1/tools/everything/echo/call", json={"arguments": {"message": crafted}}))
        a_done.set()

    thread = threading.Thread(target=task_a)
    thread.start()
    try:
        with gateway.client_for(make_task("pii-slow-b", ["everything"])) as c:
            time.sleep(0.5)  # A's call is in: A's value is being scanned
            answered = 0
            for message in ["hi", "ana@example.org", "1.2.3." * 20, "4111 " * 2000] * 3:
                answer = c.post("/v1/tools/everything/echo/call", json={"arguments": {"message": message}})
                answered += answer.status_code == 200 and "ana@example.org" not in answer.text
            b_finished_first = not a_done.is_set()
    finally:
        thread.join(timeout=120)
    assert answered == 12
    assert b_finished_first
    assert a_answer and a_answer[0].status_code == 200 and "(12)34 12 34" in a_answer[0].text


def test_the_server_owner_denies_an_oracle_tool_no_task_policy_can_allow(workdir: Path) -> None:
    """A substring search over personal data is an oracle (it rebuilds a tokenized email a character at a time):
    its server's owner denies it (`deniedTools`), and a task that allows it by name, or all tools, cannot call,
    find or get a wrapper for it; the server's other tools stay usable."""
    spec = demo_spec(workdir / "outbox-oracle.jsonl").model_copy(update={"denied_tools": ["search_*"]})
    task = make_task("pii-oracle", ["demo"], allow=["demo/search_customers", "demo/get_customer"])
    with serving({"demo": spec}, workdir / "gw-oracle.sock", task) as (_gw, c):
        denied = c.post("/v1/tools/demo/search_customers/call", json={"arguments": {"query": "alice"}})
        assert denied.status_code == 403 and "owner" in denied.json()["error"]["message"]
        assert c.get("/v1/tools", params={"query": "search"}).json()["tools"] == []
        assert "search_customers" not in c.get("/v1/servers/demo/wrappers").json()["module"]
        allowed = c.post("/v1/tools/demo/get_customer/call", json={"arguments": {"customer_id": "C001"}})
        assert allowed.status_code == 200
