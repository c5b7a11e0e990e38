"""Skills: reusable functions saved under /skills with a SKILL.md, listed and loaded by later tasks.

Each skill is saved with the gateway's seal (`seal.json`): the tools its writer could call, signed with its code.
Loading runs the code only once the gateway agrees that this task may run it (gateway/tools/skill_seals.py), and
runs exactly the text it checked, read once.
"""

from __future__ import annotations

import ast
import inspect
import json
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
    if not _NAME.fullmatch(name):  # not match: its `$` also matches before a trailing newline
        raise ValueError(f"skill names are lower_snake_case identifiers, got {name!r}")
    return _root() / name


def save_skill(name: str, source: Any, description: str) -> Path:
    """Save a function (or its source text) as skill `name`, with `description` in its SKILL.md."""
    code = source if isinstance(source, str) else inspect.getsource(source)
    ast.parse(code)  # refuse to store something that would not load
    folder = _dir(name)
    seal = client.gateway().request("POST", "/v1/skills/seal", {"name": name, "code": code})
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "skill.py").write_text(code)
    (folder / "seal.json").write_text(json.dumps(seal))
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
    folder = _dir(name)
    path = folder / "skill.py"
    if not path.is_file():
        raise LookupError(f"no skill named {name!r}; list_skills() shows what exists")
    code = path.read_text()
    try:
        seal = json.loads((folder / "seal.json").read_text())
    except (OSError, ValueError):
        raise PermissionError(
            f"skill {name!r} has no seal (saved by hand or before seals): save it from a task"
        ) from None
    # Raises ToolError (403 skill_refused) when this task may not run it; the gateway says why.
    client.gateway().request("POST", "/v1/skills/check", {"name": name, "code": code, "seal": seal})
    module = ModuleType(f"skills.{name}")
    module.__file__ = str(path)
    module.__dict__.update(client.tool_api())
    exec(compile(code, str(path), "exec"), module.__dict__)  # the text the gateway just checked
    return module
