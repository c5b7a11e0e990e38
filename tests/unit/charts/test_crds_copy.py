"""crds/ is the source of the CRDs; the chart ships a copy (Helm installs its crds/ folder), never edited apart."""

from __future__ import annotations

from tests.support.chart import CHART
from tests.support.components import REPO


def test_chart_crds_are_the_repository_crds() -> None:
    fix = "run `make crds`"
    repo_crds = sorted((REPO / "crds").glob("*.yaml"))
    assert repo_crds
    assert {p.name for p in (CHART / "crds").glob("*.yaml")} == {p.name for p in repo_crds}, fix
    for path in repo_crds:
        assert (CHART / "crds" / path.name).read_text() == path.read_text(), f"{path.name} drifted: {fix}"
