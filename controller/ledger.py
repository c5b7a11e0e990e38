"""The run-once ledger: a record per task name that ran in a namespace, so a re-created task does not run again.

A GitOps controller re-creates what it finds missing (Argo CD self-heal, a Flux interval, a Replace sync, a manual
delete): without a memory that outlives the AgentTask, each re-creation would run its code again, with its tool side
effects and its LLM spend. Each name's memory is a small ConfigMap of its own in the task's namespace
(naming.run_record_name, labelled run_record_labels), owned by nobody: garbage collection never takes it with a task.
Its data is a RunRecord: the run's uid, spec hash, run-again value, start and, once finished, its outcome.

The record is the launch decision: a reconcile CREATES it (never reads, modifies and writes it) before it creates the
task's Job or claims a pool sandbox. Created: this task may launch. The name exists: the record is read; its own uid
means an earlier reconcile of this very task decided (an operator restart, a retry: it resumes, adopting what was
launched); another uid means the name ran, and the task is not run (`refusal`: AlreadyRan, or SpecChangedAfterRun when
its spec differs), unless its `mcpexec.dev/run-again` annotation has a value the record's run did not have (then the
record is replaced, guarded by the resourceVersion read). The outcome is written once, when the run finishes, by a
JSON patch that first tests the uid. Only the task of that name writes its record: no write contends with another
task's, and each is the same few hundred bytes however many runs the namespace has had.

Records are kept for a retention (OperatorSettings.run_record_retention_days; 0 keeps them for ever): past it, counted
from the run's finish (from its start plus the longest timeout when it never finished), the sweep deletes them and the
name may run again. Deleting a record by hand forgets that run. The namespace-wide ConfigMap of earlier versions
(LEGACY_LEDGER_NAME) is turned into records when the operator starts, then deleted.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from controller.naming import run_record_labels, run_record_name
from mcpexec.api.agenttask import MAX_TASK_NAME, MAX_TIMEOUT_SECONDS, Phase
from mcpexec.api.meta import DNS1123_LABEL, GROUP
from mcpexec.api.reasons import Reason
from mcpexec.api.timestamps import now, parse_time

# The one ConfigMap per namespace that earlier versions kept every name in (read once, at start, to migrate).
LEGACY_LEDGER_NAME = "mcpexec.task-ledger"
RUN_AGAIN_ANNOTATION = f"{GROUP}/run-again"
HOW_TO_RUN_AGAIN = (
    f"to run it again, give the AgentTask a new name, or set its annotation {RUN_AGAIN_ANNOTATION} to a value not "
    "used before when you create it"
)
Manifest = dict[str, Any]


class RunRecord(BaseModel):
    """One task name's last run in a namespace: a run record's data (every value a string, as a ConfigMap's are),
    and each entry of the legacy ledger (the same fields, as JSON)."""

    model_config = ConfigDict(populate_by_name=True)

    uid: str
    spec_hash: str = Field(alias="specHash")
    run_again: str = Field(default="", alias="runAgain")
    started: str
    phase: Phase | None = None  # set when the run finished
    reason: str = ""
    finished: str | None = None

    def data(self) -> dict[str, str]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def spec_hash(spec: dict[str, Any]) -> str:
    """The spec as the API server stored it (defaults applied), canonical JSON, SHA-256."""
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def run_again(document: dict[str, Any]) -> str:
    return str((document["metadata"].get("annotations") or {}).get(RUN_AGAIN_ANNOTATION) or "")


def manifest(namespace: str, name: str, record: RunRecord) -> Manifest:
    """The ConfigMap of a name's run record."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": run_record_name(name), "namespace": namespace, "labels": run_record_labels(name)},
        "data": record.data(),
    }


def launch(document: dict[str, Any]) -> Manifest:
    """The record a task creates as its launch decision: its run, started now."""
    meta = document["metadata"]
    record = RunRecord(
        uid=meta["uid"], spec_hash=spec_hash(dict(document["spec"])), run_again=run_again(document), started=now()
    )
    return manifest(meta["namespace"], meta["name"], record)


def record_of(config_map: dict[str, Any]) -> RunRecord | None:
    """A record as read back; None when its data is not a record (edited by hand): it then records no run."""
    try:
        return RunRecord.model_validate(config_map.get("data") or {})
    except ValidationError:
        return None


@dataclass(frozen=True)
class Refusal:
    """Why a task whose name already ran is finished without running, and the phase it finishes in."""

    phase: Phase
    reason: Reason
    message: str


def refusal(record: RunRecord | None, document: dict[str, Any]) -> Refusal | None:
    """The final status of a task whose name already ran (None: the task may run)."""
    meta = document["metadata"]
    wanted = run_again(document)
    if record is None or record.uid == meta["uid"] or (wanted and wanted != record.run_again):
        return None
    earlier = (
        f"an AgentTask named {meta['name']} already ran in this namespace (uid {record.uid}, started {record.started}"
    )
    if record.spec_hash != spec_hash(dict(document["spec"])):
        reason, phase = Reason.SPEC_CHANGED_AFTER_RUN, Phase.FAILED
        message = f"{earlier}) with another spec; this spec is not run: {HOW_TO_RUN_AGAIN}"
    elif record.phase is None:
        reason, phase = Reason.ALREADY_RAN, Phase.FAILED
        message = f"{earlier}) and was deleted before it finished; it is not run again: {HOW_TO_RUN_AGAIN}"
    else:
        reason, phase = Reason.ALREADY_RAN, record.phase
        outcome = f"{record.phase.value.lower()}, {record.reason}" if record.reason else record.phase.value.lower()
        message = f"{earlier}, {outcome} at {record.finished}); it is not run again: {HOW_TO_RUN_AGAIN}"
    return Refusal(phase, reason, message)


def outcome_patch(uid: str, phase: Phase, reason: str) -> list[dict[str, str]]:
    """A JSON patch writing a run's outcome into its record, applied only while the record is that run's (the test
    fails when the name's record is another run's: a later run-again replaced it)."""
    outcome = {"phase": phase.value, "reason": reason, "finished": now()}
    return [
        {"op": "test", "path": "/data/uid", "value": uid},
        *({"op": "add", "path": f"/data/{key}", "value": value} for key, value in outcome.items()),
    ]


def expired(record: RunRecord | None, at: datetime, retention_days: int) -> bool:
    """Whether the retention is over for a record (0 days: never). An unfinished run's (its task deleted while it
    ran, or still running) counts from its start plus the longest timeout, so a running task's record never goes.
    A ConfigMap whose data is not a record (None) records nothing: it goes too."""
    if retention_days == 0:
        return False
    if record is None:
        return True
    retention = timedelta(days=retention_days)
    if record.finished:
        return parse_time(record.finished) + retention < at
    return parse_time(record.started) + retention + timedelta(seconds=MAX_TIMEOUT_SECONDS) < at


def legacy_records(data: dict[str, str] | None) -> dict[str, RunRecord]:
    """The legacy ledger's entries by task name (keys and JSON values); a key that is no task name, or a value that
    is not an entry (edited by hand), is left out."""
    records: dict[str, RunRecord] = {}
    for name, value in (data or {}).items():
        if len(name) > MAX_TASK_NAME or not re.fullmatch(DNS1123_LABEL, name):
            continue
        try:
            records[name] = RunRecord.model_validate_json(value)
        except ValidationError:
            continue
    return records
