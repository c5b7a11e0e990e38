"""`mcpexec run`: one AgentTask on this machine: an in-process gateway, the task in a local sandbox.

The same AgentTask YAML as `kubectl apply` takes; the same runtime as the cluster's Job; the sandbox
reaches the gateway only through a Unix socket mounted into it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kubernetes.utils.quantity import parse_quantity

from gateway.local.in_process import LocalGateway
from gateway.pii import presidio_detector
from gateway.pii.protection import DEFAULT_MINIMUM, combine
from gateway.settings import LLMUpstream
from mcpexec.api.agenttask import AgentTask, Phase, runtime_task_config
from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.api.result import RuntimeResult
from mcpexec.local.hostfs import UnsafeHostFile, read_beneath, sweep
from mcpexec.local.sandbox.base import Completed, Sandbox, SandboxRun
from runtime import contract

log = logging.getLogger("mcpexec.local_run")  # the logger name users filter on, kept from before the move

# When a task sets no limit (the AgentTask's default limits are 1 CPU and 512Mi).
DEFAULT_MEMORY = "512Mi"
DEFAULT_CPU = "1"


class TaskError(Exception):
    """The task cannot be run as given (unknown server, no sandbox...): a message for the user."""


@dataclass(frozen=True)
class LocalOutcome:
    phase: str
    result: str
    error: str | None
    usage: dict[str, int]
    workspace: Path
    sandbox: str


def state_root() -> Path:
    return Path(os.environ.get("MCPEXEC_HOME", Path.home() / ".local" / "share" / "mcpexec"))


def _only_for_sandbox(path: Path, mode: int) -> None:
    """The gateway's socket and its directory: reachable by the sandbox's uid (gVisor connects as it) and root,
    not by other users of this machine. Without root the sandbox runs as this user, who owns them already."""
    if os.geteuid() == 0:
        os.chown(path, contract.SANDBOX_UID, contract.SANDBOX_UID)
    path.chmod(mode)


def _writable_by_sandbox(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        os.chown(path, contract.SANDBOX_UID, contract.SANDBOX_UID)
    else:
        path.chmod(0o777)
    return path


def _memory_bytes(task: AgentTask) -> int:
    return int(parse_quantity(task.spec.resources.limits.memory or DEFAULT_MEMORY))


def _cpu_millicores(task: AgentTask) -> int:
    return int(parse_quantity(task.spec.resources.limits.cpu or DEFAULT_CPU) * 1000)


def _sandbox_stopped(completed: Completed, why: str) -> RuntimeResult:
    detail = (completed.stderr or completed.stdout).strip()[-2000:]
    return RuntimeResult(
        phase=Phase.FAILED,
        error=f"the sandbox stopped before the task finished (exit {completed.exit_code}): {why}"
        f"{': ' + detail if detail else ''}",
    )


def _read_result(workspace: Path, completed: Completed) -> RuntimeResult | None:
    """The runtime's result.json, read as untrusted (no links, a regular file, bounded, the contract's shape);
    None when the task timed out. Success needs both the result's word and a zero exit.

    json.loads, not pydantic's parser, which refuses the `\\ud800` escape of a lone surrogate the task printed
    (the model escapes its text); bounded to RESULT_LIMIT bytes, its nesting can still exceed the recursion limit."""
    if completed.timed_out:
        return None
    relative = str(Path(contract.LOCAL_RESULT_FILE).relative_to(contract.WORKSPACE))
    try:
        result = RuntimeResult.model_validate(json.loads(read_beneath(workspace, relative, contract.RESULT_LIMIT)))
    except FileNotFoundError:
        return _sandbox_stopped(completed, "it hit its memory or process limit, or could not start")
    except UnsafeHostFile as exc:
        return _sandbox_stopped(completed, f"its result was refused: {exc}")
    except (ValueError, RecursionError):  # not UTF-8, not JSON, not the contract's shape: all ValueErrors
        return _sandbox_stopped(completed, "its result.json is not a result (docs/contracts.md)")
    if result.phase == Phase.SUCCEEDED and completed.exit_code != 0:
        return _sandbox_stopped(completed, "the result says Succeeded, the exit code says otherwise")
    return result


@dataclass(frozen=True)
class RunPaths:
    workspace: Path
    task_dir: Path
    skills: Path
    socket: Path


def _sweep(paths: RunPaths) -> None:
    """What the sandbox left in the run's workspace and the owner's skills, made harmless for the host (hostfs)."""
    for left in (paths.workspace, paths.skills):
        try:
            changed = sweep(left)
        except UnsafeHostFile as exc:
            log.warning("not swept", extra={"path": str(left), "reason": str(exc)})
            continue
        if changed:
            log.info("swept", extra={"path": str(left), "entries_changed": changed})


def _skills_seal_key() -> bytes:
    """This machine's key for skills' seals (gateway/tools/skill_seals.py), made on first use: skills persist
    across runs, so their seals must too. Only this user reads it; a sandbox never sees the state root."""
    path = state_root() / "skills-seal.key"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        try:
            key = read_beneath(path.parent, path.name, 1024)
        except UnsafeHostFile as exc:
            raise TaskError(f"{path}: {exc}") from None
        if len(key) < 32:
            raise TaskError(f"{path} holds no usable key (under 32 bytes): remove it to make a new one") from None
        return key
    with os.fdopen(descriptor, "wb") as out:
        key = os.urandom(32).hex().encode()
        out.write(key)
    return key


def _prepare(task: AgentTask) -> RunPaths:
    """The run's directories: kept under the state root (workspace and output.log stay for inspection)."""
    root = state_root()
    run_dir = root / "runs" / f"{task.metadata.name}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    task_dir = run_dir / "task"
    task_dir.mkdir(parents=True)
    (task_dir / Path(contract.TASK_FILE).name).write_text(
        json.dumps(runtime_task_config(task.metadata.namespace, task.metadata.name, task.metadata.uid or "", task.spec))
    )
    skills = task.spec.skills
    # Unix socket paths are limited to ~100 bytes: the socket lives in a short temporary directory.
    socket_dir = Path(tempfile.mkdtemp(prefix="mcpexec-gw-"))
    _only_for_sandbox(socket_dir, 0o700)
    workspace = _writable_by_sandbox(run_dir / "workspace")
    _writable_by_sandbox(workspace / Path(contract.LOCAL_TMP).relative_to(contract.WORKSPACE))
    return RunPaths(
        workspace=workspace,
        task_dir=task_dir,
        skills=_writable_by_sandbox(root / "skills" / skills.owner if skills else run_dir / "skills"),
        socket=socket_dir / contract.SOCKET_NAME,
    )


