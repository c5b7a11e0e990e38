"""What `kubectl get agenttasks -o wide` and `kubectl describe agenttask` tell of a finished task
(docs/observability.md): the real kubectl against the real API server, reading the CRD's printer columns."""

from __future__ import annotations

import json
import re

import kopf.testing

from tests.cluster.kube import create_task, job_pod, kubectl, play_kubelet, task_status, wait_for, wait_phase
from tests.support.control_plane import ControlPlane
from tests.support.malformed import agenttask

USAGE = {"llmTurns": 2, "tokensIn": 1200, "tokensOut": 345, "toolCalls": 7}
ERROR = "upstream_error: crm.find_customer failed"


def _columns(table: str) -> list[dict[str, str]]:
    """kubectl's table as rows of column -> value: each column starts where its header does."""
    header, *rows = table.splitlines()
    names = header.split()
    starts = [header.index(f"{name}  " if i < len(names) - 1 else name) for i, name in enumerate(names)]
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    return [{name: row[a:b].strip() for name, (a, b) in zip(names, bounds, strict=True)} for row in rows]


def _finish(namespace: str, name: str, phase: str, exit_code: int, result: dict[str, object]) -> None:
    create_task(namespace, agenttask(name))
    wait_for(lambda: task_status(namespace, name).get("jobName"), what=f"{name} accepted")
    play_kubelet(job_pod(namespace, f"mcpexec-{name}"), phase, exit_code=exit_code, message=json.dumps(result))
    wait_phase(namespace, name, phase)


def test_the_wide_view_and_describe_tell_a_finished_tasks_story(
    operator: kopf.testing.KopfRunner, cluster: ControlPlane, namespace: str
) -> None:
    _finish(namespace, "export", "Succeeded", 0, {"phase": "Succeeded", "result": "2 exported", "usage": USAGE})
    _finish(namespace, "broken", "Failed", 1, {"phase": "Failed", "result": "", "error": ERROR, "usage": USAGE})

    plain = kubectl(cluster, "get", "agenttasks", "-n", namespace)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.split("\n", 1)[0].split() == ["NAME", "PHASE", "REASON", "DURATION", "LAUNCH", "TOOLS", "AGE"]
    wide = kubectl(cluster, "get", "agenttasks", "-n", namespace, "-o", "wide", "--sort-by", ".metadata.name")
    assert wide.returncode == 0, wide.stderr
    broken, export = _columns(wide.stdout)
    assert list(export) == [
        "NAME", "PHASE", "REASON", "MODE", "DURATION", "LAUNCH", "TOOLS", "AGE", "POOL", "POD", "JOB", "STARTED",
        "CLAIM", "TOKENS-IN", "TOKENS-OUT", "MESSAGE",
    ]  # fmt: skip
    pod = task_status(namespace, "export")["podName"]
    assert export | {"AGE": "", "STARTED": "", "DURATION": ""} == {
        "NAME": "export", "PHASE": "Succeeded", "REASON": "Succeeded", "MODE": "code", "DURATION": "",
        "LAUNCH": "Cold", "TOOLS": "7", "AGE": "", "POOL": "", "POD": pod, "JOB": "mcpexec-export",
        "STARTED": "", "CLAIM": "", "TOKENS-IN": "1200", "TOKENS-OUT": "345",
        "MESSAGE": "the task's code finished successfully",
    }  # fmt: skip
    assert export["AGE"] and export["STARTED"] and export["DURATION"].endswith("s")
    assert (broken["PHASE"], broken["REASON"], broken["TOOLS"], broken["MESSAGE"]) == ("Failed", "Failed", "7", ERROR)

    described = kubectl(cluster, "describe", "agenttask", "broken", "-n", namespace)
    assert described.returncode == 0, described.stderr
    status, events = described.stdout.split("\nStatus:\n", 1)[1].split("\nEvents:\n", 1)
    for field, value in [("Launch Type", "Cold"), ("Tool Calls", "7"), ("Tokens In", "1200"), ("Message", ERROR)]:
        assert re.search(rf"^ +{field}: +{re.escape(value)}$", status, re.MULTILINE), status
    assert re.search(rf"^ +Warning +Failed +\S+ +mcpexec-operator +{re.escape(ERROR)}$", events, re.MULTILINE), events
