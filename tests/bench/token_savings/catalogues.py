"""The catalogue-size axis: the reference servers alone, and with recorded `tools/list` outputs of widely used
servers (catalogues/*.json, definitions only; each file says where it comes from), served by replay_server.py.

- github: github/github-mcp-server's own tool snapshots (pkg/github/__toolsnaps__, every toolset);
- notion: @notionhq/notion-mcp-server, recorded over stdio by record_catalogue.py;
- playwright: @playwright/mcp, likewise.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from mcpexec.api.mcpserver import MCPServerSpec

FOLDER = Path(__file__).parent / "catalogues"
REFERENCE = ["demo", "everything", "filesystem", "git", "memory", "time"]
# Catalogue name -> the servers a task sees (its mcpServers): the reference servers, ~20k and ~50k tokens of tools.
CATALOGUES: dict[str, list[str]] = {
    "reference": REFERENCE,
    "~20k": [*REFERENCE, "notion"],
    "~50k": [*REFERENCE, "notion", "github", "playwright"],
}


class RecordedCatalogue(BaseModel):
    server: str
    source: str
    recorded: str
    tools: list[dict[str, Any]]

    @classmethod
    def load(cls, path: str | Path) -> RecordedCatalogue:
        return cls.model_validate_json(Path(path).read_text())


def recorded_specs() -> dict[str, MCPServerSpec]:
    """Every recorded catalogue as a server the gateway starts (the replay server over stdio)."""
    specs = {}
    for path in sorted(FOLDER.glob("*.json")):
        catalogue = RecordedCatalogue.load(path)
        specs[catalogue.server] = MCPServerSpec(
            transport="stdio",
            description=f"recorded: {catalogue.source}",
            command=[sys.executable, "-m", "tests.bench.token_savings.replay_server", str(path)],
        )
    return specs


def sources() -> dict[str, str]:
    return {RecordedCatalogue.load(p).server: RecordedCatalogue.load(p).source for p in sorted(FOLDER.glob("*.json"))}
