"""`mcpexec run`: one AgentTask on this machine: an in-process gateway, the task in a local sandbox.

The same AgentTask YAML as `kubectl apply` takes; the same runtime as the cluster's Job; the sandbox
reaches the gateway only through a Unix socket mounted into it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from kubernetes.utils.quantity import parse_quantity

from gateway.egress.settings import EgressSettings
from gateway.local.in_process import LocalGateway
from gateway.pii import presidio_detector
from gateway.pii.protection import DEFAULT_MINIMUM, combine
from gateway.settings import LLMUpstream
from mcpexec import tracing
from mcpexec.api.agenttask import AgentTask, Phase, runtime_task_config
from mcpexec.api.egress import widening as egress_widening
from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.api.meta import TRACEPARENT_ANNOTATION
from mcpexec.api.pii import PiiDeclaration
from mcpexec.api.reasons import Reason
from mcpexec.api.result import RuntimeResult
from mcpexec.api.sandbox import DEFAULT_WORKSPACE_SIZE, SCRATCH_SKILLS_SIZE
from mcpexec.local.approvals import TerminalApprover
from mcpexec.local.hostfs import UnsafeHostFile, read_beneath, sweep
from mcpexec.local.run_pruning import prune_runs
from mcpexec.local.sandbox.base import Completed, Sandbox, SandboxRun
from mcpexec.local.sandbox.identity import sandbox_user
from runtime import contract

log = logging.getLogger("mcpexec.local_run")  # the logger name users filter on, kept from before the move

# When a task sets no limit (the AgentTask's default limits are 1 CPU and 512Mi).
DEFAULT_MEMORY = "512Mi"
DEFAULT_CPU = "1"
# What `--workspace-size` may ask (its default: DEFAULT_WORKSPACE_SIZE, the cluster's): at least room for
# output.log's 16 MiB, at most what a laptop's disk can be expected to give one run.
WORKSPACE_SIZE_RANGE = ("16Mi", "64Gi")
# Run folders kept under runs/ (MCPEXEC_KEEP_RUNS): a working session's worth to look back at, while the worst case
# a hostile task can pin on the disk stays this many workspace bounds (20 GiB at the default).
DEFAULT_KEPT_RUNS = 20


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


def parse_workspace_size(size: str) -> int:
    """A workspace size given as a Kubernetes quantity (`1Gi`, `512Mi`), within WORKSPACE_SIZE_RANGE."""
    low, high = (int(parse_quantity(bound)) for bound in WORKSPACE_SIZE_RANGE)
    try:
        value = int(parse_quantity(size))
    except ValueError:
        value = -1
    if not low <= value <= high:
        low_text, high_text = WORKSPACE_SIZE_RANGE
        raise TaskError(f"the workspace size must be a quantity from {low_text} to {high_text}, not {size!r}")
    return value


DEFAULT_WORKSPACE_BYTES = parse_workspace_size(DEFAULT_WORKSPACE_SIZE)


def kept_runs() -> int:
    """How many run folders `mcpexec run` keeps (MCPEXEC_KEEP_RUNS, at least 1: the run's own)."""
    text = os.environ.get("MCPEXEC_KEEP_RUNS", str(DEFAULT_KEPT_RUNS))
    if not text.strip().isdigit() or int(text) < 1:
        raise TaskError(f"MCPEXEC_KEEP_RUNS must be a whole number of runs, 1 or more, not {text!r}")
    return int(text)


def _only_for_sandbox(path: Path, mode: int) -> None:
    """The gateway's socket and its directory: reachable by the sandbox's user (gVisor connects as it) and root,
    not by other users of this machine. Without root the sandbox runs as this user, who owns them already."""
    user = sandbox_user()
    os.chown(path, user.uid, user.gid)
    path.chmod(mode)


def _writable_by_sandbox(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    user = sandbox_user()
    os.chown(path, user.uid, user.gid)
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
        written = read_beneath(workspace, relative, contract.RESULT_LIMIT)
    except FileNotFoundError:
        written = b""
    except UnsafeHostFile as exc:
        return _sandbox_stopped(completed, f"its result was refused: {exc}")
    if not written:  # missing, or still the empty one a bounded workspace starts with (its room reserved)
        return _sandbox_stopped(completed, "it hit its memory or process limit, or could not start")
    try:
        result = RuntimeResult.model_validate(json.loads(written))
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
    skills_bytes: int
    skills_owned: bool
    socket: Path


def _sweep_skills(skills: Path) -> None:
    """What the sandbox left in the owner's skills, made harmless for the host in place (hostfs). The workspace and a
    run's own skills need no sweep: their images are copied out as plain files (Sandbox.workspace)."""
    try:
        changed = sweep(skills)
    except UnsafeHostFile as exc:
        log.warning("not swept", extra={"path": str(skills), "reason": str(exc)})
        return
    if changed:
        log.info("swept", extra={"path": str(skills), "entries_changed": changed})


def _skills_seal_key() -> bytes:
    """This machine's key for skills' seals (gateway/tools/skill_seals.py), made on first use: skills persist
    across runs, so their seals must too. Only this user reads it; a sandbox never sees the state root. A new key
    is written whole to a file of its own, then linked into place (a link never replaces a file): a run starting
    at the same moment reads either no key file or the whole key, never a half-written one."""
    path = state_root() / "skills-seal.key"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not os.path.lexists(path):
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".skills-seal-", delete=True) as new:
            new.write(os.urandom(32).hex().encode())  # mode 0600: NamedTemporaryFile's own
            new.flush()
            with contextlib.suppress(FileExistsError):  # another run's key is in place: it wins
                os.link(new.name, path)
    try:
        key = read_beneath(path.parent, path.name, 1024)
    except UnsafeHostFile as exc:
        raise TaskError(f"{path}: {exc}") from None
    if len(key) < 32:
        raise TaskError(f"{path} holds no usable key (under 32 bytes): remove it to make a new one")
    return key


def gateway_socket() -> Path:
    """Where a local gateway serves its sandboxes: a fresh directory only they (and root) may enter. Unix socket
    paths are limited to ~100 bytes: a short temporary directory."""
    socket_dir = Path(tempfile.mkdtemp(prefix="mcpexec-gw-"))
    _only_for_sandbox(socket_dir, 0o700)
    return socket_dir / contract.SOCKET_NAME


def prepare(
    task: AgentTask, keep_runs: int, socket: Path, session: bool = False, traceparent: str | None = None
) -> RunPaths:
    """The run's directories: kept under the state root (workspace and output.log stay for inspection), with the
    `keep_runs` - 1 most recent other runs; its task.json (a `session`'s, of mode "session", for `mcpexec serve`;
    `traceparent`: the trace its runtime continues)."""
    root = state_root()
    (root / "runs").mkdir(parents=True, exist_ok=True)
    # Unique even for runs of one name started in the same second by one process (mkdtemp's random suffix).
    run_dir = Path(
        tempfile.mkdtemp(prefix=f"{task.metadata.name}-{time.strftime('%Y%m%d-%H%M%S')}-", dir=root / "runs")
    )
    run_dir.chmod(0o755)
    task_dir = run_dir / "task"
    task_dir.mkdir()
    prune_runs(run_dir.parent, keep_runs)
    (task_dir / Path(contract.TASK_FILE).name).write_text(
        json.dumps(
            runtime_task_config(
                task.metadata.namespace,
                task.metadata.name,
                task.metadata.uid or "",
                task.spec,
                session=session,
                traceparent=traceparent,
            )
        )
    )
    skills = task.spec.skills
    (root / "skills").mkdir(exist_ok=True)
    return RunPaths(
        workspace=_writable_by_sandbox(run_dir / "workspace"),
        task_dir=task_dir,
        # An owner's directory is where its image is mounted (skills_image.py), made ready there.
        skills=root / "skills" / skills.owner if skills else _writable_by_sandbox(run_dir / "skills"),
        skills_bytes=int(parse_quantity(skills.size if skills else SCRATCH_SKILLS_SIZE)),
        skills_owned=skills is not None,
        socket=socket,
    )


def sandbox_run(task: AgentTask, paths: RunPaths, token: str, env: dict[str, str] | None = None) -> SandboxRun:
    """The task's sandbox: its paths, the runtime's environment (plus `env`), the task's limits."""
    return SandboxRun(
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
            egress_proxy=contract.local_egress_proxy() if task.spec.egress.granted else None,
        )
        | (env or {}),
        timeout_seconds=task.spec.timeout_seconds,
        memory_bytes=_memory_bytes(task),
        cpu_millicores=_cpu_millicores(task),
    )


