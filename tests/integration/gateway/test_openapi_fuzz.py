"""Schemathesis against the gateway's own OpenAPI spec, with a valid task token, over a real demo server:
no answer is a 500 and every answer matches the spec.

The documented 502/503/504 answers (here: no LLM upstream -> 503) are not server errors, so schemathesis'
generic 5xx check is replaced by "never 500". Hypothesis drives each operation's strategy directly because
schemathesis' pytest plugin does not load under pytest 9."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.openapi import from_url

from tests.integration.gateway.conftest import GatewayThread, demo_spec, start_gateway
from tests.support.tasks import make_task


@pytest.fixture(scope="module")
def fuzzed(workdir: Path) -> Iterator[tuple[GatewayThread, str]]:
    servers = {"demo": demo_spec(workdir / "outbox-fuzz.jsonl")}
    with start_gateway(servers, None) as gw:
        yield gw, gw.token(make_task("fuzz", ["demo"]), ttl_seconds=3600)


def test_no_server_errors_and_answers_match_the_spec(fuzzed: tuple[GatewayThread, str]) -> None:
    gateway, token = fuzzed
    api = from_url(f"{gateway.ops_url}/openapi.json")  # the document is on the ops port, the API on its own
    operations = [result.ok() for result in api.get_all_operations()]
    assert len(operations) == 16  # with POST /v1/traces (the sandbox's spans, docs/contracts.md)
    headers = {"Authorization": f"Bearer {token}"}
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def fuzz(case: schemathesis.Case) -> None:
            response = case.call_and_validate(
                base_url=gateway.base_url, headers=headers, excluded_checks=[not_a_server_error]
            )
            assert response.status_code != 500, response.text

        fuzz()
