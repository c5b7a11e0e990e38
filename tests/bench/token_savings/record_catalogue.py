"""Record a stdio MCP server's `tools/list` (all pages) as a catalogue fixture: how notion.json and playwright.json
were made (github.json is the GitHub server's own tool snapshots; see its `source`).

    npm install @playwright/mcp@0.0.83 @notionhq/notion-mcp-server@2.5.2
    python -m tests.bench.token_savings.record_catalogue playwright "npm @playwright/mcp@0.0.83 ..." \
        node_modules/.bin/playwright-mcp

Definitions only: nothing is called. Listing needs no account (no token, no browser).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from tests.bench.token_savings.catalogues import FOLDER, RecordedCatalogue


def _exchange(proc: subprocess.Popen[str], request: dict[str, Any]) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(request) + "\n")
    proc.stdin.flush()
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("the server closed its output")
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == request["id"]:
            return message


def record(command: list[str]) -> list[dict[str, Any]]:
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "record", "version": "1"}}
        _exchange(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        tools: list[dict[str, Any]] = []
        cursor, ident = None, 2
        while True:
            params = {"cursor": cursor} if cursor else {}
            page = _exchange(proc, {"jsonrpc": "2.0", "id": ident, "method": "tools/list", "params": params})["result"]
            tools += page["tools"]
            cursor, ident = page.get("nextCursor"), ident + 1
            if not cursor:
                return tools
    finally:
        proc.kill()


def main(server: str, source: str, command: list[str]) -> None:
    catalogue = RecordedCatalogue(
        server=server, source=source, recorded="tools/list over stdio (record_catalogue.py)", tools=record(command)
    )
    (FOLDER / f"{server}.json").write_text(catalogue.model_dump_json(indent=1))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
