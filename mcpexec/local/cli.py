"""The `mcpexec` command: `mcpexec run TASK.yaml [--servers SERVERS.yaml]`, and `mcpexec serve [--servers
SERVERS.yaml] [--warm N] [--http PORT] [--egress-host HOST]... [--egress-port PORT]...` (an MCP server whose
execute_code runs in local sandboxes)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import logging
import os
import signal
import sys
from pathlib import Path

from pydantic import ValidationError

from gateway.settings import LLMSettings, LLMUpstream
from gateway.telemetry.logs import configure as configure_logs
from mcpexec.api.agenttask import AgentTask, parse_agenttask
from mcpexec.api.egress import EgressPolicy
from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.api.sandbox import DEFAULT_WORKSPACE_SIZE
from mcpexec.local.approvals import ALL
from mcpexec.local.run import (
    WORKSPACE_SIZE_RANGE,
    LocalOutcome,
    TaskError,
    parse_workspace_size,
    run_task,
)
from mcpexec.local.sandbox.base import Sandbox, SandboxError
from mcpexec.local.sandbox.process import UnsafeProcessSandbox
from mcpexec.local.sandbox.runsc import RunscSandbox
from mcpexec.local.serve import serve_http, serve_stdio
from mcpexec.local.servers import embedded_servers, load_servers_file
from mcpexec.local.sessions import LocalSessions
from mcpexec.local.terminal import neutralised
from mcpexec.local.yaml_files import YamlFileError, load_documents


class UsageError(Exception):
    pass


def load_task(path: Path) -> AgentTask:
    try:
        documents = load_documents(path)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    except YamlFileError as exc:
        raise UsageError(str(exc)) from None
    tasks = [d for d in documents if isinstance(d, dict) and d.get("kind") == "AgentTask"]
    if len(tasks) != 1:
        raise UsageError(f"{path} must hold exactly one AgentTask document, found {len(tasks)}")
    try:
        return parse_agenttask(tasks[0])
    except ValidationError as exc:
        problems = "\n".join(f"  {'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise UsageError(f"{path} is not a valid AgentTask:\n{problems}") from None
    except RecursionError:
        raise UsageError(f"{path} is nested too deeply") from None


def load_servers(path: Path | None) -> dict[str, MCPServerSpec]:
    """The --servers file, or the embedded default (our demo server)."""
    if path is not None:
        try:
            return load_servers_file(path)
        except OSError as exc:
            raise UsageError(f"cannot read {path}: {exc.strerror}") from None
        except (ValidationError, YamlFileError) as exc:
            raise UsageError(f"{path} is not a valid servers file: {exc}") from None
    return embedded_servers()


def llm_from_env() -> LLMUpstream | None:
    try:
        return LLMSettings().llm()
    except ValidationError as exc:
        raise UsageError(f"invalid LLM_* environment: {exc}") from None


def choose_sandbox(unsafe: bool) -> Sandbox:
    if unsafe:
        print(
            "WARNING: --unsafe-no-sandbox: the task's code runs as a plain process with this user's rights",
            file=sys.stderr,
        )
        return UnsafeProcessSandbox()
    return RunscSandbox()


def report(outcome: LocalOutcome, raw: bool) -> None:
    """The result on stdout (control characters neutralised on a terminal unless --raw), the rest as JSON.

    Characters stdout's encoding cannot carry (a non-UTF-8 locale) are escaped, as Python does on stderr: the
    task's text is shown, not a UnicodeEncodeError."""
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="backslashreplace")
    result = outcome.result.rstrip()
    print(result if raw or not sys.stdout.isatty() else neutralised(result))
    print(
        json.dumps(
            {
                "phase": outcome.phase,
                "error": outcome.error,
                "usage": outcome.usage,
                "sandbox": outcome.sandbox,
                "output": str(outcome.workspace / "output.log"),
            }
        ),
        file=sys.stderr,
    )


def egress_policy(hosts: list[str], ports: list[int] | None) -> EgressPolicy:
    """`mcpexec serve`'s --egress-host and --egress-port options as the sessions' egress."""
    try:
        return EgressPolicy(hosts=hosts, **({"ports": ports} if ports else {}))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise UsageError(f"--egress-host/--egress-port: {problems}") from None


