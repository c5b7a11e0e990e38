"""Issue 31: a vault its store lost, whole or in part, never resolves a token to a value it was not minted for.

Real redis-server processes (flushed, killed and started empty, started again from a snapshot or an append-only
file taken before the last mints, a Sentinel failover to a replica the last writes never reached), the real gateway
and our demo MCP server with its recorded outbox. The sandbox's side is the runtime's own VaultMarks
(runtime/vault_marks.py) over plain HTTP, so the gateway's refusal is seen, not the runtime's."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from runtime.vault_marks import HEADER, TOLD_TWICE, VaultMarks
from tests.integration.gateway.conftest import GatewayThread, demo_spec, start_gateway
from tests.support.redis_nodes import RedisNode, redis_node, sentinel_set, wait_until
from tests.support.scripted_llm import ScriptedLLM
from tests.support.tasks import make_task

ALICE, BOB = "alice.martin@example.com", "bob.okafor@example.net"


class Sandbox:
    """A task's requests with the marks its runtime would send (or none: a request sent before it saw any)."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client
        self.marks = VaultMarks()

    def call(self, tool: str, arguments: dict[str, Any], headers: dict[str, str] | None = None) -> httpx.Response:
        sent = self.marks.headers() if headers is None else headers
        answer = self.client.post(f"/v1/tools/demo/{tool}/call", json={"arguments": arguments}, headers=sent)
        self.marks.observe(answer.headers.get(HEADER), answer.json() if answer.status_code >= 400 else None)
        return answer

    def customer(self, customer_id: str) -> dict[str, Any]:
        answer = self.call("get_customer", {"customer_id": customer_id})
        assert answer.status_code == 200, answer.text
        customer: dict[str, Any] = answer.json()["structuredContent"]
        return customer

    def send(self, to: str, headers: dict[str, str] | None = None) -> httpx.Response:
        return self.call("send_message", {"to": to, "subject": "Your account", "body": f"Dear {to}"}, headers)


def _refused(answer: httpx.Response, code: str) -> None:
    assert answer.status_code == 409, answer.text
    assert answer.json()["error"]["code"] == code, answer.text
    assert ALICE not in answer.text and BOB not in answer.text


def _recipients(outbox: Path) -> list[str]:
    return [json.loads(line)["to"] for line in outbox.read_text().splitlines()] if outbox.exists() else []


@contextmanager
def _task_on(workdir: Path, name: str, redis_url: str) -> Iterator[tuple[GatewayThread, Sandbox, Path]]:
    outbox = workdir / f"outbox-{name}.jsonl"
    gateway = start_gateway({"demo": demo_spec(outbox)}, workdir / f"gw-{name}.sock", redis_url=redis_url)
    with gateway as gw, gw.client_for(make_task(name, ["demo"])) as client:
        yield gw, Sandbox(client), outbox


def _vault_ready(gw: GatewayThread) -> None:
    """Until the gateway reaches its vault again (its store restarted, or failed over)."""
    with gw.ops_client() as ops:
        wait_until("the gateway reaches its vault", lambda: ops.get("/readyz").status_code == 200)


def _restart_empty(node: RedisNode) -> None:
    node.kill()
    node.start()


LOSSES: dict[str, Callable[[RedisNode], None]] = {
    "flushall": lambda node: node.client().flushall(),
    "kill -9, a new empty server on the same port": _restart_empty,
}


@pytest.mark.parametrize("lose", list(LOSSES.values()), ids=list(LOSSES))
def test_the_issue_reproducer_sends_nothing_to_the_wrong_person(
    workdir: Path, lose: Callable[[RedisNode], None]
) -> None:
    """Read C001, lose the vault, read C002, send to C001's token: before, C002's address got the message and the
    sandbox saw success. Now every request that holds a mark is refused (409 vault_lost) and the outbox stays empty,
    even after a sandbox that sent no mark (an older runtime) had C002 minted as [EMAIL_1] in the new vault."""
    name = "loss-" + ("flush" if lose is LOSSES["flushall"] else "kill")
    with redis_node() as node, _task_on(workdir, name, node.url) as (gw, sandbox, outbox):
        alice = sandbox.customer("C001")
        assert alice["email"] == "[EMAIL_1]" and alice["phone"] == "[PHONE_1]"
        lose(node)
        _vault_ready(gw)
        _refused(sandbox.call("get_customer", {"customer_id": "C002"}), "vault_lost")
        _refused(sandbox.send(alice["email"]), "vault_lost")
        unmarked = sandbox.call("get_customer", {"customer_id": "C002"}, headers={})
        assert unmarked.json()["structuredContent"]["email"] == "[EMAIL_1]"  # the same number, another person
        _refused(sandbox.send(alice["email"]), "vault_lost")
        assert sandbox.marks.lost is not None
    assert _recipients(outbox) == []


