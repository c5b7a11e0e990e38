"""The chart's alerts and Grafana dashboard (docs/observability.md), off by default: the alerts checked and unit-tested
by promtool (every alert fires on its case and stays quiet on another), every query of both parsed by Prometheus'
own parser and naming only metrics the operator's and the gateway's real registries have."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from tests.support.chart import render
from tests.support.prometheus import (
    alerts_of,
    dashboard_of,
    dashboard_queries,
    find_rule,
    project_metrics,
    promtool,
    selectors,
)

ALERT_TESTS = Path(__file__).with_name("alerts_test.yaml")
ALERTS = ["--set", "alerts.enabled=true"]
DASHBOARD = ["--set", "grafanaDashboard.enabled=true"]
# Metrics of others the alerts read: the scrape's own, and kube-state-metrics'.
OTHERS = {"up", "kube_deployment_status_replicas_unavailable"}


def _names(expressions: list[str]) -> set[str]:
    found = [s for selected in selectors(expressions) for s in selected]
    assert all(s.name for s in found), "a selector without a metric name"
    return {s.name for s in found}


def test_nothing_renders_unless_asked() -> None:
    docs = render()
    assert not [d for d in docs if d["kind"] == "PrometheusRule"]
    assert not [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "rel-mcpexec-dashboard"]


def test_the_alerts_pass_promtool_and_their_unit_tests(tmp_path: Path) -> None:
    docs = render(*ALERTS, "--set", "redis.alerts.enabled=true", "--set", "alerts.labels.release=prometheus")
    rule = find_rule(docs, "rel-mcpexec-alerts")
    assert rule["metadata"]["labels"]["release"] == "prometheus"
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rule["spec"]))
    (tmp_path / "vault-rules.yaml").write_text(yaml.safe_dump(find_rule(docs, "rel-mcpexec-pii-vault")["spec"]))
    checked = promtool("check", "rules", "--lint=all", "--lint-fatal", "rules.yaml", "vault-rules.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    shutil.copy(ALERT_TESTS, tmp_path / ALERT_TESTS.name)
    tested = promtool("test", "rules", ALERT_TESTS.name, cwd=tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_every_alert_has_a_case_that_fires_it_and_one_that_does_not() -> None:
    alerts = set(alerts_of(find_rule(render(*ALERTS), "rel-mcpexec-alerts")))
    assert alerts == {
        "MCPExecOperatorDown", "MCPExecOperatorNotReconciling", "MCPExecOperatorReconcileErrors",
        "MCPExecSandboxPoolEmpty", "MCPExecClaimLatencyHigh", "MCPExecGatewayDown", "MCPExecGatewayNotReady",
        "MCPExecGateway5xxRate", "MCPExecSessionStoreUnavailable", "MCPExecPiiScanBacklog",
    }  # fmt: skip
    cases = [case for test in yaml.safe_load(ALERT_TESTS.read_text())["tests"] for case in test["alert_rule_test"]]
    assert {c["alertname"] for c in cases if c["exp_alerts"]} == alerts
    assert {c["alertname"] for c in cases if not c["exp_alerts"]} == alerts


def test_the_alerts_read_only_metrics_that_exist() -> None:
    docs = render(*ALERTS, "--set", "redis.alerts.enabled=true")
    exprs = [a["expr"] for a in alerts_of(find_rule(docs, "rel-mcpexec-alerts")).values()]
    exprs += [a["expr"] for a in alerts_of(find_rule(docs, "rel-mcpexec-pii-vault")).values()]
    ours = {name for name in _names(exprs) if name.startswith("mcpexec_")}
    assert ours <= project_metrics(), ours - project_metrics()
    assert _names(exprs[:10]) - ours <= OTHERS


def test_the_5xx_alert_counts_answers_by_status() -> None:
    """Of the gateway's answers by HTTP status, so every error code with a 5xx status counts, and a bare 500 too."""
    expr = alerts_of(find_rule(render(*ALERTS), "rel-mcpexec-alerts"))["MCPExecGateway5xxRate"]["expr"]
    assert _names([expr]) == {"mcpexec_gateway_http_responses_total"}
    assert re.findall(r'code=~"([^"]+)"', expr) == ["5.."]


@pytest.mark.parametrize(
    "values", [[], ["--set-json", "alerts.thresholds.claimP99Seconds=2.5"]], ids=["defaults", "set"]
)
def test_the_thresholds_are_the_values(values: list[str]) -> None:
    expr = alerts_of(find_rule(render(*ALERTS, *values), "rel-mcpexec-alerts"))["MCPExecClaimLatencyHigh"]["expr"]
    assert expr.rstrip().endswith("> 2.5" if values else "> 5")


def test_every_dashboard_query_parses_and_reads_our_metrics() -> None:
    docs = render(*DASHBOARD, "--set", "grafanaDashboard.annotations.grafana_folder=mcpexec")
    dashboard = dashboard_of(docs)
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    assert {p["title"] for p in dashboard["panels"] if p["type"] == "row"} == {"Operator", "Gateway"}
    assert all(p["targets"] and p["datasource"]["uid"] == "${datasource}" for p in panels)
    names = _names(dashboard_queries(dashboard))
    metrics = project_metrics()
    assert names <= metrics, names - metrics
    # Every metric the two registries have is on some panel.
    families = {re.sub(r"_(total|created|bucket|count|sum)$", "", name) for name in metrics}
    assert families == {re.sub(r"_(total|bucket)$", "", name) for name in names}
