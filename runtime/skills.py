"""Skills: reusable functions saved under /skills with a SKILL.md, listed and loaded by later tasks."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import os
import re
from pathlib import Path
from types import ModuleType
from typing import Any

from runtime import client

_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,63}$")


def _root() -> Path:
    return Path(os.environ.get("MCPEXEC_SKILLS", "/skills"))


def _dir(name: str) -> Path:
    if not _NAME.match(name):
        raise ValueError(f"skill names are lower_snake_case identifiers, got {name!r}")
    return _root() / name


def save_skill(name: str, source: Any, description: str) -> Path:
    """Save a function (or its source text) as skill `name`, with `description` in its SKILL.md."""
    code = source if isinstance(source, str) else inspect.getsource(source)
    ast.parse(code)  # refuse to store something that would not load
    folder = _dir(name)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "skill.py").write_text(code)
    (folder / "SKILL.md").write_text(f"# {name}\n\n{description.strip()}\n")
    return folder


def list_skills() -> list[dict[str, str]]:
    """Every saved skill with the first line of its description."""
    root = _root()
    if not root.is_dir():
        return []
    skills = []
    for folder in sorted(p for p in root.iterdir() if (p / "skill.py").is_file()):
        lines = [line for line in (folder / "SKILL.md").read_text().splitlines()[1:] if line.strip()]
        skills.append({"name": folder.name, "description": lines[0] if lines else ""})
    return skills


def load_skill(name: str) -> ModuleType:
    """Import a saved skill as a module; its functions are attributes of it.

    The module starts with the tool API (call_tool, search_tools...) in its globals, as the task had.
    """
    path = _dir(name) / "skill.py"
    if not path.is_file():
        raise LookupError(f"no skill named {name!r}; list_skills() shows what exists")
    spec = importlib.util.spec_from_file_location(f"skills.{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(client.tool_api())
    spec.loader.exec_module(module)
    return module
