"""A real OTLP receiver for the tracing tests: Jaeger's all-in-one (tests/support/build-go-tools.sh trace, built once
and cached), its in-memory storage, an OTLP/HTTP receiver, and its query API to read a trace back."""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.support.components import built_by, free_port, wait_for_port

_CONFIG = """
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics: {{level: none}}
    logs: {{level: warn}}
extensions:
  jaeger_query:
    storage: {{traces: memory}}
    http: {{endpoint: "127.0.0.1:{query}"}}
    grpc: {{endpoint: "127.0.0.1:{query_grpc}"}}
  jaeger_storage:
    backends:
      memory: {{memory: {{max_traces: 10000}}}}
receivers:
  otlp:
    protocols:
      http: {{endpoint: "{host}:{otlp}"}}
exporters:
  jaeger_storage_exporter:
    trace_storage: memory
"""


@dataclass(frozen=True)
class Jaeger:
    otlp_port: int
    query_url: str

    @property
    def otlp_endpoint(self) -> str:
        """OTEL_EXPORTER_OTLP_ENDPOINT for a process on this host."""
        return f"http://127.0.0.1:{self.otlp_port}"

    def trace(self, trace_id: str) -> dict[str, Any] | None:
        """The trace as Jaeger's query API gives it (`spans`, `processes`), or None while it has none of it."""
        answer = httpx.get(f"{self.query_url}/api/traces/{trace_id}", timeout=10)
        if answer.status_code == 404:
            return None
        answer.raise_for_status()
        data = answer.json().get("data") or []
        return data[0] if data else None

    def wait_for(self, trace_id: str, done: Callable[[dict[str, Any]], bool], timeout: float = 60) -> dict[str, Any]:
        """The trace once `done(trace)` holds (spans arrive in batches)."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.trace(trace_id)
            if found is not None and done(found):
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"trace {trace_id} incomplete after {timeout} s: {json.dumps(found)[:3000]}")
            time.sleep(0.3)


@contextmanager
def jaeger(host: str = "127.0.0.1") -> Iterator[Jaeger]:
    """Jaeger, its OTLP receiver listening on `host` (0.0.0.0: the e2e node's pods reach it at the host's address),
    its query API on loopback."""
    binary = built_by("tests/support/build-go-tools.sh", "trace") / "jaeger"
    otlp, query, query_grpc = free_port(), free_port(), free_port()
    with tempfile.TemporaryDirectory(prefix="mcpexec-jaeger-") as tmp:
        config = Path(tmp) / "config.yaml"
        config.write_text(_CONFIG.format(host=host, otlp=otlp, query=query, query_grpc=query_grpc))
        log = (Path(tmp) / "jaeger.log").open("wb")
        proc = subprocess.Popen([str(binary), "--config", str(config)], stdout=log, stderr=log)
        try:
            try:
                wait_for_port(otlp, proc, "jaeger's OTLP receiver", 60)
                wait_for_port(query, proc, "jaeger's query API", 60)
            except RuntimeError as exc:
                raise RuntimeError(f"{exc}: {(Path(tmp) / 'jaeger.log').read_text()[-3000:]}") from None
            yield Jaeger(otlp, f"http://127.0.0.1:{query}")
        finally:
            proc.kill()  # its memory is all it has: nothing to shut down cleanly
            proc.wait(timeout=10)
            log.close()


def spans_by_name(trace: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    named: dict[str, list[dict[str, Any]]] = {}
    for span in trace["spans"]:
        named.setdefault(span["operationName"], []).append(span)
    return named


def parent_of(span: dict[str, Any]) -> str | None:
    """The span id of `span`'s parent (None: a root)."""
    parents = [ref["spanID"] for ref in span.get("references") or [] if ref["refType"] == "CHILD_OF"]
    return parents[0] if parents else None


def tags(span: dict[str, Any]) -> dict[str, Any]:
    return {tag["key"]: tag["value"] for tag in span.get("tags") or []}


def service_of(trace: dict[str, Any], span: dict[str, Any]) -> str:
    return str(trace["processes"][span["processID"]]["serviceName"])


def render(trace: dict[str, Any]) -> str:
    """The trace as an indented tree (parentage), one span a line: name, service, duration in ms, attributes."""
    children: dict[str | None, list[dict[str, Any]]] = {}
    known = {span["spanID"] for span in trace["spans"]}
    for span in sorted(trace["spans"], key=lambda s: s["startTime"]):
        parent = parent_of(span)
        children.setdefault(parent if parent in known else None, []).append(span)
    lines: list[str] = []

    def walk(parent: str | None, depth: int) -> None:
        for span in children.get(parent, []):
            shown = {k: v for k, v in tags(span).items() if k.startswith(("mcpexec.", "http."))}
            attributes = " ".join(f"{k}={v}" for k, v in shown.items())
            service = service_of(trace, span)
            line = f"{'  ' * depth}{span['operationName']} [{service}] {span['duration'] / 1000:.1f} {attributes}"
            lines.append(line.rstrip())
            walk(span["spanID"], depth + 1)

    walk(None, 0)
    return "\n".join(lines)
