"""`kubectl mcpexec pending|approve|deny`: the gateway's approval API from the command line (docs/approvals.md).

Installed with mcpexec as the console script `kubectl-mcpexec`, which kubectl runs as its plugin `kubectl mcpexec`.
It speaks to the gateway's people port (`--gateway`, or MCPEXEC_GATEWAY_URL; default http://127.0.0.1:8080, a
`kubectl port-forward` of the gateway's `sessions` Service port) with your own bearer token (`--token`, or
MCPEXEC_TOKEN, else your kubeconfig's current user's token, exec plugins included; a client certificate is no
token: use `--token`). The gateway asks the API server what you may: RBAC decides, as for any kubectl verb.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import httpx
from kubernetes import client, config

from mcpexec.api.approval import Decision, DecisionAnswer, PendingAnswer

DEFAULT_GATEWAY = "http://127.0.0.1:8080"
# A digest may be given by a unique prefix of at least this many characters (as `pending` shows them).
MIN_PREFIX = 8


def _kubeconfig() -> tuple[str | None, str]:
    """Your kubeconfig's bearer token (None without one) and its context's namespace."""
    try:
        _contexts, current = config.list_kube_config_contexts()
        configuration = client.Configuration()
        config.load_kube_config(client_configuration=configuration)
    except (config.ConfigException, OSError):
        return None, "default"
    namespace = str((current or {}).get("context", {}).get("namespace") or "default")
    bearer = configuration.api_key.get("authorization") or configuration.api_key.get("BearerToken")
    token = bearer.removeprefix("Bearer ").strip() if isinstance(bearer, str) else None
    return token or None, namespace


def _failed(answer: httpx.Response) -> str:
    try:
        error = answer.json()["error"]
        return f"{error['code']} ({answer.status_code}): {error['message']}"
    except (ValueError, KeyError, TypeError):
        return f"HTTP {answer.status_code}: {answer.text[:300]}"


class ApprovalClient:
    def __init__(self, gateway: str, token: str, namespace: str, kind: str) -> None:
        self._http = httpx.Client(base_url=gateway, headers={"Authorization": f"Bearer {token}"}, timeout=30)
        self._namespace, self._kind = namespace, kind

    def _path(self, name: str) -> str:
        return f"/v1/approvals/{self._namespace}/{self._kind}/{name}"

    def _send(self, method: str, path: str, **options: Any) -> httpx.Response:
        """The gateway's answer; one that cannot be had is said plainly (a decision may have reached the gateway:
        asking again is safe, a second decision is refused as already_decided)."""
        try:
            return self._http.request(method, path, **options)
        except httpx.TransportError as exc:
            raise SystemExit(
                f"cannot reach the gateway at {self._http.base_url} ({type(exc).__name__}: {exc}); give its people "
                "port with --gateway or MCPEXEC_GATEWAY_URL (e.g. after kubectl port-forward to the gateway Service)"
            ) from None

    def pending(self, name: str) -> PendingAnswer:
        answer = self._send("GET", self._path(name))
        if answer.status_code != 200:
            raise SystemExit(_failed(answer))
        return PendingAnswer.model_validate(answer.json())

    def digest(self, name: str, given: str) -> str:
        """The held call's full digest from a unique prefix of it."""
        if len(given) == 64:
            return given
        if len(given) < MIN_PREFIX:
            raise SystemExit(f"give at least {MIN_PREFIX} characters of the digest")
        found = [call.digest for call in self.pending(name).pending if call.digest.startswith(given)]
        if len(found) != 1:
            raise SystemExit(f"{len(found)} held calls of {name} have a digest starting {given!r}")
        return found[0]

    def decide(self, name: str, digest: str, decision: Decision) -> DecisionAnswer:
        answer = self._send("POST", f"{self._path(name)}/{digest}", json=decision.model_dump())
        if answer.status_code != 200:
            raise SystemExit(_failed(answer))
        return DecisionAnswer.model_validate(answer.json())


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kubectl mcpexec", description="Answer tool calls held for approval.")
    parser.add_argument("-n", "--namespace", help="the resource's namespace (default: your kubeconfig context's)")
    parser.add_argument("--session", action="store_true", help="an AgentSession (default: an AgentTask)")
    parser.add_argument("--gateway", default=os.environ.get("MCPEXEC_GATEWAY_URL", DEFAULT_GATEWAY))
    parser.add_argument("--token", default=os.environ.get("MCPEXEC_TOKEN"), help="your bearer token")
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")
    verbs = parser.add_subparsers(dest="verb", required=True)
    verbs.add_parser("pending", help="list the held calls").add_argument("name")
    for verb in ("approve", "deny"):
        sub = verbs.add_parser(verb, help=f"{verb} one held call, by its digest (or a unique prefix of it)")
        sub.add_argument("name")
        sub.add_argument("digest")
        sub.add_argument("--reason", default="", help="said to the task's code and in the Event")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    token, namespace = _kubeconfig()
    token = args.token or token
    if not token:
        raise SystemExit("no bearer token: give --token (or MCPEXEC_TOKEN), e.g. $(kubectl create token <account>)")
    kind = "agentsessions" if args.session else "agenttasks"
    approvals = ApprovalClient(args.gateway, token, args.namespace or namespace, kind)
    shown: Any
    if args.verb == "pending":
        held = approvals.pending(args.name).pending
        shown = [call.model_dump() for call in held]
        if args.output == "text":
            print("DIGEST        TOOL                          SINCE                 ARGUMENTS")
            for call in held:
                summary = call.arguments.splitlines()[0] if call.calls is not None else call.arguments
                print(f"{call.digest[:12]}  {call.tool:<28.28}  {call.since:<20}  {summary[:80]}")
                for planned in call.calls or []:  # a plan: one line per call it holds
                    times = f" x{planned.count}" if planned.count > 1 else ""
                    print(f"    {planned.tool} {planned.arguments[:100]}{times}")
            return
    else:
        decision = Decision(decision="approve" if args.verb == "approve" else "deny", reason=args.reason)
        answer = approvals.decide(args.name, approvals.digest(args.name, args.digest), decision)
        shown = answer.model_dump()
        if args.output == "text":
            print(f"{answer.tool} {answer.digest[:12]} {answer.state} by {answer.approver}")
            return
    json.dump(shown, sys.stdout, indent=2)
    print()
