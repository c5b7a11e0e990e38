"""Large tool results over stdio: the MCP SDK's `stdio_client` (baseline) vs the gateway's `bounded_stdio`.

The same real server-filesystem process kind answers `read_text_file` for files of 1, 4 and 10 MB (10 MiB is the
gateway's default result limit); each transport gets its own server. The figure is this process' CPU seconds per
call (reading, splitting and parsing the answer line happens on the event loop every task's calls share), the
median of the rounds, the transports alternating; `speedup` is SDK / bounded.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from gateway.upstreams.stdio import bounded_stdio
from tests.support.components import reference_server_commands

SIZES_MB = (1, 4, 10)
ROUNDS = 3
LIMIT = 64 << 20  # above every file here: nothing is cut, both transports deliver the whole answer


async def _cpu_per_call(client: Client, path: Path, size: int) -> float:
    started = time.process_time()
    result = await client.call_tool("read_text_file", {"path": str(path)})
    spent = time.process_time() - started
    assert not result.is_error and len(result.content[0].text) == size  # type: ignore[union-attr]
    return spent


async def _measure(root: Path, sizes: dict[int, int]) -> dict[str, Any]:
    command = reference_server_commands(root)["filesystem"]
    params = StdioServerParameters(command=command[0], args=command[1:])
    runs: dict[str, dict[int, list[float]]] = {"sdk_stdio_client": {}, "bounded_stdio": {}}
    async with (
        Client(params, mode="legacy", cache=None) as sdk,
        Client(bounded_stdio(params, LIMIT), mode="legacy", cache=None) as bounded,
    ):
        clients = {"sdk_stdio_client": sdk, "bounded_stdio": bounded}
        for _ in range(ROUNDS):
            for size in SIZES_MB:
                for name, client in clients.items():
                    runs[name].setdefault(size, []).append(
                        await _cpu_per_call(client, root / f"{size}mb.txt", sizes[size])
                    )
    medians = {name: {size: statistics.median(v) for size, v in by_size.items()} for name, by_size in runs.items()}
    return {
        f"{size}_mb": {
            "cpu_seconds": {name: round(medians[name][size], 3) for name in runs},
            "speedup": round(medians["sdk_stdio_client"][size] / medians["bounded_stdio"][size], 1),
        }
        for size in SIZES_MB
    }


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="mcpexec-bench-large-") as tmp:
        root = Path(tmp)
        line = "a line of a large log file, as an agent might read one whole\n"
        sizes = {}
        for size in SIZES_MB:
            text = line * (size * 1_000_000 // len(line))
            (root / f"{size}mb.txt").write_text(text)
            sizes[size] = len(text)
        figures = asyncio.run(_measure(root, sizes))
    return figures | {
        "note": f"CPU seconds of the client process per read_text_file call, median of {ROUNDS} rounds, "
        "transports alternating; the answer line is about twice the file's size (text and structuredContent both "
        "carry it)"
    }