def test_an_unknown_token_is_refused_not_sent_as_text(workdir: Path) -> None:
    with redis_node() as node, _task_on(workdir, "unknown-token", node.url) as (_gw, sandbox, outbox):
        _refused(sandbox.send("[EMAIL_2]"), "unknown_token")  # nothing seen yet: no mark
        alice = sandbox.customer("C001")  # [EMAIL_1] and [EMAIL_2] (the backup contact in its notes)
        _refused(sandbox.send("[EMAIL_3]"), "unknown_token")
        answer = sandbox.call(
            "send_message", {"to": alice["email"], "subject": "[STEP_1] of [EMAIL_1]", "body": "[EMAIL_99]"}
        )
        _refused(answer, "unknown_token")
        assert "[EMAIL_99]" in answer.json()["error"]["message"]
        sent = sandbox.call("send_message", {"to": alice["email"], "subject": "[STEP_1] done", "body": "[email_1]"})
        assert sent.status_code == 200, sent.text
        assert sandbox.marks.lost is None
    lines = [json.loads(line) for line in outbox.read_text().splitlines()]
    assert lines == [{"to": ALICE, "subject": "[STEP_1] done", "body": "[email_1]"}]  # not a token: text


def _snapshot(node: RedisNode) -> Callable[[], None]:
    """An RDB snapshot of now; the returned step kills the node and starts it again from it."""
    node.client().save()
    saved = node.directory / "snapshot.rdb"
    shutil.copy(node.directory / "dump.rdb", saved)

    def restore() -> None:
        node.kill()
        shutil.copy(saved, node.directory / "dump.rdb")
        node.start()

    return restore


def _append_only_copy(node: RedisNode) -> Callable[[], None]:
    """A copy of the append-only files as they are now (fsynced on every write); the returned step kills the node
    and starts it again from that copy, as if the files had lost what came after."""
    saved = node.directory / "saved-aof"
    shutil.copytree(node.directory / "appendonlydir", saved)

    def restore() -> None:
        node.kill()
        shutil.rmtree(node.directory / "appendonlydir")
        shutil.copytree(saved, node.directory / "appendonlydir")
        node.start()

    return restore


PARTIAL_LOSSES: dict[str, tuple[list[str], Callable[[RedisNode], Callable[[], None]]]] = {
    "rdb snapshot taken before the last mints": ([], _snapshot),
    "append-only file missing the last mints": (["--appendonly", "yes", "--appendfsync", "always"], _append_only_copy),
}


def _after_partial_loss(sandbox: Sandbox, before_loss: dict[str, str], bob: dict[str, Any], outbox: Path) -> None:
    """The counters went back: [EMAIL_3] was Bob's. Sent with the mark it came with, it is refused (the vault's
    chain is shorter). A request sent before the loss (its older mark is still in the chain) may have [EMAIL_3]
    minted again, for Chloé: the runtime sees that place of the chain told twice, and Bob's [EMAIL_3] is still
    refused (that place holds another stamp now). Chloé gets nothing."""
    told = sandbox.marks.headers()
    _refused(sandbox.send(bob["email"]), "vault_lost")
    stale = Sandbox(sandbox.client)  # the same sandbox's knowledge, with a request that left before the loss
    stale.marks.observe(before_loss[HEADER], None)
    stale.marks.observe(told[HEADER], None)
    chloe = stale.call("get_customer", {"customer_id": "C003"}, headers=before_loss)
    assert chloe.status_code == 200 and chloe.json()["structuredContent"]["email"] == bob["email"]
    assert stale.marks.lost == TOLD_TWICE
    _refused(stale.send(bob["email"]), "vault_lost")
    assert _recipients(outbox) == []


@pytest.mark.parametrize("options, save", list(PARTIAL_LOSSES.values()), ids=list(PARTIAL_LOSSES))
def test_a_store_that_went_back_never_hands_a_seen_number_to_another_value(
    workdir: Path, options: list[str], save: Callable[[RedisNode], Callable[[], None]]
) -> None:
    name = "partial-" + ("aof" if options else "rdb")
    with redis_node(*options) as node, _task_on(workdir, name, node.url) as (gw, sandbox, outbox):
        assert sandbox.customer("C001")["email"] == "[EMAIL_1]"
        restore = save(node)
        before_loss = sandbox.marks.headers()
        bob = sandbox.customer("C002")
        assert bob["email"] == "[EMAIL_3]"  # C001 holds two addresses
        restore()
        _vault_ready(gw)
        _after_partial_loss(sandbox, before_loss, bob, outbox)


def test_a_replica_promoted_without_the_last_mints_never_hands_them_out_as_seen(workdir: Path) -> None:
    """A master, its replica and a Sentinel; the gateway reaches the master through the Sentinel (REDIS_URL
    redis+sentinel://). C001's mints reach the replica, C002's do not; the master is killed, the Sentinel promotes
    the replica, the gateway follows it: and refuses the sandbox whose tokens it no longer holds."""
    with sentinel_set() as nodes, _task_on(workdir, "failover", nodes.url) as (gw, sandbox, outbox):
        assert sandbox.customer("C001")["email"] == "[EMAIL_1]"
        wait_until("the replica has C001's mints", nodes.replicated)
        nodes.cut_replica()
        before_loss = sandbox.marks.headers()
        bob = sandbox.customer("C002")
        nodes.fail_over()
        _vault_ready(gw)
        _after_partial_loss(sandbox, before_loss, bob, outbox)


