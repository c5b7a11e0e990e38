"""How the GitOps tools judge our objects, by their own code: kstatus (sigs.k8s.io/cli-utils and Flux's fork),
Flux's CEL health evaluator with our healthCheckExprs, and Argo CD's Lua runtime with our health scripts.

The judging program is tests/support/gitops-check (Go), built once and cached by build-go-tools.sh; the scripts
and expressions are the ones shipped in deploy/gitops.
"""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from mcpexec.api.meta import GROUP
from tests.support.components import REPO, built_by

GITOPS = REPO / "deploy" / "gitops"
ARGO_CUSTOMIZATIONS = GITOPS / "argocd" / "resource_customizations"
FLUX_HEALTH_CHECKS = GITOPS / "flux" / "health-checks.yaml"
KINDS = ("AgentTask", "MCPServer")


class Verdict(BaseModel):
    status: str
    message: str = ""
    error: str | None = None


class Judgement(BaseModel):
    """One object as each tool sees it."""

    model_config = ConfigDict(populate_by_name=True)

    kstatus: Verdict
    flux_kstatus: Verdict = Field(alias="fluxKstatus")
    flux: Verdict
    argo: Verdict

    def statuses(self) -> tuple[str, str, str, str]:
        return self.kstatus.status, self.flux_kstatus.status, self.flux.status, self.argo.status


@functools.cache
def tools_dir() -> Path:
    """Where gitops-check and kubeconform are: built (once) if need be."""
    return built_by("tests/support/build-go-tools.sh", "gitops")


def argo_scripts() -> dict[str, str]:
    return {f"{GROUP}/{kind}": (ARGO_CUSTOMIZATIONS / GROUP / kind / "health.lua").read_text() for kind in KINDS}


def flux_health_checks() -> list[dict[str, Any]]:
    kustomization = yaml.safe_load(FLUX_HEALTH_CHECKS.read_text())
    return list(kustomization["spec"]["healthCheckExprs"])


def judge(objects: list[dict[str, Any]]) -> list[Judgement]:
    """Every object judged by every tool, in one run of the judging program."""
    request = {"objects": objects, "argo": argo_scripts(), "flux": flux_health_checks()}
    done = subprocess.run(
        [str(tools_dir() / "gitops-check")], input=json.dumps(request), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    judged = [Judgement.model_validate(item) for item in json.loads(done.stdout)]
    for judgement in judged:
        errors = [
            v.error for v in (judgement.kstatus, judgement.flux_kstatus, judgement.flux, judgement.argo) if v.error
        ]
        assert not errors, errors
    return judged
