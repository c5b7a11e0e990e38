"""What the scale tier measures the operator in: a simulated cluster (tests/support/kwok_cluster.py) whose API server
audits the operator's own requests, the real operator (`python -m controller`, the chart's defaults) as a user of its
own, and the figures read from both: API requests by verb and resource (the API server's audit log, so nothing the
operator does is missed or guessed), conflicts, server errors, the operator's CPU seconds and peak RSS, and what it
logged at ERROR.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.bench._process_cpu import cpu_seconds
from tests.cluster import kube
from tests.support.components import free_port
from tests.support.control_plane import spawn
from tests.support.kwok_cluster import KwokCluster, kwok_cluster

OPERATOR_USER = "mcpexec-operator"
# Only the operator's requests are audited (Metadata: who, verb, resource, code; no bodies), once each, when answered.
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived", "ResponseStarted"],
    "rules": [{"level": "Metadata", "users": [OPERATOR_USER]}, {"level": "None"}],
}


@dataclass(frozen=True)
class ApiUse:
    """The operator's API requests over a window: by `verb resource[/subresource]`, and by answer."""

    by_call: Counter[str] = field(default_factory=Counter)
    conflicts: int = 0
    server_errors: int = 0
    throttled: int = 0

    @property
    def total(self) -> int:
        return sum(self.by_call.values())

    @property
    def writes(self) -> int:
        return sum(n for call, n in self.by_call.items() if call.split()[0] in ("create", "update", "patch", "delete"))

    def per(self, count: int) -> dict[str, Any]:
        """Per task (or claim): the totals and each call's share, largest first."""
        count = max(count, 1)
        return {
            "requests": round(self.total / count, 2),
            "writes": round(self.writes / count, 2),
            "by_call": {call: round(n / count, 2) for call, n in self.by_call.most_common()},
            "conflicts": self.conflicts,
            "server_errors": self.server_errors,
            "throttled": self.throttled,
        }


@dataclass
class Operator:
    """The running operator: its process and where it logs."""

    process: subprocess.Popen[bytes]
    log: Path

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.process.pid)

    def memory_mib(self) -> dict[str, float]:
        """Resident now and at its peak (VmHWM)."""
        status = Path(f"/proc/{self.process.pid}/status").read_text().splitlines()
        fields = dict(line.split(":", 1) for line in status)
        wanted = {"rss": "VmRSS", "peak": "VmHWM"}
        return {key: round(int(fields[name].split()[0]) / 1024, 1) for key, name in wanted.items()}

    def _logged(self, *levels: str) -> list[str]:
        lines = self.log.read_text(errors="replace").splitlines()
        return [line for line in lines if any(f'"level":"{level}"' in line for level in levels)]

    def errors(self) -> list[str]:
        """What it logged at ERROR or CRITICAL, but a retry (kopf logs each of those at ERROR too)."""
        return [line for line in self._logged("ERROR", "CRITICAL") if not _is_retry(line)]

    def retries(self) -> int:
        """Handlers that waited and ran again ("failed temporarily": a prerequisite, an empty pool), and API requests
        kopf's watches sent again."""
        return sum(map(_is_retry, self._logged("ERROR")))


def _is_retry(line: str) -> bool:
    return "failed temporarily" in line or "will retry" in line


@dataclass
class Simulated:
    cluster: KwokCluster
    audit_log: Path
    operator_kubeconfig: Path
    _audit_offset: int = 0

    def cluster_cpu_seconds(self) -> float:
        """CPU time of the simulated cluster's own processes (etcd, kube-apiserver, kube-controller-manager,
        kube-scheduler, kwok: every process whose command line names its work directory)."""
        total = 0.0
        for proc in Path("/proc").iterdir():
            try:
                if proc.name.isdigit() and str(self.cluster.workdir) in (proc / "cmdline").read_text():
                    total += cpu_seconds(int(proc.name))
            except OSError:  # gone meanwhile
                continue
        return total

    def mark(self) -> None:
        """Start a new window of API use (the audit log read from here)."""
        self._audit_offset = self.audit_log.stat().st_size if self.audit_log.exists() else 0

    def api_use(self) -> ApiUse:
        """The operator's requests since the last mark()."""
        use = ApiUse()
        if not self.audit_log.exists():
            return use
        conflicts = errors = throttled = 0
        with self.audit_log.open("rb") as log:
            log.seek(self._audit_offset)
            for line in log:
                event = json.loads(line)
                ref = event.get("objectRef") or {}
                resource = ref.get("resource", "-") + (f"/{ref['subresource']}" if ref.get("subresource") else "")
                use.by_call[f"{event['verb']} {resource}"] += 1
                code = (event.get("responseStatus") or {}).get("code", 0)
                conflicts += code == 409
                errors += code >= 500
                throttled += code == 429
        return ApiUse(use.by_call, conflicts, errors, throttled)

    @contextmanager
    def operator(self, **env: str) -> Iterator[Operator]:
        """The real operator, as the chart runs it (its defaults), as its own audited user; stopped after."""
        log = self.cluster.workdir / f"operator-{free_port()}.log"
        environment = {
            **os.environ,
            "KUBECONFIG": str(self.operator_kubeconfig),
            "MCPEXEC_LIVENESS_ENDPOINT": f"http://127.0.0.1:{free_port()}/healthz",
            "MCPEXEC_METRICS_PORT": "0",
            "MCPEXEC_LOG_LEVEL": "WARNING",
            **env,
        }
        with ExitStack() as stack:
            process = spawn(stack, [sys.executable, "-m", "controller"], log, env=environment, stop_seconds=30)
            yield Operator(process, log)


def _operator_kubeconfig(cluster: KwokCluster, path: Path) -> None:
    config = yaml.safe_load(cluster.control_plane.kubeconfig.read_text())
    config["users"] = [{"name": "admin", "user": {"token": cluster.control_plane.user_tokens[OPERATOR_USER]}}]
    path.write_text(yaml.safe_dump(config))


@contextmanager
def simulated_cluster(nodes: int) -> Iterator[Simulated]:
    """The kwok cluster of `nodes` fake nodes with the operator's requests audited; the CRDs installed. The kubernetes
    client's default configuration points at it while inside."""
    with tempfile.TemporaryDirectory(prefix="mcpexec-scale-") as tmp:
        policy, audit_log = Path(tmp) / "audit-policy.yaml", Path(tmp) / "audit.log"
        policy.write_text(yaml.safe_dump(AUDIT_POLICY))
        audit_args = [f"--audit-policy-file={policy}", f"--audit-log-path={audit_log}", "--audit-log-maxsize=0"]
        with kwok_cluster(nodes, users={OPERATOR_USER: ["system:masters"]}, apiserver_args=audit_args) as cluster:
            kube.install_crds()
            kube.ensure_runtime_class("gvisor")
            kubeconfig = Path(tmp) / "operator.kubeconfig"
            _operator_kubeconfig(cluster, kubeconfig)
            yield Simulated(cluster, audit_log, kubeconfig)
