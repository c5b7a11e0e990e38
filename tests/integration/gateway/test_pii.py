"""PII: the detector on each entity type, tokenization of nested JSON, both vaults, the round trip through real
tools, and fail-closed behaviour when Redis goes away mid-run."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import phonenumbers
import pytest
import redis
from phonenumbers import PhoneMetadata

from gateway.context import TaskContext
from gateway.errors import VaultUnavailable
from gateway.pii.detectors import MIN_PHONE_DIGITS, Detection, PatternDetector, resolve_overlaps
from gateway.pii.tokenizer import ON_LOOP_MAX_CHARS, PiiTokenizer
from gateway.pii.vault import MemoryVault, RedisVault
from mcpexec.api.agenttask import BUILTIN_ENTITIES, CustomPattern, PiiEntity
from tests.integration.gateway.conftest import GatewayThread, demo_spec, make_task, serving
from tests.support.components import redis_server

DETECTOR = PatternDetector(BUILTIN_ENTITIES)


def _found(text: str, detector: PatternDetector = DETECTOR) -> list[tuple[str, str]]:
    return [(d.entity, text[d.start : d.end]) for d in detector.detect(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mail jane.doe+x@mail.example.co.uk now", [("EMAIL", "jane.doe+x@mail.example.co.uk")]),
        ("call +1 202-555-0143 today", [("PHONE", "+1 202-555-0143")]),
        ("or (415) 555-0199", [("PHONE", "(415) 555-0199")]),
        ("card 4111 1111 1111 1111 ok", [("CREDIT_CARD", "4111 1111 1111 1111")]),
        ("card 4111-1111-1111-1111", [("CREDIT_CARD", "4111-1111-1111-1111")]),
        ("ssn 536-90-4399.", [("US_SSN", "536-90-4399")]),
        ("iban DE89370400440532013000", [("IBAN", "DE89370400440532013000")]),
        ("iban GB82 WEST 1234 5698 7654 32 end", [("IBAN", "GB82 WEST 1234 5698 7654 32")]),
        ("from 203.0.113.17:443", [("IP_ADDRESS", "203.0.113.17")]),
        ("v6 2001:db8::42 here", [("IP_ADDRESS", "2001:db8::42")]),
        ("v6 2001:db8:0:0:0:0:2:1 in full", [("IP_ADDRESS", "2001:db8:0:0:0:0:2:1")]),
        ("loopback ::1", [("IP_ADDRESS", "::1")]),
        ("Vienna desk +43 1110 today", [("PHONE", "+43 1110")]),  # 6 digits: the shortest valid number
    ],
)
def test_each_entity_type_is_detected(text: str, expected: list[tuple[str, str]]) -> None:
    assert _found(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "card 4111 1111 1111 1112 fails Luhn",
        "iban DE89370400440532013001 fails its checksum",
        "ssn 000-12-3456 and 666-12-3456 are never issued",
        "version 1.2.3.4.5 and 999.1.1.1 are not addresses",
        "at 12:30:45 on 2024-01-02, order 12345, id C001",
        '[{"created": "2026-11-23 08:27:00"}, {"created": "2026-11-23 08:28:00"}, {"t": "1:2:3:4:5:6:7"}]',
        "not an email: user@localhost",
    ],
)
def test_look_alikes_are_not_detected(text: str) -> None:
    assert _found(text) == []


NUMBER_KINDS = (
    "fixed_line", "mobile", "toll_free", "premium_rate", "shared_cost", "personal_number", "voip", "pager", "uan",
    "voicemail",
)  # fmt: skip


def test_no_valid_phone_number_is_shorter_than_the_detectors_digit_gate() -> None:
    """The detector runs the phone matcher only around runs of at least MIN_PHONE_DIGITS digits: no number that
    phonenumbers' metadata allows (country code + shortest national number of any type) is that short."""
    shortest = min(
        len(str(metadata.country_code)) + length
        for region in phonenumbers.SUPPORTED_REGIONS
        if (metadata := PhoneMetadata.metadata_for_region(region)) is not None
        for desc in (getattr(metadata, kind) for kind in NUMBER_KINDS)
        if desc is not None
        for length in desc.possible_length
        if length > 0
    )
    assert shortest >= MIN_PHONE_DIGITS


