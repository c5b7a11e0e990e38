"""The tool-call route served by LeanRoute: same answers and same OpenAPI operation as a FastAPI route would give."""

from __future__ import annotations

import pytest

from tests.integration.gateway.conftest import GatewayThread
from tests.support.tasks import make_task

CALL = "/v1/tools/demo/get_customer/call"


@pytest.mark.parametrize(
    ("content", "content_type", "expected"),
    [
        (b"", "application/json", "body: Field required"),
        (b'{"arguments": {"customer_id": "C001"}}', "text/plain", "body: expected a JSON body"),
        (b'{"arguments": {"customer_id": "C001"}}', None, "body: expected a JSON body"),
        (b'{"arguments": {"customer_id": ', "application/json", "body: Invalid JSON"),
        (b'{"arguments": "C001"}', "application/json", "body.arguments: Input should be an object"),
        (b'["C001"]', "application/json", "body: Input should be an object"),
    ],
)
def test_a_bad_body_is_a_precise_422(
    gateway: GatewayThread, content: bytes, content_type: str | None, expected: str
) -> None:
    headers = {} if content_type is None else {"Content-Type": content_type}
    with gateway.client_for(make_task("lean-body", ["demo"])) as c:
        answer = c.post(CALL, content=content, headers=headers)
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["code"] == "invalid_request" and error["message"].startswith(expected), error


def test_json_media_types_and_omitted_nulls(gateway: GatewayThread) -> None:
    with gateway.client_for(make_task("lean-ok", ["demo"])) as c:
        for media in ("application/json", "application/json; charset=utf-8", "application/merge-patch+json"):
            answer = c.post(CALL, content=b'{"arguments": {"customer_id": "C001"}}', headers={"Content-Type": media})
            assert answer.status_code == 200, (media, answer.text)
            assert answer.headers["content-type"] == "application/json"
            assert set(answer.json()) <= {"content", "structuredContent", "isError"}
        empty_arguments = c.post(CALL, json={})
    assert empty_arguments.status_code == 422  # defaults to {}, which the tool's inputSchema refuses
    assert empty_arguments.json()["error"]["code"] == "invalid_arguments"


def test_the_openapi_operation_is_the_one_fastapi_documents(gateway: GatewayThread) -> None:
    """Built from the endpoint's signature like every other route: bearer security, path parameters, body, answers."""
    with gateway.ops_client() as ops:
        spec = ops.get("/openapi.json").json()
    operation = spec["paths"]["/v1/tools/{server}/{tool}/call"]["post"]
    assert operation["security"] == [{"HTTPBearer": []}]
    assert [(p["name"], p["in"], p["required"]) for p in operation["parameters"]] == [
        ("server", "path", True),
        ("tool", "path", True),
    ]
    body = operation["requestBody"]
    assert body["required"] is True
    assert body["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/CallRequest"}
    answer = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert answer == {"$ref": "#/components/schemas/CallResult"}
    assert {"401", "403", "404", "422", "429", "502", "503", "504"} <= set(operation["responses"])
