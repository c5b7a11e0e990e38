"""The MCP servers of a local run: a servers file (`servers: {name: MCPServerSpec}`), or the embedded default."""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path
from typing import Annotated

import yaml
from pydantic import BaseModel, Field

from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.api.meta import DNS1123_LABEL
from mcpexec.local.yaml_files import YamlFileError, load_documents


class ServersFile(BaseModel):
    """The local-mode servers file (docs/contracts.md)."""

    servers: dict[Annotated[str, Field(pattern=DNS1123_LABEL)], MCPServerSpec]


def load_servers_file(path: Path) -> dict[str, MCPServerSpec]:
    """Read and validate a servers file; raises OSError, YamlFileError or pydantic.ValidationError."""
    documents = load_documents(path)
    if len(documents) != 1:
        raise YamlFileError(f"{path} must hold exactly one YAML document, found {len(documents)}")
    return ServersFile.model_validate(documents[0]).servers


def embedded_servers() -> dict[str, MCPServerSpec]:
    """The default without --servers: our demo MCP server, run by this Python."""
    text = resources.files("mcpexec.local").joinpath("servers.yaml").read_text().replace("{python}", sys.executable)
    return ServersFile.model_validate(yaml.safe_load(text)).servers