async def run_task(
    task: AgentTask,
    servers: dict[str, MCPServerSpec],
    sandbox: Sandbox,
    redis_url: str | None = None,
    llm: LLMUpstream | None = None,
) -> LocalOutcome:
    unknown = [name for name in task.spec.mcp_servers if name not in servers]
    if unknown:
        raise TaskError(f"unknown MCP server(s) {unknown}; the servers file defines {sorted(servers)}")
    declarations = [*(servers[name].pii for name in task.spec.mcp_servers), task.spec.pii]
    names_and_places = sorted(presidio_detector.NER_ENTITIES & combine(DEFAULT_MINIMUM, declarations).entities)
    if names_and_places and (missing := presidio_detector.available()) is not None:
        raise TaskError(f"the task's data must be checked for {', '.join(names_and_places)}: {missing}")
    paths = await asyncio.to_thread(_prepare, task)
    gateway = LocalGateway(
        {name: servers[name] for name in task.spec.mcp_servers},
        redis_url=redis_url,
        llm=llm,
        pii_ner=bool(names_and_places),
        skills_key=await asyncio.to_thread(_skills_seal_key),
    )
    try:
        await gateway.start(str(paths.socket))
        _only_for_sandbox(paths.socket, 0o600)
        token = gateway.register_task(task, ttl_seconds=task.spec.timeout_seconds + 60)
        run = SandboxRun(
            workspace=paths.workspace,
            skills=paths.skills,
            skills_read_only=bool(task.spec.skills and task.spec.skills.read_only),
            task_dir=paths.task_dir,
            socket_dir=paths.socket.parent,
            env=contract.sandbox_environment(
                gateway_url=contract.local_gateway_url(),
                result_file=contract.LOCAL_RESULT_FILE,
                tmpdir=contract.LOCAL_TMP,
                token=token,
            ),
            timeout_seconds=task.spec.timeout_seconds,
            memory_bytes=_memory_bytes(task),
            cpu_millicores=_cpu_millicores(task),
        )
        log.info("sandbox starting", extra={"task": task.task_id, "sandbox": sandbox.name, "run": str(paths.workspace)})
        started = time.monotonic()
        completed = await asyncio.to_thread(sandbox.run, run)
        log.info(
            "sandbox finished",
            extra={
                "task": task.task_id,
                "exit_code": completed.exit_code,
                "timed_out": completed.timed_out,
                "seconds": round(time.monotonic() - started, 3),
                "sandbox_stderr": completed.stderr[-2000:],
            },
        )
        usage = gateway.usage(task.task_id)
    finally:
        await gateway.stop()
        shutil.rmtree(paths.socket.parent, ignore_errors=True)
    result = _read_result(paths.workspace, completed)
    await asyncio.to_thread(_sweep, paths)
    # The gateway counted the calls it served; the sandbox's own count cannot inflate or hide them.
    return LocalOutcome(
        phase=Phase.TIMED_OUT if result is None else result.phase,
        result="" if result is None else result.result,
        error="the task ran past its timeoutSeconds" if result is None else result.error,
        usage=usage,
        workspace=paths.workspace,
        sandbox=sandbox.name,
    )
