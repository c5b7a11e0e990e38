"""The chart's alerts and dashboard judged by Prometheus' own code: promtool (check rules, test rules), its PromQL
parser (tests/support/promql-names) and the Prometheus server, built once and cached by build-go-tools.sh; the metrics
the operator and the gateway register, read from their real registries; and the rendered alerts' and dashboard's
queries."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from prometheus_client import CollectorRegistry
from pydantic import BaseModel

from controller import metrics as operator_metrics
from gateway.egress.accounting import EgressAccounting
from gateway.telemetry.metrics import GatewayMetrics
from tests.support.components import built_by, free_port, wait_for_port

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


class Prometheus:
    """A real Prometheus server (the cached build) scraping `targets` (job name -> loopback port, as the chart's
    ServiceMonitors name the jobs, each target labelled with the release's namespace) every second, its data in
    `workdir`; queried through its HTTP API."""

    def __init__(self, targets: dict[str, int], workdir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        scrapes = [
            {
                "job_name": job,
                "static_configs": [
                    {"targets": [f"127.0.0.1:{port}"], "labels": {"namespace": GRAFANA_VARIABLES["$namespace"]}}
                ],
            }
            for job, port in targets.items()
        ]
        config = workdir / "prometheus.yml"
        config.write_text(json.dumps({"global": {"scrape_interval": "1s"}, "scrape_configs": scrapes}))
        self.command = [
            str(tools_dir() / "prometheus"),
            f"--config.file={config}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
        ]
        self._log = workdir / "prometheus.log"

    @contextmanager
    def running(self) -> Iterator[Prometheus]:
        with self._log.open("wb") as log:
            proc = subprocess.Popen(self.command, stdout=log, stderr=log)
            try:
                wait_for_port(self.port, proc, "prometheus", 60)
                while httpx.get(f"{self.url}/-/ready", timeout=10).status_code != 200:  # its storage opened
                    time.sleep(0.2)
                yield self
            finally:
                proc.terminate()
                proc.wait(timeout=30)

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector `expr` evaluates to now; a query Prometheus refuses fails the test with its error."""
        answer = httpx.get(f"{self.url}/api/v1/query", params={"query": expr}, timeout=30)
        body = answer.json()
        assert answer.status_code == 200 and body["status"] == "success", f"{expr}: {body.get('error', body)}"
        return list(body["data"]["result"])

    def scrapes(self, job: str) -> int:
        """How many times `job`'s target was scraped successfully in the last 10 minutes."""
        found = self.query(f'sum_over_time(up{{job="{job}"}}[10m])')
        return int(float(found[0]["value"][1])) if found else 0
