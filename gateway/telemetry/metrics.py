"""Prometheus metrics, in a registry per gateway instance so several in-process gateways never collide."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# The server and tool labels of calls to tools the task's catalog does not have: one series, not one per name.
UNKNOWN_LABEL = "(unknown)"
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class GatewayMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.tool_calls = Counter(
            "mcpexec_gateway_tool_calls",
            "Tool calls by server, tool and outcome (ok, tool_error or an error code).",
            ["server", "tool", "outcome"],
            registry=self.registry,
        )
        self.tool_latency = Histogram(
            "mcpexec_gateway_tool_call_seconds",
            "Tool call latency through the gateway, including PII handling.",
            ["server"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.errors = Counter("mcpexec_gateway_errors", "Error answers by code.", ["code"], registry=self.registry)
        self.http_responses = Counter(
            "mcpexec_gateway_http_responses",
            "HTTP answers of the sandbox and people APIs by route template and status code.",
            ["route", "code"],
            registry=self.registry,
        )
        self.pii_detections = Counter(
            "mcpexec_gateway_pii_detections", "PII entities tokenized, by type.", ["entity"], registry=self.registry
        )
        self.llm_requests = Counter(
            "mcpexec_gateway_llm_requests", "LLM proxy requests by outcome.", ["outcome"], registry=self.registry
        )
        self.llm_tokens = Counter(
            "mcpexec_gateway_llm_tokens", "LLM tokens reported upstream.", ["direction"], registry=self.registry
        )
        self.approvals = Counter(
            "mcpexec_gateway_approvals",
            "Calls held for a person's approval, by event: held, approved, denied, expired, ran (taken to run).",
            ["event"],
            registry=self.registry,
        )
        # Read when scraped (core.py sets its function to the scan pool's count): scans that hold their task's turn
        # and wait for a free worker process. At most one per task, so a backlog is many tasks' scans, not one
        # task's flood (that waits for its own turn, uncounted).
        self.pii_scans_waiting = Gauge(
            "mcpexec_gateway_pii_scans_waiting",
            "PII scans waiting for a free scan worker process (at most one per task).",
            registry=self.registry,
        )
        # A call's two series by its labels: looking them up costs a lock and a few string checks every call.
        self._call_series: dict[tuple[str, str, str], tuple[Counter, Histogram]] = {}

    def count_call(self, server: str, tool: str, outcome: str, seconds: float) -> None:
        """One tool call: its outcome and its latency (labels as `tool_calls` and `tool_latency` have them)."""
        series = self._call_series.get((server, tool, outcome))
        if series is None:
            series = self._call_series[(server, tool, outcome)] = (
                self.tool_calls.labels(server, tool, outcome),
                self.tool_latency.labels(server),
            )
        series[0].inc()
        series[1].observe(seconds)

    def count_pii(self, entity: str, count: int) -> None:
        self.pii_detections.labels(entity).inc(count)
