"""A person's client of the gateway's execute API (`POST /v1/sessions/{namespace}/{name}/execute`), plain and
streaming, for the cluster and e2e tiers and the benches."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx


def execute(
    http: httpx.Client, url: str, namespace: str, name: str, token: str, code: str, timeout: float = 20
) -> httpx.Response:
    return http.post(
        f"{url}/v1/sessions/{namespace}/{name}/execute",
        json={"code": code, "timeoutSeconds": timeout},
        headers={"Authorization": f"Bearer {token}"},
        timeout=timeout + 40,
    )


def stream(
    http: httpx.Client,
    url: str,
    namespace: str,
    name: str,
    token: str,
    code: str,
    on_line: Callable[[dict[str, Any]], None] = lambda _line: None,
) -> list[dict[str, Any]]:
    """The NDJSON lines of `?stream=true`, each handed to `on_line` as it arrives (the 200 and its type checked)."""
    lines: list[dict[str, Any]] = []
    with http.stream(
        "POST",
        f"{url}/v1/sessions/{namespace}/{name}/execute?stream=true",
        json={"code": code, "timeoutSeconds": 30},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    ) as answer:
        assert answer.status_code == 200, answer.read()
        assert answer.headers["content-type"].startswith("application/x-ndjson")
        for line in answer.iter_lines():
            lines.append(json.loads(line))
            on_line(lines[-1])
    return lines