async def serve(sessions: LocalSessions, http_port: int | None, approved: tuple[str, ...] = ()) -> None:
    """Until the MCP client leaves (stdio), SIGINT or SIGTERM; every sandbox is ended on the way out."""
    serving = asyncio.current_task()
    assert serving is not None
    for stop in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(stop, serving.cancel)
    await sessions.start()
    try:
        await (serve_stdio(sessions, approved) if http_port is None else serve_http(sessions, http_port, approved))
    finally:
        await sessions.close()


def _approved(args: argparse.Namespace) -> tuple[str, ...]:
    """The tools whose held calls are approved without asking (globs over server/tool)."""
    return (ALL,) if args.approve_all else tuple(args.approve or ())


def _common(command: argparse.ArgumentParser) -> None:
    command.add_argument("--servers", type=Path, help="MCP servers file (default: the embedded demo server)")
    command.add_argument(
        "--approve",
        action="append",
        metavar="TOOLGLOB",
        help="approve the calls of these tools (a glob over server/tool, e.g. 'crm/send_*'; repeatable) without "
        "asking; other calls that need approval are asked (a terminal, an MCP client's elicitation) or denied",
    )
    command.add_argument(
        "--approve-all", action="store_true", help="approve every call that needs approval without asking"
    )
    command.add_argument("--unsafe-no-sandbox", action="store_true", help="run without gVisor (NOT isolated)")
    command.add_argument(
        "--workspace-size",
        default=DEFAULT_WORKSPACE_SIZE,
        help=f"bound of /workspace, bytes and files, as a quantity from {' to '.join(WORKSPACE_SIZE_RANGE)} "
        f"(default {DEFAULT_WORKSPACE_SIZE}: one file or directory per 16 KiB); past it a write fails with ENOSPC",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mcpexec", description="Run AgentTasks locally under gVisor.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one AgentTask YAML in a local sandbox")
    run.add_argument("task", type=Path, help="the AgentTask YAML (the same file kubectl apply takes)")
    run.add_argument("--raw", action="store_true", help="print the result's control characters as they are")
    _common(run)
    serve_command = sub.add_parser(
        "serve", help="an MCP server (stdio, or streamable HTTP on loopback) whose execute_code runs in sandboxes"
    )
    serve_command.add_argument(
        "--warm", type=int, default=0, metavar="N", help="sandboxes kept started ahead of the sessions (default 0)"
    )
    serve_command.add_argument(
        "--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio"
    )
    serve_command.add_argument(
        "--egress-host",
        action="append",
        default=[],
        metavar="HOST",
        help="a host (or *.suffix) every session may reach through the gateway's egress proxy, within "
        "MCPEXEC_EGRESS's grant to namespace local (docs/egress.md); repeatable; default: no egress",
    )
    serve_command.add_argument(
        "--egress-port", action="append", type=int, metavar="PORT", help="a port for --egress-host (default 443)"
    )
    _common(serve_command)
    args = parser.parse_args(argv)
    level = os.environ.get("MCPEXEC_LOG_LEVEL", "WARNING").upper()
    configure_logs(logging.getLevelNamesMapping().get(level, logging.WARNING))
    try:
        servers = load_servers(args.servers)
        workspace_bytes = parse_workspace_size(args.workspace_size)
        sandbox = choose_sandbox(args.unsafe_no_sandbox)
        if args.command == "serve":
            if args.warm < 0:
                raise UsageError("--warm takes a number of sandboxes, 0 or more")
            sessions = LocalSessions(
                servers,
                sandbox,
                args.warm,
                workspace_bytes,
                os.environ.get("REDIS_URL"),
                llm_from_env(),
                egress_policy(args.egress_host, args.egress_port),
            )
            with contextlib.suppress(asyncio.CancelledError):
                asyncio.run(serve(sessions, args.http, _approved(args)))
            return 0
        task = load_task(args.task)
        outcome = asyncio.run(
            run_task(
                task,
                servers,
                sandbox,
                os.environ.get("REDIS_URL"),
                llm_from_env(),
                workspace_bytes,
                _approved(args),
            )
        )
    except (UsageError, TaskError, SandboxError) as exc:
        print(f"mcpexec: {exc}", file=sys.stderr)
        return 2
    report(outcome, args.raw)
    return 0 if outcome.phase == "Succeeded" else 1


if __name__ == "__main__":
    sys.exit(main())
