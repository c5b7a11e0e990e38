"""What deploy/gitops ships stays in one piece: the argocd-cm form carries the health scripts verbatim, every Argo CD
test case has its fixture, and Flux gets expressions for both kinds."""

from __future__ import annotations

import yaml

from tests.support.gitops import ARGO_CUSTOMIZATIONS, GITOPS, KINDS, argo_scripts, flux_health_checks


def test_the_argocd_cm_form_is_the_health_scripts_verbatim() -> None:
    data = yaml.safe_load((GITOPS / "argocd" / "argocd-cm.yaml").read_text())["data"]
    assert data == {
        f"resource.customizations.health.{key.replace('/', '_')}": script for key, script in argo_scripts().items()
    }


def test_every_argo_test_case_has_its_fixture_and_every_fixture_a_case() -> None:
    for kind in KINDS:
        folder = ARGO_CUSTOMIZATIONS / "mcpexec.dev" / kind
        cases = yaml.safe_load((folder / "health_test.yaml").read_text())["tests"]
        inputs = [case["inputPath"] for case in cases]
        assert sorted(inputs) == sorted(f"testdata/{p.name}" for p in (folder / "testdata").glob("*.yaml"))
        assert {case["healthStatus"]["status"] for case in cases} == {"Progressing", "Healthy", "Degraded"}


def test_flux_has_expressions_for_both_kinds() -> None:
    checks = flux_health_checks()
    assert [(c["apiVersion"], c["kind"]) for c in checks] == [("mcpexec.dev/v1alpha1", k) for k in KINDS]
    assert all({"inProgress", "failed", "current"} <= set(c) for c in checks)
