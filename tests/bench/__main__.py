"""`make bench`: runs every benchmark module in this package and prints one report.

Each module exposes `run() -> dict` returning its figures; ratios are against a baseline measured in
the same run. The report notes the machine, and is written to .bench/report.json after every module, so a
module that fails (its error is its figure) or a run stopped half way keeps what the others measured.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import platform
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import tests.bench as package

REPORT = Path(".bench") / "report.json"


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_average": [round(load, 2) for load in os.getloadavg()],
    }


def run_one(name: str) -> dict[str, Any]:
    """One module's figures; a module that raises reports its error (and how long it ran) instead."""
    started = time.monotonic()
    try:
        result: dict[str, Any] = importlib.import_module(f"tests.bench.{name}").run()
    except Exception as exc:  # one module's failure must not lose the others' report
        traceback.print_exc()
        result = {"error": f"{type(exc).__name__}: {exc}"}
    result["wall_seconds"] = round(time.monotonic() - started, 1)
    return result


def main(selected: list[str]) -> int:
    names = sorted(m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_"))
    unknown = sorted(set(selected) - set(names))
    if unknown:
        print(f"no such bench: {', '.join(unknown)} (there are: {', '.join(names)})", file=sys.stderr)
        return 2
    report: dict[str, Any] = {"machine": machine(), "results": {}}
    REPORT.parent.mkdir(exist_ok=True)
    for name in names:
        if selected and name not in selected:
            continue
        print(f"== bench {name}", flush=True)
        result = run_one(name)
        report["results"][name] = result
        report["machine"]["load_average_after"] = [round(load, 2) for load in os.getloadavg()]
        REPORT.write_text(json.dumps(report, indent=2))
        print(json.dumps(result, indent=2), flush=True)
    print(json.dumps(report["machine"]))
    return 1 if any("error" in result for result in report["results"].values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
