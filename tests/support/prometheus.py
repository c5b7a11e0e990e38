"""The chart's alerts and dashboard judged by Prometheus' own code: promtool (check rules, test rules), its PromQL
parser (tests/support/promql-names) and the Prometheus server, built once and cached by build-go-tools.sh; the metrics
the operator and the gateway register, read from their real registries; and the rendered alerts' and dashboard's
queries."""

from __future__ import annotations

import functools
import json
import re
import subprocess
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry
from pydantic import BaseModel

from controller import metrics as operator_metrics
from gateway.egress.accounting import EgressAccounting
from gateway.telemetry.metrics import GatewayMetrics
from tests.support.components import built_by

# The samples each metric type exposes, by suffix (prometheus_client's families are named without `_total`).
_SUFFIXES = {"counter": ("_total", "_created"), "gauge": ("",), "histogram": ("_bucket", "_count", "_sum", "_created")}
# Grafana's variables, as a query would be sent (the namespace: the scraped targets', the release's).
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$namespace": "mcpexec-system"}


@functools.cache
def tools_dir() -> Path:
    """Where promtool and promql-names are: built (once) if need be."""
    return built_by("tests/support/build-go-tools.sh", "prometheus")


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(tools_dir() / "promtool"), *args], cwd=cwd, capture_output=True, text=True, check=False)


class Selector(BaseModel):
    """One vector selector of a PromQL expression: its metric name ("" when it names none) and matched labels."""

    name: str
    labels: list[str]


def selectors(expressions: list[str]) -> list[list[Selector]]:
    """Each expression's selectors, as Prometheus' parser reads them; an expression it refuses fails the test."""
    done = subprocess.run(
        [str(tools_dir() / "promql-names")],
        input="".join(json.dumps(expr) + "\n" for expr in expressions),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [[Selector.model_validate(s) for s in json.loads(line)] for line in done.stdout.splitlines()]


def _sample_names(registry: CollectorRegistry) -> set[str]:
    return {
        family.name + suffix
        for family in registry.collect()
        if family.name.startswith("mcpexec_")
        for suffix in _SUFFIXES[family.type]
    }


def project_metrics() -> set[str]:
    """Every sample name the operator and the gateway can expose: the registry the operator serves (its metrics
    register there when controller.metrics is imported) and a gateway's own, with the egress proxy's metrics on it
    as gateway/egress/proxy.py adds them."""
    gateway = GatewayMetrics()
    EgressAccounting(gateway.registry)
    return _sample_names(operator_metrics.REGISTRY) | _sample_names(gateway.registry)


def find_rule(docs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """The PrometheusRule of that name among the chart's rendered `docs`."""
    [rule] = [d for d in docs if d["kind"] == "PrometheusRule" and d["metadata"]["name"] == name]
    return rule


def alerts_of(rule: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["alert"]: r for group in rule["spec"]["groups"] for r in group["rules"]}


def dashboard_of(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """The Grafana dashboard's JSON, from its ConfigMap among the chart's rendered `docs` (release `rel`)."""
    [config_map] = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "rel-mcpexec-dashboard"]
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    return dict(json.loads(config_map["data"]["mcpexec.json"]))


def dashboard_queries(dashboard: dict[str, Any]) -> list[str]:
    """Every panel's query and every query variable's, with Grafana's variables as it fills them in."""
    exprs = [t["expr"] for p in dashboard["panels"] if p["type"] != "row" for t in p["targets"]]
    variables = [v["query"]["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    exprs += [re.sub(r"^label_values\((.+), *\w+\)$", r"\1", query) for query in variables]  # its series selector
    filled = []
    for expr in exprs:
        for variable, value in GRAFANA_VARIABLES.items():
            expr = expr.replace(variable, value)
        assert "$" not in expr, expr
        filled.append(expr)
    return filled
