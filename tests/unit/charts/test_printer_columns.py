"""Every printer column of every CRD reads a field its schema declares (a column on a misspelt path is blank forever,
and neither kubectl nor the API server says so)."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from tests.support.components import REPO

CRDS = sorted((REPO / "crds").glob("*.yaml"))


def _declared(schema: dict[str, Any], json_path: str) -> bool:
    """Whether `json_path` (dotted, with list filters like `[?(@.type=="Succeeded")]`) names a declared field."""
    for name in re.sub(r"\[[^]]*\]", "", json_path).strip(".").split("."):
        schema = schema.get("items", schema)
        properties = schema.get("properties") or {}
        if name not in properties:
            return False
        schema = properties[name]
    return True


@pytest.mark.parametrize("path", CRDS, ids=[p.name for p in CRDS])
def test_every_printer_column_reads_a_declared_field(path: Any) -> None:
    (version,) = yaml.safe_load(path.read_text())["spec"]["versions"]
    schema = version["schema"]["openAPIV3Schema"]
    columns = [c for c in version.get("additionalPrinterColumns", []) if not c["jsonPath"].startswith(".metadata.")]
    assert [c["name"] for c in columns if not _declared(schema, c["jsonPath"])] == []
