"""Cluster tier: a real etcd + kube-apiserver + kube-controller-manager, the CRDs, and the operator.

The control plane is started once per session; each test gets its own namespace. The operator runs
in-process with kopf.testing.KopfRunner (module scope); a test that must SIGKILL it runs
`python -m controller` as a process instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import kopf.testing
import pytest
from kubernetes import client

from controller.settings import KUBE_DNS
from tests.cluster import kube
from tests.support.control_plane import ControlPlane, control_plane

IMAGE_PULL_SECRETS = ["registry-cred"]
DNS_PEERS = [KUBE_DNS, {"ipBlock": {"cidr": "169.254.20.10/32"}}]


@pytest.fixture(scope="session")
def cluster() -> Iterator[ControlPlane]:
    with control_plane() as cp, cp.as_default_client():
        kube.install_crds()
        kube.ensure_runtime_class("gvisor")
        yield cp


@contextmanager
def kopf_operator(**settings: str) -> Iterator[kopf.testing.KopfRunner]:
    """The operator in this process; `settings`: more MCPEXEC_* variables (names without the prefix, upper case)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MCPEXEC_METRICS_PORT", "0")
        env.setenv("MCPEXEC_SWEEP_INTERVAL_SECONDS", "1")
        # Not the defaults (tests/unit/controller/test_settings.py has those): a registry secret and NodeLocal DNS.
        env.setenv("MCPEXEC_IMAGE_PULL_SECRETS", json.dumps(IMAGE_PULL_SECRETS))
        env.setenv("MCPEXEC_DNS_PEERS", json.dumps(DNS_PEERS))
        for name, value in settings.items():
            env.setenv(f"MCPEXEC_{name}", value)
        args = ["run", "-A", "--standalone", "-m", "controller.handlers", "--verbose"]
        with kopf.testing.KopfRunner(args, timeout=60) as runner:
            yield runner
    assert runner.exception is None, runner.exception
    assert runner.exit_code == 0, runner.output


@pytest.fixture(scope="module")
def operator(cluster: ControlPlane) -> Iterator[kopf.testing.KopfRunner]:
    with kopf_operator() as runner:
        yield runner


@pytest.fixture
def namespace(cluster: ControlPlane) -> Iterator[str]:
    name = kube.create_namespace()
    yield name
    client.CoreV1Api().delete_namespace(name)


@pytest.fixture
def api(cluster: ControlPlane) -> dict[str, Any]:
    return {
        "core": client.CoreV1Api(),
        "batch": client.BatchV1Api(),
        "net": client.NetworkingV1Api(),
        "custom": client.CustomObjectsApi(),
    }
