"""The run-once ledger: which task names already ran in a namespace, so a re-created task does not run again.

A GitOps controller re-creates what it finds missing (Argo CD self-heal, a Flux interval, a Replace sync, a manual
delete): without a memory that outlives the AgentTask, each re-creation would run its code again, with its tool side
effects and its LLM spend. The ledger is one ConfigMap per namespace (LEDGER_NAME), owned by nobody: garbage
collection never takes it with a task, and deleting a task does not touch it. Its keys are task names, its values
LedgerEntry JSON: the run's uid, spec hash, run-again value, start and outcome.

A task runs when its name has no entry, when the entry is its own (an operator restart resumes it), or when its
`mcpexec.dev/run-again` annotation has a value the entry's run did not have. Any other task with a name that ran is
not run: it gets a final status saying why (AlreadyRan; SpecChangedAfterRun when its spec differs, e.g. after a
Replace/force sync of an edited spec) and how to run it again. The entry is written before the Job is created or the
sandbox claimed, so an operator that dies in between cannot run the code twice either.

The ConfigMap is bounded (MAX_ENTRIES, oldest start dropped first); deleting the ConfigMap, or a key of it, forgets
those runs (as deleting the namespace does).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcpexec.api.agenttask import Phase
from mcpexec.api.meta import GROUP
from mcpexec.api.reasons import Reason
from mcpexec.api.timestamps import now

# A ConfigMap name no task child can have: theirs are `mcpexec-<DNS label>`, without dots.
LEDGER_NAME = "mcpexec.task-ledger"
RUN_AGAIN_ANNOTATION = f"{GROUP}/run-again"
# About 300 bytes an entry: far below a ConfigMap's 1 MiB.
MAX_ENTRIES = 2000
HOW_TO_RUN_AGAIN = (
    f"to run it again, give the AgentTask a new name, or set its annotation {RUN_AGAIN_ANNOTATION} to a value not "
    "used before when you create it"
)


class LedgerEntry(BaseModel):
    """One task name's last run in a namespace."""

    model_config = ConfigDict(populate_by_name=True)

    uid: str
    spec_hash: str = Field(alias="specHash")
    run_again: str = Field(default="", alias="runAgain")
    started: str
    phase: Phase | None = None  # set when the run finished
    reason: str = ""
    finished: str | None = None

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, exclude_none=True)


Entries = dict[str, LedgerEntry]


def spec_hash(spec: dict[str, Any]) -> str:
    """The spec as the API server stored it (defaults applied), canonical JSON, SHA-256."""
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def run_again(document: dict[str, Any]) -> str:
    return str((document["metadata"].get("annotations") or {}).get(RUN_AGAIN_ANNOTATION) or "")


def parse(data: dict[str, str] | None) -> Entries:
    """The ConfigMap's data as entries; a value that is not an entry (edited by hand) is left out."""
    entries: Entries = {}
    for name, value in (data or {}).items():
        try:
            entries[name] = LedgerEntry.model_validate_json(value)
        except ValidationError:
            continue
    return entries


def serialize(entries: Entries) -> dict[str, str]:
    """The ConfigMap's data: at most MAX_ENTRIES, the most recently started kept."""
    kept = sorted(entries.items(), key=lambda item: item[1].started, reverse=True)[:MAX_ENTRIES]
    return {name: entry.to_json() for name, entry in sorted(kept)}


@dataclass(frozen=True)
class Refusal:
    """Why a task whose name already ran is finished without running, and the phase it finishes in."""

    phase: Phase
    reason: Reason
    message: str


def refusal(entry: LedgerEntry | None, document: dict[str, Any]) -> Refusal | None:
    """The final status of a task whose name already ran (None: the task may run)."""
    meta = document["metadata"]
    wanted = run_again(document)
    if entry is None or entry.uid == meta["uid"] or (wanted and wanted != entry.run_again):
        return None
    earlier = (
        f"an AgentTask named {meta['name']} already ran in this namespace (uid {entry.uid}, started {entry.started}"
    )
    if entry.spec_hash != spec_hash(dict(document["spec"])):
        reason, phase = Reason.SPEC_CHANGED_AFTER_RUN, Phase.FAILED
        message = f"{earlier}) with another spec; this spec is not run: {HOW_TO_RUN_AGAIN}"
    elif entry.phase is None:
        reason, phase = Reason.ALREADY_RAN, Phase.FAILED
        message = f"{earlier}) and was deleted before it finished; it is not run again: {HOW_TO_RUN_AGAIN}"
    else:
        reason, phase = Reason.ALREADY_RAN, entry.phase
        outcome = f"{entry.phase.value.lower()}, {entry.reason}" if entry.reason else entry.phase.value.lower()
        message = f"{earlier}, {outcome} at {entry.finished}); it is not run again: {HOW_TO_RUN_AGAIN}"
    return Refusal(phase, reason, message)


def started(entries: Entries, document: dict[str, Any]) -> Entries:
    """Record the task's run before it starts (idempotent: its own entry is kept as it is)."""
    meta = document["metadata"]
    if (mine := entries.get(meta["name"])) is not None and mine.uid == meta["uid"]:
        return entries
    entry = LedgerEntry(
        uid=meta["uid"], spec_hash=spec_hash(dict(document["spec"])), run_again=run_again(document), started=now()
    )
    return {**entries, meta["name"]: entry}


def forget(entries: Entries, name: str, uid: str) -> Entries:
    """Drop the task's own entry (it did not start after all: no pool sandbox was free)."""
    if (mine := entries.get(name)) is None or mine.uid != uid:
        return entries
    return {k: v for k, v in entries.items() if k != name}


def finished(entries: Entries, name: str, uid: str, phase: Phase, reason: str) -> Entries:
    """Record the outcome of the task's own run (a task that never started has no entry to finish)."""
    if (mine := entries.get(name)) is None or mine.uid != uid or mine.phase is not None:
        return entries
    return {**entries, name: mine.model_copy(update={"phase": phase, "reason": reason, "finished": now()})}