FULL_WIDTH_JAPAN = "+81 3-1234-5678".translate({ord(d): 0xFF10 + int(d) for d in "0123456789"})
PHONE_SHAPES = [
    "+1 (650) 253-0000 ext. 1234", "(202) 555-0143", "202.555.0143", "+1 202 555 0143 x 12", "+44 20 7031 3000",
    "020 7031 3000", "+43 1110", "tel:+49-30-1234567;ext=89", "+33 1 23 45 67 89", FULL_WIDTH_JAPAN,
    "[+1] 415 555 2671", "+1\u00a0617\u00a0555\u00a00199", "1-800-FLOWERS", "415-555-2671#99", "+61 2 9374 4000",
    "2024-05-06 12:30:05", "pages 211-227 (2003)", "order 4155552671", "v1.2.3", "12/05/2024", "+1 202 555 01",
    "011 43 1110", "011 44 20 7031 3000", "555-0143", "2026-11-23T06:01:02Z", "1 800 555 0199", "+1 800 555 0199",
    "(+44) 20 7031 3000", "+ 43 1110", "00 43 1110", "\uff0b43 1110", '"2026-11-23T08:27:00+01:00"',
    "2026-11-23 08:27:00+01:00", "202:555:0143", "+1:202:555:0143", "202,555,0143", "202\t555\t0143", "+1_202_555_0143",
    "1-202-555-0143,", "202~555~0143", "\u2010202\u2015555\uff0f0143", "2026/11/23  08:27", "(2026-11-23 08:59",
    "+1 2026-11-23 08:27:00", "20261123 08:27", "2026-11-23 08:60", "2026-11-23 08", "5 2026-11-23 08:27",
]  # fmt: skip
FILLER = ["call", "line", "12:", "the", "no.", "(", ")", "-", "+", "x", "ext", "at", "7", "42", "\n", "\t", "é"]


def test_the_phone_windows_find_exactly_what_the_matcher_finds_in_the_whole_text() -> None:
    """The detector hands phonenumbers' matcher only windows around runs of digits (it was 6 ms for 4 KB of text
    with many small numbers otherwise): on 40,000 random mixes of number shapes and filler it finds exactly the
    spans the matcher finds reading the whole text."""
    rng = random.Random(11)
    phones_only = PatternDetector([PiiEntity.PHONE])
    texts = [
        " ".join(
            rng.choice(PHONE_SHAPES) if rng.random() < 0.3 else rng.choice(FILLER) for _ in range(rng.randint(1, 12))
        )
        for _ in range(40_000)
    ]
    found = 0
    for text in texts:
        whole = [(m.start, m.end) for m in phonenumbers.PhoneNumberMatcher(text, "US", phonenumbers.Leniency.VALID)]
        assert [(d.start, d.end) for d in phones_only.detect(text)] == whole, text
        found += len(whole)
    assert found > 10_000


OTHER_SHAPES = [
    "4111 1111 1111 1111", "4111-1111-1111-1111", "4111111111111111", "3782 822463 10005", "536-90-4399",
    "DE89370400440532013000", "GB82 WEST 1234 5698 7654 32", "203.0.113.17", "10.0.0.1:8080", "2001:db8::42",
    "ana7@example.com", "202.555.0143@mail.org", "4155552671@example.com", "C-2026-000417", "total $7772.84",
]  # fmt: skip


def test_numbers_claimed_by_other_entities_change_no_phone_result() -> None:
    """Phone numbers rank last, so the detector skips the digit runs that lie in a card, IBAN, SSN, IP address,
    email or custom match (they cost the matcher 0.1-0.2 ms each): on 20,000 random mixes of those next to phone
    shapes and filler it finds exactly what ranking the matcher's finds over the whole text below them gives."""
    rng = random.Random(12)
    custom = [CustomPattern(name="CASE", regex=r"C-\d{4}-\d{6}")]
    detector = PatternDetector(BUILTIN_ENTITIES, custom)
    no_phones = PatternDetector([e for e in BUILTIN_ENTITIES if e != PiiEntity.PHONE], custom)
    shapes = PHONE_SHAPES + OTHER_SHAPES
    separators = [" ", ", ", "-", "", " / ", ". "]
    texts = [
        "".join(
            (rng.choice(shapes) if rng.random() < 0.5 else rng.choice(FILLER)) + rng.choice(separators)
            for _ in range(rng.randint(1, 10))
        )
        for _ in range(20_000)
    ]
    phones = skipped = 0
    for text in texts:
        matched = phonenumbers.PhoneNumberMatcher(text, "US", phonenumbers.Leniency.VALID)
        whole = [Detection(m.start, m.end, "PHONE") for m in matched]
        expected = resolve_overlaps([*no_phones.detect(text), *whole])
        assert detector.detect(text) == expected, text
        phones += sum(d.entity == "PHONE" for d in expected)
        skipped += len(whole) - sum(d.entity == "PHONE" for d in expected)
    assert phones > 3_000
    assert skipped > 1_000  # the matcher's numbers that a ranked entity overrides: the case the skipping is for


