"""Names and places (PERSON, LOCATION) with the optional Presidio detector: real presidio-analyzer, the real spaCy
model, the real gateway, our demo MCP server and a real Redis vault (the detector alone:
tests/unit/gateway/pii/test_presidio_detector.py)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.gateway.conftest import demo_spec, serving
from tests.support.tasks import make_task

NAMES_AND_PLACES = {"entities": ["EMAIL", "PHONE", "PERSON", "LOCATION"]}


def _customer(client: object, customer_id: str = "C001") -> dict[str, object]:
    answer = client.post(  # type: ignore[attr-defined]
        "/v1/tools/demo/get_customer/call", json={"arguments": {"customer_id": customer_id}}
    )
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def test_names_and_places_are_tokenized_and_restored_for_tools(workdir: Path, redis_url: str) -> None:
    outbox = workdir / "outbox-ner.jsonl"
    task = make_task("ner", ["demo"], pii=NAMES_AND_PLACES)
    with serving({"demo": demo_spec(outbox)}, workdir / "gw-ner.sock", task, redis_url=redis_url, pii_ner=True) as (
        _gw,
        c,
    ):
        customer = _customer(c)
        masked = customer["structuredContent"]
        assert isinstance(masked, dict)
        assert (masked["name"], masked["city"], masked["email"]) == ("[PERSON_1]", "[LOCATION_1]", "[EMAIL_1]")
        assert "Alice" not in json.dumps(customer) and "Boston" not in json.dumps(customer)
        body = f"Dear {masked['name']}, your {masked['city']} office is ready."
        sent = c.post(
            "/v1/tools/demo/send_message/call",
            json={"arguments": {"to": masked["email"], "subject": "Office", "body": body}},
        )
        assert sent.status_code == 200, sent.text
    last = json.loads(outbox.read_text().splitlines()[-1])
    assert last["body"] == "Dear Alice Martin, your Boston office is ready."


def test_off_by_default_names_pass_through(workdir: Path) -> None:
    task = make_task("no-ner", ["demo"])  # the default entities: patterns only
    with serving({"demo": demo_spec(workdir / "outbox-no-ner.jsonl")}, workdir / "gw-no-ner.sock", task) as (_, c):
        masked = _customer(c)["structuredContent"]
    assert isinstance(masked, dict)
    assert (masked["name"], masked["city"], masked["email"]) == ("Alice Martin", "Boston", "[EMAIL_1]")


def test_a_task_asking_for_names_on_a_gateway_without_the_detector_gets_nothing_unmasked(workdir: Path) -> None:
    task = make_task("ner-missing", ["demo"], pii=NAMES_AND_PLACES)
    servers = {"demo": demo_spec(workdir / "outbox-ner-missing.jsonl")}
    with serving(servers, workdir / "gw-ner-missing.sock", task) as (_gw, c):
        answer = c.post("/v1/tools/demo/get_customer/call", json={"arguments": {"customer_id": "C001"}})
    assert answer.status_code == 503
    error = answer.json()["error"]
    assert error["code"] == "pii_detector_unavailable" and "PERSON" in error["message"]
    assert "Alice" not in answer.text and "@" not in answer.text
