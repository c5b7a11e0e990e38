"""A scan worker process (scanner.ScanPool): `python -m gateway.pii.scan_worker <fd>` answers scans on the socket
`fd` until it closes. Each frame, both ways, is a 4-byte big-endian length and a pickle: (protection, texts) in,
(True, found) or (False, the error's repr) out. Its parent is the gateway, the only one that writes to it."""

from __future__ import annotations

import os
import pickle
import socket
import sys

from gateway.pii.scanner import HEADER_BYTES, detect_all


def _read_exactly(connection: socket.socket, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = connection.recv(min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def serve(connection: socket.socket) -> None:
    while (header := _read_exactly(connection, HEADER_BYTES)) is not None:
        request = _read_exactly(connection, int.from_bytes(header, "big"))
        if request is None:
            return
        protection, texts = pickle.loads(request)
        try:
            reply: tuple[bool, object] = (True, detect_all(protection, texts))
        except Exception as exc:  # told to the gateway, which fails the call closed
            reply = (False, repr(exc))
        data = pickle.dumps(reply, pickle.HIGHEST_PROTOCOL)
        connection.sendall(len(data).to_bytes(HEADER_BYTES, "big") + data)


if __name__ == "__main__":
    os.nice(10)  # serving calls comes before scanning large values
    serve(socket.socket(fileno=int(sys.argv[1])))
