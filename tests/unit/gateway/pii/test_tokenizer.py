"""PII tokenization of nested JSON over the in-memory vault: deterministic tokens per task, restored exactly, large
values scanned off the event loop; the vault's values caught wherever they come back; protection that only adds up."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest
from pydantic import ValidationError

from gateway.context import TaskContext
from gateway.errors import UnknownToken, UnreadableTextPayload
from gateway.pii.protection import DEFAULT_MINIMUM, protection_for
from gateway.pii.scanner import ON_LOOP_MAX_CHARS, cheap
from gateway.pii.tokenizer import PiiTokenizer
from gateway.pii.vault import MemoryVault
from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.api.pii import PiiEntity
from tests.support.tasks import make_task


def _ctx(name: str = "pii-unit", pii: dict[str, object] | None = None, servers: list[str] | None = None) -> TaskContext:
    return TaskContext(task=make_task(name, servers or [], pii=pii), uid=f"uid-{name}", expires_at=2**40)


def _tokenizer(
    minimum: frozenset[PiiEntity] = DEFAULT_MINIMUM, servers: dict[str, MCPServerSpec] | None = None
) -> PiiTokenizer:
    known = servers or {}
    return PiiTokenizer(MemoryVault(), 600, protection_for(minimum, lambda _ctx, name: known.get(name)))


def test_tokenizes_nested_json_deterministically_and_restores_it() -> None:
    tokenizer = _tokenizer()
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
    with pytest.raises(UnknownToken, match=r"\[EMAIL_1\], \[EMAIL_2\], \[IP_ADDRESS_1\]: not among"):
        asyncio.run(tokenizer.detokenize(other, masked))  # another task's tokens mean nothing: refused, not sent
    with pytest.raises(ValidationError, match=r"pii\.enabled: false is not allowed"):
        _ctx("pii-off", pii={"enabled": False})


def test_a_large_value_is_scanned_off_the_event_loop() -> None:
    """A whole file full of PII (180 KB, about half a second to scan) does not hold up another task: its small value
    is tokenized while the large one is still being scanned, and both come out right."""
    tokenizer = _tokenizer()
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


def test_the_vaults_values_are_caught_wherever_they_come_back() -> None:
    """A de-tokenized value comes back glued to word characters (`[EMAIL_1]_`), inside a key, upper-cased, or split
    by nothing a detector knows: none of its bytes leave raw, and the task's own tokens stay whole."""
    tokenizer = _tokenizer()
    ctx = _ctx("pii-echo", pii={"customPatterns": [{"name": "WORD", "regex": "EMAIL"}]})
    first = asyncio.run(tokenizer.tokenize(ctx, {"text": "ana.lee@example.org 4111 1111 1111 1111"}))
    assert first == {"text": "[EMAIL_1] [CREDIT_CARD_1]"}
    real = asyncio.run(tokenizer.detokenize(ctx, {"q": "x[EMAIL_1]9", "[EMAIL_1]_": "[CREDIT_CARD_1]0"}))
    assert real == {"q": "xana.lee@example.org9", "ana.lee@example.org_": "4111 1111 1111 11110"}
    echoed = {**real, "upper": "ANA.LEE@EXAMPLE.ORG_", "prompt": "write to [EMAIL_1]"}
    masked = asyncio.run(tokenizer.tokenize(ctx, echoed))
    text = repr(masked)
    assert "ana.lee" not in text.lower() and "4111 1111" not in text
    assert masked["q"] == "x[EMAIL_1]9" and masked["[EMAIL_1]_"] == "[CREDIT_CARD_1]0"
    assert masked["prompt"] == "write to [EMAIL_1]"  # the custom pattern EMAIL cuts no token of the task's
    other = _ctx("pii-echo-other")
    assert asyncio.run(tokenizer.tokenize(other, {"q": "xana.lee@example.org9"})) == {"q": "xana.lee@example.org9"}


def test_a_task_cannot_lower_what_the_gateway_and_its_servers_set() -> None:
    """The minimum applies to a task that lists no entities, a server's declaration to every task that lists the
    server, and a custom pattern (`@`, `.*`) never wins a span from a built-in entity."""
    declaring = MCPServerSpec(
        transport="stdio", command=["x"], pii={"customPatterns": [{"name": "ACCOUNT", "regex": r"ACC-\d{6}"}]}
    )
    tokenizer = _tokenizer(frozenset({PiiEntity.EMAIL}), {"crm": declaring})
    value = {"text": "ana@example.org ACC-123456 +1 202-555-0143"}
    bare = asyncio.run(tokenizer.tokenize(_ctx("pii-bare", pii={"entities": []}), value))
    assert bare == {"text": "[EMAIL_1] ACC-123456 +1 202-555-0143"}
    with_crm = asyncio.run(tokenizer.tokenize(_ctx("pii-crm", servers=["crm"]), value))
    assert with_crm == {"text": "[EMAIL_1] [ACCOUNT_1] +1 202-555-0143"}
    adding = _ctx("pii-adds", pii={"entities": ["PHONE"], "customPatterns": [{"name": "AT", "regex": "@"}]})
    assert asyncio.run(tokenizer.tokenize(adding, value)) == {"text": "[EMAIL_1] ACC-123456 [PHONE_1]"}
    greedy = _ctx("pii-greedy", pii={"customPatterns": [{"name": "ALL", "regex": ".*"}]})
    assert asyncio.run(tokenizer.tokenize(greedy, ["ana@example.org"])) == ["[EMAIL_1]"]