def sandboxed(
    sandbox: Sandbox, run: SandboxRun, paths: RunPaths, size_bytes: int, stop: threading.Event | None = None
) -> tuple[Completed, RuntimeResult | None]:
    """The sandbox in its workspace and skills, until it ends or `stop` is set. Its result is read while the
    workspace is still the sandbox's own: the plain copy the user gets has no links, so a result planted as a link
    would read as missing instead of refused. The owner's skills are swept while they are still mounted."""
    with sandbox.skills(paths.skills, paths.skills_bytes, paths.skills_owned):
        with sandbox.workspace(run.workspace, size_bytes):
            _writable_by_sandbox(run.workspace / Path(contract.LOCAL_TMP).relative_to(contract.WORKSPACE))
            completed = sandbox.run(run, stop)
            outcome = completed, _read_result(run.workspace, completed)
        if paths.skills_owned:
            _sweep_skills(paths.skills)
    return outcome


async def local_gateway(
    servers: dict[str, MCPServerSpec],
    declarations: list[PiiDeclaration],
    redis_url: str | None = None,
    llm: LLMUpstream | None = None,
) -> LocalGateway:
    """The in-process gateway for `servers` (each one's PII declarations, plus `declarations`): names and places
    are detected (Presidio) when any of them, or the built-in minimum, asks for it; fails closed when it cannot."""
    declared = [*(spec.pii for spec in servers.values()), *declarations]
    names_and_places = sorted(presidio_detector.NER_ENTITIES & combine(DEFAULT_MINIMUM, declared).entities)
    if names_and_places and (missing := presidio_detector.available()) is not None:
        raise TaskError(f"the task's data must be checked for {', '.join(names_and_places)}: {missing}")
    return LocalGateway(
        servers,
        redis_url=redis_url,
        llm=llm,
        pii_ner=bool(names_and_places),
        skills_key=await asyncio.to_thread(_skills_seal_key),
    )


