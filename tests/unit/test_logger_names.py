"""Every module logs under a name of its own: two modules under one name cannot be told apart in the structured logs
(the `name` field of gateway/telemetry/logs.py)."""

from __future__ import annotations

import ast

from tests.support.components import REPO

PACKAGES = ("mcpexec", "controller", "gateway", "runtime")


def _logger_names() -> dict[str, list[str]]:
    """Logger name -> the modules that log under it (`getLogger("...")`, or `getLogger(__name__)`)."""
    names: dict[str, list[str]] = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            module = ".".join(path.relative_to(REPO).with_suffix("").parts)
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if not (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "getLogger" and node.args):
                    continue
                argument = node.args[0]
                if isinstance(argument, ast.Name) and argument.id == "__name__":
                    names.setdefault(module, []).append(module)
                elif isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                    names.setdefault(argument.value, []).append(module)
    return names


def test_no_two_modules_share_a_logger_name() -> None:
    names = _logger_names()
    assert {"mcpexec.gateway.upstreams", "mcpexec.gateway.sessions", "mcpexec.serve"} <= set(names)
    assert {name: modules for name, modules in names.items() if len(set(modules)) > 1} == {}
