"""kubeconform (strict) with the Kubernetes 1.34 schemas that PyPI `kubernetes-validate` ships, and our CRDs' schemas
turned into JSON schemas here (as offline validators and editors consume CRDs: every object that lists its properties
closed to others, unless it keeps unknown fields)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import yaml
from pydantic import BaseModel, ConfigDict, Field

from tests.support.components import REPO
from tests.support.gitops import tools_dir

K8S_VERSION = "1.34.0"
K8S_SCHEMAS = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / f"v{K8S_VERSION}-local-strict"
_DEFINITIONS = "/api/_definitions.json#"


class Result(BaseModel):
    """One resource as kubeconform judged it (`-output json`)."""

    model_config = ConfigDict(populate_by_name=True)

    filename: str
    kind: str
    name: str
    status: str
    msg: str = ""
    validation_errors: list[dict[str, Any]] | None = Field(default=None, alias="validationErrors")


def _closed(schema: dict[str, Any]) -> dict[str, Any]:
    out = dict(schema)
    for key in ("properties", "patternProperties"):
        if key in out:
            out[key] = {name: _closed(child) for name, child in out[key].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = _closed(out["items"])
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = _closed(out["additionalProperties"])
    if (
        "properties" in out
        and "additionalProperties" not in out
        and not out.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and "#/$defs/" in ref:  # from a kind's file (/api/_definitions.json#...) or within
            yield ref.split("#/$defs/", 1)[1]
        for child in node.values():
            yield from _refs(child)
    elif isinstance(node, list):
        for child in node:
            yield from _refs(child)


def write_k8s_schemas(kinds: set[str], directory: Path) -> str:
    """kubernetes-validate's strict 1.34 schemas of `kinds`, each made self-contained: they refer to a shared
    `/api/_definitions.json` that only kubernetes-validate's own resolver knows, so the definitions each one needs are
    copied into it. Returns kubeconform's -schema-location template for them."""
    definitions = json.loads((K8S_SCHEMAS / "_definitions.json").read_text())["$defs"]
    target = directory / f"v{K8S_VERSION}-local-strict"
    target.mkdir(parents=True, exist_ok=True)
    for path in K8S_SCHEMAS.glob("*.json"):
        if path.name.split("-", 1)[0] not in kinds:
            continue
        text = path.read_text()
        schema = json.loads(text.replace(_DEFINITIONS, "#"))
        needed, todo = set(), list(_refs(json.loads(text)))
        while todo:
            name = todo.pop()
            if name not in needed:
                needed.add(name)
                todo.extend(_refs(definitions[name]))
        schema["$defs"] = json.loads(json.dumps({n: definitions[n] for n in needed}).replace(_DEFINITIONS, "#"))
        (target / path.name).write_text(json.dumps(schema))
    return str(
        directory
        / "{{ .NormalizedKubernetesVersion }}-local{{ .StrictSuffix }}"
        / "{{ .ResourceKind }}{{ .KindSuffix }}.json"
    )


def write_crd_schemas(directory: Path) -> str:
    """Our CRDs' JSON schemas under `directory`; returns kubeconform's -schema-location template for them."""
    for path in sorted((REPO / "crds").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            schema = _closed(version["schema"]["openAPIV3Schema"])
            schema["properties"] = {
                "apiVersion": {"type": "string", "enum": [f"{group}/{version['name']}"]},
                "kind": {"type": "string", "enum": [kind]},
                "metadata": {"type": "object"},
                **schema["properties"],
            }
            target = directory / group / f"{kind.lower()}_{version['name']}.json"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(schema))
    return str(directory / "{{ .Group }}" / "{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json")


def kubeconform(paths: list[Path], work: Path) -> list[Result]:
    """Every resource in the files `paths`, validated strictly; a missing schema is an error, not a skip."""
    kinds = {
        str(doc["kind"]).lower()
        for path in paths
        for doc in yaml.safe_load_all(path.read_text())
        if isinstance(doc, dict) and "kind" in doc
    }
    command = [
        str(tools_dir() / "kubeconform"), "-strict", "-output", "json", "-verbose", "-kubernetes-version", K8S_VERSION,
        "-schema-location", write_k8s_schemas(kinds, work / "k8s"),
        "-schema-location", write_crd_schemas(work / "crds"),
        *map(str, paths),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return [Result.model_validate(r) for r in json.loads(done.stdout)["resources"]]
