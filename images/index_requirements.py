"""Print the project's dependencies (pyproject.toml) that a package index serves, one per line: all but those this
repository builds (`mcpexec-*`: the PII scanner's extension, native/pii-scan).

    python3 images/index_requirements.py [EXTRA,...] >requirements.txt

(tests/setup/install.sh uses it too, with the extras of its install level.)

An image installs these, then the project with `--no-deps`, and adds the extension's wheel only where it is imported:
the gateway's image, not the operator's (controller and gateway are independent layers: pyproject.toml's import
contracts).
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def index_requirements(extras: list[str]) -> list[str]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    dependencies: list[str] = list(project["dependencies"])
    for extra in extras:
        dependencies += project["optional-dependencies"][extra]
    return [d for d in dependencies if not d.startswith("mcpexec-")]


if __name__ == "__main__":
    print("\n".join(index_requirements([e for e in ",".join(sys.argv[1:]).split(",") if e])))