def test_overlaps_resolve_by_rank_as_defined() -> None:
    """resolve_overlaps only compares a candidate with its neighbours among the kept spans: on 5,000 random ranked
    lists it keeps exactly what comparing each candidate with every kept one keeps."""
    rng = random.Random(13)
    for _ in range(5_000):
        ranked = []
        for _ in range(rng.randint(0, 30)):
            start = rng.randint(0, 60)
            ranked.append(Detection(start, start + rng.randint(1, 12), rng.choice(["EMAIL", "PHONE", "IBAN"])))
        kept: list[Detection] = []
        for candidate in ranked:
            if all(candidate.end <= k.start or candidate.start >= k.end for k in kept):
                kept.append(candidate)
        assert resolve_overlaps(ranked) == sorted(kept), ranked


def test_only_the_tasks_entities_and_its_custom_patterns() -> None:
    detector = PatternDetector([PiiEntity.EMAIL], [CustomPattern(name="CUSTOMER_ID", regex=r"\bC\d{3}\b")])
    text = "C001 alice@example.com +1 202-555-0143 536-90-4399"
    assert _found(text, detector) == [("CUSTOMER_ID", "C001"), ("EMAIL", "alice@example.com")]


def _ctx(name: str = "pii-unit", pii: dict[str, object] | None = None) -> TaskContext:
    return TaskContext(task=make_task(name, [], pii=pii), uid=f"uid-{name}", expires_at=2**40)


def test_tokenizes_nested_json_deterministically_and_restores_it() -> None:
    tokenizer = PiiTokenizer(MemoryVault(), ttl_seconds=600)
    ctx = _ctx()
    value = {
        "content": [
            {"type": "text", "text": "a@example.com wrote to b@example.com, then a@example.com again"},
            {"type": "image", "data": "YUBleGFtcGxlLmNvbQ==", "mimeType": "image/png"},
        ],
        "structuredContent": {"people": [{"email": "b@example.com", "ip": "192.0.2.1"}], "b@example.com": 1},
    }
    masked = asyncio.run(tokenizer.tokenize(ctx, value))
    assert masked["content"][0]["text"] == "[EMAIL_1] wrote to [EMAIL_2], then [EMAIL_1] again"
    assert masked["content"][1] == value["content"][1]  # binary payloads untouched
    assert masked["structuredContent"] == {"people": [{"email": "[EMAIL_2]", "ip": "[IP_ADDRESS_1]"}], "[EMAIL_2]": 1}
    assert asyncio.run(tokenizer.detokenize(ctx, masked)) == value
    other = _ctx("pii-other")
    assert asyncio.run(tokenizer.detokenize(other, masked)) == masked  # another task's tokens mean nothing
    off = _ctx("pii-off", pii={"enabled": False})
    assert asyncio.run(tokenizer.tokenize(off, value)) == value


def test_a_large_value_is_scanned_off_the_event_loop() -> None:
    """A whole file full of PII (180 KB, about half a second to scan) does not hold up another task: its small value
    is tokenized while the large one is still being scanned, and both come out right."""
    tokenizer = PiiTokenizer(MemoryVault(), ttl_seconds=600)
    line = "call +1 202-555-0143 or mail a@example.com, "
    assert len(line) * 4000 > ON_LOOP_MAX_CHARS

    async def both() -> tuple[Any, bool, Any]:
        large = asyncio.create_task(tokenizer.tokenize(_ctx("pii-large"), {"text": line * 4000}))
        await asyncio.sleep(0)  # the large value's scan starts first
        small = await tokenizer.tokenize(_ctx("pii-small"), {"text": "b@example.com"})
        return small, large.done(), await large

    small, large_done_first, large = asyncio.run(both())
    assert small == {"text": "[EMAIL_1]"}
    assert not large_done_first
    assert large == {"text": "call [PHONE_1] or mail [EMAIL_1], " * 4000}


def test_memory_vault_honours_ttl() -> None:
    vault = MemoryVault()
    assert asyncio.run(vault.tokens_for("s", [("EMAIL", "x@example.com")], ttl_seconds=0)) == ["[EMAIL_1]"]
    assert asyncio.run(vault.values_for("s", ["[EMAIL_1]"])) == [None]


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
    assert len(keys) == 3 and all(0 < client.ttl(k) <= 300 for k in keys)


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
        with serving(servers, workdir / "gw-redis-down.sock", task, redis_url=url) as (_gw, c):
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
            assert c.get("/readyz").status_code == 503


def test_vault_errors_are_vault_unavailable() -> None:
    vault = RedisVault("redis://127.0.0.1:1/0", timeout_seconds=0.5)
    with pytest.raises(VaultUnavailable):
        asyncio.run(vault.tokens_for("s", [("EMAIL", "x@example.com")], 60))
