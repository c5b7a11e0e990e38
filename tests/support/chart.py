"""Rendering the Helm chart with the real helm binary (installed by tests/setup/install.sh)."""

from __future__ import annotations

import subprocess
from typing import Any

import yaml

from tests.support.components import CACHE_ROOT, REPO

CHART = REPO / "charts" / "mcpexec"
HELM = CACHE_ROOT / "k8s-tools-2.2.2" / "helm"


def helm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(HELM), *args], capture_output=True, text=True, check=False)


def render(*args: str) -> list[dict[str, Any]]:
    """Release `rel` in namespace mcpexec-system, CRDs included."""
    done = helm("template", "rel", str(CHART), "--namespace", "mcpexec-system", "--include-crds", *args)
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]
