"""The chart's alerts and dashboard judged by Prometheus' own code: promtool (check rules, test rules) and its PromQL
parser (tests/support/promql-names), built once and cached by build-go-tools.sh; and the metrics the
operator and the gateway register, read from their real registries."""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path

from prometheus_client import CollectorRegistry
from pydantic import BaseModel

from controller import metrics as operator_metrics
from gateway.egress.accounting import EgressAccounting
from gateway.telemetry.metrics import GatewayMetrics
from tests.support.components import built_by

# The samples each metric type exposes, by suffix (prometheus_client's families are named without `_total`).
_SUFFIXES = {"counter": ("_total", "_created"), "gauge": ("",), "histogram": ("_bucket", "_count", "_sum", "_created")}


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
