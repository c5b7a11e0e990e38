"""The scale tier's scenarios (issue 32), run against a simulated cluster (tests/support/scale_cluster.py): a cold
burst of AgentTasks over many namespaces, warm claims (tasks, then AgentSessions) at a fixed rate over SandboxPools
while they refill, and a steady mix of creates, finishes, deletes and GitOps re-applies. `make bench scale` runs them
at full size (tests/bench/scale.py); tests/cluster/test_scale.py at a CI size, checking what must hold at any size.

Latencies are from a create call returning to a watch seeing the result (a Job, a claim), both in this process; each
scenario also says what the operator spent (API requests per task by verb and resource, conflicts, CPU, memory) and
its errors, which must be 0: requests the API server answered 5xx, ERROR logs, tasks that never launched or ran twice.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client, watch

from mcpexec.api.meta import (
    AGENTSESSION_PLURAL,
    AGENTTASK_PLURAL,
    GROUP,
    MANAGED_LABELS,
    POOL_LABEL,
    SANDBOX_STATE_LABEL,
    SANDBOXPOOL_PLURAL,
    TASK_LABEL,
    VERSION,
)
from tests.support.malformed import agenttask
from tests.support.scale_cluster import Operator, Simulated

CLIENT_THREADS = 24
DIRECT_LABEL = "mcpexec.dev/bench=direct"
POOL_TEMPLATE = {"resources": {"limits": {"cpu": "1", "memory": "512Mi"}}}
Key = tuple[str, str]


@dataclass(frozen=True)
class Size:
    nodes: int
    cold_tasks: int
    cold_namespaces: int
    pools: int
    pool_replicas: int
    warm_claims: int
    claims_per_second: float
    steady_seconds: float
    steady_per_second: float


FULL = Size(
    nodes=100,
    cold_tasks=5000,
    cold_namespaces=20,
    pools=10,
    pool_replicas=50,
    warm_claims=750,
    claims_per_second=75,
    steady_seconds=600,
    steady_per_second=10,
)
CI = Size(
    nodes=10,
    cold_tasks=200,
    cold_namespaces=4,
    pools=2,
    pool_replicas=10,
    warm_claims=60,
    claims_per_second=20,
    steady_seconds=30,
    steady_per_second=4,
)


def percentiles(values: Iterable[float]) -> dict[str, float | None]:
    """p50/p90/p99 and max in milliseconds; None when nothing was measured (a figure too)."""
    ordered = sorted(values)
    if not ordered:
        return {"p50": None, "p90": None, "p99": None, "max": None, "count": 0}

    def at(pct: float) -> float:
        return round(ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))] * 1000, 1)

    return {"p50": at(50), "p90": at(90), "p99": at(99), "max": round(ordered[-1] * 1000, 1), "count": len(ordered)}


class FirstSeen:
    """Watches one kind cluster-wide (raw JSON, no model building) and notes when each object first met `when`
    (monotonic time), and its latest state; restarts the watch when the server ends it."""

    def __init__(self, list_call: Callable[..., Any], when: Callable[[dict[str, Any]], bool], **list_args: Any):
        self.seen: dict[Key, float] = {}
        self.latest: dict[Key, dict[str, Any]] = {}
        self._list, self._when, self._args = list_call, when, list_args
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            stream = watch.Watch()
            try:
                for event in stream.stream(self._list, deserialize=False, timeout_seconds=60, **self._args):
                    if self._stop.is_set():
                        break
                    self.observe(event["type"], event["object"])
            except Exception:  # a dropped watch is re-opened; the list it starts with replays current state
                time.sleep(0.2)

    def observe(self, kind: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        key = (meta.get("namespace", ""), meta.get("name", ""))
        with self._lock:
            if kind == "DELETED":
                self.latest.pop(key, None)
                return
            self.latest[key] = obj
            if key not in self.seen and self._when(obj):
                self.seen[key] = time.monotonic()

    def forget(self, key: Key) -> None:
        with self._lock:
            self.seen.pop(key, None)

    def wait(self, keys: Iterable[Key], timeout: float) -> list[Key]:
        """Wait until every key was seen; the keys still missing at the timeout."""
        wanted = list(keys)
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                missing = [key for key in wanted if key not in self.seen]
            if not missing or time.monotonic() > deadline:
                return missing
            time.sleep(0.1)

    def stop(self) -> None:
        self._stop.set()


def _task_status(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("status") or {}


def launched(obj: dict[str, Any]) -> bool:
    status = _task_status(obj)
    return bool(status.get("podName") or status.get("jobName")) or _finished(obj)


def _finished(obj: dict[str, Any]) -> bool:
    return _task_status(obj).get("phase") in ("Succeeded", "Failed", "TimedOut")


def _session_claimed(obj: dict[str, Any]) -> bool:
    return bool(_task_status(obj).get("podName")) or _task_status(obj).get("phase") == "Ended"


def task_watch(when: Callable[[dict[str, Any]], bool]) -> FirstSeen:
    custom = client.CustomObjectsApi()
    return FirstSeen(custom.list_cluster_custom_object, when, group=GROUP, version=VERSION, plural=AGENTTASK_PLURAL)


class JobWatch(FirstSeen):
    """Jobs the operator made, keyed (namespace, task name); every Job uid seen per task name (two: it ran twice)."""

    def __init__(self) -> None:
        self.uids: dict[Key, set[str]] = {}
        selector = ",".join(f"{k}={v}" for k, v in MANAGED_LABELS.items()) + f",{TASK_LABEL}"
        super().__init__(client.BatchV1Api().list_job_for_all_namespaces, lambda _job: True, label_selector=selector)

    def observe(self, kind: str, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        key = (meta["namespace"], meta["labels"][TASK_LABEL])
        self.uids.setdefault(key, set()).add(meta["uid"])
        super().observe(kind, {**obj, "metadata": {"namespace": key[0], "name": key[1]}})


def create_paced(create: Callable[[int], Key], count: int, per_second: float | None) -> dict[Key, float]:
    """Create `count` objects (all at once, or at `per_second`); when each create call returned."""
    created: dict[Key, float] = {}
    started = time.monotonic()

    def one(i: int) -> None:
        if per_second:
            delay = started + i / per_second - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        key = create(i)
        created[key] = time.monotonic()

    with ThreadPoolExecutor(CLIENT_THREADS) as pool:
        list(pool.map(one, range(count)))
    return created


def namespaces(count: int, prefix: str) -> list[str]:
    names = [f"{prefix}-{uuid.uuid4().hex[:6]}" for _ in range(count)]
    core = client.CoreV1Api()
    for name in names:
        core.create_namespace({"metadata": {"name": name}})
    return names


def create_task(namespace: str, name: str, **spec: Any) -> Key:
    body = agenttask(name, timeoutSeconds=600, **spec)
    client.CustomObjectsApi().create_namespaced_custom_object(GROUP, VERSION, namespace, AGENTTASK_PLURAL, body)
    return namespace, name


@dataclass
class Window:
    """One scenario's share of the operator: API use, CPU and errors between start() and report()."""

    sim: Simulated
    operator: Operator
    cpu: float = 0.0
    cluster_cpu: float = 0.0
    errors_before: int = 0
    retries_before: int = 0
    started: float = field(default_factory=time.monotonic)

    def start(self) -> Window:
        self.sim.mark()
        self.cpu, self.errors_before = self.operator.cpu_seconds(), len(self.operator.errors())
        self.cluster_cpu = self.sim.cluster_cpu_seconds()
        self.retries_before = self.operator.retries()
        self.started = time.monotonic()
        return self

    def report(self, per: int) -> dict[str, Any]:
        use = self.sim.api_use()
        cpu = self.operator.cpu_seconds() - self.cpu
        cluster_cpu = self.sim.cluster_cpu_seconds() - self.cluster_cpu
        errors = self.operator.errors()[self.errors_before :]
        return {
            "api_per_task": use.per(per),
            "operator_cpu_seconds": round(cpu, 1),
            "operator_cpu_ms_per_task": round(cpu * 1000 / max(per, 1), 1),
            "cluster_cpu_ms_per_task": round(cluster_cpu * 1000 / max(per, 1), 1),
            "operator_memory_mib": self.operator.memory_mib(),
            "operator_errors": len(errors) + use.server_errors,
            "operator_error_samples": errors[:3],
            "operator_retries": self.operator.retries() - self.retries_before,
            "wall_seconds": round(time.monotonic() - self.started, 1),
        }


