"""A scripted OpenAI-compatible chat-completions endpoint on loopback: the one stand-in in the tests.

A hosted model cannot be reached here; this plays one, answering with the replies it was given (in turn,
the last one repeated) and recording every request, so tests can check what a model would have seen.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

USAGE = {"prompt_tokens": 21, "completion_tokens": 13, "total_tokens": 34}


class ScriptedLLM:
    def __init__(self, replies: list[str]) -> None:
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        llm = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                llm.requests.append((dict(self.headers), body))
                reply = replies[min(len(llm.requests), len(replies)) - 1]
                answer = json.dumps(
                    {
                        "id": f"chatcmpl-{len(llm.requests)}",
                        "object": "chat.completion",
                        "model": body.get("model", "scripted"),
                        "choices": [
                            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": reply}}
                        ],
                        "usage": USAGE,
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *_args: object) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedLLM:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.shutdown()
