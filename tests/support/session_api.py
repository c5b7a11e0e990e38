"""A person's client of the gateway's execute API (`POST /v1/sessions/{namespace}/{name}/execute`), plain and
streaming, for the cluster and e2e tiers and the benches."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

# A snippet that counts its runs (a line in the workspace's ran.log), prints, then waits for the test's `go` (a file
# it removes): a test acts while it runs, and counts how often it ran.
RUNS_UNTIL_GO = """import os, time
with open('ran.log', 'a') as log:
    log.write('ran\\n')
print('started', flush=True)
while not os.path.exists('go'):
    time.sleep(0.05)
os.remove('go')
print('done')"""


def lines_in(path: Path) -> int:
    """How many lines a session's code wrote to `path` (0 if none)."""
    return len(path.read_text().splitlines()) if path.exists() else 0


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
