"""An MCP server (stdio) whose one tool records every call it receives, then waits: a test can count how many
times a call reached a tool, across gateway processes that each start their own copy.

Run: `python -m tests.integration.runtime.recording_server` with `RECORD_FILE` set.
"""

from __future__ import annotations

import os
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("mcpexec-test-recorder")


@server.tool()
def record(label: str, seconds: float = 0.0) -> str:
    """Append `label` to $RECORD_FILE (on disk before this returns or waits), wait `seconds`, answer `label`."""
    with open(os.environ["RECORD_FILE"], "a") as records:
        records.write(label + "\n")
        records.flush()
        os.fsync(records.fileno())
    time.sleep(seconds)
    return label


def records(path: str | os.PathLike[str]) -> list[str]:
    """The labels recorded so far, in order."""
    try:
        with open(path) as recorded:
            return recorded.read().splitlines()
    except FileNotFoundError:
        return []


if __name__ == "__main__":
    server.run()
