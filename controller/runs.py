"""A task name's run record in the cluster (what it means: controller/ledger.py): taken as the launch decision,
looked up before a refusal, given the run's outcome, withdrawn when nothing launched, deleted past the retention, and
migrated from the legacy namespace-wide ledger."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from controller import ledger
from controller.kube import Cluster
from controller.naming import run_record_name
from mcpexec.api.agenttask import Phase
from mcpexec.api.meta import RUN_RECORD_LABEL

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Taken:
    """The name is this task's to run. `resumed`: an earlier reconcile of this very task took it (it may have
    launched something the status does not name yet)."""

    record: dict[str, Any]
    resumed: bool


def take(cluster: Cluster, document: dict[str, Any]) -> Taken | ledger.Refusal:
    """The launch decision: the record created for this task (or found to be its own already), or why the task is
    not run (its name ran). A run-again with a new value replaces the earlier run's record."""
    wanted = ledger.launch(document)
    found, created = cluster.create_record(wanted)
    if created:
        return Taken(found, resumed=False)
    record = ledger.record_of(found)
    if record is not None and record.uid == document["metadata"]["uid"]:
        return Taken(found, resumed=True)
    refused = ledger.refusal(record, document)
    if refused is not None:
        return refused
    return Taken(cluster.replace_record(wanted, found["metadata"]["resourceVersion"]), resumed=False)


def look(cluster: Cluster, document: dict[str, Any]) -> Taken | ledger.Refusal | None:
    """What the name's record says of this task, without taking it: its own (it took it earlier), a refusal (the
    name ran), or None (free to take, or free again for a run-again)."""
    meta = document["metadata"]
    found = cluster.read_record(meta["namespace"], run_record_name(meta["name"]))
    if found is None:
        return None
    record = ledger.record_of(found)
    if record is not None and record.uid == meta["uid"]:
        return Taken(found, resumed=True)
    return ledger.refusal(record, document)


def withdraw(cluster: Cluster, taken: Taken) -> None:
    """Give the name back: this task took it but launched nothing (no idle sandbox after all, and it waits)."""
    meta = taken.record["metadata"]
    cluster.delete_config_map(meta["namespace"], meta["name"], meta["resourceVersion"])


def finish(cluster: Cluster, task: dict[str, Any], phase: Phase, reason: str) -> None:
    """The run's outcome into its record: one write, by the only task that writes it."""
    meta = task["metadata"]
    patch = ledger.outcome_patch(meta["uid"], phase, reason)
    if not cluster.patch_record(meta["namespace"], run_record_name(meta["name"]), patch):
        log.warning("no run record of %s/%s (uid %s) to finish", meta["namespace"], meta["name"], meta["uid"])


def sweep(cluster: Cluster, retention_days: int) -> int:
    """Delete the records past the retention (controller/ledger.py: expired); how many went."""
    if retention_days == 0:
        return 0
    at, deleted = datetime.now(UTC), 0
    for found in cluster.config_maps(selector=RUN_RECORD_LABEL):
        if ledger.expired(ledger.record_of(found), at, retention_days):
            meta = found["metadata"]
            deleted += cluster.delete_config_map(meta["namespace"], meta["name"], meta["resourceVersion"])
    return deleted


def migrate(cluster: Cluster) -> int:
    """Turn each namespace's legacy ledger into records (an existing record is newer, and kept), then delete it:
    an upgrade keeps refusing the names that ran. Runs before any reconcile; how many records it made."""
    made = 0
    for legacy in cluster.config_maps(field_selector=f"metadata.name={ledger.LEGACY_LEDGER_NAME}"):
        meta = legacy["metadata"]
        for name, record in ledger.legacy_records(legacy.get("data")).items():
            made += cluster.create_record(ledger.manifest(meta["namespace"], name, record))[1]
        cluster.delete_config_map(meta["namespace"], meta["name"], meta["resourceVersion"])
        log.info("migrated the run-once ledger of %s to run records", meta["namespace"])
    return made
