"""Argo CD's own test cases for our health scripts (resource_customizations/<group>/<kind>/health_test.yaml, the form
Argo CD's repository runs), run in gopher-lua with Argo CD's library set; and the same fixtures as kstatus and Flux's
CEL evaluator read them, so the three tools agree on every state."""

from __future__ import annotations

import pytest
import yaml

from tests.support.gitops import ARGO_CUSTOMIZATIONS, KINDS, judge

# Argo CD's health -> what kstatus (both forks) and Flux's expressions say of the same object. An unreachable MCPServer
# is the one difference: the gateway keeps probing, so kstatus and Flux wait (InProgress) where Argo CD shows it red.
AGREEMENT = {"Progressing": "InProgress", "Healthy": "Current", "Degraded": "Failed"}
UNREACHABLE = "testdata/unreachable.yaml"


@pytest.mark.parametrize("kind", KINDS)
def test_the_health_scripts_pass_their_argo_cd_test_cases(kind: str) -> None:
    folder = ARGO_CUSTOMIZATIONS / "mcpexec.dev" / kind
    cases = yaml.safe_load((folder / "health_test.yaml").read_text())["tests"]
    objects = [yaml.safe_load((folder / case["inputPath"]).read_text()) for case in cases]
    for case, judged in zip(cases, judge(objects), strict=True):
        expected = case["healthStatus"]
        assert (judged.argo.status, judged.argo.message) == (expected["status"], expected["message"]), case["inputPath"]
        other = "InProgress" if case["inputPath"] == UNREACHABLE else AGREEMENT[expected["status"]]
        assert (judged.kstatus.status, judged.flux_kstatus.status, judged.flux.status) == (other,) * 3, case[
            "inputPath"
        ]
