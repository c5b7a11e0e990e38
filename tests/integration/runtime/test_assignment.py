"""A SandboxPool sandbox's runtime (MCPEXEC_AWAIT_ASSIGNMENT) refused its assignment: it does not wait on, it ends
with a Failed result naming the refusal. (Waiting, being claimed and running the task: tests/cluster/
test_gateway_pools.py, against the cluster-mode gateway; a local gateway serves no pools.)"""

from __future__ import annotations

from tests.integration.runtime.conftest import RuntimeHarness


def test_a_gateway_that_serves_no_pools_refuses_and_the_runtime_ends(harness: RuntimeHarness) -> None:
    run = harness.run(harness.task("pooled", code="print('never runs')"), await_assignment=True)
    assert run.exit_code == 1
    assert run.result["phase"] == "Failed"
    assert run.result["error"].startswith("gateway: forbidden (403): this gateway serves no SandboxPool sandboxes")
    assert "never runs" not in run.log


def test_a_refused_token_ends_the_wait(harness: RuntimeHarness) -> None:
    run = harness.run(harness.task("forged", code="print('never runs')"), token="forged", await_assignment=True)
    assert run.exit_code == 1
    assert run.result["error"].startswith("gateway: unauthenticated (401)")
