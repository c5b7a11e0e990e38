"""The host user a local gVisor sandbox runs as: `mcpexec-sandbox`, a system user of its own.

gVisor makes the sandbox's files on the host with the sandbox's uid and gid. Under the shared `nobody` (65534),
whatever else on this machine runs as nobody could change an owner's skills or a run's files while they are on the
host, and a set-id file left by a task would be a door into that uid. A system user made for mcpexec owns nothing
else and runs nothing else. `useradd --system` gives it a uid of the system range no other account holds; it is
made on the first run (the CLI runs as root) and looked up after that. In the cluster the pod's uid stays 65534
(runtime/contract.py): its files live in the kubelet's root-only pod directories and the task's own volumes.
"""

from __future__ import annotations

import functools
import logging
import os
import pwd
from dataclasses import dataclass

from mcpexec.local.sandbox.base import SandboxError
from mcpexec.local.sandbox.system_tools import run_tool

log = logging.getLogger(__name__)

SANDBOX_USER = "mcpexec-sandbox"
USERADD = ("useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
           "--shell", "/usr/sbin/nologin", "--comment", "mcpexec sandboxes")  # fmt: skip


@dataclass(frozen=True)
class HostUser:
    uid: int
    gid: int


@functools.cache
def sandbox_user() -> HostUser:
    """The uid and gid the sandbox runs as: mcpexec-sandbox's when this process is root (made if missing); without
    root, this process's own (the unconfined process sandbox runs as its caller)."""
    if os.geteuid() != 0:
        return HostUser(os.geteuid(), os.getegid())
    try:
        entry = pwd.getpwnam(SANDBOX_USER)
    except KeyError:
        made = run_tool(*USERADD, SANDBOX_USER)
        try:  # another run may have made it first: useradd then fails, and the user is there
            entry = pwd.getpwnam(SANDBOX_USER)
        except KeyError:
            raise SandboxError(
                f"the sandbox's own system user {SANDBOX_USER!r} could not be made ({made.stderr.strip()}): "
                f"make it with `{' '.join(USERADD)} {SANDBOX_USER}`"
            ) from None
        log.info("sandbox user made", extra={"user": SANDBOX_USER, "uid": entry.pw_uid, "gid": entry.pw_gid})
    if entry.pw_uid == 0 or entry.pw_gid == 0:
        raise SandboxError(f"the system user {SANDBOX_USER!r} has uid or gid 0: a sandbox never runs as root")
    return HostUser(entry.pw_uid, entry.pw_gid)
