"""A session execution's output sent to the gateway while the code runs, for a caller that reads it as it comes.

The code's writes are gathered here (from any of its threads) and posted by a thread of this streamer's own a few
times a second, in the order they were printed, so a print loop costs the gateway a handful of requests a second,
not one each. Each chunk is numbered (from 1): a post is sent again until the gateway takes it (delivery.py: through
a gateway or session store outage, for up to the session's idle timeout), and the gateway keeps each chunk once. Past
STREAM_LIMIT characters in all nothing more is sent (the gateway would drop it; the outcome still has the head and
tail). Streaming never holds up or fails the code: once the gateway refuses a post, or the delivery gives up, the
rest is numbered but not sent, and the outcome's count of chunks tells the gateway which never came (its readers get
a gap, never silence).
"""

from __future__ import annotations

import threading
import urllib.parse
from typing import Any

from runtime.contract import SESSION_EXECUTIONS_PATH
from runtime.delivery import Delivery
from runtime.output import encodable

POST_EVERY_SECONDS = 0.25
STREAM_LIMIT = 1_000_000
_PAST_LIMIT = f"\n...[output past {STREAM_LIMIT} characters is not streamed; the outcome keeps its head and tail]...\n"
# The gateway's bounds on one post (gateway/executions/models.py: OutputPost).
_CHUNK_CHARACTERS = 64_000
_CHUNKS_PER_POST = 64


class OutputStreamer:
    def __init__(self, execution_id: str, delivery: Delivery) -> None:
        self._path = f"{SESSION_EXECUTIONS_PATH}/{urllib.parse.quote(execution_id, safe='')}/output"
        self._delivery = delivery
        self._lock = threading.Lock()
        self._pending: list[tuple[str, str]] = []
        self._taken = 0
        self.chunks = 0  # numbered so far, sent or not
        self._stopped = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._post_until_done, name="output-stream", daemon=True)
        self._thread.start()

    def write(self, stream: str, text: str) -> None:
        """One write of the code's `stream` (stdout or stderr)."""
        with self._lock:
            room = STREAM_LIMIT - self._taken
            if room <= 0 or not text:
                return
            pieces = [(stream, text[:room])]
            if len(text) >= room:  # the last of it: said once (past the gateway's limit too, which says so instead)
                pieces.append(("stderr", _PAST_LIMIT))
            self._taken += room if len(text) >= room else len(text)
            for name, piece in pieces:
                if self._pending and self._pending[-1][0] == name:
                    self._pending[-1] = (name, self._pending[-1][1] + piece)
                else:
                    self._pending.append((name, piece))

    def close(self) -> None:
        """Send what is left, then return: the outcome posted next comes after all of it (`chunks` is final)."""
        self._done.set()
        self._thread.join()

    def _post_until_done(self) -> None:
        while True:
            finished = self._done.wait(POST_EVERY_SECONDS)
            self._post_pending()
            if finished:
                return

    def _post_pending(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        chunks: list[dict[str, Any]] = []
        for stream, text in pending:
            for start in range(0, len(text), _CHUNK_CHARACTERS):
                self.chunks += 1
                chunks.append(
                    {"seq": self.chunks, "stream": stream, "text": encodable(text[start : start + _CHUNK_CHARACTERS])}
                )
        for first in range(0, len(chunks), _CHUNKS_PER_POST):
            if self._stopped:
                return
            # Its execution is over there (404), the session too (401, 403), or the gateway took nothing for too long.
            self._stopped = (
                self._delivery.post(self._path, {"chunks": chunks[first : first + _CHUNKS_PER_POST]}) is not None
            )
