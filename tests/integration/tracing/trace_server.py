"""An MCP server whose one tool records the trace context each call came with (`params._meta`, and over streamable
HTTP the `traceparent` header), and answers with personal data for the gateway to tokenize.

Run: `python -m tests.integration.tracing.trace_server [--http PORT]` with `RECORD_FILE` set.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("mcpexec-test-trace")
# What the vault will hold once the gateway has tokenized an answer: no span may show any of it.
EMAIL, PHONE = "jane.doe@example.com", "+1 415 555 0143"


@server.tool()
def lookup(customer: str, ctx: Context) -> dict[str, str]:
    """The customer's contact details; records the call's trace context in $RECORD_FILE."""
    request = ctx.request_context.request
    headers = getattr(request, "headers", None)
    record = {
        "customer": customer,
        "meta": dict(ctx.request_context.meta or {}),
        "header": None if headers is None else headers.get("traceparent"),
    }
    with open(os.environ["RECORD_FILE"], "a") as records:
        records.write(json.dumps(record) + "\n")
    return {"customer": customer, "email": EMAIL, "phone": PHONE}


def records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    with open(path) as recorded:
        return [json.loads(line) for line in recorded]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    args = parser.parse_args()
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run()
