"""A scripted model endpoint on loopback: the one stand-in in the tests (a hosted model cannot be reached here).

It answers with the replies it was given (in turn, the last one repeated), or with what a function of the request
makes of it (a scripted transcript that reads what it was shown), and records every request, so tests can check
what a model would have seen. Each answer reports `usage` (USAGE, or what `usage` gives, a function of the request
for figures a test can tell apart). A reply is the answer's text or, for `api="openai"`, its whole assistant
message (to script tool calls). `api="openai"` serves `POST {url}/chat/completions`; `api="anthropic"`
serves `POST {url}/v1/messages` and, like the Messages API, refuses a request without its key header, version
header or max_tokens, with unknown fields, or with roles other than user/assistant (400).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from pydantic import SecretStr

from gateway.settings import LLMUpstream

USAGE = {"prompt_tokens": 21, "completion_tokens": 13, "total_tokens": 34}
MESSAGES_FIELDS = {
    "model", "messages", "max_tokens", "system", "temperature", "top_p", "top_k", "stop_sequences", "metadata",
    "stream", "tools", "tool_choice", "thinking", "service_tier",
}  # fmt: skip
Reply = str | dict[str, Any]
Responder = Callable[[dict[str, Any]], Reply]
Usage = dict[str, int] | Callable[[dict[str, Any]], dict[str, int]]  # OpenAI's names: prompt/completion_tokens


def _chat_completion(body: dict[str, Any], reply: Reply, number: int) -> dict[str, Any]:
    message = {"role": "assistant", "content": reply} if isinstance(reply, str) else reply
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": 1_700_000_000 + number,
        "model": body.get("model", "scripted"),
        "choices": [{"index": 0, "finish_reason": finish, "message": message}],
        "usage": USAGE,
    }


def _messages_problem(headers: dict[str, str], body: dict[str, Any]) -> str | None:
    if not headers.get("x-api-key") or not headers.get("anthropic-version"):
        return "x-api-key and anthropic-version headers are required"
    if unknown := set(body) - MESSAGES_FIELDS:
        return f"unknown fields: {sorted(unknown)}"
    if not isinstance(body.get("max_tokens"), int) or not body.get("model"):
        return "model and max_tokens are required"
    if any(m.get("role") not in ("user", "assistant") for m in body.get("messages", [])):
        return "roles must be user or assistant"
    return None


def _message(body: dict[str, Any], reply: str, number: int, usage: dict[str, int]) -> dict[str, Any]:
    return {
        "id": f"msg_{number}",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": [{"type": "text", "text": reply}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"]},
    }


class ScriptedLLM:
    def __init__(
        self,
        replies: list[Reply] | Responder,
        api: Literal["openai", "anthropic"] = "openai",
        usage: Usage = USAGE,
        host: str = "127.0.0.1",
    ) -> None:
        """`host`: the address it listens on (loopback; the e2e node's address for its gateway pods)."""
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.api = api
        llm = self
        path = "/v1/messages" if api == "anthropic" else "/v1/chat/completions"

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                headers = {k.lower(): v for k, v in self.headers.items()}
                if self.path != path:
                    return self._send(404, {"error": f"no {self.path}"})
                llm.requests.append((dict(self.headers), body))
                reply = replies(body) if callable(replies) else replies[min(len(llm.requests), len(replies)) - 1]
                used = usage(body) if callable(usage) else usage
                if api == "openai":
                    answer = _chat_completion(body, reply, len(llm.requests))
                    return self._send(200, answer | {"usage": answer["usage"] | used})
                assert isinstance(reply, str), "a scripted Messages API reply is text"
                if problem := _messages_problem(headers, body):
                    return self._send(
                        400, {"type": "error", "error": {"type": "invalid_request_error", "message": problem}}
                    )
                self._send(200, _message(body, reply, len(llm.requests), used))

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                answer = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *_args: object) -> None:
                return None

        self.server = ThreadingHTTPServer((host, 0), Handler)
        root = f"http://{host}:{self.server.server_address[1]}"
        self.url = root if api == "anthropic" else root + "/v1"

    def upstream(self, key: str = "sk-test-upstream", **settings: Any) -> LLMUpstream:
        """The gateway's settings for this endpoint."""
        return LLMUpstream(api=self.api, base_url=self.url, api_key=SecretStr(key), **settings)

    def __enter__(self) -> ScriptedLLM:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.shutdown()
