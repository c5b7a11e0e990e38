"""`make bench`: runs every benchmark module in this package and prints one report.

Each module exposes `run() -> dict` returning its figures; ratios are against a baseline measured in
the same run. The report notes the machine, and is also written to .bench/report.json.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import platform
import sys
import time
from pathlib import Path
from typing import Any

import tests.bench as package


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def main(selected: list[str]) -> int:
    report: dict[str, Any] = {"machine": machine(), "results": {}}
    names = [m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_")]
    for name in sorted(names):
        if selected and name not in selected:
            continue
        started = time.monotonic()
        print(f"== bench {name}", flush=True)
        result = importlib.import_module(f"tests.bench.{name}").run()
        result["wall_seconds"] = round(time.monotonic() - started, 1)
        report["results"][name] = result
        print(json.dumps(result, indent=2), flush=True)
    out = Path(".bench")
    out.mkdir(exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report["machine"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
