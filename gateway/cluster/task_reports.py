"""A task's result as its own sandbox reported it, recorded in its AgentTask's `status.report` (docs/agenttask.md).

The gateway writes only `status.report`, and only while the task is unfinished and has none: the first report
stands, a second changes nothing, and the operator stays the only writer of the phase (it folds the report in,
controller/reports.py). The write is a merge patch guarded by the resourceVersion the task was read at, so a report
can never land on a task that finished or was reported meanwhile, nor on a task re-created under the same name.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from gateway.cluster.directory import KubeDirectory
from gateway.context import TaskContext
from gateway.errors import TaskStatusUnavailable
from mcpexec.api.result import RuntimeResult
from mcpexec.api.status import AgentTaskStatus, TaskReport
from mcpexec.api.timestamps import now

log = logging.getLogger("mcpexec.gateway.task_reports")

# Each API call's bound, and the whole write's (the client may try a call again): the runtime waits on the answer
# before it writes its termination message (runtime/report.py waits up to 10 s).
API_TIMEOUT_SECONDS = 2.0
RECORD_TIMEOUT_SECONDS = 5.0
_CONFLICT_RETRIES = 3
# Tasks whose report is settled (recorded, or not needed), remembered so that more reports cost the API server
# nothing: a sandbox's code holds its token and could post again and again.
_SETTLED_KEPT = 4096


class KubeTaskReports:
    """The API calls run in a worker thread, each bounded and the whole write too: a write the API server takes
    after the caller was told 503 still stands (it is the report the sandbox sent)."""

    def __init__(self, directory: KubeDirectory, timeout_seconds: float = API_TIMEOUT_SECONDS) -> None:
        self._directory = directory
        self._timeout = timeout_seconds
        self._settled: OrderedDict[str, None] = OrderedDict()

    async def record(self, ctx: TaskContext, report: RuntimeResult) -> bool:
        if ctx.scope in self._settled:
            return False
        try:
            recorded = await asyncio.wait_for(asyncio.to_thread(self._record, ctx, report), RECORD_TIMEOUT_SECONDS)
        except (ApiException, HTTPError, OSError, TimeoutError) as exc:
            cause = f"the API server answered {exc.status}" if isinstance(exc, ApiException) else type(exc).__name__
            log.warning("task result not recorded", extra={"task": ctx.task_id, "task_uid": ctx.uid, "error": cause})
            raise TaskStatusUnavailable(f"the task's status could not be written ({cause})") from None
        self._settled[ctx.scope] = None
        if len(self._settled) > _SETTLED_KEPT:
            self._settled.popitem(last=False)
        return recorded

    def _record(self, ctx: TaskContext, report: RuntimeResult) -> bool:
        namespace, name = ctx.task.metadata.namespace, ctx.task.metadata.name
        recorded = TaskReport.model_validate({**report.model_dump(), "reported_at": now()})
        wire = recorded.model_dump(mode="json", by_alias=True, exclude_none=True)
        for _ in range(_CONFLICT_RETRIES):
            try:
                document = self._directory.agent_task(namespace, name, self._timeout)
            except ApiException as exc:
                if exc.status == 404:
                    return False
                raise
            status = AgentTaskStatus.of(document)
            if document["metadata"]["uid"] != ctx.uid or status.finished or status.report is not None:
                return False
            body = {
                "metadata": {"resourceVersion": document["metadata"]["resourceVersion"]},
                "status": {"report": wire},
            }
            try:
                self._directory.patch_agent_task_status(namespace, name, body, self._timeout)
            except ApiException as exc:
                if exc.status == 409:  # the task changed since it was read: read it again
                    continue
                if exc.status == 404:
                    return False
                raise
            return True
        raise ApiException(status=409, reason="the task kept changing while its report was written")
