"""PII in an embedded resource's base64 `blob` whose media type is text, from a real server: server-everything's
`get-resource-reference` answers a text/plain blob that repeats its `resourceId`, so a card number passed as that
id comes back inside base64, where no detector looks unless the gateway decodes it (issue 17)."""

from __future__ import annotations

import base64
import json

from tests.integration.gateway.conftest import GatewayThread
from tests.support.tasks import make_task

CARD = 4111111111111111  # Luhn-valid, and an integer JavaScript holds exactly


def test_a_text_blob_from_a_tool_comes_back_tokenized(gateway: GatewayThread) -> None:
    with gateway.client_for(make_task("pii-text-blob", ["everything"])) as c:
        answer = c.post(
            "/v1/tools/everything/get-resource-reference/call",
            json={"arguments": {"resourceType": "Blob", "resourceId": CARD}},
        )
    assert answer.status_code == 200, answer.text
    [resource] = [item["resource"] for item in answer.json()["content"] if item["type"] == "resource"]
    assert resource["mimeType"] == "text/plain"
    text = base64.b64decode(resource["blob"], validate=True).decode()
    assert text.startswith("Resource [CREDIT_CARD_1]: This is a base64 blob created at "), text
    assert str(CARD) not in json.dumps(answer.json())
