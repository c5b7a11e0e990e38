"""Full e2e tier: a real single-node cluster (tests/e2e/node.py) whose kubelet runs pods under gVisor.

These tests are marked `e2e` and run only when asked for (`pytest -m e2e tests/e2e`; `make test` runs them
after the other tiers, `make e2e` alone): a plain `pytest tests` leaves them out (deselected, not skipped),
since they need root and the node takes minutes to build the first time.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from tests.e2e.node import Node, node
from tests.e2e.pods import create_namespace
from tests.e2e.release import install_release


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "e2e: needs a real single-node cluster with gVisor (pytest -m e2e tests/e2e)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "e2e" in (config.option.markexpr or ""):
        return
    deselected = [item for item in items if item.get_closest_marker("e2e")]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if not item.get_closest_marker("e2e")]


@pytest.fixture(scope="module")
def e2e_node() -> Iterator[Node]:
    with node() as the_node, the_node.cp.as_default_client():
        yield the_node


@pytest.fixture(scope="module")
def release(e2e_node: Node) -> str:
    """The chart, installed once per node (each module has its own node)."""
    return install_release(e2e_node)


@pytest.fixture
def core(e2e_node: Node) -> client.CoreV1Api:
    return client.CoreV1Api()


@pytest.fixture
def namespace(core: client.CoreV1Api) -> Iterator[str]:
    name = create_namespace(core)
    yield name
    core.delete_namespace(name)
