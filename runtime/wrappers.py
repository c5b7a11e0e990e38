"""Generated per-tool wrappers, importable as `servers.<server>.<tool>` (source comes from the gateway)."""

from __future__ import annotations

import sys
from pathlib import Path

from runtime.client import gateway, list_servers
from runtime.contract import python_identifier


def install(workspace: Path) -> list[str]:
    """Write one package per server under <workspace>/generated/servers and put it on sys.path."""
    root = workspace / "generated"
    package = root / "servers"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text('"""Generated MCP tool wrappers, one package per server."""\n')
    names = []
    for server in list_servers():
        module = gateway().request("GET", f"/v1/servers/{server['name']}/wrappers")["module"]
        folder = package / python_identifier(server["name"])
        folder.mkdir(exist_ok=True)
        (folder / "__init__.py").write_text(module)
        names.append(server["name"])
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return names