async def serve_sandboxes(gateway: LocalGateway, socket: Path) -> None:
    """Start `gateway` on `socket`, and its egress proxy next to it, which only the sandboxes' user (and root) may
    use."""
    await gateway.start(str(socket))
    _only_for_sandbox(socket, 0o600)
    egress = socket.with_name(contract.EGRESS_SOCKET_NAME)
    await gateway.serve_egress(str(egress))
    _only_for_sandbox(egress, 0o600)


def refuse_widened_egress(task: AgentTask) -> None:
    """A task (or `mcpexec serve`'s session) asking for more egress than it is granted does not start. The ceiling
    and the grants are this machine's user's, from the gateway's own variables (MCPEXEC_EGRESS...)."""
    wider = egress_widening(task.spec.egress, EgressSettings().admin.bounds(task.metadata.namespace))
    if wider:
        raise TaskError(f"{Reason.POLICY_WIDENED}: {'; '.join(wider)}")


async def run_task(
    task: AgentTask,
    servers: dict[str, MCPServerSpec],
    sandbox: Sandbox,
    redis_url: str | None = None,
    llm: LLMUpstream | None = None,
    workspace_bytes: int = DEFAULT_WORKSPACE_BYTES,
    approved: tuple[str, ...] = (),
) -> LocalOutcome:
    """Run the task; its calls held for approval are decided by `approved` (globs over server/tool), else at the
    terminal, else denied (mcpexec/local/approvals.py)."""
    unknown = [name for name in task.spec.mcp_servers if name not in servers]
    if unknown:
        raise TaskError(f"unknown MCP server(s) {unknown}; the servers file defines {sorted(servers)}")
    refuse_widened_egress(task)
    if task.spec.pool_ref is not None:  # a cluster's SandboxPool: here every run starts its own sandbox anyway
        log.info("no pools locally: a fresh sandbox runs the task", extra={"poolRef": task.spec.pool_ref.name})
    tracing.configure("mcpexec")  # on only with an OTLP endpoint in the environment
    creator = (task.metadata.model_extra or {}).get("annotations", {}).get(TRACEPARENT_ANNOTATION)
    attributes = tracing.task_attributes({**task.metadata.model_dump(), "uid": task.metadata.uid or ""})
    with tracing.span("mcpexec.run", attributes, parent=creator) as span:
        traceparent = tracing.traceparent_of(span)
        socket = await asyncio.to_thread(gateway_socket)
        paths = await asyncio.to_thread(prepare, task, kept_runs(), socket, False, traceparent)
        gateway = await local_gateway(
            {name: servers[name] for name in task.spec.mcp_servers}, [task.spec.pii], redis_url, llm
        )
        approver: asyncio.Task[None] | None = None
        try:
            await serve_sandboxes(gateway, socket)
            token = gateway.register_task(task, task.spec.timeout_seconds + 60, traceparent)
            context = gateway.context(task.task_id)
            assert context is not None
            approver = asyncio.create_task(
                TerminalApprover(approved).answer(
                    gateway.core, context, await gateway.core.approvals.holds.cursor(context.scope)
                )
            )
            run = sandbox_run(task, paths, token)
            log.info(
                "sandbox starting", extra={"task": task.task_id, "sandbox": sandbox.name, "run": str(paths.workspace)}
            )
            started = time.monotonic()
            completed, result = await asyncio.to_thread(sandboxed, sandbox, run, paths, workspace_bytes)
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
            if approver is not None:
                approver.cancel()
            await gateway.stop()
            shutil.rmtree(paths.socket.parent, ignore_errors=True)
    # The gateway counted the calls it served; the sandbox's own count cannot inflate or hide them.
    return LocalOutcome(
        phase=Phase.TIMED_OUT if result is None else result.phase,
        result="" if result is None else result.result,
        error="the task ran past its timeoutSeconds" if result is None else result.error,
        usage=usage,
        workspace=paths.workspace,
        sandbox=sandbox.name,
    )