CRAFTED = ["4111 ", "1.", "1 ", "(202) 555-0143 ", "1-", "202-555-0143 ", "123456 x "]


@pytest.mark.parametrize("unit", CRAFTED)
def test_crafted_digit_runs_are_never_scanned_on_the_event_loop(unit: str) -> None:
    """What costs the phone matcher most is digit-dense: from 65 digits on, a value goes to a worker,
    however short it is; prose, keys and records with a few numbers stay on the loop."""
    for repeat in (70, 1000, 6000):
        assert not cheap([unit * repeat]), repeat
    assert not cheap([unit] * 70)  # spread over many strings of one value, too
    assert cheap(["a@b.c " * 4000, "ab:" * 1000, '{"email": "ana@example.org", "phone": "+1 202-555-0143"}'])


def _resource(mime_type: str, blob: str) -> dict[str, Any]:
    return {"type": "resource", "resource": {"uri": "file:///export", "mimeType": mime_type, "blob": blob}}


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_a_text_blob_is_tokenized_and_stays_base64() -> None:
    """A tool answering a CSV as an embedded resource's base64 `blob` does not carry its emails past the gateway;
    the sandbox gets valid base64 of the tokenized text, and the real values back when it sends that on."""
    tokenizer = _tokenizer()
    ctx = _ctx("pii-blob")
    csv = "name,email\nAna,ana@example.org\nBo,bo@example.org\n"
    value = {"content": [_resource("text/csv; charset=utf-8", _b64(csv)), {"type": "text", "text": "ana@example.org"}]}
    masked = asyncio.run(tokenizer.tokenize(ctx, value))
    blob = masked["content"][0]["resource"]["blob"]
    assert base64.b64decode(blob, validate=True).decode() == "name,email\nAna,[EMAIL_1]\nBo,[EMAIL_2]\n"
    assert masked["content"][1]["text"] == "[EMAIL_1]"  # one token per value, in a blob or not
    assert asyncio.run(tokenizer.detokenize(ctx, masked)) == value
    for mime_type in ("application/json", "application/vnd.api+json", "image/svg+xml", "TEXT/PLAIN"):
        resource = asyncio.run(tokenizer.tokenize(ctx, _resource(mime_type, _b64('{"to": "bo@example.org"}'))))
        assert base64.b64decode(resource["resource"]["blob"]) == b'{"to": "[EMAIL_2]"}', mime_type


def test_a_binary_blob_is_left_as_it_is() -> None:
    tokenizer = _tokenizer()
    png = base64.b64encode(b"\x89PNG\r\n\x1a\nana@example.org").decode()
    value = [_resource("image/png", png), {"uri": "file:///no-payload"}]
    assert asyncio.run(tokenizer.tokenize(_ctx("pii-png"), value)) == value


@pytest.mark.parametrize(
    "blob", ["ana@example.org", _b64("ana@example.org")[:-1], base64.b64encode(b"\xff\xfeana@example.org").decode()]
)
def test_a_text_blob_that_cannot_be_read_is_refused(blob: str) -> None:
    """Not base64, cut short, or not UTF-8: the gateway cannot look inside, so nothing of it is passed on."""
    with pytest.raises(UnreadableTextPayload, match=r"'text/plain' is not base64 of UTF-8 text") as refused:
        asyncio.run(_tokenizer().tokenize(_ctx("pii-bad-blob"), _resource("text/plain", blob)))
    assert refused.value.status == 502 and "ana@" not in refused.value.message


def test_only_a_string_is_a_payload() -> None:
    """An object shaped like image content whose `data` is no string is walked like any other value."""
    value = {"type": "image", "mimeType": "image/png", "data": {"email": "ana@example.org"}}
    masked = asyncio.run(_tokenizer().tokenize(_ctx("pii-shape"), value))
    assert masked["data"] == {"email": "[EMAIL_1]"}


def test_phone_regions_add_up_from_the_gateway_its_servers_and_the_task() -> None:
    """A Hungarian national number (`06 20 123 4567`) is outside the default regions: found once the gateway, a server
    the task lists, or the task itself adds HU; an international one is found whatever the regions."""
    value = {"text": "call 06 20 123 4567 or +36 20 123 4567"}
    declaring = MCPServerSpec(transport="stdio", command=["x"], pii={"phoneRegions": ["HU"]})
    default = _tokenizer(servers={"crm": declaring})
    assert asyncio.run(default.tokenize(_ctx("regions-none"), value)) == {"text": "call 06 20 123 4567 or [PHONE_1]"}
    found = {"text": "call [PHONE_1] or [PHONE_2]"}
    assert asyncio.run(default.tokenize(_ctx("regions-task", pii={"phoneRegions": ["HU"]}), value)) == found
    assert asyncio.run(default.tokenize(_ctx("regions-server", servers=["crm"]), value)) == found
    hungarian = PiiTokenizer(
        MemoryVault(), 600, protection_for(DEFAULT_MINIMUM, lambda _c, _n: None, frozenset({"HU"}))
    )
    assert asyncio.run(hungarian.tokenize(_ctx("regions-gateway"), value)) == found