def test_forged_marks_gain_nothing_across_tasks(workdir: Path, redis_url: str) -> None:
    """Task B sends task A's mark: its own vault does not hold it, so B is refused (its own requests only); with its
    own mark, B's [EMAIL_1] is B's customer, never A's, and A goes on unharmed."""
    outbox = workdir / "outbox-forged.jsonl"
    with (
        start_gateway({"demo": demo_spec(outbox)}, workdir / "gw-forged.sock", redis_url=redis_url) as gw,
        gw.client_for(make_task("forged-a", ["demo"])) as a_client,
        gw.client_for(make_task("forged-b", ["demo"])) as b_client,
    ):
        a, b = Sandbox(a_client), Sandbox(b_client)
        assert a.customer("C001")["email"] == "[EMAIL_1]"
        stolen = a.marks.headers()
        _refused(b.send("[EMAIL_1]", headers=stolen), "vault_lost")  # B's vault is empty: A's mark is not in it
        _refused(b.send("[EMAIL_1]"), "unknown_token")  # no mark: B was never given [EMAIL_1]
        assert b.customer("C002")["email"] == "[EMAIL_1]"
        _refused(b.send("[EMAIL_1]", headers=stolen), "vault_lost")
        assert b.send("[EMAIL_1]").status_code == 200
        assert a.send("[EMAIL_1]").status_code == 200
    assert _recipients(outbox) == [BOB, ALICE]


@pytest.mark.parametrize(
    "value",
    ["1:abc", "0:AAAAAAAA", "x" * 8000, "1:AAAAAAAA,BBBBBBBB", "-1:AAAAAAAA", "9" * 13 + ":AAAAAAAA"],
    ids=["short stamp", "zero length", "8000 characters", "a list", "negative", "13 digits"],
)
def test_a_malformed_or_huge_mark_is_refused_before_anything_runs(
    gateway: GatewayThread, workdir: Path, value: str
) -> None:
    before = _recipients(workdir / "outbox.jsonl")
    with gateway.client_for(make_task("marks-malformed", ["demo"])) as c:
        answer = c.post(
            "/v1/tools/demo/send_message/call",
            json={"arguments": {"to": "[EMAIL_1]", "subject": "s", "body": "b"}},
            headers={HEADER: value},
        )
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "invalid_vault_marks"
    assert _recipients(workdir / "outbox.jsonl") == before


def test_a_mark_past_the_request_head_bound_is_refused_by_the_server(gateway: GatewayThread, workdir: Path) -> None:
    """Past the gateway's bound on a request head (bounded_http.py) or its HTTP parser's: refused, nothing runs."""
    before = _recipients(workdir / "outbox.jsonl")
    with gateway.client_for(make_task("marks-huge", ["demo"])) as c:
        answer = c.post(
            "/v1/tools/demo/send_message/call",
            json={"arguments": {"to": "[EMAIL_1]", "subject": "s", "body": "b"}},
            headers={HEADER: "1" * 100_000},
        )
    assert answer.status_code in (400, 431)
    assert _recipients(workdir / "outbox.jsonl") == before


def test_two_marks_are_refused(gateway: GatewayThread) -> None:
    with gateway.client_for(make_task("marks-two", ["demo"])) as c:
        headers = [(HEADER, "1:AAAAAAAA"), (HEADER, "2:BBBBBBBB")]
        answer = c.post("/v1/tools/demo/list_customers/call", json={"arguments": {}}, headers=headers)
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "invalid_vault_marks"


def test_a_streamed_llm_answer_carries_the_chain_and_a_lost_vault_sends_the_model_nothing(workdir: Path) -> None:
    """The model's answer, streamed as events, tells the sandbox the chain like a tool result does; after a loss, a
    request that carries the model's tokens back is refused before it reaches the model."""
    with (
        ScriptedLLM(["I will write to dana@example.org."]) as llm,
        redis_node() as node,
        start_gateway({}, workdir / "gw-llm-marks.sock", redis_url=node.url, llm=llm.upstream("k")) as gw,
        gw.client_for(make_task("llm-marks", [], model="m")) as c,
    ):
        marks = VaultMarks()
        body = {"messages": [{"role": "user", "content": "Whom do you write to?"}], "stream": True}
        streamed = c.post("/v1/llm/chat/completions", json=body)
        assert streamed.status_code == 200 and "[EMAIL_1]" in streamed.text and "dana@" not in streamed.text
        marks.observe(streamed.headers.get(HEADER), None)
        assert marks.headers()[HEADER].startswith("1:")
        node.client().flushall()
        again = {"messages": [{"role": "user", "content": "Write to [EMAIL_1] again"}]}
        _refused(c.post("/v1/llm/chat/completions", json=again, headers=marks.headers()), "vault_lost")
    assert len(llm.requests) == 1
