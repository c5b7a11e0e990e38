"""A stdio MCP server that answers `tools/list` with a recorded catalogue (catalogues/*.json) and nothing else.

`python -m tests.bench.token_savings.replay_server catalogues/github.json`. The definitions are served exactly as
recorded, so the gateway lists, searches and describes them as it would the real server's; a call is answered with
an error: only the definitions were recorded.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from tests.bench.token_savings.catalogues import RecordedCatalogue


def _answer(request: dict[str, Any], catalogue: RecordedCatalogue) -> dict[str, Any] | None:
    method, ident = request.get("method"), request.get("id")
    if ident is None:
        return None  # a notification
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": request.get("params", {}).get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": f"recorded-{catalogue.server}", "version": "0"},
        }
    elif method == "tools/list":
        result = {"tools": catalogue.tools}
    elif method == "tools/call":
        text = f"{catalogue.server} is a recorded catalogue: only its tool definitions were kept"
        result = {"content": [{"type": "text", "text": text}], "isError": True}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def main(path: str) -> None:
    catalogue = RecordedCatalogue.load(path)
    for line in sys.stdin:
        if not line.strip():
            continue
        answer = _answer(json.loads(line), catalogue)
        if answer is not None:
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1])
