"""The sandbox's contract with whatever starts it, defined once (docs/contracts.md).

The runtime reads it inside the sandbox; the operator's Job (controller/manifests.py) and `mcpexec run`
(mcpexec/local/run.py) build the sandbox from it, so the environment names, the paths inside the sandbox and
the result's fields cannot drift apart. Standard library only, like the rest of the runtime.
"""

from __future__ import annotations

import keyword
import re

# The uid sandboxed code runs as, in the Job's pod and in `mcpexec run`'s gVisor sandbox alike.
SANDBOX_UID = 65534

# Paths inside the sandbox: the same layout in the Job's pod and in a local sandbox.
WORKSPACE = "/workspace"
SKILLS = "/skills"
TASK_DIR = "/etc/mcpexec"
TASK_FILE = f"{TASK_DIR}/task.json"
# Cluster: the projected ServiceAccount token (audience: the gateway) and the kubelet's termination message.
TOKEN_DIR = "/var/run/secrets/mcpexec"
TOKEN_NAME = "token"
TOKEN_FILE = f"{TOKEN_DIR}/{TOKEN_NAME}"
TERMINATION_LOG = "/dev/termination-log"
CLUSTER_TMP = "/tmp"
# Local: the gateway's Unix socket, and the result and TMPDIR inside the workspace, so that /workspace and
# /skills stay the only writable places.
SOCKET_DIR = "/run/mcpexec"
SOCKET_NAME = "gateway.sock"
LOCAL_RESULT_FILE = f"{WORKSPACE}/.mcpexec/result.json"
LOCAL_TMP = f"{WORKSPACE}/.tmp"

# The environment the runtime reads (runtime/config.py).
GATEWAY_URL_ENV = "MCPEXEC_GATEWAY_URL"
TOKEN_FILE_ENV = "MCPEXEC_TOKEN_FILE"
TOKEN_ENV = "MCPEXEC_TOKEN"
TASK_FILE_ENV = "MCPEXEC_TASK_FILE"
RESULT_FILE_ENV = "MCPEXEC_RESULT_FILE"
WORKSPACE_ENV = "MCPEXEC_WORKSPACE"
SKILLS_ENV = "MCPEXEC_SKILLS"
# Set in a SandboxPool's pods: no task file; the runtime starts, then asks the gateway for its task (ASSIGNMENT_PATH,
# a long poll) until the operator claims the pod for one.
AWAIT_ASSIGNMENT_ENV = "MCPEXEC_AWAIT_ASSIGNMENT"
ASSIGNMENT_PATH = "/v1/assignment"
# Where a pool sandbox marks itself ready once the gateway has answered its first poll (everything imported, the
# connection open): the pod's startup probe waits for it, so a "ready" idle sandbox is one waiting for a task.
READY_FILE_ENV = "MCPEXEC_READY_FILE"
READY_FILE = f"{CLUSTER_TMP}/mcpexec-ready"
# A task config of mode "session" (`mcpexec serve`'s task.json, a claimed pool sandbox's assignment) is an interactive
# session: the runtime long-polls SESSION_NEXT_PATH for code to run and posts each outcome to
# SESSION_EXECUTIONS_PATH/<id>, until the gateway ends the session (docs/contracts.md).
SESSION_MODE = "session"
SESSION_NEXT_PATH = "/v1/session/next"
SESSION_EXECUTIONS_PATH = "/v1/session/executions"

# The termination result: {phase, result, error?, usage: {USAGE_FIELDS}}, at most this many bytes (the kubelet's
# limit on a termination message).
RESULT_LIMIT = 4096
USAGE_FIELDS = ("llmTurns", "tokensIn", "tokensOut", "toolCalls")
# Set where the result goes to the kubelet's termination message, which reaches the operator only after the pod has
# exited and the kubelet has reported it: the runtime first posts the same document to RESULT_REPORT_PATH (once; the
# termination message stays the fallback), and the gateway records it in the task's status at once.
REPORT_RESULT_ENV = "MCPEXEC_REPORT_RESULT"
RESULT_REPORT_PATH = "/v1/task/result"
# The gateway's egress proxy (docs/egress.md): `http://host:port` in a cluster, its Unix socket locally. The runtime
# points the task's tools at it (through a loopback listener of its own) when the task config grants egress.
EGRESS_PROXY_ENV = "MCPEXEC_EGRESS_PROXY"
EGRESS_SOCKET_NAME = "egress.sock"
# The gateway's LLM proxy (OpenAI chat completions), the runtime's only model.
LLM_PATH = "/v1/llm/chat/completions"


def local_gateway_url() -> str:
    return f"unix://{SOCKET_DIR}/{SOCKET_NAME}"


def local_egress_proxy() -> str:
    return f"unix://{SOCKET_DIR}/{EGRESS_SOCKET_NAME}"


def sandbox_environment(
    *,
    gateway_url: str,
    result_file: str,
    tmpdir: str,
    token_file: str | None = None,
    token: str | None = None,
    egress_proxy: str | None = None,
) -> dict[str, str]:
    """The runtime's environment: the gateway and one credential for it (a token file the kubelet rotates, or
    a token), where the task and the result are (and whether to report the result to the gateway first), the
    sandbox's only writable places, and where the gateway's egress proxy is (used only by a task granted egress)."""
    if (token_file is None) == (token is None):
        raise ValueError("a sandbox gets exactly one gateway credential: a token file or a token")
    credential = {TOKEN_FILE_ENV: token_file} if token_file is not None else {TOKEN_ENV: str(token)}
    # Only the termination message is slow to arrive: a result file the host reads at the sandbox's exit is not.
    report = {REPORT_RESULT_ENV: "1"} if result_file == TERMINATION_LOG else {}
    egress = {EGRESS_PROXY_ENV: egress_proxy} if egress_proxy else {}
    return {
        GATEWAY_URL_ENV: gateway_url,
        **credential,
        **report,
        **egress,
        TASK_FILE_ENV: TASK_FILE,
        RESULT_FILE_ENV: result_file,
        WORKSPACE_ENV: WORKSPACE,
        SKILLS_ENV: SKILLS,
        "HOME": WORKSPACE,
        "TMPDIR": tmpdir,
    }


def python_identifier(name: str) -> str:
    """The identifier rule for server and tool names in wrappers: non-`[A-Za-z0-9_]` -> `_`, a leading digit (or
    nothing) gets a `_` in front, a keyword a `_` behind (`if` -> `if_`)."""
    ident = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not ident or ident[0].isdigit():
        ident = "_" + ident
    return ident + "_" if keyword.iskeyword(ident) else ident


# Tracing (docs/observability.md): the task's W3C trace context, handed to the runtime in its task config
# (TRACEPARENT_KEY); the runtime sends it on to the gateway with each request (TRACEPARENT_HEADER) and posts its own
# finished spans to TRACES_PATH (the sandbox has no other egress), at most TRACE_SPANS_PER_POST a post.
TRACEPARENT_KEY = "traceparent"
TRACEPARENT_HEADER = "traceparent"
TRACEPARENT_PATTERN = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
TRACES_PATH = "/v1/traces"
TRACE_SPANS_PER_POST = 128