def direct_job(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """The Job a baseline writes directly: what an operator's Job costs the cluster at the least."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "backoffLimit": 0,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}},
        },
    }


def direct_jobs(sim: Simulated, size: Size) -> dict[str, Any]:
    """The floor: this client creating the same number of Jobs directly (what the operator must at least write), and
    what the cluster spends on them until they are complete (kwok completes each pod at once)."""
    spaces = namespaces(size.cold_namespaces, "direct")
    batch = client.BatchV1Api()
    complete = FirstSeen(batch.list_job_for_all_namespaces, _job_complete, label_selector=DIRECT_LABEL)

    def create(i: int) -> Key:
        namespace = spaces[i % len(spaces)]
        labels = dict([DIRECT_LABEL.split("=")])
        batch.create_namespaced_job(namespace, direct_job(f"direct-{i}", labels))
        return namespace, f"direct-{i}"

    cluster_cpu, started = sim.cluster_cpu_seconds(), time.monotonic()
    created = create_paced(create, size.cold_tasks, None)
    elapsed = time.monotonic() - started
    missing = complete.wait(created, timeout=600)
    complete.stop()
    return {
        "jobs": size.cold_tasks,
        "jobs_per_second": round(size.cold_tasks / elapsed, 1),
        "create_to_complete_ms": percentiles(complete.seen[k] - at for k, at in created.items() if k in complete.seen),
        "never_complete": len(missing),
        "cluster_cpu_ms_per_job": round((sim.cluster_cpu_seconds() - cluster_cpu) * 1000 / size.cold_tasks, 1),
    }


def _job_complete(job: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Complete" and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


def cold_burst(sim: Simulated, operator: Operator, size: Size, floor: dict[str, Any]) -> dict[str, Any]:
    """`cold_tasks` AgentTasks over `cold_namespaces` namespaces created at once: create -> Job, tasks/s, and
    create -> finished (kwok completes each Job's pod at once)."""
    spaces = namespaces(size.cold_namespaces, "cold")
    jobs, tasks = JobWatch(), task_watch(_finished)
    window = Window(sim, operator).start()
    try:
        started = time.monotonic()
        created = create_paced(lambda i: create_task(spaces[i % len(spaces)], f"cold-{i}"), size.cold_tasks, None)
        missing_jobs = jobs.wait(created, timeout=600)
        missing_finish = tasks.wait(created, timeout=300)
        to_job = [jobs.seen[key] - at for key, at in created.items() if key in jobs.seen]
        last_job = max((jobs.seen[key] for key in created if key in jobs.seen), default=started)
        rate = len(to_job) / max(last_job - started, 1e-9)
        phases: dict[str, int] = {}
        for key in created:
            phase = str(_task_status(tasks.latest.get(key, {})).get("phase"))
            phases[phase] = phases.get(phase, 0) + 1
        figures = {
            "tasks": size.cold_tasks,
            "namespaces": size.cold_namespaces,
            "create_to_job_ms": percentiles(to_job),
            "create_to_finished_ms": percentiles(tasks.seen[k] - at for k, at in created.items() if k in tasks.seen),
            "tasks_per_second": round(rate, 1),
            "ratio_vs_direct_jobs": round(rate / floor["jobs_per_second"], 3),
            "direct_create_to_complete_ms": floor["create_to_complete_ms"],
            "phases": phases,
            "never_launched": len(missing_jobs),
            "never_finished": len(missing_finish),
            **window.report(size.cold_tasks),
        }
        # What a task costs the machine, the operator included, against a Job written directly (independent of load).
        spent = figures["operator_cpu_ms_per_task"] + figures["cluster_cpu_ms_per_task"]
        figures["cpu_ratio_vs_direct_jobs"] = round(spent / max(floor["cluster_cpu_ms_per_job"], 1e-9), 2)
        return figures
    finally:
        jobs.stop()
        tasks.stop()


def sandbox_pool(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "SandboxPool",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "template": POOL_TEMPLATE},
    }


class IdleCount:
    """Ready idle sandboxes per pool, from a pod watch; its lowest total while sampled."""

    def __init__(self) -> None:
        pods = client.CoreV1Api().list_pod_for_all_namespaces
        self.pods = FirstSeen(pods, lambda _pod: True, label_selector=POOL_LABEL)
        self.lowest: int | None = None
        self._sampling = threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()

    def ready_idle(self) -> int:
        count = 0
        for pod in list(self.pods.latest.values()):
            labels, status = pod["metadata"].get("labels") or {}, pod.get("status") or {}
            ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
            count += (
                labels.get(SANDBOX_STATE_LABEL) == "idle" and ready and not pod["metadata"].get("deletionTimestamp")
            )
        return count

    def wait_for(self, total: int, timeout: float) -> float | None:
        """Seconds until `total` sandboxes are ready and idle; None if not within `timeout`."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if self.ready_idle() >= total:
                return round(time.monotonic() - started, 2)
            time.sleep(0.1)
        return None

    def sample(self, on: bool) -> None:
        if on:
            self.lowest = None
            self._sampling.set()
        else:
            self._sampling.clear()

    def _sample(self) -> None:
        while True:
            if self._sampling.is_set():
                now = self.ready_idle()
                self.lowest = now if self.lowest is None else min(self.lowest, now)
            time.sleep(0.2)


def warm(sim: Simulated, operator: Operator, size: Size) -> dict[str, Any]:
    """Pools with `pools * pool_replicas` idle sandboxes; `warm_claims` tasks, then as many AgentSessions, at
    `claims_per_second`, each naming a pool in turn; the pools refill while drained."""
    spaces = namespaces(size.pools, "warm")
    custom = client.CustomObjectsApi()
    idle = IdleCount()
    total = size.pools * size.pool_replicas
    started = time.monotonic()
    for namespace in spaces:
        custom.create_namespaced_custom_object(
            GROUP, VERSION, namespace, SANDBOXPOOL_PLURAL, sandbox_pool("pool", size.pool_replicas)
        )
    fill = idle.wait_for(total, timeout=600)
    result: dict[str, Any] = {
        "idle_sandboxes": total,
        "pools": size.pools,
        "fill_seconds": fill if fill is not None else f"not full after {round(time.monotonic() - started)} s",
    }
    for kind in ("tasks", "sessions"):
        result[kind] = _claims(sim, operator, size, spaces, idle, kind)
        idle.sample(False)
    idle.pods.stop()
    return result


def _create_session(namespace: str, name: str) -> Key:
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "AgentSession",
        "metadata": {"name": name},
        "spec": {"poolRef": {"name": "pool"}},
    }
    client.CustomObjectsApi().create_namespaced_custom_object(GROUP, VERSION, namespace, AGENTSESSION_PLURAL, body)
    return namespace, name


def _claims(
    sim: Simulated, operator: Operator, size: Size, spaces: list[str], idle: IdleCount, kind: str
) -> dict[str, Any]:
    total = size.pools * size.pool_replicas
    refilled_before = idle.wait_for(total, timeout=300)
    custom = client.CustomObjectsApi()
    if kind == "tasks":
        seen = task_watch(launched)

        def create(i: int) -> Key:
            return create_task(spaces[i % len(spaces)], f"warm-{i}", poolRef={"name": "pool"})
    else:
        seen = FirstSeen(
            custom.list_cluster_custom_object,
            _session_claimed,
            group=GROUP,
            version=VERSION,
            plural=AGENTSESSION_PLURAL,
        )

        def create(i: int) -> Key:
            return _create_session(spaces[i % len(spaces)], f"session-{i}")

    window = Window(sim, operator).start()
    idle.sample(True)
    try:
        created = create_paced(create, size.warm_claims, size.claims_per_second)
        missing = seen.wait(created, timeout=300)
        refill = idle.wait_for(total, timeout=300)
        launch: dict[str, int] = {}
        for key in created:
            status = _task_status(seen.latest.get(key, {}))
            how = status.get("launchType") or ("warm" if status.get("podName") else str(status.get("phase")))
            launch[how] = launch.get(how, 0) + 1
        return {
            "claims": size.warm_claims,
            "per_second_asked": size.claims_per_second,
            "per_second_created": round(len(created) / max(max(created.values()) - window.started, 1e-9), 1),
            "create_to_claimed_ms": percentiles(seen.seen[k] - at for k, at in created.items() if k in seen.seen),
            "launch": launch,
            "never_claimed": len(missing),
            "lowest_ready_idle_while_drained": idle.lowest,
            "refill_seconds_after_drain": refill if refill is not None else "not refilled in 300 s",
            "refill_seconds_before": refilled_before,
            **window.report(size.warm_claims),
        }
    finally:
        seen.stop()


def steady_mix(sim: Simulated, operator: Operator, size: Size) -> dict[str, Any]:
    """For `steady_seconds`: each second `steady_per_second` tasks (a third of them warm, over one pool), the finished
    ones deleted after 5 s and the warm ones after 20 s, and one deleted finished task re-applied as GitOps would (its
    name ran: it must be refused, never run again)."""
    [namespace] = namespaces(1, "steady")
    custom = client.CustomObjectsApi()
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, SANDBOXPOOL_PLURAL, sandbox_pool("pool", 20))
    tasks, jobs = task_watch(launched), JobWatch()
    finished = task_watch(_finished)
    window = Window(sim, operator).start()
    created: dict[Key, float] = {}
    deleted: set[Key] = set()
    reapplied: list[Key] = []
    counter = itertools.count()
    deadline = time.monotonic() + size.steady_seconds
    with ThreadPoolExecutor(8) as pool:
        while time.monotonic() < deadline:
            tick = time.monotonic()
            for _ in range(int(size.steady_per_second)):
                i = next(counter)
                spec = {"poolRef": {"name": "pool"}} if i % 3 == 0 else {}
                pool.submit(_create_noting, created, namespace, f"mix-{i}", spec)
            now = time.monotonic()
            for key, at in list(created.items()):
                if key in deleted:
                    continue
                warm_task = int(key[1].split("-")[1]) % 3 == 0
                if (key in finished.seen and now - finished.seen[key] > 5) or (warm_task and now - at > 20):
                    deleted.add(key)
                    pool.submit(
                        custom.delete_namespaced_custom_object, GROUP, VERSION, namespace, AGENTTASK_PLURAL, key[1]
                    )
            again = next((key for key in deleted if key in finished.seen and key not in reapplied), None)
            if again is not None and _gone(custom, again):
                reapplied.append(again)
                finished.forget(again)
                pool.submit(create_task, *again)
            time.sleep(max(0.0, 1 - (time.monotonic() - tick)))
    fresh = [key for key in created if key not in reapplied]
    tasks.wait(fresh, timeout=120)
    finished.wait(reapplied, timeout=120)
    ran_again = [key for key in reapplied if len(jobs.uids.get(key, ())) > 1]
    refused = [key for key in reapplied if key in finished.seen and key not in ran_again]
    report = {
        "seconds": size.steady_seconds,
        "tasks": len(created),
        "create_to_launched_ms": percentiles(tasks.seen[k] - created[k] for k in fresh if k in tasks.seen),
        "never_launched": len([k for k in fresh if k not in tasks.seen]),
        "deleted": len(deleted),
        "reapplied": len(reapplied),
        "reapplied_refused": len(refused),
        "reapplied_ran_again": len(ran_again),
        **window.report(len(created)),
    }
    for watcher in (tasks, jobs, finished):
        watcher.stop()
    return report


def _create_noting(created: dict[Key, float], namespace: str, name: str, spec: dict[str, Any]) -> None:
    created[create_task(namespace, name, **spec)] = time.monotonic()


def _gone(custom: client.CustomObjectsApi, key: Key) -> bool:
    try:
        custom.get_namespaced_custom_object(GROUP, VERSION, key[0], AGENTTASK_PLURAL, key[1])
    except client.ApiException as exc:
        return exc.status == 404
    return False


def run_all(sim: Simulated, size: Size, report: Callable[[str, dict[str, Any]], None]) -> None:
    """Every scenario in turn, each reported as soon as it is measured (one that fails reports its error)."""
    floor = direct_jobs(sim, size)
    report("direct_jobs", floor)
    with sim.operator() as operator:
        time.sleep(3)  # it logs in and starts its watches
        scenarios: list[tuple[str, Callable[[], dict[str, Any]]]] = [
            ("cold_burst", lambda: cold_burst(sim, operator, size, floor)),
            ("warm", lambda: warm(sim, operator, size)),
            ("steady_mix", lambda: steady_mix(sim, operator, size)),
        ]
        for name, scenario in scenarios:
            try:
                report(name, scenario())
            except Exception as exc:  # one scenario's failure must not lose the others
                report(name, {"error": f"{type(exc).__name__}: {exc}"})
